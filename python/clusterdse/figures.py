"""The figures and tables of `clusterdse report`, each with the data it plots.

Every builder returns a list of (kind, item): ("h2", text), ("p", text), ("fig", Figure) or
("table", Table). A Figure carries its PNG bytes and `data`, the points it draws (JSON-ready),
which the report writes next to the image so that a test can compare them with the store.
"""
import io
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .store import StoreError, attrs, chunks, load  # noqa: E402

# objective.metric -> (column, lower is better), as documented in docs/job-file.md.
METRICS = {
    "time_per_iteration": ("time_per_iteration_s", True),
    "tokens_per_s": ("tokens_per_s", False),
    "time_to_train": ("time_to_train_days", True),
    "gpu_hours": ("gpu_hours", True),
    "mfu": ("mfu", False),
    # goodput (issue 29)
    "time_to_train_effective": ("time_to_train_effective_days", True),
    "interruptions_expected": ("interruptions_expected", True),
    "checkpoint_interval_s": ("checkpoint_interval_s", False),
    "goodput": ("goodput", False),
}
# The time breakdown (docs/store.md columns; they add up to time_per_iteration_s), drawn in
# these groups: compute, recomputation, exposed communication by parallel group, the pipeline
# bubble, the optimizer step, and what is left (offload transfers, waiting for the slowest
# data-parallel rank, host costs, the time the published MFU ceiling adds).
TIME_GROUPS = [("compute (forward + backward)", ["t_forward_s", "t_backward_s"]),
               ("recompute", ["t_recompute_s"]),
               ("exposed TP comm", ["t_tp_comm_s"]), ("exposed PP comm", ["t_pp_comm_s"]),
               ("exposed DP comm", ["t_dp_comm_s"]), ("exposed EP comm", ["t_ep_comm_s"]),
               ("exposed CP comm", ["t_cp_comm_s"]), ("pipeline bubble", ["t_bubble_s"]),
               ("optimizer", ["t_optimizer_s"]), ("offload transfers", ["t_offload_s"]),
               ("data-parallel imbalance", ["t_imbalance_s"]), ("host fixed costs", ["t_fixed_s"]),
               ("published MFU ceiling", ["t_ceiling_s"])]
TIME_PARTS = [c for _, cols in TIME_GROUPS for c in cols]
# Memory per GPU in HBM; they add up to mem_total_gib (mem_offloaded_gib is on the second tier).
MEM_GROUPS = [("weights", ["mem_weights_gib"]), ("gradients", ["mem_gradients_gib"]),
              ("optimizer state", ["mem_optimizer_gib"]),
              ("activations", ["mem_activations_gib"]),
              ("FP8 weight cache", ["mem_fp8_cache_gib"]),
              ("stack runtime (workspaces, allocator)", ["mem_runtime_gib"]),
              ("reserved by the system", ["mem_other_gib"])]
MEM_PARTS = [c for _, cols in MEM_GROUPS for c in cols]
# The hardware columns a design grid may sweep (docs/job-file.md, Hardware axes): a store's
# design is those that take more than one value in its /top.
HW_COLUMNS = ["peak_bf16_tflops", "peak_fp8_tflops", "hbm_gib", "hbm_bandwidth_gbs",
              "gpus_per_node", "net0_bandwidth_gbs", "net0_latency_us", "net0_size",
              "net1_bandwidth_gbs", "net1_latency_us", "net1_size", "tier_capacity_gib",
              "tier_bandwidth_gbs", "gpu_price", "rental_price", "gpu_power_w"]
HW_SHORT = {"peak_bf16_tflops": "bf16", "peak_fp8_tflops": "fp8", "hbm_gib": "HBM",
            "hbm_bandwidth_gbs": "HBM GB/s", "gpus_per_node": "GPUs/node",
            "net0_bandwidth_gbs": "NVL GB/s", "net0_latency_us": "NVL us", "net0_size": "NVL",
            "net1_bandwidth_gbs": "net GB/s", "net1_latency_us": "net us", "net1_size": "net",
            "tier_capacity_gib": "pool GiB", "tier_bandwidth_gbs": "pool GB/s",
            "gpu_price": "price", "rental_price": "rent", "gpu_power_w": "W"}
# Statuses of /counts that are not failures: totals, and configurations skipped by pruning
# (their bound could not beat their group's best; docs/sweep.md, Pruning).
NOT_FAILURES = ("evaluated", "feasible", "ok", "pruned")
TOP_COLUMNS = ["index", "model", "system", "gpus", "tp", "pp", "dp", "cp", "ep", "vpp",
               "microbatch", "global_batch", "recompute", "zero", "precision",
               "time_per_iteration_s", "time_low_s", "time_high_s", "tokens_per_s", "mfu",
               "mem_total_gib", "mem_reserved_gib", "time_to_train_days",
               "time_to_train_days_low", "time_to_train_days_high"]
# Columns the sweep figures read from /results (all of it is read only for the best -n).
FIGURE_COLUMNS = ["index", "model", "system", "gpus", "tp", "pp", "status"]


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


