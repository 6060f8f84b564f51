"""The goodput study (README.md, "Time to train with failures"; jobs/goodput-llama3-405b.cfg):
for each system, cluster size, checkpoint write bandwidth and checkpointing scheme, the
configuration with the shortest effective time to train (failures, restarts and checkpoints
included) and its figures. Reads the CSV of `clusterdse eval JOB --csv --feasible` (a file or
stdin); --png FILE also draws the figure (goodput against write bandwidth, one panel per
cluster size, one line per system and scheme).
Usage: clusterdse eval jobs/goodput-llama3-405b.cfg --csv --feasible |
           clusterdse-study goodput [--png FILE] [-]"""
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
    args = parser.parse_args(argv)
    rows = pd.read_csv(sys.stdin if args.csv == "-" else args.csv)
    best = best_rows(rows)
    print_table(best, sys.stdout)
    if args.png:
        draw(best, args.png)
    return 0
