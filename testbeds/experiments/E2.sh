#!/usr/bin/env bash
# E2 (docs/results/E2-netns.md): every E2 scenario, ROUNDS interleaved rounds (default 3), then
# the summary (testbeds/results/E2/summary.json, table.md, SVGs of each scenario's first round).
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E2.sh            # or: ROUNDS=1 OUT=/tmp/e2 sudo -E testbeds/experiments/E2.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E2}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E2-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E2
python3 testbeds/experiments/e2_summary.py "$OUT" testbeds/results/E2 | tee testbeds/results/E2/table.md
