#define _POSIX_C_SOURCE 200809L
/* Output columns and CSV (src/sweep/report.c); the table: test_table.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/config/bands.h"
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

/* The column contract of issue 2 and DESIGN.md, in order. */
static const char *const contract_header =
    "index,model,system,gpus,tp,pp,dp,cp,ep,vpp,microbatch,global_batch,grad_accum,recompute,"
    "sequence_parallel,zero,precision,flash_attention,offload,tp_comm_overlap,status,time_per_"
    "iteration_s,"
    "tokens_per_s,model_tflops_per_gpu,hardware_tflops_per_gpu,mfu,hfu,mem_total_gib,"
    "mem_weights_gib,mem_gradients_gib,mem_optimizer_gib,mem_activations_gib,mem_other_gib,"
    "mem_offloaded_gib,t_forward_s,t_backward_s,t_recompute_s,t_tp_comm_s,t_pp_comm_s,"
    "t_dp_comm_s,t_ep_comm_s,t_cp_comm_s,t_bubble_s,t_optimizer_s,t_offload_s,t_imbalance_s,"
    "time_to_train_days,gpu_hours,seq_imbalance,pool_split,pool_share_0,pool_share_1,"
    "pool_share_2,pool_share_3,placement,etp,recompute_modules,moe_dispatcher,moe_overlap,"
    "stack,mem_fp8_cache_gib,mem_runtime_gib,t_fixed_s,offload_layers,recompute_layers,peak_bf16_"
    "tflops,peak_fp8_"
    "tflops,hbm_gib,"
    "hbm_bandwidth_gbs,gpus_per_node,net0_bandwidth_gbs,net0_latency_us,net0_size,"
    "net1_bandwidth_gbs,net1_latency_us,net1_size,tier_capacity_gib,tier_bandwidth_gbs,"
    "gpu_price,rental_price,gpu_power_w,cost_to_train,energy_to_train_mwh,tokens_per_kwh,"
    "storage_write_gbs,gpu_failures,node_failures,checkpoint_gib,checkpoint_stall_s,mttf_hours,"
    "checkpoint_interval_s,lost_work_s,goodput,interruptions_expected,"
    "time_to_train_effective_days,checkpoint_flag,"
    "time_low_s,time_high_s,time_to_train_days_low,time_to_train_days_high,cost_to_train_low,"
    "cost_to_train_high,mem_reserved_gib,checkpoint,storage_read_gbs,t_ceiling_s,pool_layers_0,"
    "pool_layers_1,pool_layers_2,pool_layers_3,pool_microbatches_0,pool_microbatches_1,"
    "pool_microbatches_2,pool_microbatches_3,pool_tp_0,pool_tp_1,pool_tp_2,pool_tp_3,"
    "replace_time_s,tier_link_gbs\n";

