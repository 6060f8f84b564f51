/* libFuzzer harness: the job parser with validation, the effective-job round trip and the
 * evaluator on the parsed job.
 *
 * For every input that parses: the effective job (cdse_job_print) parses again to the same
 * fingerprint, and the first configurations of the space evaluate to finite, non-negative time,
 * memory and rates. Names of models and systems resolve in the source tree (the job's path is
 * tests/fuzz/fuzz.cfg there). See docs/fuzzing.md. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/config/job.h"
#include "clusterdse/sweep/report.h"

/* cdse_record_eval / cdse_record_system on the job's study (model/record.h). */
static void job_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_eval(&study, index, record);
}

#define FUZZ_JOB_PATH    CDSE_SOURCE_DIR "/tests/fuzz/fuzz.cfg"
#define FUZZ_MAX_INPUT   65536
#define FUZZ_EVALUATIONS 64

static void check_figures(const cdse_job *job)
{
    uint64_t n = job->space.size < FUZZ_EVALUATIONS ? job->space.size : FUZZ_EVALUATIONS;
    for (uint64_t i = 0; i < n; i++) {
        cdse_record r;
        job_record_eval(job, i, &r);
        const double figures[] = {
            r.result.time_per_iteration_s, r.result.tokens_per_s, r.result.mfu,
            r.result.mem_total_gib,        r.time_to_train_days,  r.gpu_hours};
        for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++)
            if (!(isfinite(figures[f]) && figures[f] >= 0.0)) {
                fprintf(stderr, "fuzz_job: index %llu: figure %zu = %g\n", (unsigned long long)i, f,
                        figures[f]);
                abort();
            }
    }
}

static void check_round_trip(const cdse_job *job)
{
    char *printed = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&printed, &len);
    if (out == NULL)
        return;
    cdse_job_print(out, job);
    fclose(out);
    cdse_job again;
    cdse_diag diag = {""};
    int rc = cdse_job_load_text(printed, FUZZ_JOB_PATH, &again, &diag);
    if (rc != 0 || again.fingerprint != job->fingerprint) {
        fprintf(stderr, "fuzz_job: the effective job %s:\n%s\n--- %s\n",
                rc != 0 ? "does not parse" : "has another fingerprint", printed, diag.msg);
        abort();
    }
    cdse_job_free(&again);
    free(printed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cdse_job job;
    cdse_diag diag = {""};
    if (cdse_job_load_text(text, FUZZ_JOB_PATH, &job, &diag) == 0) {
        check_figures(&job);
        if (getenv("CDSE_FUZZ_NO_ROUND_TRIP") == NULL)
            check_round_trip(&job);
    }
    cdse_job_free(&job);
    free(text);
    return 0;
}
