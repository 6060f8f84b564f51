"""load(): one table of a clusterdse store as a pandas DataFrame with names decoded.

The layout is described in docs/store.md (sweep stores) and docs/calibration.md (probe stores,
/verify). Enumerated columns (model, system, recompute, precision, offload, status, pool_split,
placement, ...) are HDF5 enumerations over int8: they come back as pandas categoricals whose
categories are every name of the enumeration in code order (so a status that never occurred is
still a category). Booleans (sequence_parallel, flash_attention, tp_comm_overlap) are numpy bool.
Fixed-length and variable-length strings (probe and verify names, /counts) come back as str.

`columns` selects the columns to decode (the others are never converted nor kept), and
`chunks()` hands a table over in pieces of at most `rows` rows, so that a store of millions of
rows can be reduced without holding it whole. /results is read chunk by chunk either way: its
chunks (written by src/sweep/store.c with H5Dwrite_chunk: HDF5's shuffle filter, then deflate)
are read raw and inflated here, and only the bytes of the selected columns are copied out;
any other layout is read through h5py.
"""
import concurrent.futures
import contextlib
import errno
import os
import signal
import warnings
import zlib

import h5py
import numpy as np
import pandas as pd

# The columns most reads of /results want: what identifies a configuration's main choices, its
# status and the headline metrics (70 bytes a row in memory, 96 MB for the quick start's
# 1,366,656 rows): load(path, columns=clusterdse.USUAL_COLUMNS).
USUAL_COLUMNS = ("index", "model", "system", "gpus", "tp", "pp", "dp", "microbatch",
                 "recompute", "zero", "precision", "status", "time_per_iteration_s", "mfu",
                 "mem_total_gib", "time_to_train_days")

# The tables load() knows, and the stores that hold them.
TABLES = ("results", "top", "pareto", "pareto_cost", "counts", "progress", "probes",
          "reduce_local", "verify", "models", "systems", "stacks")


class Error(Exception):
    """What the package raises about a store (StoreError or StoreDamaged); a missing file is
    FileNotFoundError, as for open()."""


class StoreError(Error, LookupError):
    """A store or one of its tables cannot be read as asked (the message says why)."""


class StoreDamaged(Error, RuntimeError):
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
    if not os.path.exists(store):
        raise FileNotFoundError(errno.ENOENT, "no such store", os.fspath(store))
    if os.path.isdir(store):
        raise IsADirectoryError(errno.EISDIR, "a directory, not a store", os.fspath(store))
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


def _decode_column(field, values):
    """One column as pandas takes it: enums as categoricals, booleans as bool, strings as str;
    arrays and nested compounds (of /systems) as they are."""
    mapping = h5py.check_enum_dtype(field)
    if field.kind == "b":
        return values.astype(bool, copy=False)
    if mapping is not None:
        return _enum_column(values, mapping)
    if field.kind == "S" or h5py.check_string_dtype(field) is not None:
        return [v.decode() if isinstance(v, bytes) else str(v) for v in values]
    if field.kind == "O":
        return [v.decode() if isinstance(v, bytes) else v for v in values]
    if field.shape or field.kind == "V":
        return list(values)
    return values


