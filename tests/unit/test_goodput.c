/* Goodput (include/clusterdse/model/goodput.h, issue 29): checkpoint sizes under each sharding,
 * Daly's interval and wall-time ratio, the expected loss, the limits (no failures gives the
 * failure-free time exactly; an interval longer than the MTTF is flagged), and the profiles'
 * cited rates reproducing the published figures they come from:
 *  - Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783) Sec. 3.3.4, Table 5:
 *    466 interruptions (419 unexpected) in a 54-day snapshot on 16,384 H100, "higher than 90%
 *    effective training time";
 *  - Kokolis et al. 2024 (arXiv:2410.21680): RSC-1 job MTTF projected to 1.8 h at 16,384 GPUs and
 *    0.23 h at 131,072 GPUs (r_f = 6.50 per 1000 node-days, 8 GPUs per node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_rel.h"

#include "clusterdse/config/job.h"
#include "clusterdse/model/goodput.h"
#include "clusterdse/sweep/report.h"

/* cdse_record_eval / cdse_record_system on the job's study (model/record.h). */
static void job_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_eval(&study, index, record);
}

#define JOB_PATH CDSE_SOURCE_DIR "/tests/jobs/unit.cfg"

/* Llama 3 405B as Meta ran it at 16K GPUs (Dubey et al. 2024 Table 4: TP 8, PP 16, DP 128,
 * global batch 2048 sequences of 8192), ZeRO as the axis says. */
static const char llama3_job[] =
    "models = ( \"llama3-405b\" );\n"
    "systems = ( \"h100-sxm-dgx\" );\n"
    "stacks = ( \"meta-llama3-2024\" );\n"
    "space = { gpus = [ 16384 ]; tp = [ 8 ]; pp = [ 16 ]; cp = [ 1 ]; vpp = [ 8 ];\n"
    "          microbatch = [ 1 ]; global_batch = [ 2048 ]; recompute = [ \"none\" ];\n"
    "          sequence_parallel = [ true ]; zero = [ 3 ]; precision = [ \"bf16\" ];\n"
    "          flash_attention = [ true ]; };\n"
    "objective = { tokens = 15.6e12; };\n";

static cdse_job *load(const char *text)
{
    cdse_job *job = calloc(1, sizeof *job);
    assert_non_null(job);
    cdse_diag diag;
    if (cdse_job_load_text(text, JOB_PATH, job, &diag) != 0)
        fail_msg("job: %s", diag.msg);
    return job;
}

static void unload(cdse_job *job)
{
    cdse_job_free(job);
    free(job);
}

/* Llama 3 405B's parameters by hand (jobs/models/llama3-405b.cfg: 126 layers, hidden 16384,
 * 128 heads of 128 with 8 KV heads, SwiGLU FFN 53248, vocabulary 128256, untied, RMSNorm):
 * per layer Q and O 2 x 16384^2 + K and V 2 x 16384 x 1024 + MLP 3 x 16384 x 53248 + two norms
 * 2 x 16384 = 3,187,703,808; x 126 + embedding and output 2 x 128256 x 16384 + final norm 16384
 * = 405,853,388,800. */
#define LLAMA3_PARAMS 405853388800.0

static cdse_strategy strategy(int tp, int pp, int cp, int zero, int precision, int gpus)
{
    cdse_strategy s = {
        .gpus = gpus, .tp = tp, .pp = pp, .cp = cp, .ep = 1, .zero = zero, .precision = precision};
    return s;
}

