/* The running binary's directory and the data directory installed next to it. */
#define _POSIX_C_SOURCE 200809L
#include "clusterdse/config/datadir.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