def label_boxes(fig):
    """The texts a reader must be able to read, with their boxes in display pixels: tick labels
    (per axis), annotations, axis labels and titles, legend entries. A test checks that no two
    of one kind overlap and that each figure with several series has a legend."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []

    def add(kind, text):
        if not text.get_visible() or not text.get_text().strip():
            return
        e = text.get_window_extent(renderer)
        boxes.append([kind, text.get_text(), round(e.x0, 1), round(e.y0, 1), round(e.x1, 1),
                      round(e.y1, 1)])

    legends = []
    for k, ax in enumerate(fig.axes):
        if ax.get_label() == "<colorbar>":
            continue
        for t in ax.get_xticklabels():
            add(f"xtick{k}", t)
        for t in ax.get_yticklabels():
            add(f"ytick{k}", t)
        for t in ax.texts:
            add(f"annotation{k}", t)
        add(f"xlabel{k}", ax.xaxis.label)
        add(f"ylabel{k}", ax.yaxis.label)
        legend = ax.get_legend()
        if legend is not None:
            legends.append([t.get_text() for t in legend.get_texts()])
    return boxes, legends


def render(fig, data=None):
    """The figure as PNG bytes; with `data`, its label boxes and legends go into data."""
    if data is not None:
        data["_labels"], data["_legends"] = label_boxes(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def overlaps(a, b, pad=1.0):
    return not (a[2] <= b[0] + pad or b[2] <= a[0] + pad or a[3] <= b[1] + pad or
                b[3] <= a[1] + pad)


# Where a point's label may go (points from the point, alignment), tried in this order.
LABEL_SPOTS = [((6, 4), "left", "bottom"), ((6, -4), "left", "top"),
               ((-6, 4), "right", "bottom"), ((-6, -4), "right", "top"),
               ((0, 10), "center", "bottom"), ((0, -10), "center", "top"),
               ((14, 14), "left", "bottom"), ((-14, -14), "right", "top")]


def place_labels(ax, points, fontsize=7, avoid=()):
    """Annotates (x, y, text) points without overlapping each other, the boxes in `avoid`
    (display pixels: markers, error bars) or leaving the axes: each label takes the first free
    spot of LABEL_SPOTS; a label with no free spot is left out. Returns the texts left out."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken, dropped = list(avoid), []
    for x, y, text in points:
        for offset, ha, va in LABEL_SPOTS:
            t = ax.annotate(text, (x, y), xytext=offset, textcoords="offset points",
                            fontsize=fontsize, ha=ha, va=va,
                            arrowprops=None if abs(offset[0]) < 10 else
                            dict(arrowstyle="-", lw=0.5, color="0.4"))
            e = t.get_window_extent(renderer)
            box = (e.x0, e.y0, e.x1, e.y1)
            inside = (e.x0 >= frame.x0 and e.x1 <= frame.x1 and e.y0 >= frame.y0 and
                      e.y1 <= frame.y1)
            if inside and not any(overlaps(box, other) for other in taken):
                taken.append(box)
                break
            t.remove()
        else:
            dropped.append(text)
    return dropped


def time_column(root):
    """The time the sweep figures plot: days to train with a token budget, else s/iteration."""
    if float(root.get("tokens", 0) or 0) > 0:
        return "time_to_train_days", "time to train (days)"
    return "time_per_iteration_s", "time per iteration (s)"


def ranked(df, root, k=None):
    """The first k rows of df (all when None) by the job's metric, ties by index, and the
    metric's column; sorts positions, not the frame, so that only the k rows are copied."""
    column, lower = METRICS.get(root.get("metric", ""), ("time_per_iteration_s", True))
    if column not in df:
        column, lower = "time_per_iteration_s", True
    values = df[column].to_numpy(dtype=float)
    order = np.lexsort((df["index"].to_numpy(), values if lower else -values))
    return df.iloc[order[:k] if k is not None else order], column


def currency(store):
    """objective.currency of the job that made the store (its /job text), USD when it does not
    say (the default of src/config/job.c)."""
    try:
        from .store import _store
        with _store(store) as f:
            text = f["job"][()] if "job" in f else b""
    except Exception:
        return "USD"
    text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    text = re.sub(r"(#|//)[^\n]*", "", text)
    match = re.search(r'\bcurrency\s*[=:]\s*"([^"]*)"', text)
    return match.group(1) if match and match.group(1) else "USD"


def feasible_rows(store, names, root):
    """The rows the figures draw from, with the columns they need: /results when stored, else
    /top (store = "best"); every row (a store = "all" keeps failed ones too) and the source."""
    col, _ = time_column(root)
    metric, _ = METRICS.get(root.get("metric", ""), (col, True))
    table = "results" if "results" in names else "top"
    have = set(load(store, "top").columns)
    wanted = FIGURE_COLUMNS + [c for c in dict.fromkeys([col, metric, "time_per_iteration_s"])
                               if c in have]
    rows = load(store, table, columns=wanted)
    source = "/results" if table == "results" else "/top (store = \"best\" keeps no /results)"
    return rows, source


def full_rows(store, names, indices):
    """Every column of the rows whose index is in `indices`, in that order. The best k of the
    whole sweep are among the best k of their groups, so /top holds them when it keeps at least
    k per group; otherwise /results is read in pieces, keeping only those rows."""
    rows = load(store, "top")
    rows = rows[rows["index"].isin(indices)].drop_duplicates("index")
    if "results" in names and len(rows) < len(set(indices)):
        keep = [c[c["index"].isin(indices)] for c in chunks(store, "results", rows=8192)]
        rows = pd.concat(keep, ignore_index=True)
    order = {int(i): k for k, i in enumerate(indices)}
    return rows.assign(_o=[order[int(i)] for i in rows["index"]]).sort_values("_o") \
        .drop(columns="_o").reset_index(drop=True)


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
                  "on both GPUs and time; one series per system.", render(fig, data), data)


def design_columns(top):
    """The hardware columns that vary among the stored configurations of one system (a design
    grid's axes; systems that differ in them are not a grid)."""
    if top.empty:
        return []
    return [c for c in HW_COLUMNS if c in top and
            top.groupby("system", observed=True)[c].nunique().max() > 1]


def design_label(row, design):
    """A configuration's system, size and (in a design grid) hardware values, short."""
    text = f"{row.system} x{int(row.gpus)}"
    values = [f"{HW_SHORT.get(c, c)} {row[c]:.4g}" for c in design]
    for k in range(0, len(values), 4):  # four values a line
        text += "\n" + ", ".join(values[k:k + 4])
    return text


