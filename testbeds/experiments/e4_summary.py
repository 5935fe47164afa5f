"""E4 summary: per-flow goodput (bytes / FCT) by path count, Jain's index.
usage: python3 e4_summary.py OUT DEST"""
import json
import os
import sys

from common import copy_svgs, fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
rows = {}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E4-")):
    reps = runs(OUT, s)
    per = {i: [] for i in range(4)}
    J = []
    for r in reps:
        if not all(f["completed"] for f in r["flows"]):
            continue
        g = [f["goodput_mbps"] for f in r["flows"]]
        for i, x in enumerate(g):
            per[i].append(x)
        J.append(sum(g) ** 2 / (len(g) * sum(x * x for x in g)))
    rows[s] = {"reps": len(J), "host_load_1min": loads(reps), "jain": med(J),
               "goodput_4paths": med(per[0]), "goodput_2paths": med(per[1]),
               "goodput_1path_a": med(per[2]), "goodput_1path_b": med(per[3]),
               "svgs": copy_svgs(reps[0], DEST, s, ("rep0-fct-cdf.svg",)) if reps else []}
os.makedirs(DEST, exist_ok=True)
json.dump(rows, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
print("| scenario | reps | Jain | 4-path flow Mbit/s | 2-path flow | 1-path flow a | 1-path flow b | load |")
print("|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    print(f"| {s} | {r['reps']} | {fmt(r['jain'], 3)} | {fmt(r['goodput_4paths'])} | {fmt(r['goodput_2paths'])} | {fmt(r['goodput_1path_a'])} | {fmt(r['goodput_1path_b'])} | {r['host_load_1min']} |")
