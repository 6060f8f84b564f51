#!/usr/bin/env bash
# Issue 14, parts 2 and 3: calibration against a link of known bandwidth, on the multi-node test
# bed (tests/netbed/netbed.sh: 2 nodes x 2 ranks, one tbf-shaped NIC per rank).
#
# For two rates (100 and 400 Mbit/s), probe on 2 nodes x 2 ranks with the world, node (one group
# per node), per_node (the nodes' leaders) and strided (DP-like, across the nodes) shapes, fit,
# and check that the fit finds two levels, that its inter-node bandwidth is the shaped rate less
# the TCP/IP + Ethernet framing, and that the intra-node level is much faster. Then the 400 Mbit/s
# profile drives a sweep of one job in two placements (TP inside a node and DP across the nodes;
# DP inside and TP across), and verify on the bed measures what the model predicts.
#
# Why 100 and 400 Mbit/s rather than 1 and 4 Gbit/s: two cores cannot push 4 Gbit/s of TCP
# through four MPI ranks (measured on the bed: 398 of 478 MB/s for one pair, less under load),
# and the check is about a ratio of rates, which 100/400 keeps.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
# shellcheck source=../netbed/lib.sh
source "$CDSE_SRC/tests/netbed/lib.sh"
netbed_preflight
py=/usr/bin/python3
tmp=$(mktemp -d)
netbed_start 2 100mbit
trap 'bash "$NB" down "$NB_DIR"; rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }

# Payload rate of one TCP stream through tbf at RATE: a full segment carries 1448 bytes of
# payload (MTU 1500 - 20 IP - 32 TCP with timestamps, RFC 7323) in 1514 bytes that tbf counts
# (1500 + 14 Ethernet header; tbf charges skb->len, without the preamble, FCS and inter-frame
# gap of a real wire: 1538 bytes there). 100 Mbit/s -> 1e8 / 8 x 1448 / 1514 = 11.955 MB/s.
expected_gbs() { awk -v m="$1" 'BEGIN { printf "%.6f", m * 1e6 / 8 * 1448 / 1514 / 1e9 }'; }

