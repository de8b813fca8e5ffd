/* eval_bits.c - the first-call evaluator (compiler/eval.c) against the
 * compiled code, bit for bit (docs/runtime.md, "The first call").
 *
 * eval_bits FILE.nnk...: every elementwise kernel of the files, for type
 * arguments drawn from each type variable's class, on generated inputs
 * (special values, then random bit patterns and random values), is
 * launched twice in this process with the disk cache off: once on the
 * evaluator (rt_jit_eval_always) while its C compiles, once on the
 * compiled object (one type choice per generic kernel, all four with
 * NNK_EVAL_BITS_ALL=1).  The outputs' bytes must be equal; an instance the
 * evaluator refuses is counted, not compared.  Prints "N passed, N failed"
 * with the counts; exit 1 on a difference, on fewer than MIN_TAKEN
 * instances taken.
 *
 * eval_bits --threads: four threads launch one cold kernel at once, small
 * launches (on the evaluator) and large ones (waiting for the compile),
 * with the results compared with the compiled code's (under
 * ThreadSanitizer in `make check-tsan`). */
#include "internal.h"
#include "libnnkc.h" /* the classes of type variables */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 97, MIN_TAKEN = 20 };

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Element i of a generated input of dtype t into p. */
static void gen(nnk_dtype t, int i, void *p)
{
    static const double special[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-40, -1e-310, 1e30, -1e300, 65504.0,
                                     100.0, 88.7, -104.0, 1e6, 3.14159265358979, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0};
    const int nspecial = (int)(sizeof special / sizeof special[0]);
    const size_t size = nnk_dtype_size(t);
    uint64_t bits = next();
    if (i >= nspecial && (i & 1)) { /* a random pattern */
        if (t == NNK_BOOL)
            bits &= 1;
        memcpy(p, &bits, size);
        return;
    }
    double v = i < nspecial ? special[i] : (double)(int64_t)(bits % 20001) / 100.0 - 100.0;
    if (t == NNK_F16 || t == NNK_BF16 || t == NNK_F32 || t == NNK_F64) {
        nnk_scalar s = rt_scalar_from_f64(t, v);
        memcpy(p, &s, size);
    } else {
        nnk_scalar s = rt_scalar_from_i64(t, v != v ? 7 : v > 1e18 ? INT64_MAX : v < -1e18 ? INT64_MIN : (int64_t)v);
        memcpy(p, &s, size);
    }
}

static const nnk_dtype float_c[] = {NNK_F32, NNK_F64, NNK_F16, NNK_BF16};
static const nnk_dtype int_c[] = {NNK_I32, NNK_I8, NNK_I64, NNK_I16};
static const nnk_dtype uint_c[] = {NNK_U8, NNK_U32, NNK_U64, NNK_U16};
static const nnk_dtype num_c[] = {NNK_F32, NNK_I32, NNK_F64, NNK_U8};
static const nnk_dtype any_c[] = {NNK_F32, NNK_BOOL, NNK_I64, NNK_F16};

static nnk_dtype pick(int cls, int c)
{
    switch (cls) {
    case CLASS_BOOL: return NNK_BOOL;
    case CLASS_INT: return int_c[c];
    case CLASS_UINT: return uint_c[c];
    case CLASS_FLOAT: return float_c[c];
    case CLASS_NUM: return num_c[c];
    case CLASS_ANY: return any_c[c];
    default: return NNK_DTYPE_COUNT; /* complex: the evaluator takes none */
    }
}

static int passed, failed, refused, skipped, nan_payload;

/* The dtype of the outputs' bytes, one per byte offset run (launch). */
static nnk_dtype out_dtype[64];
static size_t out_end[64];
static int nouts;

static bool is_nan(nnk_dtype t, const uint8_t *p)
{
    uint64_t u = 0;
    memcpy(&u, p, nnk_dtype_size(t));
    switch (t) {
    case NNK_F16: return (u & 0x7fff) > 0x7c00;
    case NNK_BF16: return (u & 0x7fff) > 0x7f80;
    case NNK_F32: return (u & 0x7fffffffu) > 0x7f800000u;
    case NNK_F64: return (u & 0x7fffffffffffffffu) > 0x7ff0000000000000u;
    default: return false;
    }
}

/* 0: the same bytes; 1: they differ only where both are NaN (another
 * payload or sign); -1: they differ; *at: the first differing byte. */
static int compare(const uint8_t *a, const uint8_t *b, size_t len, size_t *at)
{
    int r = 0;
    size_t from = 0;
    for (int o = 0; o < nouts; o++) {
        const size_t es = nnk_dtype_size(out_dtype[o]);
        for (size_t i = from; i + es <= out_end[o] && i + es <= len; i += es) {
            if (memcmp(a + i, b + i, es) == 0)
                continue;
            if (r == 0)
                *at = i;
            if (!is_nan(out_dtype[o], a + i) || !is_nan(out_dtype[o], b + i)) {
                *at = i;
                return -1;
            }
            r = 1;
        }
        from = out_end[o];
    }
    return r;
}

