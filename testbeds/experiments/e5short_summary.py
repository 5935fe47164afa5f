"""E5 short flows: per scenario (size, paths per link, ESE on/off), the transfers' FCT, and CPU
seconds per GB of payload (sending + receiving process, each whole process: start-up included
once per run) with the ratio ESE-on / ESE-off at the same size and n.
usage: python3 e5short_summary.py OUT DEST"""
import json
import os
import statistics
import sys

from common import fmt, loads, med, runs

OUT, DEST = sys.argv[1], sys.argv[2]
rows = {}
for s in sorted(d for d in os.listdir(OUT) if d.startswith("E5short-")):
    reps = runs(OUT, s)
    if not reps:
        continue
    cpu_gb, snd_ms, fct50, fct99, done, elim, active = ([] for _ in range(7))
    for r in reps:
        f = r["flows"][0]
        fcts = sorted(f.get("transfer_fcts_s") or ([f["fct_s"]] if f["fct_s"] else []))
        done.append(len(fcts))
        if not f["completed"] or not fcts:
            continue
        rc = sum(r.get("receiver_cpu_s", {}).values())
        cpu_gb.append(((f.get("cpu_s") or 0) + rc) / (f["bytes"] / 1e9))
        snd_ms.append((f.get("cpu_s") or 0) / len(fcts) * 1e3)
        fct50.append(statistics.median(fcts) * 1e3)
        fct99.append(fcts[min(len(fcts) - 1, int(0.99 * len(fcts)))] * 1e3)
        st = (f.get("mpquic") or {}).get("controller_state") or {}
        elim.append(st.get("eliminations", 0))
        active.append(sum(1 for p in f["mpquic"]["paths"] if p.get("active", True)))
    rows[s] = {"reps": len(cpu_gb), "load": loads(reps), "transfers": done,
               "cpu_s_per_gb": med(cpu_gb), "sender_cpu_ms_per_transfer": med(snd_ms),
               "fct_p50_ms": med(fct50), "fct_p99_ms": med(fct99),
               "last_transfer_eliminations": med(elim), "last_transfer_active_paths": med(active)}
os.makedirs(DEST, exist_ok=True)
json.dump(rows, open(os.path.join(DEST, "short-summary.json"), "w"), indent=1)
print("| size | paths per link | ESE | transfers done (rounds) | FCT p50 ms | FCT p99 ms | CPU s per GB (snd + rcv) | ESE on / off | sender CPU ms per transfer | eliminations, last transfer | active paths, last transfer | host load |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for s, r in rows.items():
    _, size, n, ese = s.split("-")
    other = rows.get(s.replace("-mptcpd", "-noese")) if ese == "mptcpd" else None
    ratio = (f"{r['cpu_s_per_gb']['median'] / other['cpu_s_per_gb']['median']:.2f}"
             if other and r["cpu_s_per_gb"] and other["cpu_s_per_gb"] else "")
    print(f"| {size[1:]} | {n[1:]} | {'on' if ese == 'mptcpd' else 'off'} | {', '.join(map(str, r['transfers']))} | "
          f"{fmt(r['fct_p50_ms'])} | {fmt(r['fct_p99_ms'])} | {fmt(r['cpu_s_per_gb'])} | {ratio} | "
          f"{fmt(r['sender_cpu_ms_per_transfer'], 2)} | {fmt(r['last_transfer_eliminations'], 0)} | "
          f"{fmt(r['last_transfer_active_paths'], 0)} | {', '.join(map(str, r['load']))} |")