# Sizes: the largest message takes ~90 ms on the shaped link, 1/8 of it and up are fitted
# (--min-bytes): the bandwidth term, not the latency of a 2-core machine. The fit uses the
# median over iterations of the slowest rank (fit's default, and what verify measures). Not the
# fastest iteration (--time best): an iteration that starts with tbf's 2 ms bucket full moves
# its first 2 ms of data at once, which made alltoall's fitted rate 31 % high.
calibrate() { # RATE_MBIT LARGEST
    local mbit=$1 big=$2
    cat >"plan$mbit.cfg" <<PLAN
name = "netbed-$mbit";
collectives = [ "allreduce", "allgather", "reduce_scatter", "alltoall", "sendrecv" ];
sizes = [ 4096, 65536, $((big / 8)), $((big / 4)), $((big / 2)), $big ];
shapes = ( { kind = "world"; }, { kind = "node"; }, { kind = "per_node"; },
           { kind = "strided"; group = 2; } );
warmup = 1;
iterations_min = 5;
iterations_max = 10;
time_budget_ms = 20.0;
PLAN
    run bash "$NB" shape "$NB_DIR" "${mbit}mbit"
    nbrun -np 4 "$NB_DIR/nic" "$CLUSTERDSE" probe "plan$mbit.cfg" -o "probes$mbit.h5" \
        >"probe$mbit.txt"
    grep -q '^# clusterdse probe: plan netbed-.*, 4 ranks on 2 node(s) (2 per node)' "probe$mbit.txt"
    run "$CLUSTERDSE" fit "probes$mbit.h5" -o "fitted$mbit.cfg" --min-bytes $((big / 8)) |
        tee "fit$mbit.txt"
    echo "+ $py (check fitted$mbit.cfg against $mbit Mbit/s)"
    "$py" - "fitted$mbit.cfg" "$(expected_gbs "$mbit")" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
want = float(sys.argv[2])
num = r'([-+\d.eE]+)'
levels = [(m.group(1), int(m.group(2)), m.start()) for m in
          re.finditer(r'name\s*=\s*"(\w+)"\s*;\s*size\s*=\s*(\d+)\s*;', text)]
assert [(n, s) for n, s, _ in levels] == [("intra_node", 2), ("inter_node", 0)], levels
blocks = {n: text[at:(levels[i + 1][2] if i + 1 < len(levels) else len(text))]
          for i, (n, _, at) in enumerate(levels)}
def coll(level, c):
    pattern = c + r'\s*=\s*\{\s*latency\s*=\s*' + num + r'\s*;\s*bandwidth\s*=\s*' + num
    return float(re.search(pattern, blocks[level]).group(2))
# The level's bandwidth (its sendrecv pair: the plain link) is the link's payload rate
# within 10 % (issue 14). Every collective's fitted bandwidth (the volume term of collective.c's
# ring formulas) should be that rate too: the reductions of allreduce and reduce_scatter run at
# GB/s, a few thousandths of the time here. Each is fitted on its own (latency and bandwidth)
# from 8 points, and on a 2-core machine shared with other work a preempted point moves one of
# them by up to 37 % (seen at a load average of 20; usually within 10 %); they are held to 50 %,
# which still catches an algorithm the model does not cost: with MPI_Reduce_scatter_block (Open
# MPI's reduce, then scatter) reduce_scatter came out at 35 % of the rate.
level = coll("inter_node", "sendrecv")
err = level / want - 1
print(f"inter_node level      fitted {level * 1e3:8.3f} MB/s  shaped payload {want * 1e3:8.3f} MB/s"
      f"  error {err * 100:+5.1f}%")
assert abs(err) <= 0.10, ("inter_node bandwidth", level, want)
for c in ("sendrecv", "allgather", "alltoall", "reduce_scatter", "allreduce"):
    got = coll("inter_node", c)
    err = got / want - 1
    print(f"inter_node {c:14s} fitted {got * 1e3:8.3f} MB/s  error {err * 100:+5.1f}%")
    assert abs(err) <= 0.50, (c, got, want)
intra = coll("intra_node", "sendrecv")
print(f"intra_node sendrecv fitted {intra * 1e3:.1f} MB/s = {intra / want:.0f} x inter_node")
assert intra >= 5 * want, (intra, want)
PY
}
calibrate 100 1048576
calibrate 400 4194304

# Issue 27: the shipped full plan runs unchanged across nodes: on the bed's 2 nodes x 2 ranks its
# "node" is 2 (MPI_Comm_split_type shared), so the TP-like shape is 2 groups of the 2 ranks of a
# node (level 0) and the DP-like one (group 2, stride "node") 2 groups of one rank per node
# (level 1), as is the plain strided shape (stride N/2 = 2). Only sizes and timing are cut.
sed -e 's/^sizes = .*/sizes = { from = 64; to = 256; };/' -e 's/^warmup = .*/warmup = 1;/' \
    -e 's/^iterations_min = .*/iterations_min = 2;/' -e 's/^iterations_max = .*/iterations_max = 4;/' \
    -e 's/^time_budget_ms = .*/time_budget_ms = 0.01;/' -e 's/^check = .*/check = true;/' \
    "$CDSE_SRC/calibration/plans/full.cfg" >full-quick.cfg
diff <(grep -A7 '^shapes' "$CDSE_SRC/calibration/plans/full.cfg") <(grep -A7 '^shapes' full-quick.cfg)
echo "+ nbrun -np 4 $NB_DIR/nic $CLUSTERDSE probe full-quick.cfg -o full.h5"
nbrun -np 4 "$NB_DIR/nic" "$CLUSTERDSE" probe full-quick.cfg -o full.h5 >full.txt
grep -q '^# clusterdse probe: plan full, 4 ranks on 2 node(s) (2 per node)' full.txt
# collective shape n groups level ...: 5 collectives x 3 sizes per shape, every check ok
[ "$(awk '$2 == "contiguous" && $3 == 2 && $4 == 2 && $5 == 0 && $NF == "ok"' full.txt | wc -l)" -eq 15 ]
[ "$(awk '$2 == "strided" && $3 == 2 && $4 == 2 && $5 == 1 && $NF == "ok"' full.txt | wc -l)" -eq 30 ]
if grep 'skipped\|FAIL\|failed' full.txt; then exit 1; fi
echo "full.cfg on 2 nodes x 2 ranks: node groups of 2 (level 0), strided across the nodes (level 1): ok"

