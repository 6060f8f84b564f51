# bash completion for clusterdse: commands, each command's options (read from its --help, so
# they follow the program), the values of --by, --from and --columns, job files (*.cfg) and
# stores (*.h5) where a command takes them. tests/sh/completion.sh checks it against every
# command's --help and option parser.
# Installed as share/bash-completion/completions/clusterdse; or `source` this file.

# The options of a command: those that begin a line of its --help (the option list, e.g.
# "  -o, --output FILE  ..." or "  --job JOB --system NAME") and those in [brackets] of its
# usage lines (e.g. bench's "[-n COUNT] [--help]").
_clusterdse_options() {
    "$1" "$2" --help 2>/dev/null | awk '
        /^usage:/ { usage = 1 }
        usage && /^$/ { usage = 0 }
        usage {
            line = $0
            while (match(line, /\[[^]]*\]/)) {
                part = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
                n = split(part, w, /[][ |,]+/)
                for (i = 1; i <= n; i++) if (w[i] ~ /^--?[a-zA-Z][a-zA-Z0-9-]*$/) print w[i]
            }
            next
        }
        /^ +-/ {
            head = $0; sub(/^ +/, "", head); sub(/  .*/, "", head)
            n = split(head, w, /[ ,|]+/)
            for (i = 1; i <= n; i++) if (w[i] ~ /^--?[a-zA-Z][a-zA-Z0-9-]*$/) print w[i]
        }' | sort -u
}

_clusterdse_metrics="time_per_iteration tokens_per_s time_to_train gpu_hours mfu cost_to_train energy_to_train tokens_per_kwh"

_clusterdse_columns() {
    "$1" eval --help-columns 2>/dev/null | awk '!/^#/ { print $1 }'
}

_clusterdse() {
    local cur prev bin cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    bin=${COMP_WORDS[0]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$("$bin" --help 2>/dev/null | awk '/^  [a-z]+ / {print $1}') --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    case $prev in
        -o | --output)
            if [ "$cmd" = report ]; then
                COMPREPLY=($(compgen -d -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return ;;
        --by)
            local words=$_clusterdse_metrics
            [ "$cmd" = top ] && words="$words $(_clusterdse_columns "$bin")"
            COMPREPLY=($(compgen -W "$words" -- "$cur"))
            return ;;
        --from)
            COMPREPLY=($(compgen -W "results top pareto pareto_cost" -- "$cur"))
            return ;;
        --columns)  # a comma-separated list: complete its last name
            local done=${cur%"${cur##*,}"}
            COMPREPLY=($(compgen -P "$done" -W "$(_clusterdse_columns "$bin")" -- "${cur##*,}"))
            compopt -o nospace 2>/dev/null
            return ;;
        --time)
            [ "$cmd" = fit ] && COMPREPLY=($(compgen -W "median min" -- "$cur"))
            return ;;
        --job)
            COMPREPLY=($(compgen -d -S / -- "$cur") $(compgen -f -X '!*.cfg' -- "$cur"))
            return ;;
        -n | --top | --where | --chunk | --flush | --ranks | --system | --gpus | --name | --base | \
            --dtype | --min-bytes | --max-bytes | --time-budget)
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_clusterdse_options "$bin" "$cmd")" -- "$cur"))
        return
    fi
    local ext=cfg
    case $cmd in top | export | compare | report | verify | fit) ext=h5 ;; esac
    COMPREPLY=($(compgen -d -S / -- "$cur") $(compgen -f -X "!*.$ext" -- "$cur"))
}
complete -o nospace -o filenames -F _clusterdse clusterdse
