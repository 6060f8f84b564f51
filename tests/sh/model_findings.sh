#!/usr/bin/env bash
# Issue 31's model findings (tests/findings/model/, copied from the fuzz round of 2026-12-03):
# relations between the rows of `clusterdse eval` on each reproducer that the model must keep.
#   M10 infeasible rows (oom, dtype_unsupported) train nothing: 0 days, GPU-hours, cost and
#       energy (docs/eval.md), and --help-columns says so.
#   M1  a faster GPU (a higher bf16 peak) never trains slower: host launch time and GPU time are
#       two resources, and communication hides behind what runs.
#   M2  MoE with ZeRO-3: the dense and the expert data-parallel streams share one window.
#   M3  recomputation never makes an iteration faster (its kernels pay their launches).
#   M8  full recomputation keeps no more memory than selective recomputation (which rebuilds
#       the unfused attention core and the recomputed MLP of one layer in its backward pass).
: "${CDSE_SRC:?}"
source "$CDSE_SRC/tests/sh/lib/expect.sh"
jobs=$CDSE_SRC/tests/findings/model

# column NAME FILE: the values of column NAME of the CSV in FILE, one a line.
column() {
    awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
                          { print $c }' "$2"
}
fail() { echo "model_findings: $*"; exit 1; }

# M10: GPT-3 13B on 8 A100 80 GB: the bf16 tp 1 row is oom, the fp8 rows dtype_unsupported, the
# bf16 tp 8 row trains.
expect 0 '' "$CLUSTERDSE" eval "$jobs/oom_days.cfg" --csv
cp out.txt m10.csv
paste -d, <(column status m10.csv) <(column time_to_train_days m10.csv) \
    <(column gpu_hours m10.csv) <(column cost_to_train m10.csv) \
    <(column energy_to_train_mwh m10.csv) >m10.txt
cat m10.txt
[ "$(grep -c '^ok,' m10.txt)" = 1 ] || fail "M10: expected one feasible row"
awk -F, '$1 == "ok" && !($2 > 0 && $3 > 0 && $4 > 0 && $5 > 0) { exit 1 }' m10.txt ||
    fail "M10: the feasible row lacks its days, GPU-hours, cost or energy"
awk -F, '$1 != "ok" && ($2 != 0 || $3 != 0 || $4 != 0 || $5 != 0) { exit 1 }' m10.txt ||
    fail "M10: an infeasible row has days, GPU-hours, cost or energy"
expect 0 '' "$CLUSTERDSE" eval --help-columns
grep -q 'time_to_train_days.*when infeasible' out.txt || fail "M10: --help-columns for days"
grep -q 'cost_to_train.*when infeasible' out.txt || fail "M10: --help-columns for cost"
grep -q 'energy_to_train_mwh.*when infeasible' out.txt || fail "M10: --help-columns for energy"

# nondecreasing FILE COLUMN: the time per iteration of the rows of FILE, in the order of COLUMN's
# values as listed, never decreases (to 1e-9, printed digits).
times_nondecreasing() {
    paste -d, <(column "$2" "$1") <(column time_per_iteration_s "$1") | tee /dev/stderr |
        awk -F, 'NR > 1 && $2 < last * (1 - 1e-9) { bad = 1 } { last = $2 } END { exit bad }'
}

# M1: GPT-3 1.3B, ZeRO-3, 64 H200 whose bf16 peak is 1x, 2x, 4x (was 0.6268, 0.6489, 0.7001 s).
expect 0 '' "$CLUSTERDSE" eval "$jobs/peak_axis.cfg" --csv
tac <(tail -n +2 out.txt) | cat <(head -1 out.txt) - >m1.csv # highest peak first
times_nondecreasing m1.csv peak_bf16_tflops || fail "M1: a higher peak is slower (peak_axis.cfg)"
# The same on two systems, ZeRO 0, 1, 3: the 4x-peak system's row is never slower.
expect 0 '' "$CLUSTERDSE" eval "$jobs/two_systems.cfg" --csv
paste -d, <(column zero out.txt) <(column system out.txt) <(column time_per_iteration_s out.txt) |
    sort -t, -k1,1 -k2,2 >m1b.txt