/* Writes with `fn` into a temporary file and returns the text (static buffer). */
static const char *capture(void (*fn)(FILE *, const void *, const void *), const void *a,
                           const void *b)
{
    static char buf[8192];
    FILE *f = tmpfile();
    assert_non_null(f);
    fn(f, a, b);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void header_fn(FILE *f, const void *a, const void *b)
{
    (void)a, (void)b;
    cdse_csv_header(f);
}

static void row_fn(FILE *f, const void *record, const void *job)
{
    cdse_csv_row(f, record, job);
}

static void test_csv_header_is_the_contract(void **state)
{
    (void)state;
    assert_string_equal(capture(header_fn, NULL, NULL), contract_header);
    /* 55 + etp, recompute_modules, moe_dispatcher, moe_overlap + stack, mem_fp8_cache_gib,
     * mem_runtime_gib, t_fixed_s, offload_layers, recompute_layers + 16 hardware values + cost,
     * energy, tokens per kWh + goodput: 3 hardware values, 8 figures and the flag + the error
     * band's six (time, days, cost: low, high) + mem_reserved_gib + checkpoint (the axis) +
     * storage_read_gbs (a hardware value) + t_ceiling_s + a pool's partition: layers,
     * micro-batches and tp of its 4 types (issue 30) + replace_time_s and tier_link_gbs (hardware
     * values). */
    assert_int_equal(cdse_column_count, 120);
    assert_non_null(cdse_column_find("mem_activations_gib"));
    assert_null(cdse_column_find("no_such_column"));
}

/* A record filled by hand: GPT-like model on 64 GPUs, tp 8 x pp 2 -> dp = 64 / 16 = 4,
 * grad_accum = 512 / (1 * 4) = 128. tokens_per_s = 512 * 2048 / 12.5 = 83886.08;
 * mfu = 150.25 / 312 = 0.4815705...; hfu = 160.5 / 312 = 0.5144230...;
 * with a budget of 3e11 tokens: 3e11 / 83886.08 = 3576278.69 s = 41.3921 days, and
 * 3576278.69 * 64 / 3600 = 63578.29 GPU-hours. */
static void fill(cdse_job *job, cdse_record *r)
{
    memset(job, 0, sizeof *job);
    memset(r, 0, sizeof *r);
    snprintf(job->model[0].name, sizeof job->model[0].name, "m1");
    snprintf(job->model[1].name, sizeof job->model[1].name, "odd,\"name\"");
    snprintf(job->system[0].name, sizeof job->system[0].name, "s1");
    job->n_models = 2;
    job->n_systems = 1;
    r->index = 42;
    r->model = 0;
    r->system = 0;
    r->strategy = (cdse_strategy){.gpus = 64,
                                  .tp = 8,
                                  .pp = 2,
                                  .cp = 1,
                                  .ep = 1,
                                  .vpp = 1,
                                  .microbatch = 1,
                                  .global_batch = 512,
                                  .recompute = CDSE_RECOMPUTE_SELECTIVE,
                                  .sequence_parallel = true,
                                  .zero = 1,
                                  .precision = CDSE_BF16,
                                  .flash_attention = true,
                                  .offload = CDSE_OFFLOAD_ACTIVATIONS | CDSE_OFFLOAD_OPTIMIZER};
    cdse_result *res = &r->result;
    res->status = CDSE_ST_OK;
    res->dp = 4;
    res->grad_accum = 128;
    res->time_per_iteration_s = 12.5;
    res->tokens_per_s = 83886.08;
    res->model_tflops_per_gpu = 150.25;
    res->hardware_tflops_per_gpu = 160.5;
    res->mfu = 150.25 / 312.0;
    res->hfu = 160.5 / 312.0;
    res->mem_total_gib = 70.125;
    res->mem_weights_gib = 10.5;
    res->mem_gradients_gib = 10.5;
    res->mem_optimizer_gib = 15.75;
    res->mem_activations_gib = 30.375;
    res->mem_other_gib = 3.0;
    res->t_forward_s = 3.0;
    res->t_backward_s = 6.0;
    res->t_recompute_s = 1.0;
    res->t_tp_comm_s = 0.5;
    res->t_pp_comm_s = 0.25;
    res->t_dp_comm_s = 0.125;
    res->t_bubble_s = 1.5;
    res->t_optimizer_s = 0.0625;
    r->stack = 0; /* the job has no stacks: code 0 = n_stacks is the built-in, "default" */
    res->mem_fp8_cache_gib = 2.5;
    res->mem_runtime_gib = 1.75;
    res->t_fixed_s = 0.03125;
    res->t_ceiling_s = 0.015625;
    r->strategy.offload_layers = 3;   /* with offload "activations+optimizer" above */
    r->strategy.recompute_layers = 5; /* a distinct value (the record is not checked) */
    r->time_to_train_days = 41.39211;
    r->gpu_hours = 63578.29;
    for (int k = 0; k < CDSE_HW_COUNT; k++)
        r->hw[k] = 0.5 * (k + 1); /* distinct values: a column reading the wrong slot shows */
    /* goodput (issue 29), distinct values again */
    r->checkpoint_gib = 11.0;
    r->checkpoint_stall_s = 12.0;
    r->mttf_hours = 13.0;
    r->checkpoint_interval_s = 14.0;
    r->lost_work_s = 15.0;
    r->goodput = 0.875;
    r->interruptions_expected = 16.0;
    r->time_to_train_effective_days = 17.0;
    r->checkpoint_flag = 1;
    for (int i = 0; i < 4; i++) { /* a pool's partition (issue 30), distinct values */
        r->result.pool_layers[i] = 21 + i;
        r->result.pool_microbatches[i] = 31 + i;
        r->result.pool_tp[i] = 1 << i;
    }
}

static void test_csv_row(void **state)
{
    (void)state;
    cdse_job *job = calloc(1, sizeof *job);
    cdse_record record;
    fill(job, &record);
    const char *expected =
        "42,m1,s1,64,8,2,4,1,1,1,1,512,128,selective,1,1,bf16,1,activations+optimizer,0,ok,12.5,"
        "83886.1,150.25,160.5,0.481571,0.514423,70.125,10.5,10.5,15.75,30.375,3,0,3,6,1,0.5,0.25,"
        "0.125,0,0,1.5,0.0625,0,0,41.3921,63578.3,0,none,0,0,0,0,tp-cp-dp-pp,0,none,alltoall,none,"
        "default,2.5,1.75,0.03125,3,5,0.5,1,1.5,2,2.5,3,3.5,4,4.5,5,5.5,6,6.5,7,7.5,8,0,0,0,"
        /* checkpoint 0: the stack's; storage_read_gbs hw[19] = 0.5 x 20; then the pool's */
        "8.5,9,9.5,11,12,13,14,15,0.875,16,17,1,0,0,0,0,0,0,0,stack,10,0.015625,"
        /* replace_time_s hw[20] = 0.5 x 21, tier_link_gbs hw[21] = 0.5 x 22 */
        "21,22,23,24,31,32,33,34,1,2,4,8,10.5,11\n";
    assert_string_equal(capture(row_fn, &record, job), expected);
    /* RFC 4180: a name with a comma and quotes is quoted, its quotes doubled. */
    record.model = 1;
    record.result.status = CDSE_ST_OOM;
    const char *row = capture(row_fn, &record, job);
    assert_non_null(strstr(row, "42,\"odd,\"\"name\"\"\",s1,"));
    assert_non_null(strstr(row, ",oom,"));
    free(job);
}

static void test_column_values(void **state)
{
    (void)state;
    cdse_job *job = calloc(1, sizeof *job);
    cdse_record record;
    fill(job, &record);
    assert_float_equal(cdse_column_value(cdse_column_find("dp"), &record), 4.0, 0.0);
    assert_float_equal(cdse_column_value(cdse_column_find("recompute"), &record),
                       CDSE_RECOMPUTE_SELECTIVE, 0.0);
    assert_float_equal(cdse_column_value(cdse_column_find("sequence_parallel"), &record), 1.0, 0.0);
    assert_float_equal(cdse_column_value(cdse_column_find("index"), &record), 42.0, 0.0);
    assert_float_equal(cdse_column_value(cdse_column_find("t_bubble_s"), &record), 1.5, 0.0);
    char buf[64];
    cdse_column_format(cdse_column_find("offload"), &record, job, buf, sizeof buf);
    assert_string_equal(buf, "activations+optimizer");
    assert_string_equal(cdse_offload_name(0), "none");
    assert_string_equal(cdse_offload_name(CDSE_OFFLOAD_WEIGHTS | CDSE_OFFLOAD_OPTIMIZER),
                        "weights+optimizer");
    free(job);
}

static void test_cost_orientation(void **state)
{
    (void)state;
    cdse_job *job = calloc(1, sizeof *job);
    cdse_record record;
    fill(job, &record);
    assert_float_equal(cdse_record_cost(&record, CDSE_METRIC_TIME_PER_ITERATION), 12.5, 0.0);
    assert_float_equal(cdse_record_cost(&record, CDSE_METRIC_TOKENS_PER_S), -83886.08, 0.0);
    assert_float_equal(cdse_record_cost(&record, CDSE_METRIC_MFU), -150.25 / 312.0, 0.0);
    assert_float_equal(cdse_record_cost(&record, CDSE_METRIC_GPU_HOURS), 63578.29, 0.0);
    assert_float_equal(cdse_record_cost(&record, CDSE_METRIC_TIME_TO_TRAIN), 41.39211, 0.0);
    record.result.status = CDSE_ST_OOM; /* never ranks ahead of a feasible configuration */
    assert_true(cdse_record_cost(&record, CDSE_METRIC_TIME_PER_ITERATION) > 1e300);
    free(job);
}

/* cdse_record_eval decodes the index and derives the budget figures from tokens_per_s. */
static void test_record_eval(void **state)
{
    (void)state;
    cdse_job *job = calloc(1, sizeof *job);
    cdse_diag diag;
    const char *text = "models = ( \"gpt3-1.3b\" );\n"
                       "systems = ( \"a100-80g-dgx\" );\n"
                       "space = { gpus = 16; tp = [ 1, 2 ]; microbatch = [ 1, 2 ];\n"
                       "          global_batch = 512; zero = [ 0, 1 ]; };\n"
                       "objective = { metric = \"gpu_hours\"; tokens = 1e10; };\n";
    int rc = cdse_job_load_text(text, CDSE_SOURCE_DIR "/tests/jobs/unit.cfg", job, &diag);
    if (rc != 0)
        fail_msg("%s", diag.msg);
    /* Index 5 = tp digit 1, microbatch digit 0, zero digit 1 (strides 4, 2, 1). */
    cdse_record record;
    job_record_eval(job, 5, &record);
    assert_int_equal(record.index, 5);
    assert_int_equal(record.strategy.tp, 2);
    assert_int_equal(record.strategy.microbatch, 1);
    assert_int_equal(record.strategy.zero, 1);
    assert_int_equal(record.strategy.gpus, 16);
    assert_int_equal(record.result.dp, 8); /* 16 / 2 */
    assert_int_equal(record.result.status, CDSE_ST_OK);
    assert_true(record.result.tokens_per_s > 0);
    double seconds = 1e10 / record.result.tokens_per_s;
    assert_float_equal(record.time_to_train_days, seconds / 86400.0, 1e-12 * seconds);
    assert_float_equal(record.gpu_hours, seconds * 16 / 3600.0, 1e-9 * seconds);
    cdse_job_free(job);
    free(job);
}

/* Every sweepable hardware key is the column its name says, reading its own slot. */
static void test_hw_columns(void **state)
{
    (void)state;
    cdse_record record;
    memset(&record, 0, sizeof record);
    for (int k = 0; k < CDSE_HW_COUNT; k++)
        record.hw[k] = 10.0 + k;
    for (int k = 0; k < CDSE_HW_COUNT; k++) {
        const cdse_column *c = cdse_column_find(cdse_hw_column(k));
        assert_non_null(c);
        assert_true(cdse_column_value(c, &record) == 10.0 + k);
    }
}

/* Cost and energy against a hand calculation (formulas in src/sweep/report.c, record_cost):
 * 20 GPUs at 8 per node = 3 nodes (ceil 2.5); P = pue 1.25 x (20 x 700 W + 3 x 4,000 W)
 * = 1.25 x 26,000 = 32,500 W. Per GPU purchase 30,000 + facility 2,000 + ports 500 (level 0)
 * + 1,500 (level 1) = 34,000, over 4 years of 365.25 days = 126,230,400 s. The throughput is the
 * evaluator's (an input here): seconds = 1e10 tokens / tokens_per_s. */
static const char cost_job[] =
    "models = ( \"gpt3-1.3b\" );\n"
    "systems = ( { base = \"a100-80g-dgx\"; name = \"priced\";\n"
    "  network = ( { name = \"nvlink\"; size = 8; bandwidth = 300.0; latency = 3.4;\n"
    "                port_price = 500.0; },\n"
    "              { name = \"ib\"; size = 0; bandwidth = 25.0; latency = 9.6;\n"
    "                port_price = 1500.0; } );\n"
    "  cost = { gpu_price = 30000.0; facility_price = 2000.0; amortization_years = 4.0;\n"
    "           gpu_power = 700.0; node_power = 4000.0; pue = 1.25; %s }; } );\n"
    "space = { gpus = 20; tp = 1; pp = 1; microbatch = 1; global_batch = 480; zero = 1; };\n"
    "objective = { metric = \"cost_to_train\"; tokens = 1e10; electricity_price = 0.1; };\n";

static void eval_cost_job(const char *extra, cdse_record *record)
{
    char text[2048];
    snprintf(text, sizeof text, cost_job, extra);
    cdse_job *job = calloc(1, sizeof *job);
    cdse_diag diag;
    if (cdse_job_load_text(text, CDSE_SOURCE_DIR "/tests/jobs/unit.cfg", job, &diag) != 0)
        fail_msg("%s", diag.msg);
    job_record_eval(job, 0, record);
    assert_int_equal(record->result.status, CDSE_ST_OK);
    assert_string_equal(job->objective.currency, "USD");
    cdse_job_free(job);
    free(job);
}

/* The error band of a record: the factors of its stack (here the built-in,
 * megatron-core-2025) and GPU generation (A100: ampere) on its time, days and cost; a stack
 * and generation without a row take the row "*". A band table written here:
 *   megatron-core-2025 / ampere: 0.9 - 1.2;  "*": 0.5 - 2. */
static void test_record_band(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, cost_job, "");
    cdse_job *job = calloc(1, sizeof *job);
    cdse_diag diag;
    if (cdse_job_load_text(text, CDSE_SOURCE_DIR "/tests/jobs/unit.cfg", job, &diag) != 0)
        fail_msg("%s", diag.msg);
    char path[] = "/tmp/cdse_bands_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("bands = (\n"
          "  { stack = \"megatron-core-2025\"; generation = \"ampere\"; rows = 3; mean = 0.0; "
          "low = 0.9; high = 1.2; },\n"
          "  { stack = \"*\"; generation = \"*\"; rows = 0; mean = 0.0; low = 0.5; high = 2.0; }\n"
          ");\n",
          f);
    fclose(f);
    if (cdse_bands_apply(path, job, &diag) != 0)
        fail_msg("%s", diag.msg);
    cdse_record r;
    job_record_eval(job, 0, &r);
    assert_int_equal(r.result.status, CDSE_ST_OK);
    assert_true(r.time_low_s == 0.9 * r.result.time_per_iteration_s);
    assert_true(r.time_high_s == 1.2 * r.result.time_per_iteration_s);
    assert_true(r.days_low == 0.9 * r.time_to_train_days && r.days_low > 0.0);
    assert_true(r.cost_high == 1.2 * r.cost_to_train && r.cost_high > 0.0);
    /* Another generation: the row "*". */
    snprintf(job->system[0].gpu, sizeof job->system[0].gpu, "H100-SXM5-80GB");
    assert_int_equal(cdse_bands_apply(path, job, &diag), 0);
    job_record_eval(job, 0, &r);
    assert_true(r.time_low_s == 0.5 * r.result.time_per_iteration_s);
    assert_true(r.time_high_s == 2.0 * r.result.time_per_iteration_s);
    /* A row without "*" is refused, naming the file. */
    f = fopen(path, "w");
    fputs("bands = ( { stack = \"x\"; generation = \"ampere\"; rows = 1; mean = 0.0; low = 0.9; "
          "high = 1.1; } );\n",
          f);
    fclose(f);
    assert_int_equal(cdse_bands_apply(path, job, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "no row \"*\""));
    remove(path);
    cdse_job_free(job);
    free(job);
}

