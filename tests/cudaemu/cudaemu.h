// cudaemu.h: test-only CUDA emulation layer.
//
// A generated .cu file is compiled as C++ by the host compiler with this
// header force-included and tests/cudaemu/include on the include path:
//
//   g++ -std=gnu++17 -Wno-unknown-pragmas -I tests/cudaemu/include -I tests/cudaemu
//       -include tests/cudaemu/cudaemu.h -x c++ -c k.cu
//
// and linked with tests/cudaemu/cudaemu.cc and -pthread.
//
// It provides exactly the primitive set documented in docs/cuda-backend.md
// ("The CUDA primitive set"); anything else a CUDA source might use is left
// undefined so that it fails to compile here.  The runtime that executes
// kernels (fibers, barriers, warp rendezvous, launch) is cudaemu.cc.
#ifndef CUDAEMU_H
#define CUDAEMU_H

#include "cudaemu_launch.h"

#ifdef __cplusplus

// Host headers the emulated primitives forward to.  <memory> comes before
// the qualifier macros because libstdc++ spells an attribute
// __attribute__((__noinline__)) there, which our __noinline__ would break.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#define NNK_CUDAEMU 1
#define CUDAEMU_VERSION 1

// `#pragma unroll` is CUDA's (and clang's) loop hint; GCC does not know it.
// It changes no result, so it is accepted and ignored.  (GCC before 13
// ignores this line for preprocessor warnings, PR 53431: build emulated
// code with -Wno-unknown-pragmas there.)
#pragma GCC diagnostic ignored "-Wunknown-pragmas"

// ---------------------------------------------------------------------------
// Qualifiers.  Host C++ has one address space, so the memory-space and
// execution-space qualifiers vanish; __shared__ is handled below.
#define __global__
#define __device__
#define __host__
#define __forceinline__ __inline__ __attribute__((__always_inline__))
#define __noinline__ __attribute__((__noinline__))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((__aligned__(n)))
// __restrict__ is a GNU C++ keyword already.

// A __shared__ variable belongs to the whole block.  The runtime runs the
// threads of a block as fibers on one OS thread and at most one block at a
// time per OS thread, so a variable with thread storage duration is exactly
// per-block storage.  The same expansion must work after `extern`
// (dynamic shared memory), which rules out `static`: a block-scope
// `thread_local` is implicitly static, and `extern thread_local` is valid.
// Consequences (documented): no initializers (CUDA forbids them too), and
// static __shared__ arrays keep the previous block's contents.
#define __shared__ thread_local

// ---------------------------------------------------------------------------
// Built-in vector types of the launch geometry.
struct uint3 {
	unsigned int x, y, z;
};

struct dim3 {
	unsigned int x, y, z;
	constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) noexcept
	    : x(vx), y(vy), z(vz) {}
	constexpr dim3(uint3 v) noexcept : x(v.x), y(v.y), z(v.z) {}
	constexpr operator uint3() const noexcept { return uint3{x, y, z}; }
};

constexpr int warpSize = 32;

namespace cudaemu {
namespace detail {

// Set by the runtime: block-wide fields once per block, thread_idx at every
// fiber switch.  __thread (not thread_local) so that reads are plain TLS
// loads without the C++ TLS wrapper call.
struct Builtins {
	uint3 thread_idx, block_idx, block_dim, grid_dim;
};
extern __thread Builtins tl_builtins;

inline uint3 thread_idx() noexcept { return tl_builtins.thread_idx; }
inline uint3 block_idx() noexcept { return tl_builtins.block_idx; }
inline dim3 block_dim() noexcept { return dim3(tl_builtins.block_dim); }
inline dim3 grid_dim() noexcept { return dim3(tl_builtins.grid_dim); }

// Every synchronising primitive is a macro so that the runtime learns the
// call site (file, line, function) for its divergence diagnostics.
#define CUDAEMU_SITE __FILE__, __LINE__, __func__
#define CUDAEMU_SITE_PARAMS const char *cudaemu_file, int cudaemu_line, const char *cudaemu_func
#define CUDAEMU_SITE_ARGS cudaemu_file, cudaemu_line, cudaemu_func

// Runtime entry points (cudaemu.cc).  They are out of line on purpose: a
// call the compiler cannot see through is what makes it reload shared and
// global memory after a fiber switch.
// `site` (from __COUNTER__) tells two __syncthreads() on one line apart.
void syncthreads(CUDAEMU_SITE_PARAMS, int site);
enum WarpOp : int {
	op_shfl_idx, op_shfl_up, op_shfl_down, op_shfl_xor,
	op_ballot, op_any, op_all, op_syncwarp, op_activemask
};
std::uint64_t warp_op(CUDAEMU_SITE_PARAMS, WarpOp op, int type, unsigned mask,
                      std::uint64_t value, int arg, int width);
unsigned activemask(CUDAEMU_SITE_PARAMS);
// Abandons the block (never returns) when called inside a kernel.
void fail_misaligned(CUDAEMU_SITE_PARAMS, const void *p, std::size_t align, const char *type);

} // namespace detail
} // namespace cudaemu

