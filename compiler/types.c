/* types.c - scalar types, generic classes and the promotion rules of
 * language.md §2. */
#include "nnkc.h"
#include "nnk/abi.h"

#include <string.h>

const TypeInfo type_info[T_NSCALAR] = {
#define TYPE(id, name, cls, bits, storage, compute, api, member, lo, hi, shfl) \
    {name, cls, bits, storage, compute, api, member, lo, hi, shfl, "NNK_" #id},
#include "types.def"
#undef TYPE
};

/* nnk/abi.h spells the list out for generated code, which embeds it: each
 * row's NNK_<ID> must have the row's position, and nothing more is listed. */
#define TYPE(id, ...) _Static_assert((int)T_##id == (int)NNK_##id, "nnk_dtype NNK_" #id " is types.def's row " #id);
#include "types.def"
#undef TYPE
_Static_assert((int)T_NSCALAR == (int)NNK_DTYPE_COUNT, "nnk_dtype lists the rows of types.def");

static const char *const class_names[] = {"bool", "int", "uint", "float", "complex", "num", "any"};

const char *type_name(Type t)
{
    if (t < T_NSCALAR)
        return type_info[t].name;
    switch (t) {
    case T_WINT: return "integer literal";
    case T_WFLOAT: return "float literal";
    case T_WCOMPLEX: return "complex literal";
    case T_ERROR: return "<error>";
    default: return "<none>";
    }
}

Type type_lookup(const char *name, size_t n)
{
    for (int t = 0; t < T_NSCALAR; t++)
        if (strlen(type_info[t].name) == n && memcmp(type_info[t].name, name, n) == 0)
            return (Type)t;
    return T_NONE;
}

TypeClass class_lookup(const char *name)
{
    /* `bool` is a type, not a class a type variable can range over. */
    for (int c = CLASS_INT; c <= CLASS_ANY; c++)
        if (strcmp(class_names[c], name) == 0)
            return (TypeClass)c;
    return CLASS_NONE;
}

const char *class_name(TypeClass c)
{
    return c < CLASS_NONE ? class_names[c] : "<none>";
}

bool type_in_class(Type t, TypeClass c)
{
    if (t >= T_NSCALAR)
        return false;
    switch (c) {
    case CLASS_ANY: return true;
    case CLASS_NUM: return t != T_BOOL;
    default: return type_info[t].cls == c;
    }
}

Type class_default(TypeClass c)
{
    switch (c) {
    case CLASS_INT: return T_I32;
    case CLASS_UINT: return T_U32;
    case CLASS_BOOL: return T_BOOL;
    case CLASS_COMPLEX: return T_C64;
    default: return T_F32;
    }
}

static Type signed_of_bits(int bits)
{
    switch (bits) {
    case 8: return T_I8;
    case 16: return T_I16;
    case 32: return T_I32;
    case 64: return T_I64;
    }
    return T_F64; /* no signed type holds every u64: numpy goes to f64 */
}

Type type_promote(Type a, Type b)
{
    if (a == T_ERROR || b == T_ERROR || a == T_NONE || b == T_NONE)
        return T_ERROR;
    if (a == b)
        return a;
    if (type_is_weak(a) && type_is_weak(b))
        return a == T_WCOMPLEX || b == T_WCOMPLEX ? T_WCOMPLEX : T_WFLOAT; /* one of each */
    if (type_is_weak(b)) {
        Type t = a;
        a = b;
        b = t;
    }
    /* an imaginary literal takes the other operand's precision (numpy's
     * rule for a Python complex: f32 * 1j is c64, i32 * 1j is c128) */
    if (a == T_WCOMPLEX)
        return type_is_complex(b) ? b : type_is_float(b) && b != T_F64 ? T_C64 : T_C128;
    if (a == T_WINT)                   /* a literal takes the other type */
        return b == T_BOOL ? T_I64 : b;
    if (a == T_WFLOAT)
        return type_is_float(b) || type_is_complex(b) ? b : T_F64;
    /* Two typed operands. */
    if (a == T_BOOL)
        return b;
    if (b == T_BOOL)
        return a;
    /* Complex with anything: the complex type whose part holds both (numpy:
     * c64 + f64 and c64 + i32 are c128; c64 + f16, c64 + i16 are c64). */
    if (type_is_complex(a) || type_is_complex(b)) {
        Type r = type_promote(type_part(a), type_part(b));
        return r == T_F64 ? T_C128 : T_C64;
    }
    const TypeInfo *ia = &type_info[a], *ib = &type_info[b];
    if (ia->cls == CLASS_FLOAT && ib->cls == CLASS_FLOAT) {
        if (ia->bits != ib->bits)
            return ia->bits > ib->bits ? a : b;
        return T_F32;                  /* f16 with bf16 */
    }
    if (ia->cls == CLASS_FLOAT)
        return a;                      /* float beats int */
    if (ib->cls == CLASS_FLOAT)
        return b;
    if (ia->cls == ib->cls)
        return ia->bits >= ib->bits ? a : b;
    const TypeInfo *is = ia->cls == CLASS_INT ? ia : ib;
    const TypeInfo *iu = ia->cls == CLASS_INT ? ib : ia;
    if (is->bits > iu->bits)
        return ia->cls == CLASS_INT ? a : b;
    return signed_of_bits(iu->bits * 2);
}

Type type_concrete(Type t)
{
    return t == T_WINT ? T_I64 : t == T_WFLOAT ? T_F64 : t == T_WCOMPLEX ? T_C128 : t;
}

Type type_compute(Type t)
{
    return t == T_F16 || t == T_BF16 ? T_F32 : t;
}

Type type_accum(Type t)
{
    t = type_concrete(t);
    switch (t < T_NSCALAR ? type_info[t].cls : CLASS_NONE) {
    case CLASS_FLOAT: return t == T_F64 ? T_F64 : T_F32;
    case CLASS_COMPLEX: return t;
    case CLASS_UINT: return T_U64;
    case CLASS_INT:
    case CLASS_BOOL: return T_I64;
    default: return t;
    }
}

static int mantissa_bits(Type t)
{
    switch (t) {
    case T_F16: return 11;
    case T_BF16: return 8;
    case T_F32: return 24;
    case T_F64: return 53;
    default: return 0;
    }
}

bool type_narrows(Type from, Type to)
{
    if (from >= T_NSCALAR || to >= T_NSCALAR || from == to || from == T_BOOL)
        return false;
    const TypeInfo *f = &type_info[from], *t = &type_info[to];
    if (to == T_BOOL)
        return true;
    if (type_is_complex(from))         /* the imaginary part goes, or precision */
        return !type_is_complex(to) || type_narrows(type_part(from), type_part(to));
    if (type_is_complex(to))
        return type_narrows(from, type_part(to));
    if (f->cls == CLASS_FLOAT)
        return t->cls != CLASS_FLOAT || mantissa_bits(to) < mantissa_bits(from) ||
               (from == T_F16 && to == T_BF16);
    if (t->cls == CLASS_FLOAT)
        return f->bits - (f->cls == CLASS_INT) > mantissa_bits(to);
    if (f->cls == t->cls)
        return t->bits < f->bits;
    if (f->cls == CLASS_INT)
        return true;                   /* negative values do not survive */
    return t->bits <= f->bits;         /* unsigned into signed */
}