def pareto_cost_figure(store, root, money):
    """Per model, time to train against cost to train: every stored group best (/top) in
    grey, the front (/pareto_cost) as a line with its designs labelled, the time-optimal and
    cost-optimal ones marked; None when /pareto_cost is empty (its `note` says why)."""
    df = load(store, "pareto_cost").sort_values(["model", "time_to_train_days"])
    if df.empty:
        return None
    top = load(store, "top")
    top = top[(top.status == "ok") & (top.cost_to_train > 0)]
    design = design_columns(top)
    models = list(df.model.astype(str).unique())
    fig, axes = plt.subplots(1, len(models), figsize=(8 if len(models) == 1 else 6 * len(models),
                                                      5), squeeze=False)
    data = {"series": {}, "currency": money, "labelled": {}, "dropped": {}}
    for ax, model in zip(axes[0], models):
        rows = df[df.model.astype(str) == model]
        others = top[top.model.astype(str) == model]
        data["series"][model] = [[float(t), float(c), int(i)] for t, c, i in
                                 zip(rows.time_to_train_days, rows.cost_to_train, rows["index"])]
        ax.plot(others.time_to_train_days, others.cost_to_train, ".", color="0.75",
                markersize=3, label="best of each group (/top)", zorder=1)
        ax.step(rows.time_to_train_days, rows.cost_to_train, "o-", where="post", color="C0",
                label="front (/pareto_cost)", zorder=2)
        fastest = rows.loc[rows.time_to_train_days.idxmin()]
        cheapest = rows.loc[rows.cost_to_train.idxmin()]
        ax.plot([fastest.time_to_train_days], [fastest.cost_to_train], "*", color="C3",
                markersize=13, label="time-optimal", zorder=3)
        ax.plot([cheapest.time_to_train_days], [cheapest.cost_to_train], "D", color="C2",
                markersize=8, label="cost-optimal", zorder=3)
        # The two optimal designs first, so that they keep their labels when space is short.
        order = [fastest, cheapest] + [r for _, r in rows.iterrows()
                                       if r["index"] not in (fastest["index"], cheapest["index"])]
        points = [(r.time_to_train_days, r.cost_to_train, design_label(r, design)) for r in order]
        times = pd.concat([rows.time_to_train_days, others.time_to_train_days])
        if times.max() > 10 * times.min():
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10,
                                                                     subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _: f"{v:,.0f}"))
        ax.set_xlabel("time to train (days)")
        ax.set_ylabel(f"cost to train ({money})")
        ax.set_title(f"{model}: time vs cost to train")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        dropped = place_labels(ax, points)
        data["labelled"][model] = [p[2] for p in points if p[2] not in dropped]
        data["dropped"][model] = dropped
    n_drop = sum(len(v) for v in data["dropped"].values())
    return Figure("pareto_cost", "Pareto front of time and cost to train",
                  f"Per model: {len(df)} configurations of /pareto_cost (none beaten on both "
                  f"time and cost to train), labelled with system, GPUs"
                  f"{' and design (' + ', '.join(design) + ')' if design else ''}; grey: the "
                  f"best of each group of /top. Cost in {money}."
                  + (f" {n_drop} front label(s) left out for lack of room." if n_drop else ""),
                  render(fig, data), data)


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
                  render(fig, data), data)


# What an empty heatmap cell means, by what the store keeps (objective.store).
EMPTY_CELL = {
    "all": ("not in the space", "no (tp, pp) configuration of this size in the space"),
    "feasible": ("no feasible", "no feasible configuration (the store keeps every feasible one)"),
    "best": ("not stored", "store = \"best\" keeps only the best of each group"),
}


def space_values(store, axis):
    """The values of a strategy axis the sweep swept (/space/AXIS), or [] when not stored."""
    from .store import _store
    with _store(store) as f:
        node = f.get("space")
        if node is None or axis not in node:
            return []
        return [int(v) for v in np.asarray(node[axis][()]).ravel()]