// Read-only like the CUDA built-ins: they are values, not lvalues.
#define threadIdx (::cudaemu::detail::thread_idx())
#define blockIdx (::cudaemu::detail::block_idx())
#define blockDim (::cudaemu::detail::block_dim())
#define gridDim (::cudaemu::detail::grid_dim())

// ---------------------------------------------------------------------------
// Dynamic shared memory.  `extern __shared__ T name[]` must name an entity
// with a definition, so the layer defines exactly one: every kernel
// declares its dynamic shared memory as
//     extern __shared__ __align__(16) unsigned char nnk_smem[];
// (real CUDA places all extern __shared__ arrays at the same address
// anyway).  The runtime sizes it per launch; under AddressSanitizer the
// bytes outside [0, shmem) are poisoned.
//
// The global-dynamic TLS model is deliberate: with the initial-exec model
// GCC 12 computes the address as `addq nnk_smem@gottpoff(%rip), %reg` and
// may branch on the flags of that add (UBSan's null check of a pointer into
// nnk_smem does), but the linker rewrites the add into a `leaq`, which sets
// no flags, and the branch then tests stale flags.  In an executable the
// linker turns global-dynamic into two plain instructions anyway.
// C language linkage: inside an extern "C" kernel, the kernel's own
// `extern __shared__` declaration of it has C linkage, and clang insists
// that it match this one (a C++ function's declaration may differ).
extern "C" {
extern thread_local unsigned char nnk_smem[] __attribute__((tls_model("global-dynamic")));
}

// ---------------------------------------------------------------------------
// Barriers and fences.
#define __syncthreads() ::cudaemu::detail::syncthreads(CUDAEMU_SITE, __COUNTER__)
// Blocks of a launch may run on different OS threads: a device-wide fence
// is a real fence; within a block all threads share one OS thread.
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_signal_fence(__ATOMIC_SEQ_CST)

