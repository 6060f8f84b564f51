"""Reading clusterdse HDF5 stores (sweep, probe and verify output) into pandas.

    import clusterdse
    df = clusterdse.load("results/quickstart.h5")             # /results, names decoded
    top = clusterdse.load("results/quickstart.h5", "top")     # or "pareto", "pareto_cost", ...

Run with the Python that has h5py and pandas (Debian: /usr/bin/python3, python3-h5py,
python3-pandas); `clusterdse report` draws figures from the same tables (python3-matplotlib).
"""
from .store import load, tables, attrs, StoreError, StoreDamaged

__all__ = ["load", "tables", "attrs", "StoreError", "StoreDamaged"]
