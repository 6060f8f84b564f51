/* The commands' option tables: parsing with getopt_long, errors in one shape, the --help list. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTIONS 32   /* rows of one command's table */
#define LONG_BASE   256  /* getopt_long's value of row r's long name: LONG_BASE + r */
#define ERR_SIZE    1024 /* one message */

/* A message on stderr, "clusterdse CMD: ...", when `speak`. */
static void say(bool speak, const cdse_cli_command *cmd, const char *fmt, ...)
{
    if (!speak)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "clusterdse %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The option's short letter: its short_name, or the letter of a name like "-n"; 0: none. */
static char short_letter(const cdse_cli_option *o)
{
    if (o->short_name)
        return o->short_name;
    return o->name[0] == '-' && o->name[1] != '-' ? o->name[1] : 0;
}

/* The option's long name without "--"; NULL for a short-only option like "-n". */
static const char *long_name(const cdse_cli_option *o)
{
    return strncmp(o->name, "--", 2) == 0 ? o->name + 2 : NULL;
}

/* The option as --help and the messages name it: "-o, --output", "-n", "--by". */
static int option_form(const cdse_cli_option *o, char *out, size_t size)
{
    if (o->short_name)
        return snprintf(out, size, "-%c, %s", o->short_name, o->name);
    return snprintf(out, size, "%s", o->name);
}

/* "-n, --by, --where, ...": every option of the table. */
static void allowed_options(const cdse_cli_command *cmd, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < cmd->n_options && used < size; r++) {
        used += (size_t)snprintf(out + used, size - used, "%s", r ? ", " : "");
        if (used < size)
            used += (size_t)option_form(&cmd->options[r], out + used, size - used);
    }
}

/* Builds getopt_long's tables from the command's rows. */
static void getopt_tables(const cdse_cli_command *cmd, char *shorts, struct option *longs)
{
    size_t s = 0, l = 0;
    shorts[s++] = '-'; /* arguments that are not options come back in order, as value 1 */
    shorts[s++] = ':'; /* a missing value comes back as ':' */
    for (int r = 0; r < cmd->n_options; r++) {
        const cdse_cli_option *o = &cmd->options[r];
        char letter = short_letter(o);
        if (letter) {
            shorts[s++] = letter;
            if (o->arg)
                shorts[s++] = ':';
        }
        if (long_name(o))
            longs[l++] = (struct option){long_name(o), o->arg ? required_argument : no_argument,
                                         NULL, LONG_BASE + r};
    }
    shorts[s] = '\0';
    longs[l] = (struct option){NULL, 0, NULL, 0};
}

/* The row of a short letter, or -1. */
static int row_of_letter(const cdse_cli_command *cmd, int letter)
{
    for (int r = 0; r < cmd->n_options; r++)
        if (short_letter(&cmd->options[r]) == letter)
            return r;
    return -1;
}

/* The option as the user spelled it: argv[at] up to '=' when it is a long option, else "-L". */
static void spelled(const char *word, int letter, char *out, size_t size)
{
    if (word != NULL && strncmp(word, "--", 2) == 0)
        snprintf(out, size, "%.*s", (int)strcspn(word, "="), word);
    else
        snprintf(out, size, "-%c", letter);
}

static int parse_number(const cdse_cli_option *o, const char *value, void *field)
{
    char *end = NULL;
    errno = 0;
    if (o->kind == CDSE_CLI_INT) {
        long v = strtol(value, &end, 10);
        if (end == value || *end != '\0' || errno == ERANGE || v < o->min || v > o->max)
            return -1;
        *(long *)field = v;
        return 0;
    }
    double v = strtod(value, &end);
    bool in_range =
        o->kind == CDSE_CLI_POSITIVE ? v > 0 && v <= o->max : v >= o->min && v <= o->max;
    if (end == value || *end != '\0' || !in_range) /* NaN is in no range */
        return -1;
    *(double *)field = v;
    return 0;
}

/* Applies row `o` with its value (NULL for a flag): -1 to go on, else the exit code. */
static int apply_option(const cdse_cli_command *cmd, const cdse_cli_option *o, const char *as,
                        const char *value, void *args, bool speak)
{
    char err[ERR_SIZE] = "";
    void *field = (char *)args + o->offset;
    int rc = 0;
    switch (o->kind) {
    case CDSE_CLI_FLAG:
        *(bool *)field = true;
        break;
    case CDSE_CLI_STRING:
        *(const char **)field = value;
        break;
    case CDSE_CLI_INT:
    case CDSE_CLI_REAL:
    case CDSE_CLI_POSITIVE:
        rc = parse_number(o, value, field);
        break;
    case CDSE_CLI_CALL:
        rc = o->apply(args, value, err, sizeof err);
        if (rc == CDSE_CLI_DONE)
            return 0;
        break;
    case CDSE_CLI_HELP:
        if (speak)
            cmd->usage(stdout);
        return 0;
    }
    if (rc == 0)
        return -1;
    if (err[0] != '\0')
        say(speak, cmd, "%s", err);
    else
        say(speak, cmd, "%s %s: allowed: %s", as, value, o->allowed);
    return 1;
}

