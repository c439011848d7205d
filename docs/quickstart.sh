#!/bin/sh
# quickstart.sh - the README's first command: from a fresh clone on Debian or
# Ubuntu, install the build tools if they are missing, build diskmon
# (Release, in build/release) and start a live capture. Root (or sudo) is
# needed only to install missing packages and for the capture itself; the
# build runs as whoever runs this:
#
#     sh docs/quickstart.sh [diskmon options]      e.g. sh docs/quickstart.sh -t 5
#
# It lives in docs/ because it is part of the getting-started documentation
# (with the man page and the bash completion), not a test of the product.
set -eu
cd "$(dirname "$0")/.."

is_root() { [ "$(id -u)" -eq 0 ]; }
has_sudo() { command -v sudo >/dev/null 2>&1; }

# The build tools: a C compiler, make and CMake 3.21+ (Debian 12 and
# Ubuntu 22.04 have it). Installed only when missing.
missing=""
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
if [ -n "$missing" ]; then
    if is_root; then
        as_root() { "$@"; }
    elif has_sudo; then
        as_root() { sudo "$@"; }
    else
        echo "quickstart: the build needs$missing; install them as root" \
             "(apt-get install$missing) and run this again" >&2
        exit 1
    fi
    echo "quickstart: installing$missing"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi

cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
# diskmon and what `cmake --install build/release` copies besides it (the
# gzipped man page and changelog), not the test programs.
cmake --build build/release --target dm_install_files -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
if is_root; then
    echo "quickstart: built build/release/diskmon; live capture starts (Ctrl+C stops it)" >&2
    exec build/release/diskmon "$@"
fi
if has_sudo; then
    echo "quickstart: built build/release/diskmon; live capture starts through sudo (Ctrl+C stops it)" >&2
    exec sudo build/release/diskmon "$@"
fi
# No root and no sudo: the build is done; diskmon itself says what live
# capture needs (root, or two capabilities on the executable).
echo "quickstart: built build/release/diskmon; live capture needs root, which this user does not have:" >&2
exec build/release/diskmon "$@"
