"""lll_sweep.py — model selection for spectral clustering (dissertation sec.
4.5, fig. 4.14): the same sigma x K_W grid clustered exactly and by LLL with
Z made once, on the first N Fashion-MNIST images, 10 clusters, scored by
the majority-class error against the labels. Prints both grids, their
minima and total times, and draws the selection curves (error against
sigma at each sweep's best K_W, and against K_W at its best sigma) as an
SVG.

  lll_sweep.py NLEMBED DATA.npy LABELS.npy OUT.svg   (env: LANDMARKS 1000,
  SIGMAS "300:6000:10", KS "2:200:10")
"""
import json
import os
import subprocess
import sys

import numpy as np


def sweep(nle, data, labels, extra):
    cmd = [nle, "cluster", data, "--labels", labels, "-c", "10", "--sweep-sigma", os.environ.get("SIGMAS", "300:6000:10"),
           "--sweep-k", os.environ.get("KS", "2:200:10"), "-o", data + ".sweep.txt",
           "--quiet", "--threads", "2"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"sweep failed: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def grid(js):
    sig = sorted({c["sigma"] for c in js["cells"]})
    ks = sorted({c["k"] for c in js["cells"]})
    E = np.full((len(sig), len(ks)), np.nan)
    for c in js["cells"]:
        if c["error_majority"] is not None:
            E[sig.index(c["sigma"]), ks.index(c["k"])] = c["error_majority"]
    return sig, ks, E


def svg(path, panels):
    """panels: [(title, xlabel, xs, {name: ys})], log x axes."""
    W, H, pad = 420, 300, 50
    colours = {"exact": "#1f4e9c", "LLL": "#c0392b"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(panels)}" height="{H}" font-family="sans-serif" '
           'font-size="11"><rect width="100%" height="100%" fill="white"/>']
    for p, (title, xlabel, xs, series) in enumerate(panels):
        x0 = p * W
        lx = np.log(xs)
        ally = np.concatenate([np.asarray(v, float) for v in series.values()])
        ymax = np.nanmax(ally) * 1.1 or 1
        X = lambda v: x0 + pad + (np.log(v) - lx.min()) / (lx.max() - lx.min() or 1) * (W - 2 * pad)
        Y = lambda v: H - pad - v / ymax * (H - 2 * pad)
        out.append(f'<text x="{x0 + W / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>')
        out.append(f'<line x1="{x0 + pad}" y1="{H - pad}" x2="{x0 + W - pad}" y2="{H - pad}" stroke="black"/>')
        out.append(f'<line x1="{x0 + pad}" y1="{pad}" x2="{x0 + pad}" y2="{H - pad}" stroke="black"/>')
        for v in xs:
            out.append(f'<text x="{X(v):.1f}" y="{H - pad + 14}" text-anchor="middle">{v:.3g}</text>')
        for t in np.linspace(0, ymax, 5):
            out.append(f'<text x="{x0 + pad - 4}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
        out.append(f'<text x="{x0 + W / 2}" y="{H - 12}" text-anchor="middle">{xlabel}</text>')
        for i, (name, ys) in enumerate(series.items()):
            pts = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in zip(xs, ys) if np.isfinite(y))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colours[name]}" stroke-width="2"/>')
            out.append(f'<text x="{x0 + W - pad}" y="{pad + 14 * i}" text-anchor="end" fill="{colours[name]}">{name}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


def main():
    nle, data, labels, out_svg = sys.argv[1:5]
    L = os.environ.get("LANDMARKS", "1000")
    runs = {"exact": sweep(nle, data, labels, []), "LLL": sweep(nle, data, labels, ["--landmarks", L])}
    grids = {}
    for name, js in runs.items():
        sig, ks, E = grid(js)
        grids[name] = E
        b = js["best"]
        print(f"# {name}: {len(js['cells'])} cells in {js['total_seconds']:.1f} s (graph{' and Z' if name == 'LLL' else ''} "
              f"once: {js['setup_seconds']:.1f} s); minimum majority error {b['error_majority']:.4f} at sigma "
              f"{b['sigma']:.4g}, K_W {b['k']}")
        print("# majority error; rows sigma, columns K_W = " + " ".join(f"{k:>6d}" for k in ks))
        for i, s in enumerate(sig):
            print(f"  {s:9.4g} " + " ".join("     -" if np.isnan(e) else f"{e:6.3f}" for e in E[i]))
    t = {n: js["total_seconds"] for n, js in runs.items()}
    print(f"# total: exact {t['exact']:.1f} s, LLL (L = {L}) {t['LLL']:.1f} s: {t['exact'] / t['LLL']:.1f}x")
    panels = []
    for axis, label in ((0, "sigma"), (1, "K_W")):
        series = {}
        for name in runs:
            E = grids[name]
            bi, bk = np.unravel_index(np.nanargmin(E), E.shape)
            series[name] = E[:, bk] if axis == 0 else E[bi, :]
        xs = sig if axis == 0 else ks
        panels.append((f"error against {label} at each sweep's best {'K_W' if axis == 0 else 'sigma'}", label, xs,
                       series))
    svg(out_svg, panels)
    print(f"# wrote {out_svg}")


if __name__ == "__main__":
    main()
