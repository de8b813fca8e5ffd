/* test_opencl.c - the opencl extension on a real OpenCL device (PoCL in CI).
 *
 * Modes (argv[1]; one per process, as an extension loads once per process):
 *   main     devices, contexts and their keys, memory (copies, views,
 *            zeros, statistics, the cache), the JIT of hand-written OpenCL C
 *            against opencl_abi.h (contiguous and strided launches, build
 *            errors with the log, f64 without cl_khr_fp64, the memory
 *            cache), concurrent launches from several threads;
 *   cached   the same kernel in a second process: from the disk cache,
 *            not rebuilt (run after main with the same NNK_CACHE_DIR and
 *            NNK_OPENCL_BINARY_CACHE=1);
 *   uncached the binary cache's default on a driver with a cache of its
 *            own (PoCL): programs are not stored, built again after
 *            clear_memory_cache;
 *   none     NNK_OPENCL_LIBRARY names no library: 0 devices and the reason;
 *   oom      NNK_OPENCL_MEM_LIMIT: the runtime flushes its cache and
 *            retries once, then NNK_ENOMEM;
 *   reductions  the reductions of main alone (run under NNK_OPENCL_FORCE);
 *   threads  the shared state of the extension and of the runtime's device
 *            side from several threads at once (tests/opencl/tsan.sh runs
 *            it under ThreadSanitizer): the program cache (one source
 *            built by every thread at once, one source per thread, the
 *            cache cleared meanwhile), launches of one program, the
 *            caching allocator, a module's instances at their first
 *            launch, the status line and the memory statistics.
 * Exit 77 (skip) without an OpenCL device unless NNK_OPENCL_REQUIRED=1. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* atomic: the threads of mode threads check too */
static _Atomic int failures, checks;

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

static nnk_extension *ext;

static char *triad_src;

static int finish(void)
{
    nnk_shutdown();
    free(triad_src);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}

/* ---- hand-written OpenCL C against opencl_abi.h ------------------------------------ */

/* out = x + alpha * y: NAME__ew_c and NAME__ew_s as the emitter writes
 * them (docs/opencl.md, "The kernel ABI"), after templates/opencl/plan.h
 * (read from top_srcdir into triad_src). */
static const char triad_head[] =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;\n"
    "typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;\n"
    "#define double long /* the union's size; no cl_khr_fp64 needed */\n";
static const char triad_body[] =
    "#define BODY(o0, o1, o2) g2[o2] = g0[o0] + p->scalars[0].f32 * g1[o1]\n"
    "#define PTRS __global const float *g0 = a0 + p->offset[0], *g1 = a1 + p->offset[1]; "
    "__global float *g2 = a2 + p->offset[2]\n"
    "__kernel void TRIAD__ew_c(__constant nnk_cl_plan *p, __global const float *a0, __global const float *a1,\n"
    "                          __global float *a2)\n"
    "{ PTRS; for (long i = get_global_id(0); i < p->nkept; i += get_global_size(0)) BODY(i, i, i); }\n"
    "__kernel void TRIAD__ew_s(__constant nnk_cl_plan *p, __global const float *a0, __global const float *a1,\n"
    "                          __global float *a2)\n"
    "{\n"
    "    PTRS;\n"
    "    for (long i = get_global_id(0); i < p->nkept; i += get_global_size(0)) {\n"
    "        long o[3] = {0, 0, 0}, r = i;\n"
    "        for (int d = p->ndim - 1; d >= 0; d--) {\n"
    "            long c = r % p->shape[d];\n"
    "            r /= p->shape[d];\n"
    "            for (int k = 0; k < 3; k++) o[k] += c * p->strides[k][d];\n"
    "        }\n"
    "        BODY(o[0], o[1], o[2]);\n"
    "    }\n"
    "}\n";

static char *make_triad_src(void)
{
    const char *top = getenv("top_srcdir");
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/opencl/plan.h", top && *top ? top : ".");
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char plan[16384];
    size_t n = fread(plan, 1, sizeof plan - 1, f);
    fclose(f);
    plan[n] = 0;
    char *src = malloc(sizeof triad_head + n + sizeof triad_body);
    if (src)
        sprintf(src, "%s%s%s", triad_head, plan, triad_body);
    return src;
}

static const nnk_param_desc triad_params[] = {
    {"x", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"y", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"alpha", NNK_F32, 0, {0}},
    {"out", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}},
};
static const nnk_kernel_desc triad_iface = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "TRIAD", .kernel = "TRIAD",
    .nparams = 3, .nouts = 1, .params = triad_params,
};

static nnk_status compile(const char *src, const nnk_kernel_desc *iface, nnk_ext_kernel *k)
{
    rt_ext *e = &ext->ext;
    nnk_kernel_source ks = {sizeof ks, NNK_TARGET_OPENCL, src, "TRIAD__desc", 2, iface, NNK_REDUCE_NONE};
    memset(k, 0, sizeof *k);
    return e->ops->kernel_compile(e->state, 0, &ks, k);
}

/* out[i*os] = x[i*xs] + alpha * y[i*ys] over n elements through the
 * extension's launch, checked against the host. */
