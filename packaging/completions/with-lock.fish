# fish completion for with-lock(1).
# Written by make docs from internal/config's settings table: edit that.
# Flags stop at <name>: the words after it are a command, completed as one.

# Prints where, among the words typed so far, the command starts (after
# <name> and an optional --); fails while flags or the name are being typed.
function __with_lock_command_start
    set -l words (commandline -opc)
    set -l takes_value --redis --redis-timeout --tls-cacert --tls-cert --tls-key --password-file --sentinel \
        --sentinel-master --sentinel-user --sentinel-password-file --prefix --ttl -w --wait --jitter \
        -E --conflict-exit-code --min-hold --once-per --once-per-offset --done-exit-code --slots \
        --min-replicas --lock-delay --on-lost --kill-after --stop-timeout --stop-signal --leftovers \
        --max-run --tracking --memory-max --cpu-quota --record-ttl --history-size --record-output \
        --metrics-dir --metrics-push --ping --ping-timeout --ping-output --config --log-format --for \
        --reason --check --max-age --warn-age --running-ok --min-duration --max-duration
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
complete -c with-lock -n $flags -l redis -x -d 'Redis URL; repeat for a quorum of independent masters, or the seeds of --cluster'
complete -c with-lock -n $flags -l redis-timeout -x -d 'give up on connecting to or hearing from Redis after DUR'
complete -c with-lock -n $flags -l tls-cacert -r -F -d 'verify the server\'s TLS certificate against the CAs in FILE (rediss://)'
complete -c with-lock -n $flags -l tls-cert -r -F -d 'TLS client certificate FILE (PEM, with --tls-key)'
complete -c with-lock -n $flags -l tls-key -r -F -d 'TLS client private key FILE (PEM)'
complete -c with-lock -n $flags -l tls-insecure -d 'do not verify the server\'s TLS certificate (testing only)'
complete -c with-lock -n $flags -l password-file -r -F -d 'read the Redis password from FILE (mode 0600 or stricter)'
complete -c with-lock -n $flags -l sentinel -x -d 'Sentinel HOST:PORT (repeat for each sentinel)'
complete -c with-lock -n $flags -l sentinel-master -x -d 'NAME of the master the sentinels monitor'
complete -c with-lock -n $flags -l sentinel-user -x -d 'ACL USER for the sentinels'
complete -c with-lock -n $flags -l sentinel-password-file -r -F -d 'read the sentinels\' password from FILE'
complete -c with-lock -n $flags -l cluster -d 'the --redis URLs are seeds of a Redis Cluster'
complete -c with-lock -n $flags -l prefix -x -d 'the key is STR<name>'
complete -c with-lock -n $flags -l ttl -x -d 'the lock expires DUR (at least 200ms) after it was last set or renewed'
complete -c with-lock -n $flags -s w -l wait -x -d 'wait up to DUR for a busy lock instead of failing'
complete -c with-lock -n $flags -l jitter -x -d 'first wait a random time up to DUR, so that hosts whose cron fires together do not reach Redis at once'
complete -c with-lock -n $flags -s n -l nonblock -d 'fail at once when the lock is busy (the default)'
complete -c with-lock -n $flags -l replace -d 'stop the run holding the lock (with --slots the oldest holder; as on a lost lock: 125, "replaced by host:pid"), wait first in line until it is gone, then run; -w defaults to --ttl + --kill-after + 5s'
complete -c with-lock -n $flags -s E -l conflict-exit-code -x -d 'exit with N (0-255) when the lock is busy'
complete -c with-lock -n $flags -l min-hold -x -d 'keep the lock at least DUR after acquiring it, even if the command ends sooner'
complete -c with-lock -n $flags -l once-per -x -d 'run the command at most once per DUR window (UTC, from the Unix epoch) that it succeeds in; later runs exit at once'
complete -c with-lock -n $flags -l once-per-offset -x -d 'start every --once-per window DUR later (e.g. 2h: days from 02:00 UTC)'
complete -c with-lock -n $flags -l done-exit-code -x -d 'exit with N (0-255) when --once-per\'s window is already done'
complete -c with-lock -n $flags -l fence -d 'give the command a fencing number, increasing per acquisition, in WITH_LOCK_FENCE'
complete -c with-lock -n $flags -l slots -x -d 'let up to N holders run at once (a semaphore); every run of a name must use the same N'
complete -c with-lock -n $flags -l min-replicas -x -d 'after acquiring, wait until N replicas have the lock, else exit 69'
complete -c with-lock -n $flags -l lock-delay -x -d 'when the last holder\'s lease expired unreleased (it crashed or stalled; its job may still run), hold the lock DUR before the command starts'
complete -c with-lock -n $flags -l no-renew -d 'do not renew the lock while the command runs'
complete -c with-lock -n $flags -l on-lost -x -a 'term ignore reacquire' -d 'MODE on a lost lock: term stops the command (exit 125), ignore only warns, reacquire takes a vanished key again (else term)'
complete -c with-lock -n $flags -l kill-after -x -d 'SIGKILL what is left of the job DUR after --stop-signal, on --max-run, a lost lock and --leftovers kill'
complete -c with-lock -n $flags -l stop-timeout -x -d 'SIGKILL the whole job DUR after forwarding it SIGTERM, SIGINT or SIGHUP, and release the lock (0: wait for it)'
complete -c with-lock -n $flags -l stop-signal -x -a 'HUP INT QUIT TERM USR1 USR2 ALRM KILL' -d 'SIG to stop the job with on --max-run, a lost lock and --leftovers kill (TERM, INT, USR1...)'
complete -c with-lock -n $flags -l leftovers -x -a 'wait kill' -d 'MODE for the job\'s processes left when the command exits: wait holds the lock until they end, kill stops them'
complete -c with-lock -n $flags -l max-run -x -d 'stop the whole job after DUR (--stop-signal, SIGKILL after --kill-after) and exit 124'
complete -c with-lock -n $flags -l no-cgroup -d 'on Linux, follow the job by the subreaper alone, not in a cgroup v2 group of its own (--tracking subreaper)'
complete -c with-lock -n $flags -l tracking -x -a 'auto scope cgroup subreaper' -d 'follow the job by MODE: auto, scope (a systemd scope of its own), cgroup (a group below with-lock\'s own), subreaper'
complete -c with-lock -n $flags -l memory-max -x -d 'limit the whole job\'s memory to SIZE (512M, 2G), as systemd\'s MemoryMax=; refused where it cannot apply'
complete -c with-lock -n $flags -l cpu-quota -x -d 'limit the whole job\'s CPU time to PCT of one CPU (50%, 200%), as systemd\'s CPUQuota=; refused where it cannot apply'
complete -c with-lock -n $flags -l record-ttl -x -d 'keep the record of the last run (host, pid, times, exit code) for DUR'
complete -c with-lock -n $flags -l no-record -d 'do not store a record of the run'
complete -c with-lock -n $flags -l history-size -x -d 'keep the last N runs of the name for --history (0: none), for as long as --record-ttl'
complete -c with-lock -n $flags -l record-output -x -d 'keep the last N KiB of the command\'s output in the run\'s record, for --status and --history (0: none)'
complete -c with-lock -n $flags -l metrics-dir -x -a '(__fish_complete_directories)' -d 'after every run write with-lock-<name>.prom for node_exporter\'s textfile collector into DIR'
complete -c with-lock -n $flags -l metrics-push -x -d 'after every run POST its metrics to the Prometheus Pushgateway at URL (a pod has no textfile directory); a skip (busy, paused, window done) pushes nothing'
complete -c with-lock -n $flags -l ping -x -d 'the run that holds the lock GETs URL/start?rid=ID, then URL/<exit code>?rid=ID (healthchecks.io)'
complete -c with-lock -n $flags -l ping-timeout -x -d 'give up on a ping, its one retry included, after DUR'
complete -c with-lock -n $flags -l ping-skips -d 'with --ping, also report a run not made (lock busy, or done) to URL/log'
complete -c with-lock -n $flags -l ping-output -x -d 'with --ping, POST the last N KiB of the command\'s output with the end ping (0: a GET without it)'
complete -c with-lock -n $flags -l config -r -F -d 'read settings from the TOML FILE; keys are the long flags\' names'
complete -c with-lock -n $flags -s q -l quiet -d 'print errors only: nothing when the lock is busy, no warnings'
complete -c with-lock -n $flags -s v -l verbose -d 'print one line per event on stderr: acquired, waiting, slow renewal, lost, released, exited'
complete -c with-lock -n $flags -l log-format -x -a 'text json' -d 'FORMAT of what with-lock prints on stderr: text, or json (one object per line)'
complete -c with-lock -n $flags -l output-on-failure -d 'hold the command\'s output back and print it only if the run failed (for cron\'s MAILTO)'
complete -c with-lock -n $flags -l status -d 'print who holds lock <name> and exit: 0 held, 1 free (no command)'
complete -c with-lock -n $flags -l list -d 'list the locks held under the prefix and exit (no name, no command)'
complete -c with-lock -n $flags -l all -d 'with --list, also the last runs of names not held now'
complete -c with-lock -n $flags -l scan -d 'with --list, scan the keyspace instead of reading the index of names (also finds keys other programs set)'
complete -c with-lock -n $flags -l history -d 'print the last runs of lock <name>, newest first, and exit (no command)'
complete -c with-lock -n $flags -l break -d 'remove lock <name> whoever holds it and exit: 0 removed, 1 nothing held; the holder stops with 125'
complete -c with-lock -n $flags -l json -d 'with --status, --list, --history, --check, --doctor or --print-config, print JSON'
complete -c with-lock -n $flags -l pause -d 'pause lock <name> on every host and exit: runs refuse with the busy code until --resume; a running holder is not stopped'
complete -c with-lock -n $flags -l for -x -d 'with --pause, end the pause by itself after DUR'
complete -c with-lock -n $flags -l reason -x -d 'with --pause, why: every refused run prints this TEXT'
complete -c with-lock -n $flags -l resume -d 'end the pause of lock <name> and exit: 0 resumed, 1 it was not paused'
complete -c with-lock -n $flags -l check -x -d 'judge the records of lock NAME as a Nagios plugin and exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN'
complete -c with-lock -n $flags -l max-age -x -d 'with --check, CRITICAL when no run succeeded in the last DUR'
complete -c with-lock -n $flags -l warn-age -x -d 'with --check, WARNING when no run succeeded in the last DUR'
complete -c with-lock -n $flags -l running-ok -x -d 'with --check, a run going on for less than DUR is OK'
complete -c with-lock -n $flags -l min-duration -x -d 'with --check, CRITICAL when the last success took less than DUR, as a run that did nothing may'
complete -c with-lock -n $flags -l max-duration -x -d 'with --check, CRITICAL when the last success took longer than DUR'
complete -c with-lock -n $flags -l duration-outlier -d 'with --check, WARNING when the last success took under a third or over 3 times the median of the successes before it in --history, once there are 5'
complete -c with-lock -n $flags -l doctor -d 'check that the Redis deployment can hold locks (of lock [NAME]: its keys, ACL, Cluster slot) and exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN'
complete -c with-lock -n $flags -l print-config -d 'print the effective settings, where each came from, and exit'
complete -c with-lock -n $flags -l version -d 'print the version and exit'
complete -c with-lock -n $flags -s h -l help -d 'show this help'
