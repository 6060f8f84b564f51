/* The lower bound of exact pruning (cdse_time_floor, include/clusterdse/model/bound.h): for
 * the feasible configurations of dense and MoE spaces (100,000 random draws from the dense and
 * MoE spaces, every configuration of the pipeline-stack and hardware-axis spaces) (bf16 and FP8,
 * several stacks, hardware axes, pp/vpp, cp, ep/etp, offload to a memory tier), floor <=
 * time_per_iteration_s; and the floor does not move when only the axes it ignores change
 * (recompute, zero and offload too with the flags that free them), which is what lets the sweep
 * take one floor per combination of the kept axes as the bound of a whole box. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>

#include "clusterdse/config/job.h"
#include "clusterdse/model/bound.h"
#include "clusterdse/model/perf.h"
#include "clusterdse/sweep/report.h"

/* cdse_record_eval / cdse_record_system on the job's study (model/record.h). */
static void job_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_eval(&study, index, record);
}

static void job_record_system(const cdse_job *job, uint64_t index, cdse_system *system)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_system(&study, index, system);
}

#define JOB_PATH CDSE_SOURCE_DIR "/tests/jobs/unit.cfg"

static cdse_job *load(const char *text)
{
    cdse_job *job = calloc(1, sizeof *job);
    assert_non_null(job);
    cdse_diag diag;
    int rc = cdse_job_load_text(text, JOB_PATH, job, &diag);
    if (rc != 0)
        fail_msg("job: %s", diag.msg);
    return job;
}

/* The floor with `flags` of the configuration at `index`, evaluated on its record's model,
 * system and strategy. */
static double floor_at(const cdse_job *job, uint64_t index, int flags, cdse_record *rec)
{
    job_record_eval(job, index, rec);
    cdse_system system;
    job_record_system(job, index, &system);
    return cdse_time_floor(&job->model[rec->model], &system, &rec->strategy, flags);
}

/* The index with every axis the floor with `flags` ignores at its first value. */
static uint64_t kept_only(const cdse_space *space, uint64_t index, int flags)
{
    int digit[CDSE_AXIS_COUNT];
    cdse_space_decode(space, index, digit);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        if (!cdse_bound_axis_kept(a, flags))
            digit[a] = 0;
    return cdse_space_encode(space, digit);
}

typedef struct tally {
    uint64_t checked, feasible, bounded; /* bounded: feasible with a finite floor > 0 */
    uint64_t out_of_memory;              /* OOM, declared infeasible by the exact floor */
    double tightest;                     /* max over feasible of floor / time, exact floor */
} tally;

static const int all_flags[] = {0, CDSE_FLOOR_ANY_RECOMPUTE, CDSE_FLOOR_ANY_STATE,
                                CDSE_FLOOR_ANY_RECOMPUTE | CDSE_FLOOR_ANY_STATE};

/* For every set of flags: the floor is the same with the ignored axes at their first values,
 * and no larger than the time of a feasible configuration. */
static void check_index(const cdse_job *job, uint64_t index, tally *t)
{
    t->checked++;
    for (size_t f = 0; f < sizeof all_flags / sizeof all_flags[0]; f++) {
        int flags = all_flags[f];
        cdse_record rec, base;
        double floor = floor_at(job, index, flags, &rec);
        double same = floor_at(job, kept_only(&job->space, index, flags), flags, &base);
        if (!(floor == same || (isinf(floor) && isinf(same))))
            fail_msg("index %llu, flags %d: floor %.17g but %.17g with the ignored axes at their "
                     "first value",
                     (unsigned long long)index, flags, floor, same);
        int st = rec.result.status;
        if (flags == 0 && st == CDSE_ST_OOM && isinf(floor))
            t->out_of_memory++;
        if (st != CDSE_ST_OK)
            continue;
        double time = rec.result.time_per_iteration_s;
        if (!(floor <= time))
            fail_msg("index %llu, flags %d: floor %.17g s above the time %.17g s",
                     (unsigned long long)index, flags, floor, time);
        if (flags != 0)
            continue;
        t->feasible++;
        if (floor > 0.0) {
            t->bounded++;
            if (floor / time > t->tightest)
                t->tightest = floor / time;
        }
    }
}

