#!/usr/bin/env python3
"""Markdown tables of the simulator's experiment results, in the write-ups' formats
(docs/results/E*-sim.md), straight from the committed JSON: the `e1.json`,
`e2.json`, ... that the retired Rust sweeps (`mpquic-sim exp e1|e2|e6|e7`) wrote and `e3.json`
(`mpquic-sim e3`). Today's `mpquic-sim run experiments/E*.toml` writes `experiment.json` and its
own `tables.md` instead; this script does not read those.

usage: python3 crates/mpquic-sim/scripts/tables.py [--update] [EXP ...]
  EXP: e1 e1-256k e1-512k e1-dc e2 e3 e6 e7 e7-dc (default: all)
  --update: replace each table's rows in its write-up (the table is found by its header line),
            otherwise print the tables.
Run from the repository root. (The cross-check's table is `mpquic-testbed compare` over the
simulator's and the testbed's experiment.json, docs/results/crosscheck.md.) Checked: it reproduces, from the JSON committed at 33a219c,
every table of those write-ups byte for byte.
"""
import glob
import json
import os
import statistics
import sys

R = "crates/mpquic-sim/results"
D = "docs/results"


# --- number formats --------------------------------------------------------------------------
def f2(x):
    """E1/E7: two decimals, integers from 100 on."""
    return "%.0f" % x if abs(x) >= 100 else "%.2f" % x


def mm2(s):
    """'median [min, max]' (just the median when all agree), E1/E7 style."""
    if s is None:
        return "-"
    if s["min"] == s["max"]:
        return f2(s["median"])
    return "%s [%s, %s]" % (f2(s["median"]), f2(s["min"]), f2(s["max"]))


def f3(x):
    """E2/E6: three decimals below 10, one from 10 on; always with the spread."""
    return "%.1f" % x if abs(x) >= 10 else "%.3f" % x


def mm3(s):
    if s is None:
        return "-"
    return "%s [%s, %s]" % (f3(s["median"]), f3(s["min"]), f3(s["max"]))


def load(path):
    with open(path) as f:
        return json.load(f)


def rows_by_x(d, cols, fmt, x_of=None):
    out = []
    for r in d["summary"]:
        x = x_of(r) if x_of else r["x"]
        out.append("| %s | %g | " % (r["series"], x) + " | ".join(fmt(r["metrics"].get(m)) for m in cols) + " |")
    return out


def rows_by_series(d, cols, fmts, prefix):
    out = []
    for r in d["summary"]:
        if not r["series"].startswith(prefix):
            continue
        cells = [fm(r["metrics"].get(m)) for m, fm in zip(cols, fmts)]
        out.append("| %s | " % r["series"][len(prefix):] + " | ".join(cells) + " |")
    return out


# --- tables: (doc, header line, rows) ----------------------------------------------------------
E1_HDR = "| controller | k | mean FCT ms | FCT std ms | p50 ms | max ms | PTOs/round | flows w/ PTO/round | drops/round | SSR episodes/round |"
E1_COLS = ["fct_mean_ms", "fct_std_ms", "fct_p50_ms", "fct_max_ms", "pto_per_round", "flows_with_pto_per_round", "drops_per_round", "suppressions_per_round"]
E1B_HDR = "| controller | k | mean FCT ms | FCT std ms | p50 ms | max ms | unfinished | PTOs/round | flows w/ PTO/round | drops/round | SSR episodes/round |"
E1B_COLS = E1_COLS[:4] + ["unfinished"] + E1_COLS[4:]
E1DC_HDR = "| controller | k | mean FCT ms | p50 ms | max ms | PTOs/round | flows w/ PTO/round | drops/round | ACK requests lost/round | flows > 10 ms/round | of these w/ request lost | mean FCT ms (request arrived) | max FCT ms (request arrived) |"
E1DC_COLS = ["fct_mean_ms", "fct_p50_ms", "fct_max_ms", "pto_per_round", "flows_with_pto_per_round", "drops_per_round", "ack_request_lost_per_round", "flows_over_10ms_per_round", "over_10ms_with_ack_request_lost_per_round", "fct_mean_ms_ack_heard", "fct_max_ms_ack_heard"]
E7_HDR = "| controller | paths | JCT p50 ms | JCT p90 ms | JCT p99 ms | jobs > 10 ms (of 48) | unfinished | PTOs (job flows) | job flows w/ ACK request lost | background Gbps/flow | SSR episodes | max host-downlink queue p90 |"
E7_COLS = ["jct_p50_ms", "jct_p90_ms", "jct_p99_ms", "jobs_over_10ms", "jobs_unfinished", "pa_pto", "pa_ack_request_lost", "bg_mean_gbps", "bg_suppressions", "host_downlink_queue_p90_max"]
E2A_HDR = "| multipath flow | Jain (9 flows) | multipath / DCTCP | multipath Gbps | DCTCP mean Gbps | queue p50 | queue p90 | queue p99 | SSR episodes |"
E2B_HDR = "| 4 flows of | queue p50 | queue p90 | queue p99 | Jain | final window, pkts (mean over paths) | drops | SSR episodes |"
E6_HDR = "| controller | paths | short FCT mean ms | short FCT std ms | p50 ms | p99 ms | unfinished | PTOs (short flows) | short flows | long flow Gbps |"
E6_COLS = ["short_fct_mean_ms", "short_fct_std_ms", "short_fct_p50_ms", "short_fct_p99_ms", "short_unfinished", "short_pto", "short_flows", "long_mean_gbps"]
E3_HDR = "| controller | moved off path 1 | share before -> during | moved off path 2 | share before -> during | goodput |"
E3R_HDR = "| controller | moved off path 1, ms: median [min, max] | moved off path 2, ms: median [min, max] |"


