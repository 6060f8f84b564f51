"""Checks of a `clusterdse report` page against its store (run by tests/sh/report_*.sh).

    report_check.py data   REPORT.html STORE...   every figure's JSON data equals the store
    report_check.py browser REPORT.html SHOT.png STORE...
                                        headless Chromium: images loaded, pixels inside each
                                        figure, table cells equal the store; exit 77 without
                                        Chromium / chromedriver / selenium

The expected values are computed here with pandas from clusterdse.load (the decoded store), not
by the report's code.
"""
import json
import math
import os
import re
import shutil
import sys
import tempfile

import numpy as np

import clusterdse

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"    FAIL {what}")


def close(a, b, rel=1e-12):
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-300)


def figure_data(html_text):
    blocks = re.findall(r'<script type="application/json" class="figure-data" '
                        r'data-figure="([^"]+)">(.*?)</script>', html_text, re.S)
    return {name: json.loads(text.replace("<\\/", "</")) for name, text in blocks}


def time_col(root):
    return "time_to_train_days" if float(root.get("tokens", 0) or 0) > 0 \
        else "time_per_iteration_s"


def check_sweep(data, store):
    root = clusterdse.attrs(store)
    col = time_col(root)
    pareto = clusterdse.load(store, "pareto")
    got = sorted((s, g, t, i) for s, pts in data["pareto"]["series"].items() for g, t, i in pts)
    want = sorted((str(s), int(g), float(t), int(i)) for s, g, t, i in
                  zip(pareto.system, pareto.gpus, pareto[col], pareto["index"]))
    check(got == want, f"pareto: {len(got)} points plotted, {len(want)} in /pareto, equal")
    names = clusterdse.tables(store)
    front = clusterdse.load(store, "pareto_cost") if "pareto_cost" in names else None
    if front is not None and len(front):
        got = sorted((m, t, c, i) for m, pts in data["pareto_cost"]["series"].items()
                     for t, c, i in pts)
        want = sorted((str(m), float(t), float(c), int(i)) for m, t, c, i in
                      zip(front.model, front.time_to_train_days, front.cost_to_train,
                          front["index"]))
        check(got == want, f"pareto_cost: {len(got)} points plotted, {len(want)} in "
              "/pareto_cost, equal")
    else:
        check("pareto_cost" not in data, "pareto_cost: no figure for an empty /pareto_cost")
    rows = clusterdse.load(store, "results" if "results" in names else "top")
    ok = rows[rows.status == "ok"]
    best = ok.groupby(["system", "gpus"], observed=True)[col].min()
    got = {(s, g): t for s, pts in data["best_vs_size"]["series"].items() for g, t in pts}
    want = {(str(s), int(g)): float(t) for (s, g), t in best.items()}
    check(got == want, f"best_vs_size: {len(got)} points equal the minimum per system and size")
    heat = data["heatmap"]
    cell = ok[(ok.system == heat["system"]) & (ok.gpus == heat["gpus"])]
    want = {(int(tp), int(pp)): float(t) for (tp, pp), t in
            cell.groupby(["tp", "pp"])[col].min().items()}
    got = {(tp, pp): t for tp, pp, t in heat["cells"]}
    check(got == want and len(got) > 0, f"heatmap {heat['system']} x {heat['gpus']}: "
          f"{len(got)} cells equal the minimum per (tp, pp)")
    counts = clusterdse.load(store, "counts")
    want = {n: int(c) for n, c in zip(counts.name, counts["count"])
            if n not in ("evaluated", "feasible", "ok", "pruned") and c > 0}
    check(data["failures"]["counts"] == want, f"failures: {want} (pruned ones are no failure)")
    pruned = {n: int(c) for n, c in zip(counts.name, counts["count"])}.get("pruned", 0)
    check(data["failures"]["pruned"] == pruned, f"failures: {pruned} pruned, not drawn")
    check_heatmap_empty(heat, store, root, pruned)
    by_index = rows.set_index("index")
    for name, total in (("time_breakdown", "time_per_iteration_s"), ("memory", "mem_total_gib")):
        idx = data[name]["index"]
        for part, values in data[name]["parts"].items():
            want = [float(by_index.loc[i, part]) for i in idx]
            check(values == want, f"{name}: {part} of {len(idx)} configurations")
        # The stacked bars reach the table's total (memory: runtime and FP8 cache included).
        want = [float(by_index.loc[i, total]) for i in idx]
        check(data[name]["total"] == want, f"{name}: the {total} line is the store's")
        check(all(close(a, b, 1e-9) for a, b in zip(data[name]["stacked"], want)),
              f"{name}: the stack adds up to {total} for each of {len(idx)} configurations")
        parts = set(data[name]["parts"])
        if name == "memory":
            check({"mem_runtime_gib", "mem_fp8_cache_gib"} <= parts, "memory: runtime and "
                  "FP8-cache memory are drawn")
    # Each bar's HBM line is its own design's HBM (hbm_gib of the row: hardware axes applied).
    want = [float(by_index.loc[i, "hbm_gib"]) for i in data["memory"]["index"]]
    check(data["memory"]["capacity_gib"] == want, "memory: HBM capacity per configuration "
          f"(its design's): {sorted(set(want))}")
    money = os.environ.get("CDSE_CURRENCY", "USD")
    if "pareto_cost" in data:
        check(data["pareto_cost"]["currency"] == money, f"pareto_cost: currency {money}")
        ylabels = [b[1] for b in data["pareto_cost"]["_labels"] if b[0].startswith("ylabel")]
        check(all(y == f"cost to train ({money})" for y in ylabels) and ylabels,
              f"pareto_cost: axis names the currency ({ylabels})")
        for model, labels in data["pareto_cost"]["labelled"].items():
            check(len(labels) >= min(2, len(data["pareto_cost"]["series"][model])),
                  f"pareto_cost {model}: time- and cost-optimal designs labelled ({len(labels)})")
    check_goodput(data, store, names, root)
    check_pool(data, store, names)
    check_grid(data, store, names)
    print(f"    sweep figures of {store}: pareto, pareto_cost, best_vs_size, heatmap, breakdowns, "
          "failures")