/* Every configuration of the job (adversarial: all combinations), or `samples` random ones. */
static tally check_job(const char *text, uint64_t samples)
{
    cdse_job *job = load(text);
    tally t = {0};
    uint64_t size = job->space.size;
    if (samples == 0 || samples >= size) {
        for (uint64_t i = 0; i < size; i++)
            check_index(job, i, &t);
    } else {
        uint64_t state = 0x9e3779b97f4a7c15ull;
        for (uint64_t n = 0; n < samples; n++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            check_index(job, (state >> 11) % size, &t);
        }
    }
    cdse_job_free(job);
    free(job);
    return t;
}

/* Dense models (GPT with learned positions, Llama with GQA and SwiGLU) on two systems, bf16 and
 * FP8, every recomputation, ZeRO stage, offload and overlap, two stacks and two placements. */
static void test_dense_sampled(void **state)
{
    (void)state;
    const char *text =
        "models = ( \"gpt3-1.3b\", \"llama3-8b\" );\n"
        "systems = ( \"h100-sxm-dgx\", { base = \"b200-dgx\"; name = \"b200-tier\";\n"
        "  memory_tier = { attach = \"per_node\"; capacity_gib = 512.0; bandwidth = 128.0; }; } "
        ");\n"
        "stacks = [ \"megatron-lm-2021\", \"megatron-core-2025\" ];\n"
        "space = { gpus = [ 8, 32 ]; tp = [ 1, 2, 8 ]; pp = [ 1, 4 ]; vpp = [ 1, 2 ];\n"
        "  cp = [ 1, 2 ]; microbatch = [ 1, 4 ]; global_batch = [ 64 ];\n"
        "  recompute = [ \"none\", \"selective\", \"full\" ]; sequence_parallel = [ true, false "
        "];\n"
        "  zero = [ 0, 1, 3 ]; precision = [ \"bf16\", \"fp8\" ]; flash_attention = [ true, false "
        "];\n"
        "  offload = [ \"none\", \"optimizer+activations\" ]; tp_comm_overlap = [ true, false ];\n"
        "  placement = [ \"tp-cp-dp-pp\", \"pp-dp-cp-tp\" ]; };\n";
    tally t = check_job(text, 100000);
    print_message("dense: %llu checked, %llu feasible, %llu bounded, tightest floor/time %.3f\n",
                  (unsigned long long)t.checked, (unsigned long long)t.feasible,
                  (unsigned long long)t.bounded, t.tightest);
    /* The property must have been exercised: feasible configurations with a real bound. */
    assert_true(t.feasible > 10000);
    assert_true(t.bounded == t.feasible);
    assert_true(t.tightest > 0.5 && t.tightest <= 1.0);
}

/* The stacks whose pipelines differ from Megatron's 1F1B: DeepSpeed's engine, which reduces the
 * gradients after its schedule (deepspeed-2022), and the splits that count the embedding and the
 * output layer as layers (megatron-deepspeed-2022 with DeepSpeed's engine, meta-llama3-2024 with
 * interleaving), where the slowest
 * stage is a middle one or the last with one layer fewer and the output layer. pp 2-8 over 24-32
 * layers leaves both cases. */
static void test_pipeline_stacks_every_configuration(void **state)
{
    (void)state;
    const char *text =
        "models = ( \"gpt3-1.3b\", \"llama3-8b\" );\n"
        "systems = ( \"a100-80g-dgx\", \"h100-sxm-dgx\" );\n"
        "stacks = [ \"deepspeed-2022\", \"megatron-deepspeed-2022\", \"meta-llama3-2024\" ];\n"
        "space = { gpus = [ 16, 64 ]; tp = [ 1, 2, 8 ]; pp = [ 2, 4, 8 ]; vpp = [ 1, 2 ];\n"
        "  microbatch = [ 1, 4 ]; global_batch = [ 128 ];\n"
        "  recompute = [ \"none\", \"full\" ]; sequence_parallel = [ false ];\n"
        "  zero = [ 0, 1 ]; precision = [ \"bf16\" ]; tp_comm_overlap = [ false ];\n"
        "  flash_attention = [ false ]; };\n";
    tally t = check_job(text, 0);
    print_message("pipeline stacks: %llu checked, %llu feasible, %llu bounded, tightest %.3f\n",
                  (unsigned long long)t.checked, (unsigned long long)t.feasible,
                  (unsigned long long)t.bounded, t.tightest);
    assert_true(t.feasible > 1000);
    assert_true(t.bounded == t.feasible);
    assert_true(t.tightest > 0.5 && t.tightest <= 1.0);
}

/* MoE models (Mixtral: top-2 of 8; Qwen3-30B-A3B: top-8 of 128) with ep, etp, both dispatchers
 * and all overlaps, fine-grained recomputation, FP8. */