static void run_triad(nnk_ext_kernel *k, nnk_context *ctx, int64_t n, int64_t xs, float alpha, const char *what)
{
    rt_ext *e = &ext->ext;
    float *hx = malloc((size_t)(n * xs) * sizeof *hx), *hy = malloc((size_t)n * sizeof *hy);
    float *ho = malloc((size_t)n * sizeof *ho);
    for (int64_t i = 0; i < n * xs; i++)
        hx[i] = (float)(i % 97) * 0.25f - 3.0f;
    for (int64_t i = 0; i < n; i++)
        hy[i] = (float)(i % 13) * 1.5f + 0.125f;
    int64_t sx = n * xs, sn = n;
    nnk_array *x = NULL, *y = NULL, *o = NULL;
    CHECK(nnk_array_from_host(ctx, NNK_F32, 1, &sx, hx, &x) == NNK_OK, "%s: from_host: %s", what, nnk_last_error());
    CHECK(nnk_array_from_host(ctx, NNK_F32, 1, &sn, hy, &y) == NNK_OK, "%s: from_host", what);
    CHECK(nnk_array_new(ctx, NNK_F32, 1, &sn, &o) == NNK_OK, "%s: new", what);
    if (x && y && o) {
        nnk_plan p;
        memset(&p, 0, sizeof p);
        p.ndim = 1;
        p.nops = 3;
        p.abi = NNK_ABI_VERSION;
        p.shape[0] = n;
        p.strides[0][0] = xs;
        p.strides[1][0] = p.strides[2][0] = p.strides[3][0] = 1;
        p.data[0] = nnk_array_data(x);
        p.data[1] = nnk_array_data(y);
        p.data[2] = nnk_array_data(o);
        p.nkept = n;
        p.nreduced = 1;
        p.scalars[0].f32 = alpha;
        nnk_status s = e->ops->launch(e->state, 0, k, &p);
        CHECK(s == NNK_OK, "%s: launch: %s", what, nnk_last_error());
        CHECK(nnk_extension_device_synchronize(ext, 0) == NNK_OK, "%s: synchronize", what);
        CHECK(nnk_array_to_host(o, NNK_F32, ho, (size_t)n * sizeof *ho) == NNK_OK, "%s: to_host", what);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float want = hx[i * xs] + alpha * hy[i];
            bad += memcmp(&want, &ho[i], sizeof want) != 0;
        }
        CHECK(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)n);
    }
    nnk_array_free(x);
    nnk_array_free(y);
    nnk_array_free(o);
    free(hx);
    free(hy);
    free(ho);
}

typedef struct thread_arg {
    nnk_ext_kernel *k;
    nnk_context *ctx;
    int id;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    char what[64];
    snprintf(what, sizeof what, "thread %d", a->id);
    for (int r = 0; r < 3; r++)
        run_triad(a->k, a->ctx, 1000 + 37 * a->id, 1 + a->id % 2, 0.5f + (float)a->id, what);
    return NULL;
}

/* ---- modes ---------------------------------------------------------------------------- */

static int have_devices(void);

enum { NTHREADS = 4, NROUNDS = 3 };

typedef struct race_arg {
    nnk_context *ctx;
    nnk_module *m;
    int id;
} race_arg;

/* A module kernel on device arrays: z = a * x + y, exactly, at dtype f32
 * or f64 (a first launch instantiates, and builds, the instance). */
static void run_axpb(race_arg *a, const char *dtype_name, int f64)
{
    nnk_kernel *k = NULL;
    CHECK(nnk_module_kernel(a->m, "axpb", &k) == NNK_OK, "thread %d: kernel: %s", a->id, nnk_last_error());
    enum { N = 777 };
    double hx[N], hy[N], back[N];
    for (int i = 0; i < N; i++)
        hx[i] = (double)(i % 31) - 7.5, hy[i] = (double)a->id + 0.25 * (i % 5);
    int64_t n = N;
    nnk_dtype t = f64 ? NNK_F64 : NNK_F32;
    float fx[N], fy[N], fb[N];
    for (int i = 0; i < N; i++)
        fx[i] = (float)hx[i], fy[i] = (float)hy[i];
    nnk_array *x = NULL, *y = NULL, *z = NULL;
    nnk_args *args = NULL;
    CHECK(nnk_array_from_host(a->ctx, t, 1, &n, f64 ? (void *)hx : (void *)fx, &x) == NNK_OK, "thread %d: x", a->id);
    CHECK(nnk_array_from_host(a->ctx, t, 1, &n, f64 ? (void *)hy : (void *)fy, &y) == NNK_OK, "thread %d: y", a->id);
    CHECK(nnk_args_new(&args) == NNK_OK, "args");
    if (k && x && y && args) {
        nnk_args_array(args, x);
        nnk_args_array(args, y);
        nnk_args_named_f64(args, "a", 3.0);
        nnk_status s = nnk_launch(k, args);
        CHECK(s == NNK_OK, "thread %d: axpb<%s>: %s", a->id, dtype_name, nnk_last_error());
        if (!s && nnk_args_output(args, 0, &z) == NNK_OK) {
            int bad = 0;
            if (f64) {
                CHECK(nnk_array_to_host(z, t, back, sizeof back) == NNK_OK, "to host");
                for (int i = 0; i < N; i++)
                    bad += back[i] != 3.0 * hx[i] + hy[i];
            } else {
                CHECK(nnk_array_to_host(z, t, fb, sizeof fb) == NNK_OK, "to host");
                for (int i = 0; i < N; i++)
                    bad += fb[i] != 3.0f * fx[i] + fy[i];
            }
            CHECK(bad == 0, "thread %d: axpb<%s>: %d wrong", a->id, dtype_name, bad);
        }
    }
    nnk_args_free(args);
    nnk_array_free(x);
    nnk_array_free(y);
    nnk_array_free(z);
}

static void *race_main(void *p)
{
    race_arg *a = p;
    char what[64], *own = malloc(strlen(triad_src) + 64);
    if (own) /* a program of this thread's own: another key, built beside the others */
        sprintf(own, "%s/* thread %d */\n", triad_src, a->id);
    for (int r = 0; r < NROUNDS; r++) {
        nnk_ext_kernel k, ko;
        snprintf(what, sizeof what, "thread %d round %d", a->id, r);
        /* the same source from every thread: built once or a few times,
         * one program kept */
        nnk_status s = compile(triad_src, &triad_iface, &k);
        CHECK(s == NNK_OK, "%s: compile: %s", what, nnk_last_error());
        if (!s) {
            run_triad(&k, a->ctx, 500 + 97 * a->id + r, 1 + (a->id + r) % 3, 0.5f + (float)a->id, what);
            ext->ext.ops->kernel_free(ext->ext.state, &k);
        }
        if (own && r == 0) {
            s = compile(own, &triad_iface, &ko);
            CHECK(s == NNK_OK, "%s: compile its own: %s", what, nnk_last_error());
            if (!s) {
                run_triad(&ko, a->ctx, 64 + a->id, 2, -1.0f, what);
                ext->ext.ops->kernel_free(ext->ext.state, &ko);
            }
        }
        run_axpb(a, (a->id + r) % 2 ? "f64" : "f32", (a->id + r) % 2);
        CHECK(strstr(nnk_extension_status(ext), "programs: ") != NULL, "%s: status", what);
        nnk_memory_stats ms;
        CHECK(nnk_extension_memory_stats(ext, 0, &ms) == NNK_OK, "%s: memory stats", what);
        if (a->id == 0) /* the allocator's cache and the unused programs, while the others run */
            CHECK(nnk_extension_clear_memory_cache(ext, NULL) == NNK_OK, "%s: clear_memory_cache", what);
    }
    free(own);
    return NULL;
}

