/* Software-stack profiles: the loader (src/config/stack.c) and the profiles in calibration/stacks.
 *
 * Every profile loads, with values in their documented ranges; the evaluator's built-in default
 * (cdse_stack_default, src/model/stack.c) is the megatron-core-2025 profile, value for value; bad
 * files are errors that name file:line, the key and what is allowed. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/config/stack.h"

#define STACKS_DIR CDSE_SOURCE_DIR "/calibration/stacks"

static const char *const profiles[] = {
    "megatron-lm-2021",        "megatron-lm-2022", "deepspeed-2022",
    "megatron-deepspeed-2022", "megatron-lm-2024", "megatron-core-2024",
    "megatron-core-2025",      "meta-llama3-2024", "nemo-mlperf-2024"};

static void load(const char *name, cdse_stack *stack)
{
    char path[512];
    cdse_diag diag = {{0}};
    snprintf(path, sizeof path, "%s/%s.cfg", STACKS_DIR, name);
    int rc = cdse_stack_load_file(path, stack, &diag);
    if (rc != 0)
        print_error("%s\n", diag.msg);
    assert_int_equal(rc, 0);
}

/* Each profile loads, is named after its file, and its values are physically sensible. */
static void test_profiles_load(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        cdse_stack k;
        load(profiles[i], &k);
        assert_string_equal(k.name, profiles[i]);
        assert_true(k.gemm_scale > 0.0 && k.gemm_scale <= 1.0);
        assert_true(k.grad_bytes == 2.0 || k.grad_bytes == 4.0);
        assert_true(k.allocator_overhead >= 0.0 && k.allocator_overhead < 0.5);
        assert_true(k.runtime_gib >= 0.0 && k.runtime_gib < 8.0);
    }
}

/* What distinguishes the generations (their files' sources): only Megatron-Core overlaps TP
 * communication and parameter gathers; Megatron-LM of 2021 has neither sequence parallelism nor
 * selective recomputation; DeepSpeed's ZeRO-3 is the synchronized per-matrix kind. */
static void test_generations_differ(void **state)
{
    (void)state;
    cdse_stack lm21, lm22, ds, core24;
    load("megatron-lm-2021", &lm21);
    load("megatron-lm-2022", &lm22);
    load("deepspeed-2022", &ds);
    load("megatron-core-2024", &core24);
    assert_false(lm21.sequence_parallel);
    assert_false(lm21.selective_recompute);
    assert_true(lm22.sequence_parallel);
    assert_false(lm22.overlap_grad_reduce);
    assert_true(core24.overlap_tp_comm && core24.overlap_param_gather && core24.overlap_p2p);
    assert_int_equal(ds.zero3_style, CDSE_ZERO3_DEEPSPEED);
    assert_true(ds.pipeline_lockstep && !lm21.pipeline_lockstep && !core24.pipeline_lockstep);
    /* BigScience's fork: the same engine, the run's embedding-aware pipeline split */
    cdse_stack bigscience;
    load("megatron-deepspeed-2022", &bigscience);
    assert_true(bigscience.pipeline_lockstep && bigscience.pipeline_split_embedding);
    assert_false(ds.pipeline_split_embedding || core24.pipeline_split_embedding);
    /* its BF16 optimizer's fp32 accumulation pass (18 B per parameter); omitted elsewhere: 0 */
    assert_true(bigscience.grad_accum_bytes == 18.0);
    assert_true(ds.grad_accum_bytes == 0.0 && core24.grad_accum_bytes == 0.0);
    /* Meta's Llama 3 stack: one layer fewer on the first and last stages, fp32 reduce-scatter */
    cdse_stack meta;
    load("meta-llama3-2024", &meta);
    assert_true(meta.pipeline_split_embedding && !meta.pipeline_lockstep && meta.grad_bytes == 4.0);
    assert_false(meta.fp8_param_gather); /* omitted: false */
    assert_int_equal(core24.zero3_style, CDSE_ZERO3_FSDP);
    /* NeMo 24.07's FP8 ran delayed scaling (the file omits the key); Megatron-Bridge's FP8
     * performance recipes current scaling (fp8_cs). */
    assert_int_equal(core24.fp8_scaling, CDSE_FP8_DELAYED);
    cdse_stack core25;
    load("megatron-core-2025", &core25);
    assert_int_equal(core25.fp8_scaling, CDSE_FP8_CURRENT);
    /* NVIDIA's MLPerf GPT-3 recipe as NeMo ran it (NeMo-Framework-Launcher 175b_mlperf.yaml):
     * megatron-core-2024 with FP8 parameters, which NeMo's standard 175b.yaml does not set. */
    cdse_stack mlperf;
    load("nemo-mlperf-2024", &mlperf);
    assert_true(mlperf.fp8_param_gather && !core24.fp8_param_gather);
    assert_int_equal(mlperf.fp8_scaling, core24.fp8_scaling);
    assert_true(mlperf.grad_bytes == core24.grad_bytes && mlperf.gemm_scale == core24.gemm_scale);
    assert_true(mlperf.overlap_tp_comm && mlperf.overlap_param_gather && mlperf.overlap_p2p);
    /* torchtitan's TP overlap is PyTorch's async TP; Transformer Engine's userbuffers elsewhere
     * (omitted: false), and the eager file's (async TP needs torch.compile's pass). */
    cdse_stack titan, titan_eager;
    load("torchtitan-2025", &titan);
    load("torchtitan-2025-eager", &titan_eager);
    assert_true(titan.async_tp && !titan.overlap_tp_comm);
    assert_false(titan_eager.async_tp || core25.async_tp || mlperf.async_tp);
    /* Megatron-Core's training loops (Megatron-LM, NeMo, Megatron-Bridge) reduce an interleaved
     * pipeline's gradients chunk by chunk (Meta's file takes it as megatron-core-2024); the 2021-22
     * stacks reduce after the backward pass or have no interleaving (the files omit the key). */
    cdse_stack lm24;
    load("megatron-lm-2024", &lm24);
    assert_true(lm24.grad_reduce_per_chunk && core24.grad_reduce_per_chunk &&
                core25.grad_reduce_per_chunk && mlperf.grad_reduce_per_chunk &&
                meta.grad_reduce_per_chunk);
    assert_false(ds.grad_reduce_per_chunk || lm21.grad_reduce_per_chunk ||
                 lm22.grad_reduce_per_chunk || bigscience.grad_reduce_per_chunk);
}

