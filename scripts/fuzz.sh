#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/fuzz_targets/*.rs, cargo-fuzz + libFuzzer) for FUZZ_SECONDS each
# (default 300), each from its committed seeds (fuzz/seeds/<target>) plus the corpus earlier
# runs grew (fuzz/target/corpus/<target>, not committed). Fails on the first crash, leaving
# the input in fuzz/artifacts/<target>/ and the command that reproduces it in the output.
#
# Stable Rust: cargo-fuzz builds with `--sanitizer none` (the address sanitizer needs nightly
# flags; the code under test is safe Rust, whose bugs are panics, which libFuzzer catches).
# cargo-fuzz is installed once into .cache/cargo-fuzz.
#
# FUZZ_SECONDS=N   seconds per target
# FUZZ_TARGETS="a b"   a subset
# FUZZ_LINT=1      also `cargo clippy -D warnings` on the fuzz crate (formatting is always checked)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-300}
TARGETS=${FUZZ_TARGETS:-frame struct_json ready_manifest connect_error callback options}
CARGO_FUZZ_VERSION=0.13.2
FUZZ_ROOT=$ROOT/.cache/cargo-fuzz

if ! "$FUZZ_ROOT/bin/cargo-fuzz" --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into .cache/cargo-fuzz"
    cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --root "$FUZZ_ROOT"
fi
export PATH="$FUZZ_ROOT/bin:$PATH"

cd fuzz
cargo fmt --check
if [ "${FUZZ_LINT:-}" = 1 ]; then
    cargo clippy --all-targets -- -D warnings
fi
echo "== building the fuzz targets"
cargo fuzz build --sanitizer none

# The manifest target's scratch files (one directory per process).
trap 'rm -rf "$ROOT/fuzz/target/scratch"' EXIT
summary=()
for t in $TARGETS; do
    [ -d "seeds/$t" ] || { echo "no seeds for fuzz target $t (fuzz/seeds/$t)" >&2; exit 1; }
    mkdir -p "target/corpus/$t"
    log=target/fuzz-$t.log
    echo "== fuzz $t for ${SECONDS_EACH}s"
    if ! cargo fuzz run --sanitizer none "$t" "target/corpus/$t" "seeds/$t" -- \
        -max_total_time="$SECONDS_EACH" -print_final_stats=1 -rss_limit_mb=2048 -timeout=20 \
        >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz $t: FAILED (input in fuzz/artifacts/$t/, log in fuzz/$log)" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    corpus=$(find "target/corpus/$t" -type f | wc -l)
    summary+=("fuzz $t: ${runs:-?} runs in ${SECONDS_EACH}s, no crash (corpus $corpus inputs)")
    echo "${summary[-1]}"
done
printf '%s\n' "${summary[@]}"
echo "fuzz: ${#summary[@]} passed, 0 failed"
