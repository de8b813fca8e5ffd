/* opencl/plan.h - the one argument every OpenCL kernel nnkc generates reads
 * its iteration space from, shared as text by the generated OpenCL C (which
 * embeds it) and the host side that fills it (runtime/ext/opencl/).
 *
 * A kernel's arguments are: the plan (a __constant buffer holding one
 * nnk_cl_plan), then one __global buffer per operand (tensor parameters in
 * declaration order, then outputs), then for reductions the scratch and
 * finals buffers.  A cl_mem cannot sit inside a struct, so the plan gives
 * per operand the element offset of element (0, ..., 0) in its buffer (views
 * that start inside a buffer, without sub-buffers and their alignment
 * rule).  docs/opencl.md lists the kernels of an instance.
 *
 * Host and device see the same layout: fixed-size integer fields, 8-byte
 * ones after an even number of 4-byte ones, and nnk_scalar (nnk/abi.h) as
 * the device's union of the same members (little-endian, as every OpenCL
 * device with a little-endian host). */
#ifndef NNK_CL_PLAN_H
#define NNK_CL_PLAN_H

#define NNK_CL_ABI_VERSION 2 /* 2: nnk_scalar is 16 bytes (complex members, nnk/abi.h) */
#define NNK_CL_MAX_DIMS 8
#define NNK_CL_MAX_TENSORS 16
#define NNK_CL_MAX_SCALARS 16

/* flags: NNK_CL_VEC: every operand of a contiguous call starts at an
 * address aligned to its vector (16 bytes): NAME__ew_c moves vectors. */
#define NNK_CL_VEC 1

/* Work-items of a work-group in the reduction kernels that fold through
 * local memory (NAME__rd_group, NAME__rd_part), which require exactly this
 * local size: a power of two; the host may build with -DNNK_CL_GROUP=N. */
#ifndef NNK_CL_GROUP
#define NNK_CL_GROUP 64
#endif

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__) /* device side */
typedef union nnk_scalar {
    int64_t i64;
    uint64_t u64;
    double f64; /* float without cl_khr_fp64 (opencl/prelude.tmpl): the size comes from the 64-bit members */
    float f32;
    int32_t i32;
    uint32_t u32;
    int16_t i16;
    uint16_t u16; /* also f16 / bf16 bits */
    int8_t i8;
    uint8_t u8;
    uint8_t b;
    struct { float re, im; } c64;
    struct { double re, im; } c128;
    int64_t size_[2]; /* 16 bytes as the host's, double or not */
} nnk_scalar;
#endif

typedef struct nnk_cl_plan {
    int32_t ndim, nred, nops, flags;
    int32_t phase;  /* NAME__rd_part, NAME__rd_fin: the phase (1-based) */
    int32_t nparts; /* NAME__rd_part, NAME__rd_fin: work-groups sharing one output position's slice */
    int32_t abi;    /* NNK_CL_ABI_VERSION */
    int32_t unused_;
    int64_t nkept, nreduced;
    int64_t shape[NNK_CL_MAX_DIMS];
    int64_t strides[NNK_CL_MAX_TENSORS + 1][NNK_CL_MAX_DIMS]; /* in elements; [nops]: idx */
    int64_t offset[NNK_CL_MAX_TENSORS];                       /* in elements, >= 0 */
    nnk_scalar scalars[NNK_CL_MAX_SCALARS];
} nnk_cl_plan;

/* Raw parameters and index(d) (docs/opencl.md, "Raw parameters"): the
 * kernels of such an instance take two more arguments after the operands,
 * a __constant nnk_cl_rplan (each raw view's rank, operand, element count,
 * shape and strides in elements; its data is the operand's buffer at the
 * plan's offset; and the iteration shape before merging) and a __global
 * nnk_cl_range, nnk/abi.h's nnk_range_error, which the first index out of
 * range sets and the host reads back. */
#define NNK_CL_MAX_RAW 8
#define NNK_CL_MAX_ITER 16

typedef struct nnk_cl_raw {
    int32_t ndim, operand;
    int64_t size;
    int64_t shape[NNK_CL_MAX_DIMS];
    int64_t strides[NNK_CL_MAX_DIMS];
} nnk_cl_raw;

typedef struct nnk_cl_rplan {
    int32_t iter_ndim, nraw;
    int64_t iter_shape[NNK_CL_MAX_ITER];
    int64_t iter_inner[NNK_CL_MAX_ITER];
    nnk_cl_raw raw[NNK_CL_MAX_RAW];
} nnk_cl_rplan;

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
typedef struct nnk_cl_range {
    int32_t set, raw, dim, pad;
    int64_t index, extent;
} nnk_cl_range;
#endif

#endif /* NNK_CL_PLAN_H */
