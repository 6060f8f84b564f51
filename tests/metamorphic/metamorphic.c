/* Metamorphic test suite of the model (docs/testing.md): relations that must hold between the
 * answers for random jobs over the zoo and every strategy axis, checked through the evaluator's
 * C API (cdse_record_eval, as `clusterdse eval` and the sweep call it).
 *
 *   compute_better      a better peak, GEMM or attention efficiency is never slower
 *   memory_bw_better    a higher HBM bandwidth or efficiency is never slower
 *   network_better      a higher network bandwidth or efficiency, or a lower latency (a level's
 *                       own or a fitted collective's), is never slower
 *   hbm_more            more HBM (or second-tier capacity) is never infeasible where less was
 *                       feasible, and never slower
 *   recompute_more      none -> selective -> full is never faster (without activation offload,
 *                       whose traffic recomputation shrinks) and never more memory (off pools,
 *                       whose pipeline split fills the memory it frees)
 *   recompute_layers    more fully recomputed layers per chunk: likewise
 *   recompute_modules   a superset of recomputed modules: likewise
 *   zero_higher         a higher ZeRO stage never keeps more memory (off pools, likewise)
 *   duplicate           a configuration evaluated twice, and on a copy of its system under
 *                       another name, gives the same row
 *   order               the job with every list in another order gives the same rows
 *   definitions         tokens/s, model TFLOP/s, MFU, HFU, days, GPU-hours, cost, energy and
 *                       tokens/kWh recomputed from the row's own inputs by docs/eval.md and
 *                       docs/job-file.md (Cost and energy), and the status against the memory
 *
 * Eval against sweep and pruned against exhaustive run through the command line in
 * tests/sh/metamorphic_sweep.sh, from jobs this program writes (--emit-job).
 *
 * A violation prints the relation, both values and the pair as a job file whose two
 * configurations reproduce it (`clusterdse eval pair.cfg --csv`), after checking that they do.
 *
 * Usage: metamorphic [--pairs N] [--seed S] [--show N] [--lines] [--quiet] [--known FILE]
 *        metamorphic --emit-job sweep|prune|exhaustive [--seed S]
 *   --pairs N     pairs to check (default 10,000), over as many generated jobs as that takes
 *   --seed S      the generator's seed (default 20261203)
 *   --show N      violations printed with their pair job per relation (default 3)
 *   --lines       the other violations as one line each
 *   --quiet       no listing of refused generated jobs
 *   --known FILE  pass when each relation finds exactly the violations FILE lists (a ratchet, as
 *                 tests/validation/known_gaps.txt, for a run with violations still open)
 *   --emit-job K  print one generated job of kind K for tests/sh/metamorphic_sweep.sh
 * Exit 0: no violation (or exactly the known ones); 1: violations; 2: the zoo or a generated job
 * could not be read. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metamorphic.h"

/* ---- One generated job ---------------------------------------------------------------- */

static int load(meta_ctx *ctx, const char *text, cdse_job *job)
{
    cdse_diag diag;
    if (cdse_job_load_text(text, JOB_PATH, job, &diag) == 0)
        return 0;
    ctx->rejected++;
    if (!ctx->quiet)
        printf("generated job refused: %s\n----- job -----\n%s----- end -----\n", diag.msg, text);
    return -1;
}

/* A random configuration of the job that has figures (ok or oom), or UINT64_MAX. Rows drawn
 * on the way are checked against the definitions. */
static uint64_t draw(meta_ctx *ctx, cdse_record *rec)
{
    for (int k = 0; k < DRAWS_PER_SAMPLE; k++) {
        uint64_t index = meta_rng_next(&ctx->rng) % ctx->job->space.size;
        meta_record_eval(ctx->job, index, rec);
        meta_check_definitions(ctx, ctx->job, index, rec);
        if (computed(rec->result.status))
            return index;
    }
    return UINT64_MAX;
}

/* One generated job: every SWEEP_EVERY-th of the kind the command-line test sweeps (hardware
 * axes, pools, more systems; no hardware relations: a pool or an axis on the changed key would
 * hide the change), the others of the pair kind (recompute and zero with every value). */