def goodput_best(store, names):
    """Per (system, gpus), the ok row with the least time_to_train_effective_days (ties by
    index), among rows a failure model touched; written apart from the report's code."""
    rows = clusterdse.load(store, "results" if "results" in names else "top")
    rows = rows[(rows.status == "ok") & (rows.goodput > 0)]
    best = {}
    for _, r in rows.iterrows():
        key, cand = (str(r.system), int(r.gpus)), (float(r.time_to_train_effective_days),
                                                   int(r["index"]))
        if key not in best or cand < best[key][0]:
            best[key] = (cand, r)
    return best, rows


def check_goodput(data, store, names, root):
    """The goodput figure: per system and size, the row with the shortest effective time to
    train, its failure-free days, effective days and goodput as the store has them; no figure
    when no row has a goodput below 1 or the job has no token budget."""
    top = clusterdse.load(store, "top")
    if "goodput" not in top.columns or not float(root.get("tokens", 0) or 0) > 0:
        check("goodput" not in data, "goodput: no figure without goodput columns or tokens")
        return
    best, rows = goodput_best(store, names)
    if not (rows.goodput < 1).any():
        check("goodput" not in data, "goodput: no figure when no failure model applies")
        return
    want = {}
    for (system, gpus), ((_, index), r) in best.items():
        want.setdefault(system, []).append([gpus, index, float(r.time_to_train_days),
                                            float(r.time_to_train_effective_days),
                                            float(r.goodput)])
    want = {s: sorted(v) for s, v in want.items()}
    check(data["goodput"]["series"] == want, f"goodput: {sum(map(len, want.values()))} "
          "points (best effective time per system and size) equal the store")
    check(all(p[3] >= p[2] for v in want.values() for p in v), "goodput: effective time "
          "at least the failure-free time")


