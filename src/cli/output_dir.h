/* Output paths of the commands: bad ones are bad input (exit 1), found before any work. */
#ifndef CLUSTERDSE_CLI_OUTPUT_DIR_H
#define CLUSTERDSE_CLI_OUTPUT_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Checks that a file can be created at `path`: it is not a directory, its directory exists
 * (created with its missing parents when `create`) and a file can be made in it. 0, or -1 with
 * the reason in err. */
int cdse_output_dir_check(const char *path, bool create, char *err, size_t err_size);

#endif
