#!/bin/sh
# Consumer test: `make install` into a temp prefix, then build a small C program OUTSIDE the tree
# three ways (pkg-config shared, pkg-config --static, CMake find_package(cursor_sdk)) and run each:
# it prints cursor_sdk_version() and pings the bridge double.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-cc}
DOUBLE=$ROOT/target/debug/cursor-sdk-bridge-double
die() { echo "consumer-test: FAILED: $*" >&2; exit 1; }
step() { echo "== consumer-test: $*"; }
for t in "$CC" pkg-config cmake readelf; do
    command -v "$t" >/dev/null 2>&1 || die "'$t' is not installed (scripts/ensure-tools.sh installs it)"
done
[ -x "$DOUBLE" ] || die "$DOUBLE is missing: run 'cargo build -p cursor-sdk-bridge-double'"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cursor-sdk-consumer.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix
step "make install PREFIX=$PREFIX"
make -C "$ROOT" --no-print-directory install PREFIX="$PREFIX" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; die "make install"; }
tail -n 12 "$WORK/install.log"

L=$PREFIX/lib
[ "$(readlink "$L/libcursor_sdk.so")" = libcursor_sdk.so.0 ] || die "libcursor_sdk.so does not point to libcursor_sdk.so.0"
[ "$(readlink "$L/libcursor_sdk.so.0")" = libcursor_sdk.so.0.1.0 ] || die "libcursor_sdk.so.0 does not point to libcursor_sdk.so.0.1.0"
readelf -d "$L/libcursor_sdk.so.0.1.0" | grep -q 'soname: \[libcursor_sdk.so.0\]' || die "installed library soname"

# The consumer lives outside the source tree and only sees the install prefix.
APP=$WORK/app
mkdir -p "$APP"
cat >"$APP/main.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <cursor_sdk.h>

int main(int argc, char **argv) {
    char options[1024];
    cursor_client *client;
    cursor_error *err;
    if (argc < 3) return 2;
    printf("cursor_sdk %s (header %s)\n", cursor_sdk_version(), CURSOR_SDK_VERSION);
    if (strcmp(cursor_sdk_version(), CURSOR_SDK_VERSION) != 0) return 3;
    snprintf(options, sizeof options, "{\"bridgePath\":\"%s\",\"workspace\":\"%s\"}", argv[1], argv[2]);
    if (cursor_client_new(options, &client, &err) != CURSOR_OK || cursor_client_ping(client, &err) != CURSOR_OK) {
        fprintf(stderr, "error: %s\n", cursor_error_message(err));
        cursor_error_free(err);
        return 1;
    }
    puts("ping ok");
    cursor_client_free(client);
    return 0;
}
C
cat >"$APP/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(cursor_sdk_consumer C)
find_package(cursor_sdk 0.1 REQUIRED)
add_executable(consumer_shared main.c)
target_link_libraries(consumer_shared PRIVATE cursor_sdk::cursor_sdk)
add_executable(consumer_static main.c)
target_link_libraries(consumer_static PRIVATE cursor_sdk::cursor_sdk_static)
CM
mkdir -p "$APP/ws"
export PKG_CONFIG_PATH=$L/pkgconfig
runapp() { # runapp <label> <binary>
    out=$("$2" "$DOUBLE" "$APP/ws") || die "$1: the program failed: $out"
    echo "$out" | sed 's/^/   /'
    echo "$out" | grep -q '^ping ok$' || die "$1: no ping"
}

step "pkg-config (shared): $CC main.c \$(pkg-config --cflags --libs cursor_sdk)"
# shellcheck disable=SC2046
"$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror "$APP/main.c" -o "$APP/pc_shared" $(pkg-config --cflags --libs cursor_sdk) || die "pkg-config shared build"
readelf -d "$APP/pc_shared" | grep -q 'NEEDED.*\[libcursor_sdk.so.0\]' || die "pc_shared does not need libcursor_sdk.so.0"
LD_LIBRARY_PATH=$L runapp "pkg-config shared" "$APP/pc_shared"

step "pkg-config (static): $CC main.c \$(pkg-config --cflags cursor_sdk) -l:libcursor_sdk.a \$(pkg-config --static --libs-only-other/-l)"
# -lcursor_sdk would pick the .so; a static link names the archive.
# shellcheck disable=SC2046
"$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror "$APP/main.c" -o "$APP/pc_static" $(pkg-config --cflags cursor_sdk) \
    -L"$L" -l:libcursor_sdk.a $(pkg-config --static --libs cursor_sdk | sed 's/-lcursor_sdk//') || die "pkg-config static build"
if readelf -d "$APP/pc_static" | grep -q 'libcursor_sdk'; then die "pc_static still needs the shared library"; fi
runapp "pkg-config static" "$APP/pc_static"

step "CMake: find_package(cursor_sdk 0.1) -> cursor_sdk::cursor_sdk and cursor_sdk::cursor_sdk_static"
cmake -S "$APP" -B "$APP/build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log"; die "cmake configure"; }
cmake --build "$APP/build" >>"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log"; die "cmake build"; }
readelf -d "$APP/build/consumer_shared" | grep -q 'NEEDED.*\[libcursor_sdk.so.0\]' || die "consumer_shared does not need libcursor_sdk.so.0"
runapp "cmake shared" "$APP/build/consumer_shared"
runapp "cmake static" "$APP/build/consumer_static"

step "CMake refuses an incompatible version request"
sed -i 's/find_package(cursor_sdk 0.1 REQUIRED)/find_package(cursor_sdk 1.0 REQUIRED)/' "$APP/CMakeLists.txt"
if cmake -S "$APP" -B "$APP/build2" -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/cmake2.log" 2>&1; then die "find_package(cursor_sdk 1.0) accepted 0.1.0"; fi
echo "   find_package(cursor_sdk 1.0) rejected, as it should be"
step "all passed"