def heatmap_figure(store, all_rows, source, root, system, gpus, pruned):
    """Best time per (tp, pp) for one system and size. A cell is a value, 'no feasible' (its
    configurations are stored and none is feasible, or the store keeps every feasible one and
    has none), or 'not stored' (a store = "best" store, or a pruned sweep, keeps only some)."""
    col, label = time_column(root)
    mode = str(root.get("store_mode", "feasible"))
    part_all = all_rows[(all_rows.system == system) & (all_rows.gpus == gpus)]
    part = part_all[part_all.status == "ok"]
    best = part.groupby(["tp", "pp"])[col].min()
    tried = set(zip(part_all.tp, part_all.pp))
    tps = sorted(set(int(t) for t in part_all.tp) | set(space_values(store, "tp")))
    pps = sorted(set(int(p) for p in part_all.pp) | set(space_values(store, "pp")))
    grid = np.full((len(pps), len(tps)), np.nan)
    for (tp, pp), value in best.items():
        grid[pps.index(pp), tps.index(tp)] = value
    fig, ax = plt.subplots(figsize=(7, 4.8))
    image = ax.imshow(grid, cmap="viridis_r", origin="lower", aspect="auto")
    empty_text, empty_means = EMPTY_CELL.get(mode, EMPTY_CELL["feasible"])
    if mode == "feasible" and pruned:
        empty_text, empty_means = "not stored", ("no feasible configuration, or skipped by "
                                                 "pruning")
    kinds = {}
    for y, pp in enumerate(pps):
        for x, tp in enumerate(tps):
            if not np.isnan(grid[y, x]):
                light = image.norm(grid[y, x]) < 0.5  # viridis_r: yellow for the low values
                ax.text(x, y, f"{grid[y, x]:.3g}", ha="center", va="center",
                        color="k" if light else "w", fontsize=8)
                continue
            text = "no feasible" if (tp, pp) in tried and mode == "all" else empty_text
            kinds[text] = kinds.get(text, 0) + 1
            ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor="0.92",
                                       hatch="//" if text == "not stored" else "",
                                       edgecolor="0.6", lw=0))
            ax.text(x, y, text, ha="center", va="center", color="k", fontsize=7)
    ax.set_xticks(range(len(tps)), [str(t) for t in tps])
    ax.set_yticks(range(len(pps)), [str(p) for p in pps])
    ax.set_xlabel("tensor-parallel degree tp")
    ax.set_ylabel("pipeline stages pp")
    ax.set_title(f"Best {label}, {system} x {gpus} GPUs")
    fig.colorbar(image, ax=ax, label="best " + label)
    meanings = {"no feasible": "no feasible: every configuration of the cell fails",
                "not stored": "not stored: " + (empty_means if empty_text == "not stored"
                                                else "the store keeps only some"),
                "not in the space": "not in the space"}
    if mode != "all":
        meanings["no feasible"] = "no feasible: " + empty_means
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=plt.get_cmap("viridis_r")(0.3),
                             label="best " + label)]
    for text in kinds:
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="0.92", edgecolor="0.6",
                                     hatch="//" if text == "not stored" else "",
                                     label=meanings[text]))
    ax.legend(handles=handles, loc="upper left", fontsize=7, bbox_to_anchor=(0.0, -0.14))
    cells = [[int(tp), int(pp), float(v)] for (tp, pp), v in best.items()]
    data = {"y": col, "system": str(system), "gpus": int(gpus), "cells": cells,
            "empty": {k: int(v) for k, v in kinds.items()}, "store_mode": mode}
    return Figure("heatmap", f"tp x pp heatmap ({system}, {gpus} GPUs)",
                  f"Best over every other axis, from {source}. Empty cells: "
                  + "; ".join(meanings[k] for k in kinds) + "." if kinds else
                  f"Best over every other axis, from {source}.", render(fig, data), data)


def stacked_figure(top, groups, name, title, ylabel, total=None, capacity=None):
    """One bar per configuration, stacked by group (each group the sum of its columns); the
    groups add up to the column `total` when given (the figure's data says by how much they
    differ). capacity: a line per bar (each configuration's own HBM)."""
    labels = [f"#{r + 1} ({int(i)})" for r, i in enumerate(top["index"])]
    fig, ax = plt.subplots(figsize=(9.5, 4.8))
    bottom = np.zeros(len(top))
    data = {"index": [int(i) for i in top["index"]], "parts": {}, "groups": {}}
    colors = plt.get_cmap("tab20")
    for k, (group, cols) in enumerate(groups):
        cols = [c for c in cols if c in top]
        for c in cols:
            data["parts"][c] = [float(v) for v in top[c]]
        if not cols:
            continue
        values = top[cols].to_numpy(dtype=float).sum(axis=1)
        data["groups"][group] = [float(v) for v in values]
        if not values.any():
            continue
        ax.bar(labels, values, bottom=bottom, label=group, color=colors(k), width=0.7)
        bottom += values
    if total is not None:
        data["total"] = [float(v) for v in top[total]]
        data["stacked"] = [float(v) for v in bottom]
        x = np.arange(len(top))
        ax.hlines(top[total], x - 0.42, x + 0.42, colors="k", lw=1.5,
                  label=f"{total} (the table's total)")
    if capacity is not None:
        data["capacity_gib"] = [float(c) for c in capacity]
        x = np.arange(len(top))
        ax.hlines(capacity, x - 0.45, x + 0.45, colors="r", lw=2.5, linestyles="--",
                  label="HBM capacity of its design")
    ax.set_ylabel(ylabel)
    ax.set_xlabel("configuration (rank, index in the space)")
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    for t in ax.get_xticklabels():
        t.set_ha("right")
        t.set_rotation_mode("anchor")
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return Figure(name, title, "", render(fig, data), data)


def failures_figure(counts):
    failed = counts[~counts.name.isin(NOT_FAILURES) & (counts["count"] > 0)]
    pruned = counts[counts.name == "pruned"]["count"]
    pruned = int(pruned.iloc[0]) if len(pruned) else 0
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.4 * max(len(failed), 2)))
    if len(failed):
        ax.barh(failed.name, failed["count"], color="tab:red", label="configurations")
        ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no configuration failed", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_xlabel("configurations (count, log scale)")
    ax.set_ylabel("status")
    ax.set_title("Why configurations failed")
    if len(failed):
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="x")
    data = {"counts": {n: int(c) for n, c in zip(failed.name, failed["count"])},
            "pruned": pruned}
    note = (f" {pruned} configurations skipped by pruning are not failures (their bound could "
            f"not beat their group's best) and are not drawn." if pruned else "")
    return Figure("failures", "Why configurations failed", "Counts by status from /counts "
                  "(statuses that never occurred are left out)." + note, render(fig, data), data)


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
    best = rows
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
    best, _ = ranked(best, root, 1)
    return str(best.system.iloc[0]), int(best.gpus.iloc[0])


def hbm_capacity(store, top):
    """Each configuration's HBM per GPU: its own hbm_gib (the design's, hardware axes applied)
    when the store has the column, else its system's."""
    if "hbm_gib" in top and (top["hbm_gib"] > 0).all():
        return [float(v) for v in top["hbm_gib"]]
    systems = load(store, "systems").set_index("name")["hbm_gib"]
    return [float(systems[str(s)]) for s in top.system]


