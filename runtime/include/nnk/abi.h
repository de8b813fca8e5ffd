/* nnk/abi.h - the binary interface between generated kernel code and the
 * nnk runtime.
 *
 * Every C file nnkc generates embeds a copy of this header, so generated
 * code needs no nnk header at build time; the runtime includes it from
 * here.  Both sides check NNK_ABI_VERSION.  Only C99 and <stdint.h>.
 */
#ifndef NNK_ABI_H
#define NNK_ABI_H

#ifndef __CUDACC_RTC__ /* NVRTC has no <stdint.h>; the CUDA prelude defines its types */
#include <stdint.h>
#endif

#define NNK_ABI_VERSION 2 /* 2: nnk_scalar holds complex values (16 bytes) */
#define NNK_MAX_DIMS 16      /* rank of an array or iteration space */
#define NNK_MAX_TENSORS 32   /* tensor parameters + outputs of a kernel */
#define NNK_MAX_SCALARS 32   /* scalar parameters of a kernel */
#define NNK_MAX_RAW 8        /* raw (indexed) tensor parameters of a kernel */

/* Element types, in the order of the language's type list. */
typedef enum nnk_dtype {
    NNK_BOOL, NNK_I8, NNK_I16, NNK_I32, NNK_I64, NNK_U8, NNK_U16, NNK_U32, NNK_U64,
    NNK_F16, NNK_BF16, NNK_F32, NNK_F64, NNK_C64, NNK_C128,
    NNK_DTYPE_COUNT
} nnk_dtype;

/* f16 and bf16 values travel as their IEEE bit patterns. */
typedef uint16_t nnk_f16;
typedef uint16_t nnk_bf16;

/* A scalar argument, read through the member of the parameter's type
 * (types.def's member column); a complex one as its real and imaginary
 * parts (numpy's complex64 / complex128 layout), which makes the union 16
 * bytes (ABI version 2).  i64 stays first, so that {0} initializes it. */
typedef union nnk_scalar {
    int64_t i64;
    uint64_t u64;
    double f64;
    float f32;
    int32_t i32;
    uint32_t u32;
    int16_t i16;
    uint16_t u16;   /* also f16 / bf16 bits */
    int8_t i8;
    uint8_t u8;
    uint8_t b;
    struct { float re, im; } c64;
    struct { double re, im; } c128;
} nnk_scalar;

/* An array view: the address of element (0, ..., 0) and, per dimension,
 * the extent and the stride in elements (negative and zero allowed). */
typedef struct nnk_view {
    void *data;
    int32_t ndim;
    const int64_t *shape;
    const int64_t *strides;
} nnk_view;

/* A raw (indexed) tensor parameter as the kernel reads it: not part of the
 * iteration space, read by index against its own shape and strides.
 * `size` is the product of the extents (0: every index is out of range). */
typedef struct nnk_raw_view {
    const char *data;
    int32_t ndim;
    int32_t operand;         /* its operand number (data[operand] is data too) */
    int64_t size;
    int64_t shape[NNK_MAX_DIMS];
    int64_t strides[NNK_MAX_DIMS];
} nnk_raw_view;

/* The first index out of range a kernel met (kernels running at once on
 * several threads: one of them, set once).  dim is the dimension (-1: a
 * flat index; -2: the number of indices, `index`, is not the array's
 * rank; -3: shape(x, d) or index(d) with d past the rank) and extent its
 * bound.  Written by generated code through nnk_plan.range. */
typedef struct nnk_range_error {
    int32_t set;
    int32_t raw;             /* the raw parameter (nnk_plan.raw); -1: index(d) */
    int32_t dim;
    int32_t pad;
    int64_t index, extent;
} nnk_range_error;

/* An execution plan: the iteration space of one call after broadcasting,
 * moving reduced axes innermost, and merging dimensions that are
 * contiguous for every operand.  Dimension ndim-1 is the innermost.
 * The last `nred` dimensions are reduced (reduction kernels); the others
 * are kept and enumerate the output positions.
 *
 * Operands are the kernel's tensor parameters in declaration order, then
 * its outputs, then one virtual operand (index `nops`) whose "address" is
 * the element's flat index in the un-permuted iteration space (the
 * language's `idx`); its strides are maintained like the others. */