static void test_checkpoint_size_sharding(void **state)
{
    (void)state;
    cdse_job *job = load(llama3_job);
    const cdse_model *m = &job->model[0];
    cdse_param_counts pc = cdse_model_param_counts(m);
    assert_rel(cdse_model_params(m), LLAMA3_PARAMS, 1e-12);
    /* bf16: 2 B weights + 4 B fp32 master + 8 B Adam moments = 14 B/param; a model-parallel
     * shard (tp 8 x pp 16) holds P / 128. */
    cdse_checkpoint_bytes b;
    cdse_strategy s = strategy(8, 16, 1, 0, CDSE_BF16, 16384);
    b = cdse_checkpoint_size(&pc, &s, 128);
    assert_rel(b.total, 14.0 * LLAMA3_PARAMS, 1e-12);
    /* ZeRO 0: DP rank 0 writes the whole shard, 14 x P / 128 = 44,390,214,400 B. */
    assert_rel(b.rank, 44390214400.0, 1e-12);
    /* ZeRO 1: weights 2 x P / 128 + optimizer 12 x P / 128 / 128 = 6,638,715,100 B. */
    s.zero = 1;
    assert_rel(cdse_checkpoint_size(&pc, &s, 128).rank, 6638715100.0, 1e-12);
    s.zero = 2; /* the same: gradients are not saved */
    assert_rel(cdse_checkpoint_size(&pc, &s, 128).rank, 6638715100.0, 1e-12);
    /* ZeRO 3: 14 x P / 128 / 128 = 346,798,550 B (Llama 3 Sec. 3.3.4: "1MB to 4GB" per GPU). */
    s.zero = 3;
    assert_rel(cdse_checkpoint_size(&pc, &s, 128).rank, 346798550.0, 1e-12);
    /* Context parallelism joins the optimizer's shards: cp 2, dp 64 as dp 128 for ZeRO 1. */
    s = strategy(8, 16, 2, 1, CDSE_BF16, 16384);
    assert_rel(cdse_checkpoint_size(&pc, &s, 64).rank, 6638715100.0, 1e-12);
    /* fp32 weights: 4 + 0 (no master copy) + 8 = 12 B/param. */
    s = strategy(8, 16, 1, 0, CDSE_FP32, 16384);
    assert_rel(cdse_checkpoint_size(&pc, &s, 128).rank, 12.0 * LLAMA3_PARAMS / 128.0, 1e-12);
    unload(job);
}

/* Mixtral 8x7B (jobs/models/mixtral-8x7b.cfg): routed experts 32 layers x 8 x 3 x 4096 x 14336
 * = 45,097,156,608 parameters. tp 2 (etp = tp), ep 8, pp 4, dp 16 on 128 GPUs, ZeRO 1: dense
 * shard (P - Pe) / 8, expert shard Pe / 64; optimizer over dp 16 for the dense part, over the
 * expert data-parallel group tp x dp / (etp x ep) = 2 for the experts. */
static void test_checkpoint_size_experts(void **state)
{
    (void)state;
    cdse_job *job = load("models = ( \"mixtral-8x7b\" ); systems = ( \"h100-sxm-dgx\" );\n"
                         "space = { gpus = [ 128 ]; global_batch = [ 512 ]; };\n");
    const cdse_model *m = &job->model[0];
    cdse_param_counts pc = cdse_model_param_counts(m);
    double experts = 45097156608.0;
    assert_rel(cdse_model_expert_params(m), experts, 1e-12);
    double dense = cdse_model_params(m) - experts;
    cdse_strategy s = strategy(2, 4, 1, 1, CDSE_BF16, 128);
    s.ep = 8;
    double ds = dense / 8.0, es = experts / 64.0;
    assert_rel(cdse_checkpoint_size(&pc, &s, 16).rank, 2.0 * (ds + es) + 12.0 * (ds / 16 + es / 2),
               1e-12);
    unload(job);
}

/* Daly 2006 eq. 37 at delta = 100 s, M = 10^4 s: x = delta / 2M = 0.005;
 * sqrt(2 x 100 x 10^4) = 1414.2136, x (1 + sqrt(0.005) / 3 + 0.005 / 9) = 1.0241258 -> 1448.33,
 * minus 100 = 1348.3326 s. At delta >= 2M the interval is M. Young's sqrt(2 delta M) = 1414.2. */
static void test_daly_interval(void **state)
{
    (void)state;
    assert_rel(cdse_daly_interval(100.0, 1e4), 1348.3326, 1e-7);
    assert_rel(cdse_daly_interval(3e4, 1e4), 1e4, 1e-15);
    /* Daly eq. 20: tau 1000, delta 10, R 300, M 10^4:
     * 1000 / (10^4 e^0.03 (e^0.101 - 1)) = 1000 / (10^4 x 1.0304545 x 0.1062774) = 0.913132. */
    assert_rel(cdse_daly_ratio(1000.0, 10.0, 300.0, 1e4), 0.9131315, 1e-6);
}