def pool_expected(store, names):
    """The "Heterogeneous pool or one GPU type" section's rows, written apart from the report's
    code: per (model, system), the ok row with the least time_to_train_days (ties by index) of
    /results (else /top), when the rows hold both a pool (/systems pool.types > 0) and a system
    of one GPU type and the job has a token budget; each with its system's composition. None
    when the section must be absent."""
    root = clusterdse.attrs(store)
    top = clusterdse.load(store, "top")
    if not float(root.get("tokens", 0) or 0) > 0 or "cost_to_train" not in top.columns:
        return None
    systems = clusterdse.load(store, "systems")
    sys_names = [str(n) for n in systems.name]
    made_of = {}
    for name, pool in zip(sys_names, systems["pool"]):
        parts = [f"{int(pool[2][t])} {sys_names[int(pool[1][t])]}" for t in range(int(pool[0]))]
        made_of[name] = " + ".join(parts) if parts else None
    rows = clusterdse.load(store, "results" if "results" in names else "top")
    rows = rows[(rows.status == "ok") & (rows.time_to_train_days > 0)]
    best = {}
    for _, r in rows.iterrows():
        key = (str(r.model), str(r.system))
        cand = (float(r.time_to_train_days), int(r["index"]))
        if key not in best or cand < best[key][0]:
            best[key] = (cand, r)
    kinds = {made_of[s] is not None for _, s in best}
    if kinds != {True, False}:
        return None
    return best, made_of


def check_pool(data, store, names):
    """The pool figure: per model, each system's fastest row (system, index, GPUs, days, cost)
    as the store has them, every point labelled, the axis in the job's currency."""
    expected = pool_expected(store, names)
    if expected is None:
        check("pool_vs_homogeneous" not in data, "pool_vs_homogeneous: no figure without both "
              "a pool and a system of one GPU type (or without a token budget)")
        return
    best, _ = expected
    want = {}
    for (model, system), ((days, index), r) in sorted(best.items(), key=lambda kv: kv[1][0]):
        want.setdefault(model, []).append([system, index, int(r.gpus), days,
                                           float(r.cost_to_train)])
    fig = data.get("pool_vs_homogeneous")
    check(fig is not None and fig["series"] == want, f"pool_vs_homogeneous: "
          f"{sum(map(len, want.values()))} points (fastest per model and system) equal the store")
    if fig is None:
        return
    for model, points in want.items():
        check(len(fig["labelled"][model]) == len(points), f"pool_vs_homogeneous {model}: "
              f"every system labelled ({fig['dropped'][model]} left out)")
    money = os.environ.get("CDSE_CURRENCY", "USD")
    ylabels = [b[1] for b in fig["_labels"] if b[0].startswith("ylabel")]
    check(ylabels and all(y == f"cost to train ({money})" for y in ylabels),
          f"pool_vs_homogeneous: axis names the currency ({ylabels})")


def check_heatmap_empty(heat, store, root, pruned):
    """The empty cells of the heatmap say what the store tells: a store = "all" store has every
    configuration (empty = none feasible), a "feasible" one every feasible one (empty = none
    feasible, unless pruned), a "best" one only the best per group (empty = not stored)."""
    import h5py
    with h5py.File(store, "r") as f:  # the swept tp and pp values
        n_cells = len(f["space/tp"][()]) * len(f["space/pp"][()])
    empty = n_cells - len(heat["cells"])
    mode = root["store_mode"]
    kind = {"all": "no feasible", "feasible": "not stored" if pruned else "no feasible",
            "best": "not stored"}[mode]
    want = {kind: empty} if empty else {}
    check(heat["empty"] == want, f"heatmap ({mode} store): empty cells {want}")