// ---------------------------------------------------------------------------
// Warp primitives (warp size 32).
namespace cudaemu {
namespace detail {

template <class T> struct shfl_type;
template <> struct shfl_type<int> { static constexpr int code = 1; };
template <> struct shfl_type<unsigned int> { static constexpr int code = 2; };
template <> struct shfl_type<long long> { static constexpr int code = 3; };
template <> struct shfl_type<unsigned long long> { static constexpr int code = 4; };
template <> struct shfl_type<float> { static constexpr int code = 5; };
template <> struct shfl_type<double> { static constexpr int code = 6; };

template <class T>
inline T shfl(CUDAEMU_SITE_PARAMS, WarpOp op, unsigned mask, T var, int arg, int width)
{
	std::uint64_t bits = 0;
	std::memcpy(&bits, &var, sizeof var);
	bits = warp_op(CUDAEMU_SITE_ARGS, op, shfl_type<T>::code, mask, bits, arg, width);
	T r;
	std::memcpy(&r, &bits, sizeof r);
	return r;
}

// Plain overloads (not a template) so that overload resolution matches
// CUDA's: `short` promotes to int, `long` is ambiguous and does not compile.
#define CUDAEMU_SHFL_OVERLOADS(T)                                                              \
	inline T shfl_sync(CUDAEMU_SITE_PARAMS, unsigned mask, T var, int src, int width = 32)     \
	{ return shfl<T>(CUDAEMU_SITE_ARGS, op_shfl_idx, mask, var, src, width); }                \
	inline T shfl_up_sync(CUDAEMU_SITE_PARAMS, unsigned mask, T var, unsigned delta,           \
	                      int width = 32)                                                      \
	{ return shfl<T>(CUDAEMU_SITE_ARGS, op_shfl_up, mask, var, (int)delta, width); }          \
	inline T shfl_down_sync(CUDAEMU_SITE_PARAMS, unsigned mask, T var, unsigned delta,         \
	                        int width = 32)                                                    \
	{ return shfl<T>(CUDAEMU_SITE_ARGS, op_shfl_down, mask, var, (int)delta, width); }        \
	inline T shfl_xor_sync(CUDAEMU_SITE_PARAMS, unsigned mask, T var, int lane_mask,           \
	                       int width = 32)                                                     \
	{ return shfl<T>(CUDAEMU_SITE_ARGS, op_shfl_xor, mask, var, lane_mask, width); }
CUDAEMU_SHFL_OVERLOADS(int)
CUDAEMU_SHFL_OVERLOADS(unsigned int)
CUDAEMU_SHFL_OVERLOADS(long long)
CUDAEMU_SHFL_OVERLOADS(unsigned long long)
CUDAEMU_SHFL_OVERLOADS(float)
CUDAEMU_SHFL_OVERLOADS(double)
#undef CUDAEMU_SHFL_OVERLOADS

inline unsigned ballot_sync(CUDAEMU_SITE_PARAMS, unsigned mask, int pred)
{ return (unsigned)warp_op(CUDAEMU_SITE_ARGS, op_ballot, 0, mask, pred != 0, 0, 32); }
inline int any_sync(CUDAEMU_SITE_PARAMS, unsigned mask, int pred)
{ return (int)warp_op(CUDAEMU_SITE_ARGS, op_any, 0, mask, pred != 0, 0, 32); }
inline int all_sync(CUDAEMU_SITE_PARAMS, unsigned mask, int pred)
{ return (int)warp_op(CUDAEMU_SITE_ARGS, op_all, 0, mask, pred != 0, 0, 32); }
inline void syncwarp(CUDAEMU_SITE_PARAMS, unsigned mask = 0xffffffffu)
{ warp_op(CUDAEMU_SITE_ARGS, op_syncwarp, 0, mask, 0, 0, 32); }

} // namespace detail
} // namespace cudaemu

#define __shfl_sync(...) ::cudaemu::detail::shfl_sync(CUDAEMU_SITE, __VA_ARGS__)
#define __shfl_up_sync(...) ::cudaemu::detail::shfl_up_sync(CUDAEMU_SITE, __VA_ARGS__)
#define __shfl_down_sync(...) ::cudaemu::detail::shfl_down_sync(CUDAEMU_SITE, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cudaemu::detail::shfl_xor_sync(CUDAEMU_SITE, __VA_ARGS__)
#define __ballot_sync(mask, pred) ::cudaemu::detail::ballot_sync(CUDAEMU_SITE, mask, pred)
#define __any_sync(mask, pred) ::cudaemu::detail::any_sync(CUDAEMU_SITE, mask, pred)
#define __all_sync(mask, pred) ::cudaemu::detail::all_sync(CUDAEMU_SITE, mask, pred)
#define __syncwarp(...) ::cudaemu::detail::syncwarp(CUDAEMU_SITE, ##__VA_ARGS__)
#define __activemask() ::cudaemu::detail::activemask(CUDAEMU_SITE)

