#!/usr/bin/env bash
# Runs scenarios in ROUNDS interleaved rounds (round 1 of every scenario, then round 2, ...), one
# repetition each, so that the shared machine's load drift hits every configuration alike.
#   usage: run-interleaved.sh OUT ROUNDS SCENARIO_NAME...   (names of testbeds/scenarios/*.toml)
# Writes OUT/<scenario>/round<i>/result.json (+ SVG plots) and a log per run.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$1; ROUNDS=$2; shift 2
TB=target/release/mpquic-testbed
for s in "$@"; do mkdir -p "$OUT/$s"; done
for round in $(seq 1 "$ROUNDS"); do
  for s in "$@"; do
    [ -f "$OUT/$s/round$round/result.json" ] && continue   # resumable
    echo "$(date +%T) round $round: $s (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    "$TB" run "testbeds/scenarios/$s.toml" --repetitions 1 --out "$OUT/$s/round$round" \
      > "$OUT/$s/round$round.summary.json" 2> "$OUT/$s/round$round.log" \
      || echo "FAILED: $s round $round (see $OUT/$s/round$round.log)" >&2
  done
done