static int positional(const cdse_cli_command *cmd, const char *arg, void *args, bool speak)
{
    char err[ERR_SIZE] = "";
    if (cmd->positional(args, arg, err, sizeof err) == 0)
        return -1;
    say(speak, cmd, "%s", err);
    return 1;
}

/* A message for getopt_long's '?' (unknown option, or a long name cut short) and ':' (missing
 * value); 1. */
static int option_error(const cdse_cli_command *cmd, int c, const char *as, int row, bool speak)
{
    if (c == ':') {
        say(speak, cmd, "option '%s' needs a value (%s)", as,
            row >= 0 ? cmd->options[row].arg : "one");
        return 1;
    }
    char allowed[ERR_SIZE];
    allowed_options(cmd, allowed, sizeof allowed);
    say(speak, cmd, "unknown option '%s'; allowed: %s", as, allowed);
    return 1;
}

int cdse_cli_parse(const cdse_cli_command *cmd, int argc, char **argv, void *args)
{
    return cdse_cli_parse_quiet(cmd, argc, argv, args, false);
}

int cdse_cli_parse_quiet(const cdse_cli_command *cmd, int argc, char **argv, void *args, bool quiet)
{
    bool speak = !quiet;
    char shorts[2 + 2 * MAX_OPTIONS + 1];
    struct option longs[MAX_OPTIONS + 1];
    if (cmd->n_options > MAX_OPTIONS)
        abort(); /* a table too long for the arrays above: a programming error */
    getopt_tables(cmd, shorts, longs);
    opterr = 0;
    optind = 0; /* glibc: start afresh (a command may be parsed more than once in a process) */
    for (;;) {
        int at = optind > 0 ? optind : 1; /* the argument getopt_long reads next */
        const char *word = at < argc ? argv[at] : NULL;
        int c = getopt_long(argc, argv, shorts, longs, NULL);
        if (c == -1)
            break;
        int rc = -1;
        char as[64];
        if (c == 1) {
            rc = positional(cmd, optarg, args, speak);
        } else if (c == '?' || c == ':') {
            int row = optopt >= LONG_BASE ? optopt - LONG_BASE : row_of_letter(cmd, optopt);
            spelled(word, optopt < LONG_BASE ? optopt : 0, as, sizeof as);
            rc = option_error(cmd, c, as, row, speak);
        } else {
            int row = c >= LONG_BASE ? c - LONG_BASE : row_of_letter(cmd, c);
            spelled(c >= LONG_BASE ? word : NULL, c, as, sizeof as);
            /* getopt_long takes a unique prefix of a long name; the table's names are whole. */
            if (c >= LONG_BASE && strcmp(as, cmd->options[row].name) != 0)
                rc = option_error(cmd, '?', as, row, speak);
            else
                rc = apply_option(cmd, &cmd->options[row], as, optarg, args, speak);
        }
        if (rc >= 0)
            return rc;
    }
    for (int i = optind; i < argc; i++) /* after "--" */
        if (positional(cmd, argv[i], args, speak) >= 0)
            return 1;
    return -1;
}

void cdse_cli_print_options(const cdse_cli_command *cmd, FILE *out)
{
    char label[256];
    size_t used = 0;
    for (int r = 0; r < cmd->n_options; r++) {
        const cdse_cli_option *o = &cmd->options[r];
        if (used > 0 && used < sizeof label) /* joined to the row before, which has no help */
            used += (size_t)snprintf(label + used, sizeof label - used, "%s",
                                     cmd->options[r - 1].arg ? " " : ", ");
        if (used < sizeof label)
            used += (size_t)option_form(o, label + used, sizeof label - used);
        if (o->arg && used < sizeof label)
            used += (size_t)snprintf(label + used, sizeof label - used, " %s", o->arg);
        if (o->help == NULL)
            continue;
        int indent = cmd->help_width + 3;
        if ((int)strlen(label) <= cmd->help_width)
            fprintf(out, "  %-*s ", cmd->help_width, label);
        else
            fprintf(out, "  %s\n%*s", label, indent, "");
        for (const char *line = o->help;;) {
            size_t len = strcspn(line, "\n");
            fprintf(out, "%.*s\n", (int)len, line);
            if (line[len] == '\0')
                break;
            line += len + 1;
            fprintf(out, "%*s", indent, "");
        }
        used = 0;
    }
}
