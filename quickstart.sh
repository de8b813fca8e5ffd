#!/bin/sh
# quickstart.sh demo|check - the README's two commands, from a fresh clone
# or a release tarball on a Debian 12 machine:
#
#   1. installs the Debian packages that are missing (apt-get update and
#      install, as root or through sudo; otherwise prints the one command
#      to run and stops);
#   2. bootstraps a git checkout (./bootstrap: autoreconf);
#   3. demo:  configures and builds in build/, then runs the demo (make demo:
#             samples/*.nnk ahead of time and through the JIT);
#      check: the whole test suite, tests/run-all.sh (build-test/, build-san/
#             and build-release/: plain, sanitizers, the release tarball).
#
# Neither configures the source tree itself (every build is out of tree),
# so the two run in either order, as often as one likes.  .ci/run is
# `quickstart.sh check`.  Environment: JOBS (make -j, default: the CPUs).
set -eu
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
what=${1:-demo}
case $what in
demo | check) ;;
*)
    echo "usage: $0 demo|check" >&2
    exit 2
    ;;
esac

# What the build and the tests need (README.md, "Packages"), and what the
# Python module (python3-dev, python3-pytest; pip, setuptools and wheel for
# tests/python/pip-install.sh) and the OpenCL back end
# (PoCL, the ICD loader, headers, clinfo) use.  CUDA is optional and not a
# Debian package here: configure finds it at /usr/local/cuda.
PACKAGES="build-essential autoconf automake libtool pkg-config re2c lemon libcunit1-dev
python3 python3-numpy python3-pytest python3-dev python3-pip python3-setuptools python3-wheel
valgrind clang cmake file
pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers clinfo"

missing=
if command -v dpkg-query >/dev/null 2>&1; then
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || missing="$missing $p"
    done
else
    echo "quickstart.sh: no dpkg (not Debian): the build needs the equivalents of" $PACKAGES
fi
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        sudo=
    elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
        sudo=sudo
    else
        echo "quickstart.sh: these packages are missing:$missing" >&2
        echo "run this as root (or with sudo), then $0 $what again:" >&2
        echo "    apt-get update && apt-get install -y --no-install-recommends$missing" >&2
        exit 1
    fi
    echo "+ ${sudo:+$sudo }apt-get update && apt-get install$missing"
    ${sudo:+$sudo} env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    ${sudo:+$sudo} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ -f config.status ]; then
    # an in-place ./configure: automake's out-of-tree builds refuse such a tree
    echo "quickstart.sh: the source tree itself is configured (./configure was run here);" >&2
    echo "the builds of this script are out of tree: run 'make distclean' here first" >&2
    exit 1
fi
[ -x configure ] || ./bootstrap
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

case $what in
demo)
    mkdir -p build
    cd build
    [ -f Makefile ] || ../configure -q
    make -s -j"$jobs"
    make -s demo
    ;;
check)
    JOBS=$jobs exec sh tests/run-all.sh
    ;;
esac
