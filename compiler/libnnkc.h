/* libnnkc.h - what libnnk (the runtime) uses of libnnkc: the language's
 * limits, the scalar types and values (with the generated code's
 * conversions), compiled modules (api.c) and running a tool (spawn.c).
 * The compiler's own header, nnkc.h, includes this one; the runtime
 * includes only this one.  Each part names the file that defines it.
 */
#ifndef LIBNNKC_H
#define LIBNNKC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits of the language, checked with clear errors. */
enum {
    NNKC_MAX_NESTING = 256,  /* expression nesting: parentheses, calls, unary and right operands; a flat chain is 1 */
    NNKC_MAX_PARAMS = 32,    /* tensor parameters + outputs of a kernel (abi.h's NNK_MAX_TENSORS) */
    NNKC_MAX_SCALARS = 32,   /* scalar parameters of a kernel (abi.h's NNK_MAX_SCALARS) */
    NNKC_MAX_GENERICS = 8,   /* type variables of a kernel or func */
    NNKC_MAX_DIMS = 16,      /* tensor rank (runtime and NAME_strided) */
    NNKC_MAX_INLINE = 64,    /* depth of nested func expansion */
    NNKC_MAX_RAW = 8,        /* raw parameters of a kernel (abi.h's NNK_MAX_RAW) */
    NNKC_MAX_TUPLE = 8,      /* values in the state of one reduce() */
    NNKC_MAX_TYPED_NODES = 1 << 20, /* typed nodes of a kernel instance after inlining its functions */
    NNKC_MAX_IMPORT_DEPTH = 200, /* files nested by imports, the main one included (gcc's #include depth) */
};

/* ---- types.c: the scalar types (types.def) --------------------------- */

typedef enum {
#define TYPE(id, ...) T_##id,
#include "types.def"
#undef TYPE
    T_NSCALAR,
    T_WINT = T_NSCALAR, /* an integer literal, weakly typed */
    T_WFLOAT,           /* a float literal, weakly typed */
    T_WCOMPLEX,         /* an imaginary literal (2.5j), weakly typed: c128 alone */
    T_ERROR,            /* an expression that already had an error */
    T_NONE,
} Type;

typedef enum {
    CLASS_BOOL, CLASS_INT, CLASS_UINT, CLASS_FLOAT, CLASS_COMPLEX, /* of a scalar type */
    CLASS_NUM, CLASS_ANY,                                          /* generic-only */
    CLASS_NONE
} TypeClass;

const char *type_name(Type t);          /* "f32", "literal", ... */
bool type_in_class(Type t, TypeClass c);
const char *class_name(TypeClass c);
Type class_default(TypeClass c); /* f32 for float/num/any, i32, u32 */
Type type_promote(Type a, Type b);  /* language.md §2; weak with weak stays weak */

/* ---- fold.c: values with the generated code's semantics ---------------- */

typedef struct Value {
    Type type; /* a scalar type or T_WINT / T_WFLOAT / T_WCOMPLEX */
    union {
        int64_t i;  /* signed types, bool, T_WINT */
        uint64_t u; /* unsigned types */
        double f;   /* floats (value already rounded to the type), T_WFLOAT;
                     * the real part of c64/c128 and T_WCOMPLEX */
    } v;
    double im;      /* the imaginary part of c64/c128 (0 otherwise) */
} Value;

Value value_int(Type t, int64_t i);
Value value_float(Type t, double f);
Value value_complex(Type t, double re, double im); /* c64/c128, parts rounded */
Value value_cast(Value v, Type to);    /* with the generated code's conversions */
/* f16 / bf16 bit conversions shared with the runtime (round to nearest even). */
uint16_t nnkc_f32_to_f16(float f);
float nnkc_f16_to_f32(uint16_t h);
uint16_t nnkc_f32_to_bf16(float f);
float nnkc_bf16_to_f32(uint16_t h);

/* ---- spawn.c: running a tool (C compiler, nvcc) whatever the host's SIGCHLD */

