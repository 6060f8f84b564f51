#!/usr/bin/env bash
# Hardware axes (issue 12, step 1): a list on a numeric key of a system entry is a sweep axis.
# Every row of a job with axes equals the row of the same strategy in a job that gives those
# hardware values as scalars (the applied system is the written one); the hardware values are
# store columns usable in --where and --by; the effective job reproduces the axes; stores are
# identical on 1 and 2 ranks; axes on two system entries apply each to its own entry, the
# repeats counted as other_system_axis; bad axes give file:line, the key and what is allowed,
# exit 1.
set -u
bin=${CLUSTERDSE:?} src=${CDSE_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run() { echo "+ $*"; "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
job=$src/tests/jobs/good_hw_axes.cfg

run "$bin" eval "$job" --csv --all
[ "$rc" -eq 0 ] || fail "eval: exit $rc: $(cat "$tmp/err")"
rows=$(($(wc -l <"$tmp/out") - 1))
[ "$rows" -eq 384 ] || fail "$rows rows, expected 24 designs x 16 strategies = 384"
cp "$tmp/out" "$tmp/axes.csv"
col() { head -1 "$tmp/axes.csv" | tr , '\n' | grep -nx "$1" | cut -d: -f1; }
c_hbm=$(col hbm_gib) c_n0=$(col net0_size) c_b1=$(col net1_bandwidth_gbs) c_tb=$(col tier_bandwidth_gbs)
[ -n "$c_hbm" ] && [ -n "$c_n0" ] && [ -n "$c_b1" ] && [ -n "$c_tb" ] || fail "hardware columns missing"

# One design written as scalars: the same 16 rows (all columns but the index).
scalar_job() { # HBM NET0_SIZE NET1_BW TIER_BW
    sed -e "s/hbm_gib = \[[^]]*\]/hbm_gib = $1/" -e "s/size = \[ 8, 16 \]/size = $2/" \
        -e "s/bandwidth = \[ 25.0, 50.0 \]/bandwidth = $3/" \
        -e "s/bandwidth = \[ 128.0, 256.0 \]/bandwidth = $4/" "$job" >"$tmp/scalar.cfg"
}
for design in "40.0 8 25.0 128.0" "141.0 16 50.0 256.0" "79.6 16 25.0 128.0"; do
    set -- $design
    scalar_job "$@"
    grep -q '\[ 40.0' "$tmp/scalar.cfg" && fail "scalar job still has a list"
    run "$bin" eval "$tmp/scalar.cfg" --csv --all
    [ "$rc" -eq 0 ] || { fail "scalar job $design: $(cat "$tmp/err")"; continue; }
    tail -n +2 "$tmp/out" | cut -d, -f2- | sort >"$tmp/want"
    awk -F, -v h="$c_hbm" -v n="$c_n0" -v b="$c_b1" -v t="$c_tb" \
        -v H="$1" -v N="$2" -v B="$3" -v T="$4" \
        'NR > 1 && $h == H + 0 && $n == N + 0 && $b == B + 0 && $t == T + 0' "$tmp/axes.csv" |
        cut -d, -f2- | sort >"$tmp/got"
    [ "$(wc -l <"$tmp/got")" -eq 16 ] || fail "design $design: $(wc -l <"$tmp/got") rows, expected 16"
    diff -q "$tmp/want" "$tmp/got" >/dev/null || fail "design $design differs from its scalar job"
done
# The axes move results: more HBM, more feasible strategies (GPT-3 175B on 256-512 GPUs does
# not fit 40 GiB with these strategies, and fits more of them in 141 GiB than in 79.6 GiB).
ok_at() { awk -F, -v h="$c_hbm" -v H="$1" 'NR > 1 && $h == H + 0 && $21 == "ok"' "$tmp/axes.csv" | wc -l; }
ok40=$(ok_at 40) ok80=$(ok_at 79.6) ok141=$(ok_at 141)
[ "$ok40" -lt "$ok80" ] && [ "$ok80" -lt "$ok141" ] || fail "feasible rows by hbm_gib: $ok40 $ok80 $ok141"

# The effective job keeps the axes and evaluates the same.
run "$bin" eval "$job" --show-job
cp "$tmp/out" "$tmp/effective.cfg"
grep -q 'hbm_gib = \[ 40.0, 79.6, 141.0 \];' "$tmp/effective.cfg" || fail "effective job: no hbm_gib list"
run "$bin" eval "$tmp/effective.cfg" --csv --all
cmp -s "$tmp/out" "$tmp/axes.csv" || fail "the effective job evaluates differently"

# Stores: 1 and 2 ranks identical; hardware columns in --where and --by.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
run mpirun -np 1 "$bin" sweep "$job" -o "$tmp/r1.h5" --quiet
[ "$rc" -eq 0 ] || fail "sweep -np 1: $(cat "$tmp/err")"
run mpirun -np 2 "$bin" sweep "$job" -o "$tmp/r2.h5" --quiet
[ "$rc" -eq 0 ] || fail "sweep -np 2: $(cat "$tmp/err")"
for f in r1 r2; do "$bin" top "$tmp/$f.h5" --csv --all -n 1000 --by index --asc >"$tmp/$f.csv"; done
cmp -s "$tmp/r1.csv" "$tmp/r2.csv" || fail "stores differ between 1 and 2 ranks"
run "$bin" top "$tmp/r2.h5" --csv -n 1000 --where 'hbm_gib > 100 && net0_size == 16'
bad=$(tail -n +2 "$tmp/out" | awk -F, -v h="$c_hbm" -v n="$c_n0" '$h != 141 || $n != 16' | wc -l)
[ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$(wc -l <"$tmp/out")" -gt 1 ] ||
    fail "--where on hardware columns: exit $rc, $bad wrong rows"
run "$bin" top "$tmp/r2.h5" --csv -n 1 --by hbm_gib --desc
[ "$(tail -1 "$tmp/out" | cut -d, -f"$c_hbm")" = "141" ] || fail "--by hbm_gib --desc: $(tail -1 "$tmp/out")"

# group_by = [ "gpus", "design" ]: /top holds, per cluster size and design, the best 3 of the
# feasible rows (design = the hardware columns, here hbm_gib, net0_size, net1_bandwidth_gbs and
# tier_bandwidth_gbs).
groups() { # CSV: "gpus design time" of the 3 fastest feasible rows per group, sorted
    awk -F, -v h="$c_hbm" -v n="$c_n0" -v b="$c_b1" -v t="$c_tb" \
        'NR > 1 && $21 == "ok" {print $4 "/" $h "/" $n "/" $b "/" $t, $22}' "$1" |
        sort -k1,1 -k2,2g | awk '{ if (++seen[$1] <= 3) print }' | sort
}
run "$bin" top "$tmp/r2.h5" --from top --csv -n 100000
cp "$tmp/out" "$tmp/top.csv"
groups "$tmp/axes.csv" >"$tmp/want_top"
groups "$tmp/top.csv" >"$tmp/got_top"
[ "$(cut -d' ' -f1 "$tmp/want_top" | sort -u | wc -l)" -gt 24 ] || fail "fewer than 25 feasible (gpus, design) groups"
cmp -s "$tmp/want_top" "$tmp/got_top" || fail "/top per (gpus, design) differs from the rows: $(diff "$tmp/want_top" "$tmp/got_top" | head -3)"

# Bad axes: exit 1, file:line, the key, what is allowed.
bad() { # NAME SED-EXPRESSION EXPECTED-FRAGMENT
    sed -e "$2" "$job" >"$tmp/$1.cfg"
    run "$bin" eval "$tmp/$1.cfg" --csv
    [ "$rc" -eq 1 ] || fail "$1: exit $rc, expected 1"
    grep -qE "^$tmp/$1.cfg:[0-9]+: key '[^']+': .*allowed: " "$tmp/err" || fail "$1: message shape: $(cat "$tmp/err")"
    grep -qF "$3" "$tmp/err" || fail "$1: expected '$3' in: $(cat "$tmp/err")"
}
bad unsweepable 's/name = "design";/name = "design"; reserved_gib = [ 2.0, 3.0 ];/' "cannot be swept"
bad negative 's/hbm_gib = \[ 40.0/hbm_gib = [ -40.0/' "systems[0].hbm_gib"
bad toolong "s/hbm_gib = \[ 40.0, 79.6, 141.0 \]/hbm_gib = [ $(seq -s ', ' 1 65 | sed 's/\([0-9][0-9]*\)/\1.0/g') ]/" "a hardware axis of 65 values"
bad duplicate 's/hbm_gib = \[ 40.0, 79.6, 141.0 \]/hbm_gib = [ 40.0, 40.0 ]/' "appears twice"
bad reserved 's/hbm_gib = \[ 40.0/hbm_gib = [ 0.25/' "reserved_gib"  # below the CUDA context's 0.5 GiB
bad negprice 's/name = "design";/name = "design"; cost = { gpu_price = -1.0; };/' "systems[0].cost.gpu_price"
bad priceaxis 's/name = "design";/name = "design"; cost = { gpu_price = [ 1.0, -1.0 ]; };/' "systems[0].cost.gpu_price"

# Axes on two system entries (tests/jobs/good_hw_axes_systems.cfg): each applies to its own
# entry. 128 configurations: h100x evaluates its 2 HBM values x 8 strategies, b200x its 2 x 2
# network values x 8; the other 128 - 16 - 32 = 80 carry status other_system_axis. The rows
# evaluated equal, column for column (index aside), those of a job listing that entry alone.
two=$src/tests/jobs/good_hw_axes_systems.cfg
run "$bin" eval "$two" --csv --all
[ "$rc" -eq 0 ] || fail "two systems: exit $rc: $(cat "$tmp/err")"
cp "$tmp/out" "$tmp/two.csv"
tally=$(awk -F, 'NR > 1 { n[$3 "/" ($21 == "other_system_axis" ? "dup" : "own")]++ }
                 END { print n["h100x/own"] + 0, n["h100x/dup"] + 0, n["b200x/own"] + 0, n["b200x/dup"] + 0 }' "$tmp/two.csv")
[ "$tally" = "16 48 32 32" ] || fail "two systems: own/repeated rows per system $tally, expected 16 48 32 32"
sed -e '/name = "b200x";/,/} ); } );/d' -e 's/hbm_gib = \[ 79.6, 141.0 \]; },/hbm_gib = [ 79.6, 141.0 ]; } );/' \
    "$two" >"$tmp/h100x.cfg"
sed -e '/name = "h100x";/d' -e 's/^ *{ base = "b200-dgx"; name = "b200x";/systems = ( { base = "b200-dgx"; name = "b200x";/' \
    "$two" >"$tmp/b200x.cfg"
for sys in h100x b200x; do
    run "$bin" eval "$tmp/$sys.cfg" --csv --all
    [ "$rc" -eq 0 ] || { fail "$sys alone: exit $rc: $(cat "$tmp/err")"; continue; }
    tail -n +2 "$tmp/out" | cut -d, -f2- | sort >"$tmp/want"
    awk -F, -v s="$sys" 'NR > 1 && $3 == s && $21 != "other_system_axis"' "$tmp/two.csv" |
        cut -d, -f2- | sort >"$tmp/got"
    [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got" || fail "$sys: its rows differ from the job that lists it alone"
done
# The store counts the repeats (store = "all": every row, and /counts agrees).
run mpirun -np 2 "$bin" sweep "$two" -o "$tmp/two.h5" --quiet
[ "$rc" -eq 0 ] || fail "two systems sweep: $(cat "$tmp/err")"
run "$bin" top "$tmp/two.h5" --all -n 1000 --csv --where 'status == "other_system_axis"'
[ "$(($(wc -l <"$tmp/out") - 1))" -eq 80 ] || fail "two systems: $(($(wc -l <"$tmp/out") - 1)) other_system_axis rows stored"
/usr/bin/python3 -c 'import h5py, sys
c = {r["name"].decode(): int(r["count"]) for r in h5py.File(sys.argv[1], "r")["counts"][:]}
assert c["evaluated"] == 128 and c["other_system_axis"] == 80, c' "$tmp/two.h5" ||
    fail "two systems: /counts"

[ "$failures" -eq 0 ] || { echo "hw_axes: $failures failures"; exit 1; }
echo "hw_axes: ok"
