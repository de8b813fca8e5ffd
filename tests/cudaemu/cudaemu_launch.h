/* cudaemu_launch.h: the C interface of the CUDA emulation layer (test-only).
 *
 * A plain C test driver includes this header and links the emulation
 * runtime (tests/cudaemu/cudaemu.cc).  The kernels themselves live in a
 * CUDA source compiled as C++ against cudaemu.h; see docs/cuda-backend.md,
 * section "The CUDA primitive set" and "Launch conventions".
 *
 * Every launch returns a status (CUDAEMU_OK = 0 on success) and never
 * aborts the process; cudaemu_last_error() describes the last failure of
 * the calling host thread.
 */
#ifndef CUDAEMU_LAUNCH_H
#define CUDAEMU_LAUNCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cudaemu_status {
	CUDAEMU_OK = 0,
	/* bad grid/block dimensions, too much dynamic shared memory */
	CUDAEMU_INVALID_CONFIGURATION = 1,
	/* the kernel misbehaved: barrier divergence, warp-primitive misuse,
	 * deadlock, misaligned __ldg, an exception escaping the kernel */
	CUDAEMU_LAUNCH_FAILURE = 2,
	/* fiber stacks or worker threads could not be allocated */
	CUDAEMU_OUT_OF_RESOURCES = 3,
	/* bad arguments to the launch API itself (null kernel, a parameter
	 * block the ABI cannot forward, a launch from inside a kernel) */
	CUDAEMU_INVALID_VALUE = 4
};

/* Generic kernel pointer for the cuLaunchKernel-like entry: cast the
 * kernel, e.g. (cudaemu_kernel_fn)nnk_add_f32. */
typedef void (*cudaemu_kernel_fn)(void);

/* Run thunk(arg) once per emulated CUDA thread, in a grid of gx*gy*gz
 * blocks of bx*by*bz threads with shmem bytes of dynamic shared memory.
 * The thunk calls the kernel with its real signature, so this works for
 * any kernel and any ABI:
 *     static void thunk(void *p) { nnk_add_f32(*(const struct nnk_add_params *)p); }
 * name (may be NULL) is used in error messages. */
int cudaemu_launch_thunk(const char *name, void (*thunk)(void *arg), void *arg,
                         unsigned gx, unsigned gy, unsigned gz,
                         unsigned bx, unsigned by, unsigned bz, size_t shmem);

/* cuLaunchKernel's shape for kernels that follow the one-parameter
 * convention: fn takes exactly one struct by value; params[0] points to
 * it and params_size is its sizeof.  params_size must be 0 (a kernel
 * without parameters) or larger than 16: the x86-64 System V ABI passes
 * such a struct in memory whatever its fields are, which lets the layer
 * forward the bytes without knowing the type (up to 32764 bytes, CUDA's
 * own limit; alignment up to 16).  Other sizes return CUDAEMU_INVALID_VALUE; use
 * cudaemu_launch_thunk for them. */
int cudaemu_launch_kernel(const char *name, cudaemu_kernel_fn fn,
                          unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, size_t shmem,
                          void **params, size_t params_size);

/* Message of the last failed launch of the calling host thread, or "" if
 * the last launch succeeded.  Valid until the next launch of this thread. */
const char *cudaemu_last_error(void);

/* Number of OS threads that run the blocks of a launch (each runs one
 * block at a time).  0 restores the default: $CUDAEMU_THREADS if set, else
 * the number of online CPUs (at most 64).  1 runs every block on the
 * calling thread, in blockIdx order. */
void cudaemu_set_threads(unsigned n);
unsigned cudaemu_get_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* CUDAEMU_LAUNCH_H */
