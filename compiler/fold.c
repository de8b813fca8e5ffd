/* fold.c - compile-time evaluation.
 *
 * Folding must give the bits the generated code would give, so these are
 * the semantics of the back ends written once in C: integers wrap, integer
 * division and remainder by zero give 0, INT_MIN / -1 wraps, shifts by a
 * count outside [0, bits) give 0 (or the sign for >> of a negative value),
 * float-to-int conversion saturates and maps NaN to 0 (CUDA's cvt.rzi),
 * f16/bf16 values compute in f32 and round to nearest even when stored.
 */
#include "nnkc.h"
#include "parser.h" /* op_info's token column */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../templates/c/vmath.h" /* the generated code's f32 exp, log, sin, ... */

const BuiltinInfo builtin_info[B_COUNT] = {
#define BUILTIN(id, name, lo, hi, rule, cx) {name, lo, hi, rule, cx},
#include "builtins.def"
#undef BUILTIN
};

const ReducerInfo reducer_info[R_COUNT] = {
#define REDUCER(id, name, rule) {name, rule},
#include "builtins.def"
#undef REDUCER
};

const OpInfo op_info[OP_COUNT] = {
#define UNOP(id, sp, token, helper) {sp, "'" sp "'", NNK_TK_##token, 0, true, helper, OPF_VALUE, OPK_NONE, false},
#define BINOP(id, sp, token, prec, helper, form, operands, commutes) \
    {sp, "'" sp "'", NNK_TK_##token, prec, false, helper, form, operands, commutes},
#include "ops.def"
#undef UNOP
#undef BINOP
};

Op op_of_token(int token, bool unary)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (op_info[op].token == token && op_info[op].unary == unary)
            return (Op)op;
    return OP_COUNT;
}

/* ---- f16 / bf16 ---------------------------------------------------------- */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t nnkc_f32_to_f16(float f)
{
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)                   /* NaN: keep it quiet */
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000u)                  /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) {                 /* below 2^-14: subnormal or 0 */
        /* Adding 0.5 (2^-1) aligns the f16 subnormal step (2^-24) with the
         * f32 ulp of the sum, so float addition rounds to nearest even. */
        float r = u2f(ax) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(f2u(r) - 0x3f000000u));
    }
    uint32_t mant_odd = (ax >> 13) & 1;
    ax += 0xc8000fffu + mant_odd;           /* rebias exponent, round to even */
    return (uint16_t)(sign | (uint16_t)(ax >> 13));
}

