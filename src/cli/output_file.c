/* An output file written whole or not at all (output_file.h). */
#define _DEFAULT_SOURCE /* realpath, mkstemp, fchmod, fsync */
#include "output_file.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clusterdse/sweep/store.h"

#include "output_dir.h"
#include "store_guard.h"

_Static_assert(PATH_MAX <= CDSE_OUTPUT_PATH_MAX, "realpath() may fill PATH_MAX bytes");

int cdse_output_file_check(const char *path, const char *input, bool force, char *err,
                           size_t err_size)
{
    struct stat out, in;
    if (stat(path, &out) != 0) {
        if (errno == ENOENT)
            return cdse_output_dir_check(path, false, err, err_size);
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(out.st_mode)) {
        snprintf(err, err_size, "%s is a directory; allowed: a file name", path);
        return -1;
    }
    if (input != NULL && stat(input, &in) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino) {
        if (strcmp(path, input) == 0)
            snprintf(err, err_size, "%s is the store being read; allowed: another file", path);
        else
            snprintf(err, err_size,
                     "%s is the same file as %s, the store being read; allowed: another file", path,
                     input);
        return -1;
    }
    if (!S_ISREG(out.st_mode))
        return 0; /* a device or a FIFO: written as it is */
    if (cdse_store_has_hdf5_signature(path)) {
        snprintf(err, err_size,
                 "%s is an HDF5 file (a store?), not overwritten even with --force; allowed: a "
                 "CSV file name",
                 path);
        return -1;
    }
    if (!force) {
        snprintf(err, err_size, "%s exists; use --force to overwrite it", path);
        return -1;
    }
    return 0;
}

/* ---- the temporary file's removal on a stop signal ------------------------------------------ */

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_STOP ((int)(sizeof stop_signals / sizeof stop_signals[0]))

static char
    pending[CDSE_OUTPUT_PATH_MAX]; /* the temporary file a stop signal removes; "" when none */
static struct sigaction saved_stop[N_STOP], saved_xfsz;

/* Async-signal-safe: unlink(2), sigaction(2) and raise(3) only. */
static void on_stop(int sig)
{
    if (pending[0] != '\0')
        unlink(pending);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered when the handler returns: the default action, the usual status */
}

static void block_stop_signals(int how)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < N_STOP; i++)
        sigaddset(&set, stop_signals[i]);
    pthread_sigmask(how, &set, NULL);
}

/* Stop signals remove the temporary (a signal ignored at start stays ignored, as under nohup);
 * SIGXFSZ is ignored, so that a file-size limit fails the write (EFBIG) instead of killing the
 * process with the temporary left behind. */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_STOP; i++) {
        sigaction(stop_signals[i], NULL, &saved_stop[i]);
        if (saved_stop[i].sa_handler != SIG_IGN)
            sigaction(stop_signals[i], &sa, NULL);
    }
    sa.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &sa, &saved_xfsz);
}

static void restore_handlers(void)
{
    for (int i = 0; i < N_STOP; i++)
        sigaction(stop_signals[i], &saved_stop[i], NULL);
    sigaction(SIGXFSZ, &saved_xfsz, NULL);
}

/* ---- open, commit, discard ----------------------------------------------------------------- */

/* A device or a FIFO (`-o /dev/null`): no temporary, nothing to rename. */
static int open_direct(cdse_output_file *f, const char *path, char *err, size_t err_size)
{
    snprintf(f->path, sizeof f->path, "%s", path);
    f->stream = fopen(path, "w");
    if (f->stream == NULL) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    install_handlers();
    return 0;
}

int cdse_output_file_open(cdse_output_file *f, const char *path, char *err, size_t err_size)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return open_direct(f, path, err, err_size);
    /* Through a symbolic link, the file it points to is replaced (the link stays). */
    if (!exists || realpath(path, f->path) == NULL)
        snprintf(f->path, sizeof f->path, "%s", path);
    const char *slash = strrchr(f->path, '/');
    int dir_len = slash != NULL ? (int)(slash - f->path) + 1 : 0;
    int n =
        snprintf(f->temp, sizeof f->temp, "%.*s.%s.XXXXXX", dir_len, f->path, f->path + dir_len);
    if (n < 0 || (size_t)n >= sizeof f->temp) {
        snprintf(err, err_size, "%.200s...: path too long", path);
        f->temp[0] = '\0';
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    install_handlers();
    block_stop_signals(SIG_BLOCK); /* a stop signal sees the temporary's whole name */
    int fd = mkstemp(f->temp);
    if (fd >= 0) {
        memcpy(pending, f->temp, sizeof pending);
        cdse_cli_store_guard_removes(pending); /* a store read that crashes or hangs, too */
    }
    block_stop_signals(SIG_UNBLOCK);
    if (fd < 0) {
        snprintf(err, err_size, "cannot write in the directory of %s: %s", path, strerror(errno));
        f->temp[0] = '\0';
        restore_handlers();
        return -1;
    }
    /* The mode of the file replaced, or of a new file (mkstemp's is 0600). */
    fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~mask);
    f->stream = fdopen(fd, "w");
    if (f->stream == NULL) {
        snprintf(err, err_size, "%s: %s", f->temp, strerror(errno));
        close(fd);
        cdse_output_file_discard(f);
        return -1;
    }
    return 0;
}

int cdse_output_file_commit(cdse_output_file *f, char *err, size_t err_size)
{
    errno = 0;
    bool failed = fflush(f->stream) != 0 || ferror(f->stream);
    if (!failed && f->temp[0] != '\0')
        failed = fsync(fileno(f->stream)) != 0; /* on disk before it replaces anything */
    int saved = errno;
    failed |= fclose(f->stream) != 0;
    f->stream = NULL;
    if (saved == 0)
        saved = errno;
    if (!failed && f->temp[0] != '\0')
        failed = rename(f->temp, f->path) != 0;
    if (failed) {
        snprintf(err, err_size, "writing %s: %s", f->path,
                 saved   ? strerror(saved)
                 : errno ? strerror(errno)
                         : "a write failed");
        cdse_output_file_discard(f);
        return -1;
    }
    pending[0] = '\0';
    f->temp[0] = '\0';
    restore_handlers();
    return 0;
}

void cdse_output_file_discard(cdse_output_file *f)
{
    if (f->stream != NULL)
        fclose(f->stream);
    f->stream = NULL;
    if (f->temp[0] != '\0')
        unlink(f->temp);
    pending[0] = '\0';
    f->temp[0] = '\0';
    restore_handlers();
}
