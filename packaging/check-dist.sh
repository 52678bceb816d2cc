#!/usr/bin/env bash
# Check what make dist wrote (make check-dist runs both): each .deb holds the
# files it should, its extracted binary is static and runs, the binaries carry
# the build's version, and SHA256SUMS matches.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
host_arch=$("$GO" env GOARCH)
fail() {
	echo "check-dist: $*" >&2
	exit 1
}

want_paths=(
	./usr/bin/with-lock
	./usr/share/man/man1/with-lock.1.gz
	./usr/share/bash-completion/completions/with-lock
	./usr/share/zsh/vendor-completions/_with-lock
	./usr/share/fish/vendor_completions.d/with-lock.fish
	./usr/share/doc/with-lock/examples/with-lock-example.service
	./usr/share/doc/with-lock/examples/with-lock-example.timer
	./usr/share/doc/with-lock/examples/with-lock.rules.yml
	./usr/share/doc/with-lock/examples/with-lock.rules.test.yml
	./usr/share/doc/with-lock/examples/with-lock.dashboard.json
	./usr/share/doc/with-lock/docs/long-jobs.md
	./etc/with-lock.conf
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for arch in amd64 arm64; do
	debs=(dist/with-lock_*_"$arch".deb)
	[ -f "${debs[0]}" ] || fail "no .deb for $arch in dist/"
	deb=${debs[0]}
	[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "$deb: Architecture is not $arch"
	dpkg-deb -c "$deb" >"$tmp/list"
	for p in "${want_paths[@]}"; do
		grep -q " $p\$" "$tmp/list" || fail "$deb does not contain $p"
	done
	grep -q '^-rwxr-xr-x root/root .* ./usr/bin/with-lock$' "$tmp/list" ||
		fail "$deb: /usr/bin/with-lock is not an executable owned by root"

	rm -rf "$tmp/root" && mkdir "$tmp/root"
	dpkg-deb -x "$deb" "$tmp/root"
	gzip -t "$tmp/root/usr/share/man/man1/with-lock.1.gz" || fail "$deb: man page is not gzip"
	dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$tmp/conffiles" 2>/dev/null || : >"$tmp/conffiles"
	grep -qx /etc/with-lock.conf "$tmp/conffiles" || fail "$deb: /etc/with-lock.conf is not a conffile"
	cmp -s "$tmp/root/etc/with-lock.conf" packaging/with-lock.conf || fail "$deb: /etc/with-lock.conf is not packaging/with-lock.conf"
	! grep -qv '^\(#.*\)\?$' "$tmp/root/etc/with-lock.conf" || fail "$deb: /etc/with-lock.conf has a line that is not a comment"
	bin=$tmp/root/usr/bin/with-lock
	# Static and reproducible-path builds, as recorded by the go command itself.
	info=$("$GO" version -m "$bin")
	grep -q 'CGO_ENABLED=0' <<<"$info" || fail "$deb: binary was built with cgo"
	grep -q -- '-trimpath=true' <<<"$info" || fail "$deb: binary was built without -trimpath"
	[ "$arch" = "$host_arch" ] || continue

	got=$("$bin" --version) || fail "$deb: with-lock --version failed"
	[ "$got" = "with-lock $VERSION" ] || fail "$deb: --version says '$got', want 'with-lock $VERSION'"
	help=$("$bin" --help) || fail "$deb: with-lock --help failed"
	grep -q '^Usage: with-lock' <<<"$help" || fail "$deb: with-lock --help printed no usage"
	# The shipped example, all comments, configures nothing: the default Redis, said to be local.
	printed=$("$bin" --config "$tmp/root/etc/with-lock.conf" --print-config) || fail "$deb: --print-config with the shipped example failed"
	grep -q '^redis = \["redis://127.0.0.1:6379/0"\] .*# default: locks only against a Redis on this host$' <<<"$printed" ||
		fail "$deb: --print-config with the shipped example does not show the local default"
done

for tgz in dist/*.tar.gz; do
	tar -tzf "$tgz" >"$tmp/list"
	grep -q '/with-lock$' "$tmp/list" || fail "$tgz has no with-lock binary"
	grep -q '/with-lock\.1$' "$tmp/list" || fail "$tgz has no man page"
	grep -q '/with-lock\.conf$' "$tmp/list" || fail "$tgz has no example with-lock.conf"
	for f in with-lock.rules.yml with-lock.rules.test.yml with-lock.dashboard.json; do
		grep -q "/monitoring/$f\$" "$tmp/list" || fail "$tgz has no monitoring/$f"
	done
done

(cd dist && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match dist/"
[ "$(wc -l <dist/SHA256SUMS)" -eq "$(find dist -maxdepth 1 -type f ! -name SHA256SUMS | wc -l)" ] ||
	fail "SHA256SUMS does not list every file in dist/"
echo "check-dist: dist/ ok ($(ls dist | tr '\n' ' '))"
