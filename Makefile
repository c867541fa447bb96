# RSA — see README.md. `make demo` and `make test` run on a fresh Debian 12
# machine as root; they install what they need.
SHELL := /bin/bash
BIN   := bin/rsa
LAB   := bin/rsa-lab
PKGS  := util-linux iproute2 passwd procps shellcheck bc lua5.1 lua5.4 lua-socket slurmctld slurmd slurm-client munge curl \
	glusterfs-server glusterfs-client nftables iperf3 fio rsync bonnie++ erofs-utils \
	systemd chromium e2fsprogs rpm
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

# Go: GO if given, else the go in PATH if it is 1.21 or later, else
# bookworm-backports' golang-1.23 (Debian 12's own golang-go, 1.19, cannot
# read go.mod), which make deps installs. From 1.21 on, go fetches the
# toolchain go.mod names through the Go module proxy when it is older
# (GOTOOLCHAIN=auto, unless the environment says otherwise).
GO_BACKPORT := /usr/lib/go-1.23/bin/go
ifeq ($(origin GO),undefined)
GO := $(shell v=$$(cd / && GOTOOLCHAIN=local go env GOVERSION 2>/dev/null) && \
	[ "$$(printf '%s\n' go1.21 "$$v" | sort -V | head -1)" = go1.21 ] && echo go || echo $(GO_BACKPORT))
endif
ifeq ($(GO),$(GO_BACKPORT))
# The scripts that build rsa themselves (cluster-up, slurm-up) run go.
export PATH := $(dir $(GO_BACKPORT)):$(PATH)
endif
export GOTOOLCHAIN ?= auto

.PHONY: all build build-lab deps install man pkg-stage deb rpm test test-long test-slurm test-slurm-latest test-slurm-matrix test-cluster test-load lint unit test-kernel fuzz demo demo-slurm demo-cluster bench-copy profile-copy bench-cluster build-ior evidence clean

all: build

