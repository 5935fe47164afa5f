#!/usr/bin/env bash
# E5 short flows (docs/results/E5-netns.md): MPTCP-D with and without ESE, 100 KB and 1 MB
# transfers (a new connection each, one sender process), 1/2/4/8 paths per link; ROUNDS
# interleaved rounds (default 3), then the summary (testbeds/results/E5/short-table.md,
# short-summary.json). Scenarios: gen_e5short.py.
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/experiments/E5-short.sh      # or: ROUNDS=1 OUT=/tmp/e5s sudo -E testbeds/experiments/E5-short.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/E5short}
SCEN=${SCEN:-$(cd testbeds/scenarios && ls E5short-*.toml | sed 's/\.toml$//')}
testbeds/experiments/run-interleaved.sh "$OUT" "$ROUNDS" $SCEN
mkdir -p testbeds/results/E5
python3 testbeds/experiments/e5short_summary.py "$OUT" testbeds/results/E5 | tee testbeds/results/E5/short-table.md