static void one_job(meta_ctx *ctx)
{
    static meta_job gen;
    static char text[1 << 17], shuffled[1 << 17];
    bool sweep_kind = ctx->jobs % SWEEP_EVERY == SWEEP_EVERY - 1;
    meta_job_generate(&ctx->rng, sweep_kind ? META_SWEEP : META_PAIRS, false, &gen);
    meta_rng shuffle = {meta_rng_next(&ctx->rng)};
    if (meta_job_render(&gen, NULL, text, sizeof text) < 0 ||
        meta_job_render(&gen, &shuffle, shuffled, sizeof shuffled) < 0)
        return;
    ctx->jobs++;
    if (load(ctx, text, ctx->job) != 0)
        return;
    if (load(ctx, shuffled, ctx->order) != 0) {
        cdse_job_free(ctx->job);
        return;
    }
    memcpy(ctx->alt, ctx->job, sizeof *ctx->alt);
    ctx->alt->text = NULL;
    ctx->alt->fingerprint = ++ctx->fresh;
    for (int k = 0; k < SAMPLES_PER_JOB; k++) {
        cdse_record a;
        uint64_t index = draw(ctx, &a);
        if (index == UINT64_MAX)
            continue;
        int digit[CDSE_AXIS_COUNT];
        cdse_space_decode(&ctx->job->space, index, digit);
        for (int rel = REL_COMPUTE; rel <= REL_HBM && !sweep_kind; rel++)
            for (int t = 0; t < HARDWARE_CHANGES; t++)
                meta_hardware_pair(ctx, rel, index, &a);
        meta_hw_axis_pairs(ctx, index, &a, digit);
        meta_recompute_pairs(ctx, digit);
        meta_recompute_layer_pairs(ctx, digit);
        meta_recompute_module_pairs(ctx, digit);
        meta_zero_pairs(ctx, digit);
        meta_duplicate_pair(ctx, index, &a, digit);
        meta_order_pair(ctx, index, &a, digit);
    }
    cdse_job_free(ctx->job);
    cdse_job_free(ctx->order);
}

static long pair_total(const meta_ctx *ctx)
{
    long n = 0;
    for (int rel = 0; rel < REL_DEFINITIONS; rel++)
        n += ctx->pairs[rel];
    return n;
}

/* ---- --emit-job ----------------------------------------------------------------------- */

/* A job for tests/sh/metamorphic_sweep.sh: kind sweep (store "all", 500 to 20,000
 * configurations), prune or exhaustive (the same job with objective.prune true or false, 20,000
 * to 400,000), with at least EMIT_FEASIBLE feasible configurations (a pruned sweep of a job
 * with none compares empty tables). Draws until a job reads and fits. */
static int emit_job(meta_ctx *ctx, const char *kind)
{
    bool sweep = strcmp(kind, "sweep") == 0, prune = strcmp(kind, "prune") == 0;
    if (!sweep && !prune && strcmp(kind, "exhaustive") != 0) {
        fprintf(stderr, "metamorphic: --emit-job %s: allowed: sweep, prune, exhaustive\n", kind);
        return 2;
    }
    uint64_t least = sweep ? 500 : 20000, limit = sweep ? 20000 : 400000;
    static meta_job gen;
    static char text[1 << 17];
    for (int attempt = 0; attempt < 1000; attempt++) {
        meta_job_generate(&ctx->rng, sweep ? META_SWEEP : META_PRUNE, prune, &gen);
        if (meta_job_render(&gen, NULL, text, sizeof text) < 0)
            continue;
        cdse_diag diag;
        if (cdse_job_load_text(text, JOB_PATH, ctx->job, &diag) != 0) {
            fprintf(stderr, "metamorphic: generated job refused: %s\n", diag.msg);
            continue;
        }
        uint64_t size = ctx->job->space.size, feasible = 0;
        for (uint64_t i = 0; size >= least && size <= limit && i < size; i++) {
            cdse_record rec;
            meta_record_eval(ctx->job, i, &rec);
            feasible += rec.result.status == CDSE_ST_OK;
        }
        cdse_job_free(ctx->job);
        if (size >= least && size <= limit && feasible >= EMIT_FEASIBLE) {
            fputs(text, stdout);
            return 0;
        }
    }
    fprintf(stderr, "metamorphic: no job of kind %s with %llu to %llu configurations\n", kind,
            (unsigned long long)least, (unsigned long long)limit);
    return 2;
}

/* ---- main ----------------------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: metamorphic [--pairs N] [--seed S] [--show N] [--lines] [--quiet] "
                    "[--known FILE]\n"
                    "       metamorphic --emit-job sweep|prune|exhaustive [--seed S]\n");
    return 2;
}

/* Reads the violations a run is known to find per relation (a file of "RELATION COUNT REASON"
 * lines, '#' comments; the default run needs none since issue 31), a ratchet like
 * tests/validation/known_gaps.txt: the run passes when each relation finds exactly the number
 * listed (0 when not listed), so that a new violation fails and a fixed one asks for the line to
 * be lowered. Returns 0, or -1 with a message naming file:line. */
