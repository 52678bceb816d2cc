# fish completion for with-lock(1).
# Flags stop at <name>: the words after it are a command, completed as one.
# Keep in step with `with-lock --help` (cmd/with-lock/completion_test.go checks).

# Prints where, among the words typed so far, the command starts (after
# <name> and an optional --); fails while flags or the name are being typed.
function __with_lock_command_start
    set -l words (commandline -opc)
    set -l takes_value --redis --redis-timeout --prefix --ttl --on-lost --kill-after \
        --min-hold -w --wait --jitter -E --conflict-exit-code --tls-cacert --tls-cert --tls-key --password-file \
        --sentinel --sentinel-master --sentinel-user --sentinel-password-file --min-replicas --lock-delay --slots --config \
        --log-format --leftovers --max-run --history-size --once-per --once-per-offset --done-exit-code \
        --record-output --ping-output --stop-timeout --stop-signal \
        --tracking --memory-max --cpu-quota --metrics-push \
        --for --reason
    set -l i 2
    while test $i -le (count $words)
        switch $words[$i]
            case --
                set i (math $i + 1)
                break
            case $takes_value
                set i (math $i + 2)
                continue
            case '-*'
                set i (math $i + 1)
                continue
        end
        break
    end
    # words[i] is the name, if it has been typed.
    test $i -le (count $words); or return 1
    set i (math $i + 1)
    if test $i -le (count $words); and test "$words[$i]" = --
        set i (math $i + 1)
    end
    echo $i
end

# Completes the command and its arguments as fish would without with-lock.
function __with_lock_complete_command
    set -l start (__with_lock_command_start); or return
    set -l words (commandline -opc)
    set -l cmd
    if test $start -le (count $words)
        set cmd (string escape -- $words[$start..-1])
    end
    complete -C (string join ' ' -- $cmd (commandline -ct))
end

complete -c with-lock -n '__with_lock_command_start >/dev/null' -f -a '(__with_lock_complete_command)'

