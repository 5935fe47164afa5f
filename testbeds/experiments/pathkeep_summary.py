"""Path keep-alive check summary (testbeds/experiments/pathkeep.sh): per round and per path of the
multipath flow, the bytes its bottleneck sent in each half of the transfer and before/after the
10 s path idle timeout (the runner's per-link series: one path per link), whether the path was
open at the end (sender's report) and the packets each end sent on it (both ends' reports).
usage: python3 pathkeep_summary.py OUT DEST"""
import bisect
import ipaddress
import json
import os
import sys

from common import runs

OUT, DEST = sys.argv[1], sys.argv[2]
SCEN = "pathkeep-two-path-xmp"
# The runner starts its sampler ~50 ms before the flows' clock (runner.rs sleeps 50 ms).
SAMPLER_LEAD_S = 0.05
# The CLI's default --idle-timeout (the path idle timeout too).
IDLE_S = 10.0


def link_id_of(addr, series):
    """The bottleneck toward a path's remote address: link i has the subnet 10.<i+1>.0.0/24
    (topology.rs); its direction toward the receiver is i, or 1000 + i when the receiver is the
    link's first end (two-path: dst -- a)."""
    ip = ipaddress.ip_address(addr.rsplit(":", 1)[0])
    i = ip.packed[1] - 1
    return i if i in series else 1000 + i


def sent_between(series, lo, hi):
    """Bytes the link sent between lo and hi (flow clock), from its cumulative byte counter."""
    t = [x - SAMPLER_LEAD_S for x in series["t"]]
    b = series["bytes"]

    def at(x):
        i = bisect.bisect_right(t, x) - 1
        return b[max(0, min(i, len(b) - 1))]

    return at(hi) - at(lo)


out = {"rounds": []}
print(f"Path keep-alive check: {OUT}, scenario {SCEN}\n")
print("| round | path | link | open at end | bytes sent (sender's report) MB | link MB, 0-10 s | link MB, 10 s-end | Mbit/s 0-10 s | Mbit/s 10 s-end | link MB, 1st half | link MB, 2nd half | link MB, last 1 s | packets sent by the sender | packets sent by the receiver | host load |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n, rep in enumerate(runs(OUT, SCEN), 1):
    series = {s["link_id"]: s for s in json.load(open(os.path.join(rep["_round_dir"], f"rep{rep['rep']}-series.json")))}
    f = rep["flows"][0]
    start, end = f["start_s"], f["end_s"]
    mid, cut = (start + end) / 2, start + IDLE_S
    server = rep["mpquic_server_reports"][0]
    srv = {p["id"]: p for p in server["paths"]}
    rnd = {"round": n, "fct_s": f["fct_s"], "goodput_mbps": f["goodput_mbps"], "completed": f["completed"],
           "start_s": start, "end_s": end, "load": rep["host_loadavg_1min"][0], "paths": []}
    for p in f["mpquic"]["paths"]:
        lid = link_id_of(p["remote"], series)
        s = series[lid]
        mb = lambda lo, hi: sent_between(s, lo, hi) / 1e6
        row = {"id": p["id"], "link": lid, "open": p["open"], "bytes_sent": p["bytes_sent"],
               "mb_before_10s": mb(start, cut), "mb_after_10s": mb(cut, end),
               "mbps_before_10s": mb(start, cut) * 8 / (cut - start),
               "mbps_after_10s": mb(cut, end) * 8 / (end - cut) if end > cut else None,
               "mb_first_half": mb(start, mid), "mb_second_half": mb(mid, end),
               "mb_last_1s": mb(end - 1, end), "packets_sent": p["packets_sent"],
               "receiver_packets_sent": srv.get(p["id"], {}).get("packets_sent"),
               "receiver_open": srv.get(p["id"], {}).get("open")}
        rnd["paths"].append(row)
        after = f"{row['mbps_after_10s']:.1f}" if row["mbps_after_10s"] is not None else "-"
        print(f"| {n} | {p['id']} | {lid} | {'yes' if p['open'] else 'NO'} | {p['bytes_sent'] / 1e6:.1f} | "
              f"{row['mb_before_10s']:.1f} | {row['mb_after_10s']:.1f} | {row['mbps_before_10s']:.1f} | {after} | "
              f"{row['mb_first_half']:.1f} | {row['mb_second_half']:.1f} | {row['mb_last_1s']:.2f} | "
              f"{p['packets_sent']} | {row['receiver_packets_sent']} | {rnd['load']} |")
    out["rounds"].append(rnd)
print()
for r in out["rounds"]:
    print(f"Round {r['round']}: flow {r['start_s']:.2f}-{r['end_s']:.2f} s, FCT {r['fct_s']:.2f} s, "
          f"goodput {r['goodput_mbps']:.1f} Mbit/s, completed {r['completed']}.")
os.makedirs(DEST, exist_ok=True)
json.dump(out, open(os.path.join(DEST, "summary.json"), "w"), indent=1)
