/* Checks (and with `create` makes) the directory of an output file. */
#define _POSIX_C_SOURCE 200809L
#include "output_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p: every missing level of `dir`. 0, or -1 with errno set. */
static int make_dirs(char *dir)
{
    for (char *p = dir + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(dir, 0777);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(dir, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

int cdse_output_path_check(const char *option, const char *path, char *err, size_t err_size)
{
    size_t n = strlen(path);
    if (n <= CDSE_OUTPUT_PATH_LIMIT)
        return 0;
    /* The path's start and end: enough to recognise it without printing a kilobyte. */
    snprintf(err, err_size, "%s %.40s...%s: the path has %zu bytes; allowed: at most %d", option,
             path, path + n - 40, n, CDSE_OUTPUT_PATH_LIMIT);
    return -1;
}

int cdse_output_dir_check(const char *path, bool create, char *err, size_t err_size)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "%s is a directory; allowed: a file name", path);
        return -1;
    }
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof dir, "%s", path);
    if (n < 0 || (size_t)n >= sizeof dir) {
        snprintf(err, err_size, "%.200s...: path too long", path);
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0 && (!create || make_dirs(dir) != 0)) {
        snprintf(err, err_size, "cannot %s directory %s of %s: %s",
                 create ? "create the" : "use the", dir, path, strerror(errno));
        return -1;
    }
    /* Writable? Create a file there (access() says yes to root even on read-only mounts). */
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/.clusterdse-%ld.tmp", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, err_size, "cannot write in directory %s (for %s): %s", dir, path,
                 strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}
