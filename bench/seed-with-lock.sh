#!/bin/bash
# with-lock <name> <command...> the way seed 000 asks for it: bash and
# redis-cli, SET NX EX to take the lock, EVAL of compare-and-delete to
# release it. The benchmark times it against the Go CLI; it is written to be
# as quick as bash allows (no forks beyond the two redis-cli runs and the
# command). REDIS_HOST and REDIS_PORT say where Redis is.
set -u
key="lock:$1"
shift
token="$HOSTNAME:$$:$(</proc/sys/kernel/random/uuid)"
cli=(redis-cli -h "${REDIS_HOST:-127.0.0.1}" -p "${REDIS_PORT:-6379}")
if [ "$("${cli[@]}" SET "$key" "$token" NX EX 30)" != "OK" ]; then
	echo "with-lock: $key is busy" >&2
	exit 75
fi
"$@"
rc=$?
"${cli[@]}" EVAL 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end' 1 "$key" "$token" >/dev/null
exit $rc
