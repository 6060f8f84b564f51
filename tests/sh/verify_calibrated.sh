#!/usr/bin/env bash
# Issue 4: a calibrated sweep end to end: probe this machine, fit, sweep with the fitted network
# (network_profile), verify the best configurations. /verify must hold predicted and measured
# times for every replayed collective, predictions that follow the fitted parameters (checked
# by hand formula below), and the scaling said where the allocation is smaller.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cat >plan.cfg <<'PLAN'
collectives = [ "allreduce", "allgather", "reduce_scatter", "alltoall", "sendrecv" ];
sizes = { from = 1024; to = 1048576; };
time_budget_ms = 10.0;
PLAN
run() { echo "+ $*" >&2; "$@"; }
run mpirun -np 2 "$CLUSTERDSE" probe plan.cfg -o probes.h5 >probe.txt
run "$CLUSTERDSE" fit probes.h5 -o fitted.cfg >fit.txt
cat >job.cfg <<'JOB'
name = "calibrated";
models = ( "llama2-7b" );
systems = ( { base = "h100-sxm-dgx"; name = "h100-vm-net"; network_profile = "fitted.cfg"; } );
space = { gpus = [ 16 ]; tp = [ 2, 4 ]; pp = [ 1, 2 ]; microbatch = [ 1 ]; global_batch = [ 256 ];
          recompute = [ "selective" ]; sequence_parallel = [ true, false ]; zero = [ 0, 1 ];
          precision = [ "bf16" ]; };
objective = { metric = "time_per_iteration"; top = 4; store = "feasible"; };
JOB
run mpirun -np 2 "$CLUSTERDSE" sweep job.cfg -o out.h5 >/dev/null 2>sweep.txt || { cat sweep.txt; exit 1; }
run mpirun -np 2 "$CLUSTERDSE" verify out.h5 -n 2 --max-bytes 1048576 --time-budget 10 | tee verify.txt
grep -q '^# median measured / predicted: ' verify.txt
echo "+ /usr/bin/python3 (check out.h5/verify against fitted.cfg)"
/usr/bin/python3 - <<'PY'
import re, h5py
text = open("fitted.cfg").read()
fit = {c: (float(l), float(b)) for c, l, b in
       re.findall(r'(\w+) = \{ latency = ([\d.e+-]+); bandwidth = ([\d.e+-]+); \}', text)}
v = h5py.File("out.h5", "r")["verify"][:]
assert len(v) > 0
tops = set()
for r in v:
    c, n, b = r["collective"].decode(), int(r["run_group_size"]), float(r["run_bytes"])
    tops.add(int(r["top_rank"]))
    lat, bw = fit[c]
    # One fitted level spanning the machine (single node): the ring formulas of collective.c
    # with the fitted latency (us) and bandwidth (GB/s = 1e3 B/us).
    steps, vol = {"allreduce": (2 * (n - 1), 2 * (n - 1) / n), "allgather": (n - 1, (n - 1) / n),
                  "reduce_scatter": (n - 1, (n - 1) / n), "alltoall": (n - 1, (n - 1) / n),
                  "sendrecv": (1, 1.0)}[c]
    want = steps * lat + vol * b / (bw * 1e3)
    assert abs(r["predicted_run_us"] - want) <= 1e-6 * want, (c, r["predicted_run_us"], want)
    assert r["measured_us"] > 0 and r["measured_avg_us"] > 0
    assert abs(r["ratio"] - r["measured_us"] / r["predicted_run_us"]) <= 1e-9 * r["ratio"]
    assert n <= 2 and b <= 1048576
    scaled = (n != r["group_size"] or r["run_stride"] != r["stride"] or b != r["bytes"])
    assert bool(r["scaled"]) == scaled
    assert r["comm"].decode() in ("tp", "cp", "ep", "pp", "dp", "edp")
    assert r["calls"] > 0 and 0 < r["exposed_share"] <= 1
assert tops == {1, 2}, tops
print(f"ok: {len(v)} verify rows, predictions follow fitted.cfg")
PY
echo "verify_calibrated: ok"
