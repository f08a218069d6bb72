#!/bin/sh
# make cpp-test: the C++17 binding (bindings/cpp/cursor_sdk.hpp).
#   1. the header alone with g++ and clang++, -std=c++17 -Wall -Wextra -Wpedantic -Werror, with
#      exceptions and with -fno-exceptions -fno-rtti;
#   2. tests/cpp/test_cpp.cpp built twice (exceptions on; -fno-exceptions -fno-rtti), both under
#      ASan+UBSan (checked to be instrumented, and checked to really lack exceptions and RTTI),
#      run on the bridge double and the real bridge (both builds at once: two cores);
#   3. examples/cpp (quickstart, frame_loop) built with -Werror and run on the double;
#   4. a consumer outside the tree: scripts/install.sh into a temp prefix (from the debug build),
#      then CMake find_package(cursor_sdk) + cursor_sdk::cpp, and pkg-config, built and run.
# Every missing piece is an error that says what to do: nothing is skipped.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CXX=${CXX:-c++}
LIB=$ROOT/target/debug/libcursor_sdk.so
DOUBLE=$ROOT/target/debug/cursor-sdk-bridge-double
CACHE=${CURSOR_SDK_BRIDGE_CACHE:-$ROOT/.cache/bridge}
REAL=$CACHE/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge
OUT=$ROOT/target/cpp
LIBDIR=$OUT/lib

die() { echo "cpp-test: FAILED: $*" >&2; exit 1; }
step() { echo "== cpp-test: $*"; }
for t in "$CXX" clang++ nm cmake pkg-config; do
    command -v "$t" >/dev/null 2>&1 || die "'$t' is not installed (make c-tools / scripts/ensure-tools.sh installs it)"
done
[ -f "$LIB" ] || die "$LIB is missing: run 'cargo build --workspace' (make cpp-test does)"
[ -f "$ROOT/target/debug/libcursor_sdk.a" ] || die "target/debug/libcursor_sdk.a is missing: run 'cargo build --workspace'"
[ -x "$DOUBLE" ] || die "$DOUBLE is missing: run 'cargo build --workspace' (make cpp-test does)"
[ -x "$REAL" ] || die "the real bridge $REAL is missing: run 'make fetch-bridge'"

# The library's soname is libcursor_sdk.so.0 while cargo writes libcursor_sdk.so.
mkdir -p "$OUT" "$LIBDIR"
ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so"
ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so.0"
WARN="-std=c++17 -Wall -Wextra -Wpedantic -Werror"
INC="-I$ROOT/include -I$ROOT/bindings/cpp"
LINK="-L$LIBDIR -lcursor_sdk -Wl,-rpath,$LIBDIR -lpthread"
NOEXC="-fno-exceptions -fno-rtti"
# -O0: a third of -O1's compile time, and the sanitizers catch as much.
SAN="-g -O0 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
START=$(date +%s)

step "the header alone: $CXX and clang++, with exceptions and with $NOEXC"
printf '#include <cursor_sdk.hpp>\n#include <cursor_sdk.hpp>\nint main() { return cursor::version_matches() ? 0 : 1; }\n' >"$OUT/header_only.cpp"
for cxx in "$CXX" clang++; do
    for mode in "-fexceptions" "$NOEXC"; do
        # shellcheck disable=SC2086
        "$cxx" $WARN $mode $INC -fsyntax-only "$OUT/header_only.cpp" || die "cursor_sdk.hpp does not compile with $cxx $mode"
    done
done

step "building the suite twice with ASan+UBSan: exceptions on (test_exc), $NOEXC (test_noexc)"
# shellcheck disable=SC2086
"$CXX" $WARN $SAN -fexceptions $INC tests/cpp/test_cpp.cpp -o "$OUT/test_exc" $LINK >"$OUT/build_exc.log" 2>&1 &
pid_exc=$!
# UBSan's vptr check needs RTTI.
# shellcheck disable=SC2086
"$CXX" $WARN $SAN $NOEXC -fno-sanitize=vptr $INC tests/cpp/test_cpp.cpp -o "$OUT/test_noexc" $LINK >"$OUT/build_noexc.log" 2>&1 &
pid_noexc=$!
wait $pid_exc || { cat "$OUT/build_exc.log"; die "building test_exc"; }
wait $pid_noexc || { cat "$OUT/build_noexc.log"; die "building test_noexc"; }
for b in test_exc test_noexc; do
    nm "$OUT/$b" | grep -q '__asan_init' || die "$b has no __asan_init: not built with AddressSanitizer"
    nm "$OUT/$b" | grep -q '__ubsan_handle_' || die "$b has no __ubsan_handle_*: not built with UBSan"
