/* A command's output file (export -o) that appears whole or not at all: rows go to a temporary
 * file in the output's directory, which is renamed over the output only when everything was
 * written; on a failure, and on SIGINT, SIGTERM or SIGHUP, the temporary is removed and an
 * existing output stays as it was. One output file at a time per process. */
#ifndef CLUSTERDSE_CLI_OUTPUT_FILE_H
#define CLUSTERDSE_CLI_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Room for a path realpath() returns (PATH_MAX, 4096 on Linux: checked in output_file.c). */
#define CDSE_OUTPUT_PATH_MAX 4096

typedef struct cdse_output_file {
    FILE *stream;                    /* where to write */
    char path[CDSE_OUTPUT_PATH_MAX]; /* the output, symbolic links resolved */
    char temp[CDSE_OUTPUT_PATH_MAX]; /* the temporary file; "" when writing to `path` itself (a
                                        device) */
} cdse_output_file;

/* Checks that `path` may receive a command's text output read from the file `input`: not a
 * directory, not `input` itself (after symbolic and hard links), not an HDF5 file, and not an
 * existing regular file unless `force`; a new file's directory must exist and be writable.
 * 0, or -1 with the reason (and what is allowed) in err: bad input. */
int cdse_output_file_check(const char *path, const char *input, bool force, char *err,
                           size_t err_size);

/* Opens the temporary file for `path` (or `path` itself when it is a device or a FIFO). 0, or -1
 * with the reason in err. */
int cdse_output_file_open(cdse_output_file *f, const char *path, char *err, size_t err_size);

/* Flushes and closes the stream and renames the temporary over the output. 0, or -1 with the
 * reason in err (the temporary is then removed). */
int cdse_output_file_commit(cdse_output_file *f, char *err, size_t err_size);

/* Closes the stream and removes the temporary: the output stays as it was. */
void cdse_output_file_discard(cdse_output_file *f);

#endif
