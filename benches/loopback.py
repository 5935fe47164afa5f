#!/usr/bin/env python3
"""Loopback throughput and CPU cost of mpquic against noq's own Cubic, side by side in one run.

Runs `mpquic demo --json` for each configuration, interleaved (so machine noise hits all of them
alike), REPS times each, and prints medians: goodput (Mbit/s) and CPU seconds per GB (sender and
receiver share the process, so this is the whole cost of moving a GB), plus the ratio to the
Cubic baseline with the same path count.

    cargo build --release -p mpquic-cli && benches/loopback.py [--size 200M] [--reps 5]

With --custom it compares instead a controller written outside the library, with the public API
only (`user-lia`: LIA re-expressed in crates/mpquic/examples/custom_controller.rs, registered by
name), against the built-in `lia`, both through that example's verified two-path transfer:

    cargo build --release -p mpquic --example custom_controller && benches/loopback.py --custom

With --baseline BINARY it compares two builds of the tool instead (e.g. a change against the
main branch's binary): each configuration runs on both, interleaved, and the ratio is this
build's over the baseline's (other work on the host adds noise that interleaving spreads over
both; every mode prints the host's load before and after and the CPU steal over the run):

    benches/loopback.py --baseline /tmp/mpquic-main [--size 200M] [--reps 5]

With --paths-cost it measures what paths cost instead: CPU per GB at 1, 4 and 16 paths for noq's
Cubic and for AMP, DCM and (uncoupled, through the same adapter) Reno, every run naming the
round-robin scheduler so that all paths carry data under our controllers. noq's Cubic has no
scheduler of ours: it sends in the stack's order, which on loopback puts almost everything on
path 0 whatever the path count, so its row is the stack's own cost of having paths, not of using
them; Reno is the uncoupled controller that does use them. The table gives each path count's
median CPU per GB and the 16-path over 1-path ratio (issue 21 asks <= 1.2x for AMP and DCM). With
--baseline too, every run is made with both builds, interleaved, and both tables are printed:

    benches/loopback.py --paths-cost [--baseline /tmp/mpquic-main] [--size 200M] [--reps 3]
"""
import argparse
import json
import statistics
import subprocess
import sys

from host_noise import HostNoise

CONFIGS = [
    # (label, paths, extra arguments, baseline label)
    ("noq cubic, 1 path", 1, ["--cc", "cubic"], None),
    ("mpquic amp, 1 path", 1, ["--cc", "amp"], "noq cubic, 1 path"),
    # Every controller gets the exact CE counts of each ACK frame, at the stack's own batching:
    ("mpquic dctcp, 1 path", 1, ["--cc", "dctcp"], "noq cubic, 1 path"),
    ("noq cubic, 4 paths", 4, ["--cc", "cubic"], None),
    ("mpquic amp, 4 paths", 4, ["--cc", "amp"], "noq cubic, 4 paths"),
    ("mpquic dcm, 4 paths", 4, ["--cc", "dcm"], "noq cubic, 4 paths"),
    # Loopback never fills path 0, so under the stack's order the rows above send (almost) all on
    # path 0, as noq's Cubic does; this row spreads packets evenly over the 4 paths instead:
    ("mpquic amp, 4 paths round-robin", 4, ["--cc", "amp", "--scheduler", "round-robin"], "noq cubic, 4 paths"),
    # The measurement option: one packet per datagram, an ACK for every packet.
    ("mpquic dcm per-packet, 4 paths", 4, ["--cc", "dcm", "--ecn", "per-packet"], "noq cubic, 4 paths"),
]


def run(binary, size, paths, extra):
    # The stack's own packet order unless a configuration says otherwise (noq's Cubic has no
    # other), so that rows differ only in what they name.
    scheduler = [] if "--scheduler" in extra else ["--scheduler", "stack"]
    out = subprocess.run(
        [binary, "demo", "--json", "--size", size, "--paths", str(paths), *scheduler, *extra],
        check=True, capture_output=True, text=True,
    ).stdout
    result = json.loads(out)
    return result["goodput_mbps"], result["cpu_s"] / (result["bytes"] / 1e9)


CUSTOM = [
    # (label, controller); the first is the baseline.
    ("built-in lia, 2 paths", "lia"),
    ("user-lia (public API), 2 paths", "user-lia"),
]


def run_custom(binary, size, controller):
    out = subprocess.run(
        [binary, controller, size, "--json"], check=True, capture_output=True, text=True
    ).stdout
    result = json.loads(out)
    return result["goodput_mbps"], result["cpu_s"] / (result["bytes"] / 1e9)


PATH_COUNTS = [1, 4, 16]
PATH_COST_CONTROLLERS = ["cubic", "reno", "amp", "dcm"]


