"""The figures and tables of `clusterdse report`, each with the data it plots.

Every builder returns a list of (kind, item): ("h2", text), ("p", text), ("fig", Figure) or
("table", Table). A Figure carries its PNG bytes and `data`, the points it draws (JSON-ready),
which the report writes next to the image so that a test can compare them with the store.
"""
import io
import math
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)
import numpy as np  # noqa: E402

from .store import StoreError, attrs, load  # noqa: E402

# objective.metric -> (column, lower is better), as documented in docs/job-file.md.
METRICS = {
    "time_per_iteration": ("time_per_iteration_s", True),
    "tokens_per_s": ("tokens_per_s", False),
    "time_to_train": ("time_to_train_days", True),
    "gpu_hours": ("gpu_hours", True),
    "mfu": ("mfu", False),
}
TIME_PARTS = ["t_forward_s", "t_backward_s", "t_recompute_s", "t_tp_comm_s", "t_pp_comm_s",
              "t_dp_comm_s", "t_ep_comm_s", "t_cp_comm_s", "t_bubble_s", "t_optimizer_s",
              "t_offload_s", "t_imbalance_s"]
MEM_PARTS = ["mem_weights_gib", "mem_gradients_gib", "mem_optimizer_gib", "mem_activations_gib",
             "mem_other_gib"]
TOP_COLUMNS = ["index", "model", "system", "gpus", "tp", "pp", "dp", "cp", "ep", "vpp",
               "microbatch", "global_batch", "recompute", "zero", "precision",
               "time_per_iteration_s", "time_low_s", "time_high_s", "tokens_per_s", "mfu",
               "mem_total_gib", "mem_reserved_gib", "time_to_train_days",
               "time_to_train_days_low", "time_to_train_days_high"]


@dataclass
class Figure:
    name: str
    title: str
    caption: str
    png: bytes
    data: dict = field(default_factory=dict)


@dataclass
class Table:
    name: str
    title: str
    columns: list
    rows: list


def fmt(value):
    """Table text: integers as they are, floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def plain(value):
    """A JSON- and HTML-friendly Python scalar."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def render(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def time_column(root):
    """The time the sweep figures plot: days to train with a token budget, else s/iteration."""
    if float(root.get("tokens", 0) or 0) > 0:
        return "time_to_train_days", "time to train (days)"
    return "time_per_iteration_s", "time per iteration (s)"


def ranked(df, root):
    column, lower = METRICS.get(root.get("metric", ""), ("time_per_iteration_s", True))
    key = df[column] if lower else -df[column]
    return df.assign(_key=key).sort_values(["_key", "index"]).drop(columns="_key"), column


def feasible_rows(store, names):
    """The feasible rows to draw from: /results when stored, else /top (store = "best")."""
    if "results" in names:
        df = load(store, "results")
        return df[df.status == "ok"], "/results"
    df = load(store, "top")
    return df[df.status == "ok"], "/top (store = \"best\" keeps no /results)"


