/* exec.c - running a host kernel (nnk_kernel_desc with host code) over a
 * plan on the thread pool.
 *
 * Elementwise work is cut into chunks of CHUNK elements (128 KiB of each
 * f32 operand: a few operands fit a core's L2).  A reduction split along
 * its reduced range is cut into NNK_SPLIT_CHUNK pieces from the start of
 * the slice, independent of the thread count, and merged in a fixed tree,
 * so it gives the same bits with any NNK_NUM_THREADS.  A reduction split
 * by output positions computes each position whole (run), whose bits do
 * not depend on which positions share a task; its tasks are ranges of
 * whole positions, large enough for the column order (sum over axis 0) to
 * stream long rows.  An elementwise kernel with a transposed input runs in
 * tiles.  Small work runs inline on the caller without waking the pool.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum {
    CHUNK = 32768,         /* elements per task, at most */
    MIN_CHUNK = 4096,      /* ... and at least (elementwise) */
    MIN_TASKS = 8,         /* elementwise tasks per thread, if chunks of MIN_CHUNK allow */
    TILE_ROWS = 32,        /* a transposed input's tiles: TILE_ROWS x TILE_COLS elements */
    TILE_COLS = 256,
    INLINE_WORK = 16384,   /* below this many elements, no threads */
    TASKS_PER_THREAD = 4,  /* reductions split by positions: at most this many tasks per thread */
};

/* Whether the generated code will take the column order (its __colok: the
 * innermost kept dimension contiguous, the innermost reduced one not, for
 * some tensor input).  Only the size of the tasks depends on it. */
static bool column_like(const nnk_kernel_desc *desc, const nnk_plan *p)
{
    int32_t k0 = p->ndim - p->nred, last = p->ndim - 1;
    if (p->nred < 1 || k0 < 1)
        return false;
    for (int32_t i = 0, op = 0; i < desc->nparams; i++) {
        if (!(desc->params[i].flags & NNK_PARAM_TENSOR))
            continue;
        if (p->strides[op][k0 - 1] == 1 && p->strides[op][last] != 1)
            return true;
        op++;
    }
    return false;
}

/* ---- elementwise, and reductions split by output positions ---------------- */

typedef struct range_job {
    const nnk_kernel_desc *desc;
    const nnk_plan *plan;
    int64_t n, per_task;
} range_job;

static void range_task(void *arg, int64_t t)
{
    range_job *j = arg;
    int64_t b = t * j->per_task, e = b + j->per_task < j->n ? b + j->per_task : j->n;
    j->desc->run(j->plan, b, e);
}

/* ---- elementwise with a transposed input: tiles ------------------------------ */

/* An input read across its rows (x.T: its innermost plan dimension has a
 * stride, the one before it is contiguous) gets a new cache line for every
 * element of a row, and a row of 4096 is 4096 lines: by the next row they
 * are gone.  So the output is computed in tiles of TILE_ROWS x TILE_COLS
 * elements, and each such input's part of a tile is first copied into a
 * contiguous buffer, TILE_COLS elements a row: the copy reads each line of
 * the input once and whole (TILE_ROWS f32 are two 64-byte lines), where
 * running the tile's rows straight from the input read the tile's
 * TILE_COLS lines once per row, and lines 16 KiB apart share one L1 set
 * and a few L2 sets, so they were gone by the next row.  The kernel then
 * runs on a copy of the plan whose operand is the buffer (strides
 * TILE_COLS and 1, 0 for the outer dimensions; its data pointer set back
 * by the tile's origin), row by row (desc->run on each row of the tile):
 * the contiguous loop.  Every element is computed by the same code as in
 * the flat order with the same flat index (the plan's shape and the index
 * strides are unchanged), so the bits are the same; only the order of the
 * elements changes, which launch.c allows: an input an output overlaps was
 * copied first, unless it is that output element for element.  Without
 * the memory for the buffers a task runs its tiles from the input.
 *
 * The copy is bound by the latency of those lines: each column of a tile
 * is a line on another page, and the next tile's columns are other pages
 * again, so neither the hardware prefetchers (which stay within a page)
 * nor the out-of-order window keep enough of them in flight (a tile of 16
 * rows, copied one element at a time: 4096x4096 f32, 1 thread, 59 ms of
 * CPU).  So the copy of column c asks for the line of the same column one
 * tile further down (the tile that runs when this tile row is done, whose
 * lines the prefetchers cannot guess), and 4- and 8-byte elements move as
 * 4x4 (2x2) blocks transposed in SSE registers: 36 ms. */
