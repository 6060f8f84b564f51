"""Reading a clusterdse store with h5py + pandas (run with /usr/bin/python3).

    from cdse_store import read_table
    df = read_table("results/quickstart.h5")          # /results, names instead of codes
    top = read_table("results/quickstart.h5", "top")

The columns model, system, recompute, precision, offload and status are HDF5 enumerations
(int8 codes with names); read_table turns them into pandas categoricals of the names.
sequence_parallel and flash_attention are HDF5 booleans (h5py reads them as numpy bool).
"""
import h5py
import pandas as pd


def decode_enums(df, dtype):
    """Replaces the int codes of the enumeration columns of `dtype` by their names."""
    for name in dtype.names:
        mapping = h5py.check_enum_dtype(dtype[name])
        if mapping is None or dtype[name].kind == "b":
            continue
        names = {code: label for label, code in mapping.items()}
        df[name] = pd.Categorical(df[name].map(names))
    return df


def read_table(path, dataset="results"):
    """A DataFrame of /results, /top or /pareto with enumerations decoded. Of /results only the
    committed rows (attribute rows_committed): rows past it were written by a commit that did not
    complete (a failed write or a kill) and are not results."""
    with h5py.File(path, "r") as f:
        data = f[dataset]
        n = len(data)
        if dataset == "results" and "rows_committed" in data.attrs:
            n = min(n, int(data.attrs["rows_committed"]))
        return decode_enums(pd.DataFrame(data[:n]), data.dtype)


def read_counts(path):
    """/counts as a dict: evaluated, feasible and every status name -> count."""
    with h5py.File(path, "r") as f:
        return {row["name"].decode(): int(row["count"]) for row in f["counts"][:]}


def read_progress(path):
    """/progress as a list of (begin, end) index ranges, sorted."""
    with h5py.File(path, "r") as f:
        return sorted((int(r["begin"]), int(r["end"])) for r in f["progress"][:])