static void test_cost_energy(void **state)
{
    (void)state;
    cdse_record r;
    eval_cost_job("", &r);
    double tps = r.result.tokens_per_s, seconds = 1e10 / tps;
    assert_float_equal(r.tokens_per_kwh, tps * 3.6e6 / 32500.0, 1e-9 * r.tokens_per_kwh);
    double mwh = 32500.0 * seconds / 3.6e9;
    assert_float_equal(r.energy_to_train_mwh, mwh, 1e-12 * mwh);
    double cost = 20 * 34000.0 * seconds / 126230400.0 + mwh * 1000.0 * 0.1;
    assert_float_equal(r.cost_to_train, cost, 1e-9 * cost);
    assert_true(cdse_record_cost(&r, CDSE_METRIC_COST_TO_TRAIN) == r.cost_to_train);
    assert_true(cdse_record_cost(&r, CDSE_METRIC_TOKENS_PER_KWH) == -r.tokens_per_kwh);
}

/* Rented: 20 GPUs x 2.5 per GPU-hour x hours; electricity is in the rent, energy still counts. */
static void test_cost_rented(void **state)
{
    (void)state;
    cdse_record r;
    eval_cost_job("rental_price = 2.5;", &r);
    double seconds = 1e10 / r.result.tokens_per_s;
    double cost = 20 * 2.5 * seconds / 3600.0;
    assert_float_equal(r.cost_to_train, cost, 1e-9 * cost);
    assert_float_equal(r.energy_to_train_mwh, 32500.0 * seconds / 3.6e9, 1e-9);
}