done
# The exception build throws cursor::Exception (its typeinfo is there); the other has neither.
nm -C "$OUT/test_exc" | grep -q 'typeinfo for cursor::Exception' || die "test_exc lacks cursor::Exception's typeinfo"
nm "$OUT/test_exc" | grep -q '__gxx_personality_v0' || die "test_exc has no exception personality"
if nm "$OUT/test_noexc" | grep -q '__gxx_personality_v0\|__cxa_throw'; then die "test_noexc uses exceptions"; fi
if nm -C "$OUT/test_noexc" | grep -q 'typeinfo for cursor::'; then die "test_noexc has RTTI for cursor:: types"; fi
echo "   instrumented; test_exc throws cursor::Exception, test_noexc has no exception or RTTI symbol"

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/cursor-sdk-cpp-test.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
# The process-wide default client of cursor::prompt and the examples: the double, in the
# current directory, with a dummy key.
run_env() { # run_env <dir> <command...>
    d=$1
    shift
    mkdir -p "$d/home"
    (cd "$d" && exec env -u CURSOR_SDK_BRIDGE_URL -u CURSOR_SDK_BRIDGE_TOKEN -u CURSOR_SDK_LOG \
        HOME="$d/home" CURSOR_SDK_TEST_DOUBLE="$DOUBLE" CURSOR_SDK_TEST_REAL_BRIDGE="$REAL" \
        CURSOR_SDK_BRIDGE_BIN="$DOUBLE" CURSOR_API_KEY=test-key CURSOR_SDK_TEST_TIME_SCALE=2 \
        ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$@")
}

# Both builds run at once, in the background (they mostly wait on bridges: the real bridge's
# offline turn takes ~15 s), while the examples and the consumer are built and run below.
step "running both builds in the background (double + real bridge, ASan+UBSan, leak detection on)"
run_env "$SCRATCH/exc" "$OUT/test_exc" >"$OUT/run_exc.log" 2>&1 &
pid_exc=$!
run_env "$SCRATCH/noexc" "$OUT/test_noexc" >"$OUT/run_noexc.log" 2>&1 &
pid_noexc=$!
trap 'kill $pid_exc $pid_noexc 2>/dev/null; rm -rf "$SCRATCH"' EXIT

step "examples/cpp (-Werror; frame_loop without exceptions and RTTI), run on the double"
# shellcheck disable=SC2086
"$CXX" $WARN -O1 $INC examples/cpp/quickstart.cpp -o "$OUT/quickstart" $LINK || die "compiling examples/cpp/quickstart.cpp"
# shellcheck disable=SC2086
"$CXX" $WARN -O1 $NOEXC $INC examples/cpp/frame_loop.cpp -o "$OUT/frame_loop" $LINK || die "compiling examples/cpp/frame_loop.cpp"
run_env "$SCRATCH/ex" "$OUT/quickstart" "scenario:normal hi" >"$OUT/quickstart.out" || { cat "$OUT/quickstart.out"; die "quickstart failed"; }
grep -qx 'Hello from the bridge double.' "$OUT/quickstart.out" || die "quickstart printed: $(cat "$OUT/quickstart.out")"
echo "   quickstart: $(head -1 "$OUT/quickstart.out")"
run_env "$SCRATCH/ex" "$OUT/frame_loop" scenario:slow:50 1000 </dev/null >"$OUT/frame_loop.out" 2>"$OUT/frame_loop.err" ||
    { cat "$OUT/frame_loop.out" "$OUT/frame_loop.err"; die "frame_loop failed"; }
line=$(cat "$OUT/frame_loop.out")
echo "   frame_loop: $line"
case "$line" in *"cancelled=1 status=cancelled"*) ;; *) die "frame_loop did not end cancelled: $line" ;; esac
grep -q 'chunk 3' "$OUT/frame_loop.err" || die "frame_loop rendered no text"
frames=$(echo "$line" | sed -n 's/.*frames=\([0-9]*\).*/\1/p')
[ "${frames:-0}" -ge 40 ] || die "frame_loop rendered only ${frames:-0} frames in about 1 s (60 expected; bound 40 for a loaded machine)"