static int mode_threads(void)
{
    have_devices();
    nnk_context *ctx = NULL;
    nnk_module *m = NULL;
    CHECK(nnk_get_extension_context("opencl", "device_id=0", &ctx) == NNK_OK, "context: %s", nnk_last_error());
    static const char src[] = "elementwise axpb<T: float>(x: T[], y: T[], a: T = 2) -> (z: T[]) { z = a * x + y; }\n";
    CHECK(ctx && nnk_module_compile(ctx, src, "name=axpb.nnk", &m) == NNK_OK, "module: %s", nnk_last_error());
    if (ctx && m) {
        pthread_t th[NTHREADS];
        race_arg ra[NTHREADS];
        int started = 0;
        for (int i = 0; i < NTHREADS; i++) {
            ra[i] = (race_arg){ctx, m, i};
            started += pthread_create(&th[i], NULL, race_main, &ra[i]) == 0;
        }
        CHECK(started == NTHREADS, "%d threads started", started);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
    }
    nnk_module_free(m);
    nnk_context_free(ctx);
    return finish();
}

static int mode_none(void)
{
    CHECK(nnk_import_extension("opencl", &ext) == NNK_OK, "import without OpenCL: %s", nnk_last_error());
    int32_t n = -1;
    CHECK(ext && nnk_extension_get_device_count(ext, &n) == NNK_OK && n == 0, "device count %d", n);
    const char *st = ext ? nnk_extension_status(ext) : "";
    CHECK(strstr(st, "no OpenCL") != NULL, "status says why: '%s'", st);
    nnk_context *ctx = NULL;
    /* the context is made without asking the device (NNabla's); its first
     * use says there is none */
    nnk_status s = nnk_get_extension_context("opencl", "device_id=0", &ctx);
    CHECK(s == NNK_OK, "context without devices: %d %s", s, nnk_last_error());
    nnk_array *a = NULL;
    int64_t four = 4;
    s = ctx ? nnk_array_new(ctx, NNK_F32, 1, &four, &a) : NNK_EDEVICE;
    CHECK(s == NNK_EDEVICE && strstr(nnk_last_error(), "no OpenCL"), "first use of a context without devices: %d %s", s,
          nnk_last_error());
    nnk_array_free(a);
    nnk_context_free(ctx);
    return finish();
}

static int have_devices(void)
{
    if (nnk_import_extension("opencl", &ext) != NNK_OK) {
        printf("FAIL: import: %s\n", nnk_last_error());
        exit(1);
    }
    int32_t n = 0;
    nnk_extension_get_device_count(ext, &n);
    if (n == 0) {
        const char *req = getenv("NNK_OPENCL_REQUIRED");
        printf("%s: no OpenCL device: %s\n", req && *req == '1' ? "FAIL" : "SKIP", nnk_extension_status(ext));
        nnk_shutdown();
        exit(req && *req == '1' ? 1 : 77);
    }
    return n;
}

static int mode_cached(void)
{
    have_devices();
    nnk_ext_kernel k;
    CHECK(compile(triad_src, &triad_iface, &k) == NNK_OK, "compile: %s", nnk_last_error());
    const char *st = nnk_extension_status(ext);
    CHECK(strstr(st, "programs: 0 built, 1 from the disk cache") != NULL, "second process: '%s'", st);
    nnk_context *ctx = NULL;
    CHECK(nnk_get_extension_context("opencl", "", &ctx) == NNK_OK, "context");
    if (ctx && k.handle)
        run_triad(&k, ctx, 4096, 1, 2.0f, "from the disk cache");
    if (k.handle)
        ext->ext.ops->kernel_free(ext->ext.state, &k);
    nnk_context_free(ctx);
    return finish();
}

static int mode_uncached(void)
{
    have_devices();
    const char *st = nnk_extension_status(ext);
    if (!strstr(st, "PoCL")) {
        printf("SKIP: uncached: not PoCL: %s\n", st);
        return finish();
    }
    CHECK(strstr(st, "binaries not in nnk's disk cache") != NULL, "PoCL's default: '%s'", st);
    for (int round = 1; round <= 2; round++) {
        nnk_ext_kernel k;
        CHECK(compile(triad_src, &triad_iface, &k) == NNK_OK, "compile %d: %s", round, nnk_last_error());
        if (k.handle)
            ext->ext.ops->kernel_free(ext->ext.state, &k);
        CHECK(nnk_extension_clear_memory_cache(ext, NULL) == NNK_OK, "clear_memory_cache");
    }
    st = nnk_extension_status(ext);
    CHECK(strstr(st, "programs: 2 built, 0 from the disk cache") != NULL, "built twice, never from disk: '%s'", st);
    return finish();
}

static int mode_oom(void)
{
    have_devices();
    nnk_context *ctx = NULL;
    CHECK(nnk_get_extension_context("opencl", "", &ctx) == NNK_OK, "context");
    /* NNK_OPENCL_MEM_LIMIT is 1 MiB: a 600 KiB block, freed (cached by the
     * runtime), then a 700 KiB one fits only after the runtime flushes */
    int64_t a = 600 * 256, b = 700 * 256, big = 2 * 1024 * 256;
    nnk_array *x = NULL, *y = NULL, *z = NULL;
    CHECK(nnk_array_zeros(ctx, NNK_F32, 1, &a, &x) == NNK_OK, "600 KiB: %s", nnk_last_error());
    nnk_array_free(x);
    nnk_memory_stats ms;
    CHECK(nnk_extension_memory_stats(ext, 0, &ms) == NNK_OK && ms.bytes_cached > 0, "cached after free");
    CHECK(nnk_array_zeros(ctx, NNK_F32, 1, &b, &y) == NNK_OK, "700 KiB after a flush: %s", nnk_last_error());
    nnk_status s = nnk_array_zeros(ctx, NNK_F32, 1, &big, &z);
    CHECK(s == NNK_ENOMEM && strstr(nnk_last_error(), "out of memory"), "2 MiB: %d %s", s, nnk_last_error());
    nnk_array_free(y);
    nnk_context_free(ctx);
    return finish();
}

