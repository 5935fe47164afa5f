"""Cross-check summary: netns (measure-two-path-<cc>) against the simulator
(experiments/crosscheck-two-path.toml, point controller=<cc>, run with --detail), goodput as a fraction of each side's ceiling and queue length.
Ceilings: netns htb counts Ethernet frames (1452-byte QUIC datagram -> 1494-byte frame), the
simulator counts IP + UDP (1480 bytes); ~35 bytes per packet are QUIC header, frame header
and AEAD tag. usage: python3 crosscheck_summary.py OUT DEST"""
import glob
import json
import os
import sys

from common import fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
PAYLOAD = 1452 - 35
NETNS_CEIL = PAYLOAD / 1494
SIM_CEIL = PAYLOAD / 1480
rows = {}
for cc in ("amp", "xmp", "dcm", "lia"):
    reps = runs(OUT, f"measure-two-path-{cc}")
    n_g, n_q50, n_q99, n_lost, n_ce = [], [], [], [], []
    for r in reps:
        f = r["flows"][0]
        if not f["completed"]:
            continue
        n_g.append(r["goodput_fraction_of_link_sum"] / NETNS_CEIL)
        n_q50.append(sum(l["queue_frames_busy"]["median"] for l in r["links"]) / len(r["links"]))
        n_q99.append(max(l["queue_frames_busy"]["p99"] for l in r["links"]))
        n_lost.append(sum(p["lost_packets"] for p in f["mpquic"]["paths"]))
        n_ce.append(sum((l.get("marker") or {}).get("marks", 0) for l in r["links"]) / max(1, sum(l["sent_bytes"] for l in r["links"]) / 1494))
    s_g, s_q50, s_q99, s_lost, s_ce = [], [], [], [], []
    for p in sorted(glob.glob(os.path.join(OUT, "sim", f"controller={cc}", "seed-*", "results.json"))):
        j = json.load(open(p))
        f = j["flows"][0]
        s_g.append(f["goodput_last_half_bps"] / (2 * 100e6) / SIM_CEIL)
        ql = [l for l in j["links"] if l["queue"]]
        s_q50.append(sum(l["queue"]["p50"] for l in ql) / len(ql))
        s_q99.append(max(l["queue"]["p99"] for l in ql))
        s_lost.append(sum(p["lost_packets"] for p in f["path_stats"]))
        s_ce.append(sum(l["marked"] for l in ql) / max(1, sum(l["sent_packets"] for l in ql)))
    rows[cc] = {
        "netns": {"reps": len(n_g), "load": loads(reps), "goodput_of_ceiling": med(n_g), "queue_median": med(n_q50),
                  "queue_p99": med(n_q99), "lost": med(n_lost), "marked_fraction": med(n_ce)},
        "sim": {"seeds": len(s_g), "goodput_of_ceiling": med(s_g), "queue_median": med(s_q50),
                "queue_p99": med(s_q99), "lost": med(s_lost), "marked_fraction": med(s_ce)},
    }
# E2 mix: netns E2-n8-m1-<cc> (testbed-results/E2, or $E2OUT) against sim crosscheck-e2-n8-m1-<cc>.
E2OUT = os.environ.get("E2OUT", "testbed-results/E2")
e2 = {}
for cc in ("xmp", "amp"):
    n_ratio, n_mp, n_q50, n_q99 = [], [], [], []
    for r in runs(E2OUT, f"E2-n8-m1-{cc}"):
        single = [f["goodput_mbps"] for f in r["flows"] if f["cc"] == "dctcp"]
        multi = [f["goodput_mbps"] for f in r["flows"] if f["cc"] != "dctcp"]
        n_ratio.append(sum(multi) / len(multi) / (sum(single) / len(single)))
        n_mp.append(multi[0])
        n_q50.append(r["links"][0]["queue_frames_busy"]["median"]); n_q99.append(r["links"][0]["queue_frames_busy"]["p99"])
    s_ratio, s_mp, s_q50, s_q99 = [], [], [], []
    for p in sorted(glob.glob(os.path.join(OUT, "sim-e2", cc, "seed*", "results.json"))):
        j = json.load(open(p))
        gp = {f["name"]: f["delivered_bytes"] * 8 / (f["fct_us"] / 1e6) / 1e6 for f in j["flows"]}
        single = [v for k, v in gp.items() if k != "multipath"]
        s_ratio.append(gp["multipath"] / (sum(single) / len(single))); s_mp.append(gp["multipath"])
        q = [l for l in j["links"] if l["queue"]][0]["queue"]
        s_q50.append(q["p50"]); s_q99.append(q["p99"])
    e2[cc] = {"netns": {"ratio": med(n_ratio), "multipath_mbps": med(n_mp), "queue_median": med(n_q50), "queue_p99": med(n_q99)},
              "sim": {"ratio": med(s_ratio), "multipath_mbps": med(s_mp), "queue_median": med(s_q50), "queue_p99": med(s_q99)}}
rows["e2_mix"] = e2
os.makedirs(DEST, exist_ok=True)
json.dump(rows, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
print("| controller | netns goodput % of ceiling | sim goodput % of ceiling | netns queue median / p99 (frames, busy) | sim queue p50 / p99 (packets, all samples) | netns / sim marked fraction % | netns / sim lost | netns load |")
print("|---|---|---|---|---|---|---|---|")
for cc, r in rows.items():
    if cc == "e2_mix":
        continue
    n, s = r["netns"], r["sim"]
    print(f"| {cc} | {fmt(n['goodput_of_ceiling'], 1, 100)} | {fmt(s['goodput_of_ceiling'], 1, 100)} | {fmt(n['queue_median'])} / {fmt(n['queue_p99'])} | "
          f"{fmt(s['queue_median'])} / {fmt(s['queue_p99'])} | {fmt(n['marked_fraction'], 2, 100)} / {fmt(s['marked_fraction'], 2, 100)} | {fmt(n['lost'], 0)} / {fmt(s['lost'], 0)} | {n['load']} |")
print()
print("| E2 mix: 8 DCTCP + 1 x | netns multipath / DCTCP goodput | sim | netns multipath Mbit/s | sim | netns queue median / p99 | sim queue p50 / p99 |")
print("|---|---|---|---|---|---|---|")
for cc, r in e2.items():
    n, s = r["netns"], r["sim"]
    print(f"| {cc} | {fmt(n['ratio'], 2)} | {fmt(s['ratio'], 2)} | {fmt(n['multipath_mbps'])} | {fmt(s['multipath_mbps'])} | {fmt(n['queue_median'])} / {fmt(n['queue_p99'])} | {fmt(s['queue_median'])} / {fmt(s['queue_p99'])} |")
