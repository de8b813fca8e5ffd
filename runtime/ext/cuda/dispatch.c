/* dispatch.c - which CUDA kernel runs a call, with which grid.
 *
 * Elementwise: contiguous operands take NAME__ew_c (32-bit indices, 16-byte
 * vector accesses when every operand is aligned) or NAME__ew_c64; any other
 * layout NAME__ew_s.  Reductions: many output positions over a contiguous
 * slice take a block each (NAME__rd_block); many output positions over
 * outer axes a thread each (NAME__rd_thread, whose neighbouring threads read
 * neighbouring addresses); few output positions with long slices split each
 * slice over many blocks, phase by phase (NAME__rd_part, NAME__rd_fin, then
 * NAME__rd_epi), merging the parts in a fixed order so that every run gives
 * the same bits (not one block for the whole reduction). */
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

/* NNK_WARP_ROW: slices up to this long take a warp each (rd_warp) rather
 * than a block: 32 lanes with 4 accumulators each cover 128 elements per
 * step, so a 1024-element row is 8 steps, and a block per row of 64 left
 * 192 of its 256 threads idle.  The split's sizes: below. */
enum { NNK_SPLIT_MIN = 64, NNK_SPLIT_STREAM = 4096, NNK_WARP_ROW = 1024 };

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return -1;
}

int nnk_cuda_plan_from(nnk_cuda_plan *cp, const nnk_plan *p, int nscalars, char *err, size_t errlen)
{
    if (p->ndim > NNK_CUDA_MAX_DIMS)
        return fail(err, errlen, "the call has more dimensions after merging than the CUDA kernels take (8)");
    if (p->nops > NNK_CUDA_MAX_TENSORS)
        return fail(err, errlen, "the kernel has more tensors than the CUDA kernels take (16)");
    if (nscalars > NNK_CUDA_MAX_SCALARS)
        return fail(err, errlen, "the kernel has more scalar parameters than the CUDA kernels take (16)");
    memset(cp, 0, sizeof *cp);
    cp->ndim = p->ndim;
    cp->nred = p->nred;
    cp->nops = p->nops;
    cp->nkept = p->nkept;
    cp->nreduced = p->nreduced;
    for (int d = 0; d < p->ndim; d++) {
        cp->shape[d] = p->shape[d];
        for (int k = 0; k <= p->nops; k++)
            cp->strides[k][d] = p->strides[k][d];
    }
    int aligned = 1;
    for (int k = 0; k < p->nops; k++) {
        cp->data[k] = p->data[k];
        aligned &= ((uintptr_t)p->data[k] & 15) == 0;
    }
    for (int s = 0; s < nscalars; s++)
        cp->scalars[s] = p->scalars[s];
    cp->flags = aligned ? NNK_CUDA_VEC : 0;
    return 0;
}

int nnk_cuda_rplan_from(nnk_cuda_rplan *rp, const nnk_plan *p, void *range, char *err, size_t errlen)
{
    memset(rp, 0, sizeof *rp);
    if (p->nraw < 0 || p->nraw > NNK_MAX_RAW || p->iter_ndim < 0 || p->iter_ndim > NNK_MAX_DIMS)
        return fail(err, errlen, "a bad plan of raw parameters");
    rp->iter_ndim = p->iter_ndim;
    rp->nraw = p->nraw;
    for (int d = 0; d < p->iter_ndim; d++) {
        rp->iter_shape[d] = p->iter_shape[d];
        rp->iter_inner[d] = p->iter_inner[d];
    }
    for (int r = 0; r < p->nraw; r++) {
        const nnk_raw_view *v = &p->raw[r];
        if (v->ndim > NNK_CUDA_MAX_DIMS)
            return fail(err, errlen, "a raw parameter has more dimensions than the CUDA kernels take (8)");
        rp->raw[r].data = v->data;
        rp->raw[r].ndim = v->ndim;
        rp->raw[r].size = v->size;
        for (int d = 0; d < v->ndim; d++) {
            rp->raw[r].shape[d] = v->shape[d];
            rp->raw[r].strides[d] = v->strides[d];
        }
    }
    rp->range = (nnk_range_error *)range;
    return 0;
}