static void test_devices_and_contexts(int32_t n)
{
    nnk_device_info info[8];
    int32_t count = 0;
    memset(info, 0, sizeof info);
    CHECK(nnk_extension_get_devices(ext, info, 8, &count) == NNK_OK && count == n, "get_devices %d", count);
    for (int32_t i = 0; i < count && i < 8; i++) {
        CHECK(info[i].id == i && info[i].name[0] && info[i].total_memory > 0 && !info[i].host_accessible,
              "device %d: '%s' %llu %d", i, info[i].name, (unsigned long long)info[i].total_memory,
              info[i].host_accessible);
        printf("device %d: %s, %llu MiB\n", i, info[i].name, (unsigned long long)(info[i].total_memory >> 20));
    }
    const char *st = nnk_extension_status(ext);
    CHECK(strstr(st, "driver") && strstr(st, "platform"), "status names platform and driver: '%s'", st);
    printf("status: %s\n", st);
    /* the versioned description: vendor, driver, unified memory, as the status line has them */
    for (int32_t i = 0; i < count && i < 8; i++) {
        nnk_device_props p;
        memset(&p, 0x55, sizeof p);
        p.size = sizeof p;
        CHECK(nnk_extension_get_device_props(ext, i, &p) == NNK_OK && p.size == sizeof p && p.id == i &&
                  !strcmp(p.name, info[i].name) && p.total_memory == info[i].total_memory && !p.host_accessible &&
                  p.vendor[0] && strstr(st, p.vendor) && p.driver_version[0] && strstr(st, p.driver_version) &&
                  (p.unified_memory == 1) == (strstr(st, "host-unified memory") != NULL),
              "device_props %d: %s", i, nnk_last_error());
        printf("device %d: vendor '%s', driver '%s', unified memory %d\n", i, p.vendor, p.driver_version,
               p.unified_memory);
    }
    {
        /* a caller of a later header (a longer struct): the runtime fills its
         * own members and says how many; an older, shorter one is refused */
        struct {
            nnk_device_props p;
            char later[64];
        } big;
        memset(&big, 0x55, sizeof big);
        big.p.size = sizeof big;
        CHECK(nnk_extension_get_device_props(ext, 0, &big.p) == NNK_OK && big.p.size == sizeof big.p &&
                  (unsigned char)big.later[0] == 0x55,
              "a longer struct: size %u", big.p.size);
        nnk_device_props p = {.size = (uint32_t)offsetof(nnk_device_props, unified_memory)};
        CHECK(nnk_extension_get_device_props(ext, 0, &p) == NNK_EINVAL && strstr(nnk_last_error(), "size"),
              "a short struct: %s", nnk_last_error());
        p.size = sizeof p;
        CHECK(nnk_extension_get_device_props(ext, count, &p) == NNK_EINVAL, "device %d of %d", count, count);
        CHECK(nnk_extension_get_device_props(ext, 0, NULL) == NNK_EINVAL, "NULL out");
    }

    nnk_context *ctx = NULL;
    CHECK(nnk_get_extension_context("opencl", "device_id=0 type_config=half", &ctx) == NNK_OK, "half: %s",
          nnk_last_error());
    if (ctx) {
        CHECK(nnk_context_backend_count(ctx) == 3 && !strcmp(nnk_context_backend(ctx, 0), "opencl:half") &&
                  !strcmp(nnk_context_backend(ctx, 1), "opencl:float") && !strcmp(nnk_context_backend(ctx, 2), "cpu:float"),
              "backends: %s", nnk_context_str(ctx));
        nnk_context_free(ctx);
    }
    ctx = NULL;
    CHECK(nnk_get_extension_context("opencl", "platform=0 device_type=all", &ctx) == NNK_OK &&
              nnk_context_backend_count(ctx) == 2 && nnk_context_device_id(ctx) == 0,
          "platform=0: %s", nnk_last_error());
    nnk_context_free(ctx);
    ctx = NULL;
    /* PoCL's device is a CPU: device_type=cpu finds it, under its platform's name too */
    if (strstr(st, "[cpu,")) {
        CHECK(nnk_get_extension_context("opencl", "device_type=cpu platform=Portable", &ctx) == NNK_OK ||
                  !strstr(st, "Portable Computing Language"),
              "device_type=cpu platform=Portable: %s", nnk_last_error());
        nnk_context_free(ctx);
        ctx = NULL;
    }
    nnk_status s = nnk_get_extension_context("opencl", "device_type=accelerator device_id=0", &ctx);
    CHECK(s == NNK_EINVAL && strstr(nnk_last_error(), "no device 0 with platform=any device_type=accelerator"),
          "accelerator 0: %s",
          nnk_last_error());
    s = nnk_get_extension_context("opencl", "device_type=fpga", &ctx);
    CHECK(s == NNK_EINVAL && strstr(nnk_last_error(), "'device_type'"), "bad device_type: %s", nnk_last_error());
    s = nnk_get_extension_context("opencl", "colour=blue", &ctx);
    CHECK(s == NNK_EINVAL && strstr(nnk_last_error(), "unknown key 'colour'"), "unknown key: %s", nnk_last_error());
    s = nnk_get_extension_context("opencl", "platform=nosuchplatform", &ctx);
    CHECK(s == NNK_EINVAL, "no such platform: %s", nnk_last_error());
}

/* "; N strided copies on the device" of the status line. */
static unsigned long rect_copies(void)
{
    const char *st = nnk_extension_status(ext), *c = strstr(st, " strided copies on the device");
    while (c && c > st && c[-1] >= '0' && c[-1] <= '9')
        c--;
    return c ? strtoul(c, NULL, 10) : 0;
}