def sweep_sections(store, names, args, root):
    check_system(store, args)
    out = [("h2", "Sweep")]
    counts = load(store, "counts")
    pruned = int(counts[counts.name == "pruned"]["count"].sum())
    out.append(("table", Table("counts", "Configurations by status (/counts)", ["name", "count"],
                               [[n, int(c)] for n, c in zip(counts.name, counts["count"])])))
    all_rows, source = feasible_rows(store, names, root)
    feasible = (all_rows.status == "ok").to_numpy()
    rows = all_rows if feasible.all() else all_rows[feasible]
    if rows.empty:
        out.append(("p", "No feasible configuration: only the failure counts can be drawn."))
        out.append(("fig", failures_figure(counts)))
        return out
    money = currency(store)
    out.append(("fig", pareto_figure(store, root)))
    cost_front = pareto_cost_figure(store, root, money) if "pareto_cost" in names else None
    if cost_front is not None:
        out.append(("fig", cost_front))
    elif pareto_cost_note(store, names):
        out.append(("p", pareto_cost_note(store, names)))
    out.append(("fig", best_vs_size_figure(rows, source, root)))
    system, gpus = default_cell(rows, source, root, args)
    out.append(("fig", heatmap_figure(store, all_rows, source, root, system, gpus, pruned)))
    ranked_rows, metric_col = ranked(rows, root, args.top)
    top = full_rows(store, names, list(ranked_rows["index"]))
    out.append(("h2", f"The best {len(top)} configurations"))
    out.append(("fig", stacked_figure(top, TIME_GROUPS, "time_breakdown",
                                      f"Time per iteration of the best {len(top)} by "
                                      f"{metric_col}", "time per iteration (s)",
                                      total="time_per_iteration_s")))
    out.append(("fig", stacked_figure(top, MEM_GROUPS, "memory",
                                      f"Memory per GPU of the best {len(top)} vs HBM capacity",
                                      "memory per GPU in HBM (GiB)", total="mem_total_gib",
                                      capacity=hbm_capacity(store, top))))
    # The design's hardware values next to the system (they tell a grid's rows apart).
    # The band and reserved-memory columns only when the store has them (one made before them
    # does not).
    columns = TOP_COLUMNS[:3] + design_columns(load(store, "top")) + \
        [c for c in TOP_COLUMNS[3:] if c in top] + [c for c in ("cost_to_train",) if c in top]
    titles = [f"cost_to_train ({money})" if c == "cost_to_train" else c for c in columns]
    out.append(("table", Table("top", f"Best {len(top)} by {metric_col} (from {source})",
                               titles, [[plain(r[c]) for c in columns]
                                        for _, r in top.iterrows()])))
    note = band_note(top, metric_col, METRICS.get(root.get("metric", ""), ("", True))[1])
    if note:
        out.append(("p", note))
    out.append(("fig", failures_figure(counts)))
    out += goodput_sections(store, names, root)
    out += pool_sections(store, names, money)
    out += grid_sections(store, root, money)
    return out


POOL_TABLE = ["model", "system", "composition", "gpus", "index", "tp", "pp", "dp",
              "microbatch", "recompute", "pool_split", "time_to_train_days", "cost_to_train",
              "days_over_fastest"]


def pool_compositions(store):
    """Per system of /systems, what it is made of: "56 a100-80g-dgx + 24 h100-sxm-dgx" for a
    heterogeneous pool (its member rows and GPU counts, docs/store.md), None for a system of one
    GPU type."""
    systems = load(store, "systems")
    if "pool" not in systems:
        return {}
    names = [str(n) for n in systems.name]
    out = {}
    for name, pool in zip(names, systems["pool"]):
        n_types = int(pool[0])
        out[name] = None if n_types == 0 else " + ".join(
            f"{int(pool[2][t])} {names[int(pool[1][t])]}" for t in range(n_types))
    return out


def pool_best(store, names):
    """Per model and system, the feasible row with the shortest time to train (ties by index),
    from /results when stored, else /top; None unless a token budget gives the time and cost to
    train and the rows hold both a heterogeneous pool and a system of one GPU type."""
    top = load(store, "top")
    if "cost_to_train" not in top or "time_to_train_days" not in top:
        return None, None
    table = "results" if "results" in names else "top"
    rows = load(store, table, columns=["index", "model", "system", "status",
                                       "time_to_train_days", "cost_to_train"])
    rows = rows[(rows.status == "ok") & (rows.time_to_train_days > 0)]
    kinds = pool_compositions(store)
    systems = set(rows.system.astype(str))
    if not any(kinds.get(s) for s in systems) or all(kinds.get(s) for s in systems):
        return None, None
    best = rows.sort_values(["time_to_train_days", "index"]).drop_duplicates(["model", "system"])
    source = "/results" if table == "results" else "/top"
    return full_rows(store, names, [int(i) for i in best["index"]]), source


