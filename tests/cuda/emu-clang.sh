#!/bin/sh
# emu-clang.sh: a slice of the emulated conformance with another compiler:
# emu_extra.py (every reduction path and dispatch knob at odd sizes,
# unaligned and strided views, softmax and layernorm) with the generated
# CUDA and the emulation runtime compiled by clang++ -O2 instead of $CXX
# (emu-conformance.sh runs the whole suite with $CXX at -O2, or -O0 under
# the sanitizers), so an optimiser- or compiler-dependent bug of the
# generated code shows.  NNK_EMU_CLANG names the compiler (default
# clang++).  Exit 77 (skipped) when there is no clang++ or no numpy.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
cxx=${NNK_EMU_CLANG:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
	echo "emu-clang: SKIP: no $cxx"
	exit 77
fi
NNK_EMU_CXX=$cxx NNK_EMU_OPT=-O2 NNKCONF_WORK=$top_builddir/tests/cuda/work-clang
export NNK_EMU_CXX NNK_EMU_OPT NNKCONF_WORK
exec "$(dirname "$0")/emu-conformance.sh" emu_extra.py
