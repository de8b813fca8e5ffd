#!/bin/sh
# compile-fail.sh: CUDA that is outside the documented primitive set
# (docs/cuda-backend.md) must not compile against the emulation layer, so
# that the CUDA emitter cannot start relying on it unnoticed.  Each case is
# a small kernel with one offending line; a control case without one must
# compile.
#
# Environment: CXX (default c++).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cxx=${CXX:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudaemu-cf.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# try NAME FILE-SCOPE-CODE BODY-CODE: compile a kernel, return the status.
# (__shared__ variables with initializers would compile, as thread_local
# ones with an initializer run once per OS thread: a known hole, see the
# doc; CUDA rejects them.)
try()
{
	{
		echo '#include <cuda_fp16.h>'
		echo '#include <cuda_bf16.h>'
		echo '#include <stdint.h>'
		echo "$2"
		echo 'extern "C" __global__ void k(float *out, int *iout, long *lout)'
		echo '{'
		echo '	unsigned u = threadIdx.x; (void)u;'
		echo "	$3"
		echo '}'
	} >"$tmp/$1.cu"
	# Only inline assembly needs the assembler to be rejected.
	case $1 in asm_*) mode="-c -o $tmp/$1.o" ;; *) mode=-fsyntax-only ;; esac
	# shellcheck disable=SC2086
	"$cxx" -std=gnu++17 -x c++ -I"$here/include" -I"$here" -include "$here/cudaemu.h" \
		$mode "$tmp/$1.cu" >"$tmp/$1.log" 2>&1
}

status=0
if try control '__device__ float twice(float x) { return 2.0f * x; }' \
	'out[u] = twice(__half2float(__float2half(1.0f))) + __shfl_sync(0xffffffffu, 1.0f, 0); __syncthreads();'; then
	echo "compile-fail: ok   control kernel compiles"
else
	echo "compile-fail: FAIL the control kernel does not compile:"
	cat "$tmp/control.log"
	exit 1
fi

# name | file-scope code | kernel body; four compilers at a time.
n=0
while IFS='|' read -r name file body; do
	[ -z "$name" ] && continue
	( if try "$name" "$file" "$body"; then
		echo "compile-fail: FAIL $name compiles but is not in the primitive set: $file $body"
		echo "$name" >"$tmp/$name.compiled"
	else
		echo "compile-fail: ok   $name is rejected ($(grep -m1 -i 'error' "$tmp/$name.log" | cut -c1-100))"
	fi ) &
	n=$((n + 1))
	[ $((n % 4)) -eq 0 ] && wait
done <<'CASES'
constant_memory|__constant__ float c[4];|out[u] = c[0];
float3|| float3 v; v.x = 1.0f; out[u] = v.x;
make_float3|| out[u] = make_float3(1, 2, 3).x;
half2|| __half2 p; (void)p;
half_arithmetic|| __half h = __float2half(1.0f); h = h + h; out[u] = __half2float(h);
half_implicit_conversion|| __half h = 1.0f; out[u] = __half2float(h);
half_from_raw_bits|| __half h{15360}; out[u] = __half2float(h);
bfloat16_arithmetic|| __nv_bfloat16 b = __float2bfloat16(1.0f); out[u] = __bfloat162float(b * b);
shfl_long|| lout[u] = __shfl_sync(0xffffffffu, lout[u], 0);
shfl_half|| __half h = __float2half(1.0f); h = __shfl_down_sync(0xffffffffu, h, 1); (void)h;
ldg_long|| lout[u] = __ldg(lout + u);
popc|| iout[u] = __popc(u);
clz|| iout[u] = __clz((int)u);
syncthreads_count|| iout[u] = __syncthreads_count(1);
match_any|| iout[u] = __match_any_sync(0xffffffffu, (int)u);
reduce_add_sync|| iout[u] = __reduce_add_sync(0xffffffffu, u);
atomic_sub|| atomicSub(iout, 1);
atomic_inc|| atomicInc((unsigned *)iout, 10u);
atomic_add_long_long|| long long v = 0; atomicAdd(&v, 1LL);
atomic_add_half|| __half h = __float2half(1.0f); atomicAdd(&h, h);
fast_expf|| out[u] = __expf(out[u]);
fast_sinf|| out[u] = __sinf(out[u]);
fast_powf|| out[u] = __powf(out[u], 2.0f);
fdividef|| out[u] = __fdividef(out[u], 3.0f);
exp10f|| out[u] = exp10f(out[u]);
ldexpf|| out[u] = ldexpf(out[u], 2);
frexpf|| int e; out[u] = frexpf(out[u], &e);
mixed_sign_min|| iout[u] = min(u, -1);
assign_builtin|| threadIdx.x = 3;
builtin_address|| iout[u] = (int)(intptr_t)&blockDim;
nnk_smem_typed|| extern __shared__ float nnk_smem[]; out[u] = nnk_smem[u];
cooperative_groups|#include <cooperative_groups.h>| cooperative_groups::this_thread_block().sync();
asm_inline_ptx|| asm volatile("membar.gl;");
texture_object|| out[u] = tex1Dfetch<float>((cudaTextureObject_t)0, (int)u);
dynamic_parallelism|| k<<<1, 1>>>(out, iout, lout);
device_runtime_api|| float *p; cudaMalloc(&p, 4);
nanosleep|| __nanosleep(100);
clock64|| iout[u] = (int)clock64();
cuda_arch_macro|| iout[u] = __CUDA_ARCH__;
CASES
wait
if ls "$tmp"/*.compiled >/dev/null 2>&1; then
	status=1
fi
exit $status
