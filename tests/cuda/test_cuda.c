/* test_cuda.c - the cuda and cudnn extensions on a machine without a GPU,
 * their JIT without a device, and libnnkc's plain-reduction query.
 *
 *  - the extensions load from the build tree, are listed, report 0
 *    devices with a reason (nnk_extension_status), refuse contexts with
 *    that reason, and refuse NAME_cuda launches;
 *  - the toolkit's stub libcuda (NNK_CUDA_DRIVER) is recognised, not used;
 *  - cu_jit: NVRTC to a cubin for sm_75, PTX for a GPU newer than NVRTC,
 *    a clear error for one older, the built-in fp16/bf16 headers, the disk
 *    cache (hit, corrupt entry), compile errors with the source line and a
 *    kept copy of the source; no FMA contraction unless NNK_CUDA_FMAD=1
 *    (the PTX of a * b - c, both ways);
 *  - NVRTC compiles at opt_level 2, 0 and -1 from several threads: the
 *    settings gate (different settings never overlap, the same do), and
 *    full-optimisation PTX that lints clean and keeps its bytes
 *    (test_jit_gate);
 *  - the status line in a buffer per thread (cu_status, both extensions);
 *  - nnkc_module_reduce_op on kernels that are and are not plain reductions;
 *  - dispatch.c's choices (warp per row, the split's parts, rd_fin's grid,
 *    32-bit strided offsets and their magic numbers) with a fake launcher;
 *  - cu_rect_plan (strided device copies as cuMemcpy2DAsync planes)
 *    against an element-by-element copy.
 *
 * Environment: top_builddir (the extensions are in $top_builddir/.libs),
 * CUDA_HOME (for the stub library).  Exit 77 when NVRTC cannot be loaded
 * and no toolkit is configured. */
#include "cuda_core.h"
#include "internal.h"
#include "nnkc.h"
#include "ptx_lint.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures, checks;

#define CHECK(cond, ...)                                                                                 \
    do {                                                                                                 \
        checks++;                                                                                        \
        if (!(cond)) {                                                                                   \
            failures++;                                                                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
            printf(__VA_ARGS__);                                                                         \
            printf("\n");                                                                                \
        }                                                                                                \
    } while (0)

static const char *cuda_home(void)
{
    const char *h = getenv("CUDA_HOME");
    return h && *h ? h : "/usr/local/cuda";
}

/* ---- libnnkc: plain reductions ---------------------------------------------------- */

static void test_reduce_op(void)
{
    static const char src[] =
        "reduction rsum<T: float>(x: T[]) -> (r: T) { r = sum(x); }\n"
        "reduction rprod<T: float>(x: T[]) -> (r: T) { r = prod(x); }\n"
        "reduction rmax<T: float>(x: T[]) -> (r: T) { r = max(x); }\n"
        "reduction rmin<T: float>(x: T[]) -> (r: T) { r = min(x); }\n"
        "reduction rmean<T: float>(x: T[]) -> (r: T) { r = mean(x); }\n"
        "reduction ramax<T: float>(x: T[]) -> (r: T) { r = max(abs(x)); }\n"
        "reduction rn1<T: float>(x: T[]) -> (r: T) { r = sum(abs(x)); }\n"
        "reduction rn2<T: float>(x: T[]) -> (r: T) { r = sqrt(sum(x * x)); }\n"
        "reduction rplus1<T: float>(x: T[]) -> (r: T) { r = sum(x) + 1; }\n"
        "reduction rwide(x: f32[]) -> (r: f64) { r = sum(x); }\n"
        "reduction rtwo(x: f32[], y: f32[]) -> (r: f32) { r = sum(x * y); }\n"
        "reduction rscaled(x: f32[], a: f32) -> (r: f32) { r = sum(a * x); }\n"
        "reduction rsoft(x: f32[]) -> (y: f32[]) { y = x / sum(x); }\n"
        "reduction rargmax(x: f32[]) -> (i: i64) { i = argmax(x); }\n"
        "reduction rsumint(x: i32[]) -> (r: i32) { r = sum(x); }\n"
        "reduction rtwoout(x: f32[]) -> (a: f32, b: f32) { a = sum(x); b = max(x); }\n"
        "elementwise ew(x: f32[]) -> (y: f32[]) { y = x; }\n";
    NnkcModuleOptions o = {NULL, 2};
    NnkcModule *m = nnkc_module_new("reduce_op.nnk", src, strlen(src), &o);
    CHECK(nnkc_module_ok(m), "the module compiles: %s", nnkc_module_diagnostics(m));
    static const struct {
        const char *kernel;
        Type t;
        NnkcReduceOp op;
    } cases[] = {
        {"rsum", T_F32, NNKC_REDUCE_SUM},     {"rsum", T_F16, NNKC_REDUCE_SUM},     {"rsum", T_F64, NNKC_REDUCE_SUM},
        {"rsum", T_BF16, NNKC_REDUCE_NONE},   {"rprod", T_F32, NNKC_REDUCE_PROD},   {"rmax", T_F16, NNKC_REDUCE_MAX},
        {"rmin", T_F64, NNKC_REDUCE_MIN},     {"rmean", T_F32, NNKC_REDUCE_MEAN},   {"ramax", T_F32, NNKC_REDUCE_AMAX},
        {"rn1", T_F16, NNKC_REDUCE_NORM1},    {"rn2", T_F32, NNKC_REDUCE_NORM2},    {"rn2", T_F64, NNKC_REDUCE_NORM2},
        {"rplus1", T_F32, NNKC_REDUCE_NONE},  {"rwide", T_NONE, NNKC_REDUCE_NONE},  {"rtwo", T_NONE, NNKC_REDUCE_NONE},
        {"rscaled", T_NONE, NNKC_REDUCE_NONE}, {"rsoft", T_NONE, NNKC_REDUCE_NONE}, {"rargmax", T_NONE, NNKC_REDUCE_NONE},
        {"rsumint", T_NONE, NNKC_REDUCE_NONE},  {"rtwoout", T_NONE, NNKC_REDUCE_NONE}, {"ew", T_NONE, NNKC_REDUCE_NONE},
        {"nosuch", T_NONE, NNKC_REDUCE_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Type targs[1] = {cases[i].t};
        NnkcReduceOp op = nnkc_module_reduce_op(m, cases[i].kernel, targs, NULL);
        CHECK(op == cases[i].op, "reduce_op(%s<%s>) = %d, expected %d", cases[i].kernel, type_name(cases[i].t), op,
              cases[i].op);
    }
    /* a sum read from f16 storage is not a plain f32 sum */
    Type t32[1] = {T_F32}, st[2] = {T_F16, T_NONE};
    CHECK(nnkc_module_reduce_op(m, "rsum", t32, st) == NNKC_REDUCE_NONE, "another storage dtype is not plain");
    /* the query leaves no diagnostics and the module still emits */
    char *sym = NULL, *err = NULL;
    char *code = nnkc_module_emit(m, "rsum", t32, NULL, NNKC_TARGET_CUDA, &sym, &err);
    CHECK(code && strstr(code, "rsum_f32__rd_block"), "the module still emits CUDA: %s", err ? err : "");
    free(code);
    free(sym);
    free(err);
    CHECK((int)NNKC_REDUCE_NORM2 == (int)NNK_REDUCE_NORM2 && (int)NNKC_REDUCE_SUM == (int)NNK_REDUCE_SUM,
          "libnnkc's and the extension ABI's values agree");
    /* NAME__cu_sizes ends with the flags: 1 for argmax/argmin (the cuda
     * extension refuses their empty slices, as the runtime does for C) */
    Type none[1] = {T_NONE};
    code = nnkc_module_emit(m, "rargmax", none, NULL, NNKC_TARGET_CUDA, &sym, &err);
    CHECK(code && strstr(code, "rargmax__cu_sizes[] = {\n    1, (int32_t)sizeof(rargmax__fin),\n    (int32_t)sizeof(rargmax__s1),\n    1,\n};"),
          "argmax flagged in NAME__cu_sizes");
    free(code);
    free(sym);
    free(err);
    code = nnkc_module_emit(m, "rsum", t32, NULL, NNKC_TARGET_CUDA, &sym, &err);
    CHECK(code && strstr(code, "(int32_t)sizeof(rsum_f32__s1),\n    0,\n};"), "no flag for a sum");
    free(code);
    free(sym);
    free(err);
    nnkc_module_free(m);
}

/* ---- the extensions through libnnk --------------------------------------------------- */

static void test_extensions(void)
{
    const char *names[64];
    int32_t n = 0;
    CHECK(nnk_list_extensions(names, 64, &n) == NNK_OK, "list: %s", nnk_last_error());
    bool cuda = false, cudnn = false;
    for (int32_t i = 0; i < n && i < 64; i++) {
        cuda |= strcmp(names[i], "cuda") == 0;
        cudnn |= strcmp(names[i], "cudnn") == 0;
    }
    CHECK(cuda && cudnn, "cuda and cudnn are listed (NNK_EXTENSION_PATH=%s)", getenv("NNK_EXTENSION_PATH"));

    const char *exts[2] = {"cuda", "cudnn"};
    for (int e = 0; e < 2; e++) {
        nnk_extension *x = NULL;
        nnk_status s = nnk_import_extension(exts[e], &x);
        CHECK(s == NNK_OK, "import %s: %s", exts[e], nnk_last_error());
        if (s)
            continue;
        int32_t count = -1;
        CHECK(nnk_extension_get_device_count(x, &count) == NNK_OK, "get_device_count");
        const char *why = nnk_extension_status(x);
        printf("%s: %d devices; status: %s\n", exts[e], count, why);
        if (count > 0) {
            printf("note: this machine has a GPU; the no-GPU checks of %s are skipped\n", exts[e]);
            continue;
        }
        CHECK(count == 0, "%s reports 0 devices", exts[e]);
        CHECK(why && (strstr(why, "no NVIDIA driver") || strstr(why, "no CUDA-capable GPU") ||
                      strstr(why, "failed to initialise")),
              "%s says why it has no devices: '%s'", exts[e], why ? why : "(null)");
        if (e == 1)
            CHECK(strstr(why, "cuDNN"), "cudnn's status speaks of cuDNN: '%s'", why);
        nnk_device_info info[2];
        CHECK(nnk_extension_get_devices(x, info, 2, &count) == NNK_OK && count == 0, "get_devices: none");
        CHECK(nnk_extension_clear_memory_cache(x, NULL) == NNK_OK, "clear_memory_cache");
        s = nnk_extension_device_synchronize(x, 0);
        CHECK(s == NNK_EDEVICE && strstr(nnk_last_error(), "has no devices") && strstr(nnk_last_error(), why),
              "device_synchronize(0): %s: %s", nnk_status_name(s), nnk_last_error());
        /* the context is made without asking the device (NNabla's); its
         * first use says there is none */
        nnk_context *ctx = NULL;
        s = nnk_get_extension_context(exts[e], "device_id=0", &ctx);
        CHECK(s == NNK_OK, "%s context: %s: %s", exts[e], nnk_status_name(s), nnk_last_error());
        nnk_array *arr = NULL;
        int64_t four = 4;
        s = ctx ? nnk_array_new(ctx, NNK_F32, 1, &four, &arr) : NNK_EDEVICE;
        CHECK(s == NNK_EDEVICE && strstr(nnk_last_error(), "has no devices") && strstr(nnk_last_error(), why),
              "%s context's first use: %s: %s", exts[e], nnk_status_name(s), nnk_last_error());
        nnk_array_free(arr);
        nnk_context_free(ctx);
    }
    /* NAME_cuda's entry into libnnk */
    static const nnk_param_desc params[2] = {{"x", NNK_F32, NNK_PARAM_TENSOR, {0}},
                                             {"y", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}}};
    nnk_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.abi = NNK_ABI_VERSION;
    d.name = "copy";
    d.nparams = 1;
    d.nouts = 1;
    d.params = params;
    nnk_plan p;
    memset(&p, 0, sizeof p);
    nnk_status s = nnk_launch_desc_stream(NULL, &d, &p, NULL);
    CHECK(s == NNK_EUNSUPPORTED && strstr(nnk_last_error(), "no devices"), "launch_desc_stream: %s: %s",
          nnk_status_name(s), nnk_last_error());
    s = nnk_launch_desc_stream("cpu", &d, &p, NULL);
    CHECK(s == NNK_EUNSUPPORTED, "cpu has no launch_stream: %s", nnk_last_error());
    d.abi = 99;
    CHECK(nnk_launch_desc_stream(NULL, &d, &p, NULL) == NNK_EABI, "another ABI");
}