/* One launch of k on the generated inputs of dtypes dt; the outputs' bytes
 * into out (malloc'd, *len). */
static nnk_status launch(nnk_kernel *k, const nnk_dtype *dt, uint8_t **out, size_t *len)
{
    nnk_args *a;
    nnk_status s = nnk_args_new(&a);
    if (s)
        return s;
    uint64_t keep = rng;
    for (int32_t p = 0; p < k->nin && !s; p++) {
        if (k->params[p].tensor) {
            const int64_t shape[1] = {N};
            nnk_array *x;
            if (!(s = nnk_array_new(NULL, dt[p], 1, shape, &x))) {
                uint8_t *d = nnk_array_data(x);
                for (int i = 0; i < N; i++)
                    gen(dt[p], i, d + (size_t)i * nnk_dtype_size(dt[p]));
                s = nnk_args_array(a, x);
                nnk_array_free(x);
            }
        } else {
            const double v = (double)(next() % 7) - 2.5;
            s = dt[p] == NNK_F16 || dt[p] == NNK_BF16 || dt[p] == NNK_F32 || dt[p] == NNK_F64 ? nnk_args_f64(a, v)
                                                                                           : nnk_args_i64(a, (int64_t)v);
        }
    }
    rng = keep; /* the same inputs for both launches */
    for (int i = 0; i < 64; i++)
        next();
    if (!s)
        s = nnk_launch(k, a);
    *out = NULL;
    *len = 0;
    nouts = 0;
    for (int32_t o = 0; !s && o < nnk_args_output_count(a); o++) {
        nnk_array *y;
        if ((s = nnk_args_output(a, o, &y)))
            break;
        size_t n = (size_t)nnk_array_size(y) * nnk_dtype_size(nnk_array_dtype(y));
        uint8_t *grown = realloc(*out, *len + n + 1);
        if (grown) {
            memcpy(grown + *len, nnk_array_data(y), n);
            *out = grown;
            *len += n;
            if (nouts < 64)
                out_dtype[nouts] = nnk_array_dtype(y), out_end[nouts++] = *len;
        } else {
            s = NNK_ENOMEM;
        }
        nnk_array_free(y);
    }
    nnk_args_free(a);
    return s;
}

static void instance(nnk_kernel *k, int c)
{
    nnk_dtype dt[RT_MAX_PARAMS];
    for (int32_t p = 0; p < k->nin; p++) {
        const rt_param *pm = &k->params[p];
        dt[p] = pm->typevar >= 0 ? pick(k->classes[pm->typevar], c) : pm->type;
        if (dt[p] == NNK_DTYPE_COUNT || dt[p] == NNK_C64 || dt[p] == NNK_C128 || pm->raw) {
            skipped++;
            return;
        }
    }
    uint8_t *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    uint64_t keep = rng;
    rt_jit_eval_always(true);
    nnk_status s = launch(k, dt, &a, &la);
    rt_jit_eval_always(false);
    rt_instance *inst = k->instances;
    if (s || !inst || !rt_jit_is_job(&inst->k)) {
        /* a dtype the kernel refuses, or an instance the evaluator does not take */
        s ? skipped++ : refused++;
        free(a);
        return;
    }
    rt_jit_job_wait(inst->k.handle);
    rng = keep;
    s = launch(k, dt, &b, &lb);
    size_t at = 0;
    const int r = s || la != lb ? -1 : compare(a, b, la, &at);
    if (r < 0) {
        printf("FAIL: %s (type choice %d): %s at byte %zu of %zu\n", k->name, c, s ? nnk_last_error() : "differs", at,
               la);
        failed++;
    } else {
        /* a NaN of another payload or sign: counted apart (docs/runtime.md) */
        if (r > 0)
            printf("# %s (type choice %d): NaN payloads differ (first at byte %zu)\n", k->name, c, at);
        nan_payload += r > 0;
        passed++;
    }
    free(a);
    free(b);
}

/* ---- eval_bits --threads: launches from several threads while the compile runs ---- */

enum { THREADS = 4, SMALL = 1000, LARGE = 300000, ROUNDS = 6 };
static nnk_kernel *tk;

