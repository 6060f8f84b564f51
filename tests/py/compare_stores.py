"""Checks that two clusterdse stores hold the same results (run with /usr/bin/python3).

    compare_stores.py A.h5 B.h5

"Identical" (docs/store.md): the same /results rows, compared byte for byte after sorting by
index (the order of rows depends on which rank finished first); the same /top, /pareto and
/pareto_cost, in order; the same /counts. Also checks each store on its own: /progress covers [0, space_size)
exactly once, indices in /results are distinct, and the number of rows agrees with /counts and
the store mode. Exit 0 when identical, 1 with the first difference otherwise.
"""
import sys

import h5py
import numpy as np


def fail(msg):
    print("compare_stores: " + msg)
    sys.exit(1)


def check_one(path, f):
    size = int(f.attrs["space_size"])
    ranges = sorted((int(r["begin"]), int(r["end"])) for r in f["progress"][:])
    pos = 0
    for begin, end in ranges:
        if begin != pos:
            fail(f"{path}: /progress: expected a range from {pos}, found [{begin}, {end})")
        pos = end
    if pos != size:
        fail(f"{path}: /progress ends at {pos}, the space has {size} configurations")
    counts = {r["name"].decode(): int(r["count"]) for r in f["counts"][:]}
    if counts["evaluated"] != size:
        fail(f"{path}: /counts evaluated = {counts['evaluated']}, space size {size}")
    statuses = sum(v for k, v in counts.items() if k not in ("evaluated", "feasible"))
    if statuses != size or counts["ok"] != counts["feasible"]:
        fail(f"{path}: /counts by status sum to {statuses} (ok {counts['ok']}, "
             f"feasible {counts['feasible']}), space size {size}")
    mode = f.attrs["store_mode"]
    if isinstance(mode, bytes):  # fixed-length strings (stores since issue 15) read as bytes
        mode = mode.decode()
    if mode == "best":
        if "results" in f:
            fail(f"{path}: store = best but /results exists")
        return counts
    rows = f["results"][:]
    want = size if mode == "all" else counts["feasible"]
    if len(rows) != want:
        fail(f"{path}: /results has {len(rows)} rows, expected {want} (store = {mode})")
    if len(np.unique(rows["index"])) != len(rows):
        fail(f"{path}: /results has repeated indices")
    if int(f["results"].attrs["rows_committed"]) != len(rows):
        fail(f"{path}: rows_committed {int(f['results'].attrs['rows_committed'])} != {len(rows)}")
    if int(f.attrs["complete"]) != 1:
        fail(f"{path}: not marked complete")
    return counts


def main():
    a_path, b_path = sys.argv[1], sys.argv[2]
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        ca, cb = check_one(a_path, a), check_one(b_path, b)
        if ca != cb:
            fail(f"/counts differ:\n  {a_path}: {ca}\n  {b_path}: {cb}")
        best_rows = {}
        for name in ("top", "pareto", "pareto_cost"):
            if name == "pareto_cost" and (name not in a or name not in b):
                if (name in a) != (name in b):
                    fail(f"/{name} exists in one store only")
                continue  # stores made before /pareto_cost existed
            ta, tb = a[name][:], b[name][:]
            if ta.dtype != tb.dtype or ta.tobytes() != tb.tobytes():
                fail(f"/{name} differs: indices {list(ta['index'])} vs {list(tb['index'])}")
            best_rows[name] = len(ta)
        if ("results" in a) != ("results" in b):
            fail("/results exists in one store only")
        if "results" in a:
            ra, rb = np.sort(a["results"][:], order="index"), np.sort(b["results"][:], order="index")
            if ra.dtype != rb.dtype:
                fail("/results column types differ")
            if ra.tobytes() != rb.tobytes():
                diff = np.nonzero(ra != rb)[0] if len(ra) == len(rb) else []
                where = f"first differing row (after sorting by index): {diff[0]}" if len(diff) else \
                        f"{len(ra)} vs {len(rb)} rows"
                fail(f"/results differ: {where}")
            nrows = len(ra)
        else:
            nrows = 0
    print(f"compare_stores: identical: {nrows} rows, /top {best_rows['top']} rows, /pareto "
          f"{best_rows['pareto']} rows, /pareto_cost {best_rows.get('pareto_cost', 0)} rows, "
          f"counts {ca}")


main()