static int read_known(const char *path, long known[REL_COUNT])
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "metamorphic: cannot read %s\n", path);
        return -1;
    }
    char line[1024];
    int number = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, in) != NULL) {
        number++;
        char name[64];
        long count;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        int rel = REL_COUNT;
        if (sscanf(line, "%63s %ld", name, &count) == 2)
            for (rel = 0; rel < REL_COUNT && strcmp(name, meta_relation_name[rel]) != 0; rel++)
                ;
        if (rel == REL_COUNT || count < 1) {
            fprintf(stderr,
                    "%s:%d: allowed: a relation name (compute_better ... definitions) and a "
                    "count >= 1, then the reason\n",
                    path, number);
            rc = -1;
        } else {
            known[rel] = count;
        }
    }
    fclose(in);
    return rc;
}

static void summary(const meta_ctx *ctx, unsigned long long seed, double seconds)
{
    printf("# metamorphic: seed %llu, %ld jobs generated (%ld refused), %.1f s\n", seed, ctx->jobs,
           ctx->rejected, seconds);
    printf("# %-20s %10s %10s\n", "relation", "pairs", "violations");
    for (int rel = 0; rel < REL_COUNT; rel++)
        printf("  %-20s %10ld %10ld%s\n", meta_relation_name[rel], ctx->pairs[rel],
               ctx->violations[rel], rel == REL_DEFINITIONS ? "   (rows)" : "");
    printf("  %-20s %10ld\n", "pairs in all", pair_total(ctx));
}

int main(int argc, char **argv)
{
    long target = DEFAULT_PAIRS;
    unsigned long long seed = DEFAULT_SEED;
    const char *emit = NULL, *known_path = NULL;
    static meta_ctx ctx;
    ctx.show = PRINTED_PER_REL;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc)
            target = strtol(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--emit-job") == 0 && i + 1 < argc)
            emit = argv[++i];
        else if (strcmp(argv[i], "--quiet") == 0)
            ctx.quiet = true;
        else if (strcmp(argv[i], "--show") == 0 && i + 1 < argc)
            ctx.show = strtol(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--lines") == 0)
            ctx.show_lines = true;
        else if (strcmp(argv[i], "--known") == 0 && i + 1 < argc)
            known_path = argv[++i];
        else
            return usage();
        if (end != NULL && (*end != '\0' || end == argv[i]))
            return usage(); /* a number that is not one */
    }
    if (target < 1)
        return usage();
    if (meta_zoo_load(CDSE_SOURCE_DIR) != 0)
        return 2;
    ctx.rng.state = seed;
    cdse_job **jobs[] = {&ctx.job, &ctx.alt, &ctx.dup, &ctx.order, &ctx.pair, &ctx.check};
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++)
        if ((*jobs[j] = calloc(1, sizeof(cdse_job))) == NULL)
            return 2;
    if (emit != NULL)
        return emit_job(&ctx, emit);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (pair_total(&ctx) < target && ctx.jobs < 100 + target)
        one_job(&ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    summary(&ctx, seed, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    long known[REL_COUNT] = {0};
    if (known_path != NULL && read_known(known_path, known) != 0)
        return 2;
    long violations = 0;
    for (int rel = 0; rel < REL_COUNT; rel++) {
        if (ctx.violations[rel] == known[rel])
            continue;
        violations++;
        if (known_path != NULL)
            printf("metamorphic: %s: %ld violations, %s lists %ld (%s)\n", meta_relation_name[rel],
                   ctx.violations[rel], known_path, known[rel],
                   ctx.violations[rel] > known[rel]
                       ? "a new violation: see the pairs above"
                       : "fewer: lower the number there, or remove the line at 0");
    }
    /* A generator that writes refused jobs tests less than it says. */
    bool refused = ctx.rejected * 20 > ctx.jobs;
    if (refused)
        printf("metamorphic: more than 5%% of the generated jobs were refused\n");
    if (pair_total(&ctx) < target)
        printf("metamorphic: only %ld pairs, %ld asked for\n", pair_total(&ctx), target);
    return violations > 0 || refused || pair_total(&ctx) < target ? 1 : 0;
}
