"""Heterogeneous two-path summary (testbeds/experiments/hetero.sh): per controller and scheduler,
the transfer's goodput and completion time, the share of bytes the slow path (20 Mbit/s, 40 ms)
carried, and each path's median and p99 RTT as the sender measured them (the CLI's per-path
report), median (min-max) over rounds; plus the delay lines' release lateness from their logs.
usage: python3 hetero_summary.py OUT DEST"""
import glob
import ipaddress
import json
import os
import re
import sys

from common import fmt, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
CCS = ("amp", "xmp", "lia")
SCHEDS = ("stack", "lowest-rtt", "round-robin")
CAPACITY_MBIT = 120.0
# Path 1's bottleneck r1 -> d is link 1 (subnet 10.2.0.0/24), path 2's r2 -> d is link 3
# (10.4.0.0/24): topology.rs numbers links s-r1, r1-d, s-r2, r2-d.
SLOW_SUBNET_OCTET = 4


def paths_of(rep):
    """(fast, slow) per-path reports of the sender, by the remote address's subnet."""
    m = rep["flows"][0].get("mpquic") or {}
    fast = slow = None
    for p in m.get("paths", []):
        octet = ipaddress.ip_address(p["remote"].rsplit(":", 1)[0]).packed[1]
        if octet == SLOW_SUBNET_OCTET:
            slow = p
        else:
            fast = p
    return fast, slow


def lateness(out):
    """p99 and max of the delay lines' per-second release lateness (us), over every log."""
    p99, mx, rates = [], [], []
    pat = re.compile(r"(\d+) pkt/s, release lateness p50 \d+ us p99 (\d+) us max (\d+) us")
    for path in glob.glob(os.path.join(out, "*", "round*", "delay-line-*.log")):
        for line in open(path):
            m = pat.search(line)
            if m:
                rates.append(int(m.group(1)))
                p99.append(int(m.group(2)))
                mx.append(int(m.group(3)))
    return rates, p99, mx


rows, summary = [], {}
for cc in CCS:
    for sched in SCHEDS:
        name = f"hetero-{cc}-{sched}"
        reps = runs(OUT, name)
        if not reps:
            continue
        done = [r for r in reps if r["flows"][0]["completed"]]
        ps = [paths_of(r) for r in done]
        total = lambda f, s: (f or {}).get("bytes_sent", 0) + (s or {}).get("bytes_sent", 0)
        s = {
            "runs": len(reps),
            "completed": len(done),
            "goodput_mbps": med([r["flows"][0]["goodput_mbps"] for r in done]),
            "fct_s": med([r["flows"][0]["fct_s"] for r in done]),
            "slow_path_share": med([s["bytes_sent"] / total(f, s) for f, s in ps if s]),
            "fast_rtt_p50_ms": med([f["rtt_p50_ms"] for f, _ in ps if f]),
            "slow_rtt_p50_ms": med([s["rtt_p50_ms"] for _, s in ps if s]),
            "fast_rtt_p99_ms": med([f["rtt_p99_ms"] for f, _ in ps if f]),
            "slow_rtt_p99_ms": med([s["rtt_p99_ms"] for _, s in ps if s]),
            "lost_packets": med([(f or {}).get("lost_packets", 0) + (s or {}).get("lost_packets", 0) for f, s in ps]),
        }
        summary[name] = s
        rows.append(
            f"| {cc} | {sched} | {len(done)}/{len(reps)} | {fmt(s['goodput_mbps'])} | "
            f"{fmt(s['goodput_mbps'], 2, 1 / CAPACITY_MBIT)} | {fmt(s['fct_s'], 2)} | "
            f"{fmt(s['slow_path_share'], 2)} | {fmt(s['fast_rtt_p50_ms'])} / {fmt(s['fast_rtt_p99_ms'])} | "
            f"{fmt(s['slow_rtt_p50_ms'])} / {fmt(s['slow_rtt_p99_ms'])} | {fmt(s['lost_packets'], 0)} |"
        )

rates, p99, mx = lateness(OUT)
summary["_delay_line"] = {"pkt_per_s": med(rates), "lateness_p99_us": med(p99), "lateness_max_us": med(mx)}
os.makedirs(DEST, exist_ok=True)
with open(os.path.join(DEST, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
print("| cc | scheduler | done | goodput Mbit/s | of 120 Mbit/s | FCT s | slow-path share "
      "| fast path RTT p50 / p99 ms | slow path RTT p50 / p99 ms | lost pkts |")
print("|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
if rates:
    print(f"\nDelay lines (per queue-second, {len(rates)} seconds): pkt/s {fmt(med(rates), 0)}, "
          f"release lateness p99 {fmt(med(p99), 0)} us, max {fmt(med(mx), 0)} us "
          f"(median (min-max) over seconds)")
