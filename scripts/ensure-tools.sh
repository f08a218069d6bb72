#!/bin/sh
# Makes sure the tools the C suites need are installed: a C and C++ compiler, clang (the header
# is also checked with clang, whose nullability and enum attributes gcc lacks), binutils (nm,
# readelf), pkg-config, cmake and valgrind. On Debian/Ubuntu, as root, missing ones are installed
# with apt-get; otherwise the script fails and names the packages to install.
set -eu
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need "${CC:-cc}" gcc
need "${CXX:-c++}" g++
need clang clang
need clang++ clang
need nm binutils
need readelf binutils
need pkg-config pkg-config
need cmake cmake
need valgrind valgrind
[ -z "$missing" ] && exit 0
pkgs=$(echo "$missing" | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-tools: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends $pkgs >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends $pkgs; } ||
        { echo "ensure-tools: FAILED: apt-get could not install: $pkgs" >&2; exit 1; }
    exit 0
fi
echo "ensure-tools: FAILED: missing tools; install the packages: $pkgs (e.g. sudo apt-get install -y $pkgs)" >&2
exit 1