def pareto_figure(store, root):
    col, label = time_column(root)
    df = load(store, "pareto")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = {"y": col, "series": {}}
    for system, rows in df.groupby("system", observed=True):
        rows = rows.sort_values(["gpus", col])
        data["series"][str(system)] = [[int(g), float(t), int(i)] for g, t, i in
                                       zip(rows.gpus, rows[col], rows["index"])]
        ax.plot(rows.gpus, rows[col], "o", label=str(system), markersize=7)
    for k, (model, rows) in enumerate(df.groupby("model", observed=True)):
        rows = rows.sort_values("gpus")
        ax.step(rows.gpus, rows[col], where="post", color="0.5", lw=1, zorder=0,
                linestyle=["-", "--", ":", "-."][k % 4],
                label=f"front of {model}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel(label)
    ax.set_title("Pareto front: " + label + " vs GPUs")
    ax.grid(alpha=0.3)
    ax.legend(title="system", fontsize=8)
    return Figure("pareto", "Pareto front", f"{len(df)} configurations of /pareto: none is beaten "
                  "on both GPUs and time; one series per system.", render(fig), data)


def pareto_cost_figure(store, root):
    """The front of time against cost to train (/pareto_cost), or None when the store has none
    or it is empty (its `note` then says why, shown instead)."""
    df = load(store, "pareto_cost").sort_values(["model", "time_to_train_days"])
    if df.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = {"series": {}}
    for model, rows in df.groupby("model", observed=True):
        data["series"][str(model)] = [[float(t), float(c), int(i)] for t, c, i in
                                      zip(rows.time_to_train_days, rows.cost_to_train,
                                          rows["index"])]
        ax.step(rows.time_to_train_days, rows.cost_to_train, "o-", where="post",
                label=str(model))
        for _, r in rows.iterrows():
            ax.annotate(f"{r.system} x{int(r.gpus)}", (r.time_to_train_days, r.cost_to_train),
                        fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("time to train (days)")
    ax.set_ylabel("cost to train (the job's objective.currency)")
    ax.set_title("Pareto front: time vs cost to train")
    ax.grid(alpha=0.3)
    ax.legend(title="model", fontsize=8)
    return Figure("pareto_cost", "Pareto front of time and cost", f"{len(df)} configurations of "
                  "/pareto_cost: the best of each group that none beats on both time and cost "
                  "to train.", render(fig), data)


def pareto_cost_note(store, names):
    """Why /pareto_cost is empty (its attribute), or None when it has rows or is absent."""
    if "pareto_cost" not in names or not load(store, "pareto_cost").empty:
        return None
    return "No front of time against cost to train: /pareto_cost is " + \
        str(attrs(store, "pareto_cost").get("note", "empty")) + "."


def best_vs_size_figure(rows, source, root):
    col, label = time_column(root)
    best = rows.groupby(["system", "gpus"], observed=True)[col].min().reset_index()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = {"y": col, "source": source, "series": {}}
    for system, part in best.groupby("system", observed=True):
        part = part.sort_values("gpus")
        data["series"][str(system)] = [[int(g), float(t)] for g, t in zip(part.gpus, part[col])]
        ax.plot(part.gpus, part[col], "o-", label=str(system))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("cluster size (GPUs)")
    ax.set_ylabel("best " + label)
    ax.set_title("Best " + label + " vs cluster size")
    ax.grid(alpha=0.3, which="both")
    ax.legend(title="system", fontsize=8)
    return Figure("best_vs_size", "Best time vs cluster size",
                  f"Minimum over the feasible configurations of {source} per system and size.",
                  render(fig), data)


def heatmap_figure(rows, source, root, system, gpus):
    col, label = time_column(root)
    part = rows[(rows.system == system) & (rows.gpus == gpus)]
    best = part.groupby(["tp", "pp"])[col].min()
    tps = sorted(part.tp.unique())
    pps = sorted(part.pp.unique())
    grid = np.full((len(pps), len(tps)), np.nan)
    for (tp, pp), value in best.items():
        grid[pps.index(pp), tps.index(tp)] = value
    fig, ax = plt.subplots(figsize=(7, 4.5))
    image = ax.imshow(grid, cmap="viridis_r", origin="lower", aspect="auto")
    for y, pp in enumerate(pps):
        for x, tp in enumerate(tps):
            text = "n/a" if np.isnan(grid[y, x]) else f"{grid[y, x]:.3g}"
            ax.text(x, y, text, ha="center", va="center", color="w" if text != "n/a" else "k",
                    fontsize=8)
    ax.set_xticks(range(len(tps)), [str(t) for t in tps])
    ax.set_yticks(range(len(pps)), [str(p) for p in pps])
    ax.set_xlabel("tensor-parallel degree tp")
    ax.set_ylabel("pipeline stages pp")
    ax.set_title(f"Best {label}, {system} x {gpus} GPUs")
    fig.colorbar(image, ax=ax, label="best " + label)
    ax.plot([], [], "s", color="w", markeredgecolor="k", label="n/a: no feasible configuration")
    ax.legend(loc="upper right", fontsize=7, bbox_to_anchor=(1.0, -0.12))
    cells = [[int(tp), int(pp), float(v)] for (tp, pp), v in best.items()]
    return Figure("heatmap", f"tp x pp heatmap ({system}, {gpus} GPUs)",
                  f"Best over every other axis, from {source}.", render(fig),
                  {"y": col, "system": str(system), "gpus": int(gpus), "cells": cells})


def stacked_figure(top, parts, name, title, ylabel, unit_suffix, capacity=None):
    labels = [f"#{r + 1} ({int(i)})" for r, i in enumerate(top["index"])]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bottom = np.zeros(len(top))
    data = {"index": [int(i) for i in top["index"]], "parts": {}}
    colors = plt.get_cmap("tab20")
    for k, part in enumerate(parts):
        values = top[part].to_numpy(dtype=float)
        data["parts"][part] = [float(v) for v in values]
        if not values.any():
            continue
        ax.bar(labels, values, bottom=bottom, label=part.replace(unit_suffix, "")[2 if part
               .startswith("t_") else 4:], color=colors(k))
        bottom += values
    if capacity is not None:
        data["capacity_gib"] = [float(c) for c in capacity]
        ax.plot(labels, capacity, "r_", markersize=30, mew=2, label="HBM capacity")
    ax.set_ylabel(ylabel)
    ax.set_xlabel("configuration (rank, index in the space)")
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return Figure(name, title, "", render(fig), data)


def failures_figure(counts):
    failed = counts[~counts.name.isin(["evaluated", "feasible", "ok"]) & (counts["count"] > 0)]
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.4 * max(len(failed), 2)))
    ax.barh(failed.name, failed["count"], color="tab:red", label="configurations")
    ax.set_xscale("log")
    ax.set_xlabel("configurations (count, log scale)")
    ax.set_ylabel("status")
    ax.set_title("Why configurations failed")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="x")
    return Figure("failures", "Why configurations failed", "Counts by status from /counts "
                  "(statuses that never occurred are left out).", render(fig),
                  {"counts": {n: int(c) for n, c in zip(failed.name, failed["count"])}})


