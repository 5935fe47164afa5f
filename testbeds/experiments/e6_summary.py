"""E6 summary: short-flow (70 KB) FCT mean / std / p99 under long background flows.
usage: python3 e6_summary.py OUT DEST"""
import json
import os
import statistics
import sys

from common import copy_svgs, fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
rows = {}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E6-")):
    reps = runs(OUT, s)
    mean, std, p99, bg, inc = [], [], [], [], []
    for r in reps:
        short = [f for f in r["flows"] if f["bytes"] < 1_000_000 or (not f["completed"] and f["from"] not in ("s1", "s2"))]
        fct = sorted(f["fct_s"] * 1e3 for f in short if f["completed"] and f["fct_s"])
        inc.append(sum(1 for f in short if not f["completed"]))
        if fct:
            mean.append(statistics.mean(fct)); std.append(statistics.pstdev(fct))
            p99.append(fct[min(len(fct) - 1, int(0.99 * len(fct)))])
        bg.append(sum(f["goodput_mbps"] or 0 for f in r["flows"] if f["from"] in ("s1", "s2")))
    rows[s] = {"reps": len(mean), "host_load_1min": loads(reps), "short_fct_mean_ms": med(mean),
               "short_fct_std_ms": med(std), "short_fct_p99_ms": med(p99), "short_incomplete": med(inc),
               "background_goodput_sum_mbps": med(bg),
               "svgs": copy_svgs(reps[0], DEST, s, ("rep0-fct-cdf.svg",)) if reps else []}
os.makedirs(DEST, exist_ok=True)
json.dump(rows, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
print("| scenario | reps | short FCT mean ms | std ms | p99 ms | short incomplete | background goodput sum Mbit/s | load |")
print("|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    print(f"| {s} | {r['reps']} | {fmt(r['short_fct_mean_ms'])} | {fmt(r['short_fct_std_ms'])} | {fmt(r['short_fct_p99_ms'])} | {fmt(r['short_incomplete'], 0)} | {fmt(r['background_goodput_sum_mbps'])} | {r['host_load_1min']} |")
