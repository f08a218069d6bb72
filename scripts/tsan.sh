#!/bin/sh
# make tsan: tests/concurrency.rs (16 threads on one client, TSAN_SECS, default 120) and the
# library's unit tests under ThreadSanitizer, on the stable toolchain: RUSTC_BOOTSTRAP=1 unlocks -Zsanitizer=thread and the
# stable sysroot ships the TSan runtime. There is no rust-src, so std is not rebuilt: its generic
# code is instrumented where our crates instantiate it, its precompiled parts are not (hence
# -Cunsafe-allow-abi-mismatch). Any report fails the target (halt_on_error, exit code 66).
# The bridge double is built apart without the sanitizer: it is another process, not under test.
# One unit test is skipped: it builds a 100,000-deep message by quadratic copying, which takes
# minutes under TSan's memcpy checks and has no threads.
set -eu
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
host=$(rustc -vV | sed -n 's/^host: //p')

$cargo build -q -p cursor-sdk-bridge-double
double="$PWD/target/debug/cursor-sdk-bridge-double"
[ -x "$double" ] || { echo "tsan: FAILED: no bridge double at $double" >&2; exit 1; }

export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer"
export CARGO_TARGET_DIR="$PWD/target/tsan"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export CURSOR_SDK_DOUBLE_BIN="$double"
export CURSOR_SDK_CONCURRENCY_SECS="${TSAN_SECS:-120}"
$cargo test --target "$host" --lib --test concurrency -- --show-output \
    --skip struct_json::tests::nesting_is_bounded_not_a_stack_overflow
