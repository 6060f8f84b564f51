#!/usr/bin/env bash
# Issue 27: `clusterdse fit` reads nccl-tests and OSU logs. tests/data/fabric_logs holds the logs
# of a known two-level fabric (make_logs.py: 8 GPUs per node at a bus bandwidth of 360 GB/s and
# 3 us per ring step, 4 nodes at 45 GB/s and 10 us), written in each tool's format; the fit must
# recover both levels within 5 % from either. Then the comm times the sweep evaluates with that
# profile for one configuration (verify's pred_us) are checked against a hand calculation, and
# verify's --where / --system and its refusal of a datasheet-only system are exercised.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
logs="$CDSE_SRC/tests/data/fabric_logs"
run() { echo "+ $*" >&2; "$@"; }

check() { # profile: every collective on both levels within 5 % of the fabric
/usr/bin/python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
levels = re.findall(r'\{\s+name = "(\w+)";\s+size = (\d+);(.*?)\n  \}', text, re.S)
assert [(n, int(s)) for n, s, _ in levels] == [("intra_node", 8), ("inter_node", 0)], levels
want = {"intra_node": (3.0, 360.0), "inter_node": (10.0, 45.0)}
for name, _, body in levels:
    pairs = re.findall(r'(\w+) = \{ latency = ([\d.e+-]+); bandwidth = ([\d.e+-]+); \}', body)
    assert sorted(c for c, _, _ in pairs) == ["allgather", "allreduce", "alltoall",
                                              "reduce_scatter", "sendrecv"], pairs
    for c, lat, bw in pairs:
        lat0, bw0 = want[name]
        assert abs(float(bw) / bw0 - 1) < 0.05, (name, c, bw)
        assert abs(float(lat) / lat0 - 1) < 0.05, (name, c, lat)
    assert 'measured = "' in body, body
print("ok: %s recovers 3 us / 360 GB/s and 10 us / 45 GB/s within 5 %%" % sys.argv[1])
PY
}

run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log "$logs"/nccl-inter/*.log -o "$tmp/nccl.cfg" \
    >"$tmp/nccl.txt"
cat "$tmp/nccl.txt"
grep -q "all_reduce_perf.log: nccl-tests all_reduce_perf nccl-tests 2.13.9, 11 rows, 8 ranks on 1 node(s), 8 per node, level intra_node, NVIDIA H100 80GB HBM3" "$tmp/nccl.txt"
grep -q "alltoall_perf.log: nccl-tests alltoall_perf nccl-tests 2.13.9, 11 rows, 4 ranks on 4 node(s), 1 per node, level inter_node" "$tmp/nccl.txt"
grep -q "NCCL_ALGO=Ring" "$tmp/nccl.txt"
grep -q "^# estimator [a-z]* for every fit" "$tmp/nccl.txt"
check "$tmp/nccl.cfg"

run "$CLUSTERDSE" fit --ranks 8 --level intra_node "$logs"/osu-intra/*.log \
    --ranks 4 --level inter_node "$logs"/osu-inter/*.log -o "$tmp/osu.cfg" >"$tmp/osu.txt"
cat "$tmp/osu.txt"
check "$tmp/osu.cfg"

# An OSU log does not say where it ran: without --level it is refused, naming the option.
set +e
"$CLUSTERDSE" fit --ranks 8 "$logs/osu-intra/osu_allreduce.log" -o "$tmp/x.cfg" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "osu_allreduce.log: an OSU log does not say where its ranks ran: give --level" "$tmp/err"

# With --base the logs replace what --levels names; both are within 3x of h100-sxm-dgx's
# datasheet (nvlink 450 x 0.82 = 369 GB/s, ib 50 x 0.90 = 45 GB/s).
run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log "$logs"/nccl-inter/*.log --base h100-sxm-dgx \
    --levels nvlink,ib -o "$tmp/h100.cfg" >/dev/null
[ "$(grep -c '^    measured = ' "$tmp/h100.cfg")" -eq 2 ]

# The swept configuration: llama2-7b on 32 GPUs, tp 8 (within a node), dp 4 (one rank per
# node), microbatch 1, sequence 4096, hidden 4096, bf16, zero 0. By hand, with the fabric's
# numbers (collective.c: allreduce 2(n-1)/n B/bw + 2(n-1) lat):
#   TP allreduce: B = 1 x 4096 x 4096 x 2 bytes = 33554432; n = 8:
#     1.75 x 33554432 / 360e9 s = 163.11 us + 14 x 3 us = 205.11 us
#   DP allreduce of the bf16 gradients of one TP rank: parameters 2 V h + L (4 h^2 + 3 h ffn)
#     + (2L + 1) h = 262144000 + 6475997376 + 266240 = 6738407616, / 8 x 2 bytes =
#     1684601904 B; n = 4: 1.5 x 1684601904 / 45e9 s = 56153.40 us + 6 x 10 us = 56213.40 us
#     (0.5 % allowed: the model's split of the norms and embeddings over TP ranks)
cp "$tmp/nccl.cfg" "$tmp/fabric.cfg"
cat >"$tmp/job.cfg" <<'JOB'
name = "fabric-logs";
models = ( "llama2-7b" );
systems = ( { base = "h100-sxm-dgx"; name = "fabric"; network_profile = "fabric.cfg"; },
            "h100-sxm-dgx" );
space = { gpus = [ 32 ]; tp = [ 8 ]; pp = [ 1 ]; microbatch = [ 1 ]; global_batch = [ 64 ];
          recompute = [ "none" ]; sequence_parallel = [ false ]; zero = [ 0 ];
          precision = [ "bf16" ]; };
objective = { metric = "time_per_iteration"; top = 4; store = "feasible"; };
JOB
cd "$tmp"
run mpirun -np 1 "$CLUSTERDSE" sweep job.cfg -o out.h5 >/dev/null 2>&1
run mpirun -np 2 "$CLUSTERDSE" verify out.h5 -n 2 --where 'tp == 8' --max-bytes 65536 \
    --time-budget 1 >verify.txt
cat verify.txt
grep -q "^# 1 of the 2 selected configurations are on systems without a measured network level: not replayed" verify.txt
/usr/bin/python3 - verify.txt <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("  ")]
got = {r[2]: (r[1], float(r[6]), float(r[7])) for r in rows}
assert got["tp"][0] == "fabric" and abs(got["tp"][2] / 205.11 - 1) < 1e-3, got["tp"]
assert abs(got["dp"][1] / 1684601904 - 1) < 5e-3, got["dp"]
assert abs(got["dp"][2] / 56213.40 - 1) < 5e-3, got["dp"]
print("ok: pred_us tp %.2f (hand 205.11), dp %.2f (hand 56213.40)" % (got["tp"][2], got["dp"][2]))
PY
set +e
mpirun -np 2 "$CLUSTERDSE" verify out.h5 --system h100-sxm-dgx >/dev/null 2>err.txt
rc=$?
set -e
grep -q "verify: --system h100-sxm-dgx: its network has no measured level" err.txt
[ "$rc" -ne 0 ]
echo "fit_logs: ok"
