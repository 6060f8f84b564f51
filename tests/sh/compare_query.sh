#!/usr/bin/env bash
# compare: --where and --gpus pick the best per system among the matching rows; the cost lines
# say what cost_to_train includes; a store with only /top (store = "best") answers what /top
# holds and refuses what it cannot answer (issue 26 item 6, issue 31 M6). Every expected value
# is taken from the rows of the store = "all" sweep of the same space (export, awk), not from
# compare.
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
jobs=$CDSE_SRC/tests/jobs/compare
fail() { echo "compare_query: $*"; exit 1; }
for j in all best best_per_system; do
    expect 0 '' mpirun -np 2 "$CLUSTERDSE" sweep "$jobs/$j.cfg" -o $j.h5 --quiet
done
expect 0 '' "$CLUSTERDSE" export all.h5 --feasible -o all.csv

# best SYSTEM COLUMN [min|max] [AWK-CONDITION]: the best value of COLUMN among SYSTEM's feasible
# rows (all.csv) that satisfy the condition, printed as compare prints it (%.6g).
best() {
    awk -F, -v s="$1" -v col="$2" -v dir="${3:-min}" "
        NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
        \$c[\"system\"] == s && (${4:-1}) {
            v = \$c[col] + 0
            if (!n++ || (dir == \"min\" ? v < b : v > b)) b = v
        }
        END { if (n) printf \"%.6g\", b; else print \"none\" }" all.csv
}
# cell FILE QUANTITY K: the value (without its ratio) in column K (1 = the first system).
cell() { awk -v q="$2" -v k="$3" '$1 == q { n = 0; for (i = 2; i <= NF; i++) if ($i !~ /^\(/) if (++n == k) print $i }' "$1"; }

# M6: the 2 best overall (group_by = []) are both b200's; a100 and h100 have feasible rows that
# are not in /top, which compare must not call "no feasible configuration".
expect 0 '' "$CLUSTERDSE" compare best.h5
cp out.txt best.txt
grep -q 'no feasible' best.txt && fail "best.h5: 'no feasible' for a system with feasible rows: $(grep 'no feasible' best.txt)"
grep -q '^# /top holds the 2 best overall by time_to_train (objective.store = "best"' best.txt ||
    fail "best.h5: what /top holds is not said: $(head -3 best.txt)"
grep -q '^# a100-80g-dgx: none of its configurations is among the rows of /top' best.txt ||
    fail "best.h5: a100's absence is not explained"
[ "$(cell best.txt time_to_train_days 1)" = "$(best b200-dgx time_to_train_days)" ] ||
    fail "best.h5: b200 $(cell best.txt time_to_train_days 1), all.csv $(best b200-dgx time_to_train_days)"

# /top grouped by system answers by the job's metric, and refuses another metric, --where, and
# --gpus (group_by has no gpus).
expect 0 '' "$CLUSTERDSE" compare best_per_system.h5
for k in 1 2 3; do
    s=$(awk '/^# quantity/ { print $(2 + '$k') }' out.txt)
    [ "$(cell out.txt time_to_train_days $k)" = "$(best "$s" time_to_train_days)" ] ||
        fail "best_per_system.h5: $s $(cell out.txt time_to_train_days $k), all.csv $(best "$s" time_to_train_days)"
done
expect 1 'the best by another metric than the job.s is not stored; /top holds the 1 best per system by time_to_train' \
    "$CLUSTERDSE" compare best_per_system.h5 --by mfu
[ -s out.txt ] && fail "--by mfu on /top printed values"
expect 1 'matching an expression are not stored' "$CLUSTERDSE" compare best_per_system.h5 --where 'tp==1'
expect 1 'only with group_by including "gpus"' "$CLUSTERDSE" compare best_per_system.h5 --gpus 64

# /results: --by mfu gives each system's highest MFU (the finding: 0.661 / 0.505 / 0.568).
expect 0 '' "$CLUSTERDSE" compare all.h5 --by mfu
for k in 1 2 3; do
    s=$(awk '/^# quantity/ { print $(2 + '$k') }' out.txt)
    [ "$(cell out.txt mfu $k)" = "$(best "$s" mfu max)" ] ||
        fail "all.h5 --by mfu: $s $(cell out.txt mfu $k), all.csv $(best "$s" mfu max)"
done

# --gpus and --where: the best among the matching rows, said in the heading.
expect 0 '' "$CLUSTERDSE" compare all.h5 --gpus 64 --where 'recompute=="full" && tp<=2'
grep -q '^# best per system by time_to_train (lower is better) among [0-9]* feasible rows of /results on 64 GPUs where recompute=="full" && tp<=2;' out.txt ||
    fail "heading: $(head -1 out.txt)"
for k in 1 2 3; do
    s=$(awk '/^# quantity/ { print $(2 + '$k') }' out.txt)
    want=$(best "$s" time_to_train_days min '$c["gpus"] == 64 && $c["recompute"] == "full" && $c["tp"] <= 2')
    [ "$(cell out.txt time_to_train_days $k)" = "$want" ] || fail "--gpus 64 --where: $s $(cell out.txt time_to_train_days $k), all.csv $want"
    [ "$(cell out.txt gpus $k)" = 64 ] || fail "--gpus 64: $s on $(cell out.txt gpus $k) GPUs"
done
# The configuration knobs that differ between the systems' best rows are printed: here zero
# (checked against the rows), never the ones that are the same.
zeros=$(for s in a100-80g-dgx h100-sxm-dgx b200-dgx; do
    awk -F, -v s=$s 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["system"] == s && $c["gpus"] == 64 && $c["recompute"] == "full" && $c["tp"] <= 2 { print $c["time_to_train_days"], $c["index"], $c["zero"] }' all.csv |
        sort -g -k1,1 -k2,2n | head -1 | cut -d' ' -f3; done | sort -u | wc -l)
if [ "$zeros" -gt 1 ]; then grep -q '^  zero ' out.txt || fail "zero differs but is not printed"; else
    ! grep -q '^  zero ' out.txt || fail "zero is the same but printed"; fi
! grep -q '^  recompute ' out.txt || fail "recompute (full in every row) printed"
expect 1 'gpus has no|--gpus 0: allowed: a positive integer' "$CLUSTERDSE" compare all.h5 --gpus 0
expect 1 '--where position' "$CLUSTERDSE" compare all.h5 --where 'tp=='
expect 0 '' "$CLUSTERDSE" compare all.h5 --gpus 96
grep -q '^# a100-80g-dgx: no feasible configuration that matches$' out.txt || fail "--gpus 96: $(cat out.txt)"

# Cost: without objective.electricity_price the line says electricity is left out; with a price
# it is added, and cost_to_train grows by energy x price exactly (docs/job-file.md, Cost and
# energy): the same configuration at 0.1 per kWh costs energy_to_train_mwh x 1000 x 0.1 more.
expect 0 '' "$CLUSTERDSE" compare all.h5
grep -q '^# cost_to_train of b200-dgx: purchase per GPU (GPU [0-9.e+]* + facility [0-9.e+]* + network ports [0-9.e+]* USD) amortized over [0-9.]* years; electricity left out (the job sets no objective.electricity_price)$' out.txt ||
    fail "cost line: $(grep cost_to_train out.txt)"
cp out.txt nopower.txt
sed 's/objective = {/objective = { electricity_price = 0.1;/' "$jobs/all.cfg" >power.cfg
expect 0 '' mpirun -np 2 "$CLUSTERDSE" sweep power.cfg -o power.h5 --quiet
expect 0 '' "$CLUSTERDSE" compare power.h5
grep -q '^# cost_to_train of b200-dgx: purchase per GPU .* amortized over [0-9.]* years + electricity at 0.1 USD per kWh (PUE [0-9.]*)$' out.txt ||
    fail "cost line with a price: $(grep cost_to_train out.txt)"
for k in 1 2 3; do
    [ "$(cell out.txt time_to_train_days $k)" = "$(cell nopower.txt time_to_train_days $k)" ] || fail "a price moved the best"
    awk -v a="$(cell nopower.txt cost_to_train $k)" -v b="$(cell out.txt cost_to_train $k)" \
        -v e="$(cell out.txt energy_to_train_mwh $k)" \
        'BEGIN { d = b - (a + e * 1000 * 0.1); exit !(d * d < (1e-5 * b) ^ 2) }' ||
        fail "cost with electricity: $(cell out.txt cost_to_train $k) != $(cell nopower.txt cost_to_train $k) + $(cell out.txt energy_to_train_mwh $k) MWh x 100"
done
echo "compare_query: ok"