cat m1b.txt
awk -F, '$2 == "h200" { t[$1] = $3 } $2 == "h200-4x-peak" && $3 > t[$1] * (1 + 1e-9) { bad = 1 }
         END { exit bad }' m1b.txt || fail "M1: the 4x-peak system is slower (two_systems.cfg)"

# M2: Mixtral 8x22B, ZeRO-3, GB300 at bf16 peak 2500, 5000, 10000 (was 3.332, 3.129, 3.262 s).
expect 0 '' "$CLUSTERDSE" eval "$jobs/moe_peak_axis.cfg" --csv
tac <(tail -n +2 out.txt) | cat <(head -1 out.txt) - >m2.csv
times_nondecreasing m2.csv peak_bf16_tflops || fail "M2: a higher peak is slower (moe_peak_axis.cfg)"

# Issue 31, metamorphic network_better: GPT-3 760M, tp 2, pp 4 with the embedding-aware split
# (26 units over 4 stages: stage_layers 7, the slowest stage 6 layers); B's network is 16 % more
# efficient (was 1.29361 -> 1.29391 s: t_tp_comm_s -0.0024 s counted over 6 layers, the GPU's
# wait for the host +0.0028 s over 7, the ratio 7/6). B (the last row) must not be slower.
expect 0 '' "$CLUSTERDSE" eval "$jobs/network_split_stage.cfg" --csv
column time_per_iteration_s out.txt >net.txt
cat net.txt
awk 'NR == 1 { a = $1 } END { exit !($1 <= a * (1 + 1e-9)) }' net.txt ||
    fail "network_better: the better network is slower (network_split_stage.cfg)"

# last_not_slower FILE: the last row's time per iteration is no longer than the first's.
last_not_slower() {
    column time_per_iteration_s "$1" | tee /dev/stderr |
        awk 'NR == 1 { a = $1 } END { exit !($1 <= a * (1 + 1e-9)) }'
}

# Issue 31, metamorphic compute_better and memory_bw_better (from tests/metamorphic/open): the
# layer's collectives share its computation. GPT-OSS 20B, H100, cp 2, ep 2 with all-to-all overlap:
# a higher attention efficiency (B) exposed more CP and EP time than it saved, each hiding behind
# the same attention (was 1.85848 -> 1.86153 s); GPT-OSS 120B, B200, tp 8 with userbuffer overlap,
# ep 4 with all-to-all overlap: a higher HBM bandwidth (B) exposed more TP and EP (was 83.8514 ->
# 84.1286 s).
expect 0 '' "$CLUSTERDSE" eval "$jobs/ep_cp_share_window.cfg" --csv
last_not_slower out.txt || fail "compute_better: the better attention is slower (ep_cp_share_window.cfg)"
expect 0 '' "$CLUSTERDSE" eval "$jobs/tp_ep_share_window.cfg" --csv
last_not_slower out.txt || fail "memory_bw_better: the better HBM is slower (tp_ep_share_window.cfg)"

# Issue 31, metamorphic compute_better with the embedding-aware split (meta-llama3-2024 stack):
# the iteration is the longer of the last stage's and a middle stage's whole times, each with its
# own windows for the ZeRO-3 gathers. Llama 3 70B, pp 4 (82 units: middle stages 21 layers, the
# last 20 and the output layer), ZeRO-3; B's bf16 GEMM table (the output layer's) is better, and
# its output layer shorter than a layer, so the stage chosen by its layers' time flipped to the
# middle one, whose passes leave less free for the gathers (was 210.447 -> 210.655 s).
expect 0 '' "$CLUSTERDSE" eval "$jobs/split_stage_whole_time.cfg" --csv
last_not_slower out.txt || fail "compute_better: the better GEMMs are slower (split_stage_whole_time.cfg)"
# GPT-3 350M, pp 2 under the same split: both stages hold 12 layers (and the embedding or the
# output layer), no stage holds 13; B's peak is higher, host-bound layers (was 0.222415 ->
# 0.222623 s: the faster output layer made a 13-layer "middle" stage the slowest).
expect 0 '' "$CLUSTERDSE" eval "$jobs/split_two_stages.cfg" --csv
last_not_slower out.txt || fail "compute_better: the higher peak is slower (split_two_stages.cfg)"

