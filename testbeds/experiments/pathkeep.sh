#!/usr/bin/env bash
# Path keep-alive check (docs/results/E7-netns.md): does every path of a multipath flow stay open
# and carry data past the 10 s path idle timeout? One ~20 s two-path xmp transfer, each path on
# its own bottleneck (testbeds/scenarios/pathkeep-two-path-xmp.toml), ROUNDS rounds (default 1),
# then the per-path summary (bytes per path before/after 10 s and per half, from the runner's
# per-link series; paths open at the end and packets per path from both ends' reports).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/pathkeep.sh     # or: OUT=/tmp/pk DEST=/tmp/pk-res sudo -E ...
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-1}
OUT=${OUT:-testbed-results/pathkeep}
DEST=${DEST:-testbeds/results/pathkeep}
target/release/mpquic-testbed run testbeds/scenarios/pathkeep-two-path-xmp.toml --out "$OUT" --repetitions "$ROUNDS"
mkdir -p "$DEST"
python3 testbeds/experiments/pathkeep_summary.py "$OUT" "$DEST" | tee "$DEST/table.md"
