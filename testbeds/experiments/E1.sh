#!/usr/bin/env bash
# E1 (docs/results/E1-netns.md): every E1 scenario, ROUNDS interleaved rounds (default 3), then
# the summary (testbeds/results/E1/summary.json, table.md, SVGs of each scenario's first round).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E1.sh            # or: ROUNDS=1 OUT=/tmp/e1 sudo -E testbeds/experiments/E1.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E1}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E1-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E1
python3 testbeds/experiments/e1_summary.py "$OUT" testbeds/results/E1 | tee testbeds/results/E1/table.md
