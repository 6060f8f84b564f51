"""Reading clusterdse HDF5 stores (sweep, probe and verify output) into pandas.

    import clusterdse
    df = clusterdse.load("results/quickstart.h5")             # /results, names decoded
    top = clusterdse.load("results/quickstart.h5", "top")     # or "pareto", "pareto_cost", ...

    few = clusterdse.load("results/quickstart.h5", columns=clusterdse.USUAL_COLUMNS)
    for piece in clusterdse.chunks("results/quickstart.h5", columns=["status", "mfu"]): ...

Run with a Python that has h5py and pandas (Debian: /usr/bin/python3, python3-h5py,
python3-pandas), or install it (python/pyproject.toml) into a venv made with
--system-site-packages; `clusterdse report` draws figures from the same tables
(python3-matplotlib). A missing store raises FileNotFoundError; a file that is not a store, or
lacks the table or column asked for, StoreError; a damaged store StoreDamaged (both are
clusterdse.Error).
"""
# The tool's version (CMakeLists.txt, project VERSION); tests/sh/python_package.sh checks that
# they agree.
__version__ = "0.1.0"

from .store import (USUAL_COLUMNS, Error, StoreDamaged, StoreError, attrs, chunks, load,
                    tables)

__all__ = ["load", "chunks", "tables", "attrs", "USUAL_COLUMNS", "Error", "StoreError",
           "StoreDamaged"]