/* The built-in default is the megatron-core-2025 file, every field. */
static void test_default_is_the_file(void **state)
{
    (void)state;
    cdse_stack k;
    load("megatron-core-2025", &k);
    const cdse_stack *d = &cdse_stack_default;
    assert_string_equal(d->name, k.name);
    assert_true(d->gemm_scale == k.gemm_scale);
    assert_int_equal(d->fused_attention, k.fused_attention);
    assert_int_equal(d->selective_recompute, k.selective_recompute);
    assert_int_equal(d->sequence_parallel, k.sequence_parallel);
    assert_int_equal(d->distributed_optimizer, k.distributed_optimizer);
    assert_int_equal(d->overlap_grad_reduce, k.overlap_grad_reduce);
    assert_int_equal(d->overlap_param_gather, k.overlap_param_gather);
    assert_int_equal(d->overlap_tp_comm, k.overlap_tp_comm);
    assert_int_equal(d->async_tp, k.async_tp);
    assert_int_equal(d->overlap_p2p, k.overlap_p2p);
    assert_int_equal(d->pipeline_lockstep, k.pipeline_lockstep);
    assert_int_equal(d->pipeline_split_embedding, k.pipeline_split_embedding);
    assert_int_equal(d->grad_reduce_per_chunk, k.grad_reduce_per_chunk);
    assert_true(d->grad_bytes == k.grad_bytes);
    assert_int_equal(d->zero3_style, k.zero3_style);
    assert_true(d->zero3_bucket_params == k.zero3_bucket_params);
    assert_true(d->runtime_gib == k.runtime_gib);
    assert_true(d->allocator_overhead == k.allocator_overhead);
    assert_true(d->iteration_fixed_s == k.iteration_fixed_s);
    assert_true(d->launch_s_per_layer == k.launch_s_per_layer);
    assert_true(d->cross_entropy_bytes == k.cross_entropy_bytes);
    assert_true(d->grad_accum_bytes == k.grad_accum_bytes);
    assert_int_equal(d->fp8_scaling, k.fp8_scaling);
    assert_int_equal(d->fp8_param_gather, k.fp8_param_gather);
    assert_true(k.fp8_param_gather); /* Megatron-Bridge's fp8_cs recipes */
}

/* The profile load_edited loaded last. */
static cdse_stack edited;

/* Writes the megatron-core-2025 profile with line `line` (1-based, counting its lines) replaced
 * by `text` (NULL: removed) or `text` appended when line is 0, loads it (into `edited`), and
 * returns the diagnostic (static). */