def check_system(store, args):
    """--system names a system of the store (StoreError, bad input, otherwise)."""
    if not args.system:
        return
    systems = [str(s) for s in load(store, "systems").name]
    if args.system not in systems:
        raise StoreError(f"--system {args.system}: not a system of {store}; allowed: "
                         f"{', '.join(systems)}")


def default_cell(rows, source, root, args):
    """The (system, gpus) of the heatmap: --system and --gpus, each by default the best
    configuration's (of the other when one is given); StoreError when no feasible
    configuration has them."""
    best, _ = ranked(rows, root)
    if args.system:
        best = best[best.system.astype(str) == args.system]
        if best.empty:
            feasible = sorted(set(rows.system.astype(str)))
            raise StoreError(f"--system {args.system}: no feasible configuration of it in "
                             f"{source}; systems with one: {', '.join(feasible)}")
    if args.gpus:
        sizes = sorted(set(int(g) for g in best.gpus))
        best = best[best.gpus == args.gpus]
        if best.empty:
            raise StoreError(f"--gpus {args.gpus}: no feasible configuration "
                             f"{'of ' + args.system + ' ' if args.system else ''}with "
                             f"{args.gpus} GPUs in {source}; sizes with one: "
                             f"{', '.join(map(str, sizes))}")
    return str(best.system.iloc[0]), int(best.gpus.iloc[0])


def sweep_sections(store, names, args, root):
    check_system(store, args)
    out = [("h2", "Sweep")]
    counts = load(store, "counts")
    out.append(("table", Table("counts", "Configurations by status (/counts)", ["name", "count"],
                               [[n, int(c)] for n, c in zip(counts.name, counts["count"])])))
    rows, source = feasible_rows(store, names)
    if rows.empty:
        out.append(("p", "No feasible configuration: only the failure counts can be drawn."))
        out.append(("fig", failures_figure(counts)))
        return out
    out.append(("fig", pareto_figure(store, root)))
    cost_front = pareto_cost_figure(store, root) if "pareto_cost" in names else None
    if cost_front is not None:
        out.append(("fig", cost_front))
    elif pareto_cost_note(store, names):
        out.append(("p", pareto_cost_note(store, names)))
    out.append(("fig", best_vs_size_figure(rows, source, root)))
    system, gpus = default_cell(rows, source, root, args)
    out.append(("fig", heatmap_figure(rows, source, root, system, gpus)))
    top, metric_col = ranked(rows, root)
    top = top.head(args.top)
    out.append(("fig", stacked_figure(top, TIME_PARTS, "time_breakdown",
                                      f"Time per iteration of the best {len(top)} by "
                                      f"{metric_col}", "time per iteration (s)", "_s")))
    systems = load(store, "systems").set_index("name")["hbm_gib"]
    capacity = [float(systems[str(s)]) for s in top.system]
    out.append(("fig", stacked_figure(top, MEM_PARTS, "memory",
                                      f"Memory per GPU of the best {len(top)} vs HBM capacity",
                                      "memory per GPU (GiB)", "_gib", capacity)))
    out.append(("fig", failures_figure(counts)))
    columns = [c for c in TOP_COLUMNS if c in top.columns]  # a store made before the bands
    out.append(("table", Table("top", f"Best {len(top)} by {metric_col} (from {source})",
                               columns, [[plain(r[c]) for c in columns]
                                         for _, r in top.iterrows()])))
    note = band_note(top, metric_col,
                     METRICS.get(root.get("metric", ""), ("", True))[1])
    if note:
        out.append(("p", note))
    return out


