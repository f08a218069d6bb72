#!/usr/bin/env bash
# Type-checks the library for the platforms this machine cannot run: the macOS and Windows code
# behind `cfg` must compile and be clippy-clean (`make cross-check`, part of `make test`).
# Needs rustup to add the targets' standard libraries (once, ~25 MB each); no linker or SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(aarch64-apple-darwin x86_64-pc-windows-gnu)
if ! command -v rustup >/dev/null; then
    echo "cross-check: rustup is needed to add the targets ${targets[*]}; install Rust with rustup" >&2
    exit 1
fi
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
    if ! grep -qx "$t" <<<"$installed"; then
        echo "== cross-check: adding the $t standard library"
        rustup target add "$t"
    fi
    echo "== cross-check: cargo clippy --target $t (library)"
    cargo clippy --quiet --target "$t" -p cursor-sdk --lib -- -D warnings
done
echo "== cross-check: macOS and Windows code paths compile and are clippy-clean"