static void test_memory(nnk_context *ctx)
{
    enum { N = 3000 };
    static float h[N], back[N];
    for (int i = 0; i < N; i++)
        h[i] = (float)i * 0.5f - 7.0f;
    int64_t shape[2] = {30, 100};
    nnk_array *a = NULL, *b = NULL, *v = NULL, *z = NULL;
    CHECK(nnk_array_from_host(ctx, NNK_F32, 2, shape, h, &a) == NNK_OK, "from_host: %s", nnk_last_error());
    if (!a)
        return;
    CHECK(!strcmp(nnk_extension_name(nnk_array_extension(a)), "opencl"), "the array is on the device");
    CHECK(nnk_array_to_host(a, NNK_F32, back, sizeof back) == NNK_OK && !memcmp(h, back, sizeof h), "round trip");
    /* a strided view: rows 3..27 step 4, columns 99..0 step -3 */
    nnk_slice sl[2] = {{3, 27, 4}, {99, NNK_SLICE_NONE, -3}};
    CHECK(nnk_array_slice(a, 2, sl, &v) == NNK_OK, "slice: %s", nnk_last_error());
    if (v) {
        float vb[6 * 34];
        CHECK(nnk_array_size(v) == 6 * 34, "view size %lld", (long long)nnk_array_size(v));
        CHECK(nnk_array_to_host(v, NNK_F32, vb, sizeof vb) == NNK_OK, "view to_host: %s", nnk_last_error());
        int bad = 0;
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 34; c++)
                bad += vb[r * 34 + c] != h[(3 + 4 * r) * 100 + (99 - 3 * c)];
        CHECK(bad == 0, "view values: %d wrong", bad);
        /* device to device, with a conversion to f64 through the host */
        CHECK(nnk_array_to(v, NULL, NNK_F64, &b) == NNK_OK, "to f64: %s", nnk_last_error());
        double db[6 * 34];
        CHECK(b && nnk_array_to_host(b, NNK_F64, db, sizeof db) == NNK_OK && db[5 * 34 + 33] == vb[5 * 34 + 33],
              "f64 copy");
    }
    nnk_array_free(b);
    b = NULL;
    /* strided copies on the device (copy_strided: clEnqueueCopyBufferRect):
     * rows step 4 by columns step 2 (single elements, then rows), and a 3-D
     * view with contiguous rows; the reversed view above was staged */
    {
        unsigned long before = rect_copies();
        nnk_slice s2[2] = {{1, 29, 4}, {1, 99, 2}};
        nnk_array *w = NULL, *wc = NULL, *a3 = NULL, *w3 = NULL, *w3c = NULL;
        int64_t s3[3] = {3, 10, 100};
        nnk_slice sl3[3] = {{0, 3, 2}, {1, 10, 2}, {5, 50, 1}}; /* slice pitch a multiple of the row pitch */
        CHECK(nnk_array_slice(a, 2, s2, &w) == NNK_OK && nnk_array_new(ctx, NNK_F32, 2, nnk_array_shape(w), &wc) == NNK_OK,
              "views: %s", nnk_last_error());
        CHECK(nnk_array_reshape(a, 3, s3, &a3) == NNK_OK && nnk_array_slice(a3, 3, sl3, &w3) == NNK_OK &&
                  nnk_array_new(ctx, NNK_F32, 3, nnk_array_shape(w3), &w3c) == NNK_OK,
              "3-D view: %s", nnk_last_error());
        if (w && wc && w3 && w3c) {
            CHECK(nnk_array_copy(wc, w) == NNK_OK && nnk_array_copy(w3c, w3) == NNK_OK, "copies: %s",
                  nnk_last_error());
            static float cb[7 * 49], c3[2 * 5 * 45];
            int bad = 0;
            CHECK(nnk_array_to_host(wc, NNK_F32, cb, sizeof cb) == NNK_OK, "to_host");
            for (int r = 0; r < 7; r++)
                for (int c = 0; c < 49; c++)
                    bad += cb[r * 49 + c] != h[(1 + 4 * r) * 100 + 1 + 2 * c];
            CHECK(nnk_array_to_host(w3c, NNK_F32, c3, sizeof c3) == NNK_OK, "to_host 3-D");
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 5; j++)
                    for (int k = 0; k < 45; k++)
                        bad += c3[(i * 5 + j) * 45 + k] != h[(2 * i) * 1000 + (1 + 2 * j) * 100 + 5 + k];
            CHECK(bad == 0, "strided device copies: %d wrong", bad);
            unsigned long after = rect_copies();
            CHECK(after == before + 2, "two copies on the device: %lu -> %lu (%s)", before, after,
                  nnk_extension_status(ext));
        }
        nnk_array_free(w);
        nnk_array_free(wc);
        nnk_array_free(a3);
        nnk_array_free(w3);
        nnk_array_free(w3c);
    }
    /* same dtype, contiguous: one device copy */
    CHECK(nnk_array_to(a, NULL, NNK_F32, &b) == NNK_OK, "to: %s", nnk_last_error());
    memset(back, 0, sizeof back);
    CHECK(b && nnk_array_to_host(b, NNK_F32, back, sizeof back) == NNK_OK && !memcmp(h, back, sizeof h), "d2d copy");
    int64_t zn = 777;
    CHECK(nnk_array_zeros(ctx, NNK_F32, 1, &zn, &z) == NNK_OK, "zeros");
    float zb[777];
    memset(zb, 1, sizeof zb);
    int nz = 0;
    if (z && nnk_array_to_host(z, NNK_F32, zb, sizeof zb) == NNK_OK)
        for (int i = 0; i < 777; i++)
            nz += zb[i] != 0.0f;
    CHECK(z && nz == 0, "zeros: %d nonzero", nz);
    nnk_memory_stats ms;
    CHECK(nnk_extension_memory_stats(ext, 0, &ms) == NNK_OK && ms.bytes_in_use >= 2 * N * sizeof(float),
          "stats in use %llu", (unsigned long long)ms.bytes_in_use);
    /* a host pointer is not device memory */
    rt_ext *e = &ext->ext;
    CHECK(e->ops->copy(e->state, 0, NNK_COPY_DEVICE_TO_HOST, back, h, 16) == NNK_EINVAL, "host pointer refused");
    nnk_array_free(a);
    nnk_array_free(b);
    nnk_array_free(v);
    nnk_array_free(z);
    uint64_t released = 0;
    CHECK(nnk_extension_clear_memory_cache(ext, &released) == NNK_OK && released > 0, "clear_memory_cache %llu",
          (unsigned long long)released);
    CHECK(nnk_extension_memory_stats(ext, 0, &ms) == NNK_OK && ms.bytes_cached == 0 && ms.bytes_in_use == 0,
          "empty after clear");
}

