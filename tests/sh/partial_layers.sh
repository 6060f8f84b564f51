#!/usr/bin/env bash
# Partial activation offload (space.offload_layers) and block recomputation
# (space.recompute_layers) as sweep axes: a job sweeps and stores the column, a value that cannot
# run is a status counted by reason (offload_layers_invalid, recompute_layers_invalid: without
# activation offload / full recomputation, or not below a chunk's layers), fewer offloaded layers
# leave fewer bytes on the tier, fewer recomputed layers cost less recomputation and keep more
# activations, and a value wrong in itself is an error naming file:line and the key.
set -euo pipefail
: "${CLUSTERDSE:?} ${CDSE_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "partial_layers: $*" >&2; exit 1; }
run() { echo "+ $*" >&2; "$@"; }
# check_store JOB KEY VALUES: a sweep of JOB stores the column KEY with exactly the values VALUES
# (comma-separated), the space keeps them, and 5 configurations are counted as KEY_invalid.
check_store() {
    run mpirun -np 2 "$CLUSTERDSE" sweep "$1" -o "$2.h5" --quiet > /dev/null
    /usr/bin/python3 - "$2.h5" "$2" "$3" <<'PY'
import sys
import h5py
path, key, want = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3].split(",")]
with h5py.File(path, "r") as f:
    rows = f["results"][:]
    assert sorted(set(rows[key].tolist())) == want, rows[key]
    counts = {r["name"].decode(): int(r["count"]) for r in f["counts"][:]}
    assert counts[key + "_invalid"] == 5, counts
    assert list(f["space"][key][:]) == want, f["space"][key][:]
PY
}
job=$CDSE_SRC/tests/jobs/partial_layers.cfg

run "$CLUSTERDSE" eval "$job" --csv > eval.csv
[ "$(tail -n +2 eval.csv | wc -l)" -eq 12 ] || fail "eval: not 12 rows"
# Columns by name; per (pp, offload, offload_layers): status and GiB on the tier.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { print $c["pp"], $c["offload"], $c["offload_layers"], $c["status"], $c["mem_offloaded_gib"] }' \
    eval.csv > rows.txt
cat rows.txt >&2
# Invalid: offload_layers > 0 without activation offload (2 x 2), 12 layers of a 12-layer chunk.
[ "$(grep -c ' offload_layers_invalid ' rows.txt)" -eq 5 ] || fail "not 5 offload_layers_invalid"
grep -q '^2 activations 12 offload_layers_invalid ' rows.txt || fail "pp 2, 12 of 12 layers accepted"
grep -q '^1 activations 12 ok ' rows.txt || fail "pp 1, 12 of 24 layers rejected"
grep -q '^1 none 0 ok 0$' rows.txt || fail "no offload: something on the tier"
awk '$1 == 1 && $2 == "activations" { g[$3] = $5 }
     END { exit !(g[0] > g[12] && g[12] > g[4] && g[4] > 0) }' rows.txt ||
    fail "pp 1: tier bytes not ordered all > 12 layers > 4 layers > 0"

check_store "$job" offload_layers 0,4,12

check_bad() { # FILE KEY
    set +e
    "$CLUSTERDSE" eval "$CDSE_SRC/tests/jobs/$1" > out.txt 2> err.txt
    rc=$?
    set -e
    cat err.txt >&2
    [ "$rc" -eq 1 ] || fail "$1: exit $rc, expected 1"
    grep -q "$1:7: key '$2'.*allowed: " err.txt || fail "$1: message lacks file:line, key or allowed"
}
check_bad bad_offload_layers.cfg space.offload_layers

job=$CDSE_SRC/tests/jobs/partial_recompute.cfg
run "$CLUSTERDSE" eval "$job" --csv > rec.csv
[ "$(tail -n +2 rec.csv | wc -l)" -eq 12 ] || fail "recompute: not 12 rows"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { print $c["pp"], $c["recompute"], $c["recompute_layers"], $c["status"],
                 $c["t_recompute_s"], $c["mem_activations_gib"] }' rec.csv > rec.txt
cat rec.txt >&2
[ "$(grep -c ' recompute_layers_invalid ' rec.txt)" -eq 5 ] || fail "not 5 recompute_layers_invalid"
grep -q '^2 full 12 recompute_layers_invalid ' rec.txt || fail "pp 2, 12 of 12 layers accepted"
awk '$1 == 1 && $2 == "full" { t[$3] = $5; a[$3] = $6 }
     END { exit !(t[0] > t[12] && t[12] > t[6] && t[6] > 0 && a[6] > a[12] && a[12] > a[0]) }' \
    rec.txt || fail "pp 1: recomputation time or activations not ordered by recomputed layers"
check_store "$job" recompute_layers 0,6,12
check_bad bad_recompute_layers.cfg space.recompute_layers
echo "partial_layers: ok"