def band_note(top, column, lower):
    """Which of the ranked rows lie within the first row's error band (time_low_s..time_high_s,
    calibration/bands.cfg; docs/eval.md): the band of the ranked `column` (lower is better when
    `lower`; it grows with the time, or with its inverse) meets the first row's."""
    if len(top) < 2 or "time_low_s" not in top.columns or not top.time_low_s.iloc[0] > 0:
        return ""
    low = top.time_low_s / top.time_per_iteration_s
    high = top.time_high_s / top.time_per_iteration_s
    value = top[column]
    lo, hi = (value * low, value * high) if lower else (value / high, value / low)
    within = [i + 1 for i in range(1, len(top))
              if lo.iloc[i] <= hi.iloc[0] and lo.iloc[0] <= hi.iloc[i]]
    if not within:
        return "No other configuration of the table lies within the first one's error band."
    return (f"Rows {', '.join(map(str, within))} lie within the first row's error band "
            f"(time_low_s..time_high_s, docs/eval.md, Error bands): their order is within the "
            f"model's error.")


def fit_line(bytes_, times):
    """t = latency + bytes / bandwidth by least squares on the relative error (as `fit` does):
    minimise sum((a + b x_i) / t_i - 1)^2, a linear problem in (a, b)."""
    x = np.asarray(bytes_, dtype=float)
    t = np.asarray(times, dtype=float)
    design = np.column_stack([1.0 / t, x / t])
    (a, b), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return max(float(a), 0.0), max(float(b), 1e-30)


def probe_sections(store, meta):
    df = load(store, "probes")
    df = df[df.level >= 0]
    out = [("h2", "Probes"),
           ("p", f"{meta.get('ranks', '?')} ranks on {meta.get('nodes', '?')} node(s), "
                 f"{meta.get('mpi_library', '')}, measured {meta.get('date', '?')}.")]
    fits = []
    for collective, part in df.groupby("collective", sort=False):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        data = {"collective": collective, "series": {}}
        for k, ((shape, n), rows) in enumerate(part.groupby(["shape", "group_size"], sort=False)):
            rows = rows.sort_values("bytes")
            label = f"{shape}, {n} ranks"
            a, b = fit_line(rows.bytes, rows.t_median_us)
            ratio = float(np.median(rows.busbw_gbs / rows.algbw_gbs))
            xs = np.geomspace(rows.bytes.min(), rows.bytes.max(), 100)
            model = ratio * xs / ((a + b * xs) * 1e3)
            color = f"C{k}"
            ax.plot(rows.bytes, rows.busbw_gbs, "o", color=color, label=label + " (measured)")
            ax.plot(xs, model, "-", color=color, label=label + " (fit)")
            data["series"][label] = {"points": [[int(x), float(y)] for x, y in
                                                zip(rows.bytes, rows.busbw_gbs)],
                                     "latency_us": a, "bandwidth_gbs": 1e-3 / b,
                                     "busbw_factor": ratio}
            fits.append([collective, shape, int(n), len(rows), a, 1e-3 / b])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{collective}: bus bandwidth vs message size")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        out.append(("fig", Figure(f"probe_{collective}", f"{collective} bus bandwidth",
                                  "Points: median time of the slowest rank (busbw_gbs of "
                                  "/probes); lines: t = latency + bytes / bandwidth fitted to "
                                  "t_median_us by least squares on the relative error.",
                                  render(fig), data)))
    out.append(("table", Table("probe_fit", "Fitted t = latency + bytes / bandwidth "
                               "(t_median_us)", ["collective", "shape", "group_size", "points",
                                                 "latency_us", "bandwidth_gbs"], fits)))
    return out


def verify_sections(store):
    df = load(store, "verify")
    out = [("h2", "Verify: predicted vs measured")]
    fig, ax = plt.subplots(figsize=(6.5, 5))
    data = {"series": {}}
    for collective, rows in df.groupby("collective", sort=False):
        ax.plot(rows.predicted_run_us, rows.measured_us, "o", label=collective)
        data["series"][collective] = [[float(p), float(m)] for p, m in
                                      zip(rows.predicted_run_us, rows.measured_us)]
    lo = min(df.predicted_run_us.min(), df.measured_us.min()) / 1.5
    hi = max(df.predicted_run_us.max(), df.measured_us.max()) * 1.5
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="measured = predicted")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted time of what ran (µs)")
    ax.set_ylabel("measured median time (µs)")
    ax.set_title("Verify: measured vs predicted per collective")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    median = float(np.median(df.ratio)) if len(df) else math.nan
    out.append(("fig", Figure("verify", "Predicted vs measured", f"{len(df)} collectives of "
                              f"/verify; median measured / predicted {median:.3g}.", render(fig),
                              data)))
    columns = ["top_rank", "index", "system", "comm", "collective", "run_group_size",
               "run_bytes", "predicted_run_us", "measured_us", "ratio"]
    out.append(("table", Table("verify", "/verify", columns,
                               [[plain(r[c]) for c in columns] for _, r in df.iterrows()])))
    return out
