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
            if n not in ("evaluated", "feasible", "ok") and c > 0}
    check(data["failures"]["counts"] == want, f"failures: {want}")
    for name in ("time_breakdown", "memory"):
        idx = data[name]["index"]
        by_index = ok.set_index("index")
        for part, values in data[name]["parts"].items():
            want = [float(by_index.loc[i, part]) for i in idx]
            check(values == want, f"{name}: {part} of {len(idx)} configurations")
    systems = clusterdse.load(store, "systems").set_index("name")["hbm_gib"]
    want = [float(systems[str(ok.set_index("index").loc[i, "system"])])
            for i in data["memory"]["index"]]
    check(data["memory"]["capacity_gib"] == want, "memory: HBM capacity per configuration")
    print(f"    sweep figures of {store}: pareto, pareto_cost, best_vs_size, heatmap, breakdowns, "
          "failures")


def check_probes(data, store):
    probes = clusterdse.load(store, "probes")
    probes = probes[probes.level >= 0]
    n = 0
    for collective, part in probes.groupby("collective"):
        fig = data[f"probe_{collective}"]
        for (shape, size), rows in part.groupby(["shape", "group_size"]):
            series = fig["series"][f"{shape}, {size} ranks"]
            want = sorted([int(b), float(w)] for b, w in zip(rows.bytes, rows.busbw_gbs))
            check(sorted(series["points"]) == want, f"probe {collective} {shape}: points")
            n += len(want)
    check(n == len(probes), f"probes: {n} points plotted of {len(probes)} rows")
    # The fit against a hand calculation: t = 2 us + bytes / (0.1 GB/s) = 2 + 0.01 * bytes
    # through three exact points; least squares returns latency 2 us, bandwidth 0.1 GB/s.
    from clusterdse.figures import fit_line
    a, b = fit_line([1000, 2000, 4000], [12.0, 22.0, 42.0])
    check(close(a, 2.0, 1e-9) and close(1e-3 / b, 0.1, 1e-9), f"fit_line exact: {a}, {1e-3 / b}")
    print(f"    probe figures of {store}: {n} points")


def check_verify(data, store):
    df = clusterdse.load(store, "verify")
    got = sorted(p for pts in data["verify"]["series"].values() for p in pts)
    want = sorted([float(p), float(m)] for p, m in zip(df.predicted_run_us, df.measured_us))
    check(got == want and len(got) > 0, f"verify: {len(got)} points equal /verify")


def check_data(html_path, stores):
    with open(html_path, encoding="utf-8") as f:
        data = figure_data(f.read())
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
                  "time_per_iteration": ("time_per_iteration_s", 1)}[root["metric"]]
        top = ok.assign(k=metric[1] * ok[metric[0]]).sort_values(["k", "index"]).head(10)
        cols = ["index", "model", "system", "gpus", "tp", "pp", "dp", "cp", "ep", "vpp",
                "microbatch", "global_batch", "recompute", "zero", "precision",
                "time_per_iteration_s", "time_low_s", "time_high_s", "tokens_per_s", "mfu",
                "mem_total_gib", "mem_reserved_gib", "time_to_train_days",
                "time_to_train_days_low", "time_to_train_days_high"]
        cols = [c for c in cols if c in top.columns]
        out["tab-top"] = [[r[c] for c in cols] for _, r in top.iterrows()]
    if "probes" in names:
        # The fit table: one row per (collective, shape, group size) with its number of
        # /probes rows; the fitted values are checked by report_data's hand calculation.
        probes = clusterdse.load(store, "probes")
        probes = probes[probes.level >= 0]
        out["tab-probe_fit"] = [
            [c, s, int(n), len(rows), None, None]
            for c, part in probes.groupby("collective", sort=False)
            for (s, n), rows in part.groupby(["shape", "group_size"], sort=False)]
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
        cells = driver.execute_script(
            "return Object.fromEntries(Array.from(document.querySelectorAll('table.data')).map("
            "t => [t.id, Array.from(t.querySelectorAll('tr')).slice(1).map(r => Array.from("
            "r.querySelectorAll('td')).map(c => [c.textContent, c.dataset.value]))]))")
        meta = driver.find_element("id", "meta").text
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    check_images(images, shot)
    check(all(k in meta for k in ("report tool version", "report written")), "page states "
          "the tool version and when the report was written")
    for store in stores:
        for table, rows in expected_tables(store).items():
            got = cells.get(table)
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