static unsigned grid_for(int64_t work, unsigned block, const nnk_cuda_launcher *L)
{
    int64_t g = (work + block - 1) / block;
    /* enough blocks to fill the device several times; grid-stride loops
     * cover the rest */
    int64_t cap = L->max_grid ? L->max_grid : (int64_t)(L->num_sms > 0 ? L->num_sms : 16) * 32;
    if (g > cap)
        g = cap;
    return (unsigned)(g < 1 ? 1 : g);
}

static int launch_shm(const nnk_cuda_launcher *L, const char *base, const char *suffix, unsigned gx, unsigned gy,
                      unsigned block, size_t shmem, const nnk_cuda_args *a, char *err, size_t errlen)
{
    char name[256];
    snprintf(name, sizeof name, "%s__%s", base, suffix);
    if ((shmem ? L->launch_shm(L->user, name, gx, gy, block, shmem, a) : L->launch(L->user, name, gx, gy, block, a)) !=
        0) {
        if (err && errlen && !err[0])
            snprintf(err, errlen, "launching %s failed", name);
        return -1;
    }
    return 0;
}

static int launch(const nnk_cuda_launcher *L, const char *base, const char *suffix, unsigned gx, unsigned gy,
                  unsigned block, const nnk_cuda_args *a, char *err, size_t errlen)
{
    return launch_shm(L, base, suffix, gx, gy, block, 0, a, err, errlen);
}

static int contiguous(const nnk_plan *p)
{
    if (p->ndim == 0)
        return 1;
    if (p->ndim > 1)
        return 0;
    for (int k = 0; k <= p->nops; k++)
        if (p->strides[k][0] != 1)
            return 0;
    return 1;
}

/* The slice is contiguous for the operands the kernel reads. */
static int rows_contiguous(const nnk_plan *p)
{
    if (p->nred != 1)
        return p->nred == 0;
    for (int k = 0; k < p->nops; k++)
        if (p->strides[k][p->ndim - 1] != 1 && p->strides[k][p->ndim - 1] != 0)
            return 0;
    return 1;
}

/* NNK_CUDA_IDX32 for NAME__ew_s when the flat index and every operand's
 * offsets (idx included) stay inside int32_t, with the magic numbers of
 * each extent: shift = ceil(log2 e), magic = 2^32 (2^shift - e) / e + 1,
 * so that (umulhi(i, magic) + i) >> shift = i / e for i < 2^31 (the sum
 * cannot wrap: umulhi(i, magic) <= i). */
static void fast_divmod(nnk_cuda_args *a, const nnk_plan *p)
{
    const int64_t lim = INT32_MAX;
    if (p->nkept > lim)
        return;
    for (int k = 0; k <= p->nops; k++) {
        int64_t hi = 0, lo = 0;
        for (int d = 0; d < p->ndim; d++) {
            /* extents are under 2^31 here: no product passes 2^62 */
            int64_t st = p->strides[k][d];
            if (st > lim || st < -lim)
                return;
            int64_t span = (p->shape[d] - 1) * st;
            if (span > 0)
                hi += span;
            else
                lo += span;
            if (hi > lim || lo < -lim)
                return;
        }
    }
    for (int d = 0; d < p->ndim; d++) {
        uint64_t e = (uint64_t)p->shape[d];
        uint32_t sh = 0;
        while (sh < 31 && ((uint64_t)1 << sh) < e)
            sh++;
        a->shift[d] = sh;
        a->magic[d] = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << sh) - e)) / e + 1);
    }
    a->p.flags |= NNK_CUDA_IDX32;
}

/* The warp-per-row kernel's finals of a warp each fit its shared memory
 * (NNK_WROWS in templates/cuda/prelude.tmpl). */