enum { MAX_TILE_COPIES = 4 };   /* transposed inputs copied per tile; more run from memory */

static bool transposed_input(const nnk_kernel_desc *desc, const nnk_plan *p, int32_t i, int32_t op)
{
    int32_t last = p->ndim - 1;
    return !(desc->params[i].flags & NNK_PARAM_OUTPUT) && p->strides[op][last - 1] == 1 &&
           p->strides[op][last] != 1 && p->strides[op][last] != 0;
}

static bool tiled_layout(const nnk_kernel_desc *desc, const nnk_plan *p)
{
    int32_t last = p->ndim - 1;
    if (p->ndim < 2 || p->shape[last] < TILE_ROWS || p->shape[last - 1] < TILE_ROWS)
        return false;
    for (int32_t i = 0, op = 0; i < desc->nparams; i++) {
        if (!(desc->params[i].flags & NNK_PARAM_TENSOR))
            continue;
        if (transposed_input(desc, p, i, op))
            return true;
        op++;
    }
    return false;
}

typedef struct tile_job {
    const nnk_kernel_desc *desc;
    const nnk_plan *plan;
    int64_t rows, cols;       /* of each 2-D slice: the two innermost dimensions */
    int64_t trows, tcols;     /* tiles per slice, down and across */
    int64_t ntiles, per_task; /* tiles in all, and per task */
    int32_t ncopy;            /* transposed inputs copied into buffers */
    int32_t copy_op[MAX_TILE_COPIES];
    int64_t copy_size[MAX_TILE_COPIES]; /* their element sizes */
} tile_job;

/* Element offset of slice `slice`'s first element in operand op (the
 * dimensions before the last two, as a mixed-radix number). */
static int64_t slice_offset(const nnk_plan *p, int32_t op, int64_t slice)
{
    int64_t off = 0;
    for (int32_t d = p->ndim - 3; d >= 0 && slice > 0; d--) {
        off += slice % p->shape[d] * p->strides[op][d];
        slice /= p->shape[d];
    }
    return off;
}

/* Copies rows r0..r1 x columns c0..c1 of operand op's slice into buf, a
 * row TILE_COLS elements: column c of the input is contiguous down its
 * rows, so the inner loop reads along the input's lines. */
static void copy_tile(const nnk_plan *p, int32_t op, int64_t esize, int64_t slice, int64_t r0, int64_t r1,
                      int64_t c0, int64_t c1, char *buf)
{
    int32_t last = p->ndim - 1;
    const int64_t cs = p->strides[op][last];
    const char *src = p->data[op] + (slice_offset(p, op, slice) + r0 + c0 * cs) * esize;
    const int64_t nr = r1 - r0, nc = c1 - c0;
    int64_t done_r = 0, done_c = nc; /* the part [0, done_r) x [0, done_c) copied by blocks */
#if defined(__SSE2__)
    if (esize == 4) {
        /* 4x4 blocks, transposed in registers (bit-exact moves) */
        done_r = nr & ~(int64_t)3, done_c = nc & ~(int64_t)3;
        for (int64_t c = 0; c < done_c; c += 4) {
            const float *s = (const float *)src + c * cs;
            float *d = (float *)buf + c;
            for (int k = 0; k < 4; k++)
                __builtin_prefetch(s + k * cs + TILE_ROWS);
            for (int64_t r = 0; r < done_r; r += 4) {
                __m128 v0 = _mm_loadu_ps(s + r), v1 = _mm_loadu_ps(s + cs + r);
                __m128 v2 = _mm_loadu_ps(s + 2 * cs + r), v3 = _mm_loadu_ps(s + 3 * cs + r);
                _MM_TRANSPOSE4_PS(v0, v1, v2, v3);
                _mm_storeu_ps(d + r * TILE_COLS, v0);
                _mm_storeu_ps(d + (r + 1) * TILE_COLS, v1);
                _mm_storeu_ps(d + (r + 2) * TILE_COLS, v2);
                _mm_storeu_ps(d + (r + 3) * TILE_COLS, v3);
            }
        }
    } else if (esize == 8) {
        /* 2x2 blocks */
        done_r = nr & ~(int64_t)1, done_c = nc & ~(int64_t)1;
        for (int64_t c = 0; c < done_c; c += 2) {
            const double *s = (const double *)src + c * cs;
            double *d = (double *)buf + c;
            __builtin_prefetch(s + TILE_ROWS), __builtin_prefetch(s + cs + TILE_ROWS);
            for (int64_t r = 0; r < done_r; r += 2) {
                __m128d v0 = _mm_loadu_pd(s + r), v1 = _mm_loadu_pd(s + cs + r);
                _mm_storeu_pd(d + r * TILE_COLS, _mm_unpacklo_pd(v0, v1));
                _mm_storeu_pd(d + (r + 1) * TILE_COLS, _mm_unpackhi_pd(v0, v1));
            }
        }
    }
#endif
    /* the rest one element at a time: rows [done_r, nr) of the first
     * done_c columns, and every row of the columns after them */
    switch (esize) {
#define COPY_(T)                                                                                     \
    for (int64_t c = 0; c < nc; c++) {                                                             \
        const T *s = (const T *)src + c * cs;                                                      \
        T *d = (T *)buf + c;                                                                       \
        if (c >= done_c)                                                                           \
            __builtin_prefetch(s + TILE_ROWS);                                                     \
        for (int64_t r = c < done_c ? done_r : 0; r < nr; r++)                                     \
            d[r * TILE_COLS] = s[r];                                                               \
    }                                                                                              \
    break;
    case 1: COPY_(uint8_t)
    case 2: COPY_(uint16_t)
    case 4: COPY_(uint32_t)
    case 8: COPY_(uint64_t)
    default:
        for (int64_t c = 0; c < nc; c++)
            for (int64_t r = 0; r < nr; r++)
                memcpy(buf + (r * TILE_COLS + c) * esize, src + (c * cs + r) * esize, (size_t)esize);
#undef COPY_
    }
}