def pool_sections(store, names, money):
    """A heterogeneous pool against systems of one GPU type (README, "A100 + H100 or H100
    alone"): per model, each system's fastest configuration by time to train, drawn as time
    against cost to train with the model's error band, labelled with what the system is made
    of; and the table of those configurations. Nothing for a store without both kinds."""
    best, source = pool_best(store, names)
    if best is None:
        return []
    kinds = pool_compositions(store)
    models = sorted(set(best.model.astype(str)))
    fig, axes = plt.subplots(1, len(models), figsize=(9 if len(models) == 1 else 6 * len(models),
                                                      5), squeeze=False)
    data = {"series": {}, "currency": money, "labelled": {}, "dropped": {}}
    table = []
    for ax, model in zip(axes[0], models):
        part = best[best.model.astype(str) == model].sort_values(["time_to_train_days", "index"])
        fastest = float(part.time_to_train_days.iloc[0])
        data["series"][model] = []
        points, bars = [], []
        for k, (_, r) in enumerate(part.iterrows()):
            system = str(r.system)
            pool = kinds.get(system)
            days, cost = float(r.time_to_train_days), float(r.cost_to_train)
            data["series"][model].append([system, int(r["index"]), int(r.gpus), days, cost])
            band = "time_to_train_days_low" in r and r.time_to_train_days_low > 0
            xerr = [[days - float(r.time_to_train_days_low)],
                    [float(r.time_to_train_days_high) - days]] if band else None
            ax.errorbar([days], [cost], xerr=xerr, fmt="D" if pool else "o",
                        color=f"C{k % 10}", markersize=9 if pool else 7, capsize=3,
                        label=f"{system} ({'pool' if pool else 'one GPU type'})")
            what = pool if pool else f"{int(r.gpus)} GPUs"
            points.append((days, cost, f"{system}, {days / fastest:.2f}x\n{what}"))
            bars.append((days, cost) if xerr is None else
                        (days - xerr[0][0], cost, days + xerr[1][0]))
            table.append([model, system, pool or "one type", plain(r.gpus), plain(r["index"]),
                          plain(r.tp), plain(r.pp), plain(r.dp), plain(r.microbatch),
                          plain(r.recompute), plain(r.pool_split), days, cost,
                          days / fastest])
        ax.margins(x=0.35, y=0.3)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_xlabel("time to train (days; bars: the model's error band)")
        ax.set_ylabel(f"cost to train ({money})")
        ax.set_title(f"{model}: fastest configuration of each system")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        fig.canvas.draw()
        avoid = []  # each marker and its error bar, which the labels must leave readable
        for bar in bars:
            x0, y = ax.transData.transform((bar[0], bar[1]))
            x1, _ = ax.transData.transform((bar[-1] if len(bar) == 3 else bar[0], bar[1]))
            avoid.append((min(x0, x1) - 8, y - 8, max(x0, x1) + 8, y + 8))
        legend = ax.get_legend().get_window_extent()
        avoid.append((legend.x0, legend.y0, legend.x1, legend.y1))
        dropped = place_labels(ax, points, avoid=avoid)
        data["labelled"][model] = [p[2] for p in points if p[2] not in dropped]
        data["dropped"][model] = dropped
    fig.tight_layout()
    caption = (f"Per model, each system's configuration with the shortest time to train (from "
               f"{source}; ties by index): a heterogeneous pool (diamond, labelled with the GPUs "
               f"of each type) against systems of one GPU type (circles). The cost to train is "
               f"each system's bill for the token budget (a pool's: the sum of its types'), in "
               f"{money}; labels give the time to train over the fastest system's. The job's "
               f"objective.budget, when set, caps what each system costs to buy.")
    return [("h2", "Heterogeneous pool or one GPU type"),
            ("fig", Figure("pool_vs_homogeneous", "Heterogeneous pool against one GPU type",
                           caption, render(fig, data), data)),
            ("table", Table("pool_vs_homogeneous", "The fastest configuration of each system",
                            POOL_TABLE[:-2] + [f"cost_to_train ({money})", "days_over_fastest"],
                            table))]


GOODPUT_TABLE = ["system", "gpus", "index", "tp", "pp", "dp", "zero", "time_to_train_days",
                 "time_to_train_effective_days", "goodput", "mttf_hours", "checkpoint_gib",
                 "checkpoint_interval_s", "interruptions_expected", "checkpoint_flag"]


def goodput_best(store, names):
    """Per (system, gpus), the feasible row with the shortest effective time to train
    (failures, restarts and checkpoints included; ties by index), from /results when stored,
    else /top; None when the store has no goodput columns or no row a failure model touched
    (goodput strictly between 0 and 1)."""
    if "goodput" not in set(load(store, "top").columns):
        return None
    table = "results" if "results" in names else "top"
    rows = load(store, table, columns=["index", "system", "gpus", "status", "goodput",
                                       "time_to_train_days", "time_to_train_effective_days"])
    rows = rows[(rows.status == "ok") & (rows.goodput > 0)]
    if rows.empty or not (rows.goodput < 1).any():
        return None
    rows = rows.sort_values(["time_to_train_effective_days", "index"])
    return rows.drop_duplicates(["system", "gpus"]).sort_values(["system", "gpus"])


