/* convert.c - element conversions and strided copies.
 *
 * Values convert exactly as generated code converts them (libnnkc's
 * value_cast: float to int truncates and saturates, NaN gives 0; f16 and
 * bf16 round to nearest even through nnkc_f32_to_f16 / _bf16), so a copy
 * with conversion and a kernel that casts agree bit for bit.
 */
#include "internal.h"
#include "libnnkc.h"

#include <string.h>

/* Both switches name every nnk_dtype and have no default, so that a type
 * added to types.def (and nnk/abi.h) without its conversion here is a
 * -Wswitch warning (an error in CI), not a silent f64. */
static Value load(const char *p, nnk_dtype t)
{
    switch (t) {
    case NNK_BOOL: return value_int(T_BOOL, *(const uint8_t *)p != 0);
    case NNK_I8: return value_int(T_I8, *(const int8_t *)p);
    case NNK_I16: return value_int(T_I16, *(const int16_t *)p);
    case NNK_I32: return value_int(T_I32, *(const int32_t *)p);
    case NNK_I64: return value_int(T_I64, *(const int64_t *)p);
    case NNK_U8: return value_int(T_U8, *(const uint8_t *)p);
    case NNK_U16: return value_int(T_U16, *(const uint16_t *)p);
    case NNK_U32: return value_int(T_U32, *(const uint32_t *)p);
    case NNK_U64: return value_int(T_U64, (int64_t) * (const uint64_t *)p);
    case NNK_F16: return value_float(T_F16, nnkc_f16_to_f32(*(const uint16_t *)p));
    case NNK_BF16: return value_float(T_BF16, nnkc_bf16_to_f32(*(const uint16_t *)p));
    case NNK_F32: return value_float(T_F32, *(const float *)p);
    case NNK_F64: return value_float(T_F64, *(const double *)p);
    case NNK_C64: return value_complex(T_C64, ((const float *)p)[0], ((const float *)p)[1]);
    case NNK_C128: return value_complex(T_C128, ((const double *)p)[0], ((const double *)p)[1]);
    case NNK_DTYPE_COUNT: break; /* never: the callers check the dtypes */
    }
    return value_int(T_BOOL, 0);
}

/* v already has type t. */
static void store(char *p, nnk_dtype t, Value v)
{
    switch (t) {
    case NNK_BOOL: *(uint8_t *)p = v.v.i != 0; break;
    case NNK_I8: *(int8_t *)p = (int8_t)v.v.i; break;
    case NNK_I16: *(int16_t *)p = (int16_t)v.v.i; break;
    case NNK_I32: *(int32_t *)p = (int32_t)v.v.i; break;
    case NNK_I64: *(int64_t *)p = v.v.i; break;
    case NNK_U8: *(uint8_t *)p = (uint8_t)v.v.u; break;
    case NNK_U16: *(uint16_t *)p = (uint16_t)v.v.u; break;
    case NNK_U32: *(uint32_t *)p = (uint32_t)v.v.u; break;
    case NNK_U64: *(uint64_t *)p = v.v.u; break;
    case NNK_F16: *(uint16_t *)p = nnkc_f32_to_f16((float)v.v.f); break;
    case NNK_BF16: *(uint16_t *)p = nnkc_f32_to_bf16((float)v.v.f); break;
    case NNK_F32: *(float *)p = (float)v.v.f; break;
    case NNK_F64: *(double *)p = v.v.f; break;
    case NNK_C64: ((float *)p)[0] = (float)v.v.f, ((float *)p)[1] = (float)v.im; break;
    case NNK_C128: ((double *)p)[0] = v.v.f, ((double *)p)[1] = v.im; break;
    case NNK_DTYPE_COUNT: break; /* never: the callers check the dtypes */
    }
}

void rt_copy_strided(int32_t ndim, const int64_t *shape, void *dst, nnk_dtype dt, const int64_t *dst_strides,
                     const void *src, nnk_dtype st, const int64_t *src_strides)
{
    int64_t ds = (int64_t)nnk_dtype_size(dt), ss = (int64_t)nnk_dtype_size(st);
    for (int32_t d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return;
    int64_t n = ndim ? shape[ndim - 1] : 1;
    int64_t dstep = ndim ? dst_strides[ndim - 1] * ds : 0, sstep = ndim ? src_strides[ndim - 1] * ss : 0;
    int64_t idx[NNK_MAX_DIMS] = {0};
    char *dp = dst;
    const char *sp = src;
    for (;;) {
        if (dt == st && dstep == ds && sstep == ss) {
            memcpy(dp, sp, (size_t)(n * ds));
        } else if (dt == st) {
            for (int64_t i = 0; i < n; i++)
                memcpy(dp + i * dstep, sp + i * sstep, (size_t)ds);
        } else {
            for (int64_t i = 0; i < n; i++)
                store(dp + i * dstep, dt, value_cast(load(sp + i * sstep, st), (Type)dt));
        }
        /* next row: odometer over the outer dimensions */
        int32_t d = ndim - 2;
        for (; d >= 0; d--) {
            dp += dst_strides[d] * ds;
            sp += src_strides[d] * ss;
            if (++idx[d] < shape[d])
                break;
            dp -= dst_strides[d] * ds * shape[d];
            sp -= src_strides[d] * ss * shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

nnk_scalar rt_scalar_from_f64(nnk_dtype t, double x)
{
    nnk_scalar s;
    memset(&s, 0, sizeof s); /* all 16 bytes: {0} sets only the first member */
    Value v = value_cast(value_float(T_F64, x), (Type)t);
    store((char *)&s, t, v);
    return s;
}

nnk_scalar rt_scalar_from_i64(nnk_dtype t, int64_t x)
{
    nnk_scalar s;
    memset(&s, 0, sizeof s); /* all 16 bytes: {0} sets only the first member */
    Value v = value_cast(value_int(T_I64, x), (Type)t);
    store((char *)&s, t, v);
    return s;
}

nnk_scalar rt_scalar_from_u64(nnk_dtype t, uint64_t x)
{
    nnk_scalar s;
    memset(&s, 0, sizeof s); /* all 16 bytes: {0} sets only the first member */
    Value v = value_cast(value_int(T_U64, (int64_t)x), (Type)t); /* the bits, read as u64 */
    store((char *)&s, t, v);
    return s;
}

/* (store() writes a complex value as its two parts: the c64 / c128 member) */
nnk_scalar rt_scalar_from_c128(nnk_dtype t, double re, double im)
{
    nnk_scalar s;
    memset(&s, 0, sizeof s); /* all 16 bytes: {0} sets only the first member */
    Value v = value_cast(value_complex(T_C128, re, im), (Type)t);
    store((char *)&s, t, v);
    return s;
}
