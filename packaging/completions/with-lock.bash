# bash completion for with-lock(1)                         -*- shell-script -*-
# Written by make docs from internal/config's settings table: edit that.
# Flags stop at <name>: the words after it are a command, completed as one.

_with_lock()
{
    local cur prev words cword
    _init_completion || return

    # Find <name>: the first word that is neither a flag nor a flag's value.
    local i=1
    while ((i < cword)); do
        case ${words[i]} in
            --)
                ((i++))
                break
                ;;
            --redis | --redis-timeout | --tls-cacert | --tls-cert | --tls-key | --password-file | --sentinel | \
                --sentinel-master | --sentinel-user | --sentinel-password-file | --prefix | --ttl | \
                -w | --wait | --jitter | -E | --conflict-exit-code | --min-hold | --once-per | \
                --once-per-offset | --done-exit-code | --slots | --min-replicas | --lock-delay | \
                --on-lost | --kill-after | --stop-timeout | --stop-signal | --leftovers | --max-run | \
                --tracking | --memory-max | --cpu-quota | --record-ttl | --history-size | \
                --record-output | --metrics-dir | --metrics-push | --ping | --ping-timeout | \
                --ping-output | --config | --log-format | --for | --reason | --check | --max-age | \
                --warn-age | --running-ok | --min-duration | --max-duration)
                ((i++))
                ;;
            -*) ;;
            *) break ;;
        esac
        ((i++))
    done
    if ((i < cword)); then
        # words[i] is the name; what follows is the command (after an optional --).
        ((i++))
        [[ ${words[i]} == -- ]] && ((i < cword)) && ((i++))
        _command_offset $i
        return
    fi

    case $prev in
        --tls-cacert)
            _filedir
            return
            ;;
        --tls-cert)
            _filedir
            return
            ;;
        --tls-key)
            _filedir
            return
            ;;
        --password-file)
            _filedir
            return
            ;;
        --sentinel-password-file)
            _filedir
            return
            ;;
        --on-lost)
            COMPREPLY=($(compgen -W 'term ignore reacquire' -- "$cur"))
            return
            ;;
        --stop-signal)
            COMPREPLY=($(compgen -W 'HUP INT QUIT TERM USR1 USR2 ALRM KILL' -- "$cur"))
            return
            ;;
        --leftovers)
            COMPREPLY=($(compgen -W 'wait kill' -- "$cur"))
            return
            ;;
        --tracking)
            COMPREPLY=($(compgen -W 'auto scope cgroup subreaper' -- "$cur"))
            return
            ;;
        --metrics-dir)
            _filedir -d
            return
            ;;
        --config)
            _filedir
            return
            ;;
        --log-format)
            COMPREPLY=($(compgen -W 'text json' -- "$cur"))
            return
            ;;
        --redis | --redis-timeout | --sentinel | --sentinel-master | --sentinel-user | --prefix | --ttl | -w | \
            --wait | --jitter | -E | --conflict-exit-code | --min-hold | --once-per | \
            --once-per-offset | --done-exit-code | --slots | --min-replicas | --lock-delay | \
            --kill-after | --stop-timeout | --max-run | --memory-max | --cpu-quota | --record-ttl | \
            --history-size | --record-output | --metrics-push | --ping | --ping-timeout | \
            --ping-output | --for | --reason | --check | --max-age | --warn-age | --running-ok | \
            --min-duration | --max-duration)
            return
            ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '--redis --redis-timeout --tls-cacert --tls-cert --tls-key --tls-insecure --password-file --sentinel
            --sentinel-master --sentinel-user --sentinel-password-file --cluster --prefix --ttl -w
            --wait --jitter -n --nonblock --replace -E --conflict-exit-code --min-hold --once-per
            --once-per-offset --done-exit-code --fence --slots --min-replicas --lock-delay
            --no-renew --on-lost --kill-after --stop-timeout --stop-signal --leftovers --max-run
            --no-cgroup --tracking --memory-max --cpu-quota --record-ttl --no-record --history-size
            --record-output --metrics-dir --metrics-push --ping --ping-timeout --ping-skips
            --ping-output --config -q --quiet -v --verbose --log-format --output-on-failure --status
            --list --all --scan --history --break --json --pause --for --reason --resume --check
            --max-age --warn-age --running-ok --min-duration --max-duration --duration-outlier
            --doctor --print-config --version -h --help' -- "$cur"))
    fi
} &&
    complete -F _with_lock with-lock

# ex: filetype=sh
