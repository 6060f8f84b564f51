"""Summarizes a COMET-style design grid (jobs/comet-grid-*.cfg: hardware axes, group_by = gpus
and design, a token budget and prices): per cluster size, the spread of the best time to train
over the hardware designs; what each hardware dimension buys (the median and largest speed-up
from its lowest to its highest value, every other dimension and the size held fixed); what memory
expansion buys and at which HBM capacity (the grid against the same grid swept with
offload = "none"); the time-optimal against the cost-optimal (size, design), and the front of
time against cost to train that the sweep stored (/pareto_cost).
Usage: clusterdse-study comet-grid GRID.h5 [NO_OFFLOAD.h5] [--png FIGURE.png]"""
import argparse

from ..store import attrs, load as read_table

# The hardware columns a grid may sweep (docs/job-file.md, Hardware axes); a grid's design is
# those that take more than one value in its store.
HW = ["peak_bf16_tflops", "peak_fp8_tflops", "hbm_gib", "hbm_bandwidth_gbs", "gpus_per_node",
      "net0_bandwidth_gbs", "net0_latency_us", "net0_size", "net1_bandwidth_gbs",
      "net1_latency_us", "net1_size", "tier_capacity_gib", "tier_bandwidth_gbs", "gpu_price",
      "rental_price", "gpu_power_w"]
DAYS = "time_to_train_days"


def design_of(top):
    return [c for c in HW if top[c].nunique() > 1]


def best_per_design(path, design=None):
    top = read_table(path, "top")
    top = top[top.status == "ok"]
    design = design or design_of(top)
    return top.set_index(["gpus"] + design), design


def spread(top, designs_per_size):
    print("# gpus  designs_ok  cannot_run  best_days  worst_days  worst/best")
    for gpus, g in top.groupby(level="gpus"):
        t = g[DAYS]
        print(f"  {gpus:5d} {len(g):10d} {designs_per_size - len(g):11d} {t.min():10.3f} "
              f"{t.max():11.3f} {t.max() / t.min():10.2f}x")


def dimensions(top, design):
    print("# dimension            low -> high        median_speedup  max_speedup  (same size "
          "and other dimensions)")
    t = top[DAYS]
    for dim in design:
        values = sorted(t.index.get_level_values(dim).unique())
        lo, hi = values[0], values[-1]
        ratio = (t.xs(lo, level=dim) / t.xs(hi, level=dim)).dropna()
        print(f"  {dim:<20} {lo:>7g} -> {hi:<7g} {ratio.median():14.3f}x {ratio.max():11.3f}x")


def expansion(top, plain, key):
    t, p = top[DAYS], plain[DAYS]
    both = (p / t).dropna()
    only = t.index.difference(p.index)
    print(f"# memory expansion (offload allowed vs offload = \"none\"), over {len(t)} runnable "
          f"(size, design) points:")
    print(f"  faster with offload: {int((both > 1.0 + 1e-9).sum())} points; median "
          f"{both.median():.3f}x, largest {both.max():.3f}x; trainable only with offload: "
          f"{len(only)} points")
    if len(both) and both.max() > 1.0 + 1e-9:
        print(f"  largest gain at {dict(zip(key, both.idxmax()))}")
    print("  by HBM capacity: hbm_gib  points  faster_with_offload  largest  only_with_offload")
    hbm_both = both.index.get_level_values("hbm_gib")
    hbm_only = only.get_level_values("hbm_gib")
    for hbm in sorted(set(t.index.get_level_values("hbm_gib"))):
        b = both[hbm_both == hbm]
        n = int((t.index.get_level_values("hbm_gib") == hbm).sum())
        largest = f"{b.max():.3f}x" if len(b) else "-"
        print(f"  {'':17}{hbm:7g} {n:7d} {int((b > 1.0 + 1e-9).sum()):20d} {largest:>8} "
              f"{int((hbm_only == hbm).sum()):18d}")


def show(label, top, k, key, currency):
    r = top.loc[k]
    print(f"  {label}: {dict(zip(key, k))}")
    parts = [f"days {r[DAYS]:.4g}", f"cost_to_train {r.cost_to_train:.4g} {currency}",
             f"energy_to_train_mwh {r.energy_to_train_mwh:.4g}"]
    for c in ("tp", "pp", "dp", "ep", "offload", "moe_dispatcher"):
        parts.append(f"{c} {r[c]}")
    print("    " + ", ".join(parts))


def optimal(path, top, key):
    root = attrs(path)
    tokens = float(root.get("tokens", 0))
    currency = "USD"
    print(f"# time-optimal vs cost-optimal (size, design), {tokens:.4g} tokens:")
    show("time-optimal", top, top[DAYS].idxmin(), key, currency)
    show("cost-optimal", top, top.cost_to_train.idxmin(), key, currency)
    front = read_table(path, "pareto_cost")
    note = attrs(path, "pareto_cost").get("note", "")
    print(f"# /pareto_cost: {len(front)} points of time against cost to train, cheapest first"
          + ("" if len(front) else f" ({note})"))
    for _, r in front.iterrows():
        print(f"  {int(r.gpus):5d} GPUs  {r[DAYS]:8.3f} days  {r.cost_to_train:10.4g} {currency}  "
              + " ".join(f"{c}={r[c]:g}" for c in key[1:]))
    return front


def figure(top, front, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for gpus, g in top.groupby(level="gpus"):
        ax.scatter(g[DAYS], g.cost_to_train / 1e6, s=4, label=f"{gpus} GPUs")
    if len(front):
        f = front.sort_values(DAYS)
        ax.step(f[DAYS], f.cost_to_train / 1e6, "k-", where="post", lw=1,
                label="front (/pareto_cost)")
    ax.set_xscale("log")
    ax.set_xlabel(f"days to train {title}")
    ax.set_ylabel("cost to train (million USD, estimated prices)")
    ax.set_title("best strategy per (cluster size, hardware design)")
    ax.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    parser = argparse.ArgumentParser(prog="clusterdse-study comet-grid",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("grid", help="the design grid's store")
    parser.add_argument("plain", nargs="?", help="the same grid swept with offload = \"none\"")
    parser.add_argument("--png", help="also draw the figure into this PNG file")
    args = parser.parse_args(argv)
    top, design = best_per_design(args.grid)
    key = ["gpus"] + design
    designs = 1
    for dim in design:
        designs *= len(top.index.get_level_values(dim).unique())
    model = str(top.model.iloc[0])
    print(f"# {args.grid}: {model}, {len(top)} runnable (size, design) points, {designs} designs")
    spread(top, designs)
    dimensions(top, design)
    if args.plain:
        expansion(top, best_per_design(args.plain, design)[0], key)
    front = optimal(args.grid, top, key)
    if args.png:
        tokens = float(attrs(args.grid).get("tokens", 0))
        budget = f"{tokens / 1e12:g}T" if tokens >= 1e12 else f"{tokens / 1e9:g}B"
        figure(top, front, args.png, f"{model} on {budget} tokens")
    return 0
