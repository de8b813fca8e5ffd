#!/bin/sh
# The whole test suite:
#   1. a plain build and `make check`;
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer, with a
#      slice of the emulated CUDA suites (NNK_EMU_SLICE: the emulation and
#      the kernels it runs are not sanitized; stage 1 runs all of them);
#   2b. ThreadSanitizer (configure --enable-tsan) over the opencl
#      extension's concurrency: `make check-tsan` builds the extension and
#      tests/opencl/test_opencl only, and runs tests/opencl/tsan.sh;
#   3. the release: `make dist`, the tarball built without re2c and lemon
#      (out of its tree), installed, and `make installcheck` (three projects
#      built against the installed tree: Autotools, CMake, plain make with
#      pkg-config).
# Every build has warnings as errors (configure --enable-werror).  At the
# end: the time of each stage and the slowest tests (tests/timed-driver.sh
# writes each test's time into its .log).
# `make distcheck` runs 1 and 3 in one go; this script splits them so the
# suite runs once per build.  Build trees go to build-*/ in the source tree.
# Environment: JOBS (make -j, default: the CPUs), NNK_EMU_SLICE (stage 2's
# slice, default 4: every 4th test).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
[ -x configure ] || ./bootstrap

start=$(date +%s)
times=
last=
step() { # stage name: the time of the one before goes to the summary
    now=$(date +%s)
    [ -z "$last" ] || times="$times$(printf '%6ds  %s' $((now - last_at)) "$last")
"
    last=$*
    last_at=$now
    printf '\n==== %s (at %ds) ====\n' "$*" $((now - start))
}
summary() {
    step "summary"
    printf 'stage times (%d s in all):\n%s' $(($(date +%s) - start)) "$times"
    echo "the slowest tests (seconds, build tree, test):"
    for d in build-test build-san; do
        [ -d "$d" ] || continue
        find -H "$d" -name '*.log' ! -name test-suite.log ! -name config.log -exec \
            awk -v d="$d" '/^nnk-test-seconds: / { f = FILENAME; sub("^" d "/", "", f); sub(/\.log$/, "", f);
                                                  printf "%8.1f  %-11s %s\n", $2, d, f }' {} +
    done | sort -rn | head -n 10
}

# the summary also when a stage fails
trap 'rc=$?; trap - EXIT; summary; exit $rc' EXIT

check() { # build dir, make check arguments, then configure options...
    dir=$1
    margs=$2
    shift 2
    mkdir -p "$dir"
    (cd "$dir" && ../configure -q --enable-werror "$@" && make -s -j"$jobs" &&
     { make -s -j"$jobs" check $margs || { cat test-suite.log; exit 1; }; })
}

step "plain build: make check"
check build-test ""

step "sanitizers (ASan + UBSan): make check, every ${NNK_EMU_SLICE:-4}th test of the emulated suites"
# The numeric suites cache the kernels they compile (the generated C as a
# shared object, the generated CUDA for the emulation) under the hash of
# that code and its flags: the sanitized nnkc generates the same code, so
# the plain build's objects serve here, hard-linked (a kernel whose code
# differs is compiled anew; nothing in a work directory is written in
# place).  The sanitizers are in nnkc and libnnk, not in those objects.
for w in tests/cuda/work tests/conformance/work; do
    for from in build-test/tests/cuda/work build-test/tests/conformance/work; do
        [ -d "$from" ] || continue
        mkdir -p "build-san/$w"
        cp -Rln "$from/." "build-san/$w/" 2>/dev/null || cp -Rn "$from/." "build-san/$w/"
    done
done
check build-san "NNK_EMU_SLICE=${NNK_EMU_SLICE:-4}" --enable-sanitizers

step "ThreadSanitizer: the opencl extension's concurrency (make check-tsan)"
mkdir -p build-tsan
(cd build-tsan && ../configure -q --enable-werror --enable-tsan && make -s -j"$jobs" check-tsan)

step "release: the tarball without re2c and lemon, make install, make installcheck"
rm -rf build-release
mkdir -p build-release/build
(cd build-test && make -s dist >/dev/null)
tar -C build-release -xzf build-test/nnk-*.tar.gz
src=$(echo "$top"/build-release/nnk-*)
# every file git tracks is in the tarball (but git's and CI's own)
if command -v git >/dev/null 2>&1 && git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
    missing=$(git -C "$top" ls-files | grep -v -e '\.gitignore$' -e '^\.gitattributes$' -e '^\.ci/' | while read -r f; do
        [ -e "$src/$f" ] || echo "$f"; done)
    if [ -n "$missing" ]; then
        echo "run-all.sh: make dist leaves out tracked files:" $missing >&2
        exit 1
    fi
fi
# a VPATH build, as distcheck's: files the tarball wrongly carries (objects,
# logs) would be found in the source tree and break it; `check TESTS=`
# builds the test programs without running the suite a third time.  It is
# configured for the default prefix and installed with `make install
# prefix=DIR`: the paths compiled into libnnk, nnk.pc and the CMake
# package follow the override (installcheck checks that the installed
# libnnk finds the installed extensions).
inst=$top/build-release/inst
(cd build-release/build && "$src/configure" -q --enable-werror RE2C=no LEMON=no &&
 make -s -j"$jobs" && make -s -j"$jobs" check TESTS= >/dev/null &&
 make -s install prefix="$inst" >/dev/null && make -s installcheck prefix="$inst")

echo "all tests passed"
