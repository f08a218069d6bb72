#!/usr/bin/env bash
# The Swift side of `make test`: builds bindings/swift (and examples/swift) with zero warnings
# under complete strict-concurrency checking and runs its suite against the bridge double and the
# real bridge, inside the trixie chroot of scripts/swift-toolchain.sh (Swift 6 needs glibc 2.38;
# this host has 2.36). The test binaries load the host-built libcursor_sdk.so; the worktree and
# the bridge cache are bind-mounted at their own paths, so every absolute path stays valid.
# All mounts live in a private mount namespace: none outlives this script.
#   usage: swift-test.sh [swift test args, e.g. --filter DoubleTests]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
die() { echo "swift-test: FAILED: $*" >&2; exit 1; }

LIB=$ROOT/target/debug/libcursor_sdk.so
DOUBLE=$ROOT/target/debug/cursor-sdk-bridge-double
CACHE=$(realpath -m "${CURSOR_SDK_BRIDGE_CACHE:-$ROOT/.cache/bridge}")
REAL=$CACHE/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge
[ -f "$LIB" ] || die "$LIB is missing: run 'cargo build --workspace' (make swift-test does)"
[ -x "$DOUBLE" ] || die "$DOUBLE is missing: run 'cargo build --workspace' (make swift-test does)"
[ -x "$REAL" ] || die "the real bridge $REAL is missing: run 'make fetch-bridge'"
[ "$(id -u)" = 0 ] || die "the Swift suite runs in a chroot (unshare, mount, chroot): run it as root"

CHROOT=$("$ROOT/scripts/swift-toolchain.sh") || die "no Swift toolchain (see above)"

# The soname is libcursor_sdk.so.0 while cargo writes libcursor_sdk.so: link and load through a
# directory holding both names (as scripts/c-test.sh does).
LIBDIR=$ROOT/target/swift/lib
mkdir -p "$LIBDIR"
ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so"
ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so.0"
# SwiftPM finds the C module through pkg-config (as after `make install`): a .pc for the build
# tree. SwiftPM drops -Wl,-rpath from pkg-config, so the rpath is passed with -Xlinker below.
mkdir -p "$LIBDIR/pkgconfig"
printf 'Name: cursor_sdk\nDescription: cursor_sdk (build tree)\nVersion: %s\nCflags: -I%s\nLibs: -L%s -lcursor_sdk\n' \
    "$(sed -n 's/^#define CURSOR_SDK_VERSION "\(.*\)"$/\1/p' include/cursor_sdk.h)" "$ROOT/include" "$LIBDIR" \
    >"$LIBDIR/pkgconfig/cursor_sdk.pc"

# Paths to bind-mount at the same place inside the chroot: the worktree, plus the bridge cache
# when it lives elsewhere.
MOUNTS=("$ROOT")
case "$CACHE/" in "$ROOT"/*) ;; *) MOUNTS+=("$CACHE") ;; esac

FLAGS=(-Xlinker -rpath -Xlinker "$LIBDIR"
    -Xswiftc -strict-concurrency=complete -Xswiftc -warnings-as-errors)
IN=(/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TMPDIR=/tmp
    PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
    CURSOR_SDK_TEST_DOUBLE="$DOUBLE" CURSOR_SDK_TEST_REAL_BRIDGE="$REAL"
    CURSOR_SDK_BRIDGE_BIN="$DOUBLE" CURSOR_API_KEY=test-dummy-key
    CURSOR_SDK_SWIFT_EXAMPLES="$ROOT/examples/swift")

mount_cmds=""
for m in "${MOUNTS[@]}"; do
    mkdir -p "$CHROOT$m"
    mount_cmds+="mount --bind $(printf '%q' "$m") $(printf '%q' "$CHROOT$m"); "
done

q() { printf '%q ' "$@"; }
# ConcurrencyTests measures that readers leave the cooperative pool free, so it runs alone: the
# other tests make blocking calls (bridge start-up) from async test functions.
TESTS="swift test --skip-build --skip ConcurrencyTests && exec swift test --skip-build --filter ConcurrencyTests"
[ $# -eq 0 ] || TESTS="exec swift test --skip-build $(q "$@")"
# The example is built first: the suite runs it on the double.
INNER="set -e; swift --version 2>&1 | head -1
cd $(q "$ROOT/examples/swift/stream") && swift build $(q "${FLAGS[@]}")
cd $(q "$ROOT/bindings/swift") && swift build --build-tests $(q "${FLAGS[@]}")
$TESTS"

echo "== swift-test: building and testing bindings/swift and examples/swift in $CHROOT"
exec unshare --mount --propagation private bash -c "
    set -e
    mount -t proc proc $(q "$CHROOT/proc")
    $mount_cmds
    exec chroot $(q "$CHROOT") $(q "${IN[@]}") bash -c $(q "$INNER")"