static void test_moe_sampled(void **state)
{
    (void)state;
    const char *text =
        "models = ( \"mixtral-8x7b\", \"qwen3-30b-a3b\" );\n"
        "systems = ( \"h100-sxm-dgx\" );\n"
        "space = { gpus = [ 16, 64 ]; tp = [ 1, 2, 4 ]; pp = [ 1, 2, 4 ]; vpp = [ 1, 2 ];\n"
        "  ep = [ 1, 2, 8 ]; etp = [ 0, 1 ]; microbatch = [ 1, 2 ]; global_batch = [ 128 ];\n"
        "  cp = [ 1, 2 ]; recompute = [ \"none\", \"selective\", \"full\" ];\n"
        "  recompute_modules = [ \"none\", \"moe_act+layernorm\", \"moe\" ];\n"
        "  sequence_parallel = [ true, false ]; zero = [ 0, 1 ]; precision = [ \"bf16\", \"fp8\" "
        "];\n"
        "  moe_dispatcher = [ \"alltoall\", \"deepep\" ];\n"
        "  moe_overlap = [ \"none\", \"shared_experts\", \"a2a\" ]; };\n";
    tally t = check_job(text, 100000);
    print_message("moe: %llu checked, %llu feasible, %llu bounded, tightest floor/time %.3f\n",
                  (unsigned long long)t.checked, (unsigned long long)t.feasible,
                  (unsigned long long)t.bounded, t.tightest);
    assert_true(t.feasible > 1000);
    assert_true(t.bounded == t.feasible);
    assert_true(t.tightest > 0.3 && t.tightest <= 1.0);
}

/* Hardware axes (peak, HBM, network, tier) with offload: every configuration. */
static void test_hardware_axes_every_configuration(void **state)
{
    (void)state;
    const char *text =
        "models = ( \"gpt3-13b\" );\n"
        "systems = ( { base = \"h100-sxm-dgx\"; name = \"design\";\n"
        "  peak_tflops = { fp32 = 67.0; tf32 = 494.7; bf16 = [ 989.4, 1978.8 ]; fp16 = 989.4;"
        " fp8 = 1978.9; };\n"
        "  hbm_gib = [ 40.0, 141.0 ]; hbm_bandwidth = [ 2000.0, 4800.0 ];\n"
        "  network = ( { name = \"nvlink\"; size = [ 8, 32 ]; bandwidth = 450.0; latency = 3.4;"
        " efficiency = 0.82; },\n"
        "    { name = \"ib\"; size = 0; bandwidth = [ 25.0, 100.0 ]; latency = 9.6;"
        " efficiency = 0.9; } );\n"
        "  memory_tier = { attach = \"per_node\"; capacity_gib = [ 256.0, 2048.0 ];"
        " bandwidth = [ 32.0, 512.0 ]; latency = 1.0; shared_by = 8; }; } );\n"
        "space = { gpus = [ 64 ]; tp = [ 2, 8 ]; pp = [ 1, 4 ]; microbatch = [ 1, 4 ];\n"
        "  global_batch = [ 256 ]; recompute = [ \"none\", \"full\" ];\n"
        "  sequence_parallel = [ true, false ]; zero = [ 1, 3 ];\n"
        "  offload = [ \"none\", \"optimizer\", \"weights+activations\" ]; };\n";
    tally t = check_job(text, 0);
    print_message("hardware: %llu checked, %llu feasible, %llu bounded, tightest %.3f\n",
                  (unsigned long long)t.checked, (unsigned long long)t.feasible,
                  (unsigned long long)t.bounded, t.tightest);
    assert_true(t.feasible > 1000);
    assert_true(t.bounded == t.feasible);
}

/* Partial offload and block recomputation (offload_layers, recompute_layers) with the axes they
 * depend on: every configuration, the invalid combinations included (a status, no bound). */
static void test_partial_layers_every_configuration(void **state)
{
    (void)state;
    const char *text =
        "models = ( \"gpt3-13b\" );\n"
        "systems = ( { base = \"h100-sxm-dgx\"; name = \"design\";\n"
        "  memory_tier = { attach = \"per_node\"; capacity_gib = 2048.0; bandwidth = 128.0;"
        " latency = 1.0; shared_by = 8; }; } );\n"
        "space = { gpus = [ 64 ]; tp = [ 2, 8 ]; pp = [ 1, 4 ]; vpp = [ 1, 2 ];\n"
        "  microbatch = [ 1, 4 ]; global_batch = [ 256 ]; recompute = [ \"none\", \"full\" ];\n"
        "  recompute_layers = [ 0, 1, 3 ]; sequence_parallel = [ true ]; zero = [ 1, 3 ];\n"
        "  offload = [ \"none\", \"activations\", \"optimizer+activations\" ];\n"
        "  offload_layers = [ 0, 2, 5 ]; };\n";
    tally t = check_job(text, 0);
    print_message("partial layers: %llu checked, %llu feasible, %llu bounded, tightest %.3f\n",
                  (unsigned long long)t.checked, (unsigned long long)t.feasible,
                  (unsigned long long)t.bounded, t.tightest);
    assert_true(t.feasible > 200);
    assert_true(t.bounded == t.feasible);
}

