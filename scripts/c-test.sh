#!/bin/sh
# The C side of `make test`: builds and runs the C suites against the bridge double and the real
# bridge, in one of three modes:
#   plain     -std=c11 -Wall -Wextra -Wpedantic -Werror; plus header (C11 + C++17 with gcc and clang,
#             clang -Weverything, included twice; its open enums and nullability in clang's AST),
#             exported-symbol and soname checks, and the C examples (built and run on the double)
#   sanitize  the same suites built with -fsanitize=address,undefined (checked to be instrumented),
#             ASAN_OPTIONS=detect_leaks=1, UBSAN_OPTIONS=halt_on_error=1
#   valgrind  memcheck on the whole suites (plus a leak canary that must be caught):
#             --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite, children not traced
# Every missing piece (tool, library, bridge) is an error that says what to do: nothing is skipped.
set -eu

MODE=${1:-plain}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

CC=${CC:-cc}
CXX=${CXX:-c++}
PROFILE_DIR=$ROOT/target/debug
LIB=$PROFILE_DIR/libcursor_sdk.so
DOUBLE=$PROFILE_DIR/cursor-sdk-bridge-double
CACHE=${CURSOR_SDK_BRIDGE_CACHE:-$ROOT/.cache/bridge}
REAL=$CACHE/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge
# The oldest supported bridge: plain mode runs the real-bridge suite on it too.
OLD=$CACHE/cursor-sdk-1.0.26/bridge/bin/cursor-sdk-bridge
OUT=$ROOT/target/c/$MODE
LIBDIR=$ROOT/target/c/lib

die() { echo "c-test ($MODE): FAILED: $*" >&2; exit 1; }
need_tool() { command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed ($2)"; }
step() { echo "== c-test ($MODE): $*"; }

need_tool "$CC" "a C compiler is required"
need_tool nm "binutils"
need_tool readelf "binutils"
[ -f "$LIB" ] || die "$LIB is missing: run 'cargo build --lib' (make c-test does)"
[ -x "$DOUBLE" ] || die "$DOUBLE is missing: run 'cargo build -p cursor-sdk-bridge-double' (make c-test does)"
[ -x "$REAL" ] || die "the real bridge $REAL is missing: run 'make fetch-bridge'"
[ -x "$OLD" ] || die "the oldest supported bridge $OLD is missing: run 'make fetch-bridge'"

# The library's soname is libcursor_sdk.so.0 while cargo writes libcursor_sdk.so: link and load
# through a directory holding both names.
mkdir -p "$OUT" "$LIBDIR"
ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so"
ln -sf "$LIB" "$LIBDIR/libcursor_sdk.so.0"

CWARN="-std=c11 -Wall -Wextra -Wpedantic -Werror"
CXXWARN="-std=c++17 -Wall -Wextra -Wpedantic -Werror"
LINK="-L$LIBDIR -lcursor_sdk -Wl,-rpath,$LIBDIR -lpthread"
case "$MODE" in
plain) EXTRA="-g -O1"; SCALE=1 ;;
sanitize) SCALE=2; EXTRA="-g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" ;;
valgrind) EXTRA="-g -O0"; SCALE=5; need_tool valgrind "apt-get install -y valgrind" ;;
*) die "unknown mode '$MODE' (plain, sanitize or valgrind)" ;;
esac

build() { # build <output> <sources...>
    o=$1
    shift
    # -Wno-nonnull: the suites pass NULL to the header's _Nonnull parameters on purpose (the
    # library must refuse it cleanly); clang would reject that at compile time.
    # shellcheck disable=SC2086
    "$CC" $CWARN -Wno-nonnull $EXTRA -I"$ROOT/include" "$@" -o "$OUT/$o" $LINK || die "compiling $*"
}

step "building the suites ($CC $EXTRA)"
build test_double tests/c/test_double.c
build test_real tests/c/test_real.c
build test_tools tests/c/test_tools.c
build test_queued_tools tests/c/test_queued_tools.c