# Issue 31, metamorphic compute_better with 1F1B all-to-all overlap (moe_overlap a2a): one
# micro-batch's forward pass and another's backward pass run as one step, so the GPU waits for
# the host's launches over the pair. GPT-OSS 20B, GB200, pp 2, vpp 2, host-bound backward pass;
# B's fp8 peak is higher (was 1.32575 -> 1.32771 s: the all-to-alls exposed by the shorter
# computation moved into the forward pass, which the GPU paced, from the backward pass, which
# the host paced).
expect 0 '' "$CLUSTERDSE" eval "$jobs/a2a_host_pair.cfg" --csv
last_not_slower out.txt || fail "compute_better: the higher peak is slower (a2a_host_pair.cfg)"

# The same pair, whose free time the data-parallel streams of each pass share in a fixed
# proportion: Qwen3 30B-A3B, megatron-core-2025, pp 1, ep 8, a2a, host-bound pairs; B's attention
# efficiency is higher (was 1.05341 -> 1.05352 s at 379f089, whose wait by launches gave the
# forward part of the time the shorter backward freed, and the gradient reduction, behind the
# backward, was exposed more).
expect 0 '' "$CLUSTERDSE" eval "$jobs/a2a_pair_dp_window.cfg" --csv
last_not_slower out.txt || fail "compute_better: the better attention is slower (a2a_pair_dp_window.cfg)"

# Issue 31, metamorphic recompute_more with weight offload under the split: the weights streamed
# are those of the rank that holds the most, not of the reported rank. Qwen3 30B-A3B, MI300X with
# a tier, pp 8: recompute none (A, rank 0 reported, with the embedding) then full (B, another
# rank reported, fewer weights): full recomputation must not be faster (was 13.5878 -> 13.4039 s).
expect 0 '' "$CLUSTERDSE" eval "$jobs/offload_weights_rank.cfg" --csv
column time_per_iteration_s out.txt >offw.txt
cat offw.txt
awk 'NR == 1 { a = $1 } END { exit !(NR == 2 && $1 >= a * (1 - 1e-9)) }' offw.txt ||
    fail "recompute_more: full recomputation is faster with weight offload (offload_weights_rank.cfg)"

# Issue 31, metamorphic recompute_modules: GPT-3 350M, MI300X, host-bound layers; recomputing the
# norms (B) relaunches their kernels, so it is not faster than none (was 0.139121 -> 0.139059 s,
# then equal: the norms' launches were charged by their FLOPs, none).
expect 0 '' "$CLUSTERDSE" eval "$jobs/norm_recompute_launches.cfg" --csv
column time_per_iteration_s out.txt >norms.txt
cat norms.txt
awk 'NR == 1 { a = $1 } END { exit !($1 > a) }' norms.txt ||
    fail "recompute_modules: recomputing the norms is not slower (norm_recompute_launches.cfg)"

# Issue 31, metamorphic recompute_more (activation offload, pp > 1): the reported pipeline rank is
# the one with the most left in HBM after offload. Rows 1-2 none, 3-4 selective, 5-6 full (two
# configurations each): more recomputation never reports more memory (was 4.70 GiB for none,
# 5.39 GiB for full: rank 0 reported before offload, the last rank's logits stay).
expect 0 '' "$CLUSTERDSE" eval "$jobs/offload_peak_rank.cfg" --csv
column mem_total_gib out.txt >peak.txt
cat peak.txt
awk '{ m[NR] = $1 } END { exit !(NR == 6 && m[3] <= m[1] && m[5] <= m[3] && m[4] <= m[2] &&
                                 m[6] <= m[4]) }' peak.txt ||
    fail "recompute_more: more recomputation reports more memory (offload_peak_rank.cfg)"