/* A system with only what goodput reads: 8 GPUs per node, one 50 GB/s scale-out level. */
static cdse_system small_system(void)
{
    cdse_system sys = {.gpus_per_node = 8, .n_levels = 1};
    sys.level[0].bandwidth_gbs = 50.0;
    sys.level[0].efficiency = 1.0;
    sys.reliability.gpu_failures = 1.0; /* 1 per 1000 GPU-days */
    sys.reliability.detect_s = 60.0;
    sys.reliability.restart_s = 120.0;
    sys.reliability.replace_share = 0.5;
    sys.reliability.replace_s = 200.0;
    sys.storage.write_gbs = 100.0;
    sys.storage.host_copy_gbs = 50.0;
    return sys;
}

/* Expected loss and recovery on Llama 3 405B, ZeRO 3 (346,798,550 B per GPU, 5.682e12 B in
 * all), 1024 GPUs (tp 8 x pp 16 x dp 8: per GPU 14 P / 128 / 8 = 5,548,776,800 B), the small
 * system: failures 1024 x 1 / 86,400,000 s -> MTTF 84,375 s.
 * Sync: stall = total / 100 GB/s = 14 P / 1e11 = 56.819474 s; reload the same (read = write);
 * recovery 60 + 120 + 56.819474 + 0.5 x 200 = 336.819474 s; interval Daly(56.819, 84375);
 * expected loss (tau + stall) / 2. */
static void test_expected_loss(void **state)
{
    (void)state;
    cdse_job *job = load(llama3_job);
    const cdse_model *m = &job->model[0];
    cdse_param_counts pc = cdse_model_param_counts(m);
    cdse_system sys = small_system();
    cdse_strategy s = strategy(8, 16, 1, 3, CDSE_BF16, 1024);
    cdse_goodput g;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    double total = 14.0 * LLAMA3_PARAMS, stall = total / 1e11, mttf = 84375.0;
    assert_rel(g.checkpoint_bytes, 14.0 * LLAMA3_PARAMS / 1024.0, 1e-12);
    assert_rel(g.mttf_s, mttf, 1e-12);
    assert_rel(g.stall_s, 56.819474, 1e-7);
    assert_rel(g.recover_s, 60.0 + 120.0 + stall + 100.0, 1e-12);
    /* Daly eq. 37 by hand: sqrt(2 x 56.819474 x 84375) = 3096.4958; x = 56.819474 / 168750 =
     * 3.367080e-4; 1 + sqrt(x) / 3 + x / 9 = 1.0061539; 3096.4958 x 1.0061539 - 56.819474 =
     * 3058.7320 s (Young's sqrt(2 delta M) alone: 3096.5 s). Expected loss per failure
     * (tau + delta) / 2 = 1557.7757 s. Eq. 20: R / M = 336.819474 / 84375 = 0.0039920,
     * (tau + delta) / M = 0.0369251; 3058.7320 / (84375 x e^0.0039920 x (e^0.0369251 - 1))
     * = 3058.7320 / (84375 x 1.0040000 x 0.0376154) = 0.959909. */
    double tau = cdse_daly_interval(stall, mttf);
    assert_rel(tau, 3058.7320, 1e-7);
    assert_rel(g.interval_s, 3058.7320, 1e-7);
    assert_rel(g.lost_s, 1557.7757, 1e-7);
    assert_rel(g.ratio, 0.959909, 1e-6);
    assert_int_equal(g.flag, CDSE_CKPT_FLAG_OK);
    /* Async: the stall is the copy to host, 5,548,776,800 B / 50 GB/s = 0.110976 s; durable after
     * the copy and the write: 0.110976 + 56.819474; a failure before then rolls back one more
     * interval: the lag 56.819474 s is added to the loss. */
    cdse_stack async = cdse_stack_default;
    async.checkpoint = CDSE_CKPT_ASYNC;
    s.stack = &async;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    double copy = 14.0 * LLAMA3_PARAMS / 1024.0 / 50e9;
    assert_rel(g.stall_s, copy, 1e-12);
    assert_rel(g.durable_s, copy + stall, 1e-12);
    tau = fmax(cdse_daly_interval(copy, mttf), stall);
    assert_rel(g.interval_s, tau, 1e-12);
    assert_rel(g.lost_s, 0.5 * (tau + copy) + stall, 1e-12);
    /* In memory: durable after the copy and the send to a peer at 50 GB/s, read back from it. */
    async.checkpoint = CDSE_CKPT_MEMORY;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    assert_rel(g.durable_s, 2.0 * copy, 1e-12);
    assert_rel(g.recover_s, 60.0 + 120.0 + copy + 100.0, 1e-12);
    unload(job);
}

