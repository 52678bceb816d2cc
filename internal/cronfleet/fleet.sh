#!/usr/bin/env bash
# A fleet of cron hosts sharing one Redis, for fleet_test.go. It runs as
# process 1 of the PID, mount and network namespaces the test made with
# unshare, so that when it exits, or its unshare is killed, the kernel ends
# every process it started, and its mounts vanish with the namespace: the
# machine is left as it was.
#
# $1 is the test's directory, laid out by the test:
#   crontab       root's crontab, the README's block as it is
#   hosts         one line per host: its name and its clock's offset from
#                 the shared (Redis's) clock in whole seconds
#   start, until  the Unix seconds at which the crons are started, 15 s
#                 before the first minute the test counts, and stopped
#   opt/          what /opt holds on every host (the jobs)
#   bin/          what /usr/local/bin holds (with-lock)
#   sendmail      what cron mails through: it files each mail in mail/
#   environment   /etc/environment, which Debian's cron reads through pam_env
# Each cron's output goes to cron-<host>.log, Redis's to redis.log.
set -euo pipefail
dir=$1

# What every host sees. Nothing of the machine's own cron configuration is
# read: /etc/crontab and /etc/cron.d would run the machine's jobs.
ip link set lo up
: >"$dir/empty"
mount --bind "$dir/empty" /etc/crontab
mount -t tmpfs tmpfs /etc/cron.d
mount --bind "$dir/environment" /etc/environment
printf '127.0.0.1 localhost redis.internal\n' >"$dir/etc-hosts"
mount --bind "$dir/etc-hosts" /etc/hosts
if [ -e /etc/with-lock.conf ]; then mount --bind "$dir/empty" /etc/with-lock.conf; fi
mount --bind "$dir/opt" /opt
mount --bind "$dir/bin" /usr/local/bin
mkdir -p "$dir/sbin-upper" "$dir/sbin-work"
mount -t overlay overlay -o "lowerdir=/usr/sbin,upperdir=$dir/sbin-upper,workdir=$dir/sbin-work" /usr/sbin
install -m 0755 "$dir/sendmail" /usr/sbin/sendmail
mount -t tmpfs -o mode=1730 tmpfs /var/spool/cron/crontabs
chgrp crontab /var/spool/cron/crontabs
install -m 0600 -o root -g crontab "$dir/crontab" /var/spool/cron/crontabs/root

# The shared clock: the README's redis.internal:6379, on this namespace's
# own loopback, so no other Redis on the machine is touched.
redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly no >"$dir/redis.log" 2>&1 &
for _ in $(seq 100); do
	redis-cli -h redis.internal ping >/dev/null 2>&1 && break
	sleep 0.05
done
redis-cli -h redis.internal ping >/dev/null

# Each host: a name of its own (UTS namespace), its own /run for cron's pid
# file, and Debian's cron on a clock skewed by libfaketime. Only cron's
# clock is skewed: its jobs do not inherit LD_PRELOAD (cron builds their
# environment from the crontab and PAM), and with-lock, a static Go binary,
# would ignore it; with-lock takes its windows from Redis's clock anyway.
faketime=$(dpkg -L libfaketime | grep '/libfaketime\.so\.1$' | head -n 1)
start=$(cat "$dir/start")
now=$(date +%s)
if [ "$now" -gt "$start" ]; then
	echo "fleet.sh: set up $((now - start))s after the crons should have started" >&2
	exit 1
fi
sleep $((start - now))
while read -r host offset; do
	unshare --uts --mount sh -c '
		hostname "$1"
		mount -t tmpfs tmpfs /run
		mount -t tmpfs tmpfs /dev/shm
		export TZ=UTC LD_PRELOAD="$2" FAKETIME="$3" FAKETIME_DISABLE_SHM=1 FAKETIME_DONT_FAKE_MONOTONIC=1
		exec cron -f' sh "$host" "$faketime" "$offset" >"$dir/cron-$host.log" 2>&1 &
done <"$dir/hosts"

now=$(date +%s)
until=$(cat "$dir/until")
if [ "$until" -gt "$now" ]; then sleep $((until - now)); fi
echo stopped >"$dir/stopped"
