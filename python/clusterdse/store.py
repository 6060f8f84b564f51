"""load(): one table of a clusterdse store as a pandas DataFrame with names decoded.

The layout is described in docs/store.md (sweep stores) and docs/calibration.md (probe stores,
/verify). Enumerated columns (model, system, recompute, precision, offload, status, pool_split,
placement) are HDF5 enumerations over int8: they come back as pandas categoricals whose
categories are every name of the enumeration in code order (so a status that never occurred is
still a category). Booleans (sequence_parallel, flash_attention, tp_comm_overlap) are numpy bool.
Fixed-length and variable-length strings (probe and verify names, /counts) come back as str.
"""
import contextlib
import signal

import h5py
import numpy as np
import pandas as pd

# The tables load() knows, and the stores that hold them.
TABLES = ("results", "top", "pareto", "pareto_cost", "counts", "progress", "probes",
          "reduce_local", "verify", "models", "systems", "stacks")


class StoreError(LookupError):
    """A store or one of its tables cannot be read as asked (the message says why)."""


class StoreDamaged(RuntimeError):
    """An HDF5 file that HDF5 cannot read as written (damaged on disk: a bad block, a partial
    copy, bytes overwritten); the message names the store and what HDF5 said."""


# The HDF5 format signature, at offset 0, 512, 1024, 2048, ... (HDF5 File Format
# Specification, "Format Signature"): a file without it is no HDF5 file at all, one with it
# that HDF5 cannot read is damaged (as src/sweep/store.c tells them apart).
_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _has_signature(path):
    try:
        with open(path, "rb") as f:
            offset = 0
            while offset <= 1 << 30:
                f.seek(offset)
                head = f.read(len(_SIGNATURE))
                if len(head) < len(_SIGNATURE):
                    return False
                if head == _SIGNATURE:
                    return True
                offset = offset * 2 if offset else 512
    except OSError:
        return False
    return False


def _reason(error):
    """HDF5's words from an h5py exception, on one line."""
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    text = " ".join(text.split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


# Seconds one use of a store (an open and the read of one table) may take, or None (the
# default) for no limit. A program that sets it (clusterdse report) ends when a read lasts
# longer, by SIGALRM's default action: HDF5 can loop forever on a damaged file (docs/store.md,
# Damaged stores), below anything Python can interrupt.
read_seconds = None


@contextlib.contextmanager
def _store(store):
    """The store opened read-only, within read_seconds. Raises StoreError (bad input) when it
    is not an HDF5 file, and StoreDamaged for what h5py raises on an HDF5 file it cannot open
    or read: a file clusterdse wrote is read as it was written, so a failure there is damage."""
    if read_seconds:
        signal.alarm(read_seconds)
    try:
        try:
            f = h5py.File(store, "r")
        except Exception as e:
            reason = str(e).split("(")[-1].rstrip(")") if "(" in str(e) else _reason(e)
            if _has_signature(store):
                raise StoreDamaged(f"{store}: a damaged store: HDF5 cannot open it: "
                                   f"{reason}") from None
            raise StoreError(f"{store}: cannot open as an HDF5 store: {reason}") from None
        try:
            with f:
                yield f
        except (StoreError, StoreDamaged):
            raise
        except Exception as e:  # h5py raises OSError, RuntimeError, KeyError, ValueError, ...
            raise StoreDamaged(f"{store}: a damaged store: {_reason(e)}") from None
    finally:
        if read_seconds:
            signal.alarm(0)


def _enum_column(codes, mapping):
    """A categorical of the names of `mapping` (name -> code) for int codes."""
    by_code = sorted(mapping.items(), key=lambda item: item[1])
    names = [name for name, _ in by_code]
    code_list = [code for _, code in by_code]
    if code_list == list(range(len(code_list))):
        return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64), categories=names)
    lookup = dict((code, name) for name, code in mapping.items())
    return pd.Categorical([lookup.get(int(c)) for c in codes], categories=names)


def _decode(array):
    """A DataFrame of a compound numpy array: enums as categoricals, strings as str."""
    columns = {}
    for name in array.dtype.names:
        field = array.dtype[name]
        values = array[name]
        mapping = h5py.check_enum_dtype(field)
        if field.kind == "b":
            columns[name] = values.astype(bool)
        elif mapping is not None:
            columns[name] = _enum_column(values, mapping)
        elif field.kind == "S" or h5py.check_string_dtype(field) is not None:
            columns[name] = [v.decode() if isinstance(v, bytes) else str(v) for v in values]
        elif field.kind == "O":
            columns[name] = [v.decode() if isinstance(v, bytes) else v for v in values]
        elif field.shape or field.kind == "V":
            columns[name] = list(values)  # arrays and nested compounds (of /systems), as is
        else:
            columns[name] = values
    return pd.DataFrame(columns)


def _available(f):
    return [t for t in TABLES if t in f and isinstance(f[t], h5py.Dataset)]


def _missing(path, f, table):
    here = ", ".join(_available(f)) or "none"
    if table == "results" and f.attrs.get("store_mode") in ("best", b"best"):
        return StoreError(f"{path}: a store = \"best\" store keeps no /results (only the best per "
                          f"group and the Pareto front); tables here: {here}")
    return StoreError(f"{path}: no table /{table}; tables here: {here}")


def load(store, table="results"):
    """The table `table` of the store at path `store` as a DataFrame, names decoded.

    Of /results only the committed rows are returned (attribute rows_committed): rows past it
    were written by a commit that did not complete and are not results. Raises StoreError when
    the table is not in the store (e.g. /results of a store = "best" store), naming the tables
    that are, and StoreDamaged when HDF5 cannot read what the store holds."""
    if table not in TABLES:
        raise StoreError(f"unknown table '{table}'; allowed: {', '.join(TABLES)}")
    with _store(store) as f:
        if table not in f:
            raise _missing(store, f, table)
        data = f[table]
        n = data.shape[0] if data.shape else 1
        if "rows_committed" in data.attrs:
            n = min(n, int(data.attrs["rows_committed"]))
        rows = data[:n] if data.shape else np.asarray([data[()]])
        return _decode(rows)


def attrs(store, table=None):
    """The attributes of the store's root (or of `table`) as a dict, strings as str."""
    with _store(store) as f:
        node = f[table] if table else f
        out = {}
        for key, value in node.attrs.items():
            if isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, np.generic):
                value = value.item()
            out[key] = value
        return out


def tables(store):
    """The names of the tables load() can read from the store."""
    with _store(store) as f:
        return _available(f)
