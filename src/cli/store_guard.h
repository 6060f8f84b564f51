/* The command line's guard around store reads (store_guard.c). */
#ifndef CLUSTERDSE_STORE_GUARD_H
#define CLUSTERDSE_STORE_GUARD_H

/* Longest a single read of a store may take before it counts as a hang inside HDF5 (a read is
 * one open, or one call that reads a table or part of one: milliseconds on a healthy store). */
#define CDSE_STORE_READ_SECONDS      10
#define CDSE_STORE_READ_SECONDS_TEXT "10"

/* Installs the guard for the rest of the process; `prog` starts its messages
 * ("clusterdse top"), which end with how a damaged sweep store is recovered. */
void cdse_cli_store_guard(const char *prog);
/* The same for another kind of file (a probe store), whose messages end with `hint` (a string
 * literal: what the user can do about the damage). */
void cdse_cli_file_guard(const char *prog, const char *hint);

/* The first check of a store given on the command line, for commands that do not open it
 * through cdse_store_open (which makes it too): a path that is missing or not a regular file
 * (a FIFO would block HDF5's open forever) gets one line `PROG: ...` on stderr. Returns the
 * exit code: 0 (go on), 1 (bad input) or 2 (stat failed otherwise). */
int cdse_cli_store_path(const char *prog, const char *path);

/* A file the guard removes when it ends the process (the temporary of an output being written,
 * cdse_output_file_open): `path` is a buffer that lives as long as the process and holds the
 * name, or "" when there is none to remove. NULL: none. */
void cdse_cli_store_guard_removes(const char *path);

#endif
