"""The goodput study (README.md, "Time to train with failures"; jobs/goodput-llama3-405b.cfg):
for each system, cluster size, checkpoint write bandwidth and checkpointing scheme, the
configuration with the shortest effective time to train (failures, restarts and checkpoints
included) and its figures. Reads the CSV of `clusterdse eval JOB --csv --feasible` (a file or
stdin); --summary prints one line per cluster size and system instead (the best effective time,
the goodput synchronous checkpoints lose at each bandwidth, the configurations picked); --png
FILE also draws the figure (goodput against write bandwidth, one panel per cluster size, one
line per system and scheme).
Usage: clusterdse eval jobs/goodput-llama3-405b.cfg --csv --feasible |
           clusterdse-study goodput [--summary] [--png FILE] [-]"""
import argparse
import sys

import pandas as pd

SCHEME = {"meta-llama3-2024": "sync", "meta-llama3-2024-async": "async",
          "meta-llama3-2024-memory": "memory"}


def best_rows(rows):
    rows = rows[(rows.status == "ok") & (rows.goodput > 0)].copy()
    rows["scheme"] = rows["stack"].map(SCHEME).fillna(rows["stack"])
    rows["size"] = rows.gpus.apply(lambda g: "8K" if g < 12000 else "16K")
    keys = ["size", "system", "storage_write_gbs", "scheme"]
    idx = rows.groupby(keys, sort=False).time_to_train_effective_days.idxmin()
    return rows.loc[idx].sort_values(["size", "system", "storage_write_gbs"],
                                     key=lambda c: c.map({"8K": 0, "16K": 1}) if c.name == "size"
                                     else c)


def print_table(best, out):
    out.write("# best configuration by time_to_train_effective per size, system, checkpoint "
              "write bandwidth and scheme\n")
    out.write(f"# {'gpus':>5} {'system':<13} {'write':>5} {'scheme':<6} {'tp':>2} {'pp':>3} "
              f"{'vpp':>3} {'zero':>4} {'days':>6} {'eff_days':>8} {'goodput':>7} "
              f"{'mttf_h':>6} {'ckpt_gib':>8} {'stall_s':>8} {'interval_s':>10} "
              f"{'interrupts':>10} {'flag':>4}\n")
    for _, r in best.iterrows():
        out.write(f"  {r.gpus:>5} {r.system:<13} {r.storage_write_gbs:>5.0f} {r.scheme:<6} "
                  f"{r.tp:>2} {r.pp:>3} {r.vpp:>3} {r.zero:>4} {r.time_to_train_days:>6.2f} "
                  f"{r.time_to_train_effective_days:>8.2f} {r.goodput:>7.4f} "
                  f"{r.mttf_hours:>6.2f} {r.checkpoint_gib:>8.3f} {r.checkpoint_stall_s:>8.3f} "
                  f"{r.checkpoint_interval_s:>10.1f} {r.interruptions_expected:>10.0f} "
                  f"{r.checkpoint_flag:>4}\n")


def config(r):
    return f"{r.tp}/{r.pp}/{r.vpp}/{r.zero}/{r.recompute}/{r.microbatch}"


def print_summary(best, out):
    """Per size and system: the shortest effective time over every write bandwidth and scheme,
    the goodput points a synchronous checkpoint loses against it at each bandwidth, and the
    configurations the table picks (with their failure-free days, to show how close they are)."""
    writes = sorted(best.storage_write_gbs.unique())
    out.write("# per size and system: the best effective time over every write bandwidth and "
              "scheme; goodput points that synchronous\n# checkpoints lose against it at each "
              "write bandwidth (GB/s); the configurations picked (tp/pp/vpp/zero/recompute/"
              "microbatch),\n# each with its failure-free days and the schemes (s, a, m) and "
              "bandwidths that pick it\n")
    head = " ".join(f"{'sync@' + format(w, '.0f'):>9}" for w in writes)
    out.write(f"# {'gpus':>5} {'system':<13} {'days':>6} {'eff_days':>8} {'by':<12} {head}  "
              f"configurations\n")
    for (size, system), part in best.groupby(["size", "system"], sort=False):
        top = part.loc[part.time_to_train_effective_days.idxmin()]
        loss = []
        for w in writes:
            sync = part[(part.scheme == "sync") & (part.storage_write_gbs == w)]
            loss.append(f"{100 * (top.goodput - sync.goodput.iloc[0]):>9.2f}" if len(sync)
                        else f"{'-':>9}")
        picks = []
        for cfg, rows in part.groupby(part.apply(config, axis=1), sort=False):
            who = ",".join(sorted({f"{r.scheme[0]}{r.storage_write_gbs:.0f}"
                                   for _, r in rows.iterrows()},
                                  key=lambda t: ("sam".index(t[0]), float(t[1:]))))
            picks.append(f"{cfg} {rows.time_to_train_days.iloc[0]:.3f} d [{who}]")
        by = f"{top.scheme}@{top.storage_write_gbs:.0f}"
        out.write(f"  {top.gpus:>5} {system:<13} {top.time_to_train_days:>6.2f} "
                  f"{top.time_to_train_effective_days:>8.2f} {by:<12} {' '.join(loss)}  "
                  f"{'; '.join(picks)}\n")


def draw(best, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = [s for s in ("8K", "16K") if s in set(best["size"])]
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.2), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        part = best[best["size"] == size]
        for (system, scheme), line in part.groupby(["system", "scheme"]):
            line = line.sort_values("storage_write_gbs")
            ax.plot(line.storage_write_gbs, line.goodput, marker="o",
                    color={"h100": "C0", "gb200-spare": "C2", "gb200-repair": "C3"}.get(system),
                    linestyle={"sync": "-", "async": "--", "memory": ":"}.get(scheme, "-"),
                    label=f"{system} {scheme}")
        ax.set_xscale("log")
        ax.set_xlabel("checkpoint write bandwidth (GB/s, aggregate)")
        ax.set_ylabel("goodput (effective training time ratio)")
        ax.set_title(f"Llama 3 405B, {size} GPUs")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    parser = argparse.ArgumentParser(prog="clusterdse-study goodput",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="?", default="-")
    parser.add_argument("--png", help="also draw the figure into this PNG file")
    parser.add_argument("--summary", action="store_true",
                        help="print one line per size and system instead of the table")
    args = parser.parse_args(argv)
    rows = pd.read_csv(sys.stdin if args.csv == "-" else args.csv)
    best = best_rows(rows)
    (print_summary if args.summary else print_table)(best, sys.stdout)
    if args.png:
        draw(best, args.png)
    return 0
