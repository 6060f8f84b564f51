"""Tests of the store reader (clusterdse.load, chunks) on a real sweep store and on HDF5 files
made here; run by tests/sh/python_package.sh with the interpreter of a venv the package was
pip-installed into (and by tests/sh/report_data.sh from the source tree):

    CDSE_STORE=ALL.h5 [CDSE_PROBES=P.h5] [CDSE_INSTALLED=VENV] python test_store.py -v

ALL.h5 is a sweep of tests/jobs/report.cfg with store = "all" (3,456 rows, 4 chunks of /results).
Expected values come from h5py's own reads of the same datasets, decoded here, not from load().
"""
import errno
import os
import shutil
import sys
import tempfile
import unittest

import h5py
import numpy as np
import pandas as pd

import clusterdse

STORE = os.environ.get("CDSE_STORE", "")
PROBES = os.environ.get("CDSE_PROBES", "")


def reference(path, table):
    """The committed rows of `table` as h5py reads them (the structured array)."""
    with h5py.File(path, "r") as f:
        data = f[table]
        n = data.shape[0]
        if "rows_committed" in data.attrs:
            n = min(n, int(data.attrs["rows_committed"]))
        return data[:n], data.dtype


def same(frame, raw, dtype, columns):
    """Every value of `frame` equals h5py's, enums by their names."""
    assert list(frame.columns) == list(columns), (list(frame.columns), columns)
    assert len(frame) == len(raw), (len(frame), len(raw))
    for name in columns:
        got = frame[name]
        mapping = h5py.check_enum_dtype(dtype[name])
        if mapping is not None:
            names = {code: label for label, code in mapping.items()}
            want = [names[int(c)] for c in raw[name]]
            assert isinstance(got.dtype, pd.CategoricalDtype), name
            assert list(got.astype(str)) == want, name
        elif dtype[name].shape or dtype[name].kind == "V":  # arrays (/progress status counts)
            assert all(np.array_equal(g, w) for g, w in zip(got, raw[name])), name
        elif dtype[name].kind in "SO":
            want = [v.decode() if isinstance(v, bytes) else v for v in raw[name]]
            assert list(got) == want, name
        else:
            assert np.array_equal(got.to_numpy(), raw[name]), name


