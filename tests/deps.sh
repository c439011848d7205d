#!/usr/bin/env bash
# deps.sh - install what the tests need (Debian, as root); tests/run.sh all
# calls it first. Without root or apt-get it names what is missing and the
# tests that need it skip with their reason. Prints one line when it had
# something to do; the apt-get output goes to build/logs/apt.log.
# Usage: tests/deps.sh [--dry-run] (--dry-run: only say what is missing).
set -u
cd "$(dirname "$0")/.."
LOG=$PWD/build/logs
mkdir -p "$LOG"
DRY=0
[ "${1:-}" = --dry-run ] && DRY=1

# python3: clock.sh reads trace headers, and tests/lib/junit.py reads
# CTest's reports; groff-base, mandoc, man-db: the man page checks
# (docs.sh); git: the fresh-clone test (quickstart.sh); tmux: the --top
# terminal view (linux_top.sh); libtraceevent-dev: the oracle of the ftrace
# page parser's test; strace: the idle wake-up count (linux_idle.sh);
# libcap2-bin (setcap): the non-root advice (linux_nonroot.sh); lintian: the
# .deb (install.sh); qemu-user: the -m32 suites where the kernel runs no
# 32-bit programs; libclang-rt-14-dev: libFuzzer and the sanitizer runtimes
# for clang 14 (Debian 12's), which tests/fuzz/run.sh links. prometheus
# (promtool), prometheus-node-exporter, curl: the --metrics checks and the
# real chain (metrics.sh, linux_metrics.sh, metrics_chain.sh). bpftrace:
# the independent count of block_rq_complete and of rwbs flags; xfsprogs:
# the second journaling file system (linux_every_request.sh); fdisk
# (sfdisk): the GPT of the partitions test. libc6-dev-arm64-cross,
# libgcc-12-dev-arm64-cross, binutils-aarch64-linux-gnu: the ARM64 cross
# build that run.sh's step_aarch64 makes with clang and runs under
# qemu-aarch64 (qemu-user). Not gcc-aarch64-linux-gnu: Debian's aarch64 gcc
# conflicts with gcc-multilib, which the -m32 build needs. chromium: --report
# opened in a real browser (report.sh: the DOM, the console, a screenshot).
NEEDED="chromium bpftrace xfsprogs fdisk cmake gcc make clang libclang-rt-14-dev mingw-w64 wine wine64 fio gcc-multilib libtraceevent-dev python3 groff-base mandoc man-db git tmux strace libcap2-bin lintian qemu-user prometheus prometheus-node-exporter curl libc6-dev-arm64-cross libgcc-12-dev-arm64-cross binutils-aarch64-linux-gnu"
# npm lints the GitHub workflow. Debian's npm package conflicts with the
# nodejs builds that bundle npm (NodeSource), so it is asked for only when
# no npm is on the PATH.
command -v npm >/dev/null 2>&1 || NEEDED="$NEEDED nodejs npm"
missing=""
for pkg in $NEEDED; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
[ -n "$missing" ] || exit 0
if [ "$DRY" -eq 1 ]; then
    echo "== would install:$missing"
elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "== installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >"$LOG/apt.log" 2>&1
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >>"$LOG/apt.log" 2>&1 ||
        { echo "apt-get install failed; see $LOG/apt.log"; tail -20 "$LOG/apt.log"; }
else
    echo "== missing packages:$missing (as root: apt-get install$missing);" \
         "the tests that need them will skip"
fi
exit 0
