# RSA — see README.md. `make demo` and `make test` run on a fresh Debian 12
# machine as root; they install what they need.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/rsa
PKGS  := util-linux passwd procps shellcheck bc lua5.1 slurmctld slurmd slurm-client munge curl
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all build deps install test lint unit fuzz demo demo-slurm bench-copy clean

all: build

# Debian packages and Go modules. Go itself comes with the machine image;
# without it, Debian's golang-go and GOTOOLCHAIN=auto fetch the toolchain
# go.mod names from the Go module proxy.
deps:
	@missing=$$(for p in $(PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v $(GO) >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go; }
	$(GO) mod download

build: deps
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/rsa

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

lint: deps
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	shellcheck scripts/*.sh scripts/slurm-up scripts/slurm-down contrib/slurm/prolog contrib/slurm/epilog .ci/run
	luac5.1 -p contrib/slurm/burst_buffer.lua

# All tests, the root ones included, always under CI=true: a test that
# cannot run fails, and a skip anywhere fails the run (scripts/go-test.sh).
test: lint
	GO=$(GO) scripts/go-test.sh

unit:
	$(GO) test -count=1 ./internal/...

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

demo: build
	scripts/demo.sh

# The thesis' example job through real Slurm (burst_buffer/lua), submitted
# with sbatch by a normal user.
demo-slurm: build
	scripts/demo-slurm.sh

# Benchmarks, not tests: rsa copy against cp, rsync, tar, fpsync and dd.
bench-copy: build
	@for p in rsync fpart; do dpkg -s $$p >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rsync fpart; break; }; done
	scripts/bench-copy.sh

clean:
	rm -rf bin