def check_grid(data, store, names):
    """The design-grid sections against /top, computed here with plain loops."""
    top = clusterdse.load(store, "top")
    top = top[top.status == "ok"]
    hw = [c for c in ("peak_bf16_tflops", "peak_fp8_tflops", "hbm_gib", "hbm_bandwidth_gbs",
                      "gpus_per_node", "net0_bandwidth_gbs", "net0_latency_us", "net0_size",
                      "net1_bandwidth_gbs", "net1_latency_us", "net1_size", "tier_capacity_gib",
                      "tier_bandwidth_gbs", "gpu_price", "rental_price", "gpu_power_w")
          if c in top and any(len(set(g[c])) > 1 for _, g in top.groupby("system",
                                                                           observed=True))]
    want_grid = bool(hw)
    have_grid = any(k.startswith("sensitivity_") for k in data)
    check(have_grid == want_grid, f"design-grid sections {'present' if want_grid else 'absent'}")
    if not want_grid:
        return
    for model in set(top.model.astype(str)):
        part = top[top.model.astype(str) == model]
        best = {}
        for _, r in part.iterrows():
            key = (int(r.gpus),) + tuple(float(r[c]) for c in hw)
            best[key] = min(best.get(key, math.inf), float(r.time_to_train_days))
        fig = data[f"sensitivity_{model}"]["dimensions"]
        got = {d: (m, x) for d, m, x in fig}
        for k, dim in enumerate(hw):
            lo, hi = min(key[1 + k] for key in best), max(key[1 + k] for key in best)
            ratios = sorted(best[key] / best[key[:1 + k] + (hi,) + key[2 + k:]]
                            for key in best if key[1 + k] == lo and
                            key[:1 + k] + (hi,) + key[2 + k:] in best)
            median = float(np.median(ratios))
            check(dim in got and close(got[dim][0], median, 1e-12) and
                  close(got[dim][1], ratios[-1], 1e-12),
                  f"sensitivity {model} {dim}: median {median:.4f}x, max {ratios[-1]:.4f}x "
                  f"over {len(ratios)} pairs")


def run_fit(store):
    """The profile and the printed table of `clusterdse fit STORE`, run here."""
    import subprocess
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([os.environ["CLUSTERDSE"], "fit", store, "-o", f"{d}/fit.cfg"],
                             check=True, capture_output=True, text=True).stdout
        with open(f"{d}/fit.cfg") as f:
            profile = f.read()
    fits = {}
    level = None
    for line in profile.splitlines():
        m = re.match(r'\s*name = "(intra_node|inter_node)";', line)
        if m:
            level = {"intra_node": 0, "inter_node": 1}[m.group(1)]
        m = re.match(r"\s*(\w+) = \{ latency = ([^;]+); bandwidth = ([^;]+); \};", line)
        if m and level is not None:
            fits[(level, m.group(1))] = (float(m.group(2)), float(m.group(3)))
    medians = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) > 11 and f[0] in ("intra_node", "inter_node") and f[10].endswith("%"):
            medians[({"intra_node": 0, "inter_node": 1}[f[0]], f[1])] = float(f[10][:-1])
    return fits, medians


# The model `fit` fits, as `clusterdse fit --help` states it: ring allreduce 2(n-1)/n B/bw +
# 2(n-1) lat; allgather, reduce_scatter, alltoall (n-1)/n B/bw + (n-1) lat; sendrecv B/bw + lat.
def fit_time(coll, n, nbytes, lat, bw):
    if coll == "sendrecv":
        return lat + nbytes / (bw * 1e3)
    k = 2 if coll == "allreduce" else 1
    return k * (n - 1) * lat + k * (n - 1) / n * nbytes / (bw * 1e3)


