#!/usr/bin/env bash
# Regenerates this report: four mpquic flows (4 paths each) into one ECN-marking 100 Mbit/s
# bottleneck on the netns testbed, once with AMP and once with XMP, traced with qlog, then
# `mpquic report` and a headless-Chromium screenshot. Needs root (network namespaces), chromium,
# and a testbed runner that accepts per-flow `ecn` (branch `testbed`, ef19b60 or later): set
# TESTBED to its binary if this checkout's is older. With TRACES=DIR the traces are kept in DIR,
# and a DIR that already holds them (amp-qlog/, xmp-qlog/) is reported on without a new run.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/report-amp-vs-xmp
cargo build --release -p mpquic-cli
TESTBED=${TESTBED:-}
if [ -z "$TESTBED" ]; then
  cargo build --release -p mpquic-testbed
  TESTBED=target/release/mpquic-testbed
fi
work=${TRACES:-$(mktemp -d)}
for cc in amp xmp; do
  [ -d "$work/$cc-qlog" ] && continue
  mkdir -p "$work/$cc-qlog"
  MPQUIC_REAL="$PWD/target/release/mpquic" QLOG_DIR="$work/$cc-qlog" \
    MPQUIC_BIN="$PWD/$here/with-qlog.sh" "$TESTBED" run "$here/m2o-$cc.toml" --out "$work/$cc"
done
rm -rf "$here/plots"
target/release/mpquic report "amp=$work/amp-qlog" "xmp=$work/xmp-qlog" -o "$here" \
  --title "AMP vs XMP: 4 flows x 4 paths into one ECN-marking 100 Mbit/s bottleneck" \
  --note "netns testbed (eBPF ECN marker, K = 10 packets, 150 KB buffer), scenarios m2o-amp.toml and m2o-xmp.toml; every path of every flow shares the bottleneck; senders' qlog traces (exact CE counts)."
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1400,3000 --virtual-time-budget=10000 \
  --screenshot="$PWD/$here/screenshot.png" "file://$PWD/$here/index.html"
# The page and the static plots are committed gzip'd (results/README.md: generated output in
# git stays small).
gzip -9nf "$here"/index.html "$here"/plots/*.svg
[ -n "${TRACES:-}" ] || rm -rf "$work"
rm -rf "$profile" "$here/data.json"
