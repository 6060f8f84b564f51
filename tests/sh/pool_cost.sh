#!/usr/bin/env bash
# Issue 30: a heterogeneous pool's cost, energy and purchase budget in the sweep's record. The
# pool of tests/jobs/good_pool.cfg (16 A100 + 16 H100; a 16-GPU configuration takes 8 of each, a
# 32-GPU one 16 of each) with a token budget, an electricity price and objective.budget = 700,000:
#   purchase price = g x 25,000 (a100-80g-dgx.cfg cost.gpu_price) + g x 35,000 (h100-sxm-dgx.cfg)
#     16 GPUs: 8 x 60,000 = 480,000 <= 700,000: ok;  32 GPUs: 16 x 60,000 = 960,000: over_budget
#   power P = 1.2 x (g x 400 + ceil(g / 8) x 3,300) + 1.2 x (g x 700 + ceil(g / 8) x 4,600) W
#     (the profiles' pue, gpu_power, node_power; model/cost.h cdse_pool_bill, each type's bill)
#   cost = sum over the two types of g x gpu_price x seconds / (5 years of 365.25 days)
#          + P x seconds / 3.6e6 kWh x 0.10; energy = P x seconds / 3.6e9 MWh;
#   tokens_per_kwh = tokens_per_s x 3.6e6 / P; seconds = 1e11 tokens / tokens_per_s.
# Computed here from those inputs (not from the program's code) for every row; the rows over the
# budget train nothing (cost 0) and are counted as over_budget.
set -euo pipefail
: "${CLUSTERDSE:?}" "${CDSE_SRC:?}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed 's/global_batch = 256; };/global_batch = 256; };\nobjective = { metric = "cost_to_train"; tokens = 1e11; electricity_price = 0.10; budget = 700000.0; };/' \
    "$CDSE_SRC/tests/jobs/good_pool.cfg" >"$dir/job.cfg"
grep -q 'budget = 700000' "$dir/job.cfg" || { echo "pool_cost: the job was not written"; exit 1; }
echo "+ $CLUSTERDSE eval job.cfg --csv"
"$CLUSTERDSE" eval "$dir/job.cfg" --csv >"$dir/rows.csv"
/usr/bin/python3 - "$dir/rows.csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 8, len(rows)
year = 365.25 * 86400.0
for r in rows:
    gpus, tps = int(r["gpus"]), float(r["tokens_per_s"])
    g = gpus // 2
    nodes = math.ceil(g / 8)
    power = 1.2 * (g * 400 + nodes * 3300) + 1.2 * (g * 700 + nodes * 4600)
    if gpus == 32:
        assert r["status"] == "over_budget", (r["index"], r["status"])
        assert float(r["cost_to_train"]) == 0.0 and float(r["energy_to_train_mwh"]) == 0.0, r
        continue
    assert r["status"] == "ok", (r["index"], r["status"])
    s = 1e11 / tps
    cost = g * 25000 * s / (5 * year) + g * 35000 * s / (5 * year) + power * s / 3.6e6 * 0.10
    for col, want in (("cost_to_train", cost), ("energy_to_train_mwh", power * s / 3.6e9),
                      ("tokens_per_kwh", tps * 3.6e6 / power)):
        got = float(r[col])
        assert abs(got - want) <= 1e-5 * want, (r["index"], col, got, want)
print(f"pool_cost: 4 rows at 16 GPUs billed as their two types (cost, energy, tokens/kWh within "
      f"1e-5 of the hand formula), 4 rows at 32 GPUs over_budget")
PY
echo "pool_cost: ok"
