#!/usr/bin/env bash
# Build the release files into dist/ (make dist):
#   with-lock-<os>-<arch>                  static binaries (CGO_ENABLED=0, -trimpath)
#   with-lock_<version>_<os>_<arch>.tar.gz binary, man page, README, example with-lock.conf, completions, systemd examples,
#                                          Prometheus alerting rules (with their promtool tests) and Grafana dashboard
#   with-lock_<debversion>_<arch>.deb      one per Linux arch, built by nfpm (pinned in tools/go.mod)
#   SHA256SUMS                             for all of the above: cd dist && sha256sum -c SHA256SUMS
# darwin is built only where it compiles (skipped with a note instead of
# failing); freebsd must compile: internal/supervise has a reaper for it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
if [ -z "$VERSION" ]; then
	echo "dist: no version: not a git checkout; run as VERSION=v1.2.3 make dist" >&2
	exit 1
fi
# Debian versions must start with a digit and '-' separates the Debian
# revision: v1.2.3 -> 1.2.3, v1.2.3-4-gabc1234-dirty -> 1.2.3+4.gabc1234.dirty,
# an untagged abc1234 -> 0~git.abc1234 (sorts below any release).
if [[ $VERSION =~ ^v?[0-9]+\. ]]; then
	deb_version=$(sed -e 's/^v//' -e 's/-/+/' -e 's/-/./g' <<<"$VERSION")
else
	deb_version="0~git.${VERSION//-/.}"
fi
# Same inputs, same bytes: file times in tarballs and .debs are the commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf dist
mkdir -p dist
gzip -9n <packaging/with-lock.1 >"$stage/with-lock.1.gz"
nfpm=$("$GO" -C tools tool -n nfpm) # builds the pinned nfpm once; the go build cache keeps it

for platform in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64 freebsd/arm64; do
	os=${platform%/*} arch=${platform#*/}
	bin=dist/with-lock-$os-$arch
	if ! CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION" -o "$bin" ./cmd/with-lock 2>"$stage/build.err"; then
		if [ "$os" = darwin ]; then
			echo "dist: skipping $platform, it does not compile: $(grep -m1 -v '^#' "$stage/build.err")" >&2
			continue
		fi
		cat "$stage/build.err" >&2
		exit 1
	fi

	dir=with-lock_${VERSION}_${os}_${arch}
	mkdir -p "$stage/$dir/completions" "$stage/$dir/systemd" "$stage/$dir/monitoring"
	cp "$bin" "$stage/$dir/with-lock"
	cp packaging/with-lock.1 README.md packaging/with-lock.conf "$stage/$dir/"
	cp -R docs "$stage/$dir/" # the guides README.md links to
	[ ! -f LICENSE ] || cp LICENSE "$stage/$dir/"
	cp packaging/completions/* "$stage/$dir/completions/"
	cp packaging/systemd/* "$stage/$dir/systemd/"
	cp packaging/with-lock.rules.yml packaging/with-lock.rules.test.yml packaging/with-lock.dashboard.json "$stage/$dir/monitoring/"
	tar -C "$stage" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		-cf - "$dir" | gzip -9n >"dist/$dir.tar.gz"

	if [ "$os" = linux ]; then
		ROOT=$root BIN=$root/$bin MANPAGE=$stage/with-lock.1.gz DEB_ARCH=$arch DEB_VERSION=$deb_version \
			"$nfpm" package --config packaging/nfpm.yaml --packager deb --target dist/ >/dev/null
	fi
done

(cd dist && sha256sum -- * >"$stage/SHA256SUMS") && mv "$stage/SHA256SUMS" dist/
echo "dist: $VERSION:"
ls -l dist