/* ---- drivers that are not drivers ------------------------------------------------------ */

static void test_drivers(void)
{
    char stub[1200];
    snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so", cuda_home());
    if (access(stub, R_OK) == 0) {
        setenv("NNK_CUDA_DRIVER", stub, 1);
        cu_state *S = NULL;
        CHECK(cu_init(&rt_host_api, "cuda", &S) == NNK_OK, "init with the stub: %s", nnk_last_error());
        if (S) {
            printf("stub: %s\n", cu_status(S));
            CHECK(S->ndevices == 0 && strstr(cu_status(S), "stub library") &&
                      strstr(cu_status(S), "CUDA_ERROR_STUB_LIBRARY"),
                  "the stub libcuda is recognised: %s", cu_status(S));
            cu_fini(S);
        }
    } else {
        printf("note: no stub libcuda at %s\n", stub);
    }
    setenv("NNK_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    cu_state *S = NULL;
    CHECK(cu_init(&rt_host_api, "cuda", &S) == NNK_OK && S->ndevices == 0 &&
              strstr(cu_status(S), "no NVIDIA driver") && strstr(cu_status(S), "/nonexistent/libcuda.so.1"),
          "a missing driver: %s", S ? cu_status(S) : "");
    cu_fini(S);
    unsetenv("NNK_CUDA_DRIVER");
    setenv("NNK_CUDA_BLOCK", "100", 1);
    CHECK(cu_init(&rt_host_api, "cuda", &S) == NNK_EINVAL, "NNK_CUDA_BLOCK=100 is refused");
    unsetenv("NNK_CUDA_BLOCK");
}

/* ---- pinned staging of host copies, on tests/cuda/fakecuda.c ----------------------------- */

typedef struct {
    long pinned_live, pinned_allocs, pinned_frees;
    long async_pinned, async_pageable;
    long syncs;
    long bytes_to_device, bytes_to_host;
} fake_counters; /* fakecuda.c's fakecuda_counters_t */

typedef struct {
    cu_state *S;
    size_t bytes;
    int ok;
} copy_job;

/* A round trip of `bytes` of a pattern through device memory. */
static int round_trip(cu_state *S, size_t bytes, unsigned seed)
{
    unsigned char *a = malloc(bytes + 1), *b = malloc(bytes + 1);
    void *dev = NULL;
    int ok = a && b && cu_mem_alloc(S, 0, bytes, &dev) == NNK_OK;
    /* xorshift bytes: no period a chunk of the staging could hide behind */
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; ok && i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        a[i] = (unsigned char)(x >> 24);
    }
    ok = ok && cu_copy(S, 0, NNK_COPY_HOST_TO_DEVICE, dev, a, bytes) == NNK_OK &&
         cu_copy(S, 0, NNK_COPY_DEVICE_TO_HOST, b, dev, bytes) == NNK_OK && memcmp(a, b, bytes) == 0;
    if (dev)
        cu_mem_free(S, 0, dev);
    free(a);
    free(b);
    return ok;
}

static void *copy_thread(void *arg)
{
    copy_job *j = arg;
    j->ok = 1;
    for (unsigned r = 0; r < 4; r++)
        j->ok &= round_trip(j->S, j->bytes + r, r + (unsigned)j->bytes);
    return NULL;
}

