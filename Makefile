# with-lock: see README.md. Quick start: `make demo`, then `make test`.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man/man1
GO      ?= go
# Empty outside a git checkout: --version then reads the binary's build info.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
export VERSION
# apt-get needs root; use sudo when we are not.
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: build install docs demo test test-short test-servers test-load test-cron churn replace-churn bench redis promtool pushgateway groff shells postgresql sqlite cron-tools dist check-dist clean
.PHONY: image beds beds-deps

## build: compile bin/with-lock, static (no cgo), with the version from git describe
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/with-lock ./cmd/with-lock

## install: the binary to $(BINDIR) and the man page to $(MANDIR)
install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)
	install -m 0755 bin/with-lock $(DESTDIR)$(BINDIR)/with-lock
	install -m 0644 packaging/with-lock.1 $(DESTDIR)$(MANDIR)/with-lock.1

## docs: write the man page, the example config, the shells' completions and the README's flag table from internal/config's settings table
docs:
	$(GO) run ./internal/config/gendocs

## redis: install redis-server and redis-cli (Debian packages) if missing
redis:
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then \
		echo "installing redis-server and redis-tools with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
	fi

## promtool: install promtool (Debian package prometheus) if missing, without leaving its server running
promtool:
	@if ! command -v promtool >/dev/null 2>&1; then \
		echo "installing promtool (Debian package prometheus) with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null && \
		{ $(SUDO) systemctl disable --now prometheus >/dev/null 2>&1 || $(SUDO) service prometheus stop >/dev/null 2>&1 || true; }; \
	fi

## pushgateway: install prometheus-pushgateway (Debian package) if missing, without leaving its server running
pushgateway:
	@if ! command -v prometheus-pushgateway >/dev/null 2>&1; then \
		echo "installing prometheus-pushgateway with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus-pushgateway >/dev/null && \
		{ $(SUDO) systemctl disable --now prometheus-pushgateway >/dev/null 2>&1 || $(SUDO) service prometheus-pushgateway stop >/dev/null 2>&1 || true; }; \
	fi

## groff: install groff (Debian package groff-base, which man depends on) if missing, to render the man page in the tests
groff:
	@if ! command -v groff >/dev/null 2>&1; then \
		echo "installing groff-base with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends groff-base >/dev/null; \
	fi

## shells: install bash-completion and fish if missing, to complete with-lock in the shells themselves in the tests
shells:
	@if [ ! -f /usr/share/bash-completion/bash_completion ] || ! command -v fish >/dev/null 2>&1; then \
		echo "installing bash-completion and fish with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bash-completion fish >/dev/null; \
	fi

## postgresql: install Debian's PostgreSQL server and psql if missing, for docs/fencing.md's tests (which start their own), without leaving its server running
postgresql:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v psql >/dev/null 2>&1; then \
		echo "installing postgresql with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql postgresql-client >/dev/null && \
		{ $(SUDO) systemctl disable --now postgresql >/dev/null 2>&1 || $(SUDO) service postgresql stop >/dev/null 2>&1 || true; }; \
	fi

## sqlite: install the sqlite3 shell (Debian package sqlite3) if missing, for docs/fencing.md's tests
sqlite:
	@if ! command -v sqlite3 >/dev/null 2>&1; then \
		echo "installing sqlite3 with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sqlite3 >/dev/null; \
	fi

## cron-tools: install Debian's cron, faketime and ip if missing, for test-cron, without leaving cron's own daemon running
cron-tools:
	@if ! command -v cron >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1 || ! dpkg -s libfaketime >/dev/null 2>&1; then \
		echo "installing cron, faketime and iproute2 with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cron faketime iproute2 >/dev/null && \
		{ $(SUDO) systemctl disable --now cron >/dev/null 2>&1 || $(SUDO) service cron stop >/dev/null 2>&1 || true; }; \
	fi

## demo: start Redis on 127.0.0.1:6379 if nothing answers, install, race three copies of a job
demo: redis install
	BIN=$(DESTDIR)$(BINDIR)/with-lock tools/demo.sh

# The tests wait on TTLs, timeouts and servers far more than they compute:
# this many run side by side in each package (those that hold a bound in
# time run alone first: TestEveryTestRunsInParallelOrSaysWhyNot).
PARALLEL ?= 8

## test: go vet and the race-enabled test suite against real redis-server processes
test: redis promtool pushgateway groff shells postgresql sqlite
	$(GO) vet ./...
	$(GO) test -race -count=1 -parallel $(PARALLEL) -timeout 20m ./...

