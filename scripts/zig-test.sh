#!/usr/bin/env bash
# make zig-test: the Zig binding (bindings/zig) and its examples (examples/zig).
#
# Installs the pinned Zig from PyPI (`ziglang`) into .cache/zig-<version> (a venv) once, keeps
# Zig's global cache in .cache/zig-global (the first build compiles Zig's build runner and
# translate-c: ~3 min on 2 cores; later runs take seconds), then runs `zig build test` (unit
# tests, the bridge-double suite, tools, a Zig store and the real-bridge suite) and builds and
# runs the examples against the double. Fails loudly, never skips: no python3/venv/PyPI means
# no Zig, and that is an error.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$ROOT/.cache
BRIDGE_CACHE=${CURSOR_SDK_BRIDGE_CACHE:-$CACHE/bridge}
LIB=$ROOT/target/debug/libcursor_sdk.so
DOUBLE=$ROOT/target/debug/cursor-sdk-bridge-double
REAL=$BRIDGE_CACHE/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge
PREFIX=$ROOT/target/zig-prefix

die() { echo "zig-test: FAILED: $*" >&2; exit 1; }
step() { echo "== zig-test: $*"; }

[ -f "$LIB" ] || die "$LIB is missing: run 'cargo build --workspace' (make zig-test does)"
[ -x "$DOUBLE" ] || die "$DOUBLE is missing: run 'cargo build --workspace' (make zig-test does)"
[ -x "$REAL" ] || die "the real bridge $REAL is missing: run 'make fetch-bridge'"

. "$ROOT/scripts/zig-env.sh" # sets ZIG (installing it once) and ZIG_GLOBAL_CACHE_DIR

# An install-like prefix over the build tree: include/ and lib/ with the soname link.
mkdir -p "$PREFIX/lib"
ln -sfn "$ROOT/include" "$PREFIX/include"
ln -sf "$LIB" "$PREFIX/lib/libcursor_sdk.so"
ln -sf "$LIB" "$PREFIX/lib/libcursor_sdk.so.0"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export CURSOR_SDK_TEST_TMP=$TMP CURSOR_SDK_TEST_DOUBLE=$DOUBLE CURSOR_SDK_TEST_REAL_BRIDGE=$REAL
# For what uses the defaults (cursor.prompt, the examples): the double and a dummy key.
export CURSOR_SDK_BRIDGE_BIN=$DOUBLE CURSOR_API_KEY=test-key
unset CURSOR_SDK_BRIDGE_URL CURSOR_SDK_BRIDGE_TOKEN CURSOR_SDK_LOG

step "zig build test (Zig $ZIG_VERSION; unit, double, tools, store, real bridge)"
(cd "$ROOT/bindings/zig" && "$ZIG" build test -Dcursor-sdk-prefix="$PREFIX" --summary all) ||
    die "zig build test failed"

step "examples/zig: built as a package depending on bindings/zig, run on the double"
(cd "$ROOT/examples/zig" && "$ZIG" build -Dcursor-sdk-prefix="$PREFIX") || die "the examples do not build"
BIN=$ROOT/examples/zig/zig-out/bin
(cd "$TMP" && "$BIN/quickstart" "Say hello") >"$TMP/quickstart.out" || die "quickstart failed"
grep -q "^Hello from the bridge double.$" "$TMP/quickstart.out" || die "quickstart printed: $(cat "$TMP/quickstart.out")"
grep -q "^\[finished\]$" "$TMP/quickstart.out" || die "quickstart: no [finished] line"
echo "   quickstart: $(head -1 "$TMP/quickstart.out")"
(cd "$TMP" && "$BIN/frame-loop" "scenario:slow:50" 1500 2>/dev/null) >"$TMP/frame.out" || die "frame-loop failed"
line=$(cat "$TMP/frame.out")
echo "   frame-loop: $line"
case "$line" in *status=cancelled*) ;; *) die "frame-loop did not end cancelled: $line" ;; esac
frames=$(sed -n 's/.*frames=\([0-9]*\).*/\1/p' <<<"$line")
worst=$(sed -n 's/.*worst_frame_work_ms=\([0-9.]*\).*/\1/p' <<<"$line")
[ "${frames:-0}" -ge 60 ] || die "frame-loop rendered only ${frames:-0} frames in 1.5 s"
awk -v w="$worst" 'BEGIN { exit !(w < 8) }' || die "a frame spent ${worst} ms outside its wait (budget 16.7 ms, bound 8 ms)"
step "passed"
