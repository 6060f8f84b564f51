#!/usr/bin/env bash
# The figures that prose paragraphs of README.md and docs/*.md state, as the current build gives
# them: a paragraph marked <!-- figures: bash scripts/doc_figures.sh NAME --> must contain every
# line this prints for NAME (scripts/regen_docs.py, "Numbers in prose"; checked by
# tests/sh/docs_current.sh). Runs in regen_docs' scratch directory (`clusterdse` on PATH,
# results/quickstart.h5 swept, the stores of the blocks above swept).
#   scripts/doc_figures.sh NAME       NAME: quickstart-rows, pool, goodput, stacks,
#                                     grids, grids-total, reserves, bands
set -euo pipefail
export PYTHONPATH=${PYTHONPATH:-python}

case "$1" in
quickstart-rows)
    # README "Reading with Python": the quick-start store's row count.
    /usr/bin/python3 - <<'PY'
import clusterdse
counts = dict(clusterdse.load("results/quickstart.h5", "counts").values)
print(f"quick-start store's {int(counts['feasible']):,} rows")
PY
    ;;
pool)
    # README "A100 + H100 or H100 alone": the ratios of `compare` (columns: h100-sxm-dgx,
    # a100+h100, a100+h100-even, a100-80g-dgx) and the pool's replicas.
    clusterdse compare results/pool-a100-h100-llama3-70b.h5 | tr -d '()' | awk '
        $1 == "time_to_train_days" {
            printf "trains %s longer\n", $5
            printf "train %s longer\n", $9
            printf "trains %s longer than H100 alone against the planner\047s %s\n", $7, $5
        }
        $1 == "cost_to_train" { printf "is %s too\n", $5 }
        $1 == "dp" { dp = $4 }
        $1 == "tp" { tp = $4; tp_h100 = $2 }
        $1 == "pp" { pp = $4; pp_h100 = $2 }
        $1 == "recompute" { rc = $3; rc_h100 = $2 }
        $1 == "pool_microbatches_0" { printf "taking %s micro-batches\n", $3 }
        $1 == "pool_microbatches_1" { printf "H100 replicas %s\n", $3 }
        END {
            printf "%s-GPU replicas (tp %s x pp %s) with %s recomputation\n", tp * pp, tp, pp, rc
            printf "64 H100 run tp %s x pp %s without recomputation\n", tp_h100, pp_h100
            if (rc_h100 != "none") print "(H100 alone recomputes: " rc_h100 ")"
        }'
    ;;
goodput)
    # README "Time to train with failures": what the study table says about 16K and 8K GPUs.
    clusterdse eval jobs/goodput-llama3-405b.cfg --csv --feasible |
        /usr/bin/python3 -m clusterdse.study goodput | awk '
        /^#/ { next }
        { key = $1 " " $2 " " $3 " " $4; eff[key] = $10; g[key] = $11; stall[key] = $14
          interval[key] = $15; n[key] = $16; ckpt = $13 + 0
          cfg[$1 " " $2 " " $4] = "zero " $8 ", tp " $5 ", pp " $6
          if (ckpt_min == "" || ckpt < ckpt_min) ckpt_min = ckpt
          if (ckpt > ckpt_max) ckpt_max = ckpt
          if ($1 == 16384) { if (gmin == "" || $11 < gmin) gmin = $11; if ($11 > gmax) gmax = $11
                             if (imin == "" || $16 < imin) imin = $16; if ($16 > imax) imax = $16 }
          if ($1 == 16128 && $2 == "gb200-repair" && (rep == "" || $10 < rep)) {
              rep = $10; g_rep = $11 }
          if ($1 == 16128 && $2 == "gb200-spare" && (spa == "" || $10 < spa)) spa = $10
          # H100s best configuration per size, the same for every scheme and bandwidth
          if ($2 == "h100") { c = cfg[$1 " h100 " $4]
              h100_cfg[$1] = h100_cfg[$1] == "" || h100_cfg[$1] == c ? c : "varies" }
        }
        END {
            printf "costs Llama 3 405B %.0f-%.0f%% of its time\n", 100 * (1 - gmax),
                100 * (1 - gmin)
            printf "%d to %d times over the run\n", imin, imax
            printf "stall %.0f s per save\n", stall["16384 h100 250 sync"]
            printf "interval to %.0f minutes\n", interval["16384 h100 250 sync"] / 60
            printf "%.1f points of goodput at 16K H100 (%.1f at 8K)\n",
                100 * (g["16384 h100 250 memory"] - g["16384 h100 250 sync"]),
                100 * (g["8192 h100 250 memory"] - g["8192 h100 250 sync"])
            printf "recovers %.1f of them\n",
                100 * (g["16384 h100 2000 sync"] - g["16384 h100 250 sync"])
            printf "becomes the %.1f s copy\n", stall["16384 h100 250 async"]
            printf "costs %.0f points of goodput on H100\n",
                100 * (g["8192 h100 250 memory"] - g["16384 h100 250 memory"])
            printf "%.0f on GB200 with a spare rack\n",
                100 * (g["8064 gb200-spare 250 memory"] - g["16128 gb200-spare 250 memory"])
            printf "goodput falls to %.2f at 16K GPUs\n", g_rep
            printf "takes %.0f instead of %.0f days\n", rep, spa
            printf "%.1f-%.0f GiB per GPU\n", ckpt_min, ckpt_max
            printf "%s on 16K H100, %s on 8K\n", h100_cfg[16384], h100_cfg[8192]
        }'
    ;;