## test-servers: the tests that start a server, against each server of the matrix in turn: Redis 7.0, Valkey 8.0, Redis 8.0, Valkey 8.1 (Debian's packages, cached by tools/servers.sh; root, minutes the first time). SERVERS= picks some.
SERVERS ?= $(shell tools/servers.sh ids)
test-servers: redis promtool pushgateway groff shells postgresql sqlite
	@failed=""; for id in $(SERVERS); do \
		bin=$$(tools/servers.sh bin $$id) || exit 1; \
		echo "== $$id: $$($$bin/redis-server --version | cut -d' ' -f1-3)"; \
		PATH="$$bin:$$PATH" $(GO) test -count=1 -parallel $(PARALLEL) -timeout 20m ./... || failed="$$failed $$id"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-servers: failed on$$failed"; exit 1; fi

## test-load: the tests that load the machine on purpose (8 busy loops), alone: beside make test they would load every other test
test-load: redis
	$(GO) test -race -tags loadtest -count=1 -timeout 10m -run 'BesideBusyLoops' -v ./cmd/with-lock

## test-short: the tests that need no Redis (go test -short), in seconds, without redis-server
test-short:
	$(GO) test -short ./...

## test-cron: the README's crontab block under Debian's cron on three hosts with skewed clocks (a few minutes, as root)
test-cron: redis cron-tools
	$(GO) test -tags cronfleet -count=1 -v -timeout 15m ./internal/cronfleet

## churn: 1,000 runs killed at random moments (with-lock, its guard, both at once): no job or cgroup is left behind (as root)
churn: redis
	WITH_LOCK_CHURN_RUNS=1000 $(GO) test -count=1 -timeout 60m -run 'TestKilledRunsLeaveNoCgroupBehind' -v ./cmd/with-lock

## replace-churn: 200 runs with --replace from four racing loops, jobs that ignore SIGTERM: no two jobs ever overlap (a few minutes)
replace-churn: redis
	WITH_LOCK_REPLACEMENTS=200 $(GO) test -count=1 -timeout 30m -run 'TestReplaceStopsTheHolderBeforeTheNextRunStarts' -v ./cmd/with-lock

## bench: compare with redislock, redsync, rueidislock and floors, and time the start-up of each tracking mode under a booted systemd (beds); writes bench/BENCHMARKS.md and bench/handoff.svg
bench: redis image
	cd bench && $(GO) run ./cmd/bench

## dist: release files in dist/: binaries, tarballs, .debs (nfpm, pinned in tools/) and SHA256SUMS
dist:
	GO=$(GO) packaging/dist.sh

## check-dist: make dist, then inspect the .deb, run its binary and verify SHA256SUMS
check-dist: dist
	GO=$(GO) packaging/check-dist.sh

## image: bin/with-lock.oci.tar, the container image as an OCI archive: the static binary alone, linux/amd64 and linux/arm64, built without a daemon
IMAGE_VERSION = $(or $(VERSION),dev)
image:
	@mkdir -p bin/image
	for arch in amd64 arm64; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" \
			-o bin/image/with-lock-linux-$$arch ./cmd/with-lock || exit 1; \
	done
	cd tools && $(GO) run ./ociimage -o ../bin/with-lock.oci.tar \
		-name with-lock:$(IMAGE_VERSION) -version $(IMAGE_VERSION) -epoch $$(git log -1 --format=%ct 2>/dev/null || echo 0) \
		-binary linux/amd64=../bin/image/with-lock-linux-amd64 -binary linux/arm64=../bin/image/with-lock-linux-arm64

## beds-deps: install what the test-beds use (Debian packages) if missing: systemd-nspawn, debootstrap, podman, runc, catatonit, busybox
beds-deps:
	@if ! command -v systemd-nspawn >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1 || \
	    ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || \
	    ! command -v catatonit >/dev/null 2>&1 || ! command -v busybox >/dev/null 2>&1; then \
		echo "installing systemd-container debootstrap podman runc catatonit busybox-static with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-container debootstrap podman runc catatonit busybox-static >/dev/null; \
	fi

## beds: with-lock under a real systemd (Debian 12 booted by systemd-nspawn) and in podman containers; root, minutes the first time (module beds/)
beds: redis beds-deps image
	cd beds && $(GO) vet ./... && $(GO) test -race -count=1 -p 1 -timeout 30m ./...

clean:
	rm -rf bin dist
