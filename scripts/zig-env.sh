# Sourced by scripts/zig-*.sh: installs the pinned Zig from PyPI (`ziglang`) into
# $ROOT/.cache/zig-<version> once, sets ZIG to its binary and ZIG_GLOBAL_CACHE_DIR to
# $ROOT/.cache/zig-global. Needs ROOT, CACHE, die and step. Fails loudly when Zig cannot be had.
ZIG_VERSION=0.17.1
VENV=$CACHE/zig-$ZIG_VERSION
if [ ! -f "$VENV/.ready" ]; then
    step "installing Zig $ZIG_VERSION from PyPI (ziglang) into $VENV"
    command -v python3 >/dev/null || die "python3 is needed to install Zig from PyPI"
    if ! python3 -c 'import ensurepip' 2>/dev/null; then
        [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
            die "python3 cannot make a venv: install python3-venv"
        (apt-get install -y --no-install-recommends python3-venv >/dev/null 2>&1 ||
            { apt-get update >/dev/null && apt-get install -y --no-install-recommends python3-venv >/dev/null; }) ||
            die "apt-get could not install python3-venv"
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV" || die "python3 -m venv $VENV failed"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "ziglang==$ZIG_VERSION" ||
        die "pip could not install ziglang==$ZIG_VERSION from PyPI"
    touch "$VENV/.ready"
fi
ZIG=$("$VENV/bin/python" -c 'import ziglang, os; print(os.path.dirname(ziglang.__file__))')/zig
[ -x "$ZIG" ] || die "no zig binary in the ziglang package ($ZIG)"
[ "$("$ZIG" version)" = "$ZIG_VERSION" ] || die "zig reports $("$ZIG" version), expected $ZIG_VERSION"
export ZIG_GLOBAL_CACHE_DIR=$CACHE/zig-global