complete -c with-lock -f
set -l flags 'not __with_lock_command_start >/dev/null'
complete -c with-lock -n $flags -l redis -x -d 'Redis URL (env WITH_LOCK_REDIS), repeatable'
complete -c with-lock -n $flags -l redis-timeout -x -d 'give up on Redis after DUR'
complete -c with-lock -n $flags -l prefix -x -d 'the key is STR<name>'
complete -c with-lock -n $flags -l ttl -x -d 'lock time to live'
complete -c with-lock -n $flags -l no-renew -d 'do not renew the lock while the command runs'
complete -c with-lock -n $flags -l on-lost -x -a 'term ignore reacquire' -d 'what to do when the lock is lost'
complete -c with-lock -n $flags -l kill-after -x -d 'SIGKILL the command DUR after --on-lost term'
complete -c with-lock -n $flags -l stop-timeout -x -d 'SIGKILL the job DUR after a forwarded SIGTERM, SIGINT or SIGHUP'
complete -c with-lock -n $flags -l stop-signal -x -a 'TERM INT HUP QUIT USR1 USR2 ALRM KILL' -d 'signal to stop the job with'
complete -c with-lock -n $flags -l leftovers -x -a 'wait kill' -d 'processes left when the command exits'
complete -c with-lock -n $flags -l tracking -x -a 'auto scope cgroup subreaper' -d 'how the job is followed'
complete -c with-lock -n $flags -l memory-max -x -d 'limit the whole job\'s memory to SIZE'
complete -c with-lock -n $flags -l cpu-quota -x -d 'limit the whole job\'s CPU to PCT of one CPU'
complete -c with-lock -n $flags -l max-run -x -d 'stop the whole job after DUR, exit 124'
complete -c with-lock -n $flags -l no-cgroup -d 'follow the job by the subreaper alone, no cgroup'
complete -c with-lock -n $flags -l min-hold -x -d 'keep the lock at least DUR'
complete -c with-lock -n $flags -l once-per -x -d 'run at most once per DUR window it succeeds in'
complete -c with-lock -n $flags -l once-per-offset -x -d 'start every --once-per window DUR later'
complete -c with-lock -n $flags -l done-exit-code -x -d 'exit code when the window is already done'
complete -c with-lock -n $flags -l fence -d 'fencing number in WITH_LOCK_FENCE'
complete -c with-lock -n $flags -l status -d 'print who holds the lock and exit'
complete -c with-lock -n $flags -l json -d 'with --status or --list, print JSON'
complete -c with-lock -n $flags -l list -d 'list the locks held and exit'
complete -c with-lock -n $flags -l all -d 'with --list, also the last runs of names not held'
complete -c with-lock -n $flags -l scan -d 'with --list, scan the keyspace instead of the index of names'
complete -c with-lock -n $flags -l break -d 'remove the lock whoever holds it and exit'
complete -c with-lock -n $flags -l record-ttl -x -d 'keep the last-run record for DUR'
complete -c with-lock -n $flags -l no-record -d 'do not store a record of the run'
complete -c with-lock -n $flags -l history -d 'print the last runs of the lock and exit'
complete -c with-lock -n $flags -l history-size -x -d 'keep the last N runs for --history'
complete -c with-lock -n $flags -l record-output -x -d 'keep the last N KiB of the output in the record'
complete -c with-lock -n $flags -l output-on-failure -d 'hold the output back, print it only if the run failed'
complete -c with-lock -n $flags -s w -l wait -x -d 'wait up to DUR for a busy lock'
complete -c with-lock -n $flags -l jitter -x -d 'first wait a random time up to DUR'
complete -c with-lock -n $flags -s E -l conflict-exit-code -x -d 'exit code when the lock is busy'
complete -c with-lock -n $flags -s n -l nonblock -d 'fail at once when the lock is busy'
complete -c with-lock -n $flags -l replace -d 'stop the run holding the lock, wait until it is gone, then run'
complete -c with-lock -n $flags -s q -l quiet -d 'print errors only'
complete -c with-lock -n $flags -s v -l verbose -d 'print one line per event on stderr'
complete -c with-lock -n $flags -l log-format -x -a 'text json' -d 'format of what with-lock prints on stderr'
complete -c with-lock -n $flags -l tls-cacert -r -F -d 'verify the server against these CAs'
complete -c with-lock -n $flags -l tls-cert -r -F -d 'TLS client certificate'
complete -c with-lock -n $flags -l tls-key -r -F -d 'TLS client private key'
complete -c with-lock -n $flags -l tls-insecure -d 'do not verify the server TLS certificate'
complete -c with-lock -n $flags -l password-file -r -F -d 'read the Redis password from FILE'
complete -c with-lock -n $flags -l sentinel -x -d 'Sentinel HOST:PORT, repeatable'
complete -c with-lock -n $flags -l sentinel-master -x -d 'master name in Sentinel'
complete -c with-lock -n $flags -l sentinel-user -x -d 'ACL user for the sentinels'
complete -c with-lock -n $flags -l sentinel-password-file -r -F -d 'read the sentinels password from FILE'
complete -c with-lock -n $flags -l cluster -d 'the --redis URLs are Redis Cluster seeds'
complete -c with-lock -n $flags -l min-replicas -x -d 'wait until N replicas have the lock'
complete -c with-lock -n $flags -l lock-delay -x -d 'after an expired lease, hold the lock DUR before the command'
complete -c with-lock -n $flags -l slots -x -d 'let up to N holders run at once'
complete -c with-lock -n $flags -l config -r -F -d 'read settings from the TOML FILE'
complete -c with-lock -n $flags -l print-config -d 'print the effective settings and where each came from'
complete -c with-lock -n $flags -l metrics-push -x -d 'POST the run\'s metrics to the Pushgateway at URL'
complete -c with-lock -n $flags -l metrics-dir -x -a '(__fish_complete_directories)' -d 'write with-lock-<name>.prom for the textfile collector into DIR'
complete -c with-lock -n $flags -l ping -x -d 'healthchecks.io check URL: ping start and exit code'
complete -c with-lock -n $flags -l ping-timeout -x -d 'give up on a ping after DUR'
complete -c with-lock -n $flags -l ping-skips -d 'with --ping, also report busy and done skips'
complete -c with-lock -n $flags -l ping-output -x -d 'with --ping, POST the last N KiB of the output with the end ping'
complete -c with-lock -n $flags -l check -x -d 'judge the records of lock NAME as a Nagios plugin and exit'
complete -c with-lock -n $flags -l max-age -x -d 'with --check, CRITICAL without a success in DUR'
complete -c with-lock -n $flags -l warn-age -x -d 'with --check, WARNING without a success in DUR'
complete -c with-lock -n $flags -l running-ok -x -d 'with --check, a run going on for less than DUR is OK'
complete -c with-lock -n $flags -l min-duration -x -d 'with --check, CRITICAL when the last success took less than DUR'
complete -c with-lock -n $flags -l max-duration -x -d 'with --check, CRITICAL when the last success took longer than DUR'
complete -c with-lock -n $flags -l duration-outlier -d 'with --check, WARNING when the last success took far less or longer than the ones before it'
complete -c with-lock -n $flags -l pause -d 'pause the lock on every host and exit'
complete -c with-lock -n $flags -l for -x -d 'with --pause, end the pause after DUR'
complete -c with-lock -n $flags -l reason -x -d 'with --pause, why: every refused run prints it'
complete -c with-lock -n $flags -l resume -d 'end the pause of the lock and exit'
complete -c with-lock -n $flags -l doctor -d 'check that the Redis deployment can hold locks and exit'
complete -c with-lock -n $flags -l version -d 'print the version and exit'
complete -c with-lock -n $flags -s h -l help -d 'show the help'
