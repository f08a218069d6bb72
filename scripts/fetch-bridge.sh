#!/bin/sh
# Installs the pinned cursor-sdk-bridge (inside PyPI cursor-sdk==1.1.0) into the cache.
# Idempotent, and offline once cached. The cache is $CURSOR_SDK_BRIDGE_CACHE or <repo>/.cache/bridge.
set -eu
VERSION=1.1.0
SHA256=c8b7296476e6706ef1530f19b822adb89191a49202147331a56a0592e969686c
WHEEL=cursor_sdk-$VERSION-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CURSOR_SDK_BRIDGE_CACHE:-$ROOT/.cache/bridge}
DEST=$CACHE/cursor-sdk-$VERSION
BIN=$DEST/bridge/bin/cursor-sdk-bridge

if [ -x "$BIN" ] && [ -f "$DEST/.complete" ]; then
    echo "bridge: $BIN (cached)"
    exit 0
fi
mkdir -p "$CACHE/wheels"
if [ ! -f "$CACHE/wheels/$WHEEL" ]; then
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 \
        -d "$CACHE/wheels" "cursor-sdk==$VERSION"
fi
echo "$SHA256  $CACHE/wheels/$WHEEL" | sha256sum -c --quiet - || {
    echo "fetch-bridge: checksum mismatch for $WHEEL; removing it" >&2
    rm -f "$CACHE/wheels/$WHEEL"
    exit 1
}
TMP=$(mktemp -d "$CACHE/.extract.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
python3 - "$CACHE/wheels/$WHEEL" "$TMP" <<'PY'
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
chmod +x "$TMP/bridge/bin/cursor-sdk-bridge" "$TMP/bridge/bin/node"
rm -rf "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
touch "$DEST/.complete"
echo "bridge: $BIN"