// ---------------------------------------------------------------------------
// Atomics.  Blocks may run concurrently on several OS threads, so these are
// real atomic read-modify-writes (sequentially consistent; CUDA's are
// relaxed, which is weaker, so correct CUDA code stays correct).
namespace cudaemu {
namespace detail {

template <class T, class F>
inline T atomic_update(T *p, F f) noexcept
{
	T old;
	__atomic_load(p, &old, __ATOMIC_SEQ_CST);
	T desired;
	do {
		desired = f(old);
	} while (!__atomic_compare_exchange(p, &old, &desired, false, __ATOMIC_SEQ_CST,
	                                    __ATOMIC_SEQ_CST));
	return old;
}

template <class T>
inline T atomic_add(T *p, T v) noexcept
{
	if constexpr (std::is_integral<T>::value)
		return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
	else
		return atomic_update(p, [v](T old) { return old + v; });
}
template <class T>
inline T atomic_max(T *p, T v) noexcept
{ return atomic_update(p, [v](T old) { return old < v ? v : old; }); }
template <class T>
inline T atomic_min(T *p, T v) noexcept
{ return atomic_update(p, [v](T old) { return v < old ? v : old; }); }
template <class T>
inline T atomic_exch(T *p, T v) noexcept
{
	T old;
	__atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
	return old;
}
template <class T>
inline T atomic_cas(T *p, T compare, T v) noexcept
{
	__atomic_compare_exchange(p, &compare, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return compare; // the old value, whether or not the swap happened
}

} // namespace detail
} // namespace cudaemu

// One overload per (operation, type) of the documented set, as in CUDA.
#define CUDAEMU_ATOMIC2(name, impl, T) \
	inline T name(T *address, T val) noexcept { return ::cudaemu::detail::impl(address, val); }
CUDAEMU_ATOMIC2(atomicAdd, atomic_add, int)
CUDAEMU_ATOMIC2(atomicAdd, atomic_add, unsigned int)
CUDAEMU_ATOMIC2(atomicAdd, atomic_add, unsigned long long)
CUDAEMU_ATOMIC2(atomicAdd, atomic_add, float)
CUDAEMU_ATOMIC2(atomicAdd, atomic_add, double)
CUDAEMU_ATOMIC2(atomicMax, atomic_max, int)
CUDAEMU_ATOMIC2(atomicMax, atomic_max, unsigned int)
CUDAEMU_ATOMIC2(atomicMax, atomic_max, long long)
CUDAEMU_ATOMIC2(atomicMax, atomic_max, unsigned long long)
CUDAEMU_ATOMIC2(atomicMin, atomic_min, int)
CUDAEMU_ATOMIC2(atomicMin, atomic_min, unsigned int)
CUDAEMU_ATOMIC2(atomicMin, atomic_min, long long)
CUDAEMU_ATOMIC2(atomicMin, atomic_min, unsigned long long)
CUDAEMU_ATOMIC2(atomicExch, atomic_exch, int)
CUDAEMU_ATOMIC2(atomicExch, atomic_exch, unsigned int)
CUDAEMU_ATOMIC2(atomicExch, atomic_exch, unsigned long long)
CUDAEMU_ATOMIC2(atomicExch, atomic_exch, float)
#undef CUDAEMU_ATOMIC2
#define CUDAEMU_ATOMIC_CAS(T)                                               \
	inline T atomicCAS(T *address, T compare, T val) noexcept           \
	{ return ::cudaemu::detail::atomic_cas(address, compare, val); }
CUDAEMU_ATOMIC_CAS(int)
CUDAEMU_ATOMIC_CAS(unsigned int)
CUDAEMU_ATOMIC_CAS(unsigned long long)
#undef CUDAEMU_ATOMIC_CAS

// ---------------------------------------------------------------------------
// Vector types with CUDA's sizes and alignments (the alignment is what makes
// a float4 load a 16-byte load on the GPU; keeping it here lets UBSan's
// alignment check and __ldg's own check catch misaligned vector accesses).
#define CUDAEMU_VEC2(V, T, A)                                  \
	struct alignas(A) V {                                  \
		T x, y;                                        \
	};                                                     \
	inline V make_##V(T x, T y) noexcept { return V{x, y}; }
#define CUDAEMU_VEC4(V, T, A)                                          \
	struct alignas(A) V {                                          \
		T x, y, z, w;                                          \
	};                                                             \
	inline V make_##V(T x, T y, T z, T w) noexcept { return V{x, y, z, w}; }
CUDAEMU_VEC2(float2, float, 8)
CUDAEMU_VEC4(float4, float, 16)
CUDAEMU_VEC2(int2, int, 8)
CUDAEMU_VEC4(int4, int, 16)
CUDAEMU_VEC2(uint2, unsigned int, 8)
CUDAEMU_VEC4(uint4, unsigned int, 16)
CUDAEMU_VEC2(double2, double, 16)
CUDAEMU_VEC2(longlong2, long long, 16)
CUDAEMU_VEC2(ushort2, unsigned short, 4)
CUDAEMU_VEC4(ushort4, unsigned short, 8)
CUDAEMU_VEC4(short4, short, 8)
CUDAEMU_VEC4(char4, signed char, 4)
CUDAEMU_VEC4(uchar4, unsigned char, 4)
#undef CUDAEMU_VEC2
#undef CUDAEMU_VEC4

// ---------------------------------------------------------------------------
// cuda_fp16.h / cuda_bf16.h subset: 16-bit storage types and their
// conversions.  No arithmetic, no implicit conversions: the raw bits are
// private so that `__half h{1}` does not compile (in CUDA it would convert
// the value 1, here it would have stored bits).
namespace cudaemu {
namespace detail {
struct bits_access;
template <class Tag>
class storage16 {
	unsigned short bits_;
	friend struct bits_access;

public:
	storage16() = default;
};
struct half_tag;
struct bfloat16_tag;
} // namespace detail
} // namespace cudaemu

typedef ::cudaemu::detail::storage16<::cudaemu::detail::half_tag> __half;
typedef ::cudaemu::detail::storage16<::cudaemu::detail::bfloat16_tag> __nv_bfloat16;

namespace cudaemu {
namespace detail {

struct bits_access {
	template <class Tag>
	static unsigned short get(storage16<Tag> v) noexcept { return v.bits_; }
	template <class Tag>
	static storage16<Tag> make(unsigned short b) noexcept
	{
		storage16<Tag> v;
		v.bits_ = b;
		return v;
	}
};

template <class To, class From>
inline To bit_cast(From from) noexcept
{
	static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
	To to;
	std::memcpy(&to, &from, sizeof to);
	return to;
}

// Conversions follow CUDA's own host implementations bit for bit: IEEE
// round-to-nearest-even, overflow to infinity, gradual underflow, and every
// NaN becomes the canonical NaN (0x7fff for half/bfloat16, 0x7fffffff for
// float from half).
inline unsigned short float_to_half_rn(float f) noexcept
{
	const std::uint32_t x = bit_cast<std::uint32_t>(f);
	const std::uint32_t sign = (x >> 16) & 0x8000u;
	const std::uint32_t a = x & 0x7fffffffu;
	if (a > 0x7f800000u)
		return 0x7fff;
	if (a >= 0x477ff000u) // >= 65520: rounds to infinity (or is infinite)
		return (unsigned short)(sign | 0x7c00u);
	if (a >= 0x38800000u) { // normal half: rebias, round away 13 bits
		const std::uint32_t m = a - 0x38000000u;
		return (unsigned short)(sign | ((m + 0xfffu + ((m >> 13) & 1u)) >> 13));
	}
	// Subnormal half (or zero): the value in units of 2^-24 is M >> s.
	const std::uint32_t e = a >> 23;
	const std::uint32_t shift = 126u - e;
	if (e == 0 || shift > 24u) // below 2^-25 (or a float subnormal): zero
		return (unsigned short)sign;
	const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
	std::uint32_t r = m >> shift;
	const std::uint32_t rem = m & ((1u << shift) - 1u);
	const std::uint32_t half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (r & 1u)))
		++r; // may carry into the smallest normal, which is the right encoding
	return (unsigned short)(sign | r);
}

inline float half_to_float(unsigned short h) noexcept
{
	const std::uint32_t sign = (std::uint32_t)(h & 0x8000u) << 16;
	const std::uint32_t e = (h >> 10) & 0x1fu;
	std::uint32_t m = h & 0x3ffu;
	if (e == 0x1f)
		return bit_cast<float>(m ? 0x7fffffffu : (sign | 0x7f800000u));
	if (e != 0)
		return bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
	if (m == 0)
		return bit_cast<float>(sign);
	// Subnormal half: normalise; every half subnormal is a float normal.
	std::uint32_t fe = 113u;
	while (!(m & 0x400u)) {
		m <<= 1;
		--fe;
	}
	return bit_cast<float>(sign | (fe << 23) | ((m & 0x3ffu) << 13));
}

inline unsigned short float_to_bfloat16_rn(float f) noexcept
{
	const std::uint32_t x = bit_cast<std::uint32_t>(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return 0x7fff;
	return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

} // namespace detail
} // namespace cudaemu

inline unsigned short __half_as_ushort(__half h) noexcept
{ return ::cudaemu::detail::bits_access::get(h); }
inline __half __ushort_as_half(unsigned short i) noexcept
{ return ::cudaemu::detail::bits_access::make<::cudaemu::detail::half_tag>(i); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) noexcept
{ return ::cudaemu::detail::bits_access::get(h); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short i) noexcept
{ return ::cudaemu::detail::bits_access::make<::cudaemu::detail::bfloat16_tag>(i); }

inline float __half2float(__half a) noexcept
{ return ::cudaemu::detail::half_to_float(__half_as_ushort(a)); }
inline __half __float2half_rn(float a) noexcept
{ return __ushort_as_half(::cudaemu::detail::float_to_half_rn(a)); }
inline __half __float2half(float a) noexcept { return __float2half_rn(a); }
inline float __bfloat162float(__nv_bfloat16 a) noexcept
{ return ::cudaemu::detail::bit_cast<float>((std::uint32_t)__bfloat16_as_ushort(a) << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float a) noexcept
{ return __ushort_as_bfloat16(::cudaemu::detail::float_to_bfloat16_rn(a)); }
inline __nv_bfloat16 __float2bfloat16(float a) noexcept { return __float2bfloat16_rn(a); }

// ---------------------------------------------------------------------------
// Bit casts.
inline int __float_as_int(float x) noexcept { return ::cudaemu::detail::bit_cast<int>(x); }
inline float __int_as_float(int x) noexcept { return ::cudaemu::detail::bit_cast<float>(x); }
inline unsigned int __float_as_uint(float x) noexcept
{ return ::cudaemu::detail::bit_cast<unsigned int>(x); }
inline float __uint_as_float(unsigned int x) noexcept
{ return ::cudaemu::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) noexcept
{ return ::cudaemu::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) noexcept
{ return ::cudaemu::detail::bit_cast<double>(x); }

// ---------------------------------------------------------------------------
// __ldg: a plain load, plus the alignment check the GPU would fault on.
namespace cudaemu {
namespace detail {

template <class T> struct ldg_type { static constexpr const char *name = nullptr; };
#define CUDAEMU_LDG_TYPE(T) \
	template <> struct ldg_type<T> { static constexpr const char *name = #T; };
CUDAEMU_LDG_TYPE(char)
CUDAEMU_LDG_TYPE(signed char)
CUDAEMU_LDG_TYPE(unsigned char)
CUDAEMU_LDG_TYPE(short)
CUDAEMU_LDG_TYPE(unsigned short)
CUDAEMU_LDG_TYPE(int)
CUDAEMU_LDG_TYPE(unsigned int)
CUDAEMU_LDG_TYPE(long long)
CUDAEMU_LDG_TYPE(unsigned long long)
CUDAEMU_LDG_TYPE(float)
CUDAEMU_LDG_TYPE(double)
CUDAEMU_LDG_TYPE(__half)
CUDAEMU_LDG_TYPE(__nv_bfloat16)
CUDAEMU_LDG_TYPE(float2)
CUDAEMU_LDG_TYPE(float4)
CUDAEMU_LDG_TYPE(int2)
CUDAEMU_LDG_TYPE(int4)
CUDAEMU_LDG_TYPE(uint2)
CUDAEMU_LDG_TYPE(uint4)
CUDAEMU_LDG_TYPE(double2)
CUDAEMU_LDG_TYPE(longlong2)
CUDAEMU_LDG_TYPE(ushort2)
CUDAEMU_LDG_TYPE(ushort4)
CUDAEMU_LDG_TYPE(short4)
CUDAEMU_LDG_TYPE(char4)
CUDAEMU_LDG_TYPE(uchar4)
#undef CUDAEMU_LDG_TYPE

template <class T>
inline typename std::enable_if<ldg_type<T>::name != nullptr, T>::type
ldg(CUDAEMU_SITE_PARAMS, const T *p)
{
	if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0)
		fail_misaligned(CUDAEMU_SITE_ARGS, p, alignof(T), ldg_type<T>::name);
	return *p;
}

} // namespace detail
} // namespace cudaemu

#define __ldg(ptr) ::cudaemu::detail::ldg(CUDAEMU_SITE, ptr)

// ---------------------------------------------------------------------------
// Math.  The C functions (sqrtf ... fabs, sincosf, the double versions) and
// the isnan/isinf/isfinite/signbit overloads come from the host's
// <math.h>/<cmath>; only what the host lacks is defined here.  Results are
// the host libm's, not bit-identical to CUDA's (compare with ulp tolerances).
inline float rsqrtf(float x) noexcept { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) noexcept { return 1.0 / sqrt(x); }

// CUDA's integer and floating min/max: one overload per type, so both
// arguments must have (or promote to) the same type; mixed signedness is
// ambiguous here, deliberately.
#define CUDAEMU_MINMAX(T)                                                            \
	inline T min(T a, T b) noexcept { return b < a ? b : a; }                     \
	inline T max(T a, T b) noexcept { return a < b ? b : a; }
CUDAEMU_MINMAX(int)
CUDAEMU_MINMAX(unsigned int)
CUDAEMU_MINMAX(long long)
CUDAEMU_MINMAX(unsigned long long)
#undef CUDAEMU_MINMAX
inline float min(float a, float b) noexcept { return fminf(a, b); }
inline float max(float a, float b) noexcept { return fmaxf(a, b); }
inline double min(double a, double b) noexcept { return fmin(a, b); }
inline double max(double a, double b) noexcept { return fmax(a, b); }
inline unsigned int umin(unsigned int a, unsigned int b) noexcept { return min(a, b); }
inline unsigned int umax(unsigned int a, unsigned int b) noexcept { return max(a, b); }
inline long long llmin(long long a, long long b) noexcept { return min(a, b); }
inline long long llmax(long long a, long long b) noexcept { return max(a, b); }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) noexcept
{ return min(a, b); }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) noexcept
{ return max(a, b); }
// abs(int), labs, llabs come from <stdlib.h>.