static void tile_task(void *arg, int64_t t)
{
    tile_job *j = arg;
    const nnk_plan *p = j->plan;
    int32_t last = p->ndim - 1;
    /* the plan the tiles run on: the copied operands read their buffers */
    nnk_plan *sub = NULL;
    char *bufs = NULL;
    int64_t bytes = 0, at[MAX_TILE_COPIES];
    for (int32_t k = 0; k < j->ncopy; k++) {
        at[k] = bytes;
        bytes += TILE_ROWS * TILE_COLS * j->copy_size[k];
    }
    if (j->ncopy > 0 && (sub = malloc(sizeof *sub)) != NULL && (bufs = malloc((size_t)bytes)) == NULL) {
        free(sub);
        sub = NULL;
    }
    if (sub) {
        *sub = *p;
        for (int32_t k = 0; k < j->ncopy; k++) {
            for (int32_t d = 0; d < last - 1; d++)
                sub->strides[j->copy_op[k]][d] = 0;
            sub->strides[j->copy_op[k]][last - 1] = TILE_COLS;
            sub->strides[j->copy_op[k]][last] = 1;
        }
    }
    int64_t end = (t + 1) * j->per_task < j->ntiles ? (t + 1) * j->per_task : j->ntiles;
    for (int64_t k = t * j->per_task; k < end; k++) {
        int64_t slice = k / (j->trows * j->tcols), in = k % (j->trows * j->tcols);
        int64_t r0 = in / j->tcols * TILE_ROWS, c0 = in % j->tcols * TILE_COLS;
        int64_t r1 = r0 + TILE_ROWS < j->rows ? r0 + TILE_ROWS : j->rows;
        int64_t c1 = c0 + TILE_COLS < j->cols ? c0 + TILE_COLS : j->cols;
        if (sub)
            for (int32_t q = 0; q < j->ncopy; q++) {
                int32_t op = j->copy_op[q];
                copy_tile(p, op, j->copy_size[q], slice, r0, r1, c0, c1, bufs + at[q]);
                /* element (r, c) of any slice at buf[(r - r0) * TILE_COLS + (c - c0)] */
                sub->data[op] = (char *)((uintptr_t)(bufs + at[q]) - (uintptr_t)((r0 * TILE_COLS + c0) * j->copy_size[q]));
            }
        for (int64_t r = r0; r < r1; r++) {
            int64_t b = (slice * j->rows + r) * j->cols;
            j->desc->run(sub ? sub : p, b + c0, b + c1);
        }
    }
    free(bufs);
    free(sub);
}