/* The per-node limit (storage.node_write_bandwidth, node_read_bandwidth): a node's 8 GPUs write
 * their shards through its client NICs. Llama 3 405B ZeRO 3 on 1024 GPUs: 5,548,776,800 B per
 * GPU, 44,390,214,400 B per node. Aggregate unlimited, 10 GB/s per node: stall 4.43902144 s;
 * read at 20 GB/s per node: 2.2195107 s in the recovery (60 + 120 + 2.2195107 + 100). With both
 * limits the slower decides: 100 GB/s aggregate (56.819474 s, test_expected_loss) over 10 GB/s
 * per node (4.44 s); at 0.5 GB/s per node 88.780429 s over the aggregate's 56.82 s. */
static void test_node_bandwidth(void **state)
{
    (void)state;
    cdse_job *job = load(llama3_job);
    cdse_param_counts pc = cdse_model_param_counts(&job->model[0]);
    cdse_system sys = small_system();
    sys.storage.write_gbs = 0.0;
    sys.storage.node_write_gbs = 10.0;
    sys.storage.node_read_gbs = 20.0;
    cdse_strategy s = strategy(8, 16, 1, 3, CDSE_BF16, 1024);
    cdse_goodput g;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    assert_rel(g.stall_s, 4.43902144, 1e-9);
    assert_rel(g.recover_s, 60.0 + 120.0 + 2.2195107 + 100.0, 1e-9);
    sys.storage.write_gbs = 100.0;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    assert_rel(g.stall_s, 56.819474, 1e-7);
    sys.storage.node_write_gbs = 0.5;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    assert_rel(g.stall_s, 88.780429, 1e-7);
    unload(job);
}

/* Limits: no rates and no planned interruptions -> ratio exactly 1, time_to_train_effective_days
 * == time_to_train_days bit for bit, no checkpoint; an interval over the MTTF is flagged. */
static void test_limits(void **state)
{
    (void)state;
    cdse_job *job = load(llama3_job);
    memset(&job->system[0].reliability, 0, sizeof job->system[0].reliability);
    cdse_record r;
    job_record_eval(job, 0, &r);
    assert_int_equal(r.result.status, CDSE_ST_OK);
    assert_true(r.goodput == 1.0);
    assert_true(r.time_to_train_effective_days == r.time_to_train_days);
    assert_true(r.interruptions_expected == 0.0 && r.checkpoint_interval_s == 0.0);
    /* Iterations of 10 s against failures every 1000 GPU-days / (1024 GPUs x 10^4) = 8.4 s. */
    cdse_param_counts pc = cdse_model_param_counts(&job->model[0]);
    cdse_system sys = small_system();
    sys.reliability.gpu_failures = 1e4;
    cdse_strategy s = strategy(8, 16, 1, 3, CDSE_BF16, 1024);
    cdse_goodput g;
    cdse_goodput_eval(&pc, &sys, &s, 8, 10.0, &g);
    assert_true(g.mttf_s < 10.0);
    assert_rel(g.interval_s, 10.0, 1e-15);
    assert_int_equal(g.flag, CDSE_CKPT_FLAG_OVER_MTTF);
    unload(job);
}

