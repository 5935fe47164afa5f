"""E3 summary: the multipath flow's rate on each link (the link's sent rate minus the kernel TCP
cross flow's receiver rate, 10 ms bins), before and during the cross flow, and the time it took
to move to its new share. usage: python3 e3_summary.py OUT DEST"""
import json
import os
import statistics
import sys

from common import fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
BIN = 0.01
SAMPLER_LEAD = 0.05  # the sampler starts ~50 ms before the flows' time zero (runner.rs)


def link_rate(series):
    """(t since flows' zero, Mbit/s) in BIN bins from the qdisc's cumulative sent bytes."""
    t, b = series["t"], series["bytes"]
    out, i0 = {}, 0
    for i in range(1, len(t)):
        k = int((t[i] - SAMPLER_LEAD) / BIN)
        out.setdefault(k, 0)
        out[k] += b[i] - b[i - 1]
    return {k: v * 8 / BIN / 1e6 for k, v in out.items()}


def analyse(rep):
    series = json.load(open(os.path.join(rep["_round_dir"], "rep0-series.json")))
    links = {l["link_id"]: l for l in rep["links"]}
    rates = {}
    for s in series:
        l = links[s["link_id"]]
        if l["to"] == "d" and l["from"].startswith("r"):
            rates[int(l["from"][1:])] = link_rate(s)
    cross = [f for f in rep["flows"] if f["from"].startswith("c")]
    res = {}
    for c in cross:
        i = int(c["from"][1:])
        start = c["start_s"]
        cr = {int(t / BIN): v for t, v in c["throughput"]}
        L = rates[i]
        mp = {k: L.get(k, 0) - cr.get(k, 0) for k in L}
        k0 = int(start / BIN)
        before = statistics.median(mp.get(k, 0) for k in range(k0 - 30, k0 - 1))
        during = statistics.median(mp.get(k, 0) for k in range(k0 + 20, k0 + 95))
        cross_during = statistics.median(cr.get(k, 0) for k in range(k0 + 20, k0 + 95))
        target = before - 0.8 * (before - during)
        shift = None
        for k in range(k0, k0 + 100):
            if mp.get(k, before) <= target:
                shift = (k - k0 + 1) * BIN * 1e3
                break
        other = 3 - i
        other_mp = statistics.median(rates[other].get(k, 0) for k in range(k0 + 20, k0 + 95))
        res[f"cross{i}"] = {
            "mp_before_mbps": before, "mp_during_mbps": during, "cross_during_mbps": cross_during,
            "shift_ms_80pct": shift, "mp_on_other_link_during_mbps": other_mp,
        }
    return res


rows = {}
xrows = {}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E3-dctcpx-")):
    reps = runs(OUT, s)
    c1, c2, mp, q1, q2 = [], [], [], [], []
    for r in reps:
        by = {f["from"]: f for f in r["flows"]}
        c1.append(by["c1"]["goodput_mbps"]); c2.append(by["c2"]["goodput_mbps"])
        mp.append(by["s"]["goodput_mbps"] if "s" in by else None)
        ls = {l["from"]: l for l in r["links"] if l["to"] == "d"}
        q1.append(ls["r1"]["queue_frames_busy"]["median"]); q2.append(ls["r2"]["queue_frames_busy"]["median"])
    xrows[s] = {"reps": len(reps), "host_load_1min": loads(reps), "cross1_goodput_mbps": med(c1),
                "cross2_goodput_mbps": med(c2), "multipath_goodput_mbps": med(mp),
                "queue_link1_median": med(q1), "queue_link2_median": med(q2)}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E3-shift-")):
    reps = runs(OUT, s)
    per = [analyse(r) for r in reps]
    row = {"reps": len(per), "host_load_1min": loads(reps), "goodput_mbps": med([r["flows"][0]["goodput_mbps"] for r in reps])}
    for c in ("cross1", "cross2"):
        for k in ("mp_before_mbps", "mp_during_mbps", "cross_during_mbps", "shift_ms_80pct", "mp_on_other_link_during_mbps"):
            row[f"{c}_{k}"] = med([p[c][k] for p in per if c in p])
    row["per_rep"] = per
    rows[s] = row
os.makedirs(DEST, exist_ok=True)
json.dump({"kernel_tcp_cross": rows, "dctcp_cross": xrows}, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
print("| scenario | reps | cross on | mp before (Mbit/s) | mp during | cross during | mp on other link during | time to 80% of the shift (ms, 10 ms bins) | load |")
print("|---|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    for c, name in (("cross1", "link 1"), ("cross2", "link 2")):
        print(f"| {s} | {r['reps']} | {name} | {fmt(r[c + '_mp_before_mbps'])} | {fmt(r[c + '_mp_during_mbps'])} | {fmt(r[c + '_cross_during_mbps'])} | "
              f"{fmt(r[c + '_mp_on_other_link_during_mbps'])} | {fmt(r[c + '_shift_ms_80pct'], 0)} | {r['host_load_1min']} |")
print()
print("| scenario (DCTCP cross, 3 MB) | reps | cross on link 1 Mbit/s | cross on link 2 Mbit/s | multipath flow Mbit/s | queue median link 1 / link 2 (frames) | load |")
print("|---|---|---|---|---|---|---|")
for s, r in xrows.items():
    print(f"| {s} | {r['reps']} | {fmt(r['cross1_goodput_mbps'])} | {fmt(r['cross2_goodput_mbps'])} | {fmt(r['multipath_goodput_mbps'])} | "
          f"{fmt(r['queue_link1_median'])} / {fmt(r['queue_link2_median'])} | {r['host_load_1min']} |")
