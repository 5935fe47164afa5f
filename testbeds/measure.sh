#!/usr/bin/env bash
# The issue-#7 measurements: every scenario below, ROUNDS rounds of one repetition each,
# interleaved (round 1 of all, then round 2 of all, ...) so that a shared machine's load drift
# hits every configuration alike; then one Markdown table row per scenario (medians over the
# rounds). Needs root and the release binaries:
#   cargo build --release -p mpquic-cli -p mpquic-testbed
#   sudo testbeds/measure.sh            # or: ROUNDS=5 OUT=/some/dir sudo -E testbeds/measure.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-testbed-results/measure}
TB=target/release/mpquic-testbed
SCENARIOS=${SCENARIOS:-"measure-two-path-amp measure-two-path-xmp measure-two-path-dcm measure-two-path-lia measure-two-path-mptcp ce-exact-no-offload ce-per-packet-no-offload ce-exact-offload ce-per-packet-offload"}
mkdir -p "$OUT"
for s in $SCENARIOS; do mkdir -p "$OUT/$s"; done
for round in $(seq 1 "$ROUNDS"); do
  for s in $SCENARIOS; do
    echo "round $round: $s (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    "$TB" run "testbeds/scenarios/$s.toml" --repetitions 1 --out "$OUT/$s/round$round" \
      > "$OUT/$s/round$round.summary.json" 2> "$OUT/$s/round$round.log" \
      || { echo "FAILED: $s round $round (see $OUT/$s/round$round.log)" >&2; exit 1; }
  done
done
results=()
for s in $SCENARIOS; do
  for round in $(seq 1 "$ROUNDS"); do results+=("$OUT/$s/round$round"); done
done
"$TB" table "${results[@]}" | tee "$OUT/table.md"
