"""E7 summary: per scenario, the job completion time (JCT) percentiles of every round (median and
min-max over rounds), the bottleneck during the job phase (queue, the answers' share of the bytes
sent), the background flows (goodput, AMP suppressions, whether they outlasted the jobs), and a
hand-written SVG of JCT against the background's path count.

Every job counts. The jobs that started PATH_IDLE_S or more after the background flows' start are
also reported apart, with the background's paths still open at the end: before the library kept
silent paths alive (commit 9c4abcc), the background connections lost their paths 1..n-1 at ~10 s
(the CLI's default --idle-timeout; docs/results/E7-netns.md) and those jobs saw a single-path
background.
usage: python3 e7_summary.py OUT DEST"""
import glob
import json
import math
import os
import statistics
import sys

from common import copy_svgs, fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
# The runner starts its sampler ~50 ms before the flows' clock (runner.rs sleeps 50 ms).
SAMPLER_LEAD_S = 0.05
# The CLI's default --idle-timeout: before 9c4abcc the background's extra paths closed this long
# after they opened.
PATH_IDLE_S = 10.0
# JCT CDFs (and queues) of the first round kept in the repository (the others stay in OUT).
KEEP_SVG = {"dctcp-1", "amp-8", "xmp-8"}
ORDER = ["none", "dctcp-1", "cubic-1", "amp-4", "amp-6", "amp-8", "xmp-4", "xmp-6", "xmp-8"]


def job_clock_offset(rep):
    """The runner's time of the aggregator's job clock zero (its clock starts after its process
    start-up and handshakes): its exit minus the last job's end."""
    j = rep["jobs"][0]
    span = max(x["start_s"] + (x["jct_s"] or 0) for x in j["report"]["jobs"])
    return j["end_s"] - span


def nearest_rank(v, p):
    """The CLI's percentile (nearest rank)."""
    v = sorted(v)
    return v[max(1, min(len(v), math.ceil(p * len(v)))) - 1] if v else None


def link_in_window(rep, lo, hi):
    """Bytes the bottleneck sent, and its busy-sample queue (frames), between lo and hi."""
    path = os.path.join(rep["_round_dir"], f"rep{rep['rep']}-series.json")
    s = json.load(open(path))[0]
    t = [x - SAMPLER_LEAD_S for x in s["t"]]
    idx = [i for i in range(1, len(t)) if lo <= t[i] <= hi]
    if not idx:
        return 0, []
    sent = s["bytes"][idx[-1]] - s["bytes"][idx[0] - 1]
    q = sorted(s["backlog"][i] / 1514 for i in idx if s["bytes"][i] > s["bytes"][i - 1])
    return sent, q


def pct(v, p):
    return v[min(len(v) - 1, int(p * len(v)))] if v else None


