/* Output paths of the commands: bad ones are bad input (exit 1), found before any work. */
#ifndef CLUSTERDSE_CLI_OUTPUT_DIR_H
#define CLUSTERDSE_CLI_OUTPUT_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "clusterdse/model/common.h"

/* The longest output path a command takes, in bytes: a store keeps its path in CDSE_PATH_MAX
 * bytes with the NUL, and every command's -o has the same limit, so that no command writes under
 * a name cut short (issue 31, M7). */
#define CDSE_OUTPUT_PATH_LIMIT (CDSE_PATH_MAX - 1)

/* Refuses an output path longer than CDSE_OUTPUT_PATH_LIMIT: -1 with the option, the path's
 * length and the limit in err (bad input), else 0. */
int cdse_output_path_check(const char *option, const char *path, char *err, size_t err_size);

/* Checks that a file can be created at `path`: it is not a directory, its directory exists
 * (created with its missing parents when `create`) and a file can be made in it. 0, or -1 with
 * the reason in err. */
int cdse_output_dir_check(const char *path, bool create, char *err, size_t err_size);

#endif
