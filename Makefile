# The project's front door. `make demo` and `make test` work on a fresh machine.
CARGO ?= cargo
export CURSOR_SDK_BRIDGE_CACHE ?= $(CURDIR)/.cache/bridge

.PHONY: all build test lint cross-check demo fetch-bridge header clean bench \
	c-tools c-build c-test c-sanitize c-valgrind c-all install consumer-test

PREFIX ?= /usr/local

all: build

build:
	$(CARGO) build --workspace

## Installs the pinned bridge (PyPI cursor-sdk==1.1.0) and the oldest supported one (1.0.26), sha256-checked, into $(CURSOR_SDK_BRIDGE_CACHE).
fetch-bridge:
	@./scripts/fetch-bridge.sh

## Every test of the project: formatting, lints (also of the macOS and Windows code paths), unit
## and integration tests (real bridge + double), then the C suites (plain, ASan+UBSan, valgrind),
## the install/consumer test, and a quick benchmark run (which never fails on a number, only on a
## crash).
test: fetch-bridge lint cross-check
	$(CARGO) test --workspace --all-targets
	$(MAKE) --no-print-directory c-all
	$(MAKE) --no-print-directory cpp-test
	$(MAKE) --no-print-directory zig-test
	$(MAKE) --no-print-directory nvim-test
	$(MAKE) --no-print-directory swift-test
	$(MAKE) --no-print-directory bench QUICK=1
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=15

## The library type-checked and clippy-clean for macOS (aarch64) and Windows, which CI cannot run.
cross-check:
	@./scripts/cross-check.sh

## --- C ---------------------------------------------------------------------------------------
## Installs what the C suites need when missing (cmake, valgrind, pkg-config, gcc/g++; apt, as root).
c-tools:
	@./scripts/ensure-tools.sh

## The debug library and the bridge double the C suites run against.
c-build:
	$(CARGO) build --workspace

## C11 suites (-Wall -Wextra -Wpedantic -Werror) on the double and the real bridge, header checks
## (C11 + C++17), exported symbols, soname, and the examples in examples/c.
c-test: c-tools fetch-bridge c-build
	@./scripts/c-test.sh plain

## The C suites again under AddressSanitizer + UBSan (leak detection on).
c-sanitize: c-tools fetch-bridge c-build
	@./scripts/c-test.sh sanitize

## The C suites (a subset) under valgrind memcheck: zero errors, zero definite leaks.
c-valgrind: c-tools fetch-bridge c-build
	@./scripts/c-test.sh valgrind

c-all: c-test c-sanitize c-valgrind consumer-test

## Installs the release library: make install PREFIX=/opt/cursor [DESTDIR=...] (see bindings/c/README.md).
install:
	$(CARGO) build --release --lib
	@PREFIX="$(PREFIX)" ./scripts/install.sh

## Installs into a temp prefix and builds a program outside the tree with pkg-config and CMake.
consumer-test: c-tools c-build
	@./scripts/consumer-test.sh

## --- Swift ---------------------------------------------------------------------------------
## The Swift binding (bindings/swift) and examples/swift, built warning-free (complete concurrency
## checking) and tested on the double and the real bridge, in a Debian trixie chroot with swiftlang
## 6.0.3 (.cache/swift-trixie, made on first use: about 2 min, 2.6 GB; needs root).
.PHONY: swift-test
swift-test: fetch-bridge c-build
	@./scripts/swift-test.sh

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## Starts the bridge and prints its version; with CURSOR_API_KEY also the account, models and a run.
demo: fetch-bridge
	@$(CARGO) run --quiet --example demo -- $(if $(MODEL),--model "$(MODEL)") $(if $(PROMPT),"$(PROMPT)")

## Regenerates include/cursor_sdk.h from src/ffi (cbindgen runs in build.rs).
header:
	$(CARGO) build --lib
	@cp "$$(ls -t target/debug/build/cursor-sdk-*/out/cursor_sdk.h | head -1)" include/cursor_sdk.h
	@echo "include/cursor_sdk.h updated"

