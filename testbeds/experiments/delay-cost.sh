#!/usr/bin/env bash
# The NFQUEUE delay line's own limits (testbeds/README.md, "Link delay"): one kernel TCP (cubic)
# flow for 8 s through one path with 10 ms of delay at the link rates of
# testbeds/scenarios/delay-cost.toml, ROUNDS rounds each; then, per rate, the packet
# rate the delay line carried and its release lateness (p99 and max over the run's seconds), from
# its per-second log lines. Lateness is release time to verdict; the stamping error of arrivals
# (up to the 100 us poll period) comes on top.
#   cargo build --release -p mpquic-testbed
#   sudo testbeds/experiments/delay-cost.sh     # or: ROUNDS=1 OUT=/tmp/dc sudo -E ...
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-2}
OUT=${OUT:-testbed-results/delay-cost}
target/release/mpquic-testbed run testbeds/scenarios/delay-cost.toml --out "$OUT" --repetitions "$ROUNDS" >&2
RATES=$(cd "$OUT" && ls -d delay-cost-*Mbps | sed 's/^delay-cost-//; s/Mbps$//' | sort -n)
echo "| link Mbit/s | delay line pkt/s (median of seconds) | TCP goodput Mbit/s | lateness p99 us (median / max of seconds) | lateness max us (median / max of seconds) |"
echo "|---|---|---|---|---|"
for rate in $RATES; do
  python3 - "$OUT/delay-cost-${rate}Mbps" "$rate" <<'PY'
import glob, json, re, statistics, sys
d, rate = sys.argv[1], sys.argv[2]
pat = re.compile(r"(\d+) pkt/s, release lateness p50 \d+ us p99 (\d+) us max (\d+) us")
secs = [tuple(map(int, m.groups())) for p in glob.glob(f"{d}/round*/delay-line-*.log")
        for m in map(pat.search, open(p)) if m]
busy = [s for s in secs if s[0] > 100]  # seconds the flow ran
gp = [r["flows"][0]["goodput_mbps"] for p in glob.glob(f"{d}/round*/result.json")
      for r in json.load(open(p))["repetitions"]]
if busy:
    med = lambda i: statistics.median(s[i] for s in busy)
    mx = lambda i: max(s[i] for s in busy)
    print(f"| {rate} | {med(0):.0f} | {statistics.median(gp):.0f} | {med(1):.0f} / {mx(1)} | {med(2):.0f} / {mx(2)} |")
else:
    print(f"| {rate} | no delay-line log lines | - | - | - |")
PY
done
