"""Helpers for the experiment summaries: read OUT/<scenario>/round<i>/result.json, take
medians over rounds with their spread (min..max)."""
import glob
import json
import os
import shutil
import statistics


def runs(out, scenario):
    """The repetitions (one per round) of a scenario, in round order."""
    reps = []
    for path in sorted(glob.glob(os.path.join(out, scenario, "round*", "result.json"))):
        with open(path) as f:
            r = json.load(f)
        for rep in r.get("repetitions", r.get("reps", [])):
            rep["_round_dir"] = os.path.dirname(path)
            reps.append(rep)
    return reps


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def fmt(m, digits=1, scale=1.0):
    """'median (min-max)' for a med() result."""
    if m is None:
        return "-"
    f = "{:.%df}" % digits
    return (f + " (" + f + "-" + f + ")").format(
        m["median"] * scale, m["min"] * scale, m["max"] * scale
    )


def copy_svgs(rep, dest, prefix, names=("rep0-throughput.svg", "rep0-queue.svg")):
    """Copy a repetition's plots into the committed results, renamed with a prefix."""
    os.makedirs(dest, exist_ok=True)
    out = []
    for n in names:
        src = os.path.join(rep["_round_dir"], n)
        if os.path.exists(src):
            d = os.path.join(dest, f"{prefix}-{n.replace('rep0-', '')}")
            shutil.copy(src, d)
            out.append(os.path.basename(d))
    return out


def loads(reps):
    return [round(r["host_loadavg_1min"][0], 2) for r in reps]
