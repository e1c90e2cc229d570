"""plot_curves.py — E against time from the traces of fashion20k_curves.sh
(like dissertation fig. 3.4): python3 bench/plot_curves.py DIR OUT.png"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

d, out = sys.argv[1], sys.argv[2]
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for ax, model, title in zip(axes, ("ee", "tsne"), ("EE, lambda = 100", "t-SNE")):
    for opt, style in (("fp", "C0-"), ("lbfgs", "C2-"), ("sd", "C3-")):
        t = np.loadtxt(f"{d}/curve-{model}-{opt}.csv", delimiter=",", skiprows=1, ndmin=2)
        ax.plot(t[:, 1], t[:, 2], style, label=opt.upper().replace("LBFGS", "L-BFGS"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("seconds")
    ax.set_ylabel("E")
    ax.set_title(f"{title}: 20,000 Fashion-MNIST, perplexity 50")
    ax.legend()
fig.tight_layout()
fig.savefig(out, dpi=80)
