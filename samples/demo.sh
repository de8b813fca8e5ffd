#!/bin/sh
# demo.sh [BUILDDIR] - the README's demo (`make demo`): kernels compiled
# ahead of time and run on the CPU, then the same language through the JIT.
#
#   1. ahead of time: the samples project (samples/configure.ac and
#      Makefile.am, as an application would build .nnk files) is built
#      against this build tree's nnkc -- saxpy, activations.nnk, norms.nnk
#      become objects and headers (nnkc -c -H), linked into three small C
#      apps, which run and check themselves;
#   2. just in time: samples/jit/jit_demo (libnnk) compiles kernels from
#      strings at run time, when it has been built;
#   3. OpenCL: samples/opencl/opencl_demo runs one kernel on the opencl
#      extension's first device (PoCL here), or says why there is none;
#   4. Python: samples/python_demo.py with the build tree's nnk package
#      (python/stage), when configure built it ($PYTHON, else /usr/bin/python3).
#
# Without autoreconf (a release tarball on a machine without Autotools),
# or with NNK_DEMO_PLAIN=1, step 1 runs the same commands by hand.
# The work directory is BUILDDIR/samples/demo-build.  Exit status: 0 when
# every app ran and checked its results.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
builddir=$(cd "${1:-.}" && pwd)
NNKC=$builddir/nnkc
if [ ! -x "$NNKC" ]; then
    echo "demo.sh: no nnkc in $builddir (build first: make)" >&2
    exit 1
fi
work=$builddir/samples/demo-build
rm -rf "$work"
mkdir -p "$work"
CC=${CC:-cc}

banner() { printf '\n==== %s\n' "$*"; }

banner "ahead of time: nnkc -c on samples/*.nnk, C apps linked with the objects"
apps="saxpy/saxpy activations_demo norms_demo"
if [ -z "${NNK_DEMO_PLAIN:-}" ] && command -v autoreconf >/dev/null 2>&1 && command -v pkg-config >/dev/null 2>&1; then
    # The samples project finds nnkc through pkg-config (NNK_PROG_NNKC): a
    # nnk.pc pointing into this build tree stands in for an installed one.
    mkdir -p "$work/src" "$work/pc" "$work/build"
    cp -R "$here/saxpy" "$here/configure.ac" "$here/Makefile.am" "$here/demo.sh" \
          "$here/activations.nnk" "$here/norms.nnk" "$here/activations_demo.c" "$here/norms_demo.c" "$work/src/"
    cat > "$work/pc/nnk.pc" <<PC
nnkc=$NNKC
mkfile=$top_srcdir/integration/nnk.mk
Name: nnk
Description: nnk (build tree $builddir)
Version: 0.1.0
Cflags: -I$top_srcdir/runtime/include
Libs: -L$builddir/.libs -lnnk
PC
    export PKG_CONFIG_PATH="$work/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export ACLOCAL_PATH="$top_srcdir/integration${ACLOCAL_PATH:+:$ACLOCAL_PATH}"
    echo "+ autoreconf -fi && ./configure && make    (in $work)"
    (cd "$work/src" && autoreconf -fi >"$work/autoreconf.log" 2>&1) ||
        { cat "$work/autoreconf.log"; exit 1; }
    (cd "$work/build" && "$work/src/configure" -q CC="$CC" >"$work/configure.log" 2>&1) ||
        { cat "$work/configure.log"; exit 1; }
    (cd "$work/build" && make >"$work/make.log" 2>&1) || { cat "$work/make.log"; exit 1; }
    sed -n 's|^.*/nnkc |  nnkc |p' "$work/make.log"
    bindir=$work/build