enum { NNKC_DEFAULT_TIMEOUT_S = 300 };
typedef struct NnkcTool {
    const char *in;           /* bytes for its stdin (NULL: /dev/null) */
    size_t inlen;
    char *out;                /* its stdout and stderr, NUL-terminated and cut */
    size_t outcap;            /* at outcap-1 bytes (out NULL: the caller's own) */
    size_t outlen;
    long timeout_ms;          /* <= 0: none; when over, the tool is killed */
    int err;                  /* set when it could not run (an errno) */
    bool timed_out;
} NnkcTool;
/* Runs argv (argv[0] searched in PATH): its exit status, 128+N when killed
 * by signal N, or -1 (t->err, or t->timed_out).  Thread-safe; the host's
 * SIGCHLD disposition or handler cannot take its status. */
int nnkc_tool_run(char *const *argv, NnkcTool *t);
/* argv[0]'s path as nnkc_tool_run finds it (PATH when it has no '/';
 * /usr/local/bin:/usr/bin:/bin when PATH is unset). */
bool nnkc_find_program(const char *name, char *out, size_t n);
/* NNK_COMPILE_TIMEOUT (seconds, fractions allowed, 0 = none) in ms; the
 * default when unset or not a number. */
long nnkc_tool_timeout_ms(void);

/* Several tools at once (nnkc -c: the C compile beside the CUDA steps;
 * the JIT: the two parts of a kernel's C),
 * at most `jobs` running, the others started in the order added. */
typedef struct NnkcRuns NnkcRuns;
/* NNKC_JOBS, else the online CPUs (1..64): nnkc -c's default -j. */
int nnkc_jobs(void);
/* room for max tools in all; NULL: out of memory */
NnkcRuns *nnkc_runs_new(int jobs, int max);
/* Queues argv (kept by the caller until the tool has ended) with t, as
 * nnkc_tool_run's; false when max tools were added. */
bool nnkc_runs_add(NnkcRuns *s, char *const *argv, NnkcTool *t);
/* The same, but started before the queued tools of nnkc_runs_add (after
 * those of earlier nnkc_runs_add_first calls): a step others wait for. */
bool nnkc_runs_add_first(NnkcRuns *s, char *const *argv, NnkcTool *t);
/* Starts what the job count allows and waits until one tool has ended:
 * its NnkcTool, with *status as nnkc_tool_run's return; NULL when none is
 * left (tools may be added between calls). */
NnkcTool *nnkc_runs_wait(NnkcRuns *s, int *status);
/* Kills and reaps what still runs, and frees s. */
void nnkc_runs_free(NnkcRuns *s);

/* ---- api.c: libnnkc as a library, for the runtime's JIT and for tools --- */

/* A compiled source text: checked, with reflection on its kernels, able to
 * generate code for any instance on demand (the JIT instantiates generic
 * kernels for the dtypes of each call). */
typedef struct NnkcModule NnkcModule;

/* OPENCL: OpenCL C 1.2 (emit_opencl.c, docs/opencl.md); its source defines
 * no descriptor (*symbol is NULL): the kernels are NAME__ew_c, ... */
typedef enum { NNKC_TARGET_C, NNKC_TARGET_CUDA, NNKC_TARGET_OPENCL } NnkcTarget;

typedef struct NnkcParamInfo {
    const char *name;
    bool tensor;       /* T[] */
    bool output;
    bool reduced;      /* an output with the reduced shape (T, in a reduction) */
    int typevar;       /* index into the kernel's generics, or -1 */
    Type type;         /* the declared scalar type when typevar < 0 */
    bool has_default;
    Value dflt;        /* as written: may be a literal (T_WINT / T_WFLOAT) */
    bool inout;        /* an inout parameter, or (output) the output it adds: one array for both */
    bool raw;          /* a raw (indexed) tensor parameter */
} NnkcParamInfo;

typedef struct NnkcKernelInfo {
    const char *name;
    bool reduction;
    int ngenerics;
    const char *generic_names[NNKC_MAX_GENERICS];
    TypeClass generic_classes[NNKC_MAX_GENERICS];
    int nparams;       /* inputs */
    int nouts;
    NnkcParamInfo *params; /* nparams inputs, then nouts outputs */
} NnkcKernelInfo;

typedef struct NnkcModuleOptions {
    const char *const *include_dirs; /* for imports; NULL-terminated or NULL */
    int opt_level;                   /* 0..3 */
} NnkcModuleOptions;

/* Always returns a module (NULL only when out of memory); check ok().
 * Internal errors are diagnostics ("internal compiler error at ..."):
 * libnnkc prints nothing. */
