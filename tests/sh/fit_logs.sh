#!/usr/bin/env bash
# Issue 27: `clusterdse fit` reads nccl-tests and OSU logs. tests/data/fabric_logs holds the logs
# of a known two-level fabric (make_logs.py: 8 GPUs per node at a bus bandwidth of 360 GB/s and
# 3 us per ring step, 4 nodes at 45 GB/s and 10 us), written in each tool's format: nccl-tests
# run once per level (nccl-intra, nccl-inter), nccl-tests run on the whole 4 x 8 allocation split
# by NCCL_TESTS_SPLIT (nccl-split), and OSU (osu-intra, osu-inter); the fit must recover both
# levels within 5 % from each. Then a sweep with each fitted profile: its swept times (the store's
# t_dp_comm_s and the time_per_iteration against the datasheet system's) and verify's per-call
# predictions are checked against hand calculations, and verify's --where / --system and its
# refusal of a datasheet-only system are exercised.
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
    worst = 0
    for c, lat, bw in pairs:
        lat0, bw0 = want[name]
        assert abs(float(bw) / bw0 - 1) < 0.05, (name, c, bw)
        assert abs(float(lat) / lat0 - 1) < 0.05, (name, c, lat)
        worst = max(worst, abs(float(bw) / bw0 - 1), abs(float(lat) / lat0 - 1))
    assert 'measured = "' in body, body
    print("ok: %s %s: every collective within %.3f %% of %g us, %g GB/s (5 %% allowed)"
          % (sys.argv[1].split("/")[-1], name, 100 * worst, *want[name]))
PY
}