def check_probes(data, store):
    probes = clusterdse.load(store, "probes")
    probes = probes[probes.level >= 0]
    fits, medians = run_fit(store)
    n = 0
    for collective, part in probes.groupby("collective"):
        fig = data[f"probe_{collective}"]
        for (shape, size), rows in part.groupby(["shape", "group_size"]):
            series = fig["series"][f"{shape}, {size} ranks"]
            want = sorted([int(b), float(w)] for b, w in zip(rows.bytes, rows.busbw_gbs))
            check(sorted(series["points"]) == want, f"probe {collective} {shape}: points")
            n += len(want)
            fit = fits.get((series["level"], collective))
            check(fit is not None and series.get("latency_us") == fit[0] and
                  series.get("bandwidth_gbs") == fit[1],
                  f"probe {collective} {shape}: the line is clusterdse fit's {fit}")
        # The drawn model has fit's own error: the median relative error of the model over the
        # points fit used (dtype float, t_median_us, per level) is the one fit prints.
        for level, rows in part[part.dtype == "float"].groupby("level"):
            key = (int(level), collective)
            if key not in fits or key not in medians:
                continue
            model = fit_time(collective, rows.group_size.to_numpy(), rows.bytes.to_numpy(float),
                             *fits[key])
            rel = float(np.median(np.abs(model / rows.t_median_us.to_numpy() - 1))) * 100
            check(abs(rel - medians[key]) <= 0.051, f"probe {collective} level {level}: median "
                  f"error of the drawn model {rel:.2f}% = fit's {medians[key]}%")
    check(n == len(probes), f"probes: {n} points plotted of {len(probes)} rows")
    print(f"    probe figures of {store}: {n} points, {len(fits)} fits of clusterdse fit")


def check_verify(data, store):
    df = clusterdse.load(store, "verify")
    got = sorted(p for pts in data["verify"]["series"].values() for p in pts)
    want = sorted([float(p), float(m)] for p, m in zip(df.predicted_run_us, df.measured_us))
    check(got == want and len(got) > 0, f"verify: {len(got)} points equal /verify")


def check_labels(data):
    """Every figure: a legend with entries, and no two texts of one kind (tick labels of one
    axis, point labels of one plot) overlapping (boxes from the renderer, in pixels)."""
    for name, fig in data.items():
        check(any(len(entries) for entries in fig.get("_legends", [])),
              f"{name}: has a legend ({fig.get('_legends')})")
        boxes = fig.get("_labels", [])
        by_kind = {}
        for kind, text, x0, y0, x1, y1 in boxes:
            by_kind.setdefault(kind, []).append((text, x0, y0, x1, y1))
        bad = []
        for kind, items in by_kind.items():
            if kind.startswith(("xlabel", "ylabel")):
                continue
            for a in range(len(items)):
                for b in range(a + 1, len(items)):
                    p, q = items[a], items[b]
                    if not (p[3] <= q[1] or q[3] <= p[1] or p[4] <= q[2] or q[4] <= p[2]):
                        bad.append((kind, p[0], q[0]))
        check(not bad, f"{name}: no overlapping labels among {len(boxes)} ({bad[:3]})")


def check_data(html_path, stores):
    with open(html_path, encoding="utf-8") as f:
        data = figure_data(f.read())
    check_labels(data)
    for store in stores:
        names = clusterdse.tables(store)
        if "counts" in names:
            check_sweep(data, store)
        if "probes" in names:
            check_probes(data, store)
        if "verify" in names:
            check_verify(data, store)