NnkcModule *nnkc_module_new(const char *name, const char *source, size_t len, const NnkcModuleOptions *opt);
bool nnkc_module_ok(const NnkcModule *m);
const char *nnkc_module_diagnostics(const NnkcModule *m); /* rendered, "" when none */
int nnkc_module_kernel_count(const NnkcModule *m);
const NnkcKernelInfo *nnkc_module_kernel(const NnkcModule *m, int i);
const NnkcKernelInfo *nnkc_module_find(const NnkcModule *m, const char *name);
/* Source of one instance for `target`: targs gives each type variable;
 * storage gives the dtype in memory of each tensor parameter then each
 * output (NULL, or T_NONE entries, for the logical types).  The source
 * defines `const nnk_kernel_desc <*symbol>` (nnk/abi.h).  Returns a malloc'ed
 * string, or NULL with a malloc'ed message in *error. */
char *nnkc_module_emit(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage,
                       NnkcTarget target, char **symbol, char **error);
/* Whether the last nnkc_module_emit failed because the instance does not
 * type-check (a generic kernel's body cannot take the types; its error is
 * the rendered diagnostic), as opposed to an internal failure. */
bool nnkc_module_emit_rejected(const NnkcModule *m);
/* Whether the last nnkc_module_emit failed for lack of memory (it then
 * returns NULL, and *error may be NULL). */
bool nnkc_module_oom(const NnkcModule *m);
void nnkc_module_free(NnkcModule *m);
/* Whether an instance (same arguments as nnkc_module_emit) is a plain
 * reduction that a library such as cuDNN can run instead of generated
 * code: one tensor parameter x and one reduced-shape output r, x, r and
 * the instance's values all of one dtype f16, f32 or f64 (storage as
 * well), no scalar parameters used, and r is exactly
 *   sum(x) prod(x) min(x) max(x) mean(x)   -> NNKC_REDUCE_SUM ... _MEAN
 *   max(abs(x)) sum(abs(x)) sqrt(sum(x*x)) -> _AMAX _NORM1 _NORM2.
 * The values equal nnk/extension.h's NNK_REDUCE_*.  NNKC_REDUCE_NONE for
 * anything else, elementwise kernels and errors. */
typedef enum {
    NNKC_REDUCE_NONE, NNKC_REDUCE_SUM, NNKC_REDUCE_PROD, NNKC_REDUCE_MIN, NNKC_REDUCE_MAX, NNKC_REDUCE_AMAX,
    NNKC_REDUCE_MEAN, NNKC_REDUCE_NORM1, NNKC_REDUCE_NORM2,
} NnkcReduceOp;
NnkcReduceOp nnkc_module_reduce_op(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage);
/* The evaluator of an elementwise instance's IR (eval.c: the constant
 * folder's arithmetic, the bits of the generated C), for the first calls
 * while its C compiles; NULL when it does not take the instance (complex
 * values, reductions, raw parameters, idx, index(d)) or on errors.  An
 * evaluator owns its copy of the IR: it outlives the module. */
typedef struct NnkcEval NnkcEval;
NnkcEval *nnkc_module_eval(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage);
/* Work per element (nodes, loads and stores): the caller's measure of cost. */
int nnkc_eval_cost(const NnkcEval *ev);
/* Elements [begin, end) of a plan (nnk/abi.h's nnk_plan), as the
 * descriptor's run would compute them; thread-safe (ev is read only). */
struct nnk_plan;
void nnkc_eval_run(const NnkcEval *ev, const struct nnk_plan *p, int64_t begin, int64_t end);
void nnkc_eval_free(NnkcEval *ev);
/* The defaults of an instance's scalar parameters (same arguments as
 * nnkc_module_emit), as its code has them: out[p] for input p < n with a
 * default, converted to the parameter's type (a default that is an
 * expression, `-0.5` or `0.5 - 2j`, evaluated: NnkcParamInfo.dflt holds
 * only literals).  has[p] says which.  False on errors (nothing written). */
bool nnkc_module_defaults(NnkcModule *m, const char *kernel, const Type *targs, const Type *storage, Value *out,
                          bool *has, int n);
/* Flags for compiling generated C into a shared object (besides -shared -fPIC -o). */
const char *nnkc_c_flags(int opt_level);

#endif /* LIBNNKC_H */