typedef struct nnk_plan {
    int32_t ndim;
    int32_t nred;
    int32_t nops;
    int32_t abi;
    int64_t shape[NNK_MAX_DIMS];
    int64_t strides[NNK_MAX_TENSORS + 1][NNK_MAX_DIMS];
    char *data[NNK_MAX_TENSORS];
    int64_t nkept;           /* product of the kept extents: output positions */
    int64_t nreduced;        /* product of the reduced extents: the `n` of the kernel */
    nnk_scalar scalars[NNK_MAX_SCALARS]; /* the scalar parameters, in declaration order */
    /* Raw parameters and per-dimension indices (docs/language.md, "Raw
     * parameters").  nnk_plan_build sets the iteration shape before
     * broadcasting's permutation and merging (index(d)), nraw = 0 and
     * range = 0; a caller with raw parameters fills raw[] (their operands'
     * views in the build were 0-dimensional) and points range at a zeroed
     * nnk_range_error, which the kernel sets on an index out of range. */
    int32_t iter_ndim;
    int32_t nraw;
    int64_t iter_shape[NNK_MAX_DIMS];
    int64_t iter_inner[NNK_MAX_DIMS]; /* the product of iter_shape after d (index(d) = idx / it % shape) */
    nnk_raw_view raw[NNK_MAX_RAW];
    nnk_range_error *range;
} nnk_plan;

/* Parameter metadata. */
enum {
    NNK_PARAM_TENSOR = 1,      /* an array; otherwise a scalar value */
    NNK_PARAM_OUTPUT = 2,
    NNK_PARAM_REDUCED = 4,     /* an output with the reduced shape */
    NNK_PARAM_DEFAULT = 8,     /* a scalar with a default value */
    NNK_PARAM_RAW = 32,        /* a raw (indexed) tensor parameter: nnk_plan.raw, no broadcasting */
    NNK_PARAM_INOUT = 16,      /* an inout tensor parameter, and the output after the declared ones
                                  that stands for it: the caller passes one array for both */
};

typedef struct nnk_param_desc {
    const char *name;
    int32_t dtype;             /* nnk_dtype in memory */
    int32_t flags;
    nnk_scalar dflt;
} nnk_param_desc;

enum { NNK_KIND_ELEMENTWISE = 0, NNK_KIND_REDUCTION = 1 };

/* A kernel instance as generated code describes it to the runtime.
 *
 * run(plan, begin, end): elementwise kernels compute the elements with
 * flat kept index in [begin, end); reduction kernels compute the output
 * positions in [begin, end) completely (every phase and the epilogue).
 * Disjoint ranges may run on different threads at once.
 *
 * Reductions with few outputs split the reduced range instead, phase by
 * phase; `finals` holds finals_size bytes per output position with the
 * finished values of earlier phases:
 *   red_partial(plan, phase, o, r0, r1, finals, state): accumulates the
 *       reducers of `phase` (1-based) for output o over the reduced flat
 *       range [r0, r1) into *state (state_size[phase-1] bytes);
 *   red_merge(plan, phase, acc, other): acc = acc followed by other (ranges in order);
 *   red_final(plan, phase, o, state, finals): finishes the phase into finals;
 *   red_epilogue(plan, o, r0, r1, finals): writes the tensor outputs for the
 *       reduced range [r0, r1) of o, and the reduced-shape outputs when r0 == 0.
 * The result has the bits of run() when the ranges are the chunks of
 * NNK_SPLIT_CHUNK elements from the start of the slice (the last one
 * shorter) and the chunk states are merged in the pairwise tree's order: a
 * run of m chunks splits after the largest power of two below m.  (The
 * chunk is a power-of-two multiple of the generated code's leaves.) */
#define NNK_SPLIT_CHUNK 32768
typedef struct nnk_kernel_desc {
    int32_t abi;
    int32_t kind;
    const char *name;          /* C name of the instance: NAME or NAME_f32 */
    const char *kernel;        /* the kernel's name in the source */
    int32_t nparams;           /* input parameters (tensors and scalars) */
    int32_t nouts;             /* outputs */
    const nnk_param_desc *params; /* nparams inputs, then nouts outputs */
    int32_t ntargs;
    const int32_t *targs;      /* type arguments (nnk_dtype) */
    void (*run)(const nnk_plan *p, int64_t begin, int64_t end);
    int32_t nphases;
    int32_t finals_size;
    const int32_t *state_size;
    void (*red_partial)(const nnk_plan *p, int32_t phase, int64_t o, int64_t r0, int64_t r1, const void *finals, void *state);
    void (*red_merge)(const nnk_plan *p, int32_t phase, void *acc, const void *other);
    void (*red_final)(const nnk_plan *p, int32_t phase, int64_t o, const void *state, void *finals);
    void (*red_epilogue)(const nnk_plan *p, int64_t o, int64_t r0, int64_t r1, const void *finals);
    int32_t argmax_empty_error; /* the kernel has argmax/argmin: an empty slice is an error */
    /* CUDA: the kernel symbols in `cuda_image` (a fatbin or PTX, NULL when
     * the object has no GPU code); see docs/cuda-backend.md. */
    const char *cuda_symbol;
    const void *cuda_image;
    uint64_t cuda_image_size;
} nnk_kernel_desc;

