#!/bin/sh
# Installs the pinned cursor-sdk-bridge (inside PyPI cursor-sdk==1.1.0) and the oldest supported
# one (cursor-sdk==1.0.26, which the old-bridge tests run against) into the cache, each at
# <cache>/cursor-sdk-<version>/bridge/bin/cursor-sdk-bridge. Idempotent, and offline once cached.
# The cache is $CURSOR_SDK_BRIDGE_CACHE or <repo>/.cache/bridge.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CURSOR_SDK_BRIDGE_CACHE:-$ROOT/.cache/bridge}

fetch() { # fetch <cursor-sdk version> <wheel sha256>
    version=$1
    sha256=$2
    wheel=cursor_sdk-$version-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
    dest=$CACHE/cursor-sdk-$version
    bin=$dest/bridge/bin/cursor-sdk-bridge
    if [ -x "$bin" ] && [ -f "$dest/.complete" ]; then
        echo "bridge: $bin (cached)"
        return 0
    fi
    mkdir -p "$CACHE/wheels"
    if [ ! -f "$CACHE/wheels/$wheel" ]; then
        python3 -m pip download --quiet --disable-pip-version-check --no-deps \
            --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 \
            -d "$CACHE/wheels" "cursor-sdk==$version"
    fi
    echo "$sha256  $CACHE/wheels/$wheel" | sha256sum -c --quiet - || {
        echo "fetch-bridge: checksum mismatch for $wheel; removing it" >&2
        rm -f "$CACHE/wheels/$wheel"
        exit 1
    }
    tmp=$(mktemp -d "$CACHE/.extract.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    python3 - "$CACHE/wheels/$wheel" "$tmp" <<'PY'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
prefix = "cursor_sdk/_vendor/bridge/"
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        target = os.path.join(out, "bridge", info.filename[len(prefix):])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(info) as src, open(target, "wb") as dst:
            dst.write(src.read())
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(target, mode)
PY
    chmod +x "$tmp/bridge/bin/cursor-sdk-bridge" "$tmp/bridge/bin/node"
    rm -rf "$dest"
    mv "$tmp" "$dest"
    trap - EXIT
    touch "$dest/.complete"
    echo "bridge: $bin"
}

fetch 1.1.0 c8b7296476e6706ef1530f19b822adb89191a49202147331a56a0592e969686c
fetch 1.0.26 ba6d1c0c4a5d905f82aa04bf034cf8fa17a6b0f9a9b938eab47735913c1f8482
