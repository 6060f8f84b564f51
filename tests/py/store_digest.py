"""Digest of a clusterdse store's results, for checking that a change leaves results unchanged.

    store_digest.py STORE.h5 [FIELDS_FROM.txt]

Prints one line per table: `name rows sha256`, over /results sorted by index, /top and /pareto
in stored order, and /counts. Only the columns named in the reference's `# columns` line (or, without
a reference, every column) enter the digest, each column's bytes in little-endian order, so that a
later change that adds columns keeps the digest of the old ones. Run with /usr/bin/python3.
"""
import hashlib
import sys

import h5py
import numpy as np


def table_digest(data, columns):
    h = hashlib.sha256()
    for name in columns:
        col = np.ascontiguousarray(data[name])
        if col.dtype.kind in "iuf" and col.dtype.byteorder == ">":
            col = col.byteswap()
        h.update(name.encode())
        h.update(col.tobytes())
    return h.hexdigest()


def main():
    path = sys.argv[1]
    columns = None
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            for line in f:
                if line.startswith("# columns "):
                    columns = line.split()[2:]
    with h5py.File(path, "r") as f:
        names = list(f["results"].dtype.names) if "results" in f else list(f["top"].dtype.names)
        cols = [c for c in (columns or names)]
        missing = [c for c in cols if c not in names]
        if missing:
            print("store_digest: columns missing from the store: " + " ".join(missing))
            sys.exit(1)
        print("# columns " + " ".join(cols))
        for table in ("results", "top", "pareto"):
            if table not in f:
                continue
            data = f[table][:]
            if table == "results":
                committed = int(f[table].attrs.get("rows_committed", len(data)))
                data = data[:committed]
                data = data[np.argsort(data["index"], kind="stable")]
            print(f"{table} {len(data)} {table_digest(data, cols)}")
        counts = f["counts"][:]
        text = ";".join(f"{r['name'].decode()}={int(r['count'])}" for r in counts)
        print(f"counts {len(counts)} {hashlib.sha256(text.encode()).hexdigest()}")


if __name__ == "__main__":
    main()
