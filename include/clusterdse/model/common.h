/* Shared definitions: status codes, diagnostics, data types and size limits. */
#ifndef CLUSTERDSE_COMMON_H
#define CLUSTERDSE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CDSE_NAME_MAX 48 /* model, system and level names, including the NUL */
#define CDSE_PATH_MAX 1024

/* Library return codes: 0 success, negative failure. Exit codes are decided in main.c only. */
enum cdse_error_code {
    CDSE_OK = 0,
    CDSE_EINVAL = -1,    /* bad input: the diagnostic names file:line, key and what is allowed */
    CDSE_EIO = -2,       /* a file could not be read or written */
    CDSE_ENOMEM = -3,    /* allocation failed */
    CDSE_EMPI = -4,      /* an MPI call failed */
    CDSE_EINTR = -5,     /* interrupted by a signal; the store is resumable */
    CDSE_EEXIST = -6,    /* output exists and neither --force nor --resume was given */
    CDSE_EMISMATCH = -7, /* --resume with a store made by a different job */
    CDSE_EBUSY = -8,     /* another process holds the output's lock (a sweep writing a store) */
};

const char *cdse_strerror(int code);

/* A diagnostic message filled by the function that failed. */
typedef struct cdse_diag {
    char msg[1024];
} cdse_diag;

void cdse_diag_set(cdse_diag *diag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum cdse_dtype {
    CDSE_FP32 = 0,
    CDSE_TF32,
    CDSE_BF16,
    CDSE_FP16,
    CDSE_FP8,
    CDSE_DTYPE_COUNT
} cdse_dtype;

/* "fp32", "tf32", "bf16", "fp16", "fp8"; returns -1 for an unknown name. */
const char *cdse_dtype_name(int dtype);
int cdse_dtype_parse(const char *name);

#define CDSE_GIB (1024.0 * 1024.0 * 1024.0)

#endif
