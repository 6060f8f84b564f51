#!/usr/bin/python3
"""Summarizes the COMET-style design grid (jobs/comet-grid-gpt3-175b.cfg): per cluster size, the
spread of the best iteration time over the hardware designs; what each hardware dimension buys
(the median and largest speed-up from its lowest to its highest value, every other dimension and
the size held fixed); what memory expansion buys (the grid against the same grid swept with
offload = "none"); and the time-optimal against the cost-optimal (size, design).
Usage: scripts/comet_grid.py GRID.h5 [NO_OFFLOAD.h5] [--png FIGURE.png]"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from clusterdse import load as read_table  # noqa: E402

DESIGN = ["peak_bf16_tflops", "hbm_gib", "hbm_bandwidth_gbs", "net0_size",
          "net1_bandwidth_gbs", "tier_capacity_gib", "tier_bandwidth_gbs"]
KEY = ["gpus"] + DESIGN


def best_per_design(path):
    top = read_table(path, "top")
    return top[top.status == "ok"].set_index(KEY)


def spread(top, designs_per_size):
    print("# gpus  designs_ok  cannot_run  best_s    worst_s   worst/best")
    for gpus, g in top.groupby(level="gpus"):
        t = g.time_per_iteration_s
        print(f"  {gpus:5d} {len(g):10d} {designs_per_size - len(g):11d} {t.min():8.3f} "
              f"{t.max():9.3f} {t.max() / t.min():9.2f}x")


def dimensions(top):
    print("# dimension            low -> high        median_speedup  max_speedup  (same size "
          "and other dimensions)")
    t = top.time_per_iteration_s
    for dim in DESIGN:
        values = sorted(t.index.get_level_values(dim).unique())
        lo, hi = values[0], values[-1]
        a = t.xs(lo, level=dim)
        b = t.xs(hi, level=dim)
        ratio = (a / b).dropna()
        print(f"  {dim:<20} {lo:>7g} -> {hi:<7g} {ratio.median():14.3f}x {ratio.max():11.3f}x")


def expansion(top, plain):
    t, p = top.time_per_iteration_s, plain.time_per_iteration_s
    both = (p / t).dropna()
    only = t.index.difference(p.index)
    print(f"# memory expansion (offload allowed vs offload = \"none\"), over {len(t)} runnable "
          f"(size, design) points:")
    print(f"  faster with offload: {int((both > 1.0 + 1e-9).sum())} points; median "
          f"{both.median():.3f}x, largest {both.max():.3f}x; trainable only with offload: "
          f"{len(only)} points")
    if len(both) and both.max() > 1.0 + 1e-9:
        k = both.idxmax()
        print(f"  largest gain at {dict(zip(KEY, k))}")
    if len(only):
        hbm = only.get_level_values("hbm_gib")
        print(f"  trainable only with offload: hbm_gib {sorted(set(hbm))}, sizes "
              f"{sorted(set(only.get_level_values('gpus')))}")


def optimal(top):
    print("# time-optimal vs cost-optimal (size, design), 300B tokens:")
    cols = ["time_to_train_days", "cost_to_train", "energy_to_train_mwh", "tp", "pp", "dp",
            "offload"]
    for label, metric in (("time", "time_to_train_days"), ("cost", "cost_to_train")):
        k = top[metric].idxmin()
        r = top.loc[k]
        print(f"  {label}-optimal: {dict(zip(KEY, k))}")
        print("    " + ", ".join(f"{c} {r[c]:.4g}" if not isinstance(r[c], str) else f"{c} {r[c]}"
                                 for c in cols))


def figure(top, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for gpus, g in top.groupby(level="gpus"):
        ax.scatter(g.time_to_train_days, g.cost_to_train / 1e6, s=4, label=f"{gpus} GPUs")
    pts = top.sort_values("time_to_train_days")
    front, best = [], float("inf")
    for _, r in pts.iterrows():
        if r.cost_to_train < best:
            best = r.cost_to_train
            front.append((r.time_to_train_days, r.cost_to_train / 1e6))
    ax.plot(*zip(*front), "k-", lw=1, label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("days to train GPT-3 175B on 300B tokens")
    ax.set_ylabel("cost to train (million USD, estimated prices)")
    ax.set_title("best strategy per (cluster size, hardware design)")
    ax.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    png = None
    if "--png" in argv:
        i = argv.index("--png")
        png = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) not in (1, 2):
        sys.exit("usage: scripts/comet_grid.py GRID.h5 [NO_OFFLOAD.h5] [--png FIGURE.png]")
    top = best_per_design(argv[0])
    designs = 1
    for dim in DESIGN:
        designs *= len(top.index.get_level_values(dim).unique())
    print(f"# {argv[0]}: {len(top)} runnable (size, design) points, {designs} designs")
    spread(top, designs)
    dimensions(top)
    if len(argv) == 2:
        expansion(top, best_per_design(argv[1]))
    optimal(top)
    if png:
        figure(top, png)


if __name__ == "__main__":
    main(sys.argv[1:])
