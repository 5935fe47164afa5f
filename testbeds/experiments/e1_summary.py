"""E1 summary: FCT mean/std/p99 per repetition (all rounds' flows), p99 against the ideal round
(k x size at the stack's payload ceiling of 100 Mbit/s), losses, drops at the qdisc and at the
receiver's UDP socket, stragglers.
usage: python3 e1_summary.py OUT DEST"""
import json
import os
import statistics
import sys

from common import copy_svgs, fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
# Plots kept in the repository: k = 30 FCT CDFs, three queues (the others stay in OUT).
KEEP_QUEUE = {"E1-incast-k30-amp", "E1-incast-k30-xmp", "E1-incast-k30-kernel-tcp"}
rows = {}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E1-")):
    reps = runs(OUT, s)
    if not reps:
        continue
    mean, std, p99, mx, lost, drops, incomplete, strag, marks, rcvbuf, ideal = ([] for _ in range(11))
    for r in reps:
        f = [x for x in r["flows"]]
        fct = sorted(x["fct_s"] * 1e3 for x in f if x["completed"] and x["fct_s"] is not None)
        incomplete.append(sum(1 for x in f if not x["completed"]))
        if not fct:
            continue
        mean.append(statistics.mean(fct))
        std.append(statistics.pstdev(fct))
        p99.append(fct[min(len(fct) - 1, int(0.99 * len(fct)))])
        mx.append(fct[-1])
        med_fct = statistics.median(fct)
        strag.append(sum(1 for x in fct if x > 200))  # the papers' min RTO
        lost.append(sum(sum(p["lost_packets"] for p in x["mpquic"]["paths"]) for x in f if x.get("mpquic")))
        drops.append(sum(l["qdisc_drops"] for l in r["links"]))
        rcvbuf.append(sum(c.get("Udp.RcvbufErrors", 0) for c in r["receiver_counters"].values()))
        # One round: the flows that start together (k of them), at the payload ceiling of 100
        # Mbit/s: 94.8% for QUIC (1452-byte datagrams in 1494-byte frames, less QUIC overhead),
        # 1448/1514 for kernel TCP.
        k = int(s.split("-k")[1].split("-")[0])
        ceiling = 0.956 if f[0]["kind"] == "kernel-tcp" else 0.948
        ideal.append(k * f[0]["bytes"] * 8 / (100e6 * ceiling) * 1e3)
        marks.append(sum((l.get("marker") or {}).get("marks", 0) for l in r["links"]))
    rows[s] = {
        "reps": len(mean), "host_load_1min": loads(reps),
        "flows_per_rep": len(reps[0]["flows"]),
        "fct_mean_ms": med(mean), "fct_std_ms": med(std), "fct_p99_ms": med(p99), "fct_max_ms": med(mx),
        "flows_over_200ms": med(strag), "incomplete": med(incomplete),
        "mpquic_lost_packets": med(lost), "qdisc_drops": med(drops), "marks": med(marks),
        "receiver_udp_rcvbuf_errors": med(rcvbuf), "ideal_round_ms": med(ideal),
        "p99_over_ideal": med([a / b for a, b in zip(p99, ideal)]),
        "svgs": copy_svgs(reps[0], DEST, s, ("rep0-fct-cdf.svg",) + (("rep0-queue.svg",) if s in KEEP_QUEUE else ())) if "-k30-" in s and "-k30-s" not in s else [],
    }
os.makedirs(DEST, exist_ok=True)
json.dump(rows, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
print("| scenario | reps | flows/rep | FCT mean ms | FCT std ms | FCT p99 ms | ideal round ms | p99 / ideal | flows > 200 ms | incomplete | lost pkts (mpquic) | qdisc drops | receiver UDP rcvbuf drops | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    print(f"| {s} | {r['reps']} | {r['flows_per_rep']} | {fmt(r['fct_mean_ms'])} | {fmt(r['fct_std_ms'])} | {fmt(r['fct_p99_ms'])} | "
          f"{fmt(r['ideal_round_ms'], 0)} | {fmt(r['p99_over_ideal'], 2)} | "
          f"{fmt(r['flows_over_200ms'], 0)} | {fmt(r['incomplete'], 0)} | {fmt(r['mpquic_lost_packets'], 0)} | {fmt(r['qdisc_drops'], 0)} | "
          f"{fmt(r['receiver_udp_rcvbuf_errors'], 0)} | {r['host_load_1min']} |")
