#!/usr/bin/env bash
# E7 (docs/results/E7-netns.md): partition/aggregate jobs beside multipath background, every E7
# scenario (gen_e7.py), ROUNDS interleaved rounds (default 3), then the summary
# (testbeds/results/E7/summary.json, table.md, jct.svg). The start-up check that chose warm
# connections over one process per answer is E7-startup.sh.
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E7.sh            # or: ROUNDS=1 OUT=/tmp/e7 sudo -E testbeds/experiments/E7.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E7}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E7-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E7
python3 testbeds/experiments/e7_summary.py "$OUT" testbeds/results/E7 | tee testbeds/results/E7/table.md
