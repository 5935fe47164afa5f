#!/usr/bin/env bash
# E5 (docs/results/E5-netns.md): every E5 scenario, ROUNDS interleaved rounds (default 3), then
# the summary (testbeds/results/E5/summary.json, table.md, SVGs of each scenario's first round).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E5.sh            # or: ROUNDS=1 OUT=/tmp/e5 sudo -E testbeds/experiments/E5.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E5}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E5-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E5
python3 testbeds/experiments/e5_summary.py "$OUT" testbeds/results/E5 | tee testbeds/results/E5/table.md