/* tests/jobs/good_hw_axes.cfg: hbm_gib [40, 79.6, 141] (the first axis, stride 3 x 2 x 2 x 2 x
 * 16 = 384 / 3 = 128), net0 size [8, 16]. Configuration 128 x 2 + 0 has hbm_gib 141, the others
 * at their first value; the system verify replays is the one the row was evaluated on. */
static void test_record_system(void **state)
{
    (void)state;
    cdse_job *job = calloc(1, sizeof *job);
    cdse_diag diag;
    if (cdse_job_load_file(CDSE_SOURCE_DIR "/tests/jobs/good_hw_axes.cfg", job, &diag) != 0)
        fail_msg("%s", diag.msg);
    assert_int_equal(job->space.size, 384);
    cdse_system system;
    cdse_record r;
    for (uint64_t index = 0; index < job->space.size; index += 37) {
        job_record_system(job, index, &system);
        job_record_eval(job, index, &r);
        double hw[CDSE_HW_COUNT];
        cdse_hw_values(&system, hw);
        assert_memory_equal(hw, r.hw, sizeof hw);
    }
    job_record_system(job, 256, &system);
    assert_true(system.hbm_gib == 141.0);
    assert_int_equal(system.level[0].size, 8);
    assert_true(system.level[1].bandwidth_gbs == 25.0);
    cdse_job_free(job);
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_header_is_the_contract),
        cmocka_unit_test(test_csv_row),
        cmocka_unit_test(test_column_values),
        cmocka_unit_test(test_cost_orientation),
        cmocka_unit_test(test_record_eval),
        cmocka_unit_test(test_hw_columns),
        cmocka_unit_test(test_cost_energy),
        cmocka_unit_test(test_record_band),
        cmocka_unit_test(test_cost_rented),
        cmocka_unit_test(test_record_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
