/* The subcommands; each returns the process exit code (0 done, 1 bad input, 2 runtime failure,
 * 3 interrupted but resumable). main.c dispatches to them. */
#ifndef CLUSTERDSE_COMMANDS_H
#define CLUSTERDSE_COMMANDS_H

int cdse_cmd_eval(int argc, char **argv);
int cdse_cmd_sweep(int argc, char **argv);
int cdse_cmd_top(int argc, char **argv);
int cdse_cmd_export(int argc, char **argv);
int cdse_cmd_compare(int argc, char **argv);
int cdse_cmd_probe(int argc, char **argv);
int cdse_cmd_fit(int argc, char **argv);
int cdse_cmd_verify(int argc, char **argv);
int cdse_cmd_bench(int argc, char **argv);
int cdse_cmd_report(int argc, char **argv);

#include <stdio.h>
/* Prints the metrics --by and objective.metric accept, with their direction (help_metrics.c). */
void cdse_cli_print_metrics(FILE *out);

#endif
