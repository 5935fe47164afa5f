"""E2: CDF of the bottleneck queue (1514-byte frames, samples where the link was sending) for the
4 DCTCP + 4 multipath mixes, pooled over rounds, as a hand-written SVG (no plotting library here).
usage: python3 e2_queue_cdf.py OUT DEST"""
import glob
import json
import os
import sys

OUT, DEST = sys.argv[1], sys.argv[2]
CURVES = [("E2-n4-m4-amp", "#1f77b4"), ("E2-n4-m4-xmp", "#d62728"), ("E2-n4-m4-dcm", "#2ca02c")]
W, H, L, B, XMAX = 560, 340, 50, 40, 50
K = 10


def queue_samples(scen):
    q = []
    for p in sorted(glob.glob(os.path.join(OUT, scen, "round*", "rep0-series.json"))):
        for s in json.load(open(p)):
            b = s["bytes"]
            for i in range(1, len(b)):
                if b[i] > b[i - 1]:
                    q.append(s["backlog"][i] / 1514)
    return sorted(q)


def xy(x, y):
    return L + x / XMAX * (W - L - 10), H - B - y * (H - B - 10)


parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>']
for x in range(0, XMAX + 1, 10):
    px, _ = xy(x, 0)
    parts.append(f'<line x1="{px}" y1="{H - B}" x2="{px}" y2="10" stroke="#ddd"/><text x="{px}" y="{H - B + 14}" text-anchor="middle">{x}</text>')
for y in (0, 0.25, 0.5, 0.75, 1):
    _, py = xy(0, y)
    parts.append(f'<line x1="{L}" y1="{py}" x2="{W - 10}" y2="{py}" stroke="#ddd"/><text x="{L - 5}" y="{py + 4}" text-anchor="end">{y}</text>')
for k, lab in ((K, "K"), (2 * K, "2K")):
    px, _ = xy(k, 0)
    parts.append(f'<line x1="{px}" y1="{H - B}" x2="{px}" y2="10" stroke="#888" stroke-dasharray="4 3"/><text x="{px + 3}" y="22">{lab}</text>')
parts.append(f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">queue (1514-byte frames, busy samples, 3 rounds pooled)</text>')
parts.append(f'<text x="12" y="{H / 2}" transform="rotate(-90 12 {H / 2})" text-anchor="middle">CDF</text>')
for i, (scen, color) in enumerate(CURVES):
    q = queue_samples(scen)
    if not q:
        continue
    pts = []
    n = len(q)
    step = max(1, n // 400)
    for j in range(0, n, step):
        pts.append(xy(min(q[j], XMAX), (j + 1) / n))
    pts.append(xy(min(q[-1], XMAX), 1.0))
    parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}"/>')
    med = q[n // 2]
    parts.append(f'<text x="{L + 10}" y="{30 + 15 * i}" fill="{color}">{scen.replace("E2-n4-m4-", "4 DCTCP + 4 ")}: median {med:.1f}</text>')
parts.append("</svg>")
os.makedirs(DEST, exist_ok=True)
open(os.path.join(DEST, "queue-cdf-n4-m4.svg"), "w").write("\n".join(parts))
print("wrote", os.path.join(DEST, "queue-cdf-n4-m4.svg"))