/* GPT-3 175B near the memory limit (40 and 80 GiB, a small and a large tier): most
 * configurations run out of memory, and the floor declares boxes infeasible from their least
 * memory; none of the feasible ones may be among them. */
static void test_memory_limit(void **state)
{
    (void)state;
    const char *text =
        "models = ( \"gpt3-175b\" );\n"
        "systems = ( { base = \"h100-sxm-dgx\"; name = \"design\";\n"
        "  hbm_gib = [ 40.0, 79.6 ];\n"
        "  memory_tier = { attach = \"per_node\"; capacity_gib = [ 64.0, 2048.0 ];"
        " bandwidth = 128.0; latency = 1.0; shared_by = 8; }; } );\n"
        "space = { gpus = [ 256, 1024 ]; tp = [ 2, 4, 8 ]; pp = [ 2, 8, 16 ]; vpp = [ 1, 2 ];\n"
        "  microbatch = [ 1, 4 ]; global_batch = [ 1536 ]; cp = [ 1, 2 ];\n"
        "  recompute = [ \"none\", \"selective\", \"full\" ]; sequence_parallel = [ true, false "
        "];\n"
        "  zero = [ 0, 1, 2, 3 ];\n"
        "  offload = [ \"none\", \"weights\", \"activations\", \"optimizer\",\n"
        "              \"weights+activations+optimizer\" ];\n"
        "  recompute_modules = [ \"none\", \"core_attn\", \"layernorm+mlp\" ];\n"
        "  tp_comm_overlap = [ true, false ]; };\n";
    tally t = check_job(text, 150000);
    print_message("memory: %llu checked, %llu feasible, %llu bounded, tightest %.3f, %llu out of "
                  "memory by the floor\n",
                  (unsigned long long)t.checked, (unsigned long long)t.feasible,
                  (unsigned long long)t.bounded, t.tightest, (unsigned long long)t.out_of_memory);
    assert_true(t.feasible > 1000);
    assert_true(t.out_of_memory > 1000);
    assert_true(t.bounded == t.feasible);
}

