# bash completion for clusterdse: commands, each command's options (read from its --help, so
# they follow the program), job files (*.cfg) and stores (*.h5) where a command takes them.
# Installed as share/bash-completion/completions/clusterdse; or `source` this file.
_clusterdse_options() {
    "$1" "$2" --help 2>/dev/null | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' |
        sed 's/^[ ,]*//' | sort -u
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
        -n | --by | --where | --chunk | --flush | --ranks | --system | --gpus | --name | --base)
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_clusterdse_options "$bin" "$cmd")" -- "$cur"))
        return
    fi
    local ext=cfg
    case $cmd in top | report | verify | fit) ext=h5 ;; esac
    COMPREPLY=($(compgen -d -S / -- "$cur") $(compgen -f -X "!*.$ext" -- "$cur"))
}
complete -o nospace -o filenames -F _clusterdse clusterdse
