#!/usr/bin/env bash
# E3 (docs/results/E3-netns.md): every E3 scenario, ROUNDS interleaved rounds (default 3), then
# the summary (testbeds/results/E3/summary.json, table.md, SVGs of each scenario's first round).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E3.sh            # or: ROUNDS=1 OUT=/tmp/e3 sudo -E testbeds/experiments/E3.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E3}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E3-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E3
python3 testbeds/experiments/e3_summary.py "$OUT" testbeds/results/E3 | tee testbeds/results/E3/table.md