// ---------------------------------------------------------------------------
// Launching (host side).  Mirrors kernel<<<grid, block, shmem>>>(args...):
//     int st = CUDAEMU_LAUNCH(kernel, grid, block, shmem, args...);
//     if (st) fprintf(stderr, "%s\n", cudaemu::last_error());
// Arguments are converted to the kernel's parameter types once and every
// emulated thread receives its own copy, as from CUDA's parameter space.
namespace cudaemu {

inline const char *last_error() noexcept { return cudaemu_last_error(); }
inline void set_threads(unsigned n) noexcept { cudaemu_set_threads(n); }
inline unsigned threads() noexcept { return cudaemu_get_threads(); }

namespace detail {
using invoke_fn = void (*)(const void *ctx);
int launch_erased(const char *name, void (*kernel)(), dim3 grid, dim3 block, std::size_t shmem,
                  invoke_fn invoke, const void *ctx) noexcept;
} // namespace detail

template <class... P, class... A>
int launch_named(const char *name, void (*kernel)(P...), dim3 grid, dim3 block,
                 std::size_t shmem, A &&...args) noexcept
{
	static_assert(sizeof...(P) == sizeof...(A), "wrong number of kernel arguments");
	static_assert((std::is_trivially_copyable<typename std::decay<P>::type>::value && ...),
	              "kernel parameters must be trivially copyable");
	using Args = std::tuple<typename std::decay<P>::type...>;
	struct Call {
		void (*kernel)(P...);
		Args args;
	};
	const Call call{kernel, Args(std::forward<A>(args)...)};
	return detail::launch_erased(
	    name, reinterpret_cast<void (*)()>(kernel), grid, block, shmem,
	    [](const void *ctx) {
		    const Call &c = *static_cast<const Call *>(ctx);
		    std::apply(c.kernel, c.args);
	    },
	    &call);
}

template <class... P, class... A>
int launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t shmem, A &&...args) noexcept
{
	return launch_named(nullptr, kernel, grid, block, shmem, std::forward<A>(args)...);
}

} // namespace cudaemu

#define CUDAEMU_LAUNCH(kernel, grid, block, shmem, ...) \
	::cudaemu::launch_named(#kernel, kernel, grid, block, shmem, ##__VA_ARGS__)

// ---------------------------------------------------------------------------
// Host libm functions that CUDA also has but that are not in the documented
// set would otherwise compile silently here; poison the ones no standard
// header needs after this point (the double versions of ldexp, frexp,
// nextafter, ... cannot be poisoned: libstdc++ headers use those names).
// glibc also declares __expf, __sinf, ... (its internal aliases), which
// are the names of CUDA's fast approximate intrinsics: poison those too.
#ifndef CUDAEMU_NO_POISON
#pragma GCC poison exp10f exp10 ldexpf frexpf modff scalbnf scalblnf ilogbf logbf
#pragma GCC poison nextafterf nexttowardf fdimf remainderf remquof lrintf llrintf
#pragma GCC poison lroundf llroundf j0f j1f jnf y0f y1f ynf j0 j1 jn y0 yn
#pragma GCC poison __expf __exp10f __logf __log2f __log10f __sinf __cosf __tanf __powf
#pragma GCC poison __sincosf
#endif

#endif /* __cplusplus */
#endif /* CUDAEMU_H */