/* ---- CUDA ------------------------------------------------------------------
 * Every CUDA kernel nnkc generates takes one parameter, an nnk_cuda_args by
 * value: the plan with device pointers, in a compact form that stays well
 * under the 4 KiB limit of kernel parameters.  Kernels of an instance NAME:
 *   elementwise  NAME__ew_c (contiguous, 32-bit indices), NAME__ew_c64,
 *                NAME__ew_s (strided, any layout)
 *   reduction    NAME__rd_block (a block per output position),
 *                NAME__rd_thread (a thread per output position),
 *                NAME__rd_part, NAME__rd_fin, NAME__rd_epi (a reduction split
 *                over many blocks, phase by phase, deterministic),
 *                NAME__rd_warp (a warp per output position: short slices),
 *                NAME__rd_row (rd_warp or rd_block, NNK_CUDA_WROW saying which,
 *                with the slice kept in registers across the phases)
 * The host side that picks one is runtime/ext/cuda/dispatch.c. */
#define NNK_CUDA_MAX_DIMS 8
#define NNK_CUDA_MAX_TENSORS 16
#define NNK_CUDA_MAX_SCALARS 16
#define NNK_CUDA_BLOCK 256       /* threads per block of every kernel */

/* flags: NNK_CUDA_VEC every operand 16-byte aligned; NNK_CUDA_IDX32 every
 * flat index and every operand's offset fits in an int32_t (NAME__ew_s then
 * divides by the extents with nnk_cuda_args' magic numbers); NNK_CUDA_WROW
 * NAME__rd_row gives a warp to each output position (as rd_warp), else a
 * block (as rd_block) */
enum { NNK_CUDA_VEC = 1, NNK_CUDA_IDX32 = 2, NNK_CUDA_WROW = 4 };

typedef struct nnk_cuda_plan {
    int32_t ndim, nred, nops, flags;
    int64_t nkept, nreduced;
    int64_t shape[NNK_CUDA_MAX_DIMS];
    int64_t strides[NNK_CUDA_MAX_TENSORS + 1][NNK_CUDA_MAX_DIMS];
    char *data[NNK_CUDA_MAX_TENSORS];
    nnk_scalar scalars[NNK_CUDA_MAX_SCALARS];
} nnk_cuda_plan;

typedef struct nnk_cuda_args {
    nnk_cuda_plan p;
    int32_t phase;    /* NAME__rd_part / NAME__rd_fin: the phase (1-based) */
    int32_t nparts;   /* blocks sharing one output position's range */
    void *scratch;    /* nkept * nparts partial states of the phase */
    void *finals;     /* nkept * finals_size bytes */
    /* With NNK_CUDA_IDX32: q = (umulhi(i, magic[d]) + i) >> shift[d] is
     * i / shape[d] for every i < 2^31 (after the plan, so code of an older
     * nnkc, which never reads them, takes the same arguments). */
    uint32_t magic[NNK_CUDA_MAX_DIMS];
    uint32_t shift[NNK_CUDA_MAX_DIMS];
} nnk_cuda_args;

/* Kernels that read raw parameters or index(d) (their module has a
 * NAME__cu_raw) take an nnk_cuda_rargs instead: the arguments above, then
 * the raw views, the iteration shape and a device-side nnk_range_error
 * (NULL: none) that the first index out of range sets.  The launch then
 * copies it back into nnk_plan.range (docs/cuda-backend.md, "Raw
 * parameters").  Kernels of other modules take nnk_cuda_args alone and pay
 * nothing for it.  Raw views have at most NNK_CUDA_MAX_DIMS dimensions;
 * the iteration shape keeps all NNK_MAX_DIMS (index(d) of any d). */
typedef struct nnk_cuda_raw {
    const char *data;
    int32_t ndim, pad;
    int64_t size;
    int64_t shape[NNK_CUDA_MAX_DIMS];
    int64_t strides[NNK_CUDA_MAX_DIMS];
} nnk_cuda_raw;

typedef struct nnk_cuda_rplan {
    int32_t iter_ndim, nraw;
    int64_t iter_shape[NNK_MAX_DIMS];
    int64_t iter_inner[NNK_MAX_DIMS];
    nnk_cuda_raw raw[NNK_MAX_RAW];
    nnk_range_error *range;  /* device memory */
} nnk_cuda_rplan;

typedef struct nnk_cuda_rargs {
    nnk_cuda_args a;
    nnk_cuda_rplan r;
} nnk_cuda_rargs;

#endif /* NNK_ABI_H */