else
    bindir=$work
    mkdir -p "$work/saxpy"
    for n in saxpy/saxpy activations norms; do
        echo "+ nnkc -c --no-cuda samples/$n.nnk -o $n.o -H $n.h"
        "$NNKC" -c --no-cuda "$here/$n.nnk" -o "$work/$n.o" -H "$work/$n.h"
    done
    "$CC" -std=c11 -O2 -I"$work/saxpy" "$here/saxpy/main.c" "$work/saxpy/saxpy.o" -o "$work/saxpy/saxpy" -lm
    "$CC" -std=c11 -O2 -I"$work" "$here/activations_demo.c" "$work/activations.o" -o "$work/activations_demo" -lm
    "$CC" -std=c11 -O2 -I"$work" "$here/norms_demo.c" "$work/norms.o" -o "$work/norms_demo" -lm
fi
status=0
for app in $apps; do
    banner "$app"
    "$bindir/$app" || status=1
done

banner "just in time: samples/jit/jit_demo (kernels from strings, compiled at run time)"
jit=$builddir/samples/jit/jit_demo
if [ -x "$jit" ]; then
    "$jit" || status=1
else
    echo "(not built: $jit; the JIT half of the demo needs the runtime library)"
fi
banner "OpenCL: samples/opencl/opencl_demo (the JIT on the opencl extension's device)"
ocl=$builddir/samples/opencl/opencl_demo
if [ -x "$ocl" ]; then
    # the extension of this build tree; PoCL's own kernel cache beside the
    # demo; in a sanitizer build, LeakSanitizer told that PoCL's LLVM keeps
    # its compiler state until exit (tests/opencl/lsan.supp)
    NNK_EXTENSION_PATH="$builddir/.libs${NNK_EXTENSION_PATH:+:$NNK_EXTENSION_PATH}" \
        POCL_CACHE_DIR="${POCL_CACHE_DIR:-$work/pocl-cache}" \
        LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/opencl/lsan.supp" \
        "$ocl" >"$work/opencl.out" 2>&1 || status=1
    cat "$work/opencl.out"
    grep -q '^softmax of .* on opencl' "$work/opencl.out" && ocl_ran=1
else
    echo "(not built: $ocl)"
fi
banner "python: samples/python_demo.py (the nnk package: ext_utils, a jiterator function, a module)"
PY=${PYTHON:-/usr/bin/python3}
if [ ! -e "$builddir/python/stage/nnk/_nnk.so" ]; then
    echo "(not built: the Python package needs Python's headers at configure time)"
else
    case "${SAN_FLAGS:-}" in
    *sanitize=address*)
        # the interpreter is not instrumented: tests/python/run.sh preloads libasan
        echo "(skipped in a sanitizer build; tests/python/run.sh runs the package there)" ;;
    *)
        PYTHONPATH="$builddir/python/stage${PYTHONPATH:+:$PYTHONPATH}" "$PY" "$here/python_demo.py" || status=1
        py_ran=1 ;;
    esac
fi
banner "summary: what ran where"
echo "ahead of time: nnkc -c --no-cuda made CPU objects of saxpy.nnk, activations.nnk and norms.nnk;"
echo "  the three C apps call their entry points directly (no libnnk), on this CPU, and check"
echo "  every value against a double-precision reference (plus the views of saxpy_strided)"
if [ -x "$jit" ]; then
    echo "just in time: jit_demo gave libnnk .nnk source strings; the cpu extension's JIT compiled"
    echo "  gelu for f32 and f16 and a module (softmax, l2norm) with the system C compiler at run"
    echo "  time (cached on disk for the next run), and ran them on the default context, cpu"
fi
if [ -n "${py_ran:-}" ]; then
    echo "python: python_demo.py drove the same libnnk through the nnk package (its C extension"
    echo "  module): the extensions, a jiterator function and a module, on the cpu context"
fi
if [ -n "${ocl_ran:-}" ]; then
    echo "OpenCL: opencl_demo compiled softmax to OpenCL C, built it with the OpenCL driver and ran it"
    echo "  on the opencl extension's device 0 (arrays there), then on cpu for comparison"
elif [ -x "$ocl" ]; then
    echo "OpenCL: nothing ran on opencl (no device; opencl_demo said why)"
fi
echo "(GPU code: nnkc -c without --no-cuda adds a fatbin; docs/cuda-backend.md)"
banner "demo: $( [ $status = 0 ] && echo ok || echo FAILED )"
exit $status