static void run_tiled(const nnk_kernel_desc *desc, const nnk_plan *p)
{
    tile_job j = {desc, p, p->shape[p->ndim - 2], p->shape[p->ndim - 1], 0, 0, 0, 0, 0, {0}, {0}};
    j.trows = (j.rows + TILE_ROWS - 1) / TILE_ROWS;
    j.tcols = (j.cols + TILE_COLS - 1) / TILE_COLS;
    j.ntiles = p->nkept / (j.rows * j.cols) * j.trows * j.tcols;
    j.per_task = CHUNK / (TILE_ROWS * TILE_COLS);
    for (int32_t i = 0, op = 0; i < desc->nparams && j.ncopy < MAX_TILE_COPIES; i++) {
        if (!(desc->params[i].flags & NNK_PARAM_TENSOR))
            continue;
        if (transposed_input(desc, p, i, op)) {
            j.copy_op[j.ncopy] = op;
            j.copy_size[j.ncopy++] = (int64_t)nnk_dtype_size((nnk_dtype)desc->params[i].dtype);
        }
        op++;
    }
    rt_pool_run_work((j.ntiles + j.per_task - 1) / j.per_task, j.per_task * TILE_ROWS * TILE_COLS, tile_task, &j);
}

/* ---- reductions split along the reduced range ------------------------------ */

/* The reduced range is cut into chunks of NNK_SPLIT_CHUNK elements from
 * its start (nnk/abi.h), one red_partial task each, and their states are
 * merged in the order of the generated code's pairwise tree: a run of m
 * chunks splits after the largest power of two below m.  The result has
 * the same bits as desc->run over the whole slice, whatever the thread
 * count (tests/conformance/abi_driver.c checks the generated side). */
static int64_t count_pieces(int64_t n)
{
    return n > 0 ? (n + NNK_SPLIT_CHUNK - 1) / NNK_SPLIT_CHUNK : 1;
}

typedef struct red_job {
    const nnk_kernel_desc *desc;
    const nnk_plan *plan;
    int32_t phase;
    int64_t npieces;          /* per output position */
    int64_t *bounds;          /* npieces + 1 */
    size_t state_size;
    char *states;             /* nkept * npieces states */
    char *finals;             /* nkept * finals_size */
} red_job;

static void partial_task(void *arg, int64_t t)
{
    red_job *j = arg;
    int64_t o = t / j->npieces, c = t % j->npieces;
    j->desc->red_partial(j->plan, j->phase, o, j->bounds[c], j->bounds[c + 1],
                         j->finals + o * (int64_t)j->desc->finals_size, j->states + t * (int64_t)j->state_size);
}

/* Merges the states of chunks [c0, c1) into the state of chunk c0. */
static void merge_tree(red_job *j, char *states, int64_t c0, int64_t c1)
{
    if (c1 - c0 <= 1)
        return;
    int64_t m = 1;
    while (2 * m < c1 - c0)
        m *= 2;
    merge_tree(j, states, c0, c0 + m);
    merge_tree(j, states, c0 + m, c1);
    j->desc->red_merge(j->plan, j->phase, states + c0 * (int64_t)j->state_size,
                       states + (c0 + m) * (int64_t)j->state_size);
}

static void final_task(void *arg, int64_t o)
{
    red_job *j = arg;
    char *acc = j->states + o * j->npieces * (int64_t)j->state_size;
    merge_tree(j, acc, 0, j->npieces);
    j->desc->red_final(j->plan, j->phase, o, acc, j->finals + o * (int64_t)j->desc->finals_size);
}

static void epilogue_task(void *arg, int64_t t)
{
    red_job *j = arg;
    int64_t o = t / j->npieces, c = t % j->npieces;
    j->desc->red_epilogue(j->plan, o, j->bounds[c], j->bounds[c + 1], j->finals + o * (int64_t)j->desc->finals_size);
}

