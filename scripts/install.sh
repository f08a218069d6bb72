#!/bin/sh
# Installs the release build: `make install PREFIX=/usr/local [DESTDIR=/staging] [LIBDIR=...]`.
#   $LIBDIR/libcursor_sdk.so.X.Y.Z  + libcursor_sdk.so.X (soname) + libcursor_sdk.so (linker name)
#   $LIBDIR/libcursor_sdk.a
#   $PREFIX/include/cursor_sdk.h + cursor_sdk.hpp (the header-only C++17 binding)
#   $LIBDIR/pkgconfig/cursor_sdk.pc
#   $LIBDIR/cmake/cursor_sdk/cursor_sdkConfig.cmake + cursor_sdkConfigVersion.cmake
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
DESTDIR=${DESTDIR:-}
BUILD=${CURSOR_SDK_INSTALL_FROM:-$ROOT/target/release}

die() { echo "install: FAILED: $*" >&2; exit 1; }
case "$PREFIX" in /*) ;; *) die "PREFIX must be an absolute path (got '$PREFIX')" ;; esac
for f in "$BUILD/libcursor_sdk.so" "$BUILD/libcursor_sdk.a" include/cursor_sdk.h bindings/cpp/cursor_sdk.hpp; do
    [ -f "$f" ] || die "$f is missing: run 'cargo build --release --lib' (make install does)"
done

VERSION=$(sed -n 's/^#define CURSOR_SDK_VERSION "\(.*\)"$/\1/p' include/cursor_sdk.h)
ABI=$(sed -n 's/^#define CURSOR_SDK_ABI_VERSION \([0-9]*\)$/\1/p' include/cursor_sdk.h)
MAJOR=${VERSION%%.*}
MINOR=$(echo "$VERSION" | cut -d. -f2)
[ -n "$VERSION" ] && [ -n "$ABI" ] || die "cannot read the version from include/cursor_sdk.h"
SONAME=$(readelf -d "$BUILD/libcursor_sdk.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$SONAME" = "libcursor_sdk.so.$ABI" ] || die "the built library's soname is '$SONAME', not libcursor_sdk.so.$ABI"
# The static library's system dependencies (what rustc reports for this target).
NATIVE=${CURSOR_SDK_NATIVE_STATIC_LIBS:-"-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"}
NATIVE_CMAKE=$(echo "$NATIVE" | sed 's/-l//g; s/  */;/g')

L=$DESTDIR$LIBDIR
install -d "$L" "$DESTDIR$INCLUDEDIR" "$L/pkgconfig" "$L/cmake/cursor_sdk"
install -m 0755 "$BUILD/libcursor_sdk.so" "$L/libcursor_sdk.so.$VERSION"
ln -sf "libcursor_sdk.so.$VERSION" "$L/libcursor_sdk.so.$ABI"
ln -sf "libcursor_sdk.so.$ABI" "$L/libcursor_sdk.so"
install -m 0644 "$BUILD/libcursor_sdk.a" "$L/libcursor_sdk.a"
install -m 0644 include/cursor_sdk.h "$DESTDIR$INCLUDEDIR/cursor_sdk.h"
install -m 0644 bindings/cpp/cursor_sdk.hpp "$DESTDIR$INCLUDEDIR/cursor_sdk.hpp"

subst() {
    sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@LIBDIR@|$LIBDIR|g" -e "s|@INCLUDEDIR@|$INCLUDEDIR|g" \
        -e "s|@VERSION@|$VERSION|g" -e "s|@VERSION_MAJOR@|$MAJOR|g" -e "s|@VERSION_MINOR@|$MINOR|g" \
        -e "s|@ABI@|$ABI|g" -e "s|@LIBDIR_NAME@|$(basename "$LIBDIR")|g" -e "s|@SIZEOF_VOID_P@|$(getconf LONG_BIT | awk '{print $1/8}')|g" \
        -e "s|@NATIVE_STATIC_LIBS@|$NATIVE|g" -e "s|@NATIVE_STATIC_LIBS_CMAKE@|$NATIVE_CMAKE|g" "$1" >"$2"
}
subst pkgconfig/cursor_sdk.pc.in "$L/pkgconfig/cursor_sdk.pc"
subst cmake/cursor_sdkConfig.cmake.in "$L/cmake/cursor_sdk/cursor_sdkConfig.cmake"
subst cmake/cursor_sdkConfigVersion.cmake.in "$L/cmake/cursor_sdk/cursor_sdkConfigVersion.cmake"
chmod 0644 "$L/pkgconfig/cursor_sdk.pc" "$L/cmake/cursor_sdk/"*.cmake
echo "installed cursor_sdk $VERSION into $DESTDIR$PREFIX:"
(cd "$DESTDIR$PREFIX" && find . -name '*cursor_sdk*' | sort | sed 's/^/  /')
