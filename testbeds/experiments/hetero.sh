#!/usr/bin/env bash
# Heterogeneous two paths (docs/results/hetero-netns.md): 100 Mbit/s 2 ms + 20 Mbit/s 40 ms, one
# 50 MB mpquic transfer with every controller (amp, xmp, lia) and scheduler (stack, lowest-rtt,
# round-robin) (testbeds/scenarios/hetero.toml), ROUNDS interleaved rounds (default 3), then the summary
# (testbeds/results/hetero/summary.json, table.md). Delay comes from netem where the kernel has
# it, else from the testbed's NFQUEUE delay line (testbeds/README.md).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/hetero.sh        # or: ROUNDS=1 OUT=/tmp/het sudo -E testbeds/experiments/hetero.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/hetero}
target/release/mpquic-testbed run testbeds/scenarios/hetero.toml --out "$OUT" --repetitions "$ROUNDS"
mkdir -p testbeds/results/hetero
python3 testbeds/experiments/hetero_summary.py "$OUT" testbeds/results/hetero | tee testbeds/results/hetero/table.md