static void test_staging(void)
{
    const char *b = getenv("top_builddir");
    char lib[4200];
    snprintf(lib, sizeof lib, "%s/tests/cuda/.libs/libfakecuda.so", b ? b : ".");
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    void (*counters)(fake_counters *) = h ? (void (*)(fake_counters *))dlsym(h, "fakecuda_counters") : NULL;
    CHECK(counters != NULL, "the fake driver %s: %s", lib, h ? "no fakecuda_counters" : dlerror());
    if (!counters)
        return;
    setenv("NNK_CUDA_DRIVER", lib, 1);
    cu_state *S = NULL;
    CHECK(cu_init(&rt_host_api, "cuda", &S) == NNK_OK && S->ndevices == 1, "init on the fake driver: %s",
          S ? cu_status(S) : nnk_last_error());
    if (!S || S->ndevices != 1) {
        cu_fini(S);
        unsetenv("NNK_CUDA_DRIVER");
        return;
    }
    /* below CU_STAGE_MIN pageable; from it on staged, in 1, 2, 5 halves */
    static const size_t sizes[] = {1000, CU_STAGE_MIN - 1, CU_STAGE_MIN, (CU_STAGE_BYTES / 2) + 17,
                                   2 * CU_STAGE_BYTES + 5};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        fake_counters c0, c1;
        counters(&c0);
        CHECK(round_trip(S, sizes[i], (unsigned)i), "round trip of %zu bytes", sizes[i]);
        counters(&c1);
        size_t chunks = sizes[i] < CU_STAGE_MIN ? 0 : (sizes[i] + CU_STAGE_BYTES / 2 - 1) / (CU_STAGE_BYTES / 2);
        CHECK(c1.async_pinned - c0.async_pinned == (long)(2 * chunks) &&
                  c1.async_pageable - c0.async_pageable == (chunks ? 0 : 2),
              "%zu bytes: %ld pinned copies (want %zu), %ld pageable", sizes[i], c1.async_pinned - c0.async_pinned,
              2 * chunks, c1.async_pageable - c0.async_pageable);
    }
    fake_counters c;
    counters(&c);
    CHECK(c.pinned_live == 1 && c.pinned_allocs == 1, "one staging buffer, reused: %ld live, %ld allocated",
          c.pinned_live, c.pinned_allocs);
    /* several threads at once: one has the staging, the others copy pageable */
    copy_job jobs[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        jobs[i] = (copy_job){S, (size_t)CU_STAGE_BYTES / 2 * 3 + (size_t)i, 0};
        pthread_create(&t[i], NULL, copy_thread, &jobs[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(jobs[i].ok, "thread %d's round trips", i);
    }
    /* clear_memory_cache frees it; the next copy pins again */
    CHECK(cu_clear_memory_cache(S) == NNK_OK, "clear");
    counters(&c);
    CHECK(c.pinned_live == 0 && c.pinned_frees == 1, "clear_memory_cache freed the staging: %ld live", c.pinned_live);
    CHECK(round_trip(S, CU_STAGE_MIN, 9), "a copy after the clear");
    counters(&c);
    CHECK(c.pinned_live == 1 && c.pinned_allocs == 2, "pinned again: %ld live", c.pinned_live);
    cu_fini(S);
    counters(&c);
    CHECK(c.pinned_live == 0, "freed at unload: %ld live", c.pinned_live);

    /* pinning refused: pageable copies, the same bytes */
    setenv("FAKECUDA_NO_PIN", "1", 1);
    S = NULL;
    CHECK(cu_init(&rt_host_api, "cuda", &S) == NNK_OK && S->ndevices == 1, "init, no pinning");
    if (S && S->ndevices == 1) {
        fake_counters c0, c1;
        counters(&c0);
        CHECK(round_trip(S, 2 * CU_STAGE_BYTES + 5, 3) && round_trip(S, CU_STAGE_MIN, 4), "round trips, no pinning");
        counters(&c1);
        CHECK(c1.async_pinned == c0.async_pinned && c1.async_pageable - c0.async_pageable == 4 && c1.pinned_live == 0,
              "no pinning: %ld pinned, %ld pageable copies", c1.async_pinned - c0.async_pinned,
              c1.async_pageable - c0.async_pageable);
    }
    cu_fini(S);
    unsetenv("FAKECUDA_NO_PIN");

    /* out of memory in a copy, staged or not: NNK_ENOMEM */
    setenv("FAKECUDA_COPY_OOM", "1", 1);
    S = NULL;
    CHECK(cu_init(&rt_host_api, "cuda", &S) == NNK_OK && S->ndevices == 1, "init, copies out of memory");
    if (S && S->ndevices == 1) {
        size_t n = CU_STAGE_BYTES;
        char *a = calloc(1, n);
        void *dev = NULL;
        CHECK(a && cu_mem_alloc(S, 0, n, &dev) == NNK_OK, "alloc");
        if (a && dev) {
            CHECK(cu_copy(S, 0, NNK_COPY_HOST_TO_DEVICE, dev, a, n) == NNK_ENOMEM, "staged copy out of memory: %s",
                  nnk_last_error());
            CHECK(cu_copy(S, 0, NNK_COPY_DEVICE_TO_HOST, a, dev, n) == NNK_ENOMEM, "staged copy back out of memory");
            CHECK(cu_copy(S, 0, NNK_COPY_HOST_TO_DEVICE, dev, a, 100) == NNK_ENOMEM, "pageable copy out of memory");
        }
        if (dev)
            cu_mem_free(S, 0, dev);
        free(a);
    }
    cu_fini(S);
    unsetenv("FAKECUDA_COPY_OOM");
    unsetenv("NNK_CUDA_DRIVER");
    counters(&c);
    CHECK(c.pinned_live == 0, "no staging left: %ld live", c.pinned_live);
}

/* ---- the JIT without a device ------------------------------------------------------------- */

static char *cuda_of(const char *src, const char *kernel, Type t)
{
    NnkcModuleOptions o = {NULL, 2};
    NnkcModule *m = nnkc_module_new("jit.nnk", src, strlen(src), &o);
    Type targs[1] = {t};
    char *sym = NULL, *err = NULL;
    char *code = nnkc_module_ok(m) ? nnkc_module_emit(m, kernel, targs, NULL, NNKC_TARGET_CUDA, &sym, &err) : NULL;
    if (!code)
        printf("cannot generate %s: %s %s\n", kernel, err ? err : "", nnkc_module_diagnostics(m));
    free(sym);
    free(err);
    nnkc_module_free(m);
    return code;
}

/* The text of the function whose definition starts "NAME(" in code, up
 * to its closing brace at the start of a line; NULL when absent. */
static char *function_text(const char *code, const char *name)
{
    char head[200];
    snprintf(head, sizeof head, "%s(", name);
    const char *b = code ? strstr(code, head) : NULL;
    const char *e = b ? strstr(b, "\n}\n") : NULL;
    if (!e)
        return NULL;
    char *t = malloc((size_t)(e - b) + 1);
    if (t) {
        memcpy(t, b, (size_t)(e - b));
        t[e - b] = 0;
    }
    return t;
}

/* The row kept on chip (rd_row): the inputs more than one pass reads are
 * loaded in NAME__rowload only; the passes read them from rc, the other
 * operands as before; a reduction whose inputs one pass reads has no row
 * kernel; the slots reach the host in NAME__cu_sizes' flags. */
static void test_row_source(void)
{
    const char *src = "reduction softmax<T: float>(x: T[]) -> (y: T[]) {\n"
                      "    let m = max(x);\n    let s = sum(exp(x - m));\n    y = exp(x - m) / s;\n}\n"
                      "reduction ln(x: f32[], g: f32[], b: f32[]) -> (y: f32[]) {\n"
                      "    let m = mean(x);\n    let v = mean((x - m) * (x - m));\n"
                      "    y = (x - m) * rsqrt(v + 1e-5) * g + b;\n}\n"
                      "reduction wsum(x: f64[], w: f64[]) -> (y: f64[]) {\n"
                      "    let s = sum(x * w);\n    y = x * w / s;\n}\n"
                      "reduction total(x: f32[]) -> (r: f32) { r = sum(x); }\n";
    static const struct {
        const char *kernel;
        Type t;
        const char *field;      /* the row's array */
        const char *cached[2];  /* loaded by rowload only */
        const char *other[2];   /* still loaded by the epilogue */
        const char *flags;      /* NAME__cu_sizes' last entry: slots << 8 | shared row bytes << 16 | inputs << 24 */
    } c[] = {
        {"softmax", T_F32, "float c0[16];", {"g0["}, {NULL}, "17043456,"},
        {"softmax", T_F16, "float c0[16];", {"g0["}, {NULL}, "17043456,"}, /* kept as floats */
        {"softmax", T_BF16, "float c0[16];", {"g0["}, {NULL}, "17043456,"},
        {"ln", T_NONE, "float c0[16];", {"g0["}, {"g1[", "g2["}, "17043456,"},
        {"wsum", T_NONE, "double c1[8];", {"g0[", "g1["}, {NULL}, "34605056,"}, /* two f64 inputs: 8 slots */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char *code = cuda_of(src, c[i].kernel, c[i].t);
        CHECK(code && strstr(code, "__rd_row(") && strstr(code, c[i].field), "%s: rd_row with %s", c[i].kernel,
              c[i].field);
        const char *sz = code ? strstr(code, "__cu_sizes[] = {") : NULL;
        const char *end = sz ? strstr(sz, "};") : NULL;
        CHECK(end && end - sz > 8 && strstr(sz, c[i].flags) && strstr(sz, c[i].flags) < end, "%s: slots in the flags",
              c[i].kernel);
        /* the name's prefix: the text before "__rd_row(" back to a space */
        const char *k = code ? strstr(code, "__rd_row(") : NULL;
        const char *n0 = k;
        while (n0 && n0 > code && n0[-1] != ' ')
            n0--;
        char name[160] = "";
        if (k)
            snprintf(name, sizeof name, "%.*s", (int)(k - n0), n0);
        /* the row in registers (racc, repi) and in shared memory (sacc, sepi) */
        static const char *const passes[] = {"__racc1", "__racc2", "__repi", "__sacc1", "__sacc2", "__sepi"};
        for (size_t p = 0; p < 6; p++) {
            char fn[200];
            snprintf(fn, sizeof fn, "%s%s", name, passes[p]);
            char *t = function_text(code, fn);
            if (!t && p % 3 == 1)
                continue; /* one phase */
            CHECK(t != NULL, "%s: %s is there", c[i].kernel, fn);
            for (int j = 0; t && j < 2 && c[i].cached[j]; j++)
                CHECK(!strstr(t, c[i].cached[j]), "%s: %s reads %s from global memory", c[i].kernel, fn,
                      c[i].cached[j]);
            /* f16/bf16 elements were widened once, in rowload */
            CHECK(t && !strstr(t, "nnk_h2f(rc") && !strstr(t, "nnk_b2f(rc") && !strstr(t, "nnk_h2f(sh") &&
                      !strstr(t, "nnk_b2f(sh"),
                  "%s: %s converts the kept row again", c[i].kernel, fn);
            for (int j = 0; t && p % 3 == 2 && j < 2 && c[i].other[j]; j++)
                CHECK(strstr(t, c[i].other[j]), "%s: %s loads %s itself", c[i].kernel, fn, c[i].other[j]);
            free(t);
        }
        char rl[200];
        snprintf(rl, sizeof rl, "%s__rowload", name);
        char *t = function_text(code, rl);
        for (int j = 0; j < 2 && c[i].cached[j]; j++)
            CHECK(t && strstr(t, c[i].cached[j]), "%s: rowload loads %s", c[i].kernel, c[i].cached[j]);
        if (c[i].t == T_F16 || c[i].t == T_BF16)
            CHECK(t && strstr(t, c[i].t == T_F16 ? "= nnk_h2f(g0[" : "= nnk_b2f(g0["), "%s: rowload widens to float",
                  c[i].kernel);
        free(t);
        /* rd_srow loads the kept inputs into shared memory, once */
        snprintf(rl, sizeof rl, "%s__rd_srow", name);
        t = function_text(code, rl);
        for (int j = 0; j < 2 && c[i].cached[j]; j++) {
            char sh[16];
            snprintf(sh, sizeof sh, "sh%c[r] = ", c[i].cached[j][1]);
            CHECK(t && strstr(t, sh) && strstr(t, c[i].cached[j]), "%s: rd_srow loads %s into %s", c[i].kernel,
                  c[i].cached[j], sh);
        }
        free(t);
        free(code);
    }
    char *code = cuda_of(src, "total", T_NONE);
    CHECK(code && !strstr(code, "__rd_row(") && strstr(code, "(int32_t)sizeof(total__s1),\n    0,\n};"),
          "one pass reads x: no row kernel, no slots");
    free(code);
}

static int count_files(const char *dir, const char *suffix)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -c '%s$'", dir, suffix);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

static bool test_jit(void)
{
    char dir[] = "/tmp/nnk-test-cuda-XXXXXX";
    if (!mkdtemp(dir))
        return false;
    setenv("NNK_CACHE_DIR", dir, 1);
    unsetenv("NNK_CACHE");
    cu_state *S = NULL;
    if (cu_init(&rt_host_api, "cuda", &S) != NNK_OK || cu_nvrtc_ready(S) != NNK_OK) {
        printf("NVRTC: %s\n", nnk_last_error());
        cu_fini(S);
        rmdir(dir);
        return false;
    }
    printf("NVRTC %d.%d, archs sm_%d..sm_%d, headers %s\n", S->nvrtc_major, S->nvrtc_minor, S->archs[0],
           S->archs[S->narchs - 1], S->include_dir[0] ? S->include_dir : "(built-in)");
    static const char src[] =
        "elementwise axpb<T: float>(a: T, x: T[], b: T = 1) -> (y: T[]) { y = a * x + b; }\n"
        "reduction norm<T: float>(x: T[]) -> (r: T) { r = sqrt(sum(x * x)); }\n";
    char *ew = cuda_of(src, "axpb", T_BF16), *rd = cuda_of(src, "norm", T_F16);
    CHECK(ew && rd, "CUDA generated");
    if (!ew || !rd)
        return true;
    char *image = NULL, key[65], key2[65];
    size_t size = 0;
    bool ptx = true;
    nnk_status s = cu_jit(S, 75, ew, "axpb_bf16", 2, &image, &size, &ptx, key);
    CHECK(s == NNK_OK && !ptx && size > 64 && memcmp(image, "\177ELF", 4) == 0, "a cubin for sm_75: %s",
          s ? nnk_last_error() : "");
    CHECK(S->compiles == 1 && S->disk_hits == 0, "compiled once");
    CHECK(count_files(dir, ".cubin") == 1, "one cubin in the disk cache");
    char *first = image;
    size_t first_size = size;
    image = NULL;
    s = cu_jit(S, 75, ew, "axpb_bf16", 2, &image, &size, &ptx, key2);
    CHECK(s == NNK_OK && S->disk_hits == 1 && S->compiles == 1 && size == first_size &&
              memcmp(image, first, size) == 0 && strcmp(key, key2) == 0,
          "the same compile again is a disk hit with the same bytes");
    free(image);
    image = NULL;
    /* a corrupt entry is recompiled */
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
    FILE *f = fopen(path, "r+b");
    if (f) {
        fseek(f, 100, SEEK_SET);
        fputc(0x5a ^ first[100], f);
        fclose(f);
    }
    s = cu_jit(S, 75, ew, "axpb_bf16", 2, &image, &size, &ptx, key2);
    CHECK(s == NNK_OK && S->compiles == 2 && size == first_size && memcmp(image, first, size) == 0,
          "a corrupt cache entry is recompiled");
    free(image);
    image = NULL;
    free(first);
    /* another arch, another key */
    s = cu_jit(S, 90, ew, "axpb_bf16", 2, &image, &size, &ptx, key2);
    CHECK(s == NNK_OK && !ptx && strcmp(key, key2) != 0, "sm_90: %s", s ? nnk_last_error() : "");
    free(image);
    image = NULL;
    /* a GPU newer than NVRTC: PTX of its newest arch */
    s = cu_jit(S, 999, rd, "norm_f16", 2, &image, &size, &ptx, key2);
    CHECK(s == NNK_OK && ptx && size > 0 && strstr(image, ".version") && strstr(image, "norm_f16__rd_block"),
          "PTX for sm_999: %s", s ? nnk_last_error() : "");
    free(image);
    image = NULL;
    /* one older than NVRTC supports */
    s = cu_jit(S, 30, rd, "norm_f16", 2, &image, &size, &ptx, key2);
    CHECK(s == NNK_EUNSUPPORTED && strstr(nnk_last_error(), "cannot compile for sm_30"), "sm_30: %s",
          nnk_last_error());
    /* the built-in fp16/bf16 headers (a machine with a libnvrtc but no toolkit headers) */
    char saved[sizeof S->include_dir];
    memcpy(saved, S->include_dir, sizeof saved);
    S->include_dir[0] = 0;
    int archs[3] = {75, 80, S->archs[S->narchs - 1]};
    for (int i = 0; i < 3; i++) {
        s = cu_jit(S, archs[i], ew, "axpb_bf16", 2, &image, &size, &ptx, key2);
        CHECK(s == NNK_OK, "bf16 with the built-in headers, sm_%d: %s", archs[i], s ? nnk_last_error() : "");
        free(image);
        image = NULL;
        s = cu_jit(S, archs[i], rd, "norm_f16", 2, &image, &size, &ptx, key2);
        CHECK(s == NNK_OK, "f16 with the built-in headers, sm_%d: %s", archs[i], s ? nnk_last_error() : "");
        free(image);
        image = NULL;
    }
    memcpy(S->include_dir, saved, sizeof saved);
    /* compile errors: the log, the line, the source kept */
    static const char broken[] = "extern \"C\" __global__ void broken__ew_c(int a)\n{\n    int x = a +;\n}\n";
    s = cu_jit(S, 75, broken, "broken", 2, &image, &size, &ptx, key2);
    CHECK(s == NNK_ECOMPILE && strstr(nnk_last_error(), "(the generated source is not kept; NNK_CUDA_KEEP_SOURCE=1"),
          "a failed compile keeps no file unless asked: %s", nnk_last_error());
    setenv("NNK_CUDA_KEEP_SOURCE", "1", 1);
    s = cu_jit(S, 75, broken, "broken", 2, &image, &size, &ptx, key2);
    unsetenv("NNK_CUDA_KEEP_SOURCE");
    const char *msg = nnk_last_error();
    CHECK(s == NNK_ECOMPILE && strstr(msg, "line 3 of the generated CUDA: int x = a +;") && strstr(msg, "broken.cu(3)"),
          "a compile error names the line: %s", msg);
    const char *kept = strstr(msg, "(the generated source is ");
    if (kept) {
        char p2[4400];
        snprintf(p2, sizeof p2, "%s", kept + 25);
        char *end = strchr(p2, ')');
        if (end)
            *end = 0;
        CHECK(access(p2, R_OK) == 0, "the source is kept at %s", p2);
        unlink(p2);
    } else {
        CHECK(0, "the message says where the source is: %s", msg);
    }
    /* FMA contraction: off by default (the C back end's -ffp-contract=off:
     * a = b = 1+2^-12, c = 1+2^-11 gives 0 there and 2^-24 fused), on with
     * NNK_CUDA_FMAD=1 (cu_init reads it; the option is in the cache key) */
    static const char fsrc[] = "elementwise fms(a: f32[], b: f32[], c: f32[]) -> (y: f32[]) { y = a * b - c; }\n";
    char *fms = cuda_of(fsrc, "fms", T_NONE);
    CHECK(fms != NULL, "CUDA of fms");
    for (int on = 0; fms && on < 2; on++) {
        S->fmad = on;
        char *p = NULL;
        size_t n = 0;
        s = cu_jit_ptx(S, 80, fms, "fms", 2, &p, &n);
        CHECK(s == NNK_OK && p && strstr(p, "fms__ew_c"), "PTX of fms: %s", s ? nnk_last_error() : "");
        /* PTX mul.f32 without a rounding mode may be fused by ptxas;
         * mul.rn.f32 and sub.rn.f32 never are */
        bool fused = p && (strstr(p, "fma.rn.f32") || strstr(p, "mul.f32")),
             separate = p && strstr(p, "mul.rn.f32") && strstr(p, "sub.rn.f32");
        CHECK(on ? fused : !fused && separate, "NNK_CUDA_FMAD=%d: a * b - c is %s", on,
              fused ? "contractible (fma.rn.f32 or mul.f32)" : "a mul.rn.f32 and a sub.rn.f32");
        free(p);
    }
    S->fmad = false;
    free(fms);
    /* the front-end-only mode of the compile checks */
    s = cu_jit(S, 86, rd, "norm_f16", -1, &image, &size, &ptx, key2);
    CHECK(s == NNK_OK && !image && size == 0, "front end only: %s", s ? nnk_last_error() : "");
    free(ew);
    free(rd);
    cu_fini(S);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("note: cannot remove %s\n", dir);
    return true;
}

/* ---- the status line, per thread ---------------------------------------------------- */

/* cu_status and the extensions' status hooks write into a buffer of the
 * calling thread: a line one thread holds stays as it was while another
 * thread asks (the buffer was one per extension). */
static struct {
    pthread_barrier_t asked, changed, checked;
    bool kept, has, apart[3];
    cu_state *S;
    nnk_extension *x[2];
    const char *line[2], *ext_line[2][2];
    char copy[2048];
} stl;

static void *status_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (i == 1) {
        pthread_barrier_wait(&stl.asked);
        stl.S->force_ptx = true; /* the line says so now */
    }
    stl.line[i] = cu_status(stl.S);
    for (int e = 0; e < 2; e++)
        stl.ext_line[i][e] = stl.x[e] ? nnk_extension_status(stl.x[e]) : NULL;
    if (i == 0) {
        snprintf(stl.copy, sizeof stl.copy, "%s", stl.line[0]);
        pthread_barrier_wait(&stl.asked);
    }
    pthread_barrier_wait(&stl.changed);
    if (i == 0) { /* both threads live: their buffers are */
        stl.kept = strcmp(stl.line[0], stl.copy) == 0;
        stl.has = strstr(stl.line[1], "NNK_CUDA_PTX") != NULL;
        stl.apart[0] = stl.line[0] != stl.line[1];
        for (int e = 0; e < 2; e++)
            stl.apart[1 + e] = stl.ext_line[0][e] && stl.ext_line[1][e] && stl.ext_line[0][e] != stl.ext_line[1][e];
    }
    pthread_barrier_wait(&stl.checked);
    return NULL;
}