/* One configuration by hand: 2 layers, h 1024, 16 heads of 64, SwiGLU 2048, s 512, V 1000
 * (untied), on one GPU of 100 TFLOP/s bf16 at a constant GEMM efficiency 0.5 (5e13 FLOP/s),
 * flash attention at 0.4 of peak (4e13), 1000 GB/s HBM; the default stack (Megatron-Core 2025:
 * cross-entropy 28 B a logit, 400 us launch per layer, no fixed time). tp = pp = dp = 1,
 * microbatch = global batch = 1 (m = 1), no recomputation, bf16, ZeRO 0, no offload. Per layer
 * (the GEMM shapes and byte counts of perf*.c, Korthikanti et al. 2022 Fig. 2 layer structure):
 *   GEMMs 2 x 512 x (3072 + 1024 + 4096 + 2048) x 1024 FLOPs / 5e13 = 214.7483648 us forward,
 *     twice that backward (each GEMM compute-bound: e.g. QKV 3.22e9 FLOPs 64.4 us vs 10.5 MB
 *     of operands 10.5 us)
 *   flash attention 4 x (16 x 512 x 512) x 64 x 0.5 FLOPs / 4e13 = 13.4217728 us, backward
 *     2.5x = 33.554432 us (Dao 2023)
 *   element-wise 512 x (1024 x (2 x 4 + 2 x 6) + 2048 x 6) B / 1e12 = 16.777216 us, backward
 *     1.5x = 25.165824 us
 *   forward 244.9473536 us, backward 488.2169856 us
 * Output layer: 2 x 512 x 1000 x 1024 / 5e13 = 20.97152 us, loss 512 x 1000 x 28 B / 1e12 =
 * 14.336 us; backward 41.94304 us. Stage: forward 2 x 244.9473536 + 35.30752 = 525.2022272 us,
 * backward 2 x 488.2169856 + 41.94304 = 1018.3770112 us; one micro-batch 1543.5792384 us.
 * Optimizer: (2 layers x (4194304 attention + 6291456 MLP + 2048 norms) + 1024 x 1000 x 2
 * embedding and output + 1024 final norm) = 23024640 parameters x 58 B / 1e12 = 1335.42912 us.
 * Launch: a layer's passes take at least the host's three launch times, 1200 us, against its
 * 733.1643392 us of GPU time: 2 layers x (1200 - 733.1643392) us = 933.6713216 us.
 * Floor = 1543.5792384 + 1335.42912 + 933.6713216 = 3812.67968 us (less the floor's relative
 * margin of 1e-9 on the launch term). The time is the same: the host sets the pace of both
 * passes (400 > 244.9473536 us forward, 800 > 488.2169856 us backward), 2 x (155.0526464 +
 * 311.7830144) us of waiting.
 * Full recomputation (issue 31 M3): the floor adds the forward layers again, 2 x 244.9473536 us,
 * and the layer's GPU time grows to 978.1116928 us: 2 x (1200 - 978.1116928) = 443.7766144 us
 * of launch, 3812.67968 us again. The time: the backward pass launches the recomputed forward's
 * kernels too, 3 x 400 = 1200 us against 733.1643392 us of GPU work, the forward 400 against
 * 244.9473536 us: 2 x (1200 + 400) us of layers, 3200 us, + 35.30752 + 41.94304 us of output
 * layer + 1335.42912 us of optimizer = 4612.67968 us, 800 us (the recomputed launches) more than
 * without recomputation, whose GPU time hid in the host's gaps (before the fix recomputation
 * made this configuration 623.57 us faster). */
static void test_hand_calculated_floor(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "hand");
    m.layers = 2;
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 64;
    m.gated_mlp = true;
    m.ffn = 2048;
    m.seq_len = 512;
    m.vocab = 1000;
    cdse_model_fill_defaults(&m);
    cdse_system sys;
    memset(&sys, 0, sizeof sys);
    sys.peak_tflops[CDSE_BF16] = 100.0;
    sys.gemm_eff.n = 1;
    sys.gemm_eff.flops[0] = 1e9;
    sys.gemm_eff.eff[0] = 0.5;
    sys.attention_efficiency = 0.4;
    sys.hbm_gib = 80.0;
    sys.hbm_bandwidth_gbs = 1000.0;
    sys.hbm_efficiency = 1.0;
    sys.gpus_per_node = 8;
    sys.n_levels = 1;
    sys.level[0].bandwidth_gbs = 100.0;
    sys.level[0].efficiency = 1.0;
    cdse_strategy st = {.gpus = 1,
                        .tp = 1,
                        .pp = 1,
                        .cp = 1,
                        .ep = 1,
                        .vpp = 1,
                        .microbatch = 1,
                        .global_batch = 1,
                        .flash_attention = true,
                        .precision = CDSE_BF16};
    double floor = cdse_time_floor(&m, &sys, &st, 0);
    assert_rel(floor, 3812.67968e-6, 1e-9);
    cdse_result r;
    cdse_evaluate(&m, &sys, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_rel(r.time_per_iteration_s, 3812.67968e-6, 1e-12);
    assert_true(floor <= r.time_per_iteration_s);
    /* Over every recompute setting and state: the same here (nothing to shard or offload). */
    assert_rel(cdse_time_floor(&m, &sys, &st, CDSE_FLOOR_ANY_RECOMPUTE | CDSE_FLOOR_ANY_STATE),
               3812.67968e-6, 1e-9);
    st.recompute = CDSE_RECOMPUTE_FULL;
    assert_rel(cdse_time_floor(&m, &sys, &st, 0), 3812.67968e-6, 1e-9);
    cdse_result full;
    cdse_evaluate(&m, &sys, &st, &full);
    assert_int_equal(full.status, CDSE_ST_OK);
    assert_rel(full.time_per_iteration_s, 4612.67968e-6, 1e-12);
    assert_rel(full.t_fixed_s, 2.0 * (155.0526464 + 466.8356608) * 1e-6, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_sampled),
        cmocka_unit_test(test_pipeline_stacks_every_configuration),
        cmocka_unit_test(test_moe_sampled),
        cmocka_unit_test(test_hardware_axes_every_configuration),
        cmocka_unit_test(test_partial_layers_every_configuration),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_hand_calculated_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