class SweepStore(unittest.TestCase):
    def setUp(self):
        if not STORE:
            self.skipTest("CDSE_STORE not set")

    def test_installed_copy(self):
        venv = os.environ.get("CDSE_INSTALLED")
        if not venv:
            self.skipTest("not run from a venv")
        self.assertTrue(os.path.realpath(clusterdse.__file__).startswith(os.path.realpath(venv)),
                        clusterdse.__file__)

    def test_every_table_equals_h5py(self):
        for table in clusterdse.tables(STORE):
            raw, dtype = reference(STORE, table)
            same(clusterdse.load(STORE, table), raw, dtype, dtype.names)

    def test_results_rows(self):
        # tests/jobs/report.cfg: 2 x 2 x 3 x 4 x 3 x 2 x 3 x 2 x 2 = 3456 configurations, every
        # one a row with store = "all", in 1,024-row chunks (the last one partial).
        df = clusterdse.load(STORE)
        self.assertEqual(len(df), 3456)
        self.assertEqual(sorted(df["index"]), list(range(3456)))
        with h5py.File(STORE, "r") as f:
            self.assertEqual(f["results"].chunks, (1024,))

    def test_columns_in_the_order_asked(self):
        raw, dtype = reference(STORE, "results")
        columns = ["time_to_train_days", "status", "index", "system", "sequence_parallel"]
        same(clusterdse.load(STORE, columns=columns), raw, dtype, columns)
        one = clusterdse.load(STORE, columns="mfu")
        same(one, raw, dtype, ["mfu"])
        usual = clusterdse.load(STORE, columns=clusterdse.USUAL_COLUMNS)
        same(usual, raw, dtype, clusterdse.USUAL_COLUMNS)
        same(clusterdse.load(STORE, "top", columns=["index", "mfu"]), *reference(STORE, "top"),
             ["index", "mfu"])

    def test_unknown_column(self):
        with self.assertRaises(clusterdse.StoreError) as e:
            clusterdse.load(STORE, columns=["index", "no_such_column"])
        self.assertIn("'no_such_column'", str(e.exception))
        self.assertIn("time_to_train_days", str(e.exception))  # the columns it has

    def test_chunks_cover_the_table(self):
        raw, dtype = reference(STORE, "results")
        pieces = list(clusterdse.chunks(STORE, columns=["index", "status", "mfu"], rows=1500))
        # 1,500 rows rounded down to whole 1,024-row chunks: 4 pieces of 1,024, 1,024, 1,024, 384.
        self.assertEqual([len(p) for p in pieces], [1024, 1024, 1024, 384])
        self.assertEqual([p.index[0] for p in pieces], [0, 1024, 2048, 3072])
        same(pd.concat(pieces, ignore_index=True), raw, dtype, ["index", "status", "mfu"])

    def test_h5py_path_equals_raw_path(self):
        """The same rows through h5py (a copy of /results without filters) and through the
        inflated chunks."""
        raw, dtype = reference(STORE, "results")
        with tempfile.TemporaryDirectory() as d:
            plain = os.path.join(d, "plain.h5")
            with h5py.File(plain, "w") as f:
                data = f.create_dataset("results", data=raw, chunks=(700,), maxshape=(None,))
                data.resize((len(raw) + 5,))  # rows past rows_committed are not results
                data.attrs["rows_committed"] = len(raw)
            same(clusterdse.load(plain), raw, dtype, dtype.names)
            pieces = list(clusterdse.chunks(plain, rows=1000))
            self.assertEqual([len(p) for p in pieces], [700] * 4 + [656])

    def test_damaged_chunk(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.h5")
            shutil.copy(STORE, bad)
            with h5py.File(bad, "r") as f:
                info = f["results"].id.get_chunk_info(1)
            with open(bad, "r+b") as f:  # 64 bytes inside the second chunk's deflate stream
                f.seek(info.byte_offset + info.size // 2)
                f.write(b"\xa5" * 64)
            with self.assertRaises(clusterdse.StoreDamaged) as e:
                clusterdse.load(bad, columns=["index"])
            self.assertIn("a damaged store", str(e.exception))
            self.assertIn("/results rows 1024-2047", str(e.exception))
            self.assertIsInstance(e.exception, clusterdse.Error)

    def test_truncated_copy(self):
        with tempfile.TemporaryDirectory() as d:
            cut = os.path.join(d, "cut.h5")
            with open(STORE, "rb") as src, open(cut, "wb") as dst:
                dst.write(src.read(os.path.getsize(STORE) // 2))
            with self.assertRaises(clusterdse.StoreDamaged) as e:
                clusterdse.load(cut)
            self.assertIn(cut, str(e.exception))


class BadInput(unittest.TestCase):
    def test_missing_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "missing.h5")
            for call in (lambda: clusterdse.load(path), lambda: clusterdse.tables(path),
                         lambda: next(clusterdse.chunks(path))):
                with self.assertRaises(FileNotFoundError) as e:
                    call()
                self.assertEqual(e.exception.errno, errno.ENOENT)
                self.assertEqual(e.exception.filename, path)

    def test_not_a_store(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "job.cfg")
            with open(path, "w") as f:
                f.write("name = \"x\";\n" * 100)
            with self.assertRaises(clusterdse.StoreError) as e:
                clusterdse.load(path)
            self.assertIn("cannot open as an HDF5 store", str(e.exception))
            with self.assertRaises(IsADirectoryError):
                clusterdse.load(d)

    def test_unknown_table(self):
        with self.assertRaises(clusterdse.StoreError):
            clusterdse.load(STORE or "x.h5", "no_such_table")


class ProbeStore(unittest.TestCase):
    def test_probes_equal_h5py(self):
        if not PROBES:
            self.skipTest("CDSE_PROBES not set")
        for table in clusterdse.tables(PROBES):
            raw, dtype = reference(PROBES, table)
            same(clusterdse.load(PROBES, table), raw, dtype, dtype.names)


if __name__ == "__main__":
    unittest.main()
