#!/usr/bin/python3
"""Time and peak memory of reading a store's /results with clusterdse.load, in a fresh process
per case (peak resident set size, getrusage ru_maxrss, includes the interpreter, numpy, pandas
and h5py: the 'baseline' line).

    tests/bench/load_bench.py [STORE]      (default results/quickstart.h5)

Cases: the usual columns (clusterdse.USUAL_COLUMNS), every column, and chunks() of the usual
columns reduced to the best time per system (nothing kept but the reduction). Prints one line
per case: seconds (wall), CPU seconds, peak MB, rows, columns, MB of the DataFrame; the
machine's load average first, as the wall time follows it on a shared machine.
"""
import os
import subprocess
import sys

CASES = {
    "baseline": "pass",
    "usual": "df = clusterdse.load(path, columns=clusterdse.USUAL_COLUMNS)",
    "all": "df = clusterdse.load(path)",
    "chunks": ("best = {}\n"
               "for c in clusterdse.chunks(path, columns=['system', 'status', "
               "'time_to_train_days']):\n"
               "    m = c[c.status == 'ok'].groupby('system', observed=True)"
               "['time_to_train_days'].min()\n"
               "    for k, v in m.items(): best[k] = min(v, best.get(k, v))\n"
               "df = None"),
}

CHILD = """
import resource, sys, time
import clusterdse
path = sys.argv[1]
t0, c0 = time.perf_counter(), time.process_time()
{code}
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rows, cols, mb = (df.shape[0], df.shape[1], df.memory_usage(deep=True).sum() / 1e6) \\
    if df is not None else (0, 0, 0.0)
print(f"{{seconds:8.2f}} {{cpu:7.2f}} {{peak:9.1f}} {{rows:9d}} {{cols:5d}} {{mb:8.1f}}")
"""


def main(argv):
    path = argv[1] if len(argv) > 1 else "results/quickstart.h5"
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(here, "..", "..", "python") + (
        ":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    print(f"# clusterdse.load of {path} ({os.path.getsize(path) / 1e6:.0f} MB on disk)")
    print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (seconds are wall "
          "time; cpu_s is this process's CPU time)")
    print("# case          seconds   cpu_s   peak_MB      rows  cols  frame_MB")
    for name, code in CASES.items():
        if name == "baseline":
            code = "df = None"
        out = subprocess.run([sys.executable, "-c", CHILD.format(code=code), path], env=env,
                             check=True, capture_output=True, text=True).stdout
        print(f"  {name:<12}{out.rstrip()}")


if __name__ == "__main__":
    main(sys.argv)