## Benchmarks (release build) vs the raw-socket floor and the official Python SDK; see BENCHMARKS.md.
## Prints a table plus JSON (also in target/bench/results.json), then the bindings' lines (each
## against the C ABI in the same run). QUICK=1: a small, fast version.
BENCH_VENV ?= $(CURDIR)/.cache/bench-venv
# The Swift line of the benchmark (bench/run.py's Swift block); empty to leave it out.
export CURSOR_SDK_BENCH_SWIFT ?= $(CURDIR)/scripts/swift-bench.sh
BENCH_BIN := $(CURDIR)/target/bench
CC ?= cc
bench: fetch-bridge
	$(CARGO) build --release -p cursor-sdk -p cursor-sdk-bridge-double
	@mkdir -p $(BENCH_BIN)/lib
	@ln -sf $(CURDIR)/target/release/libcursor_sdk.so $(BENCH_BIN)/lib/libcursor_sdk.so.0
	$(CC) -O2 -Wall -Wextra -Iinclude bench/bench_sdk.c -L$(CURDIR)/target/release -lcursor_sdk \
		-Wl,-rpath,$(BENCH_BIN)/lib -o $(BENCH_BIN)/bench_sdk
	$(CC) -O2 -Wall -Wextra bench/raw_client.c -o $(BENCH_BIN)/raw_client
	@test -f $(BENCH_VENV)/.cursor-sdk-1.1.0 || { python3 -m venv $(BENCH_VENV) && \
		$(BENCH_VENV)/bin/pip install --quiet --disable-pip-version-check \
			--find-links $(CURSOR_SDK_BRIDGE_CACHE)/wheels cursor-sdk==1.1.0 && \
		touch $(BENCH_VENV)/.cursor-sdk-1.1.0; }
	@$(if $(CURSOR_SDK_BENCH_SWIFT),$(CURSOR_SDK_BENCH_SWIFT) build)
	python3 bench/run.py $(if $(QUICK),--quick) \
		--bridge $(CURSOR_SDK_BRIDGE_CACHE)/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge
	@$(MAKE) --no-print-directory zig-bench QUICK=$(QUICK)
	$(CC) -O2 -Wall -Wextra -Iinclude bench/warm_start.c -L$(CURDIR)/target/release -lcursor_sdk \
		-Wl,-rpath,$(BENCH_BIN)/lib -o $(BENCH_BIN)/warm_start
	python3 bench/warm.py $(if $(QUICK),--quick) \
		--bridge $(CURSOR_SDK_BRIDGE_CACHE)/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge

clean:
	$(CARGO) clean

## --- Zig -------------------------------------------------------------------------------------
## The Zig binding (bindings/zig) and examples/zig: Zig from PyPI (pinned) cached in .cache/.
.PHONY: zig-test
zig-test: fetch-bridge c-build
	@./scripts/zig-test.sh

## Stream throughput through the Zig layer vs the C ABI in one run (release build; QUICK=1: small).
.PHONY: zig-bench
zig-bench: fetch-bridge
	$(CARGO) build --release -p cursor-sdk -p cursor-sdk-bridge-double
	@QUICK="$(QUICK)" ./scripts/zig-bench.sh

## --- C++ -------------------------------------------------------------------------------------
## The header-only C++17 binding (bindings/cpp/cursor_sdk.hpp): its suite built with exceptions and
## with -fno-exceptions -fno-rtti, both under ASan+UBSan, on the double and the real bridge; the
## examples in examples/cpp; an out-of-tree consumer of the installed cursor_sdk::cpp (CMake, pkg-config).
.PHONY: cpp-test
cpp-test: c-tools fetch-bridge c-build
	@./scripts/cpp-test.sh

## --- Neovim ----------------------------------------------------------------------------------
## The Neovim plugin (examples/nvim, LuaJIT FFI) in headless Neovim 0.7+ (Debian's neovim,
## installed when missing) on the double and the real bridge.
.PHONY: nvim-test
nvim-test: fetch-bridge c-build
	@./scripts/nvim-test.sh

## --- Fuzzing ---------------------------------------------------------------------------------
## Every fuzz target (fuzz/, cargo-fuzz on stable, cached in .cache/) for FUZZ_SECONDS each
## (default 300) from its committed seeds; fails on a crash (input in fuzz/artifacts/). `make
## test` runs each for 15 s. FUZZ_TARGETS="frame options" picks some; FUZZ_LINT=1 adds clippy.
.PHONY: fuzz
fuzz:
	@FUZZ_SECONDS="$(FUZZ_SECONDS)" ./scripts/fuzz.sh

## --- Concurrency and soak ----------------------------------------------------------------------
## tests/concurrency.rs (16 threads on one client: runs, tools, cancels, management calls) for
## TSAN_SECS (default 120) and the library's unit tests under ThreadSanitizer on stable
## (RUSTC_BOOTSTRAP=1, target/tsan); fails on any report. Not in `make test` (a cold TSan build
## alone takes minutes here). See RELIABILITY.md.
.PHONY: tsan
tsan:
	@TSAN_SECS="$(TSAN_SECS)" ./scripts/tsan.sh

## SOAK_MINUTES (default 30) of mixed runs, cancels, tool calls, bridge kills and client restarts
## on the double, sampled every 10 s into target/soak/soak.csv and plotted to target/soak/soak.png
## (gnuplot); fails unless RSS/threads/fds stay flat and nothing is left behind. Not in `make test`.
.PHONY: soak
soak:
	@SOAK_MINUTES="$(SOAK_MINUTES)" ./scripts/soak.sh
