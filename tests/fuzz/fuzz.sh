#!/bin/sh
# fuzz.sh: the differential fuzzer's part of make check (tests/fuzz/README):
# every regression case of tests/fuzz/regress, then a fixed-seed slice of
# generated programs (NNKFUZZ_COUNT, default 240, seed NNKFUZZ_SEED,
# default 1), each compiled with nnkc, run through the C back end, and
# compared with the numpy oracle; every 5th batch also on the CUDA
# emulation layer.  Exit 77 (skipped) without a python3 with numpy.
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
set -- "$top_srcdir"/tests/fuzz/regress/*.json
if [ -e "$1" ]; then
	"$py" "$top_srcdir/tests/fuzz/nnkfuzz.py" --case "$@" || status=1
fi
"$py" "$top_srcdir/tests/fuzz/nnkfuzz.py" --seed "${NNKFUZZ_SEED:-1}" --count "${NNKFUZZ_COUNT:-240}" \
	--batch 24 --cuda-every 5 --quiet || status=1
echo "fuzz: $(( $(date +%s) - start ))s"
exit $status