def paths_cost(args):
    """CPU per GB against the number of paths, per controller (and per build), interleaved."""
    builds = [("this", args.binary)] + ([("baseline", args.baseline)] if args.baseline else [])
    keys = [(cc, n, build) for cc in PATH_COST_CONTROLLERS for n in PATH_COUNTS for build, _ in builds]
    samples = {key: [] for key in keys}
    binaries = dict(builds)
    host = HostNoise()
    for rep in range(args.reps):
        for cc, n, build in keys:
            extra = ["--cc", cc, "--scheduler", "round-robin"]
            samples[(cc, n, build)].append(run(binaries[build], args.size, n, extra))
        print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    print(host.report())
    median = lambda key, i: statistics.median(s[i] for s in samples[key])
    counts = " ".join(f"{f'{n} path(s)':>11}" for n in PATH_COUNTS)
    for build, binary in builds:
        print(f"\n{binary} ({build}): median CPU s/GB (goodput Mbit/s), round-robin named for all")
        print(f"{'controller':10} {counts} {'16/1 CPU':>9} {'16/1 goodput':>13}")
        for cc in PATH_COST_CONTROLLERS:
            cells = " ".join(
                f"{median((cc, n, build), 1):>5.2f} ({median((cc, n, build), 0):>3.0f})" for n in PATH_COUNTS
            )
            first, last = (cc, PATH_COUNTS[0], build), (cc, PATH_COUNTS[-1], build)
            cpu = median(last, 1) / median(first, 1)
            goodput = median(last, 0) / median(first, 0)
            print(f"{cc:10} {cells} {cpu:>9.2f} {goodput:>13.2f}")


def custom(args):
    """The user-defined controller against the built-in one, interleaved."""
    binary = "target/release/examples/custom_controller"
    samples = {label: [] for label, _ in CUSTOM}
    host = HostNoise()
    for rep in range(args.reps):
        for label, controller in CUSTOM:
            samples[label].append(run_custom(binary, args.size, controller))
        print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    base = statistics.median(c for _, c in samples[CUSTOM[0][0]])
    print(host.report())
    print(f"{'configuration':32} {'goodput Mbit/s':>15} {'CPU s/GB':>9} {'x CPU/GB':>9}")
    for label, _ in CUSTOM:
        goodput = statistics.median(g for g, _ in samples[label])
        cpu = statistics.median(c for _, c in samples[label])
        runs = [round(c, 2) for _, c in samples[label]]
        print(f"{label:32} {goodput:>15.0f} {cpu:>9.2f} {cpu / base:>9.3f}   CPU/GB runs {runs}")


def against_baseline(args):
    builds = [("baseline", args.baseline), ("this", args.binary)]
    samples = {(label, build): [] for label, *_ in CONFIGS for build, _ in builds}
    host = HostNoise()
    for rep in range(args.reps):
        for label, paths, extra, _ in CONFIGS:
            for build, binary in builds:
                samples[(label, build)].append(run(binary, args.size, paths, extra))
        print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    print(host.report())
    median = lambda key, i: statistics.median(s[i] for s in samples[key])
    print(f"{'configuration':32} {'CPU s/GB base':>13} {'CPU s/GB this':>13} {'x CPU/GB':>9} {'x goodput':>10}")
    for label, *_ in CONFIGS:
        base, this = (label, "baseline"), (label, "this")
        ratio_cpu = median(this, 1) / median(base, 1)
        ratio_goodput = median(this, 0) / median(base, 0)
        print(f"{label:32} {median(base, 1):>13.2f} {median(this, 1):>13.2f} {ratio_cpu:>9.3f} {ratio_goodput:>10.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default="target/release/mpquic")
    parser.add_argument("--size", default="200M")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--custom", action="store_true", help="user-lia against the built-in lia")
    parser.add_argument("--baseline", metavar="BINARY", help="another build of the tool to compare with")
    parser.add_argument("--paths-cost", action="store_true", help="CPU per GB at 1, 4 and 16 paths")
    args = parser.parse_args()
    if args.custom:
        return custom(args)
    if args.paths_cost:
        return paths_cost(args)
    if args.baseline:
        return against_baseline(args)

    samples = {label: [] for label, *_ in CONFIGS}
    host = HostNoise()
    for rep in range(args.reps):
        for label, paths, extra, _ in CONFIGS:
            samples[label].append(run(args.binary, args.size, paths, extra))
        print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    print(host.report())

    medians = {
        label: (statistics.median(g for g, _ in s), statistics.median(c for _, c in s))
        for label, s in samples.items()
    }
    print(f"{'configuration':32} {'goodput Mbit/s':>15} {'CPU s/GB':>9} {'x goodput':>10} {'x CPU/GB':>9}")
    for label, _, _, baseline in CONFIGS:
        goodput, cpu = medians[label]
        if baseline:
            base_goodput, base_cpu = medians[baseline]
            ratios = f"{goodput / base_goodput:>10.2f} {cpu / base_cpu:>9.2f}"
        else:
            ratios = f"{'(base)':>10} {'':>9}"
        spread = [round(g) for g, _ in samples[label]]
        print(f"{label:32} {goodput:>15.0f} {cpu:>9.2f} {ratios}   goodput runs {spread}")


if __name__ == "__main__":
    main()