static nnk_status fused(int64_t n, const float *a, const float *b, float *y)
{
    nnk_array *xa, *xb, *xy;
    nnk_args *args;
    nnk_status s = nnk_args_new(&args);
    if (s)
        return s;
    const int64_t shape[1] = {n};
    if (!(s = nnk_array_wrap(NNK_F32, 1, shape, NULL, (void *)a, &xa))) {
        if (!(s = nnk_array_wrap(NNK_F32, 1, shape, NULL, (void *)b, &xb))) {
            if (!(s = nnk_array_wrap(NNK_F32, 1, shape, NULL, y, &xy))) {
                if (!(s = nnk_args_array(args, xa)) && !(s = nnk_args_array(args, xb)) && !(s = nnk_args_out(args, xy)))
                    s = nnk_launch(tk, args);
                nnk_array_free(xy);
            }
            nnk_array_free(xb);
        }
        nnk_array_free(xa);
    }
    nnk_args_free(args);
    return s;
}

static float *in_a, *in_b, *outs[THREADS][ROUNDS];

static void *launcher(void *arg)
{
    const intptr_t t = (intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++)
        if (fused((r + t) % 3 ? SMALL : LARGE, in_a, in_b, outs[t][r]))
            return NULL;
    return (void *)1;
}

static int threads_mode(void)
{
    setenv("NNK_CACHE", "0", 1);
    nnk_module *m;
    if (nnk_module_compile(NULL, "elementwise f(a: f32[], b: f32[]) -> (y: f32[]) { y = exp(a) * sin(b) + sqrt(a * b); }",
                           NULL, &m) ||
        nnk_module_kernel(m, "f", &tk)) {
        printf("FAIL: %s\n", nnk_last_error());
        return 1;
    }
    in_a = malloc(LARGE * sizeof(float));
    in_b = malloc(LARGE * sizeof(float));
    float *want = malloc(LARGE * sizeof(float));
    for (int i = 0; i < LARGE; i++)
        in_a[i] = 0.5f + (float)(i % 1013) / 337.0f, in_b[i] = (float)(i % 977) * 0.37f - 150.0f;
    for (int t = 0; t < THREADS; t++)
        for (int r = 0; r < ROUNDS; r++)
            outs[t][r] = calloc(LARGE, sizeof(float));
    pthread_t th[THREADS];
    for (intptr_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, launcher, (void *)t);
    int bad = 0;
    for (int t = 0; t < THREADS; t++) {
        void *ok;
        pthread_join(th[t], &ok);
        bad += !ok;
    }
    /* the compiled code's (the compile is done: a launch this large waits for it) */
    bad += fused(LARGE, in_a, in_b, want) != NNK_OK;
    for (int t = 0; t < THREADS; t++)
        for (int r = 0; r < ROUNDS; r++) {
            const int64_t n = (r + t) % 3 ? SMALL : LARGE;
            bad += memcmp(outs[t][r], want, (size_t)n * sizeof(float)) != 0;
            free(outs[t][r]);
        }
    nnk_module_free(m);
    nnk_shutdown();
    free(in_a);
    free(in_b);
    free(want);
    printf("%d passed, %d failed\n", bad ? 0 : 1, bad ? 1 : 0);
    return bad != 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--threads") == 0)
        return threads_mode();
    const char *env = getenv("NNK_EVAL_BITS_ALL");
    const bool all = env && strcmp(env, "1") == 0;
    int rotate = 0;
    setenv("NNK_CACHE", "0", 1); /* every instance cold: a job (before any thread) */
    for (int f = 1; f < argc; f++) {
        FILE *fp = fopen(argv[f], "rb");
        if (!fp) {
            perror(argv[f]);
            return 2;
        }
        static char src[1 << 20];
        size_t n = fread(src, 1, sizeof src - 1, fp);
        fclose(fp);
        src[n] = 0;
        nnk_module *m;
        char opts[4200];
        snprintf(opts, sizeof opts, "name=%s", argv[f]);
        if (nnk_module_compile(NULL, src, opts, &m)) {
            printf("# %s: %s\n", argv[f], nnk_last_error());
            continue;
        }
        for (int32_t i = 0; i < nnk_module_kernel_count(m); i++) {
            nnk_kernel *k;
            if (nnk_module_kernel(m, nnk_module_kernel_name(m, i), &k) || k->reduction)
                continue;
            /* every type choice with NNK_EVAL_BITS_ALL=1 (about 330
             * instances, a minute of compiles); else one per kernel,
             * rotating through the choices */
            if (!k->ngenerics)
                instance(k, 0);
            else if (all)
                for (int c = 0; c < 4; c++)
                    instance(k, c);
            else
                instance(k, rotate++ % 4);
        }
        nnk_module_free(m);
    }
    nnk_shutdown();
    printf("# evaluator refused %d instances; %d not run (dtypes, complex, raw); %d of the passed with "
           "other NaN payloads\n", refused, skipped, nan_payload);
    printf("%d passed, %d failed\n", passed, failed);
    if (passed < MIN_TAKEN)
        printf("FAIL: only %d instances on the evaluator (at least %d expected)\n", passed, MIN_TAKEN);
    return failed || passed < MIN_TAKEN;
}
