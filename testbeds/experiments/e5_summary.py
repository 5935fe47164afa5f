"""E5 summary: RTT, goodput, queue, ESE true/false positives and CPU s per GB per scenario.
usage: python3 e5_summary.py OUT DEST   (DEST: testbeds/results/E5)"""
import collections
import json
import os
import sys

from common import copy_svgs, fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
# Plots kept in the repository (the others stay in OUT).
KEEP_SVG = {"E5-share-n1-mptcpd", "E5-share-n8-mptcpd", "E5-share-n8-mptcpd-noese", "E5-share-n8-lia", "E5-disjoint-p8-mptcpd"}
SCEN = sorted(d for d in os.listdir(OUT) if d.startswith("E5-"))


def ese(flow, shared_n):
    """(TP, FP, positives, negatives) of ESE eliminations in one flow. Paths are grouped by
    the server address (one per link). Per link, n - 1 paths are extra (positives) and one
    should stay (negative): eliminations beyond n - 1 on a link remove its last path."""
    paths = flow["mpquic"]["paths"]
    by_link = collections.defaultdict(list)
    for p in paths:
        by_link[(p.get("remote") or "").rsplit(":", 1)[0]].append(p)
    tp = fp = pos = neg = 0
    for ps in by_link.values():
        n = len(ps)
        elim = sum(1 for p in ps if not p.get("active", True))
        tp += min(elim, n - 1)
        fp += max(0, elim - (n - 1))
        pos += n - 1
        neg += 1
    return tp, fp, pos, neg


rows = {}
for s in SCEN:
    reps = runs(OUT, s)
    if not reps:
        continue
    g, fct, rtt50, rttmin, qmed, qp99, drops, lost, cpu, cpu_gb, elim = ([] for _ in range(11))
    tp = fp = pos = neg = 0
    conn_elim = 0  # repetitions (connections) with at least one elimination
    for r in reps:
        f = r["flows"][0]
        if not f["completed"]:
            continue
        g.append(f["goodput_mbps"])
        fct.append(f["fct_s"])
        rc = sum(r.get("receiver_cpu_s", {}).values())
        c = (f.get("cpu_s") or 0) + rc
        cpu.append(c)
        cpu_gb.append(c / (f["bytes"] / 1e9))
        qmed.append(sum(l["queue_frames_busy"]["median"] for l in r["links"]) / len(r["links"]))
        qp99.append(max(l["queue_frames_busy"]["p99"] for l in r["links"]))
        drops.append(sum(l["qdisc_drops"] for l in r["links"]))
        if f.get("mpquic"):
            m = f["mpquic"]
            ps = [p for p in m["paths"] if p["bytes_sent"] > 100_000]
            # RTT: the median over the paths that carried data of each path's median sample.
            rs = sorted(p["rtt_p50_ms"] for p in ps if p.get("rtt_p50_ms") is not None)
            rtt50.append(rs[len(rs) // 2] if rs else None)
            mins = [p["rtt_min_ms"] for p in ps if p.get("rtt_min_ms") is not None]
            rttmin.append(min(mins) if mins else None)
            lost.append(sum(p["lost_packets"] for p in m["paths"]))
            st = m.get("controller_state") or {}
            elim.append(st.get("eliminations", 0))
            conn_elim += st.get("eliminations", 0) > 0
            a, b, c2, d = ese(f, None)
            tp, fp, pos, neg = tp + a, fp + b, pos + c2, neg + d
    rows[s] = {
        "reps": len(g),
        "host_load_1min": loads(reps),
        "goodput_mbps": med(g),
        "fct_s": med(fct),
        "rtt_p50_ms": med(rtt50),
        "rtt_min_ms": med(rttmin),
        "queue_frames_median": med(qmed),
        "queue_frames_p99": med(qp99),
        "qdisc_drops": med(drops),
        "lost_packets": med(lost),
        "cpu_s_sender_plus_receiver": med(cpu),
        "cpu_s_per_gb": med(cpu_gb),
        "eliminations": med(elim),
        "ese": {"tp": tp, "fp": fp, "positives": pos, "negatives": neg,
                "connections_with_elimination": conn_elim},
        "svgs": copy_svgs(reps[0], DEST, s, ("rep0-queue.svg",)) if s in KEEP_SVG else [],
    }

os.makedirs(DEST, exist_ok=True)
with open(os.path.join(DEST, "summary.json"), "w") as f:
    json.dump(rows, f, indent=1)
print("| scenario | reps | goodput Mbit/s | RTT p50 ms (median path) | queue median / p99 frames | drops | lost | eliminations | ESE TP/pos, FP/neg | CPU s/GB (snd+rcv) | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    e = r["ese"]
    print(
        f"| {s} | {r['reps']} | {fmt(r['goodput_mbps'])} | {fmt(r['rtt_p50_ms'], 2)} | "
        f"{fmt(r['queue_frames_median'])} / {fmt(r['queue_frames_p99'])} | {fmt(r['qdisc_drops'], 0)} | "
        f"{fmt(r['lost_packets'], 0)} | {fmt(r['eliminations'], 0)} | {e['tp']}/{e['positives']}, {e['fp']}/{e['negatives']} | "
        f"{fmt(r['cpu_s_per_gb'], 1)} | {r['host_load_1min']} |"
    )
