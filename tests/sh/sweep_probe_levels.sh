#!/usr/bin/env bash
# Issue 27: a job's probe section writes only the levels it measured where they were measured.
# A probe on one node measures MPI on host buffers over shared memory (a few GB/s on this VM),
# not NCCL over NVLink (h100-sxm-dgx: 450 GB/s x efficiency 0.82 = 369 GB/s, its profile's
# sources [1] and [4]). Checks, on 2 ranks of one node with the quick plan:
#   - default (no probe.levels): no level changes: the fitted profile's network is the
#     datasheet's (the literal network of calibration/systems/h100-sxm-dgx.cfg) and the measured
#     copy's TP communication times equal the datasheet system's; one line says none was taken;
#     `clusterdse fit --job` writes the same bytes;
#   - levels = [ "nvlink" ] without force: refused with the level, both bandwidths and the
#     remedy, exit 1 on every rank, neither store nor fitted profile written;
#   - with force: nvlink takes the fit (measured = "probes", every collective below 369/3 GB/s),
#     ib keeps its datasheet values, TP communication slower than the datasheet's;
#   - an unknown level name: an error at file:line naming the allowed names, exit 1.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() { echo "+ $*" >&2; "$@"; }
job() { # job FILE PROBE-EXTRA
    cat >"$1" <<JOB
name = "probe-levels";
models = ( "gpt3-1.3b" );
systems = ( { base = "h100-sxm-dgx"; name = "measured"; }, "h100-sxm-dgx" );
space = { gpus = [ 8 ]; tp = [ 1, 2, 4 ]; global_batch = [ 64 ]; };
objective = { store = "all"; };
probe = { plan = "quick"; systems = [ "measured" ];$2 };
JOB
}
# Each rank's exit code, to check that every rank stops.
cat >rank.sh <<SH
#!/bin/sh
"$CLUSTERDSE" "\$@"; rc=\$?; echo \$rc >"$tmp/rank\$OMPI_COMM_WORLD_RANK.rc"; exit \$rc
SH
chmod +x rank.sh
datasheet_network=$(printf '%s\n' 'network = (' '  {' '    name = "nvlink";' '    size = 8;' \
    '    bandwidth = 450.0;' '    latency = 3.4;' '    efficiency = 0.82;' '    port_price = 0.0;' \
    '  },' '  {' '    name = "ib";' '    size = 0;' '    bandwidth = 50.0;' '    latency = 14.0;' \
    '    efficiency = 0.9;' '    port_price = 0.0;' '  }' ');')

echo "== default: a one-node probe changes no level"
job default.cfg ""
run mpirun -np 2 "$CLUSTERDSE" sweep default.cfg -o default.h5 >/dev/null 2>default.err ||
    { cat default.err; exit 1; }
grep '^sweep: probe: system' default.err
grep -q '^sweep: probe: system measured: measured nvlink (intra_node rows); none taken (probe.levels not given: only the outermost level): name a level in probe.levels' default.err
grep -q '^sweep: probe: 0 fitted (level, collective) pairs applied to system measured' default.err
run diff <(sed -n '/^network = (/,$p' default.fitted-measured.cfg) <(echo "$datasheet_network")
run "$CLUSTERDSE" fit default.probes.h5 --job default.cfg --system measured -o cli.cfg >/dev/null
run cmp default.fitted-measured.cfg cli.cfg
CDSE_PY="$CDSE_SRC/python" /usr/bin/python3 - default.h5 equal <<'PY'
import os, sys
sys.path.insert(0, os.environ["CDSE_PY"])
from clusterdse import load
d = load(sys.argv[1])
ok = d[(d.status == "ok") & (d.tp > 1)]
cols = ["tp", "pp", "dp", "microbatch", "zero"]
cols = [c for c in cols if c in ok.columns]
m = ok[ok.system == "measured"].sort_values(cols).t_tp_comm_s.to_numpy()
s = ok[ok.system == "h100-sxm-dgx"].sort_values(cols).t_tp_comm_s.to_numpy()
assert len(m) > 0 and len(m) == len(s), (len(m), len(s))
ratio = (m / s).mean()
print(f"TP communication measured / datasheet: {ratio:.4g} over {len(m)} configurations")
if sys.argv[2] == "equal":
    assert (m == s).all(), list(zip(m, s))
else:
    assert ratio > 10, ratio
PY