float nnkc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f)
        return u2f(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return u2f(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t nnkc_f32_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);     /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

float nnkc_bf16_to_f32(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

/* f64 -> f32 rounded to odd: exact values stay; inexact ones are truncated
 * toward zero with the last bit set.  Rounding that to nearest even at 11
 * or 8 bits (f16, bf16; both at most 24 - 2) gives the correctly rounded
 * f64 -> f16/bf16 conversion, where going through (float) would round
 * twice (1 + 2^-11 + 2^-40 would become 1.0 in f16 instead of 1 + 2^-10).
 * The generated code does the same (nnk_d2f_odd, templates/c/prelude.tmpl). */
static float f64_to_f32_odd(double d)
{
    float f = (float)d;
    if (d != d || (double)f == d)
        return f;
    uint32_t u = f2u(f);
    if (fabs((double)f) > fabs(d))
        u--;
    return u2f(u | 1u);
}

/* An integer as a double, rounded to odd when it needs more than 53 bits,
 * so that a later rounding to f16/bf16 is still correct (nnk_u64_odd). */
static double u64_odd(uint64_t u)
{
    if (!(u >> 53))
        return (double)u;
    return (double)((u >> 11) | (uint64_t)((u & 0x7ffu) != 0)) * 2048.0;
}

uint16_t nnkc_f64_to_f16(double d)
{
    return nnkc_f32_to_f16(f64_to_f32_odd(d));
}

uint16_t nnkc_f64_to_bf16(double d)
{
    return nnkc_f32_to_bf16(f64_to_f32_odd(d));
}

/* ---- values ---------------------------------------------------------------- */

static bool is_unsigned(Type t) { return t < T_NSCALAR && type_info[t].cls == CLASS_UINT; }

/* Wraps an integer to the width and signedness of t. */
static Value wrap(Type t, uint64_t bits)
{
    Value v = {.type = t};
    switch (t) {
    case T_BOOL: v.v.i = bits != 0; break;
    case T_I8: v.v.i = (int8_t)bits; break;
    case T_I16: v.v.i = (int16_t)bits; break;
    case T_I32: v.v.i = (int32_t)bits; break;
    case T_I64: case T_WINT: v.v.i = (int64_t)bits; break;
    case T_U8: v.v.u = (uint8_t)bits; break;
    case T_U16: v.v.u = (uint16_t)bits; break;
    case T_U32: v.v.u = (uint32_t)bits; break;
    case T_U64: v.v.u = bits; break;
    default: nnkc_assert(!"not an integer type");
    }
    return v;
}

/* Rounds a double to what the type holds in registers (f16/bf16 compute in f32). */
static double round_compute(Type t, double f)
{
    return t == T_F64 || t == T_WFLOAT ? f : (double)(float)f;
}

Value value_int(Type t, int64_t i)
{
    if (type_is_float(t) || t == T_WFLOAT || type_is_complex(t))
        return value_float(t, (double)i);
    return wrap(t, (uint64_t)i);
}

Value value_float(Type t, double f)
{
    Value v = {.type = t};
    v.v.f = round_compute(type_part(t), f);
    return v;
}

Value value_complex(Type t, double re, double im)
{
    Value v = value_float(t, re);
    v.im = round_compute(type_part(t), im);
    return v;
}

/* The real part of a complex value. */
double value_as_double(Value v)
{
    if (type_is_float(v.type) || v.type == T_WFLOAT || type_is_complex(v.type) || v.type == T_WCOMPLEX)
        return v.v.f;
    return is_unsigned(v.type) ? (double)v.v.u : (double)v.v.i;
}

bool value_truth(Value v)
{
    if (type_is_complex(v.type) || v.type == T_WCOMPLEX)
        return v.v.f != 0 || v.im != 0;
    if (type_is_float(v.type) || v.type == T_WFLOAT)
        return v.v.f != 0;           /* NaN is true, as in C and numpy */
    return is_unsigned(v.type) ? v.v.u != 0 : v.v.i != 0;
}

/* Float to integer: truncate, saturate at the type's range, NaN -> 0. */
static Value float_to_int(double f, Type to)
{
    if (to == T_BOOL)
        return wrap(to, f != 0);
    if (f != f)
        return wrap(to, 0);
    int bits = type_info[to].bits;
    if (is_unsigned(to)) {
        double max = ldexp(1.0, bits);   /* exclusive */
        if (f <= 0)
            return wrap(to, 0);
        if (f >= max)
            return wrap(to, bits == 64 ? UINT64_MAX : (1ull << bits) - 1);
        return wrap(to, (uint64_t)f);
    }
    double lim = ldexp(1.0, bits - 1);
    if (f >= lim)
        return wrap(to, (uint64_t)((bits == 64 ? INT64_MAX : (int64_t)lim - 1)));
    if (f <= -lim)
        return wrap(to, (uint64_t)(bits == 64 ? INT64_MIN : -(int64_t)lim));
    return wrap(to, (uint64_t)(int64_t)f);
}

Value value_cast(Value v, Type to)
{
    /* An imaginary literal is a c128 value until it meets a type; a weak
     * value meeting one becomes one (1 + 2j: the parts convert). */
    if (to == T_WCOMPLEX) {
        Value r = {.type = T_WCOMPLEX};
        r.v.f = value_as_double(v);
        r.im = type_is_complex(v.type) || v.type == T_WCOMPLEX ? v.im : 0;
        return r;
    }
    if (v.type == T_WCOMPLEX)
        v.type = T_C128;
    bool from_float = type_is_float(v.type) || v.type == T_WFLOAT;
    /* An integer literal meeting a float literal (0.5 * 3) becomes a float
     * literal: the value converts, the bits do not carry over. */
    if (to == T_WFLOAT && !from_float && v.type != T_WFLOAT)
        return value_float(T_WFLOAT, value_as_double(v));
    if (to == v.type || to >= T_NSCALAR)
        return v;
    /* Complex: each part converts as the real type of the part does; a
     * real value is the real part; to a real type goes the real part
     * (numpy's astype). */
    if (type_is_complex(to)) {
        Value re = value_cast(type_is_complex(v.type) ? value_float(type_part(v.type), v.v.f) : v, type_part(to));
        Value im = value_cast(value_float(type_is_complex(v.type) ? type_part(v.type) : T_F64, v.im), type_part(to));
        return value_complex(to, re.v.f, im.v.f);
    }
    if (type_is_complex(v.type) && to == T_BOOL) /* z != 0: either part (language.md) */
        return wrap(T_BOOL, value_truth(v));
    if (type_is_complex(v.type))
        return value_cast(value_float(type_part(v.type), v.v.f), to);
    if (type_is_float(to)) {
        /* One rounding from the exact value, as the generated code does:
         * integers convert directly (not through double, which would round
         * a 64-bit value twice), f64 and integers reach f16/bf16 through a
         * double rounded to odd. */
        Value r = {.type = to};
        bool uns = is_unsigned(v.type);
        double wide = from_float ? v.v.f
                    : uns ? u64_odd(v.v.u)
                    : v.v.i < 0 ? -u64_odd(0 - (uint64_t)v.v.i) : u64_odd((uint64_t)v.v.i);
        switch (to) {
        case T_F16: r.v.f = nnkc_f16_to_f32(nnkc_f64_to_f16(wide)); break;
        case T_BF16: r.v.f = nnkc_bf16_to_f32(nnkc_f64_to_bf16(wide)); break;
        case T_F32: r.v.f = from_float ? (float)v.v.f : uns ? (float)v.v.u : (float)v.v.i; break;
        default: r.v.f = from_float ? v.v.f : uns ? (double)v.v.u : (double)v.v.i; break;
        }
        return r;
    }
    if (from_float)
        return float_to_int(v.v.f, to);
    return wrap(to, is_unsigned(v.type) ? v.v.u : (uint64_t)v.v.i);
}

/* An f16/bf16 value rounded to its type (f16-typed constants may hold an
 * f32 compute value: a literal that adopted the type, a folded product). */
Value value_round(Value v)
{
    if (v.type == T_F16)
        v.v.f = nnkc_f16_to_f32(nnkc_f64_to_f16(v.v.f));
    else if (v.type == T_BF16)
        v.v.f = nnkc_bf16_to_f32(nnkc_f64_to_bf16(v.v.f));
    return v;
}

/* A literal meeting a typed operand takes its type; for f16 and bf16 that
 * is their compute type, so the literal keeps f32 precision (language.md
 * §2: "0.5 * x with x: f16 stays f16-storage/f32-compute"). */
Value value_adopt(Value v, Type to)
{
    if ((to == T_F16 || to == T_BF16) && v.type != to) {
        Value r = value_cast(v, T_F32);
        r.type = to;
        return r;
    }
    return value_cast(v, to);
}

/* ---- operators --------------------------------------------------------------- */

/* Folding on imaginary literals: as c128, the result weak again. */
static bool weak_complex(bool ok, Value *out)
{
    if (ok && out->type == T_C128)
        out->type = T_WCOMPLEX;
    else if (ok && out->type == T_F64)
        out->type = T_WFLOAT;
    return ok;
}

bool fold_unary(Op op, Type t, Value a, Value *out)
{
    if (t == T_WCOMPLEX)
        return weak_complex(fold_unary(op, T_C128, a, out), out);
    a = value_adopt(a, t);
    if (type_is_complex(t)) {
        if (op == UN_NEG)
            *out = value_complex(t, -a.v.f, -a.im);
        else if (op == UN_NOT)
            *out = wrap(T_BOOL, !value_truth(a));
        else
            return false;
        return true;
    }
    bool fl = type_is_float(t) || t == T_WFLOAT;
    switch (op) {
    case UN_NEG:
        *out = fl ? value_float(t, -a.v.f) : wrap(t, 0 - (uint64_t)a.v.i);
        return true;
    case UN_NOT:
        *out = wrap(T_BOOL, !value_truth(a));
        return true;
    case UN_BITNOT:
        *out = t == T_BOOL ? wrap(T_BOOL, !a.v.i) : wrap(t, ~(uint64_t)a.v.i);
        return true;
    default:
        return false;
    }
}

static int cmp_values(Value a, Value b, bool fl, bool uns, bool *unordered)
{
    *unordered = false;
    if (fl) {
        if (a.v.f != a.v.f || b.v.f != b.v.f) {
            *unordered = true;
            return 0;
        }
        return (a.v.f > b.v.f) - (a.v.f < b.v.f);
    }
    if (uns)
        return (a.v.u > b.v.u) - (a.v.u < b.v.u);
    return (a.v.i > b.v.i) - (a.v.i < b.v.i);
}

static Value shift(Op op, Type t, Value a, Value b)
{
    int bits = t == T_WINT ? 64 : type_info[t].bits;
    bool uns = is_unsigned(t);
    int64_t cnt = uns ? (b.v.u > 64 ? 64 : (int64_t)b.v.u) : b.v.i;
    if (cnt < 0 || cnt >= bits) {
        if (op == BIN_SHL || uns || a.v.i >= 0)
            return wrap(t, 0);
        return wrap(t, UINT64_MAX);
    }
    if (op == BIN_SHL)
        return wrap(t, (uint64_t)a.v.i << cnt);
    if (uns)
        return wrap(t, a.v.u >> cnt);
    return wrap(t, (uint64_t)(a.v.i >> cnt)); /* arithmetic shift */
}

bool fold_binary(Op op, Type t, Value a, Value b, Value *out)
{
    if (t == T_WCOMPLEX)
        return weak_complex(fold_binary(op, T_C128, a, b, out), out);
    if (op == BIN_LAND || op == BIN_LOR) {
        bool x = value_truth(a), y = value_truth(b);
        *out = wrap(T_BOOL, op == BIN_LAND ? (x && y) : (x || y));
        return true;
    }
    a = value_adopt(a, t);
    b = value_adopt(b, t);
    if (type_is_complex(t)) {
        /* + - == != are exact per part, and * is the generated code's
         * formula (templates/complex.tmpl) rounded at each operation, so
         * 2.5 * 1j is a constant; / (Smith's, with its branches) is left
         * to the generated code: one formula, not a second copy */
        Type pt = type_part(t);
        switch (op) {
        case BIN_MUL: {
            double rr = round_compute(pt, a.v.f * b.v.f), ii = round_compute(pt, a.im * b.im);
            double ri = round_compute(pt, a.v.f * b.im), ir = round_compute(pt, a.im * b.v.f);
            *out = value_complex(t, rr - ii, ri + ir);
            return true;
        }
        case BIN_ADD: *out = value_complex(t, a.v.f + b.v.f, a.im + b.im); return true;
        case BIN_SUB: *out = value_complex(t, a.v.f - b.v.f, a.im - b.im); return true;
        case BIN_EQ: *out = wrap(T_BOOL, a.v.f == b.v.f && a.im == b.im); return true;
        case BIN_NE: *out = wrap(T_BOOL, !(a.v.f == b.v.f && a.im == b.im)); return true;
        default: return false;
        }
    }
    bool fl = type_is_float(t) || t == T_WFLOAT;
    bool uns = is_unsigned(t);
    bool unord;
    switch (op) {
    case BIN_EQ: *out = wrap(T_BOOL, cmp_values(a, b, fl, uns, &unord) == 0 && !unord); return true;
    case BIN_NE: *out = wrap(T_BOOL, cmp_values(a, b, fl, uns, &unord) != 0 || unord); return true;
    case BIN_LT: *out = wrap(T_BOOL, cmp_values(a, b, fl, uns, &unord) < 0 && !unord); return true;
    case BIN_LE: *out = wrap(T_BOOL, cmp_values(a, b, fl, uns, &unord) <= 0 && !unord); return true;
    case BIN_GT: *out = wrap(T_BOOL, cmp_values(a, b, fl, uns, &unord) > 0 && !unord); return true;
    case BIN_GE: *out = wrap(T_BOOL, cmp_values(a, b, fl, uns, &unord) >= 0 && !unord); return true;
    default: break;
    }
    if (fl) {
        double x = a.v.f, y = b.v.f, r;
        switch (op) {
        case BIN_ADD: r = x + y; break;
        case BIN_SUB: r = x - y; break;
        case BIN_MUL: r = x * y; break;
        case BIN_DIV: r = x / y; break;
        default: return false; /* integer-only operators: sema reports */
        }
        if (t != T_F64 && t != T_WFLOAT) {
            /* f32 arithmetic, not double then rounded (they can differ). */
            float fx = (float)x, fy = (float)y;
            r = op == BIN_ADD ? fx + fy : op == BIN_SUB ? fx - fy : op == BIN_MUL ? fx * fy : fx / fy;
        }
        *out = value_float(t, r);
        return true;
    }
    uint64_t x = uns ? a.v.u : (uint64_t)a.v.i, y = uns ? b.v.u : (uint64_t)b.v.i;
    switch (op) {
    case BIN_ADD: *out = wrap(t, x + y); return true;
    case BIN_SUB: *out = wrap(t, x - y); return true;
    case BIN_MUL: *out = wrap(t, x * y); return true;
    case BIN_BITAND: *out = wrap(t, x & y); return true;
    case BIN_BITOR: *out = wrap(t, x | y); return true;
    case BIN_BITXOR: *out = wrap(t, x ^ y); return true;
    case BIN_SHL: case BIN_SHR: *out = shift(op, t, a, b); return true;
    case BIN_DIV: case BIN_MOD:
        if (y == 0) {
            *out = wrap(t, 0);
        } else if (uns) {
            *out = wrap(t, op == BIN_DIV ? x / y : x % y);
        } else if (b.v.i == -1) {
            *out = wrap(t, op == BIN_DIV ? 0 - x : 0); /* INT_MIN / -1 wraps */
        } else {
            *out = wrap(t, (uint64_t)(op == BIN_DIV ? a.v.i / b.v.i : a.v.i % b.v.i));
        }
        return true;
    default:
        return false;
    }
}

/* ---- built-in functions -------------------------------------------------------- */

static double round_half_even(double x)
{
    return nearbyint(x); /* the default rounding mode is to nearest even */
}

static double fmax_nan(double a, double b) { return a != a ? a : b != b ? b : (a > b ? a : b); }
static double fmin_nan(double a, double b) { return a != a ? a : b != b ? b : (a < b ? a : b); }

/* Integer literals and signed types are the values with a sign. */
static bool is_signed_value(Value v)
{
    return v.type == T_WINT || type_is_signed(v.type);
}

/* nextafter on the f16 or bf16 grid (x rounded to it first), as
 * nnk_nextafter_f16/bf16 of the preludes: both formats are sign and
 * magnitude in 16 bits, so the neighbour is the pattern plus or minus one. */
static double next_half(bool f16, double x, double y)
{
    uint16_t h = f16 ? nnkc_f32_to_f16((float)x) : nnkc_f32_to_bf16((float)x);
    float xr = f16 ? nnkc_f16_to_f32(h) : nnkc_bf16_to_f32(h);
    if (xr != xr || y != y)
        return (double)xr + y;
    if (xr == y)
        return y;
    if (xr == 0)
        h = (uint16_t)((signbit(y) ? 0x8000u : 0u) | 1u);
    else
        h = (uint16_t)(((double)xr < y) == (xr > 0) ? h + 1 : h - 1);
    return f16 ? nnkc_f16_to_f32(h) : nnkc_bf16_to_f32(h);
}

static double eval_float(Builtin bi, bool f32, const double *x)
{
    switch (bi) {
    case B_ABS: return fabs(x[0]);
    case B_SIGN: return x[0] != x[0] ? x[0] : (x[0] > 0) - (x[0] < 0);
    case B_SQRT: return f32 ? sqrtf((float)x[0]) : sqrt(x[0]);
    case B_RSQRT: return f32 ? 1.0f / sqrtf((float)x[0]) : 1.0 / sqrt(x[0]);
    case B_CBRT: return f32 ? cbrtf((float)x[0]) : cbrt(x[0]);
    case B_EXP: return f32 ? nnk_vm_exp((float)x[0]) : exp(x[0]);
    case B_EXP2: return f32 ? exp2f((float)x[0]) : exp2(x[0]);
    case B_EXPM1: return f32 ? nnk_vm_expm1((float)x[0]) : expm1(x[0]);
    case B_LOG: return f32 ? nnk_vm_log((float)x[0]) : log(x[0]);
    case B_LOG2: return f32 ? log2f((float)x[0]) : log2(x[0]);
    case B_LOG10: return f32 ? log10f((float)x[0]) : log10(x[0]);
    case B_LOG1P: return f32 ? nnk_vm_log1p((float)x[0]) : log1p(x[0]);
    case B_SIN: return f32 ? nnk_vm_sin((float)x[0]) : sin(x[0]);
    case B_COS: return f32 ? nnk_vm_cos((float)x[0]) : cos(x[0]);
    case B_TAN: return f32 ? tanf((float)x[0]) : tan(x[0]);
    case B_ASIN: return f32 ? asinf((float)x[0]) : asin(x[0]);
    case B_ACOS: return f32 ? acosf((float)x[0]) : acos(x[0]);
    case B_ATAN: return f32 ? atanf((float)x[0]) : atan(x[0]);
    case B_ATAN2: return f32 ? atan2f((float)x[0], (float)x[1]) : atan2(x[0], x[1]);
    /* arg of a real number: numpy's angle, atan2(0, x), as the preludes' nnk_arg_f32/f64 */
    case B_ARG: return f32 ? atan2f(0.0f, (float)x[0]) : atan2(0.0, x[0]);
    case B_SINH: return f32 ? sinhf((float)x[0]) : sinh(x[0]);
    case B_COSH: return f32 ? coshf((float)x[0]) : cosh(x[0]);
    case B_TANH: return f32 ? nnk_vm_tanh((float)x[0]) : tanh(x[0]);
    case B_ASINH: return f32 ? asinhf((float)x[0]) : asinh(x[0]);
    case B_ACOSH: return f32 ? acoshf((float)x[0]) : acosh(x[0]);
    case B_ATANH: return f32 ? atanhf((float)x[0]) : atanh(x[0]);
    case B_ERF: return f32 ? erff((float)x[0]) : erf(x[0]);
    case B_ERFC: return f32 ? erfcf((float)x[0]) : erfc(x[0]);
    case B_LGAMMA: return f32 ? lgammaf((float)x[0]) : lgamma(x[0]);
    case B_TGAMMA: return f32 ? tgammaf((float)x[0]) : tgamma(x[0]);
    case B_POW: return f32 ? powf((float)x[0], (float)x[1]) : pow(x[0], x[1]);
    case B_HYPOT: return f32 ? hypotf((float)x[0], (float)x[1]) : hypot(x[0], x[1]);
    case B_FLOOR: return floor(x[0]);
    case B_CEIL: return ceil(x[0]);
    case B_ROUND: return round_half_even(x[0]);
    case B_TRUNC: return trunc(x[0]);
    case B_FMOD: return f32 ? fmodf((float)x[0], (float)x[1]) : fmod(x[0], x[1]);
    case B_MIN: return fmin_nan(x[0], x[1]);
    case B_MAX: return fmax_nan(x[0], x[1]);
    case B_CLAMP: return fmin_nan(fmax_nan(x[0], x[1]), x[2]);
    case B_FMA: return f32 ? fmaf((float)x[0], (float)x[1], (float)x[2]) : fma(x[0], x[1], x[2]);
    case B_SIGMOID: return f32 ? nnk_vm_sigmoid((float)x[0]) : 1.0 / (1.0 + exp(-x[0]));
    case B_RELU: return x[0] != x[0] ? x[0] : x[0] > 0 ? x[0] : 0.0;
    case B_COPYSIGN: return copysign(x[0], x[1]);
    case B_NEXTAFTER: return f32 ? nextafterf((float)x[0], (float)x[1]) : nextafter(x[0], x[1]);
    default: nnkc_assert(!"not a float builtin"); return 0;
    }
}

/* Built-ins of complex values: the exact ones (the parts, conj, the
 * constructor, a choice); the others are computed by the generated code. */
static bool fold_complex(Builtin bi, Type t, const Value *args, const Value *a, int n, Value *out)
{
    (void)n;
    switch (bi) {
    case B_WHERE: *out = value_truth(args[0]) ? value_adopt(args[1], t) : value_adopt(args[2], t); return true;
    case B_REAL: *out = value_float(type_part(args[0].type), args[0].v.f); return true;
    case B_IMAG: *out = value_float(type_part(args[0].type), args[0].im); return true;
    case B_CONJ: *out = value_complex(t, a[0].v.f, -a[0].im); return true;
    case B_COMPLEX: /* t: the type of the parts */
        *out = value_complex(t == T_F64 ? T_C128 : T_C64, value_as_double(a[0]), value_as_double(a[1]));
        return true;
    case B_ISNAN: case B_ISINF: case B_ISFINITE: {
        double re = args[0].v.f, im = args[0].im;
        *out = wrap(T_BOOL, bi == B_ISNAN ? re != re || im != im
                          : bi == B_ISINF ? isinf(re) || isinf(im) : isfinite(re) && isfinite(im));
        return true;
    }
    default: return false;
    }
}

bool fold_builtin(Builtin bi, Type t, const Value *args, int n, Value *out)
{
    if (t == T_WCOMPLEX)
        return weak_complex(fold_builtin(bi, T_C128, args, n, out), out);
    Value a[3];
    for (int i = 0; i < n && i < 3; i++)
        a[i] = value_adopt(args[i], t);
    if (type_is_complex(t) || (n > 0 && type_is_complex(args[0].type)) || bi == B_COMPLEX)
        return fold_complex(bi, t, args, a, n, out);
    switch (bi) {
    case B_WHERE:
        *out = value_truth(args[0]) ? value_adopt(args[1], t) : value_adopt(args[2], t);
        return true;
    case B_ISNAN: case B_ISINF: case B_ISFINITE: case B_SIGNBIT: {
        bool fl = type_is_float(args[0].type) || args[0].type == T_WFLOAT;
        double x = fl ? args[0].v.f : 0;
        bool r = bi == B_ISNAN ? x != x : bi == B_ISINF ? isinf(x) : bi == B_ISFINITE ? isfinite(x)
               : fl ? signbit(x) != 0 : is_signed_value(args[0]) && args[0].v.i < 0;
        *out = wrap(T_BOOL, r);
        return true;
    }
    case B_NEXTAFTER:
        if (t == T_F16 || t == T_BF16) {
            *out = value_float(t, next_half(t == T_F16, a[0].v.f, a[1].v.f));
            return true;
        }
        break;
    default:
        break;
    }
    if (type_is_float(t) || t == T_WFLOAT) {
        double x[3] = {0, 0, 0};
        for (int i = 0; i < n && i < 3; i++)
            x[i] = a[i].v.f;
        *out = value_float(t, eval_float(bi, t != T_F64 && t != T_WFLOAT, x));
        return true;
    }
    /* Integer (and bool) arguments of the BR_NUM and BR_ROUND rules. */
    bool uns = is_unsigned(t);
    Value tmp;
    switch (bi) {
    case B_ABS:
        *out = uns || a[0].v.i >= 0 ? a[0] : wrap(t, 0 - (uint64_t)a[0].v.i);
        return true;
    case B_SIGN:
        *out = uns ? wrap(t, a[0].v.u != 0) : wrap(t, (uint64_t)(int64_t)((a[0].v.i > 0) - (a[0].v.i < 0)));
        return true;
    case B_RELU:
        *out = uns || a[0].v.i > 0 ? a[0] : wrap(t, 0);
        return true;
    case B_FLOOR: case B_CEIL: case B_ROUND: case B_TRUNC:
        *out = a[0];
        return true;
    case B_MIN: case B_MAX: {
        fold_binary(BIN_LT, t, a[0], a[1], &tmp);
        bool lt = tmp.v.i;
        *out = (bi == B_MIN) == lt ? a[0] : a[1];
        return true;
    }
    case B_CLAMP: {
        Value lo, r;
        fold_builtin(B_MAX, t, a, 2, &lo);
        Value pair[2] = {lo, a[2]};
        fold_builtin(B_MIN, t, pair, 2, &r);
        *out = r;
        return true;
    }
    default:
        return false;
    }
}

/* ---- printing ------------------------------------------------------------------- */

/* Shortest text that reads back as the same double. */
static void format_double(double f, Buf *out)
{
    char s[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, f);
        if (strtod(s, NULL) == f)
            break;
    }
    buf_puts(out, s);
    if (!strpbrk(s, ".eni"))
        buf_puts(out, ".0");
}

void value_format(Value v, Buf *out, bool c_syntax)
{
    if (type_is_complex(v.type) || v.type == T_WCOMPLEX) {
        /* as Python writes it: 2.5j, (1+2j) */
        Value im = value_float(T_F64, v.im);
        bool pure = v.v.f == 0 && !signbit(v.v.f);
        if (!pure) {
            buf_puts(out, "(");
            value_format(value_float(T_F64, v.v.f), out, c_syntax);
            if (!signbit(v.im) || v.im != v.im)
                buf_puts(out, "+");
        }
        value_format(im, out, c_syntax);
        buf_puts(out, pure ? "j" : "j)");
        return;
    }
    if (type_is_float(v.type) || v.type == T_WFLOAT) {
        double f = v.v.f;
        if (f != f)
            buf_puts(out, c_syntax ? "NAN" : "nan");
        else if (isinf(f))
            buf_puts(out, f > 0 ? (c_syntax ? "INFINITY" : "inf") : (c_syntax ? "-INFINITY" : "-inf"));
        else
            format_double(f, out);
        return;
    }
    if (v.type == T_BOOL)
        buf_puts(out, v.v.i ? "true" : "false");
    else if (is_unsigned(v.type))
        buf_printf(out, "%llu", (unsigned long long)v.v.u);
    else
        buf_printf(out, "%lld", (long long)v.v.i);
}