step "consumer outside the tree: install (from the debug build), CMake cursor_sdk::cpp and pkg-config"
PREFIX=$SCRATCH/prefix
PREFIX=$PREFIX CURSOR_SDK_INSTALL_FROM=$ROOT/target/debug ./scripts/install.sh >"$OUT/install.log" 2>&1 ||
    { cat "$OUT/install.log"; die "scripts/install.sh"; }
[ -f "$PREFIX/include/cursor_sdk.hpp" ] || die "cursor_sdk.hpp was not installed next to cursor_sdk.h"
APP=$SCRATCH/app
mkdir -p "$APP/ws"
cat >"$APP/main.cpp" <<'CPP'
#include <cstdio>
#include <cursor_sdk.hpp>

int main(int argc, char **argv) {
    if (argc < 3 || !cursor::version_matches()) return 2;
    std::string options = "{\"bridgePath\":" + cursor::json_quote(argv[1]) + ",\"workspace\":" + cursor::json_quote(argv[2]) + "}";
    auto client = cursor::Client::create(options);
    auto ping = client ? client->ping() : cursor::Result<void>(client.error());
    if (!ping) return std::fprintf(stderr, "error: %s\n", ping.error().message().data()), 1;
    std::printf("cursor_sdk %s: ping ok\n", cursor::version().data());
    return 0;
}
CPP
cat >"$APP/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(cursor_sdk_cpp_consumer CXX)
# Asks for less than the binding needs: cursor_sdk::cpp must raise it to C++17.
set(CMAKE_CXX_STANDARD 11)
find_package(cursor_sdk 0.1 REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE cursor_sdk::cpp)
target_compile_options(consumer PRIVATE -Wall -Wextra -Wpedantic -Werror -fno-exceptions -fno-rtti)
CM
cmake -S "$APP" -B "$APP/build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >"$OUT/cmake.log" 2>&1 ||
    { cat "$OUT/cmake.log"; die "cmake configure"; }
cmake --build "$APP/build" -- VERBOSE=1 >>"$OUT/cmake.log" 2>&1 || { cat "$OUT/cmake.log"; die "cmake build"; }
grep -q -- '-std=gnu++17' "$OUT/cmake.log" || die "cursor_sdk::cpp did not raise the consumer's C++11 to C++17"
"$APP/build/consumer" "$DOUBLE" "$APP/ws" | grep -q 'ping ok' || die "the CMake consumer failed"
echo "   CMake: find_package(cursor_sdk 0.1) + cursor_sdk::cpp -> built (raised to C++17, -fno-exceptions -fno-rtti) and pinged the double"
# shellcheck disable=SC2046
"$CXX" -std=c++17 -Wall -Wextra -Werror "$APP/main.cpp" -o "$APP/pc" $(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --cflags --libs cursor_sdk) ||
    die "pkg-config build"
LD_LIBRARY_PATH=$PREFIX/lib "$APP/pc" "$DOUBLE" "$APP/ws" | grep -q 'ping ok' || die "the pkg-config consumer failed"
echo "   pkg-config: c++ -std=c++17 main.cpp \$(pkg-config --cflags --libs cursor_sdk) -> built and pinged the double"
step "the suites' results"
rc_exc=0
rc_noexc=0
wait $pid_exc || rc_exc=$?
wait $pid_noexc || rc_noexc=$?
trap 'rm -rf "$SCRATCH"' EXIT
for b in exc noexc; do
    echo "--- test_$b"
    sed 's/^/   /' "$OUT/run_$b.log"
done
[ $rc_exc = 0 ] || die "test_exc failed (exit $rc_exc)"
[ $rc_noexc = 0 ] || die "test_noexc failed (exit $rc_noexc)"
grep -q 'exceptions on, rtti on' "$OUT/run_exc.log" || die "test_exc did not run with exceptions and RTTI"
grep -q 'exceptions off, rtti off' "$OUT/run_noexc.log" || die "test_noexc did not run without exceptions and RTTI"
grep -q '^ok   double_throwing_layer' "$OUT/run_exc.log" || die "test_exc did not run the throwing layer's test"
step "all passed in $(($(date +%s) - START)) s"
