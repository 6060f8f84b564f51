/* Fault injection for tests: see include/clusterdse/sweep/fault.h. */
#include "clusterdse/sweep/fault.h"

#ifdef CDSE_FAULT_INJECTION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cdse_fault(const char *name)
{
    static unsigned long passes; /* through the point CDSE_FAULT names, since it was set so */
    static char counted[64];
    const char *f = getenv("CDSE_FAULT");
    if (f == NULL || strlen(f) >= sizeof counted) { /* unset (or too long): counting starts over */
        counted[0] = '\0';
        return false;
    }
    size_t len = strlen(name);
    if (strncmp(f, name, len) != 0 || (f[len] != '\0' && f[len] != '@'))
        return false;
    if (strcmp(counted, f) != 0) {
        snprintf(counted, sizeof counted, "%s", f);
        passes = 0;
    }
    passes++;
    return f[len] == '\0' || strtoul(f + len + 1, NULL, 10) == passes;
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int cdse_fault_unused;
#endif
