/* dispatch.h - choosing and launching the CUDA kernels of an instance.
 *
 * The same code drives the real GPU (the cuda extension, through the
 * driver API) and the CUDA emulation layer of the tests: both supply a
 * launcher with their own launch and scratch-memory functions. */
#ifndef NNK_CUDA_DISPATCH_H
#define NNK_CUDA_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "nnk/abi.h"

typedef struct nnk_cuda_launcher {
    void *user;
    /* Launches kernel `name` on a (gx, gy) grid of `block` threads. */
    int (*launch)(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, const nnk_cuda_args *args);
    /* Device memory for partial states; NULL on failure. */
    void *(*alloc)(void *user, size_t bytes);
    void (*release)(void *user, void *ptr);
    /* Optional: 0 when the module lacks kernel NAME__suffix (code of an
     * older nnkc); NULL: every kernel is there. */
    int (*has)(void *user, const char *suffix);
    /* Optional: launch with shmem bytes of dynamic shared memory, at most
     * max_shared (the kernel's static shared memory deducted: the device's
     * opt-in limit, which the launcher raises the kernel's attribute to
     * where needed); NULL or 0: NAME__rd_srow is never used. */
    int (*launch_shm)(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, size_t shmem,
                      const nnk_cuda_args *args);
    size_t max_shared;
    int num_sms;      /* streaming multiprocessors, to size grids */
    /* Test knobs, 0 for the defaults: */
    unsigned block;   /* threads per block (a multiple of 32, at most NNK_CUDA_BLOCK) */
    unsigned max_grid;/* cap on blocks per launch (grid-stride loops take the rest) */
    int force;        /* reductions: 1 block per output, 2 thread per output, 3 split, 4 warp per output,
                       * 5 warp per output with the row on chip (rd_row), 6 block per output with it,
                       * 7 block per output with the row in shared memory (rd_srow)
                       * (5-7 refused where the row does not fit);
                       * elementwise: 1 64-bit offsets in NAME__ew_s (never NNK_CUDA_IDX32) */
    int parts;        /* split reductions: blocks per output position (capped by max_grid) */
    /* The kernels read raw parameters or index(d) (NAME__cu_raw): args
     * then points at the head of an nnk_cuda_rargs, whose range is
     * `range` (device memory the caller zeroed and reads back, or NULL). */
    int raw;
    void *range;
} nnk_cuda_launcher;

/* The reduction layout of an instance, as the CUDA code computes it
 * (NAME__cu_sizes): phases, bytes of the finals, bytes of each phase's
 * state; the elements a thread of NAME__rd_row keeps on chip, 0 when the
 * code has no such kernel (NAME__cu_sizes' flags, bits 8-15). */
typedef struct nnk_cuda_sizes {
    int32_t nphases;
    int32_t finals_size;
    int32_t state_size[64];
    int32_t row_slots;
    /* NAME__rd_srow's row in shared memory: bytes an element (of every
     * input kept), inputs kept (each array at a 16-byte boundary); 0 0
     * without the kernel (flags bits 16-23, 24-27) */
    int32_t row_bytes, row_inputs;
} nnk_cuda_sizes;

/* The dynamic shared memory NAME__rd_srow takes for rows of n elements. */
static inline size_t nnk_cuda_srow_bytes(const nnk_cuda_sizes *s, int64_t n)
{
    return (size_t)n * (size_t)s->row_bytes + 16 * (size_t)s->row_inputs;
}

/* Runs `name` (an instance: NAME__ew_* / NAME__rd_*) over plan `p`, whose
 * data pointers are device pointers.  Returns 0, or -1 with a message. */
int nnk_cuda_dispatch(const char *name, int reduction, const nnk_cuda_sizes *sizes, const nnk_plan *p,
                      const nnk_cuda_launcher *L, char *err, size_t errlen);

/* Converts a host-side plan to the compact CUDA form; -1 if it does not fit. */
int nnk_cuda_plan_from(nnk_cuda_plan *cp, const nnk_plan *p, int nscalars, char *err, size_t errlen);

/* The raw views and iteration shape of a plan for kernels that read them;
 * -1 if a raw view has more dimensions than they take. */
int nnk_cuda_rplan_from(nnk_cuda_rplan *rp, const nnk_plan *p, void *range, char *err, size_t errlen);

#endif