static void test_status_threads(void)
{
    cu_state *S = NULL;
    nnk_status s = cu_init(&rt_host_api, "cuda", &S);
    CHECK(s == NNK_OK && S, "cu_init: %s", s ? nnk_last_error() : "");
    if (!S)
        return;
    stl.S = S;
    const char *exts[2] = {"cuda", "cudnn"};
    for (int e = 0; e < 2; e++)
        if (nnk_import_extension(exts[e], &stl.x[e]) != NNK_OK)
            stl.x[e] = NULL;
    pthread_barrier_init(&stl.asked, NULL, 2);
    pthread_barrier_init(&stl.changed, NULL, 2);
    pthread_barrier_init(&stl.checked, NULL, 2);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, status_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&stl.asked);
    pthread_barrier_destroy(&stl.changed);
    pthread_barrier_destroy(&stl.checked);
    CHECK(stl.apart[0], "cu_status: a buffer per thread");
    CHECK(stl.kept && !strstr(stl.copy, "NNK_CUDA_PTX") && stl.has,
          "the first thread's line stays as it was while the second's says NNK_CUDA_PTX=1 (%s)", stl.copy);
    for (int e = 0; e < 2; e++)
        CHECK(stl.x[e] && stl.apart[1 + e], "%s's status: a buffer per thread", exts[e]);
    cu_fini(S);
}

