#include "clusterdse/model/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *cdse_strerror(int code)
{
    switch (code) {
    case CDSE_OK:
        return "success";
    case CDSE_EINVAL:
        return "invalid input";
    case CDSE_EIO:
        return "input/output error";
    case CDSE_ENOMEM:
        return "out of memory";
    case CDSE_EMPI:
        return "MPI error";
    case CDSE_EINTR:
        return "interrupted (resumable)";
    case CDSE_EEXIST:
        return "output exists";
    case CDSE_EMISMATCH:
        return "store belongs to another job";
    case CDSE_EBUSY:
        return "output locked by another process";
    default:
        return "unknown error";
    }
}

void cdse_diag_set(cdse_diag *diag, const char *fmt, ...)
{
    if (diag == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag->msg, sizeof diag->msg, fmt, ap);
    va_end(ap);
}

static const char *const dtype_names[CDSE_DTYPE_COUNT] = {"fp32", "tf32", "bf16", "fp16", "fp8"};

const char *cdse_dtype_name(int dtype)
{
    if (dtype < 0 || dtype >= CDSE_DTYPE_COUNT)
        return "?";
    return dtype_names[dtype];
}

int cdse_dtype_parse(const char *name)
{
    for (int i = 0; i < CDSE_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_names[i]) == 0)
            return i;
    return -1;
}
