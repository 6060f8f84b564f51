/* The commands' options: one table per command, one row per option (name, short name, argument,
 * help, what it fills), read by one parser (getopt_long underneath) and by the --help printer,
 * so that what a command accepts and what its --help lists cannot drift apart. */
#ifndef CLUSTERDSE_CLI_OPTIONS_H
#define CLUSTERDSE_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What an option does with its value. */
typedef enum cdse_cli_kind {
    CDSE_CLI_FLAG,     /* sets the bool at `offset` */
    CDSE_CLI_STRING,   /* keeps the value (a const char * at `offset`) */
    CDSE_CLI_INT,      /* a whole number from `min` to `max` (a long at `offset`) */
    CDSE_CLI_REAL,     /* a number from `min` to `max` (a double at `offset`) */
    CDSE_CLI_POSITIVE, /* a number above 0, at most `max` (a double at `offset`) */
    CDSE_CLI_CALL,     /* `apply` does it */
    CDSE_CLI_HELP,     /* prints the command's --help on stdout: exit 0 */
} cdse_cli_kind;

/* `apply` of a CDSE_CLI_CALL row: 0 to go on; CDSE_CLI_DONE when it has done the command's whole
 * work (printed a reference: exit 0); -1 for a bad value, with the reason in err, or err left
 * empty for "OPTION VALUE: allowed: ALLOWED". */
#define CDSE_CLI_DONE 1
typedef int (*cdse_cli_apply)(void *args, const char *value, char *err, size_t size);

typedef struct cdse_cli_option {
    const char *name; /* "--where"; "-n" for an option that has only a short name */
    char short_name;  /* 'o' for -o beside --output; 0: none */
    const char *arg;  /* the value's name in --help ("EXPR"); NULL: the option takes none */
    const char *help; /* its --help text, lines split by '\n'; NULL: listed on the next
                         row's line (e.g. "--asc, --desc": flags joined by ", ", options
                         with a value by " ", as "--job JOB --system NAME") */
    cdse_cli_kind kind;
    size_t offset;        /* the field of the command's arguments it fills */
    double min, max;      /* bounds of CDSE_CLI_INT, CDSE_CLI_REAL, CDSE_CLI_POSITIVE */
    const char *allowed;  /* what a bad value is told is allowed */
    cdse_cli_apply apply; /* CDSE_CLI_CALL */
} cdse_cli_option;

typedef struct cdse_cli_command {
    const char *name; /* "top": messages begin "clusterdse top: " */
    const cdse_cli_option *options;
    int n_options;
    int help_width; /* width of the option column of --help */
    /* An argument that is not an option, in the order given: 0, or -1 with the reason in err. */
    int (*positional)(void *args, const char *arg, char *err, size_t size);
    void (*usage)(FILE *out); /* the whole --help, which calls cdse_cli_print_options */
} cdse_cli_command;

/* Parses argv[1..argc-1] into `args` with the command's table. Returns -1 to go on, else the
 * exit code: 0 after --help (printed) or an option that did the work, 1 for bad input after one
 * message on stderr ("clusterdse CMD: unknown option '--x'; allowed: ...", "option '-n' needs
 * a value (N)", "-n 0: allowed: ..."). Long options are taken whole (no abbreviation), also as
 * --name=VALUE; "--" ends the options. */
int cdse_cli_parse(const cdse_cli_command *cmd, int argc, char **argv, void *args);

/* The same, silent when `quiet` (no message, no --help): the ranks other than 0 of an MPI
 * command parse the same arguments to the same result and let rank 0 speak. */
int cdse_cli_parse_quiet(const cdse_cli_command *cmd, int argc, char **argv, void *args,
                         bool quiet);

/* Prints the option list of --help from the table: "  LABEL  HELP" per row, LABEL
 * "-s, --name ARG" padded to help_width (HELP on the next line when LABEL is longer). */
void cdse_cli_print_options(const cdse_cli_command *cmd, FILE *out);

#define CDSE_CLI_COUNT(table) ((int)(sizeof(table) / sizeof((table)[0])))

#endif