/* ---- NVRTC compiles side by side: the settings gate ------------------------------ */

/* NVRTC 13.0: one compile with --Ofast-compile=max (the old opt_level 0)
 * changed every later compile of the process, in any thread: the PTX of
 * the layer norm's rd_row at full optimisation then held local memory
 * (83 findings here), which CI once saw as compiles "side by side".  The
 * extension passes -Xptxas=-O0 at opt_level 0 instead, and its settings
 * gate keeps compiles with different optimisation settings from running
 * at once (same settings: together).  The check wraps nvrtcCompileProgram
 * to see every compile's settings while it runs (held GATE_HOLD_MS first,
 * so that compiles that may overlap do), and requires every
 * full-optimisation PTX, after opt_level 0 and -1 compiles and beside
 * them, to lint clean (ptx_lint: no local memory in rd_row) and to be the
 * bytes of the first one, compiled before any other. */
enum { GATE_HOLD_MS = 40, GATE_THREADS = 6, GATE_ROUNDS = 1 };

static struct {
    pthread_mutex_t lock;
    pthread_barrier_t start;
    nvrtcResult (*real)(nvrtcProgram, int, const char *const *);
    char active[GATE_THREADS][512];
    int differing, same, calls;
    cu_state *S;
    const char *src;
    char *ref;                   /* the first full-optimisation PTX */
    int lint_findings, lint_kernels, failed, changed;
    char why[512];
} gate = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* the options but the arch and the headers, as the gate compares them */
static void join_opts(int n, const char *const *opts, char *out, size_t cap)
{
    size_t l = 0;
    out[0] = 0;
    for (int i = 0; i < n && l < cap; i++)
        if (strncmp(opts[i], "--gpu-architecture=", 19) != 0 && strncmp(opts[i], "-I", 2) != 0)
            l += (size_t)snprintf(out + l, cap - l, "%s ", opts[i]);
}

static nvrtcResult gate_compile(nvrtcProgram prog, int n, const char *const *opts)
{
    char mine[512];
    join_opts(n, opts, mine, sizeof mine);
    int slot = -1;
    pthread_mutex_lock(&gate.lock);
    gate.calls++;
    for (int i = 0; i < GATE_THREADS; i++) {
        if (!gate.active[i][0]) {
            if (slot < 0)
                slot = i;
        } else if (strcmp(gate.active[i], mine) != 0) {
            gate.differing++;
        } else {
            gate.same++;
        }
    }
    if (slot >= 0)
        snprintf(gate.active[slot], sizeof gate.active[slot], "%s", mine);
    pthread_mutex_unlock(&gate.lock);
    usleep(GATE_HOLD_MS * 1000);
    nvrtcResult r = gate.real(prog, n, opts);
    pthread_mutex_lock(&gate.lock);
    if (slot >= 0)
        gate.active[slot][0] = 0;
    pthread_mutex_unlock(&gate.lock);
    return r;
}

/* Thread i: opt_level 2 to PTX (linted) when i % 3 == 0, else a cubin at
 * opt_level 0 or the front end only (-1). */
static void *gate_thread(void *arg)
{
    int i = (int)(intptr_t)arg, level = i % 3 == 0 ? 2 : i % 3 == 1 ? 0 : -1;
    pthread_barrier_wait(&gate.start);
    for (int round = 0; round < GATE_ROUNDS; round++) {
        char *image = NULL, key[65], *text = NULL;
        size_t size = 0, tlen = 0;
        bool ptx = false;
        nnk_status s = level == 2 ? cu_jit_ptx(gate.S, 90, gate.src, "gate", 2, &image, &size)
                                  : cu_jit(gate.S, 90, gate.src, "gate", level, &image, &size, &ptx, key);
        int findings = 0, kernels = 0;
        if (s == NNK_OK && level == 2) {
            FILE *m = open_memstream(&text, &tlen);
            findings = m && image && size && image[size - 1] == 0 ? ptx_lint(image, "gate", m, &kernels) : 1;
            if (m)
                fclose(m);
        }
        pthread_mutex_lock(&gate.lock);
        if (s != NNK_OK && !gate.failed++)
            snprintf(gate.why, sizeof gate.why, "opt_level %d: %s", level, nnk_last_error());
        if (findings && !gate.lint_findings)
            snprintf(gate.why, sizeof gate.why, "%.500s", text ? text : "?");
        gate.changed += s == NNK_OK && level == 2 && (!image || strcmp(image, gate.ref) != 0);
        gate.lint_findings += findings;
        gate.lint_kernels += kernels;
        pthread_mutex_unlock(&gate.lock);
        free(text);
        free(image);
    }
    return NULL;
}