def expected_tables(store):
    """Table id -> rows of expected values, from the store."""
    out = {}
    names = clusterdse.tables(store)
    if "counts" in names:
        counts = clusterdse.load(store, "counts")
        out["tab-counts"] = [[n, int(c)] for n, c in zip(counts.name, counts["count"])]
        root = clusterdse.attrs(store)
        rows = clusterdse.load(store, "results" if "results" in names else "top")
        ok = rows[rows.status == "ok"]
        metric = {"time_to_train": ("time_to_train_days", 1), "mfu": ("mfu", -1),
                  "tokens_per_s": ("tokens_per_s", -1), "gpu_hours": ("gpu_hours", 1),
                  "time_per_iteration": ("time_per_iteration_s", 1),
                  "time_to_train_effective": ("time_to_train_effective_days", 1),
                  "goodput": ("goodput", -1)}[root["metric"]]
        top = ok.assign(k=metric[1] * ok[metric[0]]).sort_values(["k", "index"]).head(10)
        cols = ["index", "model", "system", "gpus", "tp", "pp", "dp", "cp", "ep", "vpp",
                "microbatch", "global_batch", "recompute", "zero", "precision",
                "time_per_iteration_s", "time_low_s", "time_high_s", "tokens_per_s", "mfu",
                "mem_total_gib", "mem_reserved_gib", "time_to_train_days",
                "time_to_train_days_low", "time_to_train_days_high", "cost_to_train"]
        cols = [c for c in cols if c in top.columns]  # a store made before the bands
        out["tab-top"] = (cols, [[r[c] for c in cols] for _, r in top.iterrows()])
        if "goodput" in rows.columns and float(root.get("tokens", 0) or 0) > 0:
            best, touched = goodput_best(store, names)
            if (touched.goodput < 1).any():
                cols = ["system", "gpus", "index", "tp", "pp", "dp", "zero",
                        "time_to_train_days", "time_to_train_effective_days", "goodput",
                        "mttf_hours", "checkpoint_gib", "checkpoint_interval_s",
                        "interruptions_expected", "checkpoint_flag"]
                out["tab-goodput"] = (cols, [[best[k][1][c] for c in cols]
                                             for k in sorted(best)])
    pool = pool_expected(store, names) if "counts" in names else None
    if pool is not None:
        best, made_of = pool
        cols = ["model", "system", "composition", "gpus", "index", "tp", "pp", "dp",
                "microbatch", "recompute", "pool_split", "time_to_train_days", "cost_to_train",
                "days_over_fastest"]
        fastest = {}
        for (model, _), ((days, _), _) in best.items():
            fastest[model] = min(fastest.get(model, math.inf), days)
        table = []
        for (model, system), ((days, _), r) in sorted(best.items(),
                                                      key=lambda kv: (kv[0][0], kv[1][0])):
            table.append([model, system, made_of[system] or "one type", int(r.gpus),
                          int(r["index"]), int(r.tp), int(r.pp), int(r.dp), int(r.microbatch),
                          str(r.recompute), str(r.pool_split), days, float(r.cost_to_train),
                          days / fastest[model]])
        out["tab-pool_vs_homogeneous"] = (cols, table)
    if "probes" in names:
        # The fit table: one row per level and collective, the profile of `clusterdse fit`.
        fits, _ = run_fit(store)
        out["tab-probe_fit"] = [[level, coll, lat, bw] for (level, coll), (lat, bw) in
                                sorted(fits.items(), key=lambda kv: kv[0][0])]
    if "verify" in names:
        df = clusterdse.load(store, "verify")
        cols = ["top_rank", "index", "system", "comm", "collective", "run_group_size",
                "run_bytes", "predicted_run_us", "measured_us", "ratio"]
        out["tab-verify"] = [[r[c] for c in cols] for _, r in df.iterrows()]
    return out


def same_cell(text, value, want):
    """The cell's exact value equals the store's, and its text is that value as shown (None:
    a derived value this check does not compare)."""
    if want is None:
        return True
    if isinstance(want, (float, np.floating)):
        return close(value, want) and math.isclose(float(text), float(want), rel_tol=5e-4)
    if isinstance(want, (int, np.integer)):
        return int(value) == int(want) and int(text) == int(want)
    return value == str(want) and text == str(want)