# Runs the test binaries in a scratch directory and HOME (cursor_prompt's default client uses the
# current directory as its workspace; the double keeps its state under HOME).
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/cursor-sdk-c-test.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/home"
run() { # run <label> <command...>
    label=$1
    shift
    step "running $label"
    start=$(date +%s)
    (cd "$SCRATCH" && env HOME="$SCRATCH/home" \
        CURSOR_SDK_TEST_DOUBLE="$DOUBLE" CURSOR_SDK_TEST_REAL_BRIDGE="$REAL" \
        CURSOR_SDK_BRIDGE_BIN="$DOUBLE" CURSOR_SDK_TEST_TIME_SCALE="$SCALE" CURSOR_SDK_TEST_MODE="$MODE" "$@") || die "$label failed (exit $?)"
    echo "== c-test ($MODE): $label passed in $(($(date +%s) - start)) s"
}

case "$MODE" in
plain)
    step "header: C11 and C++17 with $CC/$CXX and clang/clang++ (-Wall -Wextra -Wpedantic -Werror), included twice"
    need_tool "$CXX" "a C++ compiler is required for the header check"
    need_tool clang "clang checks the header's annotations: apt-get install -y clang (scripts/ensure-tools.sh does)"
    need_tool clang++ "apt-get install -y clang"
    for cc in "$CC" clang; do
        cxx=$CXX
        [ "$cc" = clang ] && cxx=clang++
        "$cc" $CWARN -I"$ROOT/include" tests/c/header_c.c -o "$OUT/header_c" $LINK || die "the header does not compile as C11 with $cc"
        "$cxx" $CXXWARN -I"$ROOT/include" tests/c/header_cpp.cpp -o "$OUT/header_cpp" $LINK || die "the header does not compile as C++17 with $cxx"
        "$OUT/header_c" || die "header_c ($cc)"
        "$OUT/header_cpp" || die "header_cpp ($cxx)"
    done
    # -Weverything minus only C++98 compatibility (the header needs C++11: enum trailing commas).
    clang -std=c11 -Weverything -Werror -I"$ROOT/include" -fsyntax-only tests/c/header_c.c || die "clang -Weverything (C11)"
    clang++ -std=c++17 -Weverything -Wno-c++98-compat -Wno-c++98-compat-pedantic -Werror -I"$ROOT/include" \
        -fsyntax-only tests/c/header_cpp.cpp || die "clang++ -Weverything (C++17)"
    echo "   gcc and clang clean; clang -Weverything clean"

    step "header: what Swift imports (clang's AST: open enums, every pointer _Nullable or _Nonnull)"
    clang -std=c11 -I"$ROOT/include" -fsyntax-only -Xclang -ast-dump tests/c/header_c.c >"$OUT/header.ast" 2>&1 ||
        die "clang -ast-dump failed"
    enums=$(grep -c '^typedef enum' include/cursor_sdk.h)
    open=$(grep -c 'EnumExtensibilityAttr.* Open$' "$OUT/header.ast" || true)
    [ "$enums" -ge 4 ] && [ "$open" = "$enums" ] || die "$open of $enums enums carry enum_extensibility(open)"
    # The declared type (first quoted part; the desugared one drops nullability) of each function
    # and callback typedef; a callback typedef's own `(*)` is annotated where it is used.
    grep -E "(FunctionDecl|TypedefDecl) .* cursor_[a-z0-9_]+ '" "$OUT/header.ast" |
        sed -E "s/^.* (cursor_[a-z0-9_]+) '([^']*)'.*/\1 \2/; s/\(\*\)//" >"$OUT/header.types"
    [ "$(grep -c . "$OUT/header.types")" -ge 70 ] || die "too few declarations in the AST dump ($OUT/header.types)"
    if cut -d' ' -f2- "$OUT/header.types" | grep -E '\*($|[^ ]| [^_])|_fn([,)]| [^_])'; then
        die "pointers above carry neither _Nullable nor _Nonnull"
    fi
    for want in \
        "cursor_client_new cursor_status (const char * _Nullable, cursor_client * _Nullable * _Nonnull, cursor_error * _Nullable * _Nullable)" \
        "cursor_event_text const char * _Nullable (const cursor_event * _Nonnull)" \
        "cursor_error_message const char * _Nonnull (const cursor_error * _Nonnull)" \
        "cursor_client_free void (cursor_client * _Nullable)"; do
        grep -qxF "$want" "$OUT/header.types" || die "the AST does not have: $want"
    done
    # Passing NULL where the header allows it compiles with -Werror=nonnull (above, -Weverything);
    # passing it to the 4 non-null arguments under HEADER_NULL_TO_NONNULL must fail, each as -Wnonnull.
    if clang -std=c11 -Werror=nonnull -DHEADER_NULL_TO_NONNULL -I"$ROOT/include" -fsyntax-only tests/c/header_c.c \
        2>"$OUT/nonnull.log"; then
        die "NULL passed to _Nonnull parameters compiled"
    fi
    [ "$(grep -c 'error: null passed to a callee that requires a non-null argument \[-Werror,-Wnonnull\]' "$OUT/nonnull.log")" = 4 ] ||
        { cat "$OUT/nonnull.log"; die "expected exactly 4 -Wnonnull errors"; }
    echo "   $open open enums; $(grep -c . "$OUT/header.types") declarations fully annotated; NULL to _Nonnull rejected (4/4)"

    step "exported symbols: exactly the header's cursor_* functions"
    # Policy: every dynamic symbol the library defines must be a header function. Linker-made
    # symbols (_init, _fini, __bss_start, _edata, _end) would be tolerated if present; today
    # there are none (Rust's cdylib exports only #[no_mangle] items).
    nm -D --defined-only "$LIB" | awk '{print $NF}' | grep -v -x -E '_init|_fini|__bss_start|_edata|_end' | sort >"$OUT/exported.txt"
    grep -v '^ *//' include/cursor_sdk.h | grep -oE '(^|[ *])cursor_[a-z0-9_]+\(' | grep -oE 'cursor_[a-z0-9_]+' | sort -u >"$OUT/declared.txt"
    if ! diff -u "$OUT/declared.txt" "$OUT/exported.txt"; then
        die "exported symbols differ from the header's functions (- declared only, + exported only)"
    fi
    echo "   $(wc -l <"$OUT/exported.txt") symbols, all cursor_*, all declared"

    step "soname"
    readelf -d "$LIB" | grep -q 'Library soname: \[libcursor_sdk.so.0\]' || die "the soname is not libcursor_sdk.so.0"
    readelf -d "$OUT/test_double" | grep -q 'NEEDED.*\[libcursor_sdk.so.0\]' || die "test binaries do not record libcursor_sdk.so.0"
    echo "   SONAME libcursor_sdk.so.0; consumers record NEEDED libcursor_sdk.so.0"

    run "C suite on the bridge double" "$OUT/test_double"
    run "C suite on the real bridge" "$OUT/test_real"
    run "C suite on the oldest supported bridge (cursor-sdk 1.0.26)" env CURSOR_SDK_TEST_REAL_BRIDGE="$OLD" "$OUT/test_real"
    run "C tools and store suite" "$OUT/test_tools"
    run "C queued tools suite" "$OUT/test_queued_tools"

    step "examples (built with -Werror, run on the double)"
    for ex in quickstart stream frame_loop custom_tool; do
        "$CC" $CWARN -O1 -I"$ROOT/include" "examples/c/$ex.c" -o "$OUT/$ex" $LINK || die "compiling examples/c/$ex.c"
    done
    run "examples/c/quickstart" sh -c "\"$OUT/quickstart\" scenario:normal > out.txt && grep -qx 'Hello from the bridge double.' out.txt || { cat out.txt; exit 1; }"
    run "examples/c/stream" sh -c "\"$OUT/stream\" scenario:normal > out.txt && grep -q 'Hello from the bridge double.' out.txt || { cat out.txt; exit 1; }"
    run "examples/c/custom_tool" sh -c "\"$OUT/custom_tool\" 'scenario:tool:player_hp How healthy?' > out.txt 2> err.txt && grep -q '\"hp\":73' out.txt && grep -q 'called 1 time' err.txt || { cat out.txt err.txt; exit 1; }"
    run "examples/c/frame_loop" sh -c "\"$OUT/frame_loop\" scenario:slow:50 1000 | tee out.txt && grep -q 'cancelled=1 status=4' out.txt"
    ;;
