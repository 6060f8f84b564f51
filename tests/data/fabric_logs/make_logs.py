#!/usr/bin/python3
"""Writes the nccl-tests and OSU logs of a known two-level fabric (tests/sh/fit_logs.sh).

The fabric: 8 GPUs per node joined at a bus bandwidth of 360 GB/s and 3 us per ring step, 4
nodes joined at 45 GB/s and 10 us per step. Each time is the alpha-beta model of
src/model/collective.c on n ranks:
  allreduce                        2(n-1)/n B/bw + 2(n-1) lat
  allgather, reduce_scatter,
  alltoall                           (n-1)/n B/bw +  (n-1) lat
  sendrecv                                   B/bw +        lat
with B the bytes per rank as nccl-tests' size column counts them (src/<coll>.cu,
*GetCollByteCount; common.cu prints max(send, receive bytes)). The OSU logs print each benchmark's
own size (osu_allgather: the block each rank sends, B/n; osu_alltoall: the block sent to each peer,
B/n; osu_allreduce, osu_reduce_scatter: the whole vector B; osu_latency: the message B) and the
same times. Times are rounded as the tools print them (nccl-tests: 7 characters, 2 decimals
while they fit, util.cu getFloatStr; OSU: 2 decimals).

Example, by hand: all_reduce_perf on one node, 8 ranks, 1 MiB: 2*7/8 * 1048576 B / 360e9 B/s
= 5.0972 us, plus 14 * 3 us = 47.10 us; on 4 nodes: 1.5 * 1048576 / 45e9 = 34.95 us + 6 * 10 =
94.95 us.
Re-run: cd tests/data/fabric_logs && /usr/bin/python3 make_logs.py
"""

