#!/bin/sh
# nvrtc-check.sh: every kernel file of the tests and samples
# (tests/diagnostics/valid, tests/conformance, tests/cuda/kernels, samples)
# as CUDA (nnkc -S --target=cuda) compiles with NVRTC for every arch it
# supports from sm_75 up (nvrtc_check), and its PTX at the runtime's own
# options and optimisation level passes the PTX lint (tests/cuda/ptx_lint.h:
# no global access in a loop through an unchanged kernel-parameter pointer,
# none through an undefined register; docs/cuda-backend.md).  The lint
# itself must flag tests/cuda/lint-bad.ptx.  Skip (77) only when no CUDA
# toolkit was configured and no NVRTC can be found; with a toolkit, a
# missing NVRTC is a failure.
# NNKCONF_SLICE=N (make check NNK_EMU_SLICE=N, the sanitizer stage of
# tests/run-all.sh): nnkc still generates the CUDA of every file (that is
# what the sanitizers watch), but NVRTC compiles and the lint reads every
# Nth file only, the first included: NVRTC is not sanitized, the plain
# stage compiles them all, and under ASan's allocator its 3,000 kernels
# took 515 s.  Nor does it lint (-l 0): ptx_lint is the test's own
# scanner, not nnk's code, and its full-optimisation compiles were 181 of
# the sliced check's 212 s under ASan; the plain stage lints every file.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-nvrtc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0
n=0
# the lint finds what it is for (and nothing in the good kernel)
lint=$("$top_builddir/tests/cuda/ptx_lint" "$top_srcdir/tests/cuda/lint-bad.ptx")
if [ $? -eq 1 ] && [ "$(printf '%s\n' "$lint" | grep -c 'kernel bad_sum__rd_part: .*kernel-parameter pointer')" = 1 ] &&
	[ "$(printf '%s\n' "$lint" | grep -c 'kernel bad_sum_i8__rd_part: .*nothing defines')" = 1 ] &&
	[ "$(printf '%s\n' "$lint" | grep -c 'kernel bad_softmax__rd_row: .*local memory in a kernel that keeps the row')" = 2 ] &&
	! printf '%s\n' "$lint" | grep -q good_sum; then
	echo "nvrtc-check: ok   the PTX lint flags lint-bad.ptx"
else
	echo "nvrtc-check: FAIL the PTX lint on lint-bad.ptx:"
	printf '%s\n' "$lint"
	status=1
fi
for f in "$top_srcdir"/tests/diagnostics/valid/*.nnk "$top_srcdir"/tests/conformance/kernels/*.nnk \
	"$top_srcdir"/tests/cuda/kernels/*.nnk "$top_srcdir"/samples/*.nnk "$top_srcdir"/samples/*/*.nnk; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	out="$tmp/$n-$(basename "$f" .nnk).cu"
	if ! "$top_builddir/nnkc" -S --target=cuda -I"$(dirname "$f")" "$f" -o "$out" 2>"$tmp/err"; then
		cat "$tmp/err"
		echo "nvrtc-check: FAIL nnkc -S --target=cuda $f"
		status=1
	fi
done
# over 256 reducers in a phase: the C back end declares every value
# (-fsyntax-only of its 16 MB of C: 4 CPU seconds)
if "$top_builddir/nnkc" -S --target=c "$top_srcdir/tests/cuda/kernels/big_state.nnk" -o "$tmp/big_state.c" &&
	${CC:-cc} -std=c11 -fsyntax-only -Wall -Wextra -Werror "$tmp/big_state.c"; then
	echo "nvrtc-check: ok   the C of big_state.nnk (300 reducers in a phase) compiles"
else
	echo "nvrtc-check: FAIL the C of big_state.nnk does not compile"
	status=1
fi
slice=${NNKCONF_SLICE:-1}
case $slice in '' | *[!0-9]* | 0) slice=1 ;; esac
set --
i=0
for cu in "$tmp"/*.cu; do
	[ $((i % slice)) -eq 0 ] && set -- "$@" "$cu"
	i=$((i + 1))
done
lint=
[ "$slice" -eq 1 ] || { echo "nvrtc-check: NNKCONF_SLICE=$slice: NVRTC compiles $# of the $i files (every ${slice}th), no PTX lint"; lint="-l 0"; }
# no disk cache: every compile is real.  Under ASan, no stack of each
# malloc (malloc_context_size=0; first, so that ASAN_OPTIONS can set it
# back): NVRTC allocates through ASan's allocator, and recording the stack
# of each allocation was half of ASan's cost there (29-activations.cu,
# 12 archs: 2.7 CPU-s sanitized, 2.2 without the stacks, 1.6 plain); a
# report still gives the faulting access's stack.
ASAN_OPTIONS="malloc_context_size=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" NNK_CACHE=0 "$top_builddir/tests/cuda/nvrtc_check" $lint "$@"
rc=$?
if [ $rc -eq 77 ]; then
	if [ -n "${CUDA_HOME:-}" ] || { [ -n "${NVCC:-}" ] && [ "${NVCC:-no}" != no ]; }; then
		echo "nvrtc-check: FAIL: a CUDA toolkit is configured (${CUDA_HOME:-$NVCC}) but NVRTC cannot be loaded"
		exit 1
	fi
	echo "nvrtc-check: SKIP: no CUDA toolkit"
	exit 77
fi
[ $rc -eq 0 ] || status=1
exit $status