static void test_jit_gate(void)
{
    cu_state *S = NULL;
    setenv("NNK_CACHE", "0", 1); /* every compile is real */
    if (cu_init(&rt_host_api, "cuda", &S) != NNK_OK || cu_nvrtc_ready(S) != NNK_OK) {
        cu_fini(S);
        unsetenv("NNK_CACHE");
        return;
    }
    /* reductions.nnk's layer norm, whose rd_row PTX held local memory */
    static const char src[] =
        "reduction layernorm<T: float>(x: T[], gamma: T[], beta: T[], eps: f32 = 1e-5) -> (y: T[], mu: T, sigma: T) {\n"
        "    let m = mean(x);\n    let v = mean((x - m) * (x - m));\n    let r = rsqrt(v + eps);\n"
        "    y = (x - m) * r * gamma + beta;\n    mu = m;\n    sigma = sqrt(v + eps);\n}\n";
    char *code = cuda_of(src, "layernorm", T_F64);
    CHECK(code != NULL, "CUDA of layernorm<f64>");
    gate.S = S;
    gate.src = code;
    size_t n = 0;
    if (code && cu_jit_ptx(S, 90, code, "gate", 2, &gate.ref, &n) != NNK_OK)
        CHECK(0, "full-optimisation PTX of layernorm<f64>: %s", nnk_last_error());
    if (!gate.ref) {
        free(code);
        cu_fini(S);
        unsetenv("NNK_CACHE");
        return;
    }
    /* one after the other: opt_level 0, then full optimisation */
    char *image = NULL, key[65];
    bool ptx = false;
    nnk_status s = cu_jit(S, 90, code, "gate", 0, &image, &n, &ptx, key);
    CHECK(s == NNK_OK && image && !ptx, "opt_level 0: %s", s ? nnk_last_error() : "no cubin");
    free(image);
    image = NULL;
    s = cu_jit_ptx(S, 90, code, "gate", 2, &image, &n);
    CHECK(s == NNK_OK && image && strcmp(image, gate.ref) == 0,
          "full optimisation after opt_level 0 gives the PTX of full optimisation alone");
    free(image);
    gate.real = S->nv.nvrtcCompileProgram;
    S->nv.nvrtcCompileProgram = gate_compile;
    /* two full-optimisation compiles: together */
    pthread_t th[GATE_THREADS];
    for (int pass = 0; code && pass < 2; pass++) {
        int nth = pass == 0 ? 2 : GATE_THREADS;
        pthread_barrier_init(&gate.start, NULL, (unsigned)nth);
        gate.differing = gate.same = gate.calls = gate.lint_findings = gate.lint_kernels = gate.failed = 0;
        gate.changed = 0;
        for (int i = 0; i < nth; i++)
            pthread_create(&th[i], NULL, gate_thread, (void *)(intptr_t)(pass == 0 ? 0 : i));
        for (int i = 0; i < nth; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&gate.start);
        CHECK(!gate.failed, "%d compiles failed: %s", gate.failed, gate.why);
        CHECK(gate.calls == nth * GATE_ROUNDS, "%d compiles (%d)", gate.calls, nth * GATE_ROUNDS);
        CHECK(gate.differing == 0, "%d compiles started beside a compile with other options", gate.differing);
        CHECK(gate.changed == 0, "%d full-optimisation PTX differ from the first", gate.changed);
        if (pass == 0)
            CHECK(gate.same > 0, "two compiles with the same options ran together (%d)", gate.same);
        CHECK(gate.lint_kernels > 0 && gate.lint_findings == 0, "full-optimisation PTX: %d findings in %d kernels%s%s",
              gate.lint_findings, gate.lint_kernels, gate.lint_findings ? ":\n" : "", gate.lint_findings ? gate.why : "");
    }
    S->nv.nvrtcCompileProgram = gate.real;
    free(gate.ref);
    gate.ref = NULL;
    free(code);
    cu_fini(S);
    unsetenv("NNK_CACHE");
}

/* ---- dispatch.c: the planner's choices, without a device ------------------------- */

typedef struct {
    int n;
    char name[8][64];
    unsigned gx[8], block[8];
    size_t shmem[8];
    nnk_cuda_args args[8];
    int has_warp;
} fake_gpu;

static int fake_launch_shm(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, size_t shmem,
                           const nnk_cuda_args *a);

static int fake_launch(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, const nnk_cuda_args *a)
{
    fake_gpu *g = user;
    (void)gy;
    if (g->n < 8) {
        snprintf(g->name[g->n], sizeof g->name[0], "%s", name);
        g->gx[g->n] = gx;
        g->block[g->n] = block;
        g->shmem[g->n] = 0;
        g->args[g->n] = *a;
    }
    g->n++;
    return 0;
}

static int fake_launch_shm(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, size_t shmem,
                           const nnk_cuda_args *a)
{
    fake_gpu *g = user;
    int rc = fake_launch(user, name, gx, gy, block, a);
    if (g->n <= 8)
        g->shmem[g->n - 1] = shmem;
    return rc;
}
static void *fake_alloc(void *user, size_t bytes)
{
    (void)user;
    return malloc(bytes ? bytes : 1);
}
static void fake_release(void *user, void *p)
{
    (void)user;
    free(p);
}
static int fake_has(void *user, const char *suffix)
{
    return strcmp(suffix, "rd_warp") != 0 || ((fake_gpu *)user)->has_warp;
}

static int fake_has_no_row(void *user, const char *suffix)
{
    return strcmp(suffix, "rd_row") != 0 && fake_has(user, suffix);
}

/* A plan of one operand (x) and an output over shape[], row-major unless
 * strides are given (for x; the output is contiguous). */
static void fake_plan(nnk_plan *p, int ndim, const int64_t *shape, const int64_t *xstrides, int nred)
{
    memset(p, 0, sizeof *p);
    p->ndim = ndim;
    p->nred = nred;
    p->nops = 2;
    static char dummy[16];
    p->data[0] = p->data[1] = dummy;
    int64_t st = 1, kept = 1, red = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        p->shape[d] = shape[d];
        p->strides[0][d] = xstrides ? xstrides[d] : st;
        p->strides[1][d] = d < ndim - nred ? st : 0;
        p->strides[2][d] = st; /* idx */
        st *= shape[d];
        if (d < ndim - nred)
            kept *= shape[d];
        else
            red *= shape[d];
    }
    p->nkept = nred ? kept : kept * red;
    p->nreduced = nred ? red : 1;
}

static int run_fake(fake_gpu *g, int reduction, const nnk_plan *p, int sms, int force)
{
    nnk_cuda_sizes sz = {.nphases = 1, .finals_size = 4, .state_size = {4}};
    nnk_cuda_launcher L = {.user = g, .launch = fake_launch, .alloc = fake_alloc, .release = fake_release,
                           .has = fake_has, .num_sms = sms, .force = force};
    char err[256];
    g->n = 0;
    return nnk_cuda_dispatch("k", reduction, &sz, p, &L, err, sizeof err);
}

/* The row kept on chip (rd_row, NNK_CUDA_WROW for a warp per row): chosen
 * where rd_warp or rd_block would run and the module's row_slots cover the
 * slice (a row of one dimension); the same shape and SM count, the same
 * choice.  `has_row` 0 is code without rd_row (an older nnkc). */
static int run_rows(fake_gpu *g, const nnk_plan *p, int force, int slots, int has_row)
{
    nnk_cuda_sizes sz = {.nphases = 2, .finals_size = 8, .state_size = {4, 4}, .row_slots = slots};
    nnk_cuda_launcher L = {.user = g, .launch = fake_launch, .alloc = fake_alloc, .release = fake_release,
                           .has = has_row ? fake_has : fake_has_no_row, .num_sms = 132, .force = force};
    char err[256];
    g->n = 0;
    return nnk_cuda_dispatch("k", 1, &sz, p, &L, err, sizeof err);
}

/* The row in shared memory (rd_srow): `bytes` an element, `inputs` arrays,
 * max_shared bytes of dynamic shared memory (0: a launcher without it). */
static int run_srow(fake_gpu *g, const nnk_plan *p, int force, int bytes, int inputs, size_t max_shared)
{
    nnk_cuda_sizes sz = {.nphases = 2, .finals_size = 8, .state_size = {4, 4}, .row_slots = 16, .row_bytes = bytes,
                         .row_inputs = inputs};
    nnk_cuda_launcher L = {.user = g, .launch = fake_launch, .launch_shm = max_shared ? fake_launch_shm : NULL,
                           .max_shared = max_shared, .alloc = fake_alloc, .release = fake_release, .has = fake_has,
                           .num_sms = 132, .force = force};
    char err[256];
    g->n = 0;
    return nnk_cuda_dispatch("k", 1, &sz, p, &L, err, sizeof err);
}

/* Rows past rd_row's registers: in shared memory while they fit (n *
 * bytes + 16 an input), rd_block's grid; longer, or without the launcher's
 * shared memory: rd_block, read per phase. */
