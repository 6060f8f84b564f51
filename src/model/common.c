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

const char *cdse_names_name(const cdse_names *names, int code)
{
    return code >= 0 && code < names->n ? names->name[code] : "?";
}

int cdse_names_find(const cdse_names *names, const char *name)
{
    for (int i = 0; i < names->n; i++)
        if (strcmp(name, names->name[i]) == 0)
            return i;
    return -1;
}

const char *const cdse_dtype_names[CDSE_DTYPE_COUNT + 1] = {"fp32", "tf32", "bf16",
                                                            "fp16", "fp8",  NULL};
const cdse_names cdse_dtype_enum = {cdse_dtype_names, CDSE_DTYPE_COUNT, NULL};

const char *cdse_dtype_name(int dtype)
{
    return cdse_names_name(&cdse_dtype_enum, dtype);
}

int cdse_dtype_parse(const char *name)
{
    return cdse_names_find(&cdse_dtype_enum, name);
}

void cdse_zero(void *p, size_t size)
{
    memset(p, 0, size);
}