static const char *load_edited(int line, const char *text, int *rc)
{
    static char msg[1024];
    char src[512], dst[] = "/tmp/test_stack_XXXXXX";
    snprintf(src, sizeof src, "%s/megatron-core-2025.cfg", STACKS_DIR);
    int fd = mkstemp(dst);
    assert_true(fd >= 0);
    FILE *in = fopen(src, "r"), *out = fdopen(fd, "w");
    assert_non_null(in);
    assert_non_null(out);
    char buf[512];
    for (int n = 1; fgets(buf, sizeof buf, in) != NULL; n++) {
        if (n != line)
            fputs(buf, out);
        else if (text != NULL)
            fprintf(out, "%s\n", text);
    }
    if (line == 0)
        fprintf(out, "%s\n", text);
    fclose(in);
    fclose(out);
    cdse_diag diag = {{0}};
    *rc = cdse_stack_load_file(dst, &edited, &diag);
    snprintf(msg, sizeof msg, "%s", diag.msg);
    remove(dst);
    return msg;
}

static int line_of(const char *key)
{
    char path[512], buf[512];
    snprintf(path, sizeof path, "%s/megatron-core-2025.cfg", STACKS_DIR);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int found = 0;
    for (int n = 1; !found && fgets(buf, sizeof buf, f) != NULL; n++)
        if (strncmp(buf, key, strlen(key)) == 0 && buf[strlen(key)] == ' ')
            found = n;
    fclose(f);
    assert_true(found > 0);
    return found;
}

static void test_bad_files(void **state)
{
    (void)state;
    int rc;
    int scale = line_of("gemm_scale");
    const char *msg = load_edited(scale, "gemm_scale = 1.5;", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    char where[32];
    snprintf(where, sizeof where, ":%d: key 'gemm_scale'", scale);
    assert_non_null(strstr(msg, where));
    assert_non_null(strstr(msg, "allowed: a number > 0 and <= 1"));

    msg = load_edited(line_of("grad_bytes"), NULL, &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(strstr(msg, "key 'grad_bytes': missing (required)"));

    msg = load_edited(line_of("zero3_style"), "zero3_style = \"zero++\";", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(
        strstr(msg, "unknown value \"zero++\"; allowed: one of \"deepspeed\", \"fsdp\""));

    /* cross_entropy_bytes is optional: without it, Megatron's unfused loss (52 B per logit, the
     * sum of the passes listed in include/clusterdse/model/stack.h: 38 forward + 14 backward). */
    msg = load_edited(line_of("cross_entropy_bytes"), NULL, &rc);
    assert_int_equal(rc, 0);
    assert_true(edited.cross_entropy_bytes == 38.0 + 14.0);
    msg = load_edited(line_of("cross_entropy_bytes"), "cross_entropy_bytes = 0.5;", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(strstr(msg, "key 'cross_entropy_bytes'"));
    /* grad_accum_bytes is optional (0) and at most 64 B per parameter. */
    assert_true(edited.grad_accum_bytes == 0.0);
    msg = load_edited(line_of("cross_entropy_bytes"), "grad_accum_bytes = 65.0;", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(strstr(msg, "key 'grad_accum_bytes'"));

    /* fp8_scaling is optional (delayed) and one of two names. */
    msg = load_edited(line_of("fp8_scaling"), NULL, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(edited.fp8_scaling, CDSE_FP8_DELAYED);
    msg = load_edited(line_of("fp8_scaling"), "fp8_scaling = \"blockwise\";", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(
        strstr(msg, "unknown value \"blockwise\"; allowed: one of \"delayed\", \"current\""));

    /* fp8_param_gather is optional (false) and a boolean; the profile sets it. */
    int gather = line_of("fp8_param_gather");
    msg = load_edited(gather, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_false(edited.fp8_param_gather);
    msg = load_edited(gather, "fp8_param_gather = \"fp8\";", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    snprintf(where, sizeof where, ":%d: key 'fp8_param_gather'", gather);
    assert_non_null(strstr(msg, where));
    assert_non_null(strstr(msg, "expected true or false"));

    msg = load_edited(0, "overlap_everything = true;", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(strstr(msg, "key 'overlap_everything': unknown key"));

    msg = load_edited(line_of("overlap_p2p"), "overlap_p2p = 1;", &rc);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_non_null(strstr(msg, "expected true or false"));

    cdse_stack k;
    cdse_diag diag = {{0}};
    assert_int_equal(cdse_stack_load_file("/nonexistent/x.cfg", &k, &diag), CDSE_EIO);
    assert_non_null(strstr(diag.msg, "/nonexistent/x.cfg: cannot read stack profile"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles_load),
        cmocka_unit_test(test_generations_differ),
        cmocka_unit_test(test_default_is_the_file),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