sanitize)
    step "checking the build is instrumented"
    for b in test_double test_real test_tools test_queued_tools; do
        nm "$OUT/$b" | grep -q '__asan_init' || die "$b has no __asan_init: not built with AddressSanitizer"
        nm "$OUT/$b" | grep -q '__ubsan_handle_' || die "$b has no __ubsan_handle_*: not built with UBSan"
    done
    # A canary: a deliberate heap overflow must be caught, so a silent sanitizer cannot pass.
    printf '#include <stdlib.h>\nint main(void){volatile char *p=malloc(4);p[4]=1;free((void*)p);return 0;}\n' >"$OUT/canary.c"
    "$CC" -g -fsanitize=address,undefined "$OUT/canary.c" -o "$OUT/canary" || die "compiling the canary"
    if ASAN_OPTIONS=detect_leaks=1 "$OUT/canary" 2>"$OUT/canary.log"; then die "the ASan canary was not caught"; fi
    grep -q 'heap-buffer-overflow' "$OUT/canary.log" || die "the ASan canary did not report a heap-buffer-overflow"
    # A leak canary: an error object leaked on purpose must be reported by LeakSanitizer, so
    # leaks of allocations made inside the (uninstrumented) Rust library are visible too.
    "$CC" $CWARN $EXTRA -I"$ROOT/include" tests/c/leak_canary.c -o "$OUT/leak_canary" $LINK || die "compiling the leak canary"
    if ASAN_OPTIONS=detect_leaks=1 "$OUT/leak_canary" >"$OUT/leak_canary.log" 2>&1; then die "the leak canary was not reported"; fi
    grep -q 'detected memory leaks' "$OUT/leak_canary.log" || die "LeakSanitizer did not report the leak canary"
    echo "   instrumented (__asan_init, __ubsan_handle_*); heap-overflow canary and leak canary caught"
    # No LeakSanitizer suppressions are needed: the library's process-lifetime allocations
    # (statics, the default client of cursor_prompt, thread-locals) stay reachable at exit.
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    run "C suite on the bridge double (ASan+UBSan)" "$OUT/test_double"
    run "C suite on the real bridge (ASan+UBSan)" "$OUT/test_real"
    run "C tools and store suite (ASan+UBSan)" "$OUT/test_tools"
    run "C queued tools suite (ASan+UBSan)" "$OUT/test_queued_tools"
    ;;