LEVELS = {  # name: (ranks per group, hosts, bus bandwidth GB/s, latency us per step)
    "intra": (8, ["dgx-a"] * 8, 360.0, 3.0),
    "inter": (4, ["dgx-a", "dgx-b", "dgx-c", "dgx-d"], 45.0, 10.0),
}
# The same two levels from one run on the whole allocation of 4 nodes x 8 GPUs (32 ranks, rank r
# on node r // 8), split by NCCL_TESTS_SPLIT (nccl-tests README; common.cu: color from the
# process rank): "DIV 8" gives Group r // 8, 4 groups of the 8 GPUs of one node (intra);
# "MOD 8" gives Group r % 8, 8 groups of one GPU on each of the 4 nodes (inter). nccl-tests
# times each group's collective on its own communicator and prints Group beside each rank.
NODES32 = ["dgx-%s" % "abcd"[r // 8] for r in range(32)]
SPLITS = {  # file suffix: (level, NCCL_TESTS_SPLIT, group of rank r)
    "div8": ("intra", "DIV 8", lambda r: r // 8),
    "mod8": ("inter", "MOD 8", lambda r: r % 8),
}
SIZES = [1 << k for k in range(10, 31, 2)]  # 1 KiB .. 1 GiB, every factor of 4

COLLS = {  # nccl-tests binary: (collective, steps(n), volume(n), redop)
    "all_reduce_perf": ("allreduce", lambda n: 2 * (n - 1), lambda n: 2 * (n - 1) / n, "sum"),
    "all_gather_perf": ("allgather", lambda n: n - 1, lambda n: (n - 1) / n, "none"),
    "reduce_scatter_perf": ("reduce_scatter", lambda n: n - 1, lambda n: (n - 1) / n, "sum"),
    "alltoall_perf": ("alltoall", lambda n: n - 1, lambda n: (n - 1) / n, "none"),
    "sendrecv_perf": ("sendrecv", lambda n: 1, lambda n: 1.0, "sum"),
}


def t_us(binary, n, size, bw, lat):
    _, steps, volume, _ = COLLS[binary]
    return steps(n) * lat + volume(n) * size / (bw * 1e3)


def f7(v):  # nccl-tests getFloatStr(value, 7)
    for fmt in ("%7.2f", "%7.1f", "%7.0f"):
        s = fmt % v
        if len(s) <= 7:
            return s
    return "%7.1e" % v


def f6(v):
    for fmt in ("%6.2f", "%6.1f", "%6.0f"):
        s = fmt % v
        if len(s) <= 6:
            return s
    return "%6.0e" % v


def nccl_log(binary, level, split=None):
    n, hosts, bw, lat = LEVELS[level]
    groups = [0] * len(hosts)
    if split:
        hosts, groups = NODES32, [SPLITS[split][2](r) for r in range(32)]
    out = ["# nccl-tests version 2.13.9 nccl-headers=22103 nccl-library=22103",
           "# Collective test starting: %s" % binary,
           "# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 4(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0",
           "#",
           "# Using devices"]
    for r in range(len(hosts)):
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3"
                   % (r, groups[r], 41000 + r, hosts[r], r % 8, 0x18 + 0x10 * (r % 8)))
    out.append("dgx-a:41000:41000 [0] NCCL INFO NCCL_ALGO set by environment to Ring")
    out += ["#",
            "#                                                              out-of-place                       in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)       "]
    coll, _, volume, redop = COLLS[binary]
    busbws = []
    for size in SIZES:
        t = t_us(binary, n, size, bw, lat)
        alg = size / t * 1e-3
        bus = alg * volume(n)
        busbws.append(bus)
        count = size // 4 // (1 if coll in ("allreduce", "sendrecv") else n)  # paramcount
        row = "%12d  %12d  %8s  %6s  %6d" % (size, count, "float", redop, -1)
        body = "  %7s  %6s  %6s  %6d" % (f7(t), f6(alg), f6(bus), 0)
        out.append(row + body + body)
    out += ["# Out of bounds values : 0 OK",
            "# Avg bus bandwidth    : %g " % (sum(busbws) / len(busbws)),
            "#",
            "# Collective test concluded: %s" % binary, ""]
    return "\n".join(out)


OSU = {  # binary: (title, nccl-tests twin, size divided by n)
    "osu_allreduce": ("Allreduce Latency", "all_reduce_perf", False),
    "osu_allgather": ("Allgather Latency", "all_gather_perf", True),
    "osu_reduce_scatter": ("Reduce_scatter Latency", "reduce_scatter_perf", False),
    "osu_alltoall": ("All-to-All Personalized Exchange Latency", "alltoall_perf", True),
}


def osu_log(binary, level, full):
    n, _, bw, lat = LEVELS[level]
    title, twin, per_rank = OSU[binary]
    out = ["", "# OSU MPI-CUDA %s Test v7.4" % title, "# Datatype: MPI_CHAR."]
    if full:
        out.append("# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations")
    else:
        out.append("# Size       Avg Latency(us)")
    for size in SIZES:
        t = t_us(twin, n, size, bw, lat)
        osu_size = size // n if per_rank else size
        if full:
            out.append("%-10d%18.2f%18.2f%18.2f%12d" % (osu_size, t, 0.98 * t, 1.02 * t, 1000))
        else:
            out.append("%-10d%18.2f" % (osu_size, t))
    return "\n".join(out) + "\n"


def osu_latency(level):
    _, _, bw, lat = LEVELS[level]
    out = ["# OSU MPI-CUDA Latency Test v7.4",
           "# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)",
           "# Size          Latency (us)", "%-10d%18.2f" % (0, lat)]
    for size in SIZES:
        out.append("%-10d%18.2f" % (size, lat + size / (bw * 1e3)))
    return "\n".join(out) + "\n"


for level in LEVELS:
    for binary in COLLS:
        with open("nccl-%s/%s.log" % (level, binary), "w") as f:
            f.write(nccl_log(binary, level))
    for i, binary in enumerate(OSU):
        with open("osu-%s/%s.log" % (level, binary), "w") as f:
            f.write(osu_log(binary, level, full=i % 2 == 1))
    with open("osu-%s/osu_latency.log" % level, "w") as f:
        f.write(osu_latency(level))
for split, (level, _, _) in SPLITS.items():
    for binary in COLLS:
        with open("nccl-split/%s-%s.log" % (binary, split), "w") as f:
            f.write(nccl_log(binary, level, split))
