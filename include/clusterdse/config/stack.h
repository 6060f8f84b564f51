/* Software-stack profiles: calibration/stacks/NAME.cfg -> cdse_stack. */
#ifndef CLUSTERDSE_CONFIG_STACK_H
#define CLUSTERDSE_CONFIG_STACK_H

#include <stdio.h>

#include "clusterdse/model/stack.h"

/* Reads a stack profile. Every key is required (a profile says what its framework does, with
 * its source beside each value); a missing, unknown or out-of-range key is CDSE_EINVAL with a
 * message naming file:line, the key and what is allowed; an unreadable file is CDSE_EIO. */
int cdse_stack_load_file(const char *path, cdse_stack *stack, cdse_diag *diag);

/* Lists the keys of a stack profile with their allowed values (docs, --help). */
void cdse_stack_print_keys(FILE *out);

#endif