def e1(sub):
    d = load(f"{R}/{sub}/e1.json")
    if sub == "e1":
        return [("E1-sim.md", E1_HDR, rows_by_x(d, E1_COLS, mm2))]
    if sub == "e1-dc":
        return [("E1-sim.md", E1DC_HDR, rows_by_x(d, E1DC_COLS, mm2))]
    # 256k and 512k share a header: tell them apart by the section title before the table
    title = {"e1-256k": "### 256 KB", "e1-512k": "### 512 KB"}[sub]
    return [("E1-sim.md", (title, E1B_HDR), rows_by_x(d, E1B_COLS, mm2))]


def e7(sub):
    d = load(f"{R}/{sub}/e7.json")
    title = "## Results, default profile" if sub == "e7" else "## Results, data-center ACK profile"
    return [("E7-sim.md", (title, E7_HDR), rows_by_x(d, E7_COLS, mm2))]


def e2(_):
    d = load(f"{R}/e2/e2.json")
    a = rows_by_series(d, ["jain", "mp_over_dctcp", "mp_gbps", "dctcp_mean_gbps", "queue_p50", "queue_p90", "queue_p99", "suppressions"],
                       [mm3] * 8, "mix/")
    b = rows_by_series(d, ["queue_p50", "queue_p90", "queue_p99", "jain", "final_window_pkts_mean", "drops", "suppressions"],
                       [mm3] * 7, "alone/")
    return [("E2-sim.md", E2A_HDR, a), ("E2-sim.md", E2B_HDR, b)]


def e6(_):
    d = load(f"{R}/e6/e6.json")
    return [("E6-sim.md", E6_HDR, rows_by_x(d, E6_COLS, mm3, x_of=lambda r: 1 if r["series"] == "dctcp" else r["x"]))]


def e3(_):
    d = load(f"{R}/e3/e3.json")
    full = []
    for r in d["runs"]:
        p1, p2 = r["phases"]
        ms = lambda p: "not moved" if p["shift_ms"] is None else "%.1f ms" % p["shift_ms"]
        full.append("| %s | %s | %.2f -> %.2f | %s | %.2f -> %.2f | %.1f Gbps |" % (
            r["controller"], ms(p1), p1["pre_share"], p1["during_share"], ms(p2), p2["pre_share"], p2["during_share"], r["mp_goodput_bps"] / 1e9))
    per = {}
    for path in sorted(glob.glob(f"{R}/e3-100ms/seed-*/e3.json")):
        for r in load(path)["runs"]:
            per.setdefault(r["controller"], []).append([p["shift_ms"] for p in r["phases"]])

    def cell(xs):
        if any(x is None for x in xs):
            n = sum(x is None for x in xs)
            xs = [x for x in xs if x is not None]
            extra = " (not moved in %d)" % n
        else:
            extra = ""
        if not xs:
            return "not moved"
        return "%.1f [%.1f, %.1f]%s" % (statistics.median(xs), min(xs), max(xs), extra)
    rep = ["| %s | %s | %s |" % (c, cell([v[0] for v in vs]), cell([v[1] for v in vs])) for c, vs in per.items()]
    return [("E3-sim.md", E3_HDR, full), ("E3-sim.md", E3R_HDR, rep)]


TABLES = {"e1": e1, "e1-256k": e1, "e1-512k": e1, "e1-dc": e1, "e2": e2, "e3": e3, "e6": e6,
          "e7": e7, "e7-dc": e7}


def replace(doc, header, rows):
    """Replace the rows of the table with this header line (after `title`, if given)."""
    title = None
    if isinstance(header, tuple):
        title, header = header
    lines = open(os.path.join(D, doc)).read().split("\n")
    start = 0
    if title:
        start = next(i for i, l in enumerate(lines) if l.startswith(title))
    h = next(i for i in range(start, len(lines)) if lines[i] == header)
    end = h + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines[h + 2:end] = rows
    open(os.path.join(D, doc), "w").write("\n".join(lines))


def main():
    args = sys.argv[1:]
    update = "--update" in args
    exps = [a for a in args if not a.startswith("--")] or list(TABLES)
    for e in exps:
        for doc, header, rows in TABLES[e](e):
            if update:
                replace(doc, header, rows)
                print(f"{doc}: {len(rows)} rows ({e})")
            else:
                print(f"<!-- {e} -> {doc} -->")
                print(header if isinstance(header, str) else header[1])
                print("|" + "---|" * (header if isinstance(header, str) else header[1]).count(" | ") + "---|")
                print("\n".join(rows))
                print()


if __name__ == "__main__":
    main()
