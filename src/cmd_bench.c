/* Placeholder until the command is implemented; replaced by its module's work. */
#include <stdio.h>

#include "commands.h"

int cdse_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "clusterdse bench: not implemented yet\n");
    return 2;
}
