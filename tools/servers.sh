#!/usr/bin/env bash
# servers.sh: the Redis-compatible servers the test matrix runs against,
# each installed once into a cache and reached through a bin/ directory
# whose redis-server and redis-cli are that server's (internal/redistest
# starts "redis-server" from PATH).
#
#   tools/servers.sh bin ID    install ID if missing; print its bin/ directory
#   tools/servers.sh ids       the IDs, one a line
#
# IDs and where each comes from (Debian's own packages, nothing else):
#   redis-7.0   Debian 12's redis-server, on this host (make redis)
#   valkey-8.0  Debian 12 bookworm-backports' valkey-server, unpacked; it
#               runs on this host's libraries, which are the ones it was
#               built against
#   redis-8.0   Debian 13 trixie's redis-server  } in a Debian 13 root made
#   valkey-8.1  Debian 13 trixie's valkey-server } by debootstrap; run with
#               that root's own dynamic loader and libraries, so that they
#               see this host's files (the tests' temporary directories,
#               certificates, sockets) without a chroot
#
# The cache is $WITH_LOCK_SERVERS_CACHE, /var/cache/with-lock-servers by
# default; an entry is built beside its place and renamed once whole, so an
# interrupted build is never taken for one. Needs root for apt-get and
# debootstrap the first time, as make beds does.
set -euo pipefail

cache=${WITH_LOCK_SERVERS_CACHE:-/var/cache/with-lock-servers}
ids=(redis-7.0 valkey-8.0 redis-8.0 valkey-8.1)
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

die() { echo "servers.sh: $*" >&2; exit 1; }

# mirror: the Debian mirror this host's apt uses (deb822 or one-line).
mirror() {
	local m
	m=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
		grep -v security | sed -E 's/^URIs: *//; s/^deb (\[[^]]*\] )?//' | awk '{print $1; exit}')
	echo "${m:-http://deb.debian.org/debian}"
}

# shim NAME TARGET...: bin/NAME execs TARGET... with the caller's arguments.
shim() {
	local dir=$1 name=$2
	shift 2
	{
		echo '#!/bin/sh'
		printf 'exec'
		printf ' %q' "$@"
		echo ' "$@"'
	} >"$dir/bin/$name"
	chmod 0755 "$dir/bin/$name"
}

# check DIR ID: the shims start a server that answers with the expected version.
check() {
	local dir=$1 id=$2 want=${2#*-} got
	got=$("$dir/bin/redis-server" --version) || die "$id: redis-server --version failed"
	case "$got" in
	*"v=$want."*) ;;
	*) die "$id: redis-server --version says '$got', want $want.x" ;;
	esac
	"$dir/bin/redis-cli" --version >/dev/null || die "$id: redis-cli --version failed"
}

build_host() { # redis-7.0: this host's packages
	local dir=$1
	command -v redis-server >/dev/null || die "redis-server is not installed: run make redis"
	mkdir -p "$dir/bin"
	shim "$dir" redis-server "$(command -v redis-server)"
	shim "$dir" redis-cli "$(command -v redis-cli)"
}

build_backports() { # valkey-8.0: bookworm-backports' .debs, unpacked
	local dir=$1 final=$2 apt=$1/apt m
	m=$(mirror)
	mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$dir/bin" "$dir/root"
	echo "deb $m bookworm-backports main" >"$apt/sources.list"
	# A private apt state: this host's sources and lists are left as they are.
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=-"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")
	$SUDO apt-get "${opts[@]}" update -qq
	(cd "$apt/archives" && $SUDO apt-get "${opts[@]}" download -qq valkey-server valkey-tools)
	for deb in "$apt"/archives/valkey-*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
	shim "$dir" redis-server "$final/root/usr/bin/valkey-server"
	shim "$dir" redis-cli "$final/root/usr/bin/valkey-cli"
}

# trixie_root: a Debian 13 root with both servers, shared by redis-8.0 and valkey-8.1.
trixie_root() {
	local root=$cache/trixie-root
	if [ ! -x "$root/usr/bin/redis-server" ] || [ ! -x "$root/usr/bin/valkey-server" ]; then
		command -v debootstrap >/dev/null || $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
		rm -rf "$root.building"
		echo "servers.sh: building a Debian 13 root with redis-server and valkey-server (debootstrap, a few minutes)" >&2
		$SUDO debootstrap --variant=minbase --include=redis-server,valkey-server trixie "$root.building" "$(mirror)" >"$cache/trixie-root.log" 2>&1 ||
			die "debootstrap trixie failed; see $cache/trixie-root.log"
		mv "$root.building" "$root"
	fi
	echo "$root"
}

build_trixie() { # redis-8.0, valkey-8.1: the Debian 13 root's own loader and libraries
	local dir=$1 server=$2 cli=$3 root lib
	root=$(trixie_root)
	lib=$root/usr/lib/x86_64-linux-gnu
	mkdir -p "$dir/bin"
	shim "$dir" redis-server "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$root/usr/bin/$server"
	shim "$dir" redis-cli "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$root/usr/bin/$cli"
}

install_id() {
	local id=$1 dir=$cache/$1
	if [ -x "$dir/bin/redis-server" ]; then
		echo "$dir/bin"
		return
	fi
	mkdir -p "$cache"
	rm -rf "$dir.building"
	case "$id" in
	redis-7.0) build_host "$dir.building" ;;
	valkey-8.0) build_backports "$dir.building" "$dir" ;;
	redis-8.0) build_trixie "$dir.building" redis-server redis-cli ;;
	valkey-8.1) build_trixie "$dir.building" valkey-server valkey-cli ;;
	*) die "unknown server $id (known: ${ids[*]})" ;;
	esac
	# The shims name their final place: checked once there.
	mv "$dir.building" "$dir"
	if ! (check "$dir" "$id"); then
		rm -rf "$dir"
		exit 1
	fi
	echo "$dir/bin"
}

case "${1:-}" in
bin) [ $# = 2 ] || die "usage: servers.sh bin ID"; install_id "$2" ;;
ids) printf '%s\n' "${ids[@]}" ;;
*) die "usage: servers.sh bin ID | ids" ;;
esac
