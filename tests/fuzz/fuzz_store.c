/* libFuzzer harness: opening and reading a store (the input is the file): open, /progress,
 * /counts, /job, the rows of /top and the first rows of /results, as `top` and
 * `sweep --resume` read them. HDF5 1.10 itself crashes on some damaged files (global heap,
 * compound conversion; docs/fuzzing.md): run this harness with -fork=N -ignore_crashes=1 and
 * read the crash files' stacks, the command line turns those crashes into exit 2. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/sweep/store.h"

#define FUZZ_MAX_ROWS 4096

static void read_store(cdse_store *store)
{
    cdse_diag diag = {""};
    cdse_done *done = NULL;
    size_t n_done = 0;
    if (cdse_store_read_progress(store, &done, &n_done, &diag) == 0)
        free(done);
    cdse_counts counts;
    cdse_store_read_counts(store, &counts, &diag);
    char *text = NULL;
    if (cdse_store_job_text(store, &text, &diag) == 0)
        free(text);
    const char *const sets[] = {"top", "pareto", "results"};
    for (int s = 0; s < 3; s++) {
        uint64_t rows = 0;
        if (cdse_store_rows(store, sets[s], &rows, &diag) != 0)
            continue;
        size_t n = rows < FUZZ_MAX_ROWS ? (size_t)rows : FUZZ_MAX_ROWS;
        unsigned char *buf = malloc(n ? n * cdse_store_row_size() : 1);
        if (buf != NULL)
            cdse_store_read_rows(store, sets[s], 0, n, buf, &diag);
        free(buf);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (path[0] == '\0') {
        cdse_store_quiet_hdf5();
        snprintf(path, sizeof path, "/tmp/cdse_fuzz_store.%ld.h5", (long)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    cdse_store *store = NULL;
    cdse_diag diag = {""};
    if (cdse_store_open(path, false, &store, &diag) == 0) {
        read_store(store);
        cdse_store_close(store, &diag);
    }
    unlink(path);
    return 0;
}
