/* Data files: the search for models, system profiles and probe plans by name in the data
 * directories (the job's directory and its parents, $CLUSTERDSE_DATA, the source tree, the
 * installed share/), and loading a profile named by a setting. */
#define _XOPEN_SOURCE 700 /* realpath */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/config/datadir.h"
#include "keys.h"

#ifndef CDSE_SOURCE_DIR
#define CDSE_SOURCE_DIR "."
#endif

/* Profiles may start from another profile (`base`); this bounds the chain (and stops cycles). */
#define MAX_PROFILE_DEPTH 4

static void dir_of(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash == NULL)
        snprintf(out, size, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
}

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Calls visit(dir) on each data directory in search order until it returns true. */
static bool each_data_dir(const char *job_path, bool (*visit)(const char *dir, void *arg),
                          void *arg)
{
    const char *env = getenv("CLUSTERDSE_DATA");
    if (env != NULL && env[0] != '\0') {
        char list[CDSE_PATH_MAX];
        snprintf(list, sizeof list, "%s", env);
        char *save = NULL;
        for (char *dir = strtok_r(list, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save))
            if (visit(dir, arg))
                return true;
    }
    if (job_path != NULL && job_path[0] != '<') {
        char given[CDSE_PATH_MAX], dir[PATH_MAX], up[PATH_MAX];
        dir_of(job_path, given, sizeof given);
        if (realpath(given, dir) == NULL) {
            if (visit(given, arg))
                return true;
        } else {
            /* The job file's directory and its parents, up to the root. */
            for (int depth = 0; depth < 64; depth++) {
                if (visit(dir, arg))
                    return true;
                if (strcmp(dir, "/") == 0)
                    break;
                dir_of(dir, up, sizeof up);
                memcpy(dir, up, sizeof dir);
            }
        }
    } else if (visit(".", arg)) {
        return true; /* the embedded job: the working directory */
    }
    if (visit(CDSE_SOURCE_DIR, arg))
        return true;
    char installed[PATH_MAX];
    return cdse_installed_data_dir(installed, sizeof installed) == 0 && visit(installed, arg);
}

typedef struct find_arg {
    const char *subdir;
    const char *name;
    char *out;
    size_t size;
} find_arg;

static bool visit_find(const char *dir, void *arg)
{
    find_arg *find = arg;
    int n;
    if (find->subdir[0] != '\0')
        n = snprintf(find->out, find->size, "%s/%s/%s.cfg", dir, find->subdir, find->name);
    else
        n = snprintf(find->out, find->size, "%s/%s", dir, find->name);
    /* A path longer than the buffer would name another file: not found here. */
    return n >= 0 && (size_t)n < find->size && readable(find->out);
}

int cdse_job_find_data(const char *subdir, const char *name, const char *job_path, char *out,
                       size_t out_size)
{
    find_arg find = {subdir, name, out, out_size};
    if (each_data_dir(job_path, visit_find, &find))
        return CDSE_OK;
    out[0] = '\0';
    return CDSE_EIO;
}

/* A name with a '/' or ending in ".cfg" is a path: relative to the job file's directory, then
 * to the data directories. */
static bool is_path(const char *name)
{
    size_t len = strlen(name);
    return strchr(name, '/') != NULL || (len > 4 && strcmp(name + len - 4, ".cfg") == 0);
}

int cdse__resolve_file(const char *subdir, const char *name, const char *job_path, char *out,
                       size_t size)
{
    if (!is_path(name))
        return cdse_job_find_data(subdir, name, job_path, out, size);
    if (name[0] == '/') {
        snprintf(out, size, "%s", name);
        return readable(out) ? CDSE_OK : CDSE_EIO;
    }
    if (job_path != NULL && job_path[0] != '<') { /* the job file's own directory first */
        char dir[CDSE_PATH_MAX];
        dir_of(job_path, dir, sizeof dir);
        int len = snprintf(out, size, "%s/%s", dir, name);
        if (len > 0 && (size_t)len < size && readable(out))
            return CDSE_OK;
    }
    return cdse_job_find_data("", name, job_path, out, size);
}

