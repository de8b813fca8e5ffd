#!/bin/sh
# emu-conformance.sh [PART...]: the generated CUDA of the conformance
# kernels on the CUDA emulation layer, through the GPU's dispatch, against
# the C back end (emu_conformance.py): the numeric suites of
# tests/conformance (test_half.py, test_elementwise.py, test_reduction.py, test_complex.py, test_raw.py)
# with every NAME_strided call also emulated, and emu_extra.py (odd sizes,
# every dispatch knob).  PARTs are those file names (default: all); make
# check runs them as three tests (emu-*.sh) so that make -j spreads them.
# NNK_EMU_CXX and NNK_EMU_OPT pick the compiler of the generated CUDA
# (emu_conformance.py; default: $CXX, -O2, or -O0 in a sanitizer build).
# Prints the time of each part.  Exit 77 (skipped) when there is no
# python3 with numpy.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
py=${PYTHON_NUMPY:-}
if [ -z "$py" ]; then
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import numpy' >/dev/null 2>&1; then py=$p; break; fi
	done
fi
if [ -z "$py" ] || ! "$py" -c 'import numpy' >/dev/null 2>&1; then
	echo "emu-conformance: SKIP: no python3 with numpy"
	exit 77
fi
# a work directory of its own: the C suites may build the same files at once
NNKCONF_WORK=${NNKCONF_WORK:-$top_builddir/tests/cuda/work}
# the generated CUDA at -O2 in the plain build, at -O0 under the sanitizers
# (tests/run-all.sh runs both), so an optimiser-dependent bug shows in one
if [ -z "${NNK_EMU_OPT:-}" ]; then
	if [ -n "${SAN_FLAGS:-}" ]; then NNK_EMU_OPT=-O0; else NNK_EMU_OPT=-O2; fi
fi
export top_srcdir top_builddir NNKCONF_WORK NNK_EMU_OPT
status=0
start=$(date +%s)
[ $# -gt 0 ] || set -- test_half.py test_elementwise.py test_reduction.py test_complex.py test_raw.py emu_extra.py
for t in "$@"; do
	t0=$(date +%s)
	if [ "$t" = emu_extra.py ]; then
		"$py" "$top_srcdir/tests/cuda/emu_extra.py" || status=1
	else
		"$py" "$top_srcdir/tests/cuda/emu_conformance.py" "$t" || status=1
	fi
	echo "emu-conformance: $t: $(( $(date +%s) - t0 ))s"
done
echo "emu-conformance: $* in $(( $(date +%s) - start ))s"
exit $status