static void test_dispatch_srow(void)
{
    fake_gpu g = {.has_warp = 1};
    nnk_plan p;
    static const struct {
        int64_t kept, n;
        int bytes, inputs;
        size_t max;
        const char *kernel;
    } c[] = {
        {10000, 4096, 4, 1, 49152, "k__rd_row"},    {10000, 4097, 4, 1, 49152, "k__rd_srow"},
        {10000, 12284, 4, 1, 49152, "k__rd_srow"},  /* 4 * 12284 + 16 = 48 KB */
        {10000, 12285, 4, 1, 49152, "k__rd_block"}, {10000, 6140, 8, 2, 49152, "k__rd_srow"}, /* two inputs */
        {10000, 6141, 8, 2, 49152, "k__rd_block"},  {10000, 58108, 4, 1, 232448, "k__rd_srow"}, /* opt-in */
        {10000, 58109, 4, 1, 232448, "k__rd_block"}, {10000, 4097, 4, 1, 0, "k__rd_block"}, /* no shared launch */
        {10000, 4097, 0, 0, 49152, "k__rd_block"},  /* code without rd_srow */
        {4, 100000, 4, 1, 1 << 20, "k__rd_part"},   /* few long rows: the split */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t shape[2] = {c[i].kept, c[i].n};
        fake_plan(&p, 2, shape, NULL, 1);
        int rc = run_srow(&g, &p, 0, c[i].bytes, c[i].inputs, c[i].max);
        size_t want = strcmp(c[i].kernel, "k__rd_srow") == 0 ? (size_t)c[i].n * (size_t)c[i].bytes + 16u * (size_t)c[i].inputs : 0;
        CHECK(rc == 0 && strcmp(g.name[0], c[i].kernel) == 0 && g.shmem[0] == want &&
                  (want == 0 || g.block[0] == 256),
              "%lld rows of %lld, %d bytes an element, %zu bytes of shared memory: %s with %zu bytes (want %s with %zu)",
              (long long)c[i].kept, (long long)c[i].n, c[i].bytes, c[i].max, g.name[0], g.shmem[0], c[i].kernel, want);
    }
    /* forced (NNK_CUDA_FORCE=7): refused where the row does not fit */
    int64_t shape[2] = {10, 12285};
    fake_plan(&p, 2, shape, NULL, 1);
    CHECK(run_srow(&g, &p, 7, 4, 1, 49152) != 0, "rd_srow forced past its shared memory");
    shape[1] = 100;
    fake_plan(&p, 2, shape, NULL, 1);
    CHECK(run_srow(&g, &p, 7, 4, 1, 49152) == 0 && strcmp(g.name[0], "k__rd_srow") == 0 && g.shmem[0] == 416,
          "rd_srow forced on a short row: %s", g.name[0]);
    CHECK(run_srow(&g, &p, 7, 0, 0, 49152) != 0, "rd_srow forced into code without it");
    int64_t three[3] = {1000, 80, 80};
    fake_plan(&p, 3, three, NULL, 2);
    CHECK(run_srow(&g, &p, 7, 4, 1, 49152) != 0 && run_srow(&g, &p, 0, 4, 1, 49152) == 0 &&
              strcmp(g.name[0], "k__rd_srow") != 0,
          "two reduced dims: not rd_srow (%s)", g.name[0]);
}

static void test_dispatch_rows(void)
{
    fake_gpu g = {.has_warp = 1};
    nnk_plan p;
    static const struct {
        int64_t kept, n;
        int slots, has_row;
        const char *kernel;
        int wrow;
    } c[] = {
        {1000000, 64, 16, 1, "k__rd_row", 1},  {1000000, 512, 16, 1, "k__rd_row", 1},
        {1000000, 513, 16, 1, "k__rd_warp", 0}, /* past a warp's 16 slots: rd_warp's bits, read per phase */
        {1000000, 513, 16, 0, "k__rd_warp", 0}, {100000, 512, 8, 1, "k__rd_warp", 0},
        {100000, 256, 8, 1, "k__rd_row", 1},   {10000, 4096, 16, 1, "k__rd_row", 0},
        {10000, 4097, 16, 1, "k__rd_block", 0}, {10000, 2048, 8, 1, "k__rd_row", 0},
        {10000, 2049, 8, 1, "k__rd_block", 0},  {4, 4096, 16, 1, "k__rd_row", 0}, /* few rows: still a block each */
        {1000000, 64, 0, 1, "k__rd_warp", 0},  {1000000, 64, 16, 0, "k__rd_warp", 0},
        {4, 100000, 16, 1, "k__rd_part", 0}, /* the split reads per phase */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t shape[2] = {c[i].kept, c[i].n};
        fake_plan(&p, 2, shape, NULL, 1);
        for (int rep = 0; rep < 2; rep++) {
            CHECK(run_rows(&g, &p, 0, c[i].slots, c[i].has_row) == 0 && strcmp(g.name[0], c[i].kernel) == 0 &&
                      !!(g.args[0].p.flags & NNK_CUDA_WROW) == c[i].wrow,
                  "%lld rows of %lld, %d slots%s: %s (want %s), a warp a row %d", (long long)c[i].kept,
                  (long long)c[i].n, c[i].slots, c[i].has_row ? "" : ", no rd_row", g.name[0], c[i].kernel,
                  !!(g.args[0].p.flags & NNK_CUDA_WROW));
        }
    }
    /* rd_warp's grid for the warp mode, rd_block's for the block mode */
    int64_t shape[2] = {1000000, 64};
    fake_plan(&p, 2, shape, NULL, 1);
    CHECK(run_rows(&g, &p, 0, 16, 1) == 0 && g.gx[0] == 132 * 32, "warp rows: %u blocks", g.gx[0]);
    shape[0] = 800;
    fake_plan(&p, 2, shape, NULL, 1);
    CHECK(run_rows(&g, &p, 0, 16, 1) == 0 && g.gx[0] == 100, "800 warp rows: %u blocks", g.gx[0]);
    /* two reduced dimensions: the per-phase kernels; forced, refused */
    int64_t three[3] = {1000, 8, 8};
    fake_plan(&p, 3, three, NULL, 2);
    CHECK(run_rows(&g, &p, 0, 16, 1) == 0 && strcmp(g.name[0], "k__rd_row") != 0, "two reduced dims: %s", g.name[0]);
    CHECK(run_rows(&g, &p, 5, 16, 1) != 0 && run_rows(&g, &p, 6, 16, 1) != 0, "rd_row forced over two dims");
    /* forced past its slots, or into code without row slots: refused */
    shape[1] = 513;
    fake_plan(&p, 2, shape, NULL, 1);
    CHECK(run_rows(&g, &p, 5, 16, 1) != 0 && run_rows(&g, &p, 6, 16, 1) == 0 && run_rows(&g, &p, 6, 0, 1) != 0,
          "forced row kernels");
    /* strided rows (x at a pitch, elements 3 apart) take it too */
    int64_t st[2] = {3000, 3};
    shape[0] = 1000;
    shape[1] = 1000;
    fake_plan(&p, 2, shape, st, 1);
    CHECK(run_rows(&g, &p, 0, 16, 1) == 0 && strcmp(g.name[0], "k__rd_row") == 0 && !(g.args[0].p.flags & NNK_CUDA_WROW),
          "strided rows: %s", g.name[0]);
}

static void test_dispatch(void)
{
    fake_gpu g = {.has_warp = 1};
    nnk_plan p;
    /* short rows take a warp each, 8 per block; 1025 a block; a module
     * without rd_warp (an older nnkc) a block */
    int64_t rows[2] = {1000000, 64};
    fake_plan(&p, 2, rows, NULL, 1);
    CHECK(run_fake(&g, 1, &p, 132, 0) == 0 && g.n == 1 && strcmp(g.name[0], "k__rd_warp") == 0 &&
              g.gx[0] == 132 * 32, "10^6 rows of 64: %s x %u", g.name[0], g.gx[0]);
    rows[0] = 800;
    fake_plan(&p, 2, rows, NULL, 1);
    CHECK(run_fake(&g, 1, &p, 132, 0) == 0 && g.n == 1 && g.gx[0] == 100, "800 rows: %u blocks", g.gx[0]);
    rows[1] = 1025;
    fake_plan(&p, 2, rows, NULL, 1);
    CHECK(run_fake(&g, 1, &p, 132, 0) == 0 && strcmp(g.name[0], "k__rd_block") == 0, "rows of 1025: %s", g.name[0]);
    rows[1] = 64;
    fake_plan(&p, 2, rows, NULL, 1);
    g.has_warp = 0;
    CHECK(run_fake(&g, 1, &p, 132, 0) == 0 && strcmp(g.name[0], "k__rd_block") == 0, "no rd_warp: %s", g.name[0]);
    g.has_warp = 1;
    /* the split: one wave (a block per SM) while each thread has 64
     * elements, more parts only at 4096 elements per thread, at most 8 per
     * SM; rd_fin a block per position */
    static const struct { int64_t n; int32_t parts; } split[] = {
        {1 << 20, 64}, {1 << 22, 132}, {(int64_t)1 << 28, 256}, {(int64_t)1 << 30, 1024}, {(int64_t)1 << 34, 1056}};
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++) {
        int64_t one[1] = {split[i].n};
        fake_plan(&p, 1, one, NULL, 1);
        CHECK(run_fake(&g, 1, &p, 132, 0) == 0 && g.n == 3 && strcmp(g.name[0], "k__rd_part") == 0 &&
                  g.args[0].nparts == split[i].parts && strcmp(g.name[1], "k__rd_fin") == 0 && g.gx[1] == 1,
              "split of %lld: %d parts (want %d), %s x %u", (long long)split[i].n, g.args[0].nparts, split[i].parts,
              g.name[1], g.gx[1]);
    }
    /* 32-bit strided indexing up to offsets of 2^31 - 1, for positive and
     * negative strides, and the magic numbers divide exactly */
    static const struct { int64_t shape[3], stride[3]; int idx32; } ew[] = {
        {{3, 5, 7}, {1, 3, 15}, 1},
        {{2, 1, 3}, {2147483647 - 2, 7, 1}, 1},
        {{2, 1, 3}, {2147483647 - 1, 7, 1}, 0},
        {{2, 1, 3}, {-2147483647, 7, 1}, 1},
        {{2, 1, 3}, {-2147483647 - 1, 7, 1}, 0},
        {{46340, 46340, 1}, {46340, 1, 0}, 1},
        {{46341, 46341, 1}, {46341, 1, 0}, 0}, /* over 2^31 elements */
        {{65536, 32768, 1}, {1, 65536, 0}, 0}, /* exactly 2^31 elements */
        {{3, 2147483647 / 3, 1}, {0, 1, 0}, 1},
    };
    for (size_t i = 0; i < sizeof ew / sizeof ew[0]; i++) {
        fake_plan(&p, 3, ew[i].shape, ew[i].stride, 0);
        CHECK(run_fake(&g, 0, &p, 132, 0) == 0 && g.n == 1 && strcmp(g.name[0], "k__ew_s") == 0 &&
                  !!(g.args[0].p.flags & NNK_CUDA_IDX32) == ew[i].idx32,
              "ew case %zu: %s, 32-bit %d (want %d)", i, g.name[0], !!(g.args[0].p.flags & NNK_CUDA_IDX32), ew[i].idx32);
    }
    /* the prelude's division (nnk_offsets32) with the planner's numbers,
     * at the divisors and dividends where such schemes break */
    static const uint32_t divs[] = {1, 2, 3, 5, 7, 10, 641, 65535, 65536, 65537, 46341, 1u << 30, (1u << 30) + 1,
                                    2147483646u, 2147483647u};
    int bad = 0;
    for (size_t i = 0; i < sizeof divs / sizeof divs[0]; i++) {
        int64_t shape[1] = {divs[i]}, st[1] = {1};
        fake_plan(&p, 1, shape, st, 0);
        p.strides[0][0] = 2; /* not contiguous: ew_s */
        if (divs[i] > 1073741823u)
            p.strides[0][0] = 1, p.strides[1][0] = -1;
        CHECK(run_fake(&g, 0, &p, 132, 0) == 0 && (g.args[0].p.flags & NNK_CUDA_IDX32), "divisor %u: 32-bit", divs[i]);
        uint32_t m = g.args[0].magic[0], sh = g.args[0].shift[0];
        uint32_t probe[] = {0, 1, divs[i] - 1, divs[i], divs[i] + 1, 2 * divs[i] - 1, 2147483647u, 2147483646u,
                            2147483647u - divs[i], 1234567891u, 1u << 30};
        for (size_t j = 0; j < sizeof probe / sizeof probe[0]; j++) {
            uint32_t n = probe[j];
            if (n > 2147483647u)
                continue;
            uint32_t hi = (uint32_t)(((uint64_t)n * m) >> 32);
            uint32_t q = (hi + n) >> sh;
            bad += q != n / divs[i];
        }
        for (uint32_t n = 0; n < 100000; n += 7)
            bad += ((((uint32_t)(((uint64_t)n * m) >> 32)) + n) >> sh) != n / divs[i];
    }
    CHECK(bad == 0, "%d wrong quotients of the fast division", bad);
}

