#!/bin/sh
# The whole test suite: a plain build with `make check`, the same under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the release checks.
# Build trees go to build-test/ and build-san/ in the source tree.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
[ -x configure ] || ./bootstrap

step() { printf '\n==== %s ====\n' "$*"; }

step "plain build: make check"
mkdir -p build-test
(cd build-test && ../configure -q && make -s -j"$jobs" &&
  { make -s -j"$jobs" check || { cat test-suite.log; exit 1; }; })

step "sanitizers (ASan + UBSan): make check"
mkdir -p build-san
(cd build-san && ../configure -q --enable-sanitizers && make -s -j"$jobs" &&
  { make -s -j"$jobs" check || { cat test-suite.log; exit 1; }; })

step "all tests passed"