static nnk_status split_reduced(const nnk_kernel_desc *desc, const nnk_plan *plan)
{
    int64_t nkept = plan->nkept;
    red_job j = {desc, plan, 0, count_pieces(plan->nreduced), NULL, 0, NULL, NULL};
    size_t max_state = 1;
    for (int32_t ph = 0; ph < desc->nphases; ph++)
        if ((size_t)desc->state_size[ph] > max_state)
            max_state = (size_t)desc->state_size[ph];
    j.bounds = rt_malloc(sizeof(int64_t) * (size_t)(j.npieces + 1));
    j.finals = rt_calloc((size_t)nkept, desc->finals_size > 0 ? (size_t)desc->finals_size : 1);
    j.states = rt_calloc((size_t)(nkept * j.npieces), max_state);
    if (!j.bounds || !j.finals || !j.states) {
        free(j.bounds);
        free(j.finals);
        free(j.states);
        return NNK_ENOMEM;
    }
    for (int64_t c = 0; c < j.npieces; c++)
        j.bounds[c] = c * NNK_SPLIT_CHUNK;
    j.bounds[j.npieces] = plan->nreduced;
    int64_t ntasks = nkept * j.npieces;
    for (int32_t ph = 1; ph <= desc->nphases; ph++) {
        j.phase = ph;
        j.state_size = (size_t)desc->state_size[ph - 1];
        rt_pool_run_work(ntasks, NNK_SPLIT_CHUNK, partial_task, &j);
        for (int64_t o = 0; o < nkept; o++)
            final_task(&j, o);
    }
    /* the epilogue's tasks go over their chunk only for an output of the
     * full shape; with reduced outputs alone they are short (no early wake) */
    int64_t epi_work = 0;
    for (int32_t i = desc->nparams; i < desc->nparams + desc->nouts; i++)
        if (!(desc->params[i].flags & NNK_PARAM_REDUCED))
            epi_work = NNK_SPLIT_CHUNK;
    rt_pool_run_work(ntasks, epi_work, epilogue_task, &j);
    free(j.bounds);
    free(j.finals);
    free(j.states);
    return NNK_OK;
}

nnk_status rt_host_run(const nnk_kernel_desc *desc, const nnk_plan *plan)
{
    if (!desc || !plan)
        return rt_error(NNK_EINVAL, "run_host: desc or plan is NULL");
    if (!desc->run)
        return rt_error(NNK_EUNSUPPORTED, "kernel %s has no host code", desc->name ? desc->name : "?");
    int64_t nkept = plan->nkept, nred = plan->nreduced;
    if (nkept == 0)
        return NNK_OK;
    int64_t work = desc->kind == NNK_KIND_REDUCTION ? nkept * (nred ? nred : 1) : nkept;
    if (work < INLINE_WORK) {
        desc->run(plan, 0, nkept);
        return NNK_OK;
    }
    if (desc->kind != NNK_KIND_REDUCTION) {
        if (tiled_layout(desc, plan)) {
            run_tiled(desc, plan);
            return NNK_OK;
        }
        /* at least MIN_TASKS tasks a thread, down to MIN_CHUNK elements:
         * a worker that wakes late (milliseconds on a loaded machine)
         * then claims a small task, and the caller, which has taken the
         * others, waits for that one alone (2^16 elements were 2 tasks:
         * the caller waited for half the job) */
        int64_t per = nkept / (MIN_TASKS * rt_pool_threads());
        per = per < MIN_CHUNK ? MIN_CHUNK : per > CHUNK ? CHUNK : per;
        range_job j = {desc, plan, nkept, per};
        rt_pool_run_work((nkept + per - 1) / per, per, range_task, &j);
        return NNK_OK;
    }
    /* Enough output positions to keep every thread busy: split them (each
     * runs whole, with the same bits as a split slice would give). */
    int64_t nthreads = rt_pool_threads();
    if (!desc->red_partial || nkept >= 4 * nthreads) {
        /* at least CHUNK elements per task, at most TASKS_PER_THREAD tasks
         * per thread; the column order, one task per thread: it reads a
         * task's positions in every row, and the longer those runs, the
         * better the prefetchers follow (4096 x 4096 column sum: 8 ms with
         * 8 tasks of 512 positions, 6 ms with 2 of 2048, 80 ms with 512 of
         * 8) */
        int64_t per = nred > 0 ? CHUNK / nred : CHUNK;
        int64_t ntasks = column_like(desc, plan) ? nthreads : TASKS_PER_THREAD * nthreads;
        int64_t even = (nkept + ntasks - 1) / ntasks;
        if (per < even)
            per = even;
        range_job j = {desc, plan, nkept, per > 0 ? per : 1};
        /* (a task reads per_task slices: few long tasks, so the workers
         * wake before the first: rt_pool_run_work) */
        rt_pool_run_work((nkept + j.per_task - 1) / j.per_task, j.per_task * (nred > 0 ? nred : 1), range_task, &j);
        return NNK_OK;
    }
    return split_reduced(desc, plan);
}
