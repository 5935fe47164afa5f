#!/usr/bin/env python3
"""Many small files against one large one over one loopback connection: goodput of
`mpquic send DIR` with COUNT files of SIZE each against `mpquic send FILE` of COUNT x SIZE, and
their ratio. Runs alternate (one of each per round, so machine noise hits both alike) REPS times;
the medians are printed with the host's load average and CPU steal, which weigh on its numbers.

    cargo build --release -p mpquic-cli && benches/manyfiles.py [--count 1000] [--size 100K] [--reps 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

from host_noise import HostNoise


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def start_server(binary, store):
    server = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--insecure", "--allow-anonymous",
         "--dir", store, "--overwrite", "--max-active-transfers", "256"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        if line.startswith("mpquic: serving on "):
            port = line.split()[3].rstrip(",").rsplit(":", 1)[1]
            # It prints a table per file: keep reading, or a full pipe would stall it.
            threading.Thread(target=server.stderr.read, daemon=True).start()
            return server, f"127.0.0.1:{port}"
    sys.exit("the server did not start")


def send(binary, addr, paths, parallel):
    out = subprocess.run(
        [binary, "send", *paths, "--server", addr, "--insecure", "--json",
         "--parallel", str(parallel)],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["goodput_mbps"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/mpquic")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--size", default="100K")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=8)
    args = parser.parse_args()
    size = size_bytes(args.size)
    host = HostNoise()
    work = tempfile.mkdtemp(prefix="mpquic-manyfiles-")
    try:
        small = os.path.join(work, "small")
        os.mkdir(small)
        for i in range(args.count):
            with open(os.path.join(small, f"f{i:05}.bin"), "wb") as f:
                f.write(os.urandom(size))
        large = os.path.join(work, "large.bin")
        with open(large, "wb") as f:
            for _ in range(args.count):
                f.write(os.urandom(size))
        store = os.path.join(work, "store")
        os.mkdir(store)
        server, addr = start_server(args.binary, store)
        try:
            many, one = [], []
            # --overwrite: every round writes every file anew over the last round's.
            for _ in range(args.reps):
                many.append(send(args.binary, addr, [small], args.parallel))
                one.append(send(args.binary, addr, [large], args.parallel))
        finally:
            server.terminate()
    finally:
        shutil.rmtree(work)
    many_med, one_med = statistics.median(many), statistics.median(one)
    print(host.report())
    print(f"{args.count} files of {args.size}: {many_med:8.1f} Mbit/s  (runs {', '.join(f'{g:.0f}' for g in many)})")
    print(f"one file of {args.count} x {args.size}: {one_med:8.1f} Mbit/s  (runs {', '.join(f'{g:.0f}' for g in one)})")
    print(f"ratio many/one: {many_med / one_med:.2f}")


if __name__ == "__main__":
    main()