def browser(html_path, shot, stores):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("report_browser: SKIP: python3-selenium is not installed (scripts/setup.sh)")
        return 77
    chromium = shutil.which("chromium")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        print("report_browser: SKIP: chromium / chromium-driver not installed (scripts/setup.sh)")
        return 77
    profile = tempfile.mkdtemp(prefix="cdse-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1200,900",
                f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_bin), options=opts)
    try:
        driver.get("file://" + os.path.abspath(html_path))
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1200, height + 200)
        images = driver.execute_script(
            "return Array.from(document.querySelectorAll('figure img')).map(i => "
            "[i.closest('figure').id, i.complete, i.naturalWidth, i.naturalHeight, "
            "i.getBoundingClientRect().left, i.getBoundingClientRect().top, "
            "i.getBoundingClientRect().width, i.getBoundingClientRect().height])")
        driver.save_screenshot(shot)
        # One screenshot per section (figure or table), next to the page's, for a person to
        # look at: SHOT without .png + "_" + the element's id.
        sections = driver.find_elements("css selector", "figure, table.data")
        for element in sections:
            element.screenshot(f"{shot[:-4]}_{element.get_attribute('id')}.png")
        ids = [e.get_attribute("id") for e in sections]
        cells = driver.execute_script(
            "return Object.fromEntries(Array.from(document.querySelectorAll('table.data')).map("
            "t => [t.id, Array.from(t.querySelectorAll('tr')).slice(1).map(r => Array.from("
            "r.querySelectorAll('td')).map(c => [c.textContent, c.dataset.value]))]))")
        headers = driver.execute_script(
            "return Object.fromEntries(Array.from(document.querySelectorAll('table.data')).map("
            "t => [t.id, Array.from(t.querySelectorAll('th')).map(h => h.textContent)]))")
        meta = driver.find_element("id", "meta").text
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    check_images(images, shot)
    for fig_id in ids:
        if fig_id.startswith("fig-sensitivity_"):
            model = fig_id[len("fig-sensitivity_"):]
            for table in ("grid_spread", "grid_sensitivity", "grid_optimal"):
                check(f"tab-{table}_{model}" in ids, f"{table}_{model}: the design grid's table "
                      "is on the page")
    print(f"    {len(ids)} sections, each screenshot as {shot[:-4]}_<id>.png")
    check(all(k in meta for k in ("report tool version", "report written")), "page states "
          "the tool version and when the report was written")
    for store in stores:
        for table, rows in expected_tables(store).items():
            got = cells.get(table)
            if isinstance(rows, tuple):  # (columns, rows): matched by the page's headers
                columns, rows = rows
                names = [h.split(" (")[0] for h in headers.get(table, [])]
                check(set(columns) <= set(names), f"{table}: columns {columns} shown")
                if got is not None and set(columns) <= set(names):
                    got = [[row[names.index(c)] for c in columns] for row in got]
            check(got is not None and len(got) == len(rows), f"{table}: {len(rows)} rows")
            if got is None:
                continue
            bad = [(g, w) for grow, wrow in zip(got, rows) for g, w in zip(grow, wrow)
                   if not same_cell(g[0], g[1], w)]
            check(not bad, f"{table}: every cell equals the store ({bad[:3]})")
            print(f"    {table}: {len(rows)} rows x {len(rows[0]) if rows else 0} cells "
                  f"equal the store")
    return 0


def check_images(images, shot):
    from PIL import Image
    check(len(images) > 0, "the page has figures")
    picture = Image.open(shot).convert("RGB")
    scale = picture.width / 1200.0
    for fig_id, complete, nw, nh, left, top, width, height in images:
        check(complete and nw > 0 and nh > 0, f"{fig_id}: image loaded ({nw}x{nh})")
        box = [int(v * scale) for v in (left, top, left + width, top + height)]
        check(width > 100 and height > 100, f"{fig_id}: box {width:.0f}x{height:.0f} on screen")
        crop = np.asarray(picture.crop(box))
        inked = float((crop.min(axis=2) < 200).mean()) if crop.size else 0.0
        check(inked > 0.01, f"{fig_id}: {inked:.1%} of its pixels drawn (> 1%)")
        print(f"    {fig_id}: loaded {nw}x{nh}, shown {width:.0f}x{height:.0f}, "
              f"{inked:.1%} pixels drawn")


def main(argv):
    mode = argv[1]
    if mode == "data":
        check_data(argv[2], argv[3:])
        rc = 0
    else:
        rc = browser(argv[2], argv[3], argv[4:])
    if rc == 0 and failures:
        print(f"report_check: {len(failures)} failure(s)")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