# Debian packages, Go and Go modules. Without a Go of 1.21 or later (GO,
# above), golang-1.23-go comes from bookworm-backports, added to apt's
# sources (on the mirror the machine's bookworm comes from) if missing;
# the first go command then fetches the toolchain go.mod names.
deps:
	@missing=$$(for p in $(PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing; \
	fi
	@if [ "$(GO)" = "$(GO_BACKPORT)" ] && [ ! -x "$(GO_BACKPORT)" ]; then \
		targets=$$(apt-get indextargets --format '$$(REPO_URI) $$(RELEASE) $$(TARGET_OF)'); \
		if ! grep -q ' bookworm-backports deb$$' <<<"$$targets"; then \
			mirror=$$(awk '$$2 == "bookworm" && $$3 == "deb" { print $$1; exit }' <<<"$$targets"); \
			[ -n "$$mirror" ] || { echo "deps: apt has no bookworm source to add bookworm-backports beside: add bookworm-backports, or install Go 1.21 or later"; exit 1; }; \
			echo "adding bookworm-backports ($$mirror) to apt's sources, for golang-1.23-go"; \
			echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $$mirror bookworm-backports main" >/etc/apt/sources.list.d/bookworm-backports.list; \
		fi; \
		echo "installing: golang-1.23-go (bookworm-backports)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends golang-1.23-go; \
	fi
	$(GO) mod download
	@$(GO) version

build: deps
	$(GO) build -ldflags "-X github.com/rsa-hpc/rsa/internal/version.version=$(VERSION)" -o $(BIN) ./cmd/rsa

# The lab, a binary of its own beside rsa: the simulator (rsa-lab sim) and
# the seeds' benchmarks (rsa-lab bench). Neither rsa nor its packages
# carry it; the benchmarks run jobs through the rsa beside it.
build-lab: deps
	$(GO) build -ldflags "-X github.com/rsa-hpc/rsa/internal/version.version=$(VERSION)" -o $(LAB) ./cmd/rsa-lab

# The binary where burst_buffer.lua and the docs expect it, and what an
# administrator installs beside Slurm. DESTDIR stages a package.
PREFIX ?= /usr/local
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/rsa
	install -D -m 0644 contrib/slurm/burst_buffer.lua $(DESTDIR)$(PREFIX)/share/rsa/slurm/burst_buffer.lua
	install -D -m 0755 contrib/slurm/prolog $(DESTDIR)$(PREFIX)/share/rsa/slurm/prolog
	install -D -m 0755 contrib/slurm/epilog $(DESTDIR)$(PREFIX)/share/rsa/slurm/epilog
	install -d $(DESTDIR)$(PREFIX)/share/doc/rsa
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/rsa/

# Man pages and shell completions, written by the binary from its own
# commands (rsa gen-docs), so that rsa help, man and the shells agree. Dated
# by the commit, not the build: a rebuild of a commit writes the same pages.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
man: build
	rm -rf bin/man bin/completions
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(BIN) gen-docs --man bin/man --completions bin/completions

# The packages' common part, in bin/pkg (packaging/nfpm.yaml says what goes
# where). nfpm runs at a pinned version through go run, so it is not a
# dependency in go.mod (go run caches the built tool). The binary must run
# on the oldest glibc the packages are for, RHEL 9's 2.34 (Debian 12 has
# 2.36): scripts/check-glibc.sh fails naming the symbols that need a newer
# one, and writes the newest glibc version the binary needs to
# bin/pkg/glibc, which each package then requires. The Slurm scripts call
# rsa by path; the packages' copies are rewritten to /usr/bin/rsa, and the
# build fails if one is missed. scripts/copyright.sh lists every Go module
# compiled in, with its license's text.
GLIBC_MAX ?= 2.34
NFPM      := $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
pkg-stage: man
	rm -rf bin/pkg
	install -d bin/pkg/slurm bin/pkg/man
	scripts/check-glibc.sh $(BIN) $(GLIBC_MAX) > bin/pkg/glibc
	for f in burst_buffer.lua prolog epilog; do \
		sed 's|/usr/local/bin/rsa|/usr/bin/rsa|g' contrib/slurm/$$f > bin/pkg/slurm/$$f || exit 1; \
	done
	@if grep -n /usr/local bin/pkg/slurm/*; then echo "$@: the lines above still name /usr/local: fix the sed in the Makefile"; exit 1; fi
	for f in bin/man/*.1; do gzip -9 -n -c $$f > bin/pkg/man/$${f##*/}.gz || exit 1; done
	GO='$(GO)' scripts/copyright.sh $(BIN) > bin/pkg/copyright

# The Debian package, bin/rsa_<version>_<arch>.deb. git describe gives
# a3f9c1d[-dirty] or v1.2[-3-ga3f9c1d][-dirty]; Debian wants a version that
# starts with a digit and orders builds: 0.0~gita3f9c1d[+dirty],
# 1.2[+3.ga3f9c1d][+dirty].
DEB_VERSION    := $(shell echo '$(VERSION)' | sed -E 's/^v([0-9])/\1/; s/-dirty$$/+dirty/; s/-([0-9]+)-g([0-9a-f]+)/+\1.g\2/; s/^([0-9a-f]{7,}([+]dirty)?)$$/0.0~git\1/; s/^([^0-9])/0.0~\1/')
# Expanded when deb runs, after deps has installed Go.
DEB_ARCH        = $(shell $(GO) env GOARCH)
DEB             = bin/rsa_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_MAINTAINER ?= RSA maintainers <root@localhost>
deb: pkg-stage
	dpkg --validate-version '$(DEB_VERSION)'
	rm -f bin/rsa_*.deb
	glibc=$$(cat bin/pkg/glibc) && \
	PKG_VERSION='$(DEB_VERSION)' PKG_ARCH='$(DEB_ARCH)' PKG_MAINTAINER='$(DEB_MAINTAINER)' PKG_LIBC="$${glibc:+libc6 (>= $$glibc)}" \
		$(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DEB)

# The RPM, for RHEL/Rocky/Alma 9 and later: bin/rsa-<version>-1.<arch>.rpm,
# from the same packaging/nfpm.yaml (its overrides: rpm, and the contents
# marked packager: rpm). RPM's version may not hold a '-' (it would split
# version from release) and orders '~' before anything, as Debian does:
# DEB_VERSION with any '-' left (a tag such as v1.2-rc1) made a '~', so
# 0.0~gita3f9c1d[+dirty] between releases, 1.2 at a tag v1.2; the release
# is 1. Each Go module compiled in is named as RPM's convention for
# bundled code asks, Provides: bundled(golang(MODULE)) = VERSION (its
# version without the v, a '-' made '_'): written from go version -m into
# the config's rpm overrides, at its @bundled-provides@ line. The checks
# after the build read the package with rpm (make deps installs it).
RPM_VERSION  := $(subst -,~,$(DEB_VERSION))
RPM_ARCH      = $(shell $(GO) env GOARCH | sed 's/^amd64$$/x86_64/; s/^arm64$$/aarch64/')
RPM           = bin/rsa-$(RPM_VERSION)-1.$(RPM_ARCH).rpm
RPM_PACKAGER ?= $(DEB_MAINTAINER)
rpm: pkg-stage
	@[[ '$(RPM_VERSION)' =~ ^[0-9][A-Za-z0-9._+~^]*$$ ]] || { echo "rpm: RPM_VERSION '$(RPM_VERSION)' is not an RPM version (a digit first, then letters, digits and . _ + ~ ^)"; exit 1; }
	rm -f bin/rsa-*.rpm
	$(GO) version -m $(BIN) | awk '$$1 == "dep" { v = $$3; sub(/^v/, "", v); gsub(/-/, "_", v); print "      - bundled(golang(" $$2 ")) = " v }' > bin/pkg/provides
	sed '/@bundled-provides@/r bin/pkg/provides' packaging/nfpm.yaml > bin/pkg/nfpm-rpm.yaml
	@[ "$$(grep -c '^ *- bundled(golang(' bin/pkg/nfpm-rpm.yaml)" = "$$(wc -l < bin/pkg/provides)" ] || { echo "rpm: packaging/nfpm.yaml lacks its @bundled-provides@ line under overrides: rpm: provides:"; exit 1; }
	glibc=$$(cat bin/pkg/glibc) && \
	PKG_VERSION='$(RPM_VERSION)' PKG_ARCH='$(RPM_ARCH)' PKG_MAINTAINER='$(RPM_PACKAGER)' PKG_LIBC="$${glibc:+glibc >= $$glibc}" \
		$(NFPM) package --config bin/pkg/nfpm-rpm.yaml --packager rpm --target $(RPM)
	@nvr=$$(rpm -qp --qf '%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}' $(RPM)) && [ "$$nvr" = 'rsa-$(RPM_VERSION)-1.$(RPM_ARCH)' ] || { echo "rpm: rpm reads $(RPM) as $$nvr, not rsa-$(RPM_VERSION)-1.$(RPM_ARCH)"; exit 1; }
	@[ "$$(rpm -qp --provides $(RPM) | grep -c '^bundled(golang(')" = "$$(wc -l < bin/pkg/provides)" ] || { echo "rpm: $(RPM) does not provide every Go module compiled in (bin/pkg/provides)"; exit 1; }

# The Prometheus alert rules (contrib/prometheus) are checked and their
# tests run with promtool (scripts/promtool.sh: Debian's, fetched once,
# unless one is on PATH); the Go tests check that every series and label
# value the rules and the Grafana dashboard (contrib/grafana) name is one
# that RSA exports, which promtool cannot know.
lint: deps
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	shellcheck scripts/*.sh packaging/postinst packaging/prerm packaging/postrm packaging/rpm/post packaging/rpm/preun packaging/rpm/postun scripts/slurm-up scripts/slurm-down scripts/cluster-up scripts/cluster-down contrib/slurm/prolog contrib/slurm/epilog .ci/run
	luac5.1 -p contrib/slurm/burst_buffer.lua && luac5.4 -p contrib/slurm/burst_buffer.lua
	scripts/promtool.sh check rules contrib/prometheus/rsa-alerts.yml
	scripts/promtool.sh test rules contrib/prometheus/rsa-alerts_test.yml
	$(GO) test -count=1 -run '^(TestDashboardNamesExist|TestAlertLabelValues|TestAlertAnnotations|TestGrafanaDashboard|TestScanPromQL)$$' ./internal/metrics/

# All tests, the root ones included, always under CI=true: a test that
# cannot run fails, and a skip anywhere fails the run (scripts/go-test.sh).
test: lint
	GO=$(GO) scripts/go-test.sh

# make test and the cases it leaves out to stay within its time: the whole
# node-loss matrix, production Gluster timers, soaks, the load test with a
# slurmctld restart, the benchmarks at their quick profiles' sizes. Tests
# read RSA_TEST_LONG (testutil.Long) to choose the cases they register; as
# in make test, a skip fails the run.
test-long: lint
	GO=$(GO) RSA_TEST_LONG=1 scripts/go-test.sh

# SchedMD's Slurm SLURM (its source in ../shared/tools, SLURM_TARBALL to
# change) linked with Lua SLURM_LUA, built once into /var/cache/rsa-test (a
# few minutes), and the whole Slurm test suite against it. make test keeps
# Debian's 22.05. test-slurm-matrix runs every release in SLURM_MATRIX
# (VERSION:LUA), one after another, and says which passed.
SLURM        ?= 25.11.7
SLURM_LUA    ?= 5.1
SLURM_MATRIX ?= 23.11.11:5.4 24.05.8:5.1 24.11.7:5.4 25.05.8:5.1 25.11.7:5.4
test-slurm: build
	prefix=$$(scripts/build-slurm.sh $(SLURM) $(SLURM_LUA) | tail -1) && \
		CI=true RSA_SLURM_PREFIX=$$prefix $(GO) test -count=1 -v -timeout 20m ./test/slurm/

test-slurm-latest: test-slurm

test-slurm-matrix: build
	@failed=""; for v in $(SLURM_MATRIX); do \
		start=$$(date +%s); \
		if $(MAKE) --no-print-directory test-slurm SLURM=$${v%%:*} SLURM_LUA=$${v##*:} > bin/test-slurm-$${v%%:*}.log 2>&1; \
		then echo "slurm $${v%%:*} (Lua $${v##*:}): passed in $$(( $$(date +%s) - start )) s"; \
		else echo "slurm $${v%%:*} (Lua $${v##*:}): FAILED in $$(( $$(date +%s) - start )) s (bin/test-slurm-$${v%%:*}.log)"; failed="$$failed $$v"; fi; \
	done; [ -z "$$failed" ] || { echo "test-slurm-matrix: failed:$$failed"; exit 1; }

# The emulated cluster's suite alone (test/cluster, as make test runs it),
# with GLUSTER=10 or 11 first making this machine's GlusterFS that release
# (scripts/gluster-version.sh: 11 is bookworm-backports' 11.1; it replaces
# the installed packages, down as well as up). make test uses whichever is
# installed, Debian 12's 10.3 on a fresh machine.
GLUSTER ?=
test-cluster: build
	@[ -z "$(GLUSTER)" ] || scripts/gluster-version.sh $(GLUSTER)
	cd test/cluster && $(GO) test -c -o $(CURDIR)/bin/cluster.test . && \
		CI=true RSA_TEST_BIN=$(CURDIR)/$(BIN) $(CURDIR)/bin/cluster.test -test.v -test.count=1 -test.parallel 2 \
		-test.timeout 40m -test.skip '^Test[A-Za-z0-9_]*Long$$'

# The load tests at full size: 1,000 Slurm jobs of four users
# through RSA, once undisturbed and once with rsa serve killed three times
# and slurmctld restarted; each logs a "load: name=..." line with its
# throughput, latencies and the daemon's CPU and memory. make test runs
# both with 40 jobs. RSA_LOAD_SEED replays a run's mix of jobs.
# The hooks' latency under a burst of 500 submissions (with and without
# lua-socket) and an 8 GiB stage-in beside another job's stage-out at
# limits.stage_bwlimit come with it (make test: 100 and 1 GiB).
LOAD_JOBS ?= 1000
test-load: build
	CI=true RSA_LOAD_JOBS=$(LOAD_JOBS) RSA_HOOK_BURST=500 RSA_HOOK_FLOOR=1 RSA_PRESSURE_INPUT=8G \
		$(GO) test -count=1 -v -timeout 5h -run '^(TestLoad|TestHookLatencyLong|TestStagingUnderPressure)$$' ./test/slurm/

# The internal packages' tests, through make test's runner: several of them
# mount and unshare as root, so they run one package at a time, under
# CI=true (a skip fails).
unit:
	GO=$(GO) scripts/go-test.sh ./internal/...

# The mount tests (internal/mount, and the local engine's in
# internal/engine) on Debian 12's own kernel, 6.1: no listmount, no
# file-backed erofs. scripts/test-kernel.sh boots bookworm's
# linux-image-amd64 under QEMU (TCG, no KVM needed) with a busybox
# initramfs and runs the tests in it as root under CI=true; the kernel
# package is fetched once into /var/cache/rsa-test-kernel. About 15 s once
# fetched; RSA_KERNEL_TEST_ENV passes environment to the tests
# (RSA_MOUNT_TABLE=mountinfo), RSA_KERNEL_TEST_ARGS arguments.
test-kernel: deps
	GO=$(GO) scripts/test-kernel.sh

# IOR and mdtest (third_party/ior, GPL-2.0, run as separate programs),
# built once into /var/cache/rsa-bench: about 10 s, plus Debian's Open MPI
# and autotools the first time. Prints the prefix last.
build-ior:
	scripts/build-ior.sh

# docs/evidence.md: the seeds' experiments at the sources' sizes (rsa-lab bench
# --profile full), each result beside the source's number. It takes the
# machine for a long while; make test runs each quick profile.
evidence: build build-lab
	scripts/evidence.sh

# Fuzzing, not tests: each fuzz target in turn for FUZZTIME. A crasher is
# written to the package's testdata/fuzz, which go test then replays.
# FuzzUnpack minimizes what it finds for 2s, not 60s: its inputs are
# archives of kilobytes, minimized one byte at a time, and every new input
# it finds would otherwise cost a minute of fuzzing.
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/slurm/
	$(GO) test -run '^$$' -fuzz '^FuzzExpandHosts$$' -fuzztime $(FUZZTIME) ./internal/slurm/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/config/
	$(GO) test -run '^$$' -fuzz '^FuzzUnpack$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./internal/stage/
	$(GO) test -run '^$$' -fuzz '^FuzzSubmitRequest$$' -fuzztime $(FUZZTIME) ./internal/api/
	$(GO) test -run '^$$' -fuzz '^FuzzHookRequest$$' -fuzztime $(FUZZTIME) ./internal/api/
	$(GO) test -run '^$$' -fuzz '^FuzzEscape$$' -fuzztime $(FUZZTIME) ./internal/textsafe/

demo: build build-lab
	scripts/demo.sh

# The thesis' example job through real Slurm (burst_buffer/lua), submitted
# with sbatch by a normal user.
demo-slurm: build
	scripts/demo-slurm.sh

# The thesis' example job across hosts: an emulated cluster of a control
# host, 3 RSA hosts (GlusterFS) and 2 compute hosts (scripts/cluster-up),
# a 2-node job whose RAMDISK spans 2 RSA hosts (docs/cluster.md).
demo-cluster: build
	scripts/demo-cluster.sh

# The gluster engine measured on the emulated cluster (scripts/bench-cluster.sh):
# construct and destroy over 1-3 RSA hosts, stage-in throughput, RAM per job.
bench-cluster: build
	scripts/bench-cluster.sh

# Benchmarks, not tests: rsa copy against cp, rsync, tar, fpsync and dd, and
# against bench/floor.c, the machine's limit (built with cc by the script).
bench-copy: build
	@for p in rsync fpart gcc libc6-dev; do dpkg -s $$p >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rsync fpart gcc libc6-dev; break; }; done
	scripts/bench-copy.sh

# Where a small-file copy's time goes, per syscall, for rsa copy, the floor
# and the best peers (perf stat and perf record; dataset (b) of bench-copy).
profile-copy: build
	@for p in linux-perf gcc libc6-dev; do dpkg -s $$p >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-perf gcc libc6-dev; break; }; done
	scripts/profile-copy.sh

clean:
	rm -rf bin