# GPT-3 1.3B, pp 2, every layer's activations offloaded: recompute_layers 1, then every layer
# (was 2.619 -> 3.208 GiB: the layer being recomputed was rebuilt for free with 1).
expect 0 '' "$CLUSTERDSE" eval "$jobs/offload_block_recompute.cfg" --csv
column mem_total_gib out.txt >block.txt
cat block.txt
awk 'NR == 1 { a = $1 } END { exit !(NR == 2 && $1 <= a * (1 + 1e-9)) }' block.txt ||
    fail "recompute_layers: every layer recomputed reports more memory (offload_block_recompute.cfg)"

# Issue 31, metamorphic recompute_layers (seeds 7 and 11 at a million pairs): GPT-3 350M, pp 8,
# tp 4, 3 layers per stage, activation offload of offload_layers 2 with full recomputation of
# recompute_layers 2 (A), then of every layer (B). Both take each chunk's first layers, so A
# offloads its 2 recomputed layers (their inputs only) and keeps the layer that keeps everything.
# B must not report more memory (was 2.51249 -> 2.52892 GiB: A offloaded 2 of 3 average layers,
# part of the one that keeps everything).
expect 0 '' "$CLUSTERDSE" eval "$jobs/offload_layers_block_recompute.cfg" --csv
column mem_total_gib out.txt >offblock.txt
cat offblock.txt
awk 'NR == 1 { a = $1 } END { exit !(NR == 2 && $1 <= a * (1 + 1e-9)) }' offblock.txt ||
    fail "recompute_layers: every layer recomputed reports more memory (offload_layers_block_recompute.cfg)"

# Issue 31, metamorphic recompute_layers under the embedding-aware split: GPT-3 125M, pp 8, 14
# units, 2 per chunk; the last rank holds 1 layer and the output layer, so recompute_layers 1
# (A) recomputes every layer it holds, as recompute_layers 0 (B) does: it needs the recompute
# buffer, and the layer it lacks against a full chunk is one without recomputation. B must not
# report more memory (was 2.8269 -> 2.84921 GiB: A counted half a layer without recomputation and
# no buffer).
expect 0 '' "$CLUSTERDSE" eval "$jobs/split_end_chunk_recompute.cfg" --csv
column mem_total_gib out.txt >endchunk.txt
cat endchunk.txt
awk 'NR == 1 { a = $1 } END { exit !(NR == 2 && $1 <= a * (1 + 1e-9)) }' endchunk.txt ||
    fail "recompute_layers: every layer recomputed reports more memory (split_end_chunk_recompute.cfg)"

# M3: GPT-3 760M, ZeRO-3, 64 B200: none, selective, full (was 0.2128, 0.2110, 0.1945 s).
expect 0 '' "$CLUSTERDSE" eval "$jobs/recompute.cfg" --csv
times_nondecreasing out.txt recompute || fail "M3: recomputation made the iteration faster"

# M8: Llama 3 8B, unfused attention, FP8, recompute_modules mlp, selective then full.
expect 0 '' "$CLUSTERDSE" eval "$jobs/full_vs_selective.cfg" --csv
paste -d, <(column recompute out.txt) <(column mem_total_gib out.txt) >m8.txt
cat m8.txt
selective=$(awk -F, '$1 == "selective" { print $2 }' m8.txt)
full=$(awk -F, '$1 == "full" { print $2 }' m8.txt)
awk -v s="$selective" -v f="$full" 'BEGIN { exit !(s > 0 && f > 0 && f <= s) }' ||
    fail "M8: full recomputation keeps $full GiB, more than selective's $selective GiB"

echo "model_findings: ok"