def _frame(dtype, columns):
    """A DataFrame of the raw columns (name -> values as read), decoded, in the order given.
    Columns are added one at a time and dropped from `columns` as they go in, so that the
    largest transient is one column, not a second copy of the table."""
    names = list(columns)
    n = len(columns[names[0]]) if names else 0
    frame = pd.DataFrame(index=pd.RangeIndex(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.PerformanceWarning)  # one block per column
        for name in names:
            frame[name] = _decode_column(dtype[name], columns.pop(name))
    return frame


def _selected(path, table, data, columns):
    """The field names to read, in the order asked (every field when columns is None)."""
    fields = list(data.dtype.names or ())
    if columns is None:
        return fields
    if isinstance(columns, str):
        columns = [columns]
    columns = list(columns)
    unknown = [c for c in columns if c not in fields]
    if unknown:
        raise StoreError(f"{path}: /{table} has no column {', '.join(map(repr, unknown))}; "
                         f"columns: {', '.join(fields)}")
    if len(set(columns)) != len(columns):
        raise StoreError(f"columns: {columns} names a column twice")
    return columns


# HDF5 filter identifiers (H5Zpublic.h): the pipeline src/sweep/store.c writes /results with.
_FILTER_DEFLATE = 1
_FILTER_SHUFFLE = 2
# deflate's largest compression ratio (zlib's technical details: 1032:1), as the command line
# bounds a compressed table's claimed rows by the file's size (docs/store.md, Extents).
_DEFLATE_MAX_RATIO = 1032


class _Rows:
    """The committed rows of one table and how to read a block of them: raw chunks inflated
    here when the table is chunked with deflate (and shuffle) and the selected fields are plain
    little-endian numbers, else h5py's reads."""

    def __init__(self, path, table, data, names):
        self.path, self.table, self.data, self.names = path, table, data, names
        n = data.shape[0] if data.shape else 1
        if "rows_committed" in data.attrs:
            n = min(n, int(data.attrs["rows_committed"]))
        self.n = n
        self.chunk = data.chunks[0] if data.chunks and len(data.shape) == 1 else 0
        self.shuffled = self._raw_layout()
        limit = os.path.getsize(path) * _DEFLATE_MAX_RATIO + max(self.chunk, 1) * data.dtype.itemsize
        if n * data.dtype.itemsize > limit:
            raise StoreDamaged(f"{path}: a damaged store: /{table} claims {n} rows, more than "
                               f"the file can hold")

    def _raw_layout(self):
        """True (shuffle + deflate) or False (deflate) when chunks are inflated here, else
        None."""
        data = self.data
        if not self.chunk or data.dtype.names is None or np.little_endian is False:
            return None
        for name in self.names:
            field = data.dtype[name]
            if field.kind not in "iufb" or field.shape or field.byteorder == ">":
                return None
        plist = data.id.get_create_plist()
        codes = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
        if codes == [_FILTER_SHUFFLE, _FILTER_DEFLATE]:
            return True
        if codes == [_FILTER_DEFLATE]:
            return False
        return None

    def blocks(self, rows):
        """(start, stop) of blocks of about `rows` rows, aligned to chunks."""
        step = max(int(rows), 1)
        if self.chunk:
            step = max(self.chunk, step // self.chunk * self.chunk)
        return [(a, min(a + step, self.n)) for a in range(0, self.n, step)]

    def empty(self, n):
        """name -> an uninitialised array of n rows of each selected column."""
        return {name: np.empty(n, np.dtype(self.data.dtype[name].str)) for name in self.names}

    def read(self, start, stop):
        """name -> numpy array of rows [start, stop)."""
        if self.shuffled is None:
            return self._h5py(start, stop)
        out = self.empty(stop - start)
        self.read_into(start, stop, out, 0)
        return out

    def read_into(self, start, stop, out, at):
        """Copies rows [start, stop) into out[name][at:] (arrays of self.empty)."""
        starts = list(range(start, stop, self.chunk))
        raws = [self._raw(a) for a in starts]  # HDF5 calls stay in this thread
        # zlib releases the GIL while it inflates, numpy while it copies: the chunks of a block
        # are inflated and copied out in parallel, each into its own rows of `out`.
        jobs = [(a, min(a + self.chunk, stop), raw, out, at + a - start)
                for a, raw in zip(starts, raws) if raw is not None]
        for done in _pool().map(self._unpack, jobs):
            if done is not None:
                raise done
        for a, raw in zip(starts, raws):
            if raw is None:
                b = min(a + self.chunk, stop)
                for name, values in self._h5py(a, b).items():
                    out[name][at + a - start:at + b - start] = values

    def _h5py(self, start, stop):
        data = self.data
        if not data.shape:
            rows = np.asarray([data[()]])
        elif self.names == list(data.dtype.names or ()):
            rows = data[start:stop]
        else:
            rows = data.fields(self.names)[start:stop]
            if rows.dtype.names is None:  # one field: h5py returns its values
                return {self.names[0]: rows}
        return {name: rows[name] for name in self.names}

    def _raw(self, start):
        """The stored bytes of the chunk that starts at `start`, or None when it is not stored
        as written (not allocated, a filter skipped): h5py's read then decides."""
        try:
            mask, raw = self.data.id.read_direct_chunk((start,))
        except Exception:
            return None
        return raw if mask == 0 else None

    def _unpack(self, job):
        """Inflates one chunk and copies its rows of the selected columns into `out` (a
        worker's job); returns the StoreDamaged to raise, or None."""
        start, stop, raw, out, at = job
        size = self.data.dtype.itemsize
        try:
            # bufsize: the whole chunk in one allocation, not a buffer grown by steps
            plain = zlib.decompress(raw, bufsize=self.chunk * size)
        except zlib.error as e:
            return StoreDamaged(f"{self.path}: a damaged store: /{self.table} rows {start}-"
                                f"{start + self.chunk - 1}: deflate: {e}")
        if len(plain) != self.chunk * size:
            return StoreDamaged(f"{self.path}: a damaged store: /{self.table} rows {start}-"
                                f"{start + self.chunk - 1}: {len(plain)} bytes inflated, "
                                f"{self.chunk * size} expected")
        raw_bytes = np.frombuffer(plain, np.uint8)
        # Shuffled: byte j of every record together (HDF5's shuffle filter), so one field is a
        # few rows of this matrix; unshuffled: records one after the other.
        if self.shuffled:
            matrix = raw_bytes.reshape(size, self.chunk)
        else:
            matrix = raw_bytes.reshape(self.chunk, size).T
        k = stop - start
        for name in self.names:
            dtype, offset = self.data.dtype.fields[name][:2]
            # the field's bytes, transposed straight into its rows of the column
            dest = out[name][at:at + k].view(np.uint8).reshape(k, dtype.itemsize)
            dest[...] = matrix[offset:offset + dtype.itemsize, :k].T
        return None


_threads = None


def _pool():
    """Threads that inflate chunks (one per core, at most 4), made on first use."""
    global _threads
    if _threads is None:
        _threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="cdse-inflate")
    return _threads


def _available(f):
    return [t for t in TABLES if t in f and isinstance(f[t], h5py.Dataset)]


def _missing(path, f, table):
    here = ", ".join(_available(f)) or "none"
    if table == "results" and f.attrs.get("store_mode") in ("best", b"best"):
        return StoreError(f"{path}: a store = \"best\" store keeps no /results (only the best per "
                          f"group and the Pareto front); tables here: {here}")
    return StoreError(f"{path}: no table /{table}; tables here: {here}")


def _table(f, store, table):
    if table not in TABLES:
        raise StoreError(f"unknown table '{table}'; allowed: {', '.join(TABLES)}")
    if table not in f:
        raise _missing(store, f, table)
    return f[table]


# Rows read in one block by load() and by chunks() by default: 64 chunks of /results (the
# sweep's 1,024-row chunks), about 33 MB of records of 511 bytes.
BLOCK_ROWS = 1 << 16


def load(store, table="results", columns=None):
    """The table `table` of the store at path `store` as a DataFrame, names decoded.

    columns: the columns to read (a list of names, or one name), in that order; None for all.
    A column that the table does not have is a StoreError that lists those it has.

    Of /results only the committed rows are returned (attribute rows_committed): rows past it
    were written by a commit that did not complete and are not results. Raises
    FileNotFoundError when there is no file at `store`, StoreError when the file is not a store
    or the table is not in it (e.g. /results of a store = "best" store), naming the tables that
    are, and StoreDamaged when the store's bytes are not what was written."""
    with _store(store) as f:
        data = _table(f, store, table)
        names = _selected(store, table, data, columns)
        rows = _Rows(store, table, data, names)
        if rows.shuffled is None and not data.shape:
            return _frame(data.dtype, rows.read(0, 1))
        if rows.shuffled is not None:  # each block straight into the whole columns
            raw = rows.empty(rows.n)
            for a, b in rows.blocks(BLOCK_ROWS):
                rows.read_into(a, b, raw, a)
            return _frame(data.dtype, raw)
        raw = {}
        for a, b in rows.blocks(BLOCK_ROWS):
            block = rows.read(a, b)
            for name in names:
                values = block[name]
                if name not in raw:
                    raw[name] = [None] * rows.n if values.dtype.kind == "O" else \
                        np.empty((rows.n,) + values.shape[1:], values.dtype)
                raw[name][a:b] = values
        if not raw:
            raw = {name: np.empty(0, np.dtype(data.dtype[name].str)
                                  if data.dtype[name].kind != "O" else object) for name in names}
        return _frame(data.dtype, raw)


def chunks(store, table="results", columns=None, rows=BLOCK_ROWS):
    """The table in pieces: DataFrames of about `rows` consecutive rows each (decoded as by
    load(), with the same `columns`), so that a table larger than memory can be filtered or
    reduced piece by piece:

        best = min((c.time_to_train_days[c.status == "ok"].min()
                    for c in clusterdse.chunks(path, columns=["status", "time_to_train_days"])))

    The store stays open while the pieces are being taken."""
    with _store(store) as f:
        data = _table(f, store, table)
        names = _selected(store, table, data, columns)
        reader = _Rows(store, table, data, names)
        for a, b in reader.blocks(rows):
            piece = _frame(data.dtype, reader.read(a, b))
            piece.index = pd.RangeIndex(a, b)
            yield piece


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