rows = {}
for scen in ORDER:
    reps = runs(OUT, f"E7-{scen}")
    if not reps:
        continue
    m = {k: [] for k in ("p50", "p90", "p99", "max", "used", "done", "total", "share", "q50",
                         "q99", "bg_mbps", "supp", "outlast", "rcvbuf", "drops", "connect_ms",
                         "agg_cpu", "late_p50", "late_n", "open", "perpath")}
    for r in reps:
        j = r["jobs"][0]
        rep = j["report"]
        m["total"].append(len(rep["jobs"]))
        m["done"].append(rep["completed"])
        off = job_clock_offset(r)
        bg = r["flows"]
        cutoff = min(f["start_s"] for f in bg) + PATH_IDLE_S if bg else math.inf
        ends = lambda x: off + x["start_s"] + (x["jct_s"] or math.inf)
        used = rep["jobs"]
        late = [x["jct_s"] * 1e3 for x in rep["jobs"] if x["jct_s"] and off + x["start_s"] >= cutoff]
        m["used"].append(len(used))
        jct = [x["jct_s"] * 1e3 for x in used]
        for k, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)):
            m[k].append(nearest_rank(jct, p))
        m["late_n"].append(len(late))
        m["late_p50"].append(statistics.median(late) if late else None)
        m["connect_ms"].append(rep["connect_s"] * 1e3)
        m["agg_cpu"].append(j["cpu_s"])
        lo = off + min(x["start_s"] for x in used)
        hi = max(ends(x) for x in used)
        sent, q = link_in_window(r, lo, hi)
        answers = sum(b for x in used for b in x["response_bytes"])
        m["share"].append(answers / sent if sent else None)
        m["q50"].append(pct(q, 0.5))
        m["q99"].append(pct(q, 0.99))
        if bg:
            m["bg_mbps"].append(sum(f["goodput_mbps"] or 0 for f in bg))
            m["outlast"].append(min(f["end_s"] for f in bg) >= j["end_s"])
            ps = [p for f in bg if f["mpquic"] for p in f["mpquic"]["paths"]]
            m["open"].append(f"{sum(1 for p in ps if p['open'])}/{len(ps)}")
            # Per background flow: path 0's bytes, the extra paths' bytes (min, max) and the
            # packets the receiver sent on each extra path (min, max): the keep-alive evidence.
            for f, sv in zip(bg, r.get("mpquic_server_reports") or []):
                fp = (f["mpquic"] or {}).get("paths") or []
                extra = [p["bytes_sent"] for p in fp[1:]]
                rx = [p["packets_sent"] for p in sv.get("paths", [])[1:]]
                if extra:
                    m["perpath"].append((fp[0]["bytes_sent"], min(extra), max(extra), min(rx, default=None), max(rx, default=None)))
            s = [(f["mpquic"].get("controller_state") or {}).get("suppressions") for f in bg if f["mpquic"]]
            if all(x is not None for x in s) and s:
                m["supp"].append(sum(s))
        m["rcvbuf"].append(r["receiver_counters"]["d"]["Udp.RcvbufErrors"])
        m["drops"].append(r["links"][0]["qdisc_drops"])
    if scen in KEEP_SVG:
        copy_svgs(reps[0], DEST, f"E7-{scen}", ("rep0-fct-cdf.svg", "rep0-queue.svg"))
    rows[scen] = {"reps": len(reps), "load": loads(reps), "raw": m,
                  **{k: med(v) for k, v in m.items() if k not in ("outlast", "open", "perpath")},
                  "bg_outlasted_jobs": m["outlast"]}

