/* dtype.c - the element types of the public API: names, sizes and the
 * names nnk_dtype_parse reads (the types and their order are
 * compiler/types.def's). */
#include "internal.h"

#include <strings.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[NNK_DTYPE_COUNT] = {
#define TYPE(id, name, cls, bits, ...) [NNK_##id] = {name, bits / 8},
#include "types.def"
#undef TYPE
};

const char *nnk_dtype_name(nnk_dtype t)
{
    return (unsigned)t < NNK_DTYPE_COUNT ? dtypes[t].name : NULL;
}

size_t nnk_dtype_size(nnk_dtype t)
{
    return (unsigned)t < NNK_DTYPE_COUNT ? dtypes[t].size : 0;
}

nnk_status nnk_dtype_parse(const char *name, nnk_dtype *out)
{
    static const struct {
        const char *alias;
        nnk_dtype t;
    } aliases[] = {
        {"float16", NNK_F16}, {"half", NNK_F16}, {"bfloat16", NNK_BF16}, {"float32", NNK_F32},
        {"float", NNK_F32}, {"float64", NNK_F64}, {"double", NNK_F64}, {"int8", NNK_I8},
        {"int16", NNK_I16}, {"int32", NNK_I32}, {"int64", NNK_I64}, {"uint8", NNK_U8},
        {"uint16", NNK_U16}, {"uint32", NNK_U32}, {"uint64", NNK_U64}, {"complex64", NNK_C64},
        {"complex128", NNK_C128},
    };
    if (!name || !out)
        return rt_error(NNK_EINVAL, "nnk_dtype_parse: NULL argument");
    for (int t = 0; t < NNK_DTYPE_COUNT; t++)
        if (strcasecmp(name, dtypes[t].name) == 0)
            return *out = (nnk_dtype)t, NNK_OK;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i].alias) == 0)
            return *out = aliases[i].t, NNK_OK;
    return rt_error(NNK_EINVAL, "unknown dtype '%s' (expected bool, i8..i64, u8..u64, f16, bf16, f32, f64, c64, c128)", name);
}
