#!/usr/bin/env bash
# E7 (docs/results/E7-netns.md): what dominates a job when every answer is its own `mpquic get`
# process (spawn, TLS handshake, transfer), against warm connections (`mpquic aggregate`). On an
# unshaped veth pair between two namespaces of its own (e7su-*), so the 10 x 64 KB take ~no
# network time: what is left is start-up. Writes testbeds/results/E7/startup.{json,md}.
#   cargo build --release -p mpquic-cli && sudo testbeds/experiments/E7-startup.sh   # REPS=20 N=10
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${MPQUIC_BIN:-target/release/mpquic}")
N=${N:-10}; REPS=${REPS:-20}
A=e7su-agg; W=e7su-wrk
TMP=$(mktemp -d); SRV=
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null || true
  ip netns del $A 2>/dev/null || true; ip netns del $W 2>/dev/null || true; rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add $A; ip netns add $W
ip link add e7su0 netns $A type veth peer name e7su1 netns $W
ip -n $A addr add 10.77.0.1/24 dev e7su0; ip -n $W addr add 10.77.0.2/24 dev e7su1
for ns in $A $W; do ip -n $ns link set lo up; done
ip -n $A link set e7su0 up; ip -n $W link set e7su1 up
head -c 65536 /dev/urandom > "$TMP/answer"; : > "$TMP/srv.err"
ip netns exec $W "$BIN" serve --listen 10.77.0.2:4500 --dir "$TMP" --insecure --allow-anonymous --read-only --cc dctcp --ecn exact 2> "$TMP/srv.err" &
SRV=$!
until grep -q "serving on" "$TMP/srv.err"; do sleep 0.05; done
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
# Cold: a job = N `mpquic get` processes started at once; its time = until the last has exited.
: > "$TMP/cold.txt"
for r in $(seq "$REPS"); do
  pids=()
  t0=$(date +%s%N)
  for i in $(seq "$N"); do
    ip netns exec $A "$BIN" get answer -o "$TMP/out$i" --server 10.77.0.2:4500 --cc dctcp \
      --ecn exact --insecure --json > "$TMP/get$i.json" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(date +%s%N)
  fcts=$(cat "$TMP"/get*.json | python3 -c 'import sys,json; print(max(json.loads(l)["fct_s"] for l in sys.stdin))')
  echo "$(( (t1 - t0) / 1000 )) $fcts" >> "$TMP/cold.txt"
  rm -f "$TMP"/out* "$TMP"/get*.json
done
# Warm: the same N answers per job over connections set up once.
servers=(); for i in $(seq "$N"); do servers+=(--server 10.77.0.2:4500); done
ip netns exec $A "$BIN" aggregate --name answer --jobs "$REPS" "${servers[@]}" --cc dctcp --ecn exact \
  --insecure --json > "$TMP/warm.json" 2>/dev/null
LOAD1=$(cut -d' ' -f1 /proc/loadavg)
mkdir -p testbeds/results/E7
python3 - "$TMP" "$N" "$REPS" "$LOAD0" "$LOAD1" <<'PY'
import json, statistics, sys
tmp, n, reps, l0, l1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
cold = [tuple(map(float, l.split())) for l in open(f"{tmp}/cold.txt")]
wall = [c[0] / 1e3 for c in cold]            # ms
xfer = [c[1] * 1e3 for c in cold]            # ms: the slowest get's own FCT (after its handshake)
warm = json.load(open(f"{tmp}/warm.json"))
jct = [j["jct_s"] * 1e3 for j in warm["jobs"]]
q = lambda v, p: sorted(v)[min(len(v) - 1, int(p * len(v)))]
res = {"n": n, "reps": reps, "load_1min": [float(l0), float(l1)],
       "cold_job_wall_ms": wall, "cold_slowest_get_fct_ms": xfer,
       "warm_connect_s": warm["connect_s"], "warm_jct_ms": jct}
json.dump(res, open("testbeds/results/E7/startup.json", "w"), indent=1)
row = lambda name, v: f"| {name} | {statistics.median(v):.1f} | {q(v, 0.9):.1f} | {max(v):.1f} |"
md = [f"E7 start-up check: {n} answers of 64 KB per job, {reps} jobs each way, unshaped veth, host load (1-min) {l0} -> {l1}.",
      "", "| per job | median ms | p90 ms | max ms |", "|---|---|---|---|",
      row(f"cold: {n} `mpquic get` processes, start to last exit", wall),
      row("cold: the slowest get's own FCT (stream open to last byte, after its handshake)", xfer),
      row(f"warm: `mpquic aggregate`, {n} connections set up once", jct),
      "", f"Warm set-up (all {n} handshakes, concurrent, once): {warm['connect_s'] * 1e3:.1f} ms."]
open("testbeds/results/E7/startup.md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
