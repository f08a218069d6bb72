#!/usr/bin/env bash
# Makes a Swift 6 toolchain available on Debian 12, where none is packaged: Debian 13 (trixie)'s
# `swiftlang` in a debootstrapped chroot under .cache/ (glibc >= 2.38 is needed, bookworm has 2.36).
# Idempotent and safe to interrupt: a ready marker plus flock; a half-built chroot is removed only
# when nothing is mounted inside it; every mount happens in a private mount namespace, so none
# outlives the process. Fails loudly when the toolchain cannot be had.
#   usage: swift-toolchain.sh            (prints the chroot's path on success)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHROOT=${SWIFT_CHROOT:-$ROOT/.cache/swift-trixie}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export DEBIAN_FRONTEND=noninteractive
die() { echo "swift-toolchain: FAILED: $*" >&2; exit 1; }
IN_CHROOT=(chroot "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)

mkdir -p "$(dirname "$CHROOT")"
exec 9>"$CHROOT.lock"
flock 9

if [ ! -e "$CHROOT/.swift-ready" ]; then
    [ "$(id -u)" = 0 ] || die "creating the Swift chroot needs root (debootstrap, chroot, mount)"
    echo "== swift-toolchain: creating $CHROOT (Debian trixie + swiftlang 6.0.3, about 1-2 min, 2.6 GB)" >&2
    if ! command -v debootstrap >/dev/null; then
        apt-get update -qq || die "apt-get update failed"
        apt-get install -y -qq debootstrap >/dev/null || die "cannot install debootstrap with apt-get"
    fi
    if [ -d "$CHROOT" ]; then # the leftover of an interrupted set-up
        if findmnt -rn -o TARGET | grep -q "^$CHROOT/"; then
            die "refusing to delete $CHROOT: something is mounted inside it"
        fi
        rm -rf --one-file-system "$CHROOT"
    fi
    debootstrap --variant=minbase trixie "$CHROOT" "$MIRROR" >"$CHROOT.log" 2>&1 ||
        die "debootstrap trixie from $MIRROR failed (see $CHROOT.log)"
    # libc6-dev is required (gcc-14 only recommends it; without it nothing links); pkgconf lets
    # SwiftPM read cursor_sdk.pc.
    unshare --mount --propagation private bash -c "
        set -e
        mount -t proc proc '$CHROOT/proc'
        $(printf '%q ' "${IN_CHROOT[@]}") apt-get install -y -q --no-install-recommends swiftlang libc6-dev pkgconf
        $(printf '%q ' "${IN_CHROOT[@]}") apt-get clean" >>"$CHROOT.log" 2>&1 ||
        die "installing swiftlang in the trixie chroot failed (see $CHROOT.log)"
    touch "$CHROOT/.swift-ready"
fi
echo "$CHROOT"
