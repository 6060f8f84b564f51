#!/usr/bin/env bash
# clusterdse eval end to end: good jobs give exit 0, the contract CSV header and one row per
# configuration; bad jobs give exit 1 and one message naming file:line and the key.
set -u
bin=${CLUSTERDSE:?set CLUSTERDSE to the clusterdse binary}
src=${CDSE_SRC:?set CDSE_SRC to the source tree}
jobs=$src/tests/jobs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

run() { # run CMD...: prints the command, stores stdout/stderr/exit code
    echo "+ $*"
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

contract="index,model,system,gpus,tp,pp,dp,cp,ep,vpp,microbatch,global_batch,grad_accum,recompute,sequence_parallel,zero,precision,flash_attention,offload,tp_comm_overlap,status,time_per_iteration_s,tokens_per_s,model_tflops_per_gpu,hardware_tflops_per_gpu,mfu,hfu,mem_total_gib,mem_weights_gib,mem_gradients_gib,mem_optimizer_gib,mem_activations_gib,mem_other_gib,mem_offloaded_gib,t_forward_s,t_backward_s,t_recompute_s,t_tp_comm_s,t_pp_comm_s,t_dp_comm_s,t_ep_comm_s,t_cp_comm_s,t_bubble_s,t_optimizer_s,t_offload_s,t_imbalance_s,time_to_train_days,gpu_hours,seq_imbalance,pool_split,pool_share_0,pool_share_1,pool_share_2,pool_share_3,placement,etp,recompute_modules,moe_dispatcher,moe_overlap,stack,mem_fp8_cache_gib,mem_runtime_gib,t_fixed_s,offload_layers,recompute_layers,peak_bf16_tflops,peak_fp8_tflops,hbm_gib,hbm_bandwidth_gbs,gpus_per_node,net0_bandwidth_gbs,net0_latency_us,net0_size,net1_bandwidth_gbs,net1_latency_us,net1_size,tier_capacity_gib,tier_bandwidth_gbs,gpu_price,rental_price,gpu_power_w,cost_to_train,energy_to_train_mwh,tokens_per_kwh,storage_write_gbs,gpu_failures,node_failures,checkpoint_gib,checkpoint_stall_s,mttf_hours,checkpoint_interval_s,lost_work_s,goodput,interruptions_expected,time_to_train_effective_days,checkpoint_flag,time_low_s,time_high_s,time_to_train_days_low,time_to_train_days_high,cost_to_train_low,cost_to_train_high,mem_reserved_gib,checkpoint,storage_read_gbs,t_ceiling_s,pool_layers_0,pool_layers_1,pool_layers_2,pool_layers_3,pool_microbatches_0,pool_microbatches_1,pool_microbatches_2,pool_microbatches_3,pool_tp_0,pool_tp_1,pool_tp_2,pool_tp_3,replace_time_s,tier_link_gbs"

# good_small.cfg: 2 gpus x 4 tp x 2 pp x 2 microbatch x 2 recompute x 2 sp x 2 zero = 256.
run "$bin" eval "$jobs/good_small.cfg" --csv
[ "$rc" -eq 0 ] || fail "good_small --csv: exit $rc: $(cat "$tmp/err")"
[ "$(head -1 "$tmp/out")" = "$contract" ] || fail "CSV header differs: $(head -1 "$tmp/out")"
rows=$(($(wc -l <"$tmp/out") - 1))
[ "$rows" -eq 256 ] || fail "good_small: $rows CSV rows, expected 256"
# Every row has as many fields as the header, indices run 0..255 in order, statuses are names.
awk -F, -v n=120 'NR > 1 && (NF != n || $1 != NR - 2) { bad++ } END { exit bad > 0 }' \
    "$tmp/out" || fail "good_small: a row with the wrong field count or index"
cut -d, -f21 "$tmp/out" | tail -n +2 | sort -u >"$tmp/status"
grep -qx ok "$tmp/status" || fail "good_small: no feasible configuration"
grep -vqE '^[a-z_]+$' "$tmp/status" && fail "good_small: odd status values: $(cat "$tmp/status")"
cp "$tmp/out" "$tmp/all.csv"

# --feasible keeps exactly the rows with status ok.
run "$bin" eval "$jobs/good_small.cfg" --csv --feasible
ok_rows=$(awk -F, 'NR > 1 && $21 == "ok"' "$tmp/all.csv" | wc -l)
[ "$rc" -eq 0 ] && [ "$(($(wc -l <"$tmp/out") - 1))" -eq "$ok_rows" ] ||
    fail "--feasible: $(($(wc -l <"$tmp/out") - 1)) rows, expected $ok_rows"

# -n 3: the three best by the job's metric (tokens_per_s, higher is better), best first, and
# the same rows as the best three of the full CSV.
run "$bin" eval "$jobs/good_small.cfg" --csv -n 3
[ "$rc" -eq 0 ] || fail "-n 3: exit $rc"
got=$(tail -n +2 "$tmp/out" | cut -d, -f1 | tr '\n' ' ')
want=$(awk -F, 'NR > 1 && $21 == "ok" { print $23, $1 }' "$tmp/all.csv" |
    sort -k1,1gr -k2,2n | head -3 | cut -d' ' -f2 | tr '\n' ' ')
[ "$got" = "$want" ] || fail "-n 3 gave indices '$got', expected '$want'"

# The human table: '#' lines (what is the same in every row, then the header), then one line
# per configuration with the header's width. good_small.cfg sweeps gpus, tp, microbatch,
# recompute, sequence_parallel and zero (dp follows): those are the columns, with the results.
run "$bin" eval "$jobs/good_small.cfg"
[ "$rc" -eq 0 ] || fail "table: exit $rc"
head -1 "$tmp/out" | grep -q '^# same in every row: model=gpt3-1.3b system=a100-80g-dgx cp=1 ' ||
    fail "table: no '# same' line: $(head -1 "$tmp/out")"
[ "$(grep -vc '^#' "$tmp/out")" -eq 256 ] || fail "table: wrong row count"
header=$(sed -n 2p "$tmp/out")
[ "$(echo $header)" = "#index gpus tp pp dp mb recompute sp zero status time_s t_low t_high tok/s mfu mem_gib res_gib days" ] ||
    fail "table: header '$header'"
awk -v w=${#header} '!/^#/ && length($0) != w { bad++ } END { exit bad > 0 }' "$tmp/out" ||
    fail "table: a row is not as wide as the header"
# No token budget: days is '-' in every row, never 0.
awk '!/^#/ && $NF != "-" { bad++ } END { exit bad > 0 }' "$tmp/out" || fail "table: days not '-'"
run "$bin" eval "$jobs/good_small.cfg" --columns tp,mb,no_such
[ "$rc" -eq 1 ] && grep -q "^clusterdse eval: --columns tp,mb,no_such: no column 'no_such'; allowed: column names joined by ',' (index, model, system" "$tmp/err" ||
    fail "--columns no_such: exit $rc: $(cat "$tmp/err")"
run "$bin" eval "$jobs/good_small.cfg" --columns tp,mb,status -n 2
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "$(printf '#tp mb status\n  1  2 ok    \n  1  2 ok    ')" ] ||
    fail "--columns tp,mb,status -n 2: $(cat "$tmp/out")"

# Inline model and system, base + override, nodes, L-suffix tokens: 2 models x 2 nodes x 3 tp
# x 2 gbs x 2 zero x 2 precision x 2 offload x 2 tp_comm_overlap = 384 configurations.
run "$bin" eval "$jobs/good_inline.cfg" --csv
[ "$rc" -eq 0 ] || fail "good_inline: exit $rc: $(cat "$tmp/err")"
[ "$(($(wc -l <"$tmp/out") - 1))" -eq 384 ] || fail "good_inline: wrong row count"
grep -q ',h100-fat-ib,' "$tmp/out" || fail "good_inline: inline system name missing"
# time_to_train_days is filled for feasible rows (tokens = 300000000000L).
awk -F, 'NR > 1 && $21 == "ok" && $47 > 0 { found = 1 } END { exit !found }' "$tmp/out" ||
    fail "good_inline: no time_to_train_days"

# A heterogeneous pool: every feasible row says how the pool was used (dp or pp) and the
# shares of the two GPU types add up to 1.
run "$bin" eval "$jobs/good_pool.cfg" --csv
[ "$rc" -eq 0 ] && [ "$(($(wc -l <"$tmp/out") - 1))" -eq 8 ] || fail "good_pool: exit $rc"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         $c["status"] == "ok" { n++; s = $c["pool_share_0"] + $c["pool_share_1"]
             if (($c["pool_split"] != "dp" && $c["pool_split"] != "pp") || s < 0.999 || s > 1.001) bad++ }
         END { exit !(n > 0 && bad == 0) }' "$tmp/out" || fail "good_pool: pool columns"

# Bad jobs: exit 1 and "FILE:LINE: key 'KEY'" on stderr (line numbers are in each file's comment).
check_bad() { # file line key
    run "$bin" eval "$jobs/$1"
    [ "$rc" -eq 1 ] || fail "$1: exit $rc, expected 1"
    grep -qF "$1:$2: key '$3'" "$tmp/err" || fail "$1: message lacks '$1:$2: key '$3'': $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1: more than one line on stderr"
    [ -s "$tmp/out" ] && fail "$1: printed output"
    grep -q '; allowed: ' "$tmp/err" || fail "$1: message does not say what is allowed"
}
check_bad bad_unknown_top.cfg 5 probes
check_bad bad_unknown_space.cfg 6 space.tpp
check_bad bad_unknown_objective.cfg 5 objective.metrik
check_bad bad_unknown_model_key.cfg 4 'models[0].hiden'
check_bad bad_type.cfg 5 space.tp
check_bad bad_range.cfg 6 space.zero
check_bad bad_negative.cfg 5 space.gpus
check_bad bad_duplicate.cfg 7 space.tp
check_bad bad_model_name.cfg 2 'models[1]'
check_bad bad_system_name.cfg 4 'systems[1]'
check_bad bad_missing_profile.cfg 4 'systems[0].network_profile'
check_bad bad_tp_never.cfg 6 space.tp
check_bad bad_etp_never.cfg 7 space.etp
check_bad bad_kv_heads.cfg 3 'models[0].kv_heads'
check_bad bad_gpus_missing.cfg 4 space.gpus
check_bad bad_tokens_missing.cfg 6 objective.tokens
check_bad bad_overflow.cfg 6 objective.tokens
check_bad bad_nodes_mixed.cfg 6 space.nodes

run "$bin" eval "$jobs/bad_syntax.cfg"
[ "$rc" -eq 1 ] && grep -q "bad_syntax.cfg:5: syntax error" "$tmp/err" ||
    fail "bad_syntax: exit $rc: $(cat "$tmp/err")"
run "$bin" eval "$tmp/no-such-job.cfg"
[ "$rc" -eq 1 ] && grep -q "no-such-job.cfg: cannot read job file" "$tmp/err" ||
    fail "missing job file: exit $rc: $(cat "$tmp/err")"
run "$bin" eval
[ "$rc" -eq 1 ] || fail "no argument: exit $rc, expected 1"
run "$bin" eval "$jobs/good_small.cfg" --bogus
[ "$rc" -eq 1 ] || fail "unknown option: exit $rc, expected 1"
run "$bin" eval --help
[ "$rc" -eq 0 ] && grep -q '^usage: clusterdse eval' "$tmp/out" || fail "--help"

# A space too large for one process points to sweep: 64^4 = 16.7 million configurations.
big="$tmp/big.cfg"
seq -s, 1 64 >"$tmp/list"
cat >"$big" <<EOF
models = ( "gpt3-1.3b" );
systems = ( "a100-80g-dgx" );
space = { gpus = [ $(seq -s, 8 8 512) ]; microbatch = [ $(cat "$tmp/list") ];
          global_batch = [ $(seq -s, 512 512 32768) ]; vpp = [ $(cat "$tmp/list") ]; };
EOF
run "$bin" eval "$big"
[ "$rc" -eq 1 ] && grep -q "clusterdse sweep" "$tmp/err" || fail "big space: exit $rc: $(cat "$tmp/err")"

# The complete example of docs/job-file.md parses and has the size it claims (2304).
awk '/^```$/ && n == 0 { n = 1; next } n == 1 && /^```$/ { exit } n == 1' \
    "$src/docs/job-file.md" >"$tmp/doc_example.cfg"
run "$bin" eval "$tmp/doc_example.cfg" --csv
[ "$rc" -eq 0 ] && [ "$(($(wc -l <"$tmp/out") - 1))" -eq 2304 ] ||
    fail "docs/job-file.md example: exit $rc, $(($(wc -l <"$tmp/out") - 1)) rows: $(cat "$tmp/err")"

# --show-job prints a job that evaluates to the same CSV.
run "$bin" eval "$jobs/good_inline.cfg" --show-job
cp "$tmp/out" "$tmp/effective.cfg"
[ "$rc" -eq 0 ] || fail "--show-job: exit $rc"
"$bin" eval "$jobs/good_inline.cfg" --csv >"$tmp/a.csv"
run "$bin" eval "$tmp/effective.cfg" --csv
[ "$rc" -eq 0 ] && cmp -s "$tmp/out" "$tmp/a.csv" ||
    fail "the effective job of good_inline.cfg evaluates differently: $(cat "$tmp/err")"

# docs/eval.md shows the current --help text.
run "$bin" eval --help
awk '/^\$ clusterdse eval --help$/ { f = 1; next } f && /^```$/ { exit } f' "$src/docs/eval.md" \
    >"$tmp/help_doc"
cmp -s "$tmp/out" "$tmp/help_doc" || fail "docs/eval.md --help text is out of date"

# The key and column references match the docs (every key and column is documented).
run "$bin" eval --help-keys
[ "$rc" -eq 0 ] || fail "--help-keys: exit $rc"
for key in $(grep -v '^#' "$tmp/out" | awk '{ print $1 }'); do
    grep -qF "\`$key\`" "$src/docs/job-file.md" || fail "docs/job-file.md lacks key $key"
done
run "$bin" eval --help-columns
[ "$rc" -eq 0 ] || fail "--help-columns: exit $rc"
for column in $(grep -v '^#' "$tmp/out" | awk '{ print $1 }'); do
    grep -qF "\`$column\`" "$src/docs/eval.md" || fail "docs/eval.md lacks column $column"
done

# --help-hardware: the hardware keys' columns as markdown rows, each with its unit, help and the
# system key it reads (CDSE_HW_KEYS in model/hardware.h: hbm_gib is the top-level key hbm_gib in
# GiB; net1_size is level 1's size in the network list; tier_link_gbs is
# memory_tier.link_bandwidth), and no other column (tokens_per_s is a model output).
run "$bin" eval --help-hardware
[ "$rc" -eq 0 ] || fail "--help-hardware: exit $rc"
for row in '| `hbm_gib` | GiB | HBM capacity per GPU; key `hbm_gib` |' \
           '| `net1_size` | GPUs | GPUs in one level-1 domain (0 = the whole system); key `network[1].size` |' \
           '| column | unit | meaning |'; do
    grep -qxF -- "$row" "$tmp/out" || fail "--help-hardware lacks the row: $row"
done
grep -qF '`tier_link_gbs` | GB/s |' "$tmp/out" && grep -qF 'key `memory_tier.link_bandwidth` |' "$tmp/out" ||
    fail "--help-hardware lacks tier_link_gbs with its key memory_tier.link_bandwidth"
grep -qF '`tokens_per_s`' "$tmp/out" && fail "--help-hardware lists tokens_per_s, not a hardware column"

if [ "$failures" -gt 0 ]; then
    echo "eval_cli: $failures failure(s)"
    exit 1
fi
echo "eval_cli: all checks passed"
