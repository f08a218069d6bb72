#!/usr/bin/env bash
# make zig-bench: stream throughput through the Zig layer against the C ABI, in the same process
# and run (bench/zig), on the release library and the release bridge double. Prints one JSON
# line (ns per event for both, and their median ratio; target <= 1.2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$ROOT/.cache
die() { echo "zig-bench: FAILED: $*" >&2; exit 1; }
step() { echo "== zig-bench: $*" >&2; }
LIB=$ROOT/target/release/libcursor_sdk.so
DOUBLE=$ROOT/target/release/cursor-sdk-bridge-double
[ -f "$LIB" ] && [ -x "$DOUBLE" ] || die "run 'cargo build --release -p cursor-sdk -p cursor-sdk-bridge-double' (make zig-bench does)"
. "$ROOT/scripts/zig-env.sh"
PREFIX=$ROOT/target/bench/zig-prefix
mkdir -p "$PREFIX/lib"
ln -sfn "$ROOT/include" "$PREFIX/include"
ln -sf "$LIB" "$PREFIX/lib/libcursor_sdk.so"
ln -sf "$LIB" "$PREFIX/lib/libcursor_sdk.so.0"
(cd "$ROOT/bench/zig" && "$ZIG" build -Dcursor-sdk-prefix="$PREFIX" >&2) || die "bench/zig does not build"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EVENTS=${EVENTS:-$([ -n "${QUICK:-}" ] && echo 2000 || echo 200000)}
ROUNDS=${ROUNDS:-$([ -n "${QUICK:-}" ] && echo 1 || echo 5)}
OPTS=$(printf '{"bridgePath":"%s","workspace":"%s","apiKey":"k","bridgeEnv":{"HOME":"%s","CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON":"[{\\"id\\":\\"composer-2\\"}]"}}' "$DOUBLE" "$TMP" "$TMP")
step "$ROUNDS round(s) of $EVENTS events, C ABI and Zig layer alternating"
(cd "$TMP" && "$ROOT/bench/zig/zig-out/bin/zig-bench" "$OPTS" "$EVENTS" "$ROUNDS") || die "zig-bench failed"
