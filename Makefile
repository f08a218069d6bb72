# The project's front door. `make demo` and `make test` work on a fresh machine.
CARGO ?= cargo
export CURSOR_SDK_BRIDGE_CACHE ?= $(CURDIR)/.cache/bridge

.PHONY: all build test lint demo fetch-bridge header clean

all: build

build:
	$(CARGO) build --workspace

## Installs the pinned bridge (PyPI cursor-sdk==1.1.0, sha256-checked) into $(CURSOR_SDK_BRIDGE_CACHE).
fetch-bridge:
	@./scripts/fetch-bridge.sh

## Every test of the project: formatting, lints, unit and integration tests (real bridge + double).
test: fetch-bridge lint
	$(CARGO) test --workspace --all-targets

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

clean:
	$(CARGO) clean
