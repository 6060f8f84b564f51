/* Where the program's files are, found from the running binary (not fixed at configure time),
 * so that an installed prefix still finds its data after it is moved. */
#ifndef CLUSTERDSE_CONFIG_DATADIR_H
#define CLUSTERDSE_CONFIG_DATADIR_H

#include <stddef.h>

/* The directory of the running executable (from /proc/self/exe) into buf; 0, or -1 when it
 * cannot be read or does not fit. */
int cdse_exe_dir(char *buf, size_t size);

/* The installed data directory, EXE_DIR/../share/clusterdse, into buf; 0, or -1 as above. */
int cdse_installed_data_dir(char *buf, size_t size);

#endif