rounds = ", ".join(f"{k} {v['reps']}" for k, v in rows.items())
print(f"E7 netns: {OUT}, rounds per scenario: {rounds}\n")
print(f"| background | jobs done | JCT p50 ms | JCT p90 ms | JCT p99 ms | answers' share of bytes (job phase) | queue median / p99 frames (job phase) | qdisc drops | aggregator UDP rcvbuf drops | background Mbit/s (2 flows, whole run) | AMP suppressions (2 flows) | background outlasted the jobs | background paths open at the end (2 flows, per round) | jobs started >= {PATH_IDLE_S:g} s after the background: n; JCT p50 ms | host load (rounds) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for scen, r in rows.items():
    done = f"{sum(r['raw']['done'])}/{sum(r['raw']['total'])}"
    late = f"{', '.join(map(str, r['raw']['late_n']))}; {fmt(r['late_p50'])}" if any(r["raw"]["late_n"]) else "-"
    print(f"| {scen} | {done} | {fmt(r['p50'])} | {fmt(r['p90'])} | {fmt(r['p99'])} | "
          f"{fmt(r['share'], 2)} | {fmt(r['q50'])} / {fmt(r['q99'])} | {fmt(r['drops'], 0)} | "
          f"{fmt(r['rcvbuf'], 0)} | {fmt(r['bg_mbps'])} | {fmt(r['supp'], 0)} | "
          f"{', '.join('yes' if x else 'NO' for x in r['bg_outlasted_jobs']) or '-'} | "
          f"{', '.join(r['raw']['open']) or '-'} | {late} | "
          f"{', '.join(map(str, r['load']))} |")
print()
print("Multipath background, per flow over all rounds: bytes sent on path 0 and on each other path "
      "(sender's report), packets the receiver sent on each other path (its report).\n")
print("| background | flows | path 0 MB | each other path MB (min-max) | receiver packets per other path (min-max) |")
print("|---|---|---|---|---|")
for scen, r in rows.items():
    pp = r["raw"]["perpath"]
    if not pp or scen.endswith("-1"):
        continue
    rx = [x for q in pp for x in q[3:] if x is not None]
    print(f"| {scen} | {len(pp)} | {min(q[0] for q in pp) / 1e6:.2f}-{max(q[0] for q in pp) / 1e6:.2f} | "
          f"{min(q[1] for q in pp) / 1e6:.2f}-{max(q[2] for q in pp) / 1e6:.2f} | "
          f"{min(rx) if rx else '-'}-{max(rx) if rx else '-'} |")
print()
print("Aggregator set-up (10 concurrent handshakes) ms, median (min-max) over all runs: "
      + fmt(med([x for r in rows.values() for x in r["raw"]["connect_ms"]])))

# The plot: JCT p50 and p90 against the background's path count (amp, xmp), with the single-path
# and no-background runs as horizontal references; bars are the min-max over rounds.
W, H, L, B, R = 620, 380, 60, 45, 150
ys = [v for r in rows.values() for k in ("p50", "p90") if r[k] for v in (r[k]["max"],)]
YMAX = (max(ys) * 1.1) if ys else 1
XS = [1, 4, 6, 8]


def xy(x, y):
    return L + (x - 0.5) / 8 * (W - L - R), H - B - y / YMAX * (H - B - 15)


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>']
step = 10 ** len(str(int(YMAX))) / 10 / (2 if YMAX < 3 * 10 ** (len(str(int(YMAX))) - 1) else 1)
y = 0
while y <= YMAX:
    _, py = xy(0, y)
    svg.append(f'<line x1="{L}" y1="{py:.1f}" x2="{W - R}" y2="{py:.1f}" stroke="#ddd"/><text x="{L - 5}" y="{py + 4:.1f}" text-anchor="end">{y:g}</text>')
    y += step
for x in XS:
    px, _ = xy(x, 0)
    svg.append(f'<text x="{px:.1f}" y="{H - B + 15}" text-anchor="middle">{x}</text>')
svg.append(f'<text x="{(W - R + L) / 2}" y="{H - 10}" text-anchor="middle">background paths per flow (2 flows)</text>')
svg.append(f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">JCT (ms), median over rounds, bars min-max</text>')
legend = []
for cc, color in (("amp", "#1f77b4"), ("xmp", "#d62728")):
    for p, dash in (("p90", ""), ("p50", ' stroke-dasharray="5 3"')):
        pts = [(x, rows.get(f"{cc}-{x}", {}).get(p)) for x in (4, 6, 8)]
        pts = [(x, v) for x, v in pts if v]
        if not pts:
            continue
        svg.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="'
                   + " ".join("%.1f,%.1f" % xy(x, v["median"]) for x, v in pts) + '"/>')
        for x, v in pts:
            px, lo = xy(x, v["min"])
            _, hi = xy(x, v["max"])
            _, c = xy(x, v["median"])
            svg.append(f'<line x1="{px:.1f}" y1="{lo:.1f}" x2="{px:.1f}" y2="{hi:.1f}" stroke="{color}"/><circle cx="{px:.1f}" cy="{c:.1f}" r="3" fill="{color}"/>')
        legend.append((f"{cc} {p}", color, dash))
for scen, color in (("dctcp-1", "#2ca02c"), ("cubic-1", "#ff7f0e"), ("none", "#7f7f7f")):
    for p, dash in (("p90", ""), ("p50", ' stroke-dasharray="5 3"')):
        v = rows.get(scen, {}).get(p)
        if not v:
            continue
        x0, py = xy(0.5, v["median"])
        x1, _ = xy(8.5, v["median"])
        svg.append(f'<line x1="{x0:.1f}" y1="{py:.1f}" x2="{x1:.1f}" y2="{py:.1f}" stroke="{color}" stroke-width="1.5"{dash}/>')
        legend.append((f"{scen if scen != 'none' else 'no background'} {p}", color, dash))
for i, (name, color, dash) in enumerate(legend):
    ly = 25 + 16 * i
    svg.append(f'<line x1="{W - R + 10}" y1="{ly}" x2="{W - R + 30}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/><text x="{W - R + 35}" y="{ly + 4}">{name}</text>')
svg.append("</svg>")
os.makedirs(DEST, exist_ok=True)
open(os.path.join(DEST, "jct.svg"), "w").write("\n".join(svg))
json.dump({k: {kk: vv for kk, vv in v.items()} for k, v in rows.items()},
          open(os.path.join(DEST, "summary.json"), "w"), indent=1)