typedef struct list_arg {
    const char *subdir;
    char *buf;
    size_t size;
} list_arg;

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the NAME.cfg files of the first data directory that has SUBDIR. */
static bool visit_list(const char *dir, void *arg)
{
    list_arg *list = arg;
    char path[CDSE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, list->subdir);
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    char *names[128];
    int n = 0;
    for (struct dirent *e = readdir(d); e != NULL && n < 128; e = readdir(d)) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".cfg") == 0) {
            names[n] = strdup(e->d_name);
            if (names[n] != NULL)
                names[n++][len - 4] = '\0';
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], compare_names);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        if (len < list->size)
            len += (size_t)snprintf(list->buf + len, list->size - len, "%s%s", i ? ", " : "",
                                    names[i]);
        free(names[i]);
    }
    return n > 0;
}

void cdse__list_names(const char *subdir, const char *job_path, char *buf, size_t size)
{
    list_arg list = {subdir, buf, size};
    buf[0] = '\0';
    if (!each_data_dir(job_path, visit_list, &list))
        snprintf(buf, size, "(none found)");
}

/* Loads the file NAME (a zoo name or a path) found for the setting `name_setting`. */
int cdse__load_profile_named(parse_ctx *ctx, const config_setting_t *name_setting,
                             const char *subdir, const char *what, profile_parse_fn parse,
                             void *target, bool fresh)
{
    const char *name = config_setting_get_string(name_setting);
    char path[CDSE_PATH_MAX];
    if (ctx->depth >= MAX_PROFILE_DEPTH)
        return cdse__key_fail(ctx, name_setting, NULL, name_setting,
                              "profiles nested at most 4 deep",
                              "%s '%s' nests too deep (a cycle of base profiles?)", what, name);
    if (name[0] == '\0' ||
        cdse__resolve_file(subdir, name, ctx->job_path, path, sizeof path) != 0) {
        char names[1200], allowed[1400], installed[PATH_MAX];
        if (cdse_installed_data_dir(installed, sizeof installed) != 0)
            snprintf(installed, sizeof installed, "BINDIR/../share/clusterdse");
        if (subdir[0] != '\0') {
            cdse__list_names(subdir, ctx->job_path, names, sizeof names);
            snprintf(allowed, sizeof allowed,
                     "a name from %s/ (%s), a path to a .cfg file, or an inline group", subdir,
                     names);
        } else {
            snprintf(allowed, sizeof allowed,
                     "a readable file: an absolute path, or a path relative to the job file's "
                     "directory, its parents, or a data directory");
        }
        return cdse__key_fail(
            ctx, name_setting, NULL, name_setting, allowed,
            "%s '%s' not found (searched $CLUSTERDSE_DATA, the job file's directory and "
            "its parents, %s, %s)",
            what, name, CDSE_SOURCE_DIR, installed);
    }
    char *text, why[160];
    int nul_line;
    if (cdse__read_file(path, &text, why, sizeof why, &nul_line) != 0) {
        if (nul_line > 0)
            snprintf(why + strlen(why), sizeof why - strlen(why), " at line %d", nul_line);
        return cdse__key_fail(ctx, name_setting, NULL, name_setting,
                              "a readable regular file of at most 16 MiB without NUL bytes",
                              "cannot read %s (%s)", path, why);
    }
    parse_ctx inner = {
        .file = path, .job_path = ctx->job_path, .diag = ctx->diag, .depth = ctx->depth + 1};
    config_t cfg;
    int rc = cdse__read_config(&inner, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    rc = parse(&inner, config_root_setting(&cfg), target, fresh);
    config_destroy(&cfg);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The running binary's directory and the data directory installed next to it                 */

int cdse_exe_dir(char *buf, size_t size)
{
    if (size < 2)
        return -1;
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL)
        return -1;
    if (slash == buf)
        slash[1] = '\0';
    else
        *slash = '\0';
    return 0;
}

int cdse_installed_data_dir(char *buf, size_t size)
{
    char exe[4096];
    if (cdse_exe_dir(exe, sizeof exe) != 0)
        return -1;
    int n = snprintf(buf, size, "%s/../share/clusterdse", exe);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}
