/* Fault injection for tests (CMake option CDSE_FAULT_INJECTION; the sanitizer build of
 * scripts/test.sh). CDSE_FAULT=NAME makes every pass through the point called NAME fail;
 * CDSE_FAULT=NAME@N only the N-th (1 = the first) since CDSE_FAULT took that value (a point
 * reached while CDSE_FAULT is unset starts the count over). Values of 64 characters or more are
 * ignored. Other builds compile every point to false. */
#ifndef CLUSTERDSE_SWEEP_FAULT_H
#define CLUSTERDSE_SWEEP_FAULT_H

#include <stdbool.h>

#ifdef CDSE_FAULT_INJECTION
bool cdse_fault(const char *name);
#else
#define cdse_fault(name) false
#endif

#endif
