#!/usr/bin/env bash
# Installs the picoquic peer of the interop test (cli/tests/interop.rs): a Python venv at
# target/interop-venv (or $MPQUIC_INTEROP_VENV) with aiopquic 0.6.1, whose extension module
# bundles picoquic 1.1.53 and exports its C API, and blake3. aiopquic needs Python >= 3.12:
# pyenv's, one on PATH, or (as root) Debian's python3.13/python3.12 where the release has them.
# Safe to run again: an existing venv that already imports both is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${MPQUIC_INTEROP_VENV:-target/interop-venv}
AIOPQUIC=aiopquic==0.6.1
BLAKE3=blake3==1.0.11

new_enough() {
  "$1" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null
}

# The first Python >= 3.12 (with its venv module) found, newest first.
find_python() {
  local candidates=()
  for v in 3.13 3.12; do
    candidates+=("python$v")
    candidates+=("$HOME"/.pyenv/versions/"$v".*/bin/"python$v")
    candidates+=(/usr/bin/"python$v" /usr/local/bin/"python$v")
  done
  for python in "${candidates[@]}"; do
    if command -v "$python" >/dev/null 2>&1 && new_enough "$python"; then
      command -v "$python"
      return 0
    fi
  done
  return 1
}

# As root, Debian's python3.13 or python3.12 with its venv module, if this release has one.
install_python() {
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null || return 1
  for v in 3.13 3.12; do
    if apt-cache show "python$v-venv" >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$v" "python$v-venv" >/dev/null
      return 0
    fi
  done
  return 1
}

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import aiopquic, blake3' 2>/dev/null; then
  echo "interop: $venv already has aiopquic and blake3"
  exit 0
fi
python=$(find_python || { install_python && find_python; } || true)
if [ -z "$python" ]; then
  echo "interop: no Python >= 3.12 found (pyenv, PATH, or Debian's python3.12/3.13): aiopquic needs one" >&2
  exit 1
fi
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "$AIOPQUIC" "$BLAKE3"
"$venv/bin/python" -c 'import aiopquic, blake3'
echo "interop: $venv ready ($("$venv/bin/python" --version), $AIOPQUIC, $BLAKE3)"
