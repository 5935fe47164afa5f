#!/usr/bin/env bash
# E6 (docs/results/E6-netns.md): every E6 scenario, ROUNDS interleaved rounds (default 3), then
# the summary (testbeds/results/E6/summary.json, table.md, SVGs of each scenario's first round).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E6.sh            # or: ROUNDS=1 OUT=/tmp/e5 sudo -E testbeds/experiments/E6.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E6}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E6-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E6
python3 testbeds/experiments/e6_summary.py "$OUT" testbeds/results/E6 | tee testbeds/results/E6/table.md