static int warp_fits(const nnk_cuda_sizes *sizes)
{
    return sizes && sizes->finals_size >= 0 && (int64_t)sizes->finals_size * (NNK_CUDA_BLOCK / 32) <= 16384;
}

int nnk_cuda_dispatch(const char *name, int reduction, const nnk_cuda_sizes *sizes, const nnk_plan *p,
                      const nnk_cuda_launcher *L, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    /* (kernels of other modules read the nnk_cuda_args at its head only) */
    nnk_cuda_rargs ra;
    memset(&ra, 0, sizeof ra);
    if (nnk_cuda_plan_from(&ra.a.p, p, NNK_CUDA_MAX_SCALARS, err, errlen))
        return -1;
    if (L->raw && nnk_cuda_rplan_from(&ra.r, p, L->range, err, errlen))
        return -1;
    unsigned block = L->block ? L->block : NNK_CUDA_BLOCK;
    if (block % 32 || block > NNK_CUDA_BLOCK)
        return fail(err, errlen, "the block size must be a multiple of 32, at most NNK_CUDA_BLOCK");
    if (p->nkept == 0)
        return 0;
    if (!reduction) {
        if (contiguous(p))
            return launch(L, name, p->nkept < ((int64_t)1 << 31) ? "ew_c" : "ew_c64", grid_for(p->nkept, block, L), 1,
                          block, &ra.a, err, errlen);
        if (L->force != 1) /* the test knob: 64-bit offsets */
            fast_divmod(&ra.a, p);
        return launch(L, name, "ew_s", grid_for(p->nkept, block, L), 1, block, &ra.a, err, errlen);
    }
    int sms = L->num_sms > 0 ? L->num_sms : 16;
    int force = L->force;
    int64_t n = p->nreduced;
    if (!force) {
        if (p->nkept >= (int64_t)sms * 4 || n <= 4096)
            force = rows_contiguous(p) ? 1 : (p->nkept >= (int64_t)sms * 64 ? 2 : 1);
        else
            force = 3;
        /* short rows: a 256-thread block would leave most threads idle */
        if (force == 1 && rows_contiguous(p) && n <= NNK_WARP_ROW && p->nkept >= (int64_t)sms * 4 && warp_fits(sizes) &&
            (!L->has || L->has(L->user, "rd_warp")))
            force = 4;
    }
    /* The row on chip: slices of one dimension that a thread's row_slots
     * elements cover are read once (the kernels keep them in registers
     * across the phases), with the same bits as rd_warp and rd_block (the
     * same elements in the same accumulators, folded in the same order). */
    int slots = sizes && sizes->row_slots > 0 && p->nred == 1 ? sizes->row_slots : 0;
    int has_row = !L->has || L->has(L->user, "rd_row");
    if (!L->force && slots && has_row && ((force == 4 && n <= (int64_t)32 * slots) || (force == 1 && n <= (int64_t)block * slots)))
        force = force == 4 ? 5 : 6;
    /* Longer rows in dynamic shared memory while they fit (the launcher's
     * max_shared: the device's opt-in limit less the kernel's static
     * shared memory), rd_block's order and bits; longer still: read per
     * phase (rd_block). */
    int srow = sizes && sizes->row_bytes > 0 && p->nred == 1 && L->launch_shm && L->max_shared > 0 &&
               (!L->has || L->has(L->user, "rd_srow"));
    size_t shmem = sizes ? nnk_cuda_srow_bytes(sizes, n) : 0;
    if (!L->force && force == 1 && srow && n > 0 && shmem <= L->max_shared)
        force = 7;
    if (force == 7) {
        if (!srow || n <= 0 || shmem > L->max_shared)
            return fail(err, errlen, "the row does not fit the kernel that keeps it on chip");
        return launch_shm(L, name, "rd_srow", grid_for(p->nkept * block, block, L), 1, block, shmem, &ra.a, err, errlen);
    }
    if (force == 5 || force == 6) {
        int64_t lanes = force == 5 ? 32 : block;
        if (!slots || n > lanes * slots)
            return fail(err, errlen, "the row does not fit the kernel that keeps it on chip");
        /* rd_warp's or rd_block's grid */
        unsigned rows = force == 5 && warp_fits(sizes) ? block / 32 : 1;
        if (force == 5)
            ra.a.p.flags |= NNK_CUDA_WROW;
        return launch(L, name, "rd_row", grid_for(force == 5 ? (p->nkept + rows - 1) / rows * block : p->nkept * block, block, L),
                      1, block, &ra.a, err, errlen);
    }
    if (force == 4) {
        /* a warp per position, NNK_WROWS (the prelude's) per block */
        unsigned rows = sizes && warp_fits(sizes) ? block / 32 : 1;
        return launch(L, name, "rd_warp", grid_for((p->nkept + rows - 1) / rows * block, block, L), 1, block, &ra.a, err,
                      errlen);
    }
    if (force == 1)
        return launch(L, name, "rd_block", grid_for(p->nkept * block, block, L), 1, block, &ra.a, err, errlen);
    if (force == 2)
        return launch(L, name, "rd_thread", grid_for(p->nkept, block, L), 1, block, &ra.a, err, errlen);

    /* Split: each thread of a part streams at least NNK_SPLIT_STREAM
     * elements (16 KB of f32: the block fold and rd_fin's merge are then
     * noise), up to 8 blocks per SM; but never fewer parts than one wave of
     * the device (a block per SM) while each thread still has
     * NNK_SPLIT_MIN elements, or a 4 MB sum would run on one SM. */
    if (!sizes || sizes->nphases < 0 || sizes->nphases > 64)
        return fail(err, errlen, "missing reduction sizes for a split reduction");
    if (p->nkept > 65535)
        return fail(err, errlen, "too many output positions for a split reduction");
    int64_t parts = n / ((int64_t)NNK_SPLIT_STREAM * block);
    int64_t wave = sms / p->nkept, most = (n + NNK_SPLIT_MIN * block - 1) / (NNK_SPLIT_MIN * block);
    if (wave > most)
        wave = most;
    if (parts < wave)
        parts = wave;
    if (parts > (int64_t)sms * 8 / p->nkept)
        parts = (int64_t)sms * 8 / p->nkept;
    if (L->parts)
        parts = L->parts < (1 << 20) ? L->parts : (1 << 20);
    if (parts < 1)
        parts = 1;
    if (L->max_grid && parts > (int64_t)L->max_grid)
        parts = L->max_grid;
    ra.a.nparts = (int32_t)parts;
    size_t biggest = 0;
    for (int ph = 0; ph < sizes->nphases; ph++)
        if ((size_t)sizes->state_size[ph] > biggest)
            biggest = (size_t)sizes->state_size[ph];
    ra.a.scratch = L->alloc(L->user, (size_t)p->nkept * (size_t)parts * (biggest ? biggest : 1));
    ra.a.finals = L->alloc(L->user, (size_t)p->nkept * (size_t)(sizes->finals_size ? sizes->finals_size : 1));
    int rc = 0;
    if (!ra.a.scratch || !ra.a.finals) {
        /* the launcher may have said why */
        rc = err && errlen && err[0] ? -1 : fail(err, errlen, "out of device memory for a split reduction");
    } else {
        for (int ph = 1; ph <= sizes->nphases && rc == 0; ph++) {
            ra.a.phase = ph;
            rc = launch(L, name, "rd_part", (unsigned)parts, (unsigned)p->nkept, block, &ra.a, err, errlen);
            if (rc == 0)
                rc = launch(L, name, "rd_fin", grid_for(p->nkept * block, block, L), 1, block, &ra.a, err, errlen);
        }
        int64_t total = p->nkept * (n > 0 ? n : 1);
        if (rc == 0)
            rc = launch(L, name, "rd_epi", grid_for(total, block, L), 1, block, &ra.a, err, errlen);
    }
    if (ra.a.scratch)
        L->release(L->user, ra.a.scratch);
    if (ra.a.finals)
        L->release(L->user, ra.a.finals);
    return rc;
}