valgrind)
    VG="valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --trace-children=no --child-silent-after-fork=yes --quiet"
    # A canary: an error object leaked on purpose must fail memcheck (definite leak, exit 1).
    "$CC" $CWARN $EXTRA -I"$ROOT/include" tests/c/leak_canary.c -o "$OUT/leak_canary" $LINK || die "compiling the leak canary"
    # shellcheck disable=SC2086
    if $VG "$OUT/leak_canary" >"$OUT/leak_canary.log" 2>&1; then die "valgrind did not fail on the leak canary"; fi
    grep -q 'definitely lost' "$OUT/leak_canary.log" || die "valgrind did not report the leak canary as definitely lost"
    echo "   leak canary caught (definitely lost, exit 1)"
    # The whole suites: fast enough under memcheck (~15 s on the double, ~35 s on the real bridge).
    # shellcheck disable=SC2086
    run "C suite on the bridge double (valgrind)" $VG "$OUT/test_double"
    # shellcheck disable=SC2086
    run "C suite on the real bridge (valgrind)" $VG "$OUT/test_real"
    # shellcheck disable=SC2086
    run "C tools and store suite (valgrind)" $VG "$OUT/test_tools"
    # shellcheck disable=SC2086
    run "C queued tools suite (valgrind)" $VG "$OUT/test_queued_tools"
    ;;
esac
step "all passed"