def goodput_sections(store, names, root):
    """Time to train with failures (issue 29; README "Time to train with failures"): per
    system and size, the failure-free and the effective time to train of the configuration
    that is best with failures, its goodput, and the table of its checkpoint figures."""
    if not float(root.get("tokens", 0) or 0) > 0:
        return []
    best = goodput_best(store, names)
    if best is None:
        return []
    full = full_rows(store, names, [int(i) for i in best["index"]])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    data = {"series": {}}
    for i, (system, part) in enumerate(full.groupby("system", observed=True, sort=True)):
        part = part.sort_values("gpus")
        color = f"C{i % 10}"
        data["series"][str(system)] = [
            [int(g), int(k), float(d), float(e), float(q)] for g, k, d, e, q in
            zip(part.gpus, part["index"], part.time_to_train_days,
                part.time_to_train_effective_days, part.goodput)]
        left.plot(part.gpus, part.time_to_train_effective_days, "o-", color=color,
                  label=f"{system} with failures")
        left.plot(part.gpus, part.time_to_train_days, "x--", color=color,
                  label=f"{system} failure-free")
        right.plot(part.gpus, part.goodput, "o-", color=color, label=str(system))
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("cluster size (GPUs)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    left.set_yscale("log")
    left.set_ylabel("time to train (days)")
    left.set_title("Best effective time to train vs failure-free")
    right.set_ylabel("goodput (effective training time ratio)")
    right.set_title("Goodput of that configuration")
    right.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.4g"))
    fig.tight_layout()
    caption = ("Per system and size, the feasible configuration with the shortest "
               "time_to_train_effective_days (failures, restarts and checkpoints from the "
               "system's reliability and storage groups; README, Time to train with failures); "
               "the dashed line is the same configuration without failures.")
    # By system name (not the categorical's order, that of /systems), then size.
    rows = [[plain(r[c]) for c in GOODPUT_TABLE] for _, r in full.assign(
        _name=full.system.astype(str)).sort_values(["_name", "gpus"]).iterrows()]
    return [("h2", "Time to train with failures"),
            ("fig", Figure("goodput", "Time to train with failures", caption,
                           render(fig, data), data)),
            ("table", Table("goodput", "The configuration with the shortest effective time to "
                            "train per system and size", GOODPUT_TABLE, rows))]


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


def grid_sections(store, root, money):
    """For a design grid (hardware axes, group_by "design"): per cluster size the spread of
    the best time over the designs, what each hardware dimension buys (median and largest
    speed-up from its lowest to its highest value, size and every other dimension held), and
    the time-optimal against the cost-optimal (size, design). Nothing for other stores."""
    top = load(store, "top")
    top = top[top.status == "ok"]
    design = design_columns(top)
    if not design or "time_to_train_days" not in top or not float(root.get("tokens", 0) or 0):
        return []
    days = "time_to_train_days"
    out = [("h2", "Design grid"),
           ("p", f"{top.model.nunique()} model(s); designs: every combination of "
                 + ", ".join(f"{c} ({top[c].nunique()} values)" for c in design) + ".")]
    for model, part in top.groupby("model", observed=True):
        best = part.sort_values([days, "index"]).drop_duplicates(["gpus"] + design)
        keyed = best.set_index(["gpus"] + design)
        designs = int(np.prod([part[c].nunique() for c in design]))
        spread = []
        for gpus, g in keyed.groupby(level="gpus"):
            t = g[days]
            spread.append([int(gpus), len(g), designs - len(g), float(t.min()), float(t.max()),
                           float(t.max() / t.min())])
        out.append(("table", Table(f"grid_spread_{model}", f"{model}: best time to train per "
                                   "cluster size over the designs", ["gpus", "designs_ok",
                                   "cannot_run", "best_days", "worst_days", "worst_over_best"],
                                   spread)))
        sens = sensitivity(keyed[days], design)
        out.append(("table", Table(f"grid_sensitivity_{model}", f"{model}: what each hardware "
                                   "dimension buys (speed-up from its lowest to its highest "
                                   "value, same size and other dimensions)",
                                   ["dimension", "low", "high", "median_speedup",
                                    "max_speedup", "pairs"], sens)))
        out.append(("fig", sensitivity_figure(model, sens)))
        if "cost_to_train" in keyed and (keyed.cost_to_train > 0).any():
            rows = []
            for label, k in (("time-optimal", keyed[days].idxmin()),
                             ("cost-optimal", keyed.cost_to_train.idxmin())):
                r = keyed.loc[k]
                k = k if isinstance(k, tuple) else (k,)
                rows.append([label] + [plain(v) for v in k] +
                            [float(r[days]), float(r.cost_to_train), int(r.tp), int(r.pp),
                             int(r.dp), str(r.offload)])
            out.append(("table", Table(f"grid_optimal_{model}", f"{model}: time-optimal and "
                                       f"cost-optimal (size, design); cost in {money}",
                                       ["choice", "gpus"] + design +
                                       ["days", f"cost_to_train ({money})", "tp", "pp", "dp",
                                        "offload"], rows)))
    return out


def sensitivity(times, design):
    """[dimension, low, high, median, largest, pairs] per hardware dimension: the ratio of the
    best time at its lowest value to that at its highest, over the (size, other dimensions)
    points that have both."""
    out = []
    for dim in design:
        values = sorted(times.index.get_level_values(dim).unique())
        lo, hi = values[0], values[-1]
        ratio = (times.xs(lo, level=dim) / times.xs(hi, level=dim)).dropna()
        if len(ratio):
            out.append([dim, float(lo), float(hi), float(ratio.median()), float(ratio.max()),
                        int(len(ratio))])
    return out


def sensitivity_figure(model, sens):
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * max(len(sens), 2)))
    names = [f"{d} {lo:g} -> {hi:g}" for d, lo, hi, *_ in sens]
    y = np.arange(len(sens))
    med = [s[3] for s in sens]
    big = [s[4] for s in sens]
    ax.barh(y + 0.2, med, height=0.4, color="C0", label="median speed-up")
    ax.barh(y - 0.2, big, height=0.4, color="C1", label="largest speed-up")
    ax.axvline(1.0, color="k", lw=0.8)
    lo, hi = min(med + big + [1.0]), max(big + [1.0])
    ax.set_xlim(lo - 0.05 * (hi - lo) - 0.01, hi + 0.05 * (hi - lo) + 0.01)
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlabel("best time at the low value / at the high value (x)")
    ax.set_title(f"{model}: what each hardware dimension buys")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3, axis="x")
    data = {"model": str(model), "dimensions": [[s[0], s[3], s[4]] for s in sens]}
    return Figure(f"sensitivity_{model}", f"Sensitivity per hardware axis ({model})",
                  "Speed-up of the best time to train from each dimension's lowest value to its "
                  "highest, the cluster size and every other dimension held (table above).",
                  render(fig, data), data)


# The terms of the sweep's collective model that `clusterdse fit` fits (src/model/collective.c,
# cdse_coll_steps and cdse_coll_volume; `clusterdse fit --help`): t = steps(n) latency +
# volume(n) bytes / bandwidth, with ring collectives making `passes` passes of n - 1 steps
# (steps = passes (n - 1), volume = passes (n - 1) / n) and sendrecv one message (1, 1).
COLLECTIVE_PASSES = {"allreduce": 2, "allgather": 1, "reduce_scatter": 1, "alltoall": 1,
                     "sendrecv": None}
# The probe levels `fit` names in its profile (src/cli/cmd_fit.c, level_names).
FIT_LEVELS = {"intra_node": 0, "inter_node": 1}