/* ---- cu_rect_plan: strided device copies as cuMemcpy2DAsync rectangles --------------- */

/* What count cuMemcpy2DAsync calls of the plan do, on host memory. */
static void rect_copy(const cu_rect *r, unsigned char *dst, const unsigned char *src)
{
    for (size_t c = 0; c < r->count; c++)
        for (size_t y = 0; y < r->height; y++)
            memcpy(dst + c * (size_t)r->dstep + y * r->dpitch, src + c * (size_t)r->sstep + y * r->spitch, r->width);
}

static void strided_copy(int nd, const int64_t *shape, unsigned char *dst, const int64_t *ds, const unsigned char *src,
                         const int64_t *ss, size_t es)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t f = i, od = 0, os = 0;
        for (int d = nd - 1; d >= 0; d--) {
            od += f % shape[d] * ds[d];
            os += f % shape[d] * ss[d];
            f /= shape[d];
        }
        memcpy(dst + od * (int64_t)es, src + os * (int64_t)es, es);
    }
}

static void test_rect_plan(void)
{
    /* layouts the 2-D copies must take, and some they must not */
    static const struct { int nd; int64_t shape[4], ds[4], ss[4]; int ok; } cases[] = {
        {1, {100}, {1}, {1}, 1},                              /* contiguous */
        {2, {7, 30}, {30, 1}, {64, 1}, 1},                    /* rows of a wider matrix */
        {2, {7, 30}, {32, 1}, {30, 1}, 1},
        {1, {50}, {1}, {3}, 1},                               /* single elements at a pitch */
        {2, {40, 1}, {1, 1}, {5, 1}, 1},                      /* a column */
        {3, {4, 5, 6}, {64, 8, 1}, {30, 6, 1}, 1},            /* planes of rows */
        {3, {4, 5, 6}, {30, 6, 1}, {0, 6, 1}, 0},             /* a broadcast source plane */
        {2, {5, 6}, {1, 5}, {6, 1}, 0},                       /* a transpose */
        {2, {5, 6}, {6, 1}, {-6, 1}, 0},                      /* reversed rows */
        {2, {5, 6}, {3, 1}, {6, 1}, 0},                       /* overlapping destination rows */
        {4, {2, 3, 4, 5}, {200, 50, 10, 1}, {60, 20, 5, 1}, 0}, /* four levels */
        {3, {65, 2, 3}, {6, 3, 1}, {6, 3, 1}, 1},             /* contiguous: the rows merge */
        {3, {65, 2, 3}, {9, 4, 1}, {6, 3, 1}, 0},             /* 65 planes: more than NNK_CU_RECTS */
        {4, {3, 4, 5, 2}, {80, 10, 2, 1}, {40, 10, 2, 1}, 1}, /* planes of rows that merge in the destination */
    };
    unsigned char src[8192], dst[8192], want[8192];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t es = 1; es <= 8; es *= 2) {
            cu_rect r;
            int rc = cu_rect_plan(cases[i].nd, cases[i].shape, cases[i].ds, cases[i].ss, es, &r);
            CHECK((rc == 0) == cases[i].ok, "copy layout %zu (esize %zu): %s", i, es, rc ? "not taken" : "taken");
            if (rc)
                continue;
            memset(dst, 0xee, sizeof dst);
            memset(want, 0xee, sizeof want);
            const unsigned char *s0 = src + 64 * es;
            rect_copy(&r, dst + 64 * es, s0);
            strided_copy(cases[i].nd, cases[i].shape, want + 64 * es, cases[i].ds, s0, cases[i].ss, es);
            CHECK(memcmp(dst, want, sizeof dst) == 0, "copy layout %zu (esize %zu): the 2-D copies differ", i, es);
        }
    }
    /* random layouts: whatever the plan takes copies exactly the elements */
    unsigned seed = 12345;
    int taken = 0;
    for (int t = 0; t < 3000; t++) {
        int64_t shape[3], ds[3], ss[3];
        int nd = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 3;
        size_t es = (size_t)1 << (((seed = seed * 1103515245u + 12345u) >> 16) % 4);
        for (int d = 0; d < nd; d++) {
            shape[d] = 1 + ((seed = seed * 1103515245u + 12345u) >> 16) % 6;
            ds[d] = (int64_t)(((seed = seed * 1103515245u + 12345u) >> 16) % 40) - 4;
            ss[d] = (int64_t)(((seed = seed * 1103515245u + 12345u) >> 16) % 40) - 4;
        }
        if (t % 3 == 0) /* often contiguous inner rows */
            ds[nd - 1] = ss[nd - 1] = 1;
        cu_rect r;
        if (cu_rect_plan(nd, shape, ds, ss, es, &r))
            continue;
        taken++;
        /* the destination holds no element twice (else the order would matter) */
        memset(dst, 0xee, sizeof dst);
        memset(want, 0xee, sizeof want);
        rect_copy(&r, dst + 2048, src + 2048);
        strided_copy(nd, shape, want + 2048, ds, src + 2048, ss, es);
        if (memcmp(dst, want, sizeof dst) != 0) {
            CHECK(0, "random copy layout %d (nd %d esize %zu) differs", t, nd, es);
            break;
        }
    }
    CHECK(taken > 300, "only %d random layouts taken", taken);
}

int main(void)
{
    const char *b = getenv("top_builddir");
    char path[4200];
    snprintf(path, sizeof path, "%s/.libs", b ? b : ".");
    setenv("NNK_EXTENSION_PATH", path, 1);
    unsetenv("NNK_CUDA_DRIVER");
    test_reduce_op();
    test_dispatch();
    test_dispatch_rows();
    test_dispatch_srow();
    test_row_source();
    test_rect_plan();
    test_extensions();
    test_status_threads();
    test_drivers();
    test_staging();
    bool nvrtc = test_jit();
    if (nvrtc)
        test_jit_gate();
    nnk_shutdown();
    printf("test_cuda: %d checks, %d failed%s\n", checks, failures, nvrtc ? "" : "; NVRTC not found: JIT not tested");
    if (failures)
        return 1;
    if (!nvrtc) {
        const char *h = getenv("CUDA_HOME");
        return h && *h ? 1 : 77; /* a configured toolkit must have NVRTC */
    }
    return 0;
}
