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

/* memset(p, 0, size) through the C library: the hot path's per-configuration zeroing of a few
 * hundred bytes. A memset of a size known where it is written is inlined by GCC as `rep stos`,
 * whose start-up and blocked store forwarding (the next loads from the zeroed bytes wait for it)
 * cost more than the library's vector stores: here the size is an argument of a function of
 * another file. */
void cdse_zero(void *p, size_t size);

typedef enum cdse_dtype {
    CDSE_FP32 = 0,
    CDSE_TF32,
    CDSE_BF16,
    CDSE_FP16,
    CDSE_FP8,
    CDSE_DTYPE_COUNT
} cdse_dtype;

/* The names of an enumeration's codes 0 .. n-1: one table per enumeration (recompute,
 * precision, offload, placement, status, ...), which the job parser, the columns, the store's
 * HDF5 enumeration types, --where and the dry run all read. */
typedef struct cdse_names {
    const char *const *name; /* code -> name; name[n] is NULL */
    int n;
    /* How a message lists the values when the names are too many to list (NULL: the names). */
    const char *values_text;
} cdse_names;

/* The name of `code`, "?" when out of range. */
const char *cdse_names_name(const cdse_names *names, int code);
/* The code of `name`, or -1. */
int cdse_names_find(const cdse_names *names, const char *name);

/* "fp32", "tf32", "bf16", "fp16", "fp8", NULL. */
extern const char *const cdse_dtype_names[CDSE_DTYPE_COUNT + 1];
extern const cdse_names cdse_dtype_enum;
/* cdse_dtype_names' entry, "?" out of range; returns -1 for an unknown name. */
const char *cdse_dtype_name(int dtype);
int cdse_dtype_parse(const char *name);

#define CDSE_GIB (1024.0 * 1024.0 * 1024.0)

#endif
