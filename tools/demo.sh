#!/usr/bin/env bash
# Race three copies of the same job through with-lock on a local Redis and
# show that exactly one ran while the other two were refused with 75.
set -euo pipefail
BIN=${BIN:-/usr/local/bin/with-lock}
PORT=${DEMO_PORT:-6379}
# This Redis, whatever the environment or /etc/with-lock.conf name.
export WITH_LOCK_REDIS=redis://127.0.0.1:$PORT/0 WITH_LOCK_CONFIG=/dev/null
JOB=demo-nightly-report

if ! redis-cli -p "$PORT" ping >/dev/null 2>&1; then
	echo "== no Redis answers on 127.0.0.1:$PORT; starting one (no persistence)"
	redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes >/dev/null
	for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
fi
redis-cli -p "$PORT" del "lock:$JOB" >/dev/null

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== starting three copies at once of: with-lock $JOB sh -c 'echo copy ran; sleep 3'"
for i in 1 2 3; do
	( set +e; "$BIN" "$JOB" sh -c 'echo "copy ran (pid $$)"; sleep 3' >"$out/$i.out" 2>"$out/$i.err"
	  echo $? >"$out/$i.code" ) &
done

for _ in $(seq 100); do redis-cli -p "$PORT" exists "lock:$JOB" | grep -q 1 && break; sleep 0.05; done
echo "== while the job runs, Redis holds:"
# The token is <host>:<pid>:<start>.<128 random bits>; the random part
# proves ownership and is never shown.
token=$(redis-cli -p "$PORT" get "lock:$JOB")
echo "   GET lock:$JOB -> ${token%.*}.<128 random bits, not shown>"
echo "   TTL lock:$JOB -> $(redis-cli -p "$PORT" ttl "lock:$JOB") s"
wait

ran=0 refused=0
for i in 1 2 3; do
	code=$(cat "$out/$i.code")
	echo "-- copy $i exited $code: $(cat "$out/$i.out" "$out/$i.err")"
	case $code in 0) ran=$((ran + 1)) ;; 75) refused=$((refused + 1)) ;; esac
done
echo "== after the job: EXISTS lock:$JOB -> $(redis-cli -p "$PORT" exists "lock:$JOB") (released)"
echo "== $ran ran, $refused refused with 75 (lock busy)"
[ "$ran" -eq 1 ] && [ "$refused" -eq 2 ]
