"""Damaged stores never crash or hang clusterdse: byte-mutated copies of small stores given to
`top` and to `sweep --resume`, each under a memory limit and a time limit.

    store_mutations.py CLUSTERDSE JOB.cfg SEED.h5 [SEED.h5 ...] [--count N] [--seed S]
                       [--timeout SECONDS] [--memory-mib MIB] [--resume-every K]
                       [--compare-every C]

Copy i of N takes seed i mod len(seeds), overwrites 1 to 16 random bytes (positions and values
from a seeded generator, so a run repeats), and runs `top COPY -n 3`; every C-th copy also runs
`compare COPY`, and every K-th copy of the first seed (the store JOB made) also runs
`sweep JOB -o COPY --resume` (resume writes, so it gets a fresh copy). Every run must exit 0, 1
or 2 within the time limit; the counts of exit codes are printed, and copies that broke the
rule are kept in the working directory for a regression input. Exit 0 when every run kept the
rule, 1 otherwise. Run with /usr/bin/python3.
"""
import argparse
import collections
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time


def limit_memory(mib):
    def apply():
        size = mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    return apply


def mutate(src, dst, rng):
    data = bytearray(open(src, "rb").read())
    for _ in range(rng.randint(1, 16)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    with open(dst, "wb") as f:
        f.write(data)


def run(cmd, args, counts, bad, keep, label):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=args.timeout, preexec_fn=limit_memory(args.memory_mib))
        rc = p.returncode
        outcome = f"exit {rc}" if rc >= 0 else f"signal {-rc}"
    except subprocess.TimeoutExpired:
        outcome = "timeout"
    counts[label][outcome] += 1
    if outcome not in ("exit 0", "exit 1", "exit 2"):
        bad.append((label, keep, outcome, time.monotonic() - start))
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("clusterdse")
    ap.add_argument("job")
    ap.add_argument("seeds", nargs="+")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--memory-mib", type=int, default=4096)
    ap.add_argument("--resume-every", type=int, default=10)
    ap.add_argument("--compare-every", type=int, default=0, help="0: no compare runs")
    ap.add_argument("--keep", default=None, help="directory for copies that broke the rule")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="cdse_mutations.")
    keep_dir = args.keep or work
    counts = collections.defaultdict(collections.Counter)
    bad = []
    started = time.monotonic()
    try:
        for i in range(args.count):
            seed = args.seeds[i % len(args.seeds)]
            copy = os.path.join(work, "copy.h5")
            mutate(seed, copy, rng)
            kept = os.path.join(keep_dir, f"mutant_{i}.h5")
            shutil.copy(copy, kept + ".tmp")
            ok = run([args.clusterdse, "top", copy, "-n", "3"], args, counts, bad, kept, "top")
            if args.compare_every and i % args.compare_every == 0:
                ok &= run([args.clusterdse, "compare", copy], args, counts, bad, kept, "compare")
            # --resume needs the job that made the store: only copies of the first seed.
            if seed == args.seeds[0] and (i // len(args.seeds)) % args.resume_every == 0:
                resumed = os.path.join(work, "resume.h5")
                shutil.copy(kept + ".tmp", resumed)
                ok &= run([args.clusterdse, "sweep", args.job, "-o", resumed, "--resume",
                           "--quiet"], args, counts, bad, kept, "sweep --resume")
                for leftover in (resumed, resumed + ".tmp"):
                    if os.path.exists(leftover):
                        os.remove(leftover)
            if ok:
                os.remove(kept + ".tmp")
            else:
                os.replace(kept + ".tmp", kept)
    finally:
        if args.keep is None and not bad:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"# {args.count} mutated copies of {len(args.seeds)} store(s), seed {args.seed}, "
          f"{elapsed:.0f} s, limits {args.timeout:g} s and {args.memory_mib} MiB")
    for label in sorted(counts):
        line = ", ".join(f"{k}: {v}" for k, v in sorted(counts[label].items()))
        print(f"{label:15s} {sum(counts[label].values()):5d} runs: {line}")
    for label, kept, outcome, seconds in bad:
        print(f"FAIL {label}: {outcome} after {seconds:.1f} s on {kept}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
