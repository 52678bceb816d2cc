# bash completion for with-lock(1)                         -*- shell-script -*-
# Flags stop at <name>: the words after it are a command, completed as one.
# Keep in step with `with-lock --help` (cmd/with-lock/completion_test.go checks).

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
            --redis | --redis-timeout | --prefix | --ttl | --on-lost | --kill-after | \
                --min-hold | -w | --wait | --jitter | -E | --conflict-exit-code | --tls-cacert | --tls-cert | \
                --tls-key | --password-file | --sentinel | --sentinel-master | --sentinel-user | \
                --sentinel-password-file | --min-replicas | --lock-delay | --slots | --config | --log-format | --record-ttl | \
                --leftovers | --max-run | --history-size | --metrics-dir | --ping | --ping-timeout | \
                --record-output | --ping-output | --stop-timeout | --stop-signal | \
                --tracking | --memory-max | --cpu-quota | --metrics-push | \
                --once-per | --once-per-offset | --done-exit-code | --check | --max-age | --warn-age | --running-ok | \
                --min-duration | --max-duration | --for | --reason)
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
        --on-lost)
            COMPREPLY=($(compgen -W 'term ignore reacquire' -- "$cur"))
            return
            ;;
        --log-format)
            COMPREPLY=($(compgen -W 'text json' -- "$cur"))
            return
            ;;
        --tracking)
            COMPREPLY=($(compgen -W 'auto scope cgroup subreaper' -- "$cur"))
            return
            ;;
        --leftovers)
            COMPREPLY=($(compgen -W 'wait kill' -- "$cur"))
            return
            ;;
        --stop-signal)
            COMPREPLY=($(compgen -W 'TERM INT HUP QUIT USR1 USR2 ALRM KILL' -- "$cur"))
            return
            ;;
        --tls-cacert | --tls-cert | --tls-key | --password-file | --sentinel-password-file | --config)
            _filedir
            return
            ;;
        --metrics-dir)
            _filedir -d
            return
            ;;
        --ping | --ping-timeout | --check | --max-age | --warn-age | --running-ok | --min-duration | --max-duration | --for | --reason)
            return
            ;;
        --redis | --redis-timeout | --prefix | --ttl | --kill-after | --min-hold | -w | --wait | --jitter | \
            -E | --conflict-exit-code | --sentinel | --sentinel-master | --sentinel-user | \
            --min-replicas | --lock-delay | --slots | --record-ttl | --max-run | --history-size | --once-per | \
            --once-per-offset | --done-exit-code | --record-output | --ping-output | --stop-timeout | \
            --memory-max | --cpu-quota | --metrics-push)
            return
            ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '--redis --redis-timeout --prefix --ttl --no-renew
            --on-lost --kill-after --min-hold --once-per --once-per-offset --done-exit-code --fence --status --json --list --all --scan --break
            --record-ttl --no-record --history --history-size --record-output --output-on-failure -w --wait --jitter --leftovers --max-run --no-cgroup --tracking --memory-max --cpu-quota --stop-timeout --stop-signal
            -E --conflict-exit-code -n --nonblock -q --quiet -v --verbose --log-format --tls-cacert --tls-cert --tls-key
            --tls-insecure --password-file --sentinel --sentinel-master --sentinel-user
            --sentinel-password-file --cluster --min-replicas --lock-delay --slots --config --print-config
            --version -h --help
            --replace
            --metrics-dir --metrics-push --ping --ping-timeout --ping-skips --ping-output --check --max-age --warn-age --running-ok
            --min-duration --max-duration --duration-outlier
            --pause --for --reason --resume
            --doctor' -- "$cur"))
    fi
} &&
    complete -F _with_lock with-lock

# ex: filetype=sh