stacks)
    # README "Megatron-Core or torchtitan": torchtitan's next best layout (its first row with
    # TP 2 alone) against its best, and the validation's mean errors of the torchtitan rows.
    clusterdse eval jobs/stacks-llama3-70b-256.cfg -n 100000 \
        --columns stack,tp,pp,cp,time_s,mem_weights_gib,mem_gradients_gib,mem_activations_gib |
        awk '$1 == "torchtitan-2025" && best == "" { best = $5 }
             $1 == "torchtitan-2025" && $2 == 2 && $3 == 1 && $4 == 1 && !done {
                 printf "%.1f GiB of weights and %.1f of gradients per GPU at TP 2\n", $6, $7
                 printf "%.0f GiB of activations\n", $8
                 printf "checkpointing, %.0f %% slower\n", 100 * ($5 / best - 1); done = 1 }'
    build/tests/validate tests/validation/published.csv . | awk '
        $2 == "TorchTitan-2412-GrandTeton-H100" { t = $5 }
        $2 == "TorchTitan-2412-GrandTeton-H100-memory" { m = $5 }
        END { sub(/%/, "", t); sub(/%/, "", m)
              printf "%.1f %% mean error on tokens/s, %.1f %% on peak memory\n", t, m }'
    ;;
grids | grids-total)
    # README "A COMET-style study": each grid's designs (the product of its hardware axes'
    # sizes: the axes `sweep --dry-run` lists between `systems` and `gpus`), cluster sizes and
    # configurations, and their sum.
    for name in gpt3-175b deepseek-v3; do
        clusterdse sweep "jobs/comet-grid-$name.cfg" --dry-run 2>&1
    done | awk -v which="$1" '
        function thousands(n,   s) { s = sprintf("%d", n)
            while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s)
            return s }
        function sci(n,   e) { e = int(log(n) / log(10))
            return sprintf("%.2f x 10^%d", n / 10 ^ e, e) }
        $1 == "systems" { hw = 1; designs = 1; next }
        $1 == "gpus" { hw = 0; first = $3; last = $NF; next }
        hw && /^  [a-z]/ { designs *= $2 }
        $1 == "configurations" { total += $2
            if (which == "grids")
                printf "%s designs at %s to %s GPUs, %s configurations\n", thousands(designs),
                    thousands(first), thousands(last), sci($2) }
        END { if (which == "grids-total") printf "Together %s configurations\n", sci(total) }'
    ;;
reserves)
    # docs/eval.md "Reserved memory and the headroom": the configurations of the end-to-end rows
    # of both validation files (the groups whose name does not say memory; `validate -v` prints
    # one "= TOTAL of HBM; the process reserves R" line for each) that reserve more than
    # 0.95 x HBM in the model, and more than the HBM.
    # (the hold-out file's targets are not the published file's: validate exits 1 on it)
    { build/tests/validate tests/validation/published.csv . -v
      build/tests/validate tests/validation/holdout.csv . -v || true; } |
        awk '/^## / { memory = $2 ~ /memory/ }
             /the process reserves/ && !memory {
                 n++; hbm = $0; sub(/.* of /, "", hbm); sub(/;.*/, "", hbm)
                 if ($NF > 0.95 * hbm) high++
                 if ($NF > hbm + 0) over++ }
             END { printf "%d of the %d configurations of the end-to-end validation rows", high, n
                   printf " reserve more than 0.95 x HBM in the model and %d more than the HBM", over
                   printf " itself\n" }'
    ;;
bands)
    # docs/eval.md "Error bands": validate --bands' coverage line.
    out=$(mktemp)
    build/tests/validate --bands "$out" tests/validation/published.csv \
        tests/validation/holdout.csv . | sed -nE 's/^# coverage over ([0-9]+) validation rows: '\
'([0-9]+) inside their band \(([0-9.]+), nominal 0.80\); leave-one-out ([0-9]+) \(([0-9.]+)\)/'\
'Over the \1 validation rows, \2 measured times lie inside their band (\3, nominal 0.80)\n'\
'\4 inside the band computed without them (leave-one-out, \5)/p'
    rm -f "$out"
    ;;
*)
    echo "doc_figures: unknown figures '$1'; allowed: quickstart-rows, pool, goodput, stacks," \
        "grids, grids-total, reserves, bands" >&2
    exit 1
    ;;
esac
