#!/bin/sh
# make nvim-test: the Neovim plugin (examples/nvim) in headless Neovim (-u NONE, the plugin on
# the runtimepath), on the bridge double and the real bridge (offline). Installs Debian's neovim
# when missing (as root, with apt-get); otherwise fails saying what to install: nothing is skipped.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LIB=$ROOT/target/debug/libcursor_sdk.so
DOUBLE=$ROOT/target/debug/cursor-sdk-bridge-double
CACHE=${CURSOR_SDK_BRIDGE_CACHE:-$ROOT/.cache/bridge}
REAL=$CACHE/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge

die() { echo "nvim-test: FAILED: $*" >&2; exit 1; }
step() { echo "== nvim-test: $*"; }

if ! command -v nvim >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        step "installing neovim (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends neovim >/dev/null 2>&1 ||
            { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends neovim >/dev/null; } ||
            die "apt-get could not install neovim"
    else
        die "nvim is not installed: install Neovim >= 0.7 built with LuaJIT (e.g. sudo apt-get install -y neovim)"
    fi
fi
# The plugin is written for Neovim 0.7 (Debian 12 ships 0.7.2) and needs LuaJIT's FFI.
info=$(nvim --headless -u NONE -i NONE \
    -c 'lua io.stdout:write(string.format("%d.%d.%d %s\n", vim.version().major, vim.version().minor, vim.version().patch, jit and jit.version or "no-LuaJIT"))' \
    -c 'qa!' 2>&1) || die "nvim does not start: $info"
step "Neovim $info"
case "$info" in
0.[0-6].* | *no-LuaJIT*) die "Neovim $info: the plugin needs Neovim >= 0.7 built with LuaJIT" ;;
esac
[ -f "$LIB" ] || die "$LIB is missing: run 'cargo build --workspace' (make nvim-test does)"
[ -x "$DOUBLE" ] || die "$DOUBLE is missing: run 'cargo build --workspace' (make nvim-test does)"
[ -x "$REAL" ] || die "the real bridge $REAL is missing: run 'make fetch-bridge'"

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/cursor-sdk-nvim-test.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/home"
# What the C preprocessor makes of the header: test_cdef.lua compares the plugin's reading of it.
"${CC:-cc}" -E -P -x c include/cursor_sdk.h -o "$SCRATCH/cursor_sdk.i" || die "preprocessing include/cursor_sdk.h"

for t in cdef stream cancel tools errors real_offline; do
    start=$(date +%s)
    (cd "$SCRATCH" && env HOME="$SCRATCH/home" CURSOR_SDK_LIB="$LIB" CURSOR_SDK_HEADER="$ROOT/include/cursor_sdk.h" \
        CURSOR_SDK_TEST_DOUBLE="$DOUBLE" CURSOR_SDK_TEST_REAL_BRIDGE="$REAL" CURSOR_NVIM_HEADER_I="$SCRATCH/cursor_sdk.i" \
        timeout 180 nvim --headless -u NONE -i NONE -n --cmd "set rtp^=$ROOT/examples/nvim" \
        -c "luafile $ROOT/examples/nvim/tests/test_$t.lua") || die "examples/nvim/tests/test_$t.lua failed (exit $?)"
    step "test_$t.lua passed in $(($(date +%s) - start)) s"
done
step "all passed"
