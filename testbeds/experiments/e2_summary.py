"""E2 summary: per-flow goodput (bytes / FCT), Jain's index, multipath / DCTCP ratio, queue
distribution (frames, busy samples). usage: python3 e2_summary.py OUT DEST"""
import json
import os
import statistics
import sys

from common import copy_svgs, fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs else None


# Plots kept in the repository (the others stay in OUT).
KEEP = {"E2-n4-m4-amp", "E2-n4-m4-xmp", "E2-n4-m4-dcm", "E2-n8-m1-amp", "E2-n8-m1-xmp"}
rows = {}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E2-")):
    reps = runs(OUT, s)
    if not reps:
        continue
    J, ratio, dct, mp, q5, q50, q95, q99, tot, lost, supp, incomplete = ([] for _ in range(12))
    for r in reps:
        fl = r["flows"]
        incomplete.append(sum(1 for f in fl if not f["completed"]))
        if any(not f["completed"] for f in fl):
            continue
        single = [f["goodput_mbps"] for f in fl if f["cc"] in ("dctcp",) or f["kind"] == "kernel-tcp"]
        multi = [f["goodput_mbps"] for f in fl if not (f["cc"] in ("dctcp",) or f["kind"] == "kernel-tcp")]
        J.append(jain(single + multi))
        ratio.append(statistics.mean(multi) / statistics.mean(single))
        dct.append(statistics.mean(single))
        mp.append(statistics.mean(multi))
        l = r["links"][0]["queue_frames_busy"]
        q5.append(l["p5"]); q50.append(l["median"]); q95.append(l["p95"]); q99.append(l["p99"])
        tot.append(r["total_goodput_mbps"])
        lost.append(sum(sum(p["lost_packets"] for p in f["mpquic"]["paths"]) for f in fl if f.get("mpquic")))
        supp.append(sum((f["mpquic"].get("controller_state") or {}).get("suppressions", 0) for f in fl
                        if f.get("mpquic") and f["cc"] not in ("dctcp",)))
    rows[s] = {
        "reps": len(J), "host_load_1min": loads(reps), "jain": med(J), "multipath_over_single": med(ratio),
        "single_mean_mbps": med(dct), "multipath_mean_mbps": med(mp), "total_mbps": med(tot),
        "queue_frames_p5": med(q5), "queue_frames_median": med(q50), "queue_frames_p95": med(q95),
        "queue_frames_p99": med(q99), "lost_packets": med(lost), "amp_suppressions": med(supp),
        "incomplete": med(incomplete),
        "svgs": copy_svgs(reps[0], DEST, s, ("rep0-queue.svg",) + (("rep0-fct-cdf.svg",) if "-m1-" in s else ())) if s in KEEP else [],
    }
os.makedirs(DEST, exist_ok=True)
json.dump(rows, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
print("| scenario | reps | Jain | multipath / single-path goodput | single Mbit/s | multipath Mbit/s | total Mbit/s | queue p5 / median / p95 / p99 (frames) | lost | suppressions | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    print(f"| {s} | {r['reps']} | {fmt(r['jain'], 3)} | {fmt(r['multipath_over_single'], 2)} | {fmt(r['single_mean_mbps'])} | "
          f"{fmt(r['multipath_mean_mbps'])} | {fmt(r['total_mbps'])} | {fmt(r['queue_frames_p5'], 0)} / {fmt(r['queue_frames_median'])} / "
          f"{fmt(r['queue_frames_p95'])} / {fmt(r['queue_frames_p99'])} | {fmt(r['lost_packets'], 0)} | {fmt(r['amp_suppressions'], 0)} | {r['host_load_1min']} |")