echo "== levels = [ \"nvlink\" ] without force: refused"
job refused.cfg ' levels = [ "nvlink" ];'
set +e
run mpirun -np 2 "$CLUSTERDSE" sweep refused.cfg -o refused.h5 >/dev/null 2>refused.err
code=$?
set -e
grep -E 'refused|probe:' refused.err
[ "$code" -eq 1 ] || { echo "mpirun exit $code, expected 1"; exit 1; }
# Every rank exits 1 (none hangs or exits 0). Run again with each rank's code recorded, and
# mpirun told not to kill the other ranks as soon as one exits non-zero: otherwise a rank that
# exits a moment later leaves no .rc file (CI saw rank 1 killed before writing its code).
rm -f rank*.rc
set +e
OMPI_MCA_orte_abort_on_non_zero_status=0 \
    run mpirun -np 2 ./rank.sh sweep refused.cfg -o refused.h5 >/dev/null 2>/dev/null
set -e
for r in 0 1; do
    [ "$(cat "rank$r.rc")" = 1 ] || { echo "rank $r exit $(cat "rank$r.rc"), expected 1"; exit 1; }
done
grep -qE "^sweep: probe: level nvlink: fitted allreduce bandwidth [0-9.]+ GB/s \(intra_node rows\) is [0-9.]+x below measured's 369 GB/s \(measured level nvlink\); refused: .*set probe.force = true$" refused.err
grep -q "^clusterdse sweep: probe: system measured: [1-5] fitted bandwidth(s) more than 3x away from the system's own" refused.err
[ ! -e refused.h5 ] && [ ! -e refused.fitted-measured.cfg ] ||
    { echo "refused: a store or profile was written"; exit 1; }

echo "== with force: nvlink takes the fit, ib keeps the datasheet's"
job forced.cfg ' levels = [ "nvlink" ]; force = true;'
run mpirun -np 2 "$CLUSTERDSE" sweep forced.cfg -o forced.h5 >/dev/null 2>forced.err ||
    { cat forced.err; exit 1; }
grep -qE "^sweep: probe: level nvlink: fitted allreduce bandwidth [0-9.]+ GB/s .*; written anyway$" forced.err
grep -q '^sweep: probe: 5 fitted (level, collective) pairs applied to system measured' forced.err
sed -n '/^network = (/,$p' forced.fitted-measured.cfg
/usr/bin/python3 - forced.fitted-measured.cfg <<'PY'
import re, sys
text = open(sys.argv[1]).read()
net = text[text.index("network = ("):]
nvlink, ib = net.split('name = "ib";')
assert 'measured = "probes";' in nvlink and "measured" not in ib, net
bws = [float(b) for b in re.findall(r"\b(?:allreduce|allgather|reduce_scatter|alltoall|sendrecv) = "
                                    r"\{ latency = [0-9.e+-]+; bandwidth = ([0-9.e+-]+); \}", nvlink)]
assert len(bws) == 5 and max(bws) < 369 / 3, bws  # 3x below NVLink's effective 369 GB/s
assert "bandwidth = 50.0;" in ib and "latency = 14.0;" in ib and "efficiency = 0.9;" in ib, ib
print("nvlink fitted bandwidths (GB/s):", bws)
PY
CDSE_PY="$CDSE_SRC/python" /usr/bin/python3 - forced.h5 slower <<'PY'
import os, sys
sys.path.insert(0, os.environ["CDSE_PY"])
from clusterdse import load
d = load(sys.argv[1])
ok = d[(d.status == "ok") & (d.tp > 1)]
m = ok[ok.system == "measured"].t_tp_comm_s.mean()
s = ok[ok.system == "h100-sxm-dgx"].t_tp_comm_s.mean()
print(f"TP communication: measured {m:.4g} s, datasheet {s:.4g} s")
assert m > 10 * s, (m, s)  # a few GB/s against 369 GB/s
PY

echo "== an unknown level name: an error at file:line"
job bad.cfg ' levels = [ "nvlnk" ];'
set +e
run "$CLUSTERDSE" sweep bad.cfg -o bad.h5 >/dev/null 2>bad.err
code=$?
set -e
cat bad.err
[ "$code" -eq 1 ] && [ ! -e bad.h5 ] && [ ! -e bad.probes.h5 ]
grep -qF "bad.cfg:6: key 'probe.levels': 'nvlnk' is not a level a probe measures on the probe systems; allowed: \"intra_node\", \"inter_node\", \"nvlink\" (innermost level of measured), \"ib\" (outermost level of measured)" bad.err
echo "sweep_probe_levels: ok"
