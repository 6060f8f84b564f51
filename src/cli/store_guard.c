/* Turns a crash or a hang inside HDF5 while a store is read into a message and exit code 2.
 *
 * HDF5 1.10.8 dereferences damaged global-heap and datatype messages without checking them (fuzz
 * findings H1-H4: SIGSEGV in H5HG_read and H5T_conv_struct, an endless loop in the global heap),
 * so no check before a read can rule these out. While a read is under way (the store's read
 * guard, cdse_store_set_read_guard), SIGSEGV, SIGBUS, SIGFPE and SIGILL end the process with a
 * message naming the store, and an alarm bounds the read's time. Outside store reads the
 * default actions are back, so that a bug elsewhere still crashes visibly. */
#define _POSIX_C_SOURCE 200809L
#include "store_guard.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/sweep/store.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define N_FATAL ((int)(sizeof fatal_signals / sizeof fatal_signals[0]))

static char guard_prog[64];
static char guard_path[CDSE_PATH_MAX];
static const char *guard_hint; /* a string literal: what the user can do */
static volatile sig_atomic_t guard_active;
static const char *volatile guard_removes; /* cdse_cli_store_guard_removes */

static void say(const char *text)
{
    ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
    (void)ignored;
}

/* Async-signal-safe: write(2), unlink(2) and _exit(2) only. */
static void on_damage(int sig)
{
    if (!guard_active) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    const char *removes = guard_removes;
    if (removes != NULL && removes[0] != '\0')
        unlink(removes);
    say(guard_prog);
    say(": ");
    say(guard_path);
    say(sig == SIGALRM
            ? ": a damaged store: reading it took longer than " CDSE_STORE_READ_SECONDS_TEXT
              " s (HDF5 looped on it)"
            : ": a damaged store: HDF5 crashed reading it");
    say(". ");
    say(guard_hint);
    say("\n");
    _exit(2);
}

/* The actions in place before a read (the defaults, or a sanitizer's), restored after it. */
static struct sigaction saved[N_FATAL + 1];

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_damage;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &sa, &saved[i]);
    sigaction(SIGALRM, &sa, &saved[N_FATAL]);
}

static void restore(void)
{
    for (int i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &saved[i], NULL);
    sigaction(SIGALRM, &saved[N_FATAL], NULL);
}

static void begin(const char *path, void *ctx)
{
    (void)ctx;
    size_t n = strlen(path);
    if (n >= sizeof guard_path)
        n = sizeof guard_path - 1;
    memcpy(guard_path, path, n);
    guard_path[n] = '\0';
    install();
    guard_active = 1;
    alarm(CDSE_STORE_READ_SECONDS);
}

static void end(void *ctx)
{
    (void)ctx;
    alarm(0);
    guard_active = 0;
    restore();
}

void cdse_cli_store_guard(const char *prog)
{
    cdse_cli_file_guard(prog, "`clusterdse sweep JOB -o STORE --resume` recovers a store cut "
                              "short by a kill or a full disk (it drops what the last commit "
                              "did not cover); a store damaged anywhere else must be swept "
                              "again (--force)");
}

void cdse_cli_file_guard(const char *prog, const char *hint)
{
    guard_hint = hint;
    size_t n = strlen(prog);
    if (n >= sizeof guard_prog)
        n = sizeof guard_prog - 1;
    memcpy(guard_prog, prog, n);
    guard_prog[n] = '\0';
    cdse_store_read_guard guard = {begin, end, NULL};
    cdse_store_set_read_guard(&guard);
}

int cdse_cli_store_path(const char *prog, const char *path)
{
    cdse_diag diag = {""};
    int rc = cdse_store_check_path(path, &diag);
    if (rc != CDSE_OK)
        fprintf(stderr, "%s: %s\n", prog, diag.msg);
    return rc == CDSE_OK ? 0 : rc == CDSE_EINVAL ? 1 : 2;
}

void cdse_cli_store_guard_removes(const char *path)
{
    guard_removes = path;
}