/* Llama 3 from h100-sxm-dgx.cfg's cited rates: 466 interruptions (419 unexpected) in 54 days at
 * 16,384 GPUs, MTTF ~3 h ("one failure every three hours"), and over 90% effective training
 * time, each within 20%. */
static void test_llama3_snapshot(void **state)
{
    (void)state;
    /* The job the README shows (jobs/goodput-llama3-snapshot.cfg), the same run as llama3_job. */
    cdse_job *job = calloc(1, sizeof *job);
    assert_non_null(job);
    cdse_diag diag;
    if (cdse_job_load_file(CDSE_SOURCE_DIR "/jobs/goodput-llama3-snapshot.cfg", job, &diag) != 0)
        fail_msg("job: %s", diag.msg);
    cdse_record r;
    job_record_eval(job, 0, &r);
    assert_int_equal(r.result.status, CDSE_ST_OK);
    cdse_param_counts pc = cdse_model_param_counts(&job->model[0]);
    cdse_goodput g;
    cdse_goodput_eval(&pc, &job->system[0], &r.strategy, r.result.dp, r.result.time_per_iteration_s,
                      &g);
    /* By hand from the profile's rates: 16384 x (0.3029 + 0.04747) + 2048 x 0.9856 = 7758.9709
     * per 1000 days: 54 days x 7.7589709 = 418.98 unexpected, + 54 x 0.8704 = 47.00 planned =
     * 465.99; MTTF 24 / 7.7589709 = 3.0932 h. Then against Meta's figures, within 20%. */
    double snapshot = 54.0 * 86400.0;
    assert_rel(snapshot / g.mttf_s, 418.98443, 1e-6);
    assert_rel(snapshot * g.interruptions_per_s, 465.98603, 1e-6);
    assert_rel(g.mttf_s / 3600.0, 3.0931937, 1e-6);
    assert_rel(snapshot * g.interruptions_per_s, 466.0, 0.2);
    assert_rel(snapshot / g.mttf_s, 419.0, 0.2);
    assert_rel(g.mttf_s / 3600.0, 3.0, 0.2);
    assert_rel(r.goodput, 0.90, 0.2);
    assert_true(r.goodput > 0.90 && r.goodput < 1.0);
    assert_int_equal(r.checkpoint_flag, CDSE_CKPT_FLAG_OK);
    unload(job);
}

/* Kokolis et al. 2024 from a100-80g-dgx.cfg's r_f: MTTF 1.8 h at 16,384 GPUs, 0.23 h at 131,072
 * GPUs, each within 20%. */
static void test_kokolis_mttf(void **state)
{
    (void)state;
    cdse_job *job = load("models = ( \"llama3-405b\" ); systems = ( \"a100-80g-dgx\" );\n"
                         "space = { gpus = [ 128 ]; global_batch = [ 512 ]; };\n");
    /* By hand: 2048 nodes x 6.50 / 1000 = 13.312 failures a day -> 24 / 13.312 = 1.80288 h;
     * 16384 nodes -> 0.22536 h. */
    static const double gpus[] = {16384.0, 131072.0}, hours[] = {1.8, 0.23};
    static const double by_hand[] = {1.8028846, 0.22536058};
    cdse_param_counts pc = cdse_model_param_counts(&job->model[0]);
    for (int i = 0; i < 2; i++) {
        cdse_strategy s = strategy(8, 16, 1, 1, CDSE_BF16, (int)gpus[i]);
        cdse_goodput g;
        cdse_goodput_eval(&pc, &job->system[0], &s, (int)gpus[i] / 128, 10.0, &g);
        assert_rel(g.mttf_s / 3600.0, by_hand[i], 1e-7);
        assert_rel(g.mttf_s / 3600.0, hours[i], 0.2);
    }
    unload(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_size_sharding),
        cmocka_unit_test(test_checkpoint_size_experts),
        cmocka_unit_test(test_daly_interval),
        cmocka_unit_test(test_expected_loss),
        cmocka_unit_test(test_node_bandwidth),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_llama3_snapshot),
        cmocka_unit_test(test_kokolis_mttf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
