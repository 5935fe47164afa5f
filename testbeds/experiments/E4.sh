#!/usr/bin/env bash
# E4 (docs/results/E4-netns.md): every E4 scenario, ROUNDS interleaved rounds (default 3), then
# the summary (testbeds/results/E4/summary.json, table.md, SVGs of each scenario's first round).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E4.sh            # or: ROUNDS=1 OUT=/tmp/e5 sudo -E testbeds/experiments/E4.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E4}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E4-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E4
python3 testbeds/experiments/e4_summary.py "$OUT" testbeds/results/E4 | tee testbeds/results/E4/table.md
