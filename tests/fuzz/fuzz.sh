#!/bin/sh
# fuzz.sh: the differential fuzzer's part of make check (tests/fuzz/README):
# every regression case of tests/fuzz/regress, then a fixed-seed slice of
# generated programs (NNKFUZZ_COUNT, default 240, seed NNKFUZZ_SEED,
# default 1), each compiled with nnkc, run through the C back end, and
# compared with the numpy oracle; every 5th batch also on the CUDA
# emulation layer (every other one with raw parameters); then a slice
# through the runtime paths.  Exit 77 (skipped) without a python3 with numpy.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
py=${PYTHON_NUMPY:-}
if [ -z "$py" ]; then
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import numpy' >/dev/null 2>&1; then py=$p; break; fi
	done
fi
if [ -z "$py" ] || ! "$py" -c 'import numpy' >/dev/null 2>&1; then
	echo "fuzz: SKIP: no python3 with numpy"
	exit 77
fi
NNKCONF_WORK=$top_builddir/tests/fuzz/work
NNKFUZZ_WORK=$NNKCONF_WORK
export top_srcdir top_builddir NNKCONF_WORK NNKFUZZ_WORK
start=$(date +%s)
status=0
# NNKCONF_SLICE=N (make check NNK_EMU_SLICE=N, the sanitizer stage of
# tests/run-all.sh): every Nth regression case, the first included.  Most
# cases guard the oracle's and the back ends' semantics, which the plain
# stage checks with every case; the sanitizers watch nnkc, and the
# generated slice below gives them all its 240 programs in both stages.
slice=${NNKCONF_SLICE:-1}
case $slice in '' | *[!0-9]* | 0) slice=1 ;; esac
set --
i=0
for c in "$top_srcdir"/tests/fuzz/regress/*.json; do
	[ $((i % slice)) -eq 0 ] && set -- "$@" "$c"
	i=$((i + 1))
done
[ "$slice" -eq 1 ] || echo "fuzz: NNKCONF_SLICE=$slice: $# of the $i regression cases (every ${slice}th)"
if [ $# -gt 0 ] && [ -e "$1" ]; then
	"$py" "$top_srcdir/tests/fuzz/nnkfuzz.py" --case "$@" || status=1
fi
"$py" "$top_srcdir/tests/fuzz/nnkfuzz.py" --seed "${NNKFUZZ_SEED:-1}" --count "${NNKFUZZ_COUNT:-240}" \
	--batch 24 --cuda-every 5 --jit-every 0 --opencl-every 0 --quiet || status=1
# the runtime paths (rtpaths.py: nnk.compile/nnk_launch and jit functions on
# cpu, OpenCL on PoCL; about 12 CPU seconds): a slice of their own.  Without
# the Python package or an OpenCL device they are skipped, saying so, unless
# NNK_OPENCL_REQUIRED=1 (CI), as tests/opencl does.  A sanitizer build runs
# them in its plain twin (Python, numpy and PoCL are not instrumented, and
# an instrumented libnnk cannot load into them: tests/opencl/conformance.sh)
case "${SAN_FLAGS:-}" in
*sanitize=*)
	echo "fuzz: the runtime paths: SKIP in a sanitizer build (they run in the plain build)" ;;
*)
	"$py" "$top_srcdir/tests/fuzz/nnkfuzz.py" --seed "${NNKFUZZ_SEED:-1}" --count "${NNKFUZZ_RT_COUNT:-8}" \
		--batch 8 --jit-every 1 --opencl-every 1 --quiet || status=1 ;;
esac
echo "fuzz: $(( $(date +%s) - start ))s"
exit $status