run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log "$logs"/nccl-inter/*.log -o "$tmp/nccl.cfg" \
    >"$tmp/nccl.txt"
cat "$tmp/nccl.txt"
grep -q "all_reduce_perf.log: nccl-tests all_reduce_perf nccl-tests 2.13.9, 11 rows, 8 ranks on 1 node(s), 8 per node, level intra_node, NVIDIA H100 80GB HBM3" "$tmp/nccl.txt"
grep -q "alltoall_perf.log: nccl-tests alltoall_perf nccl-tests 2.13.9, 11 rows, 4 ranks on 4 node(s), 1 per node, level inter_node" "$tmp/nccl.txt"
grep -q "NCCL_ALGO=Ring" "$tmp/nccl.txt"
# One estimator for every fit, with its reason: the hold-out scores printed, the one chosen the
# lowest (scores within 0.1 percentage point tie, and a tie goes to the simpler, earlier one:
# fit.c FIT_ESTIMATOR_TIE), every row of the table and the profile naming it. Here every
# estimator recovers the noiseless fabric (0.01 % each): the tie goes to single.
check_estimator() { # FIT_OUTPUT PROFILE [EXPECTED]
/usr/bin/python3 - "$@" <<'PY'
import re, sys
out, profile = open(sys.argv[1]).read(), open(sys.argv[2]).read()
m = re.search(r"^# estimator (\w+) for every fit: (.*)$", out, re.M)
name, reason = m.group(1), m.group(2)
rows = re.findall(r"^  (?:intra|inter)_node +\w+ +[\d-]+ +\d+ +\d+ +[\d.]+ +[\d.]+ (\w+) ", out, re.M)
assert rows and set(rows) == {name}, (name, rows)
if reason.startswith("--estimator"):
    assert "(--estimator)" in profile
else:
    scores = [(e, float(v)) for e, v in re.findall(r"(\w+) ([\d.]+)%", reason)]
    assert [e for e, _ in scores] == ["single", "hybrid", "large", "robust", "lmeds"], scores
    best = 0
    for i in range(1, len(scores)):
        if scores[i][1] < scores[best][1] - 0.1:
            best = i
    assert scores[best][0] == name, (name, scores)
    assert "# Estimator %s for every pair (lowest hold-out median relative error)." % name in profile
if len(sys.argv) > 3:
    assert name == sys.argv[3], (name, sys.argv[3])
print("ok: estimator %s for every fit (%s)" % (name, reason[:60]))
PY
}
check_estimator "$tmp/nccl.txt" "$tmp/nccl.cfg" single
run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log --estimator robust -o "$tmp/robust.cfg" >"$tmp/robust.txt"
grep -q "^# estimator robust for every fit: --estimator;" "$tmp/robust.txt"
check_estimator "$tmp/robust.txt" "$tmp/robust.cfg" robust
check "$tmp/nccl.cfg"

# One run on 4 nodes x 8 GPUs split by NCCL_TESTS_SPLIT: "DIV 8" (4 groups of one node's 8 GPUs)
# is the node level, "MOD 8" (8 groups of one GPU per node) the network; the Group column says so.
run "$CLUSTERDSE" fit "$logs"/nccl-split/*.log -o "$tmp/split.cfg" >"$tmp/split.txt"
grep -q "all_reduce_perf-div8.log: nccl-tests all_reduce_perf nccl-tests 2.13.9, 11 rows, 32 ranks on 4 node(s), 8 per node, 4 groups of 8, level intra_node" "$tmp/split.txt"
grep -q "all_reduce_perf-mod8.log: nccl-tests all_reduce_perf nccl-tests 2.13.9, 11 rows, 32 ranks on 4 node(s), 8 per node, 8 groups of 4, level inter_node" "$tmp/split.txt"
check "$tmp/split.cfg"

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

# --min-bytes / --max-bytes: the range said in words (not "to 1e+300 bytes"), in the summary and
# in the profile; a range that leaves no fit is refused naming it.
run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log --min-bytes 65536 -o "$tmp/min.cfg" >"$tmp/min.txt"
grep -q "^# fitting messages of 65536 bytes and more only$" "$tmp/min.txt"
grep -q "^# Only messages of 65536 bytes and more were fitted.$" "$tmp/min.cfg"
run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log --min-bytes 65536 --max-bytes 16777216 -o "$tmp/mm.cfg" >"$tmp/mm.txt"
grep -q "^# fitting messages from 65536 to 16777216 bytes only$" "$tmp/mm.txt"
set +e
"$CLUSTERDSE" fit "$logs"/nccl-intra/*.log --min-bytes 2e9 -o "$tmp/x.cfg" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && [ ! -e "$tmp/x.cfg" ]
grep -q "no collective has 2 or more sizes on level 0 or 1 among the messages of 2000000000 bytes and more (--min-bytes, --max-bytes)" "$tmp/err"

# With --base the logs replace what --levels names; both are within 3x of h100-sxm-dgx's
# datasheet (nvlink 450 x 0.82 = 369 GB/s, ib 50 x 0.90 = 45 GB/s). The profile records, per
# level, measured (and from which logs) or datasheet.
run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log "$logs"/nccl-inter/*.log --base h100-sxm-dgx \
    --levels nvlink,ib -o "$tmp/h100.cfg" >/dev/null
[ "$(grep -c '^    measured = ' "$tmp/h100.cfg")" -eq 2 ]
grep -q '^    measured = "all_gather_perf.log, all_reduce_perf.log, alltoall_perf.log, reduce_scatter_perf.log, sendrecv_perf.log";$' "$tmp/h100.cfg"
grep -q "^#   nvlink: measured (intra_node rows: $logs/nccl-intra/all_gather_perf.log, $logs/nccl-intra/all_reduce_perf.log, " "$tmp/h100.cfg"
grep -q "^#   ib: measured (inter_node rows: $logs/nccl-inter/all_gather_perf.log, " "$tmp/h100.cfg"
# Without --levels only the outermost level (ib) is replaced; nvlink stays the datasheet's.
run "$CLUSTERDSE" fit "$logs"/nccl-intra/*.log "$logs"/nccl-inter/*.log --base h100-sxm-dgx \
    -o "$tmp/ib.cfg" >"$tmp/ib.txt"
grep -q '^# level nvlink kept from h100-sxm-dgx (datasheet)' "$tmp/ib.txt"
grep -q '^#   nvlink: datasheet (h100-sxm-dgx)$' "$tmp/ib.cfg"
grep -q "^#   ib: measured (inter_node rows: $logs/nccl-inter/all_gather_perf.log, " "$tmp/ib.cfg"

# The sweep with each fitted profile (nccl-tests, split nccl-tests, OSU) and the datasheet system,
# on the Megatron-LM 2021 stack: its gradient all-reduce runs after the backward pass (not
# overlapped), so the store's t_dp_comm_s is the whole collective. By hand, with the fabric's
# numbers and collective.c's ring (allreduce 2(n-1)/n B/bw + 2(n-1) lat), h100-sxm-dgx's
# datasheet levels nvlink 450 GB/s x 0.82 = 369 GB/s, 3.4 us and ib 50 x 0.90 = 45 GB/s, 14 us:
#  A. gpt3-1.3b on 8 GPUs, tp 1, dp 8 (one node): parameters (GPT-3: tied embedding V h, learned
#     positions s h, per layer 12 h^2 + 13 h with the biases and both norms, final norm 2 h)
#     51200 x 2048 + 2048 x 2048 + 24 (12 x 2048^2 + 13 x 2048) + 2 x 2048 = 1317654528; bf16
#     gradients B = 2635309056 bytes, n = 8:
#       fabric:    1.75 x 2635309056 / 360e9 s = 12810.53 us + 14 x 3 us   = 12852.53 us
#       datasheet: 1.75 x 2635309056 / 369e9 s = 12498.08 us + 14 x 3.4 us = 12545.68 us
#     Only the DP all-reduce differs between the two systems (no TP, no PP), so the swept
#     time_per_iteration differs by 12852.53 - 12545.68 = 306.85 us.
#  B. llama2-7b on 32 GPUs, tp 8 (within a node), dp 4 (one rank per node), microbatch 1,
#     sequence 4096, hidden 4096, 16 micro-batches:
#     TP allreduce: B = 1 x 4096 x 4096 x 2 = 33554432 bytes, n = 8, 2048 calls (16 x 32 layers
#       x 4), as verify lists them:
#       fabric:    1.75 x 33554432 / 360e9 s = 163.11 us + 14 x 3 us   = 205.11 us
#       datasheet: 1.75 x 33554432 / 369e9 s = 159.13 us + 14 x 3.4 us = 206.73 us
#     DP allreduce of one TP rank's bf16 gradients: embedding and output layer 2 V h / 8 =
#       2 x 32000 x 4096 / 8 = 32768000, layers 32 (4 h^2 + 3 h ffn) / 8 = 32 x (67108864 +
#       135266304) / 8 = 809500672, norms (2 L + 1) h = 266240 (not split over TP ranks):
#       842534912 parameters, B = 1685069824 bytes, n = 4:
#       fabric:    1.5 x 1685069824 / 45e9 s = 56169.00 us + 6 x 10 us = 56229.00 us
#       datasheet: 1.5 x 1685069824 / 45e9 s = 56169.00 us + 6 x 14 us = 56253.00 us
#     The TP all-reduces of the backward pass hide behind the same weight-gradient GEMMs on both
#     systems (each call is longer than its window), so the swept time_per_iteration differs by
#     2048 x (206.733 - 205.112) + (56253.00 - 56229.00) = 3321.2 + 24.0 = 3345.2 us.
# (The fits are within 0.01 % of the fabric: the absolute times are checked within 0.1 %, the
# differences, small against the times, within 1 %.)
cp "$tmp/nccl.cfg" "$tmp/fabric-nccl.cfg"
cp "$tmp/split.cfg" "$tmp/fabric-split.cfg"
cp "$tmp/osu.cfg" "$tmp/fabric-osu.cfg"
cat >"$tmp/job.cfg" <<'JOB'
name = "fabric-logs";
models = ( "llama2-7b", "gpt3-1.3b" );
systems = ( { base = "h100-sxm-dgx"; name = "fabric-nccl"; network_profile = "fabric-nccl.cfg"; },
            { base = "h100-sxm-dgx"; name = "fabric-split"; network_profile = "fabric-split.cfg"; },
            { base = "h100-sxm-dgx"; name = "fabric-osu"; network_profile = "fabric-osu.cfg"; },
            "h100-sxm-dgx" );
stacks = "megatron-lm-2021";
space = { gpus = [ 8, 32 ]; tp = [ 1, 8 ]; pp = [ 1 ]; microbatch = [ 1 ]; global_batch = [ 64 ];
          recompute = [ "none" ]; sequence_parallel = [ false ]; zero = [ 0 ];
          precision = [ "bf16" ]; };
objective = { metric = "time_per_iteration"; top = 32; store = "feasible"; };
JOB
cd "$tmp"
run mpirun -np 1 "$CLUSTERDSE" sweep job.cfg -o out.h5 >/dev/null 2>&1
echo "+ /usr/bin/python3 (swept times in out.h5/results against the hand calculation)"
/usr/bin/python3 - <<'PY'
import h5py
f = h5py.File("out.h5", "r")
names = [n.decode() for n in f["systems"]["name"]]
models = [n.decode() for n in f["models"]["name"]]
rows = {}
for r in f["results"][:]:
    rows[(models[r["model"]], names[r["system"]], int(r["gpus"]), int(r["tp"]))] = r
def near(got, want, tol, what):
    assert abs(got / want - 1) < tol, (what, got, want)
    return got
sheet_a = rows[("gpt3-1.3b", "h100-sxm-dgx", 8, 1)]
sheet_b = rows[("llama2-7b", "h100-sxm-dgx", 32, 8)]
near(sheet_a["t_dp_comm_s"] * 1e6, 12545.68, 1e-4, "A datasheet t_dp")
near(sheet_b["t_dp_comm_s"] * 1e6, 56253.00, 1e-4, "B datasheet t_dp")
for s in ("fabric-nccl", "fabric-split", "fabric-osu"):
    a, b = rows[("gpt3-1.3b", s, 8, 1)], rows[("llama2-7b", s, 32, 8)]
    assert a["dp"] == 8 and a["t_tp_comm_s"] == 0 and b["dp"] == 4 and b["grad_accum"] == 16
    ta = near(a["t_dp_comm_s"] * 1e6, 12852.53, 1e-3, s + " A t_dp")
    da = near((a["time_per_iteration_s"] - sheet_a["time_per_iteration_s"]) * 1e6, 306.85, 1e-2,
              s + " A time - datasheet")
    tb = near(b["t_dp_comm_s"] * 1e6, 56229.00, 1e-3, s + " B t_dp")
    db = near((b["time_per_iteration_s"] - sheet_b["time_per_iteration_s"]) * 1e6, -3345.2, 1e-2,
              s + " B time - datasheet")
    print("ok: %-12s A t_dp %.2f us (hand 12852.53), time - datasheet %.2f us (hand 306.85); "
          "B t_dp %.2f us (hand 56229.00), time - datasheet %.1f us (hand -3345.2)"
          % (s, ta, da, tb, db))
PY
run mpirun -np 2 "$CLUSTERDSE" verify out.h5 -n 4 --where 'model == "llama2-7b" && gpus == 32 && tp == 8' \
    --max-bytes 65536 --time-budget 1 >verify.txt
cat verify.txt
grep -q "^# 1 of the 4 selected configurations are on systems without a measured network level: not replayed" verify.txt
echo "+ /usr/bin/python3 (out.h5/verify against the hand calculation)"
/usr/bin/python3 - <<'PY'
import h5py
v = h5py.File("out.h5", "r")["verify"][:]
got = {(r["system"].decode(), r["comm"].decode()): r for r in v}
assert sorted(got) == sorted((s, c) for s in ("fabric-nccl", "fabric-split", "fabric-osu")
                             for c in ("tp", "dp")), sorted(got)
for s in ("fabric-nccl", "fabric-split", "fabric-osu"):
    tp, dp = got[(s, "tp")], got[(s, "dp")]
    assert tp["collective"] == b"allreduce" and tp["group_size"] == 8, tp
    assert tp["bytes"] == 33554432 and tp["calls"] == 2048, tp
    assert abs(tp["predicted_us"] / 205.11 - 1) < 1e-3, tp
    assert dp["collective"] == b"allreduce" and dp["group_size"] == 4, dp
    assert dp["bytes"] == 1685069824 and dp["calls"] == 1, dp
    assert abs(dp["predicted_us"] / 56229.00 - 1) < 1e-3, dp
    print("ok: %s pred_us tp %.2f (hand 205.11), dp %.2f (hand 56229.00)"
          % (s, tp["predicted_us"], dp["predicted_us"]))
PY
set +e
mpirun -np 2 "$CLUSTERDSE" verify out.h5 --system h100-sxm-dgx >/dev/null 2>err.txt
rc=$?
set -e
cat err.txt
grep -q "verify: --system h100-sxm-dgx: its network has no measured level" err.txt
[ "$rc" -eq 1 ]
# A selection of datasheet systems only: nothing measured to replay, said with the way out.
set +e
mpirun -np 2 "$CLUSTERDSE" verify out.h5 --where 'system == "h100-sxm-dgx"' >/dev/null 2>err.txt
rc=$?
set -e
cat err.txt
grep -q "verify: out.h5: none of the 6 selected feasible configurations is on a system with a measured network level" err.txt
[ "$rc" -eq 1 ]
# A --where that no stored configuration meets is named.
set +e
mpirun -np 2 "$CLUSTERDSE" verify out.h5 --where 'tp == 2' >/dev/null 2>err.txt
rc=$?
set -e
cat err.txt
grep -q "verify: out.h5: none of the 24 configurations of /top (the best the job's objective kept, objective.top) is feasible and selected by --where tp == 2" err.txt
[ "$rc" -eq 1 ]
echo "fit_logs: ok"