def model_time_us(collective, n, nbytes, latency_us, bandwidth_gbs):
    """Time of one collective of `nbytes` on n ranks in the fitted model (1 GB/s = 1e3 B/us)."""
    passes = COLLECTIVE_PASSES[collective]
    steps, volume = (1.0, 1.0) if passes is None else (passes * (n - 1), passes * (n - 1) / n)
    return steps * latency_us + volume * np.asarray(nbytes, float) / (bandwidth_gbs * 1e3)


def parse_profile(text):
    """{level index: {collective: (latency_us, bandwidth_gbs)}} of a network profile written by
    `clusterdse fit` (its network = ( { name = ...; allreduce = { latency = ...; bandwidth =
    ...; }; ... } ))."""
    text = re.sub(r"#[^\n]*", "", text)
    body = text[text.index("network"):] if "network" in text else ""
    fits = {}
    parts = re.split(r'\bname\s*=\s*"([^"]*)"\s*;', body)
    for name, block in zip(parts[1::2], parts[2::2]):
        level = FIT_LEVELS.get(name)
        if level is None:
            continue
        for coll, lat, bw in re.findall(r"(\w+)\s*=\s*\{\s*latency\s*=\s*([-0-9.eE+]+)\s*;\s*"
                                        r"bandwidth\s*=\s*([-0-9.eE+]+)\s*;\s*\}", block):
            fits.setdefault(level, {})[coll] = (float(lat), float(bw))
    return fits


def run_fit(store):
    """The fits `clusterdse fit STORE` writes ({level: {collective: (lat, bw)}}), and None or
    why there are none. The binary is $CLUSTERDSE_BIN (set by `clusterdse report`), else
    clusterdse on PATH."""
    binary = os.environ.get("CLUSTERDSE_BIN") or shutil.which("clusterdse")
    if not binary:
        return {}, "the clusterdse program was not found (CLUSTERDSE_BIN, PATH)"
    with tempfile.TemporaryDirectory(prefix="cdse-fit-") as d:
        profile = os.path.join(d, "fit.cfg")
        try:
            proc = subprocess.run([binary, "fit", os.path.abspath(store), "-o", profile],
                                  capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {}, f"{binary} fit could not run: {e}"
        if proc.returncode != 0 or not os.path.exists(profile):
            why = (proc.stderr.strip().splitlines() or ["no profile written"])[-1]
            return {}, f"clusterdse fit failed: {why}"
        with open(profile, encoding="utf-8") as f:
            return parse_profile(f.read()), None


def probe_sections(store, meta):
    df = load(store, "probes")
    df = df[df.level >= 0]
    fits, why = run_fit(store)
    out = [("h2", "Probes"),
           ("p", f"{meta.get('ranks', '?')} ranks on {meta.get('nodes', '?')} node(s), "
                 f"{meta.get('mpi_library', '')}, measured {meta.get('date', '?')}.")]
    if why:
        out.append(("p", f"No fitted model drawn: {why}."))
    for collective, part in df.groupby("collective", sort=False):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        data = {"collective": collective, "series": {}}
        drawn = set()  # one line per (level, group size): the fit is per level and collective
        for k, ((shape, n, level), rows) in enumerate(
                part.groupby(["shape", "group_size", "level"], sort=False)):
            rows = rows.sort_values("bytes")
            label = f"{shape}, {n} ranks"
            color = f"C{k}"
            ax.plot(rows.bytes, rows.busbw_gbs, "o", color=color, label=label + " (measured)")
            series = {"points": [[int(x), float(y)] for x, y in zip(rows.bytes,
                                                                    rows.busbw_gbs)],
                      "level": int(level)}
            fit = fits.get(int(level), {}).get(collective)
            if fit is not None and (int(level), int(n)) in drawn:
                series.update(latency_us=fit[0], bandwidth_gbs=fit[1])
            elif fit is not None:
                drawn.add((int(level), int(n)))
                # busbw = bytes / t x the collective's bus-bandwidth factor (nccl-tests), the
                # factor of the measured rows (busbw_gbs / algbw_gbs).
                factor = float(np.median(rows.busbw_gbs / rows.algbw_gbs))
                xs = np.geomspace(rows.bytes.min(), rows.bytes.max(), 100)
                t = model_time_us(collective, int(n), xs, *fit)
                ax.plot(xs, factor * xs / (t * 1e3), "-", color="k", lw=1.2, zorder=0,
                        label=f"fit (clusterdse fit), level {int(level)}, {n} ranks")
                series.update(latency_us=fit[0], bandwidth_gbs=fit[1], busbw_factor=factor)
            data["series"][label] = series
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{collective}: bus bandwidth vs message size")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        out.append(("fig", Figure(f"probe_{collective}", f"{collective} bus bandwidth",
                                  "Points: median time of the slowest rank (busbw_gbs of "
                                  "/probes); lines: the latency and bandwidth that `clusterdse "
                                  "fit` writes into the network profile for the group's level, "
                                  "t = steps(n) latency + volume(n) bytes / bandwidth.",
                                  render(fig, data), data)))
    rows = [[level, coll, lat, bw] for level in sorted(fits)
            for coll, (lat, bw) in fits[level].items()]
    out.append(("table", Table("probe_fit", "The fit `clusterdse fit` writes (per level and "
                               "collective)", ["level", "collective", "latency_us",
                                               "bandwidth_gbs"], rows)))
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
                              f"/verify; median measured / predicted {median:.3g}.", render(fig, data),
                              data)))
    columns = ["top_rank", "index", "system", "comm", "collective", "run_group_size",
               "run_bytes", "predicted_run_us", "measured_us", "ratio"]
    out.append(("table", Table("verify", "/verify", columns,
                               [[plain(r[c]) for c in columns] for _, r in df.iterrows()])))
    return out
