#!/usr/bin/env bash
# Cross-check (docs/results/crosscheck.md): the netns experiment testbeds/scenarios/measure-two-path.toml
# (amp, xmp, dcm, lia; 3 interleaved rounds) and the simulator's experiments/crosscheck-two-path.toml
# at the same scaled parameters (its sweep: amp, xmp, dcm, lia x seeds 1-3; each run in detail, niced:
# virtual time, so the host's load does not change its results).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-testbed-results/crosscheck}
target/release/mpquic-testbed run testbeds/scenarios/measure-two-path.toml --out "$OUT" --repetitions "${ROUNDS:-3}"
mkdir -p "$OUT/sim"
# Runs land in $OUT/sim/controller=<cc>/seed-<n>/results.json.
nice -n 19 target/release/mpquic-sim run experiments/crosscheck-two-path.toml --detail --no-plots \
  --out "$OUT/sim" > "$OUT/sim.log" 2>&1
# Second shared scenario, E2's mix (8 DCTCP + 1 four-path flow, 8 MB each; netns numbers come
# from testbed-results/E2, run by E2.sh).
for c in xmp amp; do for seed in 1 2 3; do
  mkdir -p "$OUT/sim-e2/$c"
  nice -n 19 target/release/mpquic-sim run experiments/scenarios/crosscheck-e2-n8-m1-$c.toml \
    --seed $seed --out "$OUT/sim-e2/$c/seed$seed" > "$OUT/sim-e2/$c/seed$seed.log" 2>&1
done; done
mkdir -p testbeds/results/crosscheck
E2OUT=${E2OUT:-testbed-results/E2} python3 testbeds/experiments/crosscheck_summary.py "$OUT" testbeds/results/crosscheck | tee testbeds/results/crosscheck/table.md