# The 400 Mbit/s profile drives a sweep: gpt3-1.3b on 4 H100s whose network is the bed's, TP = 2,
# DP = 2, in two placements: TP inside a node (its DP groups cross the nodes) and DP inside a
# node (TP across).
cat >job.cfg <<'JOB'
name = "netbed";
models = ( "gpt3-1.3b" );
systems = ( { base = "h100-sxm-dgx"; name = "h100-netbed"; network_profile = "fitted400.cfg"; } );
space = { gpus = [ 4 ]; tp = [ 2 ]; pp = [ 1 ]; microbatch = [ 1 ]; global_batch = [ 64 ];
          recompute = [ "selective" ]; sequence_parallel = [ false ]; zero = [ 0 ];
          precision = [ "bf16" ]; placement = [ "tp-cp-dp-pp", "dp-tp-cp-pp" ]; };
objective = { metric = "time_per_iteration"; top = 2; store = "feasible"; };
JOB
run mpirun -np 2 "$CLUSTERDSE" sweep job.cfg -o out.h5 --quiet >/dev/null
nbrun -np 4 "$NB_DIR/nic" "$CLUSTERDSE" verify out.h5 -n 2 --max-bytes 4194304 \
    --time-budget 20 | tee verify.txt
echo "+ $py (check out.h5/verify)"
"$py" - <<'PY'
import h5py
v = h5py.File("out.h5", "r")["verify"][:]
rows = {}
for r in v:
    key = (r["comm"].decode(), int(r["run_stride"]))
    rows[key] = r
    print(f"{key[0]} stride {key[1]} ({'across' if key[1] == 2 else 'inside'}): "
          f"{r['run_bytes']} B, predicted {r['predicted_run_us']:.0f} us, "
          f"measured {r['measured_us']:.0f} us (best {r['measured_best_us']:.0f}), "
          f"ratio {r['ratio']:.3f}")
assert set(rows) == {("tp", 1), ("dp", 2), ("tp", 2), ("dp", 1)}, sorted(rows)
# Part 2: the DP allreduce across the nodes, predicted within 20 %.
dp = rows[("dp", 2)]
assert 0.8 <= dp["ratio"] <= 1.2, ("dp across the nodes", dp["ratio"])
# Part 3: TP across the nodes against TP inside a node, same message. The model predicts TP
# across to take longer by pred_diff; verify measures that difference: its sign, and its rough
# size (within a factor of 2: the prediction of the intra-node allreduce comes from a fit of
# intra-node points taken under the same load, once 21.8 ms for a measured 2.7 ms, which moved
# the predicted difference by a quarter), with the fastest iteration of each (best_us). Not the ratio, nor medians: they divide
# by or subtract an intra-node time of about a millisecond that the load of a shared 2-core
# machine multiplies (at a load average of 16 the median of a 4 MiB allreduce inside a node was
# 35 ms, 33x the prediction); the difference is the inter-node time, which the link sets.
inside, across = rows[("tp", 1)], rows[("tp", 2)]
assert inside["run_bytes"] == across["run_bytes"]
pred_diff = across["predicted_run_us"] - inside["predicted_run_us"]
meas_diff = across["measured_best_us"] - inside["measured_best_us"]
print(f"TP across - TP inside: predicted {pred_diff:.0f} us "
      f"({across['predicted_run_us'] / inside['predicted_run_us']:.1f}x), measured (best) "
      f"{meas_diff:.0f} us ({across['measured_best_us'] / inside['measured_best_us']:.1f}x)")
assert pred_diff > 0 and meas_diff > 0, (pred_diff, meas_diff)
assert 0.5 <= meas_diff / pred_diff <= 2.0, (pred_diff, meas_diff)
assert 0.8 <= across["ratio"] <= 1.2, ("tp across the nodes", across["ratio"])
PY
echo "netbed_calibrate: ok"
