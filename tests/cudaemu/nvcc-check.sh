#!/bin/sh
# nvcc-check.sh: the emulated self-test kernels are real CUDA.  Compiles
# every tests/cudaemu/*.cu with nvcc for sm_80 (no GPU needed), then checks
# the layer's fp16/bf16 conversions bit for bit against the host code of
# CUDA's own cuda_fp16.h/cuda_bf16.h.  Exit 77 (skipped) only when nvcc is
# absent.
#
# Environment: NVCC (from configure; default /usr/local/cuda/bin/nvcc),
# CXX (host compiler for the fp16 comparison; default c++),
# CUDAEMU_FP16_STEP (1 = all 2^32 floats; default 61).
set -u
here=$(cd "$(dirname "$0")" && pwd)

nvcc=${NVCC:-no}
if [ "$nvcc" = no ] || [ -z "$nvcc" ]; then
	nvcc=/usr/local/cuda/bin/nvcc
fi
if ! [ -x "$nvcc" ] && ! command -v "$nvcc" >/dev/null 2>&1; then
	echo "nvcc-check: SKIP: nvcc not found (set NVCC or configure --with-cuda)"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudaemu-nvcc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

for cu in "$here"/*.cu; do
	name=$(basename "$cu" .cu)
	if "$nvcc" -arch=sm_80 -std=c++17 -Werror all-warnings -c -o "$tmp/$name.o" "$cu" >"$tmp/$name.log" 2>&1; then
		echo "nvcc-check: ok   $name.cu (sm_80)"
	else
		echo "nvcc-check: FAIL $name.cu:"
		cat "$tmp/$name.log"
		status=1
	fi
done

# The CUDA headers next to nvcc (bin/../include).
cuda_include=$(cd "$(dirname "$(command -v "$nvcc")")/../include" 2>/dev/null && pwd)
cxx=${CXX:-c++}
if [ -n "$cuda_include" ] && [ -f "$cuda_include/cuda_fp16.h" ]; then
	if "$cxx" -O2 -I"$cuda_include" -c -o "$tmp/ref.o" "$here/fp16_ref_cuda.cc" &&
	   "$cxx" -std=gnu++17 -O2 -I"$here/include" -I"$here" -include "$here/cudaemu.h" \
		-c -o "$tmp/main.o" "$here/fp16_ref_main.cc" &&
	   "$cxx" -o "$tmp/fp16_ref" "$tmp/ref.o" "$tmp/main.o"; then
		"$tmp/fp16_ref" "${CUDAEMU_FP16_STEP:-61}" || status=1
	else
		echo "nvcc-check: FAIL: cannot build the fp16/bf16 comparison with $cxx"
		status=1
	fi
else
	echo "nvcc-check: no cuda_fp16.h next to $nvcc: fp16/bf16 comparison not run"
fi
exit $status
