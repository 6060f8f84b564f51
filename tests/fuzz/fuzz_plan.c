/* libFuzzer harness: probe plans (cdse_plan_load_text), each input for worlds of 1, 4 and 16
 * ranks (shapes are validated against the world size). See docs/fuzzing.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/calibrate/probe.h"

#define FUZZ_PLAN_PATH CDSE_SOURCE_DIR "/tests/fuzz/fuzz_plan.cfg"
#define FUZZ_MAX_INPUT 65536

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
    cdse_probe_plan *plan = malloc(sizeof *plan);
    const int worlds[] = {1, 4, 16};
    for (int w = 0; plan != NULL && w < 3; w++) {
        cdse_diag diag = {""};
        memset(plan, 0, sizeof *plan);
        cdse_plan_load_text(text, FUZZ_PLAN_PATH, worlds[w], plan, &diag);
    }
    free(plan);
    free(text);
    return 0;
}
