# diskmon.bash - bash completion for diskmon: its options and their values.
# Installed as share/bash-completion/completions/diskmon (cmake --install);
# to try it from the source tree: source docs/diskmon.bash

_diskmon_disks()
{
    # Linux: the block devices the kernel knows (sda, nvme0n1, loop0), and
    # their partitions (sda2), which -d takes too.
    local d
    [ -d /sys/class/block ] || return 0
    for d in /sys/class/block/*; do
        [ -e "$d" ] && printf '%s\n' "${d##*/}"
    done
}

_diskmon()
{
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion -n = || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
    fi

    local opts="-r --replay --input-format -f --format -o --output -d --disk --op --flags -p --pid
        -c --comm --cgroup -m --min-latency -n --count -t --duration --clock --utc
        --no-header -s --summary --hist --top --by --queue --backend --force --cleanup --self-test -h --help
        -V --version --metrics --interval --metrics-top --heatmap --offset-map --report
        --heatmap-step --"

    # --long=VALUE: complete the value.
    if [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    fi

    case $prev in
    -r | --replay)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --input-format)
        COMPREPLY=($(compgen -W "etl json csv systor msr tencent" -- "$cur"))
        return
        ;;
    --self-test)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    -o | --output | --metrics)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --heatmap | --offset-map)
        COMPREPLY=($(compgen -f -X '!*.[sS][vV][gG]' -- "$cur") $(compgen -d -- "$cur"))
        return
        ;;
    --report)
        COMPREPLY=($(compgen -f -X '!*.[hH][tT][mM]*' -- "$cur") $(compgen -d -- "$cur"))
        return
        ;;
    -f | --format)
        COMPREPLY=($(compgen -W "text csv json" -- "$cur"))
        return
        ;;
    --backend)
        COMPREPLY=($(compgen -W "tracefs perf" -- "$cur"))
        return
        ;;
    --by)
        COMPREPLY=($(compgen -W "process file disk cgroup partition" -- "$cur"))
        return
        ;;
    --op)
        # A comma list: complete the last element.
        local head=${cur%,*} last=${cur##*,}
        [ "$head" = "$cur" ] && head="" || head="$head,"
        COMPREPLY=($(compgen -P "$head" -W "read write flush discard" -- "$last"))
        return
        ;;
    --flags)
        local head=${cur%,*} last=${cur##*,}
        [ "$head" = "$cur" ] && head="" || head="$head,"
        COMPREPLY=($(compgen -P "$head" -W "preflush fua sync meta readahead secure
            nocache paging sync_api associated buffered sync_paging" -- "$last"))
        return
        ;;
    -d | --disk)
        COMPREPLY=($(compgen -W "$(_diskmon_disks)" -- "$cur"))
        return
        ;;
    -p | --pid)
        COMPREPLY=($(compgen -W "$(ls /proc 2>/dev/null | grep -E '^[0-9]+$')" -- "$cur"))
        return
        ;;
    -c | --comm)
        COMPREPLY=($(compgen -W "$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)" -- "$cur"))
        return
        ;;
    --cgroup)
        # The v2 paths of the running processes (their 0:: line).
        COMPREPLY=($(compgen -W "$(sed -n 's/^0:://p' /proc/[0-9]*/cgroup 2>/dev/null | sort -u)" \
            -- "$cur"))
        return
        ;;
    -m | --min-latency | -n | --count | -t | --duration | --interval | --metrics-top)
        return # a number
        ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _diskmon diskmon
