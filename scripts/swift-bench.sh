#!/usr/bin/env bash
# The Swift line of `make bench`, run inside the Swift chroot (scripts/swift-toolchain.sh):
#   swift-bench.sh build          release build of bench/swift/SwiftBench on target/release's library
#   swift-bench.sh run ARGS...    runs swift-bench ARGS (see its main.swift) and prints its JSON
# The bridges it measures are attached by URL, so they run on the host; the host's temp directory
# (where bench/run.py keeps the workspace) is bind-mounted over the chroot's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "swift-bench: FAILED: $*" >&2; exit 1; }
LIB=$ROOT/target/release/libcursor_sdk.so
[ -f "$LIB" ] || die "$LIB is missing: run 'cargo build --release' (make bench does)"
CHROOT=$("$ROOT/scripts/swift-toolchain.sh") || die "no Swift toolchain (see above)"
LIBDIR=$ROOT/target/swift/release-lib
PKG=$ROOT/bench/swift/SwiftBench
q() { printf '%q ' "$@"; }

case "${1:-}" in
build)
    mkdir -p "$LIBDIR"
    ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so"
    ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so.0"
    INNER="cd $(q "$PKG") && swift build -c release -Xcc -I$(q "$ROOT/include") -Xlinker -L$(q "$LIBDIR") \
-Xlinker -rpath -Xlinker $(q "$LIBDIR") 2>&1 | grep -v '^\[' >&2; test \${PIPESTATUS[0]} = 0" ;;
run)
    shift
    INNER="exec $(q "$PKG/.build/release/swift-bench" "$@")" ;;
*) die "usage: swift-bench.sh build | run ARGS..." ;;
esac

mkdir -p "$CHROOT$ROOT"
TMP=$(realpath "${TMPDIR:-/tmp}")
mkdir -p "$CHROOT$TMP"
exec unshare --mount --propagation private bash -c "
    set -e
    mount -t proc proc $(q "$CHROOT/proc")
    mount --bind $(q "$ROOT") $(q "$CHROOT$ROOT")
    mount --bind $(q "$TMP") $(q "$CHROOT$TMP")
    exec chroot $(q "$CHROOT") /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        bash -c $(q "$INNER")"