static void test_jit(nnk_context *ctx)
{
    nnk_ext_kernel k, k2;
    nnk_status s = compile(triad_src, &triad_iface, &k);
    CHECK(s == NNK_OK, "compile: %s", nnk_last_error());
    if (s)
        return;
    const char *st = nnk_extension_status(ext);
    int cold = strstr(st, "programs: 1 built, 0 from the disk cache") != NULL;
    int warm = strstr(st, "programs: 0 built, 1 from the disk cache") != NULL;
    CHECK(cold || warm, "first compile: '%s'", st);
    CHECK(compile(triad_src, &triad_iface, &k2) == NNK_OK && k2.handle == k.handle, "memory cache");
    CHECK(strstr(nnk_extension_status(ext), ", 1 from memory") != NULL, "memory hit: %s", nnk_extension_status(ext));
    ext->ext.ops->kernel_free(ext->ext.state, &k2);
    /* NNK_OPENCL_OPTIONS is read at each build: other options, another
     * program (conformance.sh changes them between instances) */
    const char *had = getenv("NNK_OPENCL_OPTIONS");
    char *saved = had ? strdup(had) : NULL;
    setenv("NNK_OPENCL_OPTIONS", "-DNNK_OPTIONS_TEST=1", 1);
    CHECK(compile(triad_src, &triad_iface, &k2) == NNK_OK && k2.handle && k2.handle != k.handle,
          "other options, another program: %s", nnk_last_error());
    if (k2.handle)
        run_triad(&k2, ctx, 100, 1, 2.0f, "built with other options");
    ext->ext.ops->kernel_free(ext->ext.state, &k2);
    if (saved)
        setenv("NNK_OPENCL_OPTIONS", saved, 1);
    else
        unsetenv("NNK_OPENCL_OPTIONS");
    free(saved);
    CHECK(compile(triad_src, &triad_iface, &k2) == NNK_OK && k2.handle == k.handle, "the first options again");
    ext->ext.ops->kernel_free(ext->ext.state, &k2);
    run_triad(&k, ctx, 10000, 1, 3.0f, "contiguous");
    run_triad(&k, ctx, 5000, 3, -1.25f, "strided");
    run_triad(&k, ctx, 1, 1, 1.0f, "one element");
    run_triad(&k, ctx, 0, 1, 1.0f, "empty");

    /* concurrency: several threads launch the same program at once */
    pthread_t th[4];
    thread_arg ta[4];
    for (int i = 0; i < 4; i++) {
        ta[i] = (thread_arg){&k, ctx, i};
        pthread_create(&th[i], NULL, thread_main, &ta[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    ext->ext.ops->kernel_free(ext->ext.state, &k);

    /* a build error: the driver's log, reduced to its error lines */
    static const char bad[] = "__kernel void TRIAD__ew_c(__global float *x) { x[0] = undefined_name; }\n";
    s = compile(bad, &triad_iface, &k);
    CHECK(s == NNK_ECOMPILE && strstr(nnk_last_error(), "building the OpenCL C of 'TRIAD'") &&
              strstr(nnk_last_error(), "undefined_name"),
          "build error: %d %s", s, nnk_last_error());
    /* a kernel whose arguments do not follow the ABI */
    static const char wrong[] = "__kernel void TRIAD__ew_c(__global float *a0) { a0[0] = 1.0f; }\n";
    s = compile(wrong, &triad_iface, &k);
    CHECK(s == NNK_OK, "compile of a wrong signature: %s", nnk_last_error());
    if (!s) {
        int64_t n = 4;
        nnk_array *x = NULL;
        nnk_array_zeros(ctx, NNK_F32, 1, &n, &x);
        nnk_plan p;
        memset(&p, 0, sizeof p);
        p.ndim = 1, p.nops = 3, p.shape[0] = 4, p.nkept = 4, p.nreduced = 1;
        for (int i = 0; i < 4; i++)
            p.strides[i][0] = 1;
        p.data[0] = p.data[1] = p.data[2] = nnk_array_data(x);
        s = ext->ext.ops->launch(ext->ext.state, 0, &k, &p);
        CHECK(s == NNK_EUNSUPPORTED && strstr(nnk_last_error(), "has 3 operands; the OpenCL kernels of 'TRIAD' take 1"),
              "ABI check: %s",
              nnk_last_error());
        nnk_array_free(x);
        ext->ext.ops->kernel_free(ext->ext.state, &k);
    }
    /* no source without an interface, and no other target */
    nnk_kernel *nk = NULL;
    s = nnk_kernel_from_source(ctx, triad_src, "TRIAD__desc", &nk);
    CHECK(s == NNK_EUNSUPPORTED && strstr(nnk_last_error(), "interface"), "from_source: %s", nnk_last_error());
}

/* A module through the emitter's OpenCL C: the backend priority list
 * across a real device boundary.  Arrays on the device run on opencl (the
 * output is allocated there), host arrays in the same context fall back to
 * cpu:float, and a copy between them round-trips. */
static void test_module(nnk_context *ctx)
{
    static const char src[] = "elementwise axpb<T: float>(x: T[], y: T[], a: T = 2) -> (z: T[]) { z = a * x + y; }\n";
    nnk_module *m = NULL;
    nnk_kernel *k = NULL;
    CHECK(nnk_module_compile(ctx, src, "name=axpb.nnk", &m) == NNK_OK, "module: %s", nnk_last_error());
    CHECK(m && nnk_module_kernel(m, "axpb", &k) == NNK_OK, "kernel");
    if (!k) {
        nnk_module_free(m);
        return;
    }
    enum { N = 1000 };
    static float hx[N], hy[N], hz[N], back[N];
    for (int i = 0; i < N; i++)
        hx[i] = (float)i * 0.75f - 100.0f, hy[i] = (float)(i % 7) - 3.5f;
    int64_t n = N;
    nnk_array *x = NULL, *y = NULL, *z = NULL, *wx = NULL, *wy = NULL, *wz = NULL, *zc = NULL;
    nnk_args *args = NULL;
    CHECK(nnk_array_from_host(ctx, NNK_F32, 1, &n, hx, &x) == NNK_OK, "x");
    CHECK(nnk_array_from_host(ctx, NNK_F32, 1, &n, hy, &y) == NNK_OK, "y");
    CHECK(nnk_args_new(&args) == NNK_OK, "args");
    if (x && y && args) {
        nnk_args_array(args, x);
        nnk_args_array(args, y);
        nnk_args_named_f64(args, "a", 3.0);
        nnk_status s = nnk_launch(k, args);
        CHECK(s == NNK_OK, "launch on the device: %s", nnk_last_error());
        if (!s && nnk_args_output(args, 0, &z) == NNK_OK) {
            CHECK(!strcmp(nnk_extension_name(nnk_array_extension(z)), "opencl"), "ran on opencl (output there)");
            CHECK(nnk_array_to_host(z, NNK_F32, back, sizeof back) == NNK_OK, "z to host");
            int bad = 0;
            for (int i = 0; i < N; i++) {
                float want = 3.0f * hx[i] + hy[i];
                bad += memcmp(&want, &back[i], sizeof want) != 0;
            }
            CHECK(bad == 0, "opencl result: %d wrong", bad);
        }
        /* the scalar's default (a = 2) when the call gives none */
        nnk_args_reset(args);
        nnk_args_array(args, x);
        nnk_args_array(args, y);
        nnk_array *zd = NULL;
        s = nnk_launch(k, args);
        CHECK(s == NNK_OK && nnk_args_output(args, 0, &zd) == NNK_OK, "default scalar: %s", nnk_last_error());
        if (zd && nnk_array_to_host(zd, NNK_F32, hz, sizeof hz) == NNK_OK) {
            int bad = 0;
            for (int i = 0; i < N; i++) {
                float want = 2.0f * hx[i] + hy[i];
                bad += memcmp(&want, &hz[i], sizeof want) != 0;
            }
            CHECK(bad == 0, "default a = 2: %d wrong (z[1] = %g)", bad, (double)hz[1]);
        }
        nnk_array_free(zd);
        /* host arrays in the opencl context: cpu:float */
        nnk_args_reset(args);
        nnk_array_wrap(NNK_F32, 1, &n, NULL, hx, &wx);
        nnk_array_wrap(NNK_F32, 1, &n, NULL, hy, &wy);
        nnk_args_array(args, wx);
        nnk_args_array(args, wy);
        nnk_args_named_f64(args, "a", 3.0);
        s = nnk_launch(k, args);
        CHECK(s == NNK_OK, "launch on host arrays: %s", nnk_last_error());
        if (!s && nnk_args_output(args, 0, &wz) == NNK_OK) {
            nnk_extension *we = nnk_array_extension(wz);
            CHECK(!we || !strcmp(nnk_extension_name(we), "cpu"), "fell back to cpu: %s",
                  we ? nnk_extension_name(we) : "host");
            CHECK(nnk_array_to_host(wz, NNK_F32, hz, sizeof hz) == NNK_OK && !memcmp(hz, back, sizeof hz),
                  "cpu and opencl agree bit for bit");
        }
        /* the device result copied to the host side and back */
        if (z && wz) {
            CHECK(nnk_array_to(z, NULL, NNK_F32, &zc) == NNK_OK, "copy on the device");
            CHECK(nnk_array_copy(wz, z) == NNK_OK && nnk_array_copy(zc, wz) == NNK_OK, "device -> host -> device");
            memset(hz, 0, sizeof hz);
            CHECK(zc && nnk_array_to_host(zc, NNK_F32, hz, sizeof hz) == NNK_OK && !memcmp(hz, back, sizeof hz),
                  "round trip");
        }
    }
    nnk_args_free(args);
    nnk_array_free(x);
    nnk_array_free(y);
    nnk_array_free(z);
    nnk_array_free(wx);
    nnk_array_free(wy);
    nnk_array_free(wz);
    nnk_array_free(zc);
    nnk_module_free(m);
}

/* Reductions through the emitter's OpenCL C, in each layout dispatch.c
 * picks: row order (many rows: NAME__rd_group), column order (reduced
 * axis outer: NAME__rd_item), split (one long slice: NAME__rd_part,
 * rd_fin, rd_epi); an integer sum exactly, softmax's three phases within
 * a few ulp of the C back end (host arrays in the same context: cpu). */
static void test_reductions(nnk_context *ctx)
{
    static const char src[] =
        "reduction isum(x: i32[]) -> (r: i32) { r = sum(x); }\n"
        "reduction softmax(x: f32[]) -> (y: f32[]) { let m = max(x); let s = sum(exp(x - m)); y = exp(x - m) / s; }\n";
    nnk_module *m = NULL;
    nnk_kernel *isum = NULL, *smax = NULL;
    CHECK(nnk_module_compile(ctx, src, "name=red.nnk", &m) == NNK_OK, "module: %s", nnk_last_error());
    if (!m || nnk_module_kernel(m, "isum", &isum) || nnk_module_kernel(m, "softmax", &smax)) {
        nnk_module_free(m);
        return;
    }
    static const struct { int64_t rows, cols; int axis; const char *what; } cases[] = {
        {512, 300, 1, "rows"}, {40, 3000, 0, "columns"}, {1, 200000, 1, "split"}, {7, 0, 1, "empty rows"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int64_t R = cases[c].rows, Cn = cases[c].cols, n = R * Cn;
        const int axis = cases[c].axis;
        int64_t shape[2] = {R, Cn};
        int32_t *hi = malloc((size_t)(n ? n : 1) * 4);
        float *hf = malloc((size_t)(n ? n : 1) * 4), *dev = malloc((size_t)(n ? n : 1) * 4);
        float *host = malloc((size_t)(n ? n : 1) * 4);
        for (int64_t i = 0; i < n; i++) {
            hi[i] = (int32_t)((i * 2654435761u) % 2001) - 1000;
            hf[i] = (float)((i * 40503u) % 1000) * 0.01f - 5.0f;
        }
        int64_t nout = axis == 1 ? R : Cn;
        int32_t *want = calloc((size_t)(nout ? nout : 1), 4), *got = calloc((size_t)(nout ? nout : 1), 4);
        for (int64_t i = 0; i < n; i++)
            want[axis == 1 ? i / Cn : i % Cn] += hi[i];
        nnk_array *xi = NULL, *xf = NULL, *wf = NULL;
        nnk_args *args = NULL;
        nnk_args_new(&args);
        nnk_array_from_host(ctx, NNK_I32, 2, shape, hi, &xi);
        nnk_array_from_host(ctx, NNK_F32, 2, shape, hf, &xf);
        nnk_array_wrap(NNK_F32, 2, shape, NULL, hf, &wf);
        int32_t ax[1] = {axis};
        nnk_array *r = NULL;
        nnk_args_array(args, xi);
        nnk_args_axes(args, 1, ax);
        nnk_status s = nnk_launch(isum, args);
        CHECK(s == NNK_OK, "%s: isum: %s", cases[c].what, nnk_last_error());
        if (!s && !nnk_args_output(args, 0, &r)) {
            CHECK(!strcmp(nnk_extension_name(nnk_array_extension(r)), "opencl"), "%s: on opencl", cases[c].what);
            CHECK(nnk_array_to_host(r, NNK_I32, got, (size_t)nout * 4) == NNK_OK &&
                      !memcmp(got, want, (size_t)nout * 4),
                  "%s: integer sums", cases[c].what);
        }
        /* softmax on the device and on the host (cpu) */
        nnk_array *yd = NULL, *yh = NULL;
        nnk_args_reset(args);
        nnk_args_array(args, xf);
        nnk_args_axes(args, 1, ax);
        s = nnk_launch(smax, args);
        CHECK(s == NNK_OK, "%s: softmax: %s", cases[c].what, nnk_last_error());
        if (!s)
            nnk_args_output(args, 0, &yd);
        nnk_args_reset(args);
        nnk_args_array(args, wf);
        nnk_args_axes(args, 1, ax);
        if (nnk_launch(smax, args) == NNK_OK)
            nnk_args_output(args, 0, &yh);
        if (yd && yh && n > 0 && nnk_array_to_host(yd, NNK_F32, dev, (size_t)n * 4) == NNK_OK &&
            nnk_array_to_host(yh, NNK_F32, host, (size_t)n * 4) == NNK_OK) {
            int bad = 0;
            for (int64_t i = 0; i < n; i++) {
                float d = dev[i] - host[i];
                bad += !(d <= 8e-7f * 4 && -d <= 8e-7f * 4) && !(d / host[i] < 4e-6f && -d / host[i] < 4e-6f);
            }
            CHECK(bad == 0, "%s: softmax: %d of %lld differ from cpu", cases[c].what, bad, (long long)n);
        }
        nnk_array_free(r);
        nnk_array_free(yd);
        nnk_array_free(yh);
        nnk_args_free(args);
        nnk_array_free(xi);
        nnk_array_free(xf);
        nnk_array_free(wf);
        free(hi), free(hf), free(dev), free(host), free(want), free(got);
    }
    nnk_module_free(m);
}

/* f64 on a device without cl_khr_fp64 (NNK_OPENCL_HIDE_EXTENSIONS hides it). */
static int mode_nofp64(void)
{
    have_devices();
    static const char src[] = "/* nnk-requires: cl_khr_fp64 (an instance computes in f64) */\n"
                              "__kernel void TRIAD__ew_c(__global double *a0) { a0[0] = 1.0; }\n";
    nnk_ext_kernel k;
    nnk_status s = compile(src, &triad_iface, &k);
    CHECK(s == NNK_EUNSUPPORTED && strstr(nnk_last_error(), "needs the OpenCL extension cl_khr_fp64 (f64)"),
          "fp64 pragma: %d %s", s, nnk_last_error());
    static const nnk_param_desc p64[] = {{"x", NNK_F64, NNK_PARAM_TENSOR, {0}},
                                         {"out", NNK_F64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}}};
    nnk_kernel_desc i64 = triad_iface;
    i64.nparams = 1;
    i64.params = p64;
    s = compile("__kernel void TRIAD__ew_c(__global float *a0) { }\n", &i64, &k);
    CHECK(s == NNK_EUNSUPPORTED && strstr(nnk_last_error(), "cl_khr_fp64"), "f64 parameter: %d %s", s,
          nnk_last_error());
    return finish();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "main";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!(triad_src = make_triad_src())) {
        printf("FAIL: cannot read templates/opencl/plan.h (top_srcdir)\n");
        return 1;
    }
    if (!strcmp(mode, "none"))
        return mode_none();
    if (!strcmp(mode, "cached"))
        return mode_cached();
    if (!strcmp(mode, "uncached"))
        return mode_uncached();
    if (!strcmp(mode, "oom"))
        return mode_oom();
    if (!strcmp(mode, "nofp64"))
        return mode_nofp64();
    if (!strcmp(mode, "threads"))
        return mode_threads();
    int32_t n = have_devices();
    if (!strcmp(mode, "reductions")) { /* under NNK_OPENCL_FORCE: the layouts */
        nnk_context *rctx = NULL;
        CHECK(nnk_get_extension_context("opencl", "", &rctx) == NNK_OK, "context");
        if (rctx)
            test_reductions(rctx);
        nnk_context_free(rctx);
        return finish();
    }
    test_devices_and_contexts(n);
    nnk_context *ctx = NULL;
    CHECK(nnk_get_extension_context("opencl", "device_id=0", &ctx) == NNK_OK, "context: %s", nnk_last_error());
    if (ctx) {
        test_memory(ctx);
        test_jit(ctx);
        test_module(ctx);
        test_reductions(ctx);
    }
    nnk_context_free(ctx);
    return finish();
}
