#!/bin/sh
# opencl-check.sh: the compiler's OpenCL C on a real OpenCL device (PoCL in
# CI).  Every kernel file of the tests and samples (tests/diagnostics/valid,
# tests/conformance, tests/cuda/kernels, samples) as OpenCL C (nnkc -S
# --target=opencl) builds with clBuildProgram and has the kernels
# docs/opencl.md lists (clbuild); where clang is there, the files that do
# not need f64 also compile for a device without cl_khr_fp64 (clang's
# OpenCL front end, -cl-ext=-cl_khr_fp64); and tests/opencl/run.nnk runs
# (clrun: every kernel shape against references).  Skips (77) only when
# there is no libOpenCL.so.1 or no device, and then fails when
# NNK_OPENCL_REQUIRED=1 (CI sets it).  PoCL's cache is opencl.sh's.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
mkdir -p "$top_builddir/tests/opencl/pocl-cache"
POCL_CACHE_DIR="$top_builddir/tests/opencl/pocl-cache"
# under the sanitizers: what PoCL and LLVM keep until exit is theirs
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/opencl/lsan.supp"
export POCL_CACHE_DIR LSAN_OPTIONS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-opencl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0
n=0
for f in "$top_srcdir"/tests/diagnostics/valid/*.nnk "$top_srcdir"/tests/conformance/kernels/*.nnk \
	"$top_srcdir"/tests/cuda/kernels/*.nnk "$top_srcdir"/samples/*.nnk "$top_srcdir"/samples/*/*.nnk; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	out="$tmp/$n-$(basename "$f" .nnk).cl"
	if ! "$top_builddir/nnkc" -S --target=opencl -I"$(dirname "$f")" "$f" -o "$out" 2>"$tmp/err"; then
		cat "$tmp/err"
		echo "opencl-check: FAIL nnkc -S --target=opencl $f"
		status=1
	fi
done
if command -v clang >/dev/null 2>&1; then
	for f in "$tmp"/*.cl; do
		grep -q '^#define NNK_NEEDS_FP64' "$f" && continue
		if ! clang -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -Xclang -cl-ext=-cl_khr_fp64 \
			-fsyntax-only -w "$f"; then
			echo "opencl-check: FAIL $f without cl_khr_fp64 (clang)"
			status=1
		fi
	done
fi
"$top_builddir/tests/opencl/clbuild" "$tmp"/*.cl
rc=$?
if [ $rc -eq 77 ]; then
	[ "${NNK_OPENCL_REQUIRED:-0}" = 1 ] && { echo "opencl-check: FAIL no OpenCL device (NNK_OPENCL_REQUIRED=1)"; exit 1; }
	exit 77
fi
[ $rc -eq 0 ] || status=1
"$top_builddir/tests/opencl/clrun" "$top_srcdir/tests/opencl/run.nnk" || status=1
echo "opencl-check: $n kernel files"
exit $status
