#!/usr/bin/env bash
# objective.memory_headroom: the quick start's winners (its /top, 10 per system and cluster size)
# reserve at most HBM x (1 - headroom) (issue 25), on a reduced quick start (one cluster size,
# 1024 GPUs, every system and strategy axis of jobs/quickstart.cfg: ~1.5 M configurations).
# Without the headroom (0) some winner of the same job is above the default line (the check can
# fail), and the configurations it removes are counted as over_headroom in /counts. A value out
# of its range is refused with the file, line and allowed values.
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
job() { # HEADROOM_LINE
    sed -e 's/^  gpus = .*/  gpus = [ 1024 ];/' -e 's/store = "feasible"; };/store = "best"; '"$1"' };/' \
        "$CDSE_SRC/jobs/quickstart.cfg"
}
job "" >d.cfg
job "memory_headroom = 0.0;" >z.cfg
job "memory_headroom = 0.2;" >w.cfg
grep -q 'gpus = \[ 1024 \]' d.cfg && grep -q 'memory_headroom = 0.0;' z.cfg
above() { # STORE FRACTION: /top rows whose reserved memory is above HBM x FRACTION
    "$CLUSTERDSE" top "$1" --from top -n 100000 --csv --where "mem_reserved_gib > hbm_gib * $2" |
        tail -n +2 | wc -l
}
winners() { "$CLUSTERDSE" top "$1" --from top -n 100000 --csv | tail -n +2 | wc -l; }
for j in d z w; do
    expect 0 '' "$CLUSTERDSE" sweep $j.cfg -o $j.h5 --quiet
done
[ "$(winners d.h5)" = 50 ] || { echo "memory_headroom: $(winners d.h5) winners, expected 50"; exit 1; }
n=$(above d.h5 0.95)
echo "default headroom 0.05: $n of 50 winners above 0.95 x HBM"
[ "$n" = 0 ] || { echo "memory_headroom: $n winners above the default line"; exit 1; }
n=$(above w.h5 0.8)
echo "headroom 0.2: $n of 50 winners above 0.8 x HBM"
[ "$n" = 0 ] || { echo "memory_headroom: $n winners above the 0.2 line"; exit 1; }
n=$(above z.h5 0.95)
echo "headroom 0: $n of 50 winners above 0.95 x HBM"
[ "$n" -gt 0 ] || { echo "memory_headroom: without headroom no winner is above 0.95 x HBM"; exit 1; }
n=$(above z.h5 1.0)
[ "$n" = 0 ] || { echo "memory_headroom: headroom 0 lets $n winners reserve more than HBM"; exit 1; }
py=/usr/bin/python3
if "$py" -c 'import h5py' 2>/dev/null; then
    "$py" - d.h5 z.h5 <<'PY'
import sys, h5py
def count(path, name):
    with h5py.File(path, 'r') as f:
        return {r[0].decode(): int(r[1]) for r in f['counts'][:]}[name]
d, z = count(sys.argv[1], 'over_headroom'), count(sys.argv[2], 'over_headroom')
print(f"over_headroom: {d} at the default headroom, {z} at headroom 0")
assert d > z > 0, (d, z)
PY
fi
sed 's/memory_headroom = 0.0;/memory_headroom = 0.7;/' z.cfg >bad.cfg
expect 1 "bad.cfg:[0-9]+: key 'objective.memory_headroom'.*0.5" "$CLUSTERDSE" sweep bad.cfg -o bad.h5
echo "memory_headroom: ok"
