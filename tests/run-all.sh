#!/bin/sh
# The whole test suite:
#   1. a plain build and `make check`;
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the release: `make dist`, the tarball built without re2c and lemon
#      (out of its tree), installed, and `make installcheck` (three projects
#      built against the installed tree: Autotools, CMake, plain make with
#      pkg-config).
# `make distcheck` runs 1 and 3 in one go; this script splits them so the
# suite runs once per build.  Build trees go to build-*/ in the source tree.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
[ -x configure ] || ./bootstrap

start=$(date +%s)
step() { printf '\n==== %s (at %ds) ====\n' "$*" $(($(date +%s) - start)); }

check() { # build dir, configure options...
    dir=$1
    shift
    mkdir -p "$dir"
    (cd "$dir" && ../configure -q "$@" && make -s -j"$jobs" &&
     { make -s -j"$jobs" check || { cat test-suite.log; exit 1; }; })
}

step "plain build: make check"
check build-test

step "sanitizers (ASan + UBSan): make check"
check build-san --enable-sanitizers

step "release: the tarball without re2c and lemon, make install, make installcheck"
rm -rf build-release
mkdir -p build-release/build
(cd build-test && make -s dist >/dev/null)
tar -C build-release -xzf build-test/nnk-*.tar.gz
src=$(echo "$top"/build-release/nnk-*)
# every file git tracks is in the tarball (but git's and CI's own)
if command -v git >/dev/null 2>&1 && git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
    missing=$(git -C "$top" ls-files | grep -v -e '\.gitignore$' -e '^\.ci/' | while read -r f; do
        [ -e "$src/$f" ] || echo "$f"; done)
    if [ -n "$missing" ]; then
        echo "run-all.sh: make dist leaves out tracked files:" $missing >&2
        exit 1
    fi
fi
# a VPATH build, as distcheck's: files the tarball wrongly carries (objects,
# logs) would be found in the source tree and break it; `check TESTS=`
# builds the test programs without running the suite a third time
(cd build-release/build && "$src/configure" -q --prefix="$top/build-release/inst" \
     RE2C=no LEMON=no &&
 make -s -j"$jobs" && make -s -j"$jobs" check TESTS= >/dev/null && make -s install >/dev/null && make -s installcheck)

step "all tests passed"
