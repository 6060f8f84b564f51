"""Summarizes a COMET-style study store (jobs/comet-gpt3-175b.cfg): for every cluster size, the
best iteration time of each system variant (from /top), the spread between the best and the
worst variant, and the gain from memory expansion (each "+cxl" variant against the same variant
without it). Usage: clusterdse-study comet-table results/comet-gpt3-175b.h5
Reads the store as users do: h5py + pandas (python/clusterdse decodes the enumerations)."""
import argparse

from ..store import load as read_table


def table(path):
    top = read_table(path, "top")
    top = top[top.status == "ok"]
    variants = list(read_table(path, "results").system.cat.categories)
    print(f"# best configuration per cluster size and variant, from {path}")
    print(f"# {'gpus':>5} {'variant':<14} {'time_s':>9} {'vs_base':>8} {'mfu':>6} "
          f"{'tp':>3} {'pp':>3} {'vpp':>3} {'mb':>3} {'zero':>4} {'offload':<22} {'mem_gib':>7}")
    for gpus, group in top.groupby("gpus"):
        best = {}
        for variant in variants:
            rows = group[group.system == variant]
            if len(rows):
                best[variant] = rows.loc[rows.time_per_iteration_s.idxmin()]
        base = best.get("baseline")
        for variant in variants:
            if variant not in best:
                print(f"  {gpus:>5} {variant:<14} {'no fit':>9}")
                continue
            r = best[variant]
            rel = (f"{r.time_per_iteration_s / base.time_per_iteration_s:8.3f}"
                   if base is not None else f"{'-':>8}")
            print(f"  {gpus:>5} {variant:<14} {r.time_per_iteration_s:9.3f} {rel} {r.mfu:6.3f} "
                  f"{r.tp:3d} {r.pp:3d} {r.vpp:3d} {r.microbatch:3d} {r.zero:4d} "
                  f"{str(r.offload):<22} {r.mem_total_gib:7.1f}")
        times = [b.time_per_iteration_s for b in best.values()]
        print(f"# {gpus} GPUs: spread best/worst variant {min(times):.3f} / {max(times):.3f} s "
              f"({max(times) / min(times):.2f}x); {len(variants) - len(best)} variant(s) "
              f"cannot run")
        for variant in variants:
            if variant.endswith("+cxl"):
                plain = variant[: -len("+cxl")]
                if variant in best and plain in best:
                    gain = 1 - best[variant].time_per_iteration_s / best[plain].time_per_iteration_s
                    print(f"#   memory expansion: {variant} is {100 * gain:.1f}% faster than {plain}")
                elif variant in best:
                    print(f"#   memory expansion: {variant} runs where {plain} cannot")


def main(argv):
    parser = argparse.ArgumentParser(prog="clusterdse-study comet-table",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("store", help="the COMET-style study's store")
    table(parser.parse_args(argv).store)
    return 0
