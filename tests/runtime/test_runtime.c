/* test_runtime.c - CUnit tests of libnnk's public API: errors, extensions,
 * contexts, arrays and copies, the caching allocator, launches of
 * hand-written descriptors (the ABI), the CPU JIT and its caches, modules
 * and jit functions, processes and threads at once.
 *
 * Every test leaves no object alive; main() checks with valgrind-friendly
 * teardown (nnk_shutdown). NNK_CACHE_DIR points into a temporary directory. */
#define _GNU_SOURCE
#include "config.h"
#include "../cunit-main.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi_kernels.h"
#include "nnk/extension.h"
#include "nnk/nnk.h"

#ifndef NNK_TEST_SRCDIR
#define NNK_TEST_SRCDIR "."
#endif

#define OK(call)                                                                          \
    do {                                                                                  \
        nnk_status st_ = (call);                                                          \
        if (st_ != NNK_OK)                                                                \
            fprintf(stderr, "\n%s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(st_), \
                    nnk_last_error());                                                    \
        CU_ASSERT_EQUAL_FATAL(st_, NNK_OK);                                               \
    } while (0)
#define FAILS(call, st) CU_ASSERT_EQUAL((call), (st))
#define MSG_HAS(s) CU_ASSERT_PTR_NOT_NULL(strstr(nnk_last_error(), (s)))

static char tmpdir[256];

/* The allocator test asks for 8 TiB and expects NNK_ENOMEM: under
 * AddressSanitizer, malloc must return NULL rather than abort. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void run_cmd(const char *fmt, const char *arg)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, arg);
    if (system(cmd) != 0)
        fprintf(stderr, "command failed: %s\n", cmd);
}

static void fresh_cache(const char *name)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    run_cmd("rm -rf '%s'", dir);
    setenv("NNK_CACHE_DIR", dir, 1);
}

static nnk_array *host_f32(int32_t ndim, const int64_t *shape, const float *data)
{
    nnk_array *a = NULL;
    CU_ASSERT_EQUAL(nnk_array_from_host(NULL, NNK_F32, ndim, shape, data, &a), NNK_OK);
    return a;
}

/* ---- errors, dtypes --------------------------------------------------------- */

static void test_errors(void)
{
    CU_ASSERT_STRING_EQUAL(nnk_status_name(NNK_OK), "NNK_OK");
    CU_ASSERT_STRING_EQUAL(nnk_status_name(NNK_EDTYPE), "NNK_EDTYPE");
    CU_ASSERT_STRING_EQUAL(nnk_status_name((nnk_status)999), "NNK_E?");
    nnk_dtype t;
    OK(nnk_dtype_parse("half", &t));
    CU_ASSERT_EQUAL(t, NNK_F16);
    OK(nnk_dtype_parse("bf16", &t));
    CU_ASSERT_EQUAL(t, NNK_BF16);
    FAILS(nnk_dtype_parse("f128", &t), NNK_EINVAL);
    MSG_HAS("f128");
    CU_ASSERT_EQUAL(nnk_dtype_size(NNK_F16), 2);
    CU_ASSERT_EQUAL(nnk_dtype_size((nnk_dtype)77), 0);
    CU_ASSERT_PTR_NULL(nnk_dtype_name((nnk_dtype)-1));
    /* NULLs everywhere: errors, no crash */
    FAILS(nnk_import_extension(NULL, NULL), NNK_EINVAL);
    FAILS(nnk_get_extension_context(NULL, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_array_new(NULL, NNK_F32, 1, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_array_copy(NULL, NULL), NNK_EINVAL);
    FAILS(nnk_array_slice(NULL, 0, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_array_reshape(NULL, 0, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_array_to_host(NULL, NNK_F32, NULL, 0), NNK_EINVAL);
    FAILS(nnk_module_compile(NULL, NULL, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_module_kernel(NULL, "x", NULL), NNK_EINVAL);
    FAILS(nnk_launch(NULL, NULL), NNK_EINVAL);
    FAILS(nnk_args_new(NULL), NNK_EINVAL);
    FAILS(nnk_args_array(NULL, NULL), NNK_EINVAL);
    FAILS(nnk_args_f64(NULL, 1), NNK_EINVAL);
    FAILS(nnk_kernel_from_desc(NULL, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_kernel_from_source(NULL, NULL, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_create_jit_fn(NULL, NULL, NULL), NNK_EINVAL);
    FAILS(nnk_jit_fn_call(NULL, NULL), NNK_EINVAL);
    FAILS(nnk_list_extensions(NULL, 4, NULL), NNK_EINVAL);
    FAILS(nnk_set_default_context(NULL), NNK_EINVAL);
    FAILS(nnk_extension_get_device_count(NULL, NULL), NNK_EINVAL);
    nnk_array_free(NULL);
    nnk_args_free(NULL);
    nnk_module_free(NULL);
    nnk_kernel_free(NULL);
    nnk_context_free(NULL);
    nnk_jit_fn_free(NULL);
    CU_ASSERT_PTR_NULL(nnk_array_data(NULL));
    CU_ASSERT_EQUAL(nnk_array_ndim(NULL), -1);
}

/* ---- extensions and contexts --------------------------------------------------- */

static void test_extensions(void)
{
    const char *names[16];
    int32_t n = 0;
    OK(nnk_list_extensions(names, 16, &n));
    CU_ASSERT_TRUE(n >= 1);
    CU_ASSERT_STRING_EQUAL(names[0], "cpu");
    int32_t n0;
    OK(nnk_list_extensions(NULL, 0, &n0));
    CU_ASSERT_EQUAL(n0, n);

    nnk_extension *cpu;
    OK(nnk_import_extension("cpu", &cpu));
    CU_ASSERT_STRING_EQUAL(nnk_extension_name(cpu), "cpu");
    int32_t count;
    OK(nnk_extension_get_device_count(cpu, &count));
    CU_ASSERT_EQUAL(count, 1);
    nnk_device_info info[2];
    OK(nnk_extension_get_devices(cpu, info, 2, &count));
    CU_ASSERT_EQUAL(count, 1);
    CU_ASSERT_EQUAL(info[0].id, 0);
    CU_ASSERT_TRUE(info[0].host_accessible);
    CU_ASSERT_PTR_NOT_NULL(strstr(info[0].name, "cpu"));
    OK(nnk_extension_device_synchronize(cpu, 0));
    FAILS(nnk_extension_device_synchronize(cpu, 3), NNK_EINVAL);
    MSG_HAS("device 3");

    setenv("NNK_EXTENSION_PATH", "/nonexistent-a:/nonexistent-b", 1);
    nnk_extension *e;
    FAILS(nnk_import_extension("nosuch", &e), NNK_ENOTFOUND);
    MSG_HAS("libnnk_ext_nosuch.so");
    MSG_HAS("/nonexistent-a");
    MSG_HAS("/nonexistent-b");
    MSG_HAS(nnk_extension_dir());
    unsetenv("NNK_EXTENSION_PATH");
    FAILS(nnk_import_extension("Bad-Name", &e), NNK_EINVAL);
    FAILS(nnk_get_extension_context("nosuch", NULL, NULL), NNK_EINVAL);
}

static void test_contexts(void)
{
    nnk_context *c;
    OK(nnk_get_extension_context("cpu", NULL, &c));
    CU_ASSERT_EQUAL(nnk_context_backend_count(c), 1);
    CU_ASSERT_STRING_EQUAL(nnk_context_backend(c, 0), "cpu:float");
    CU_ASSERT_EQUAL(nnk_context_type_config(c), NNK_F32);
    CU_ASSERT_PTR_NULL(nnk_context_backend(c, 1));
    nnk_context_free(c);

    OK(nnk_get_extension_context("cpu", "device_id=0 type_config=half", &c));
    CU_ASSERT_EQUAL(nnk_context_backend_count(c), 2);
    CU_ASSERT_STRING_EQUAL(nnk_context_backend(c, 0), "cpu:half");
    CU_ASSERT_STRING_EQUAL(nnk_context_backend(c, 1), "cpu:float");
    CU_ASSERT_EQUAL(nnk_context_type_config(c), NNK_F16);
    CU_ASSERT_PTR_NOT_NULL(strstr(nnk_context_str(c), "type_config=half"));
    /* the default context and arrays without a dtype */
    OK(nnk_set_default_context(c));
    nnk_context_free(c);
    nnk_context *d;
    OK(nnk_get_default_context(&d));
    CU_ASSERT_EQUAL(nnk_context_type_config(d), NNK_F16);
    nnk_array *a;
    int64_t shape[] = {3};
    OK(nnk_array_new_default(NULL, 1, shape, &a));
    CU_ASSERT_EQUAL(nnk_array_dtype(a), NNK_F16);
    nnk_array_free(a);
    nnk_context_free(d);
    OK(nnk_get_extension_context("cpu", "type_config=float,device_id=0", &c));
    OK(nnk_set_default_context(c));
    nnk_context_free(c);

    /* bad kw strings: each message names the key */
    FAILS(nnk_get_extension_context("cpu", "device_id=0 colour=blue", &c), NNK_EINVAL);
    MSG_HAS("colour");
    FAILS(nnk_get_extension_context("cpu", "type_config=double", &c), NNK_EINVAL);
    MSG_HAS("type_config");
    MSG_HAS("double");
    /* a device_id past the devices: the context is made (NNabla's asks
     * nothing of the device), its first use fails */
    OK(nnk_get_extension_context("cpu", "device_id=1", &c));
    CU_ASSERT_EQUAL(nnk_context_device_id(c), 1);
    FAILS(nnk_array_new(c, NNK_F32, 1, shape, &a), NNK_EINVAL);
    MSG_HAS("device_id 1 out of range: extension 'cpu' has 1 device");
    nnk_context_free(c);
    FAILS(nnk_get_extension_context("cpu", "device_id=-1", &c), NNK_EINVAL);
    MSG_HAS("device_id");
    MSG_HAS("context of extension 'cpu': "); /* as the other kw errors begin */
    OK(nnk_get_extension_context("cpu", "type_config=mixed_half", &c));
    CU_ASSERT_EQUAL(nnk_context_type_config(c), NNK_F16);
    CU_ASSERT_STRING_EQUAL(nnk_context_type_config_name(c), "mixed_half");
    CU_ASSERT_STRING_EQUAL(nnk_context_backend(c, 0), "cpu:mixed_half");
    CU_ASSERT_STRING_EQUAL(nnk_context_str(c), "backends=[cpu:mixed_half, cpu:float] device_id=0 type_config=mixed_half");
    nnk_context_free(c);
    FAILS(nnk_get_extension_context("cpu", "device_id=x", &c), NNK_EINVAL);
    MSG_HAS("device_id");
    MSG_HAS("context of extension 'cpu': ");
    FAILS(nnk_get_extension_context("cpu", "device_id", &c), NNK_EINVAL);
    FAILS(nnk_get_extension_context("cpu", "device_id=", &c), NNK_EINVAL);
    MSG_HAS("device_id");
    FAILS(nnk_get_extension_context("cpu", "=3", &c), NNK_EINVAL);
    FAILS(nnk_get_extension_context("cpu", "device_id=0 device_id=0", &c), NNK_EINVAL);
    MSG_HAS("twice");
}

/* ---- arrays -------------------------------------------------------------------- */

static void test_arrays(void)
{
    float data[24];
    for (int i = 0; i < 24; i++)
        data[i] = (float)i;
    int64_t shape[] = {2, 3, 4};
    nnk_array *a = host_f32(3, shape, data);
    CU_ASSERT_EQUAL(nnk_array_size(a), 24);
    CU_ASSERT_TRUE(nnk_array_is_contiguous(a));
    CU_ASSERT_EQUAL(nnk_array_strides(a)[0], 12);

    /* a[1, ::-1, 1:4:2] */
    nnk_slice s[3] = {{1, 2, 1}, {NNK_SLICE_NONE, NNK_SLICE_NONE, -1}, {1, 4, 2}};
    nnk_array *v;
    OK(nnk_array_slice(a, 3, s, &v));
    CU_ASSERT_EQUAL(nnk_array_shape(v)[0], 1);
    CU_ASSERT_EQUAL(nnk_array_shape(v)[1], 3);
    CU_ASSERT_EQUAL(nnk_array_shape(v)[2], 2);
    CU_ASSERT_FALSE(nnk_array_is_contiguous(v));
    float out[6];
    OK(nnk_array_to_host(v, NNK_F32, out, sizeof out));
    float want[6] = {21, 23, 17, 19, 13, 15};
    CU_ASSERT_EQUAL(memcmp(out, want, sizeof out), 0);
    /* negative start/stop, empty results */
    nnk_slice s2[1] = {{-1, -3, -1}};
    nnk_array *v2;
    OK(nnk_array_slice(a, 1, s2, &v2));
    CU_ASSERT_EQUAL(nnk_array_shape(v2)[0], 2);
    nnk_array_free(v2);
    nnk_slice s3[1] = {{5, 1, 1}};
    OK(nnk_array_slice(a, 1, s3, &v2));
    CU_ASSERT_EQUAL(nnk_array_shape(v2)[0], 0);
    nnk_array_free(v2);
    FAILS(nnk_array_slice(a, 4, s, &v2), NNK_ESHAPE);

    /* transpose, permute, reshape */
    nnk_array *t;
    OK(nnk_array_transpose(a, &t));
    CU_ASSERT_EQUAL(nnk_array_shape(t)[0], 4);
    CU_ASSERT_EQUAL(nnk_array_strides(t)[0], 1);
    int64_t flat[] = {24};
    nnk_array *r;
    FAILS(nnk_array_reshape(t, 1, flat, &r), NNK_ESHAPE);
    MSG_HAS("copy");
    int64_t sh2[] = {6, -1};
    OK(nnk_array_reshape(a, 2, sh2, &r));
    CU_ASSERT_EQUAL(nnk_array_shape(r)[1], 4);
    nnk_array_free(r);
    int64_t bad[] = {5, -1};
    FAILS(nnk_array_reshape(a, 2, bad, &r), NNK_ESHAPE);
    int32_t perm[] = {1, -1, 0};
    nnk_array *p;
    OK(nnk_array_permute(a, 3, perm, &p));
    CU_ASSERT_EQUAL(nnk_array_shape(p)[0], 3);
    CU_ASSERT_EQUAL(nnk_array_shape(p)[1], 4);
    CU_ASSERT_EQUAL(nnk_array_shape(p)[2], 2);
    /* a (3, 4, 2) permuted view reshaped to (3, 8) needs a copy; (3, 4, 2, 1) does not */
    int64_t sh3[] = {3, 8}, sh4[] = {3, 4, 2, 1};
    FAILS(nnk_array_reshape(p, 2, sh3, &r), NNK_ESHAPE);
    OK(nnk_array_reshape(p, 4, sh4, &r));
    nnk_array_free(r);
    int32_t dup[] = {0, 0, 1};
    FAILS(nnk_array_permute(a, 3, dup, &r), NNK_ESHAPE);
    MSG_HAS("repeated");
    nnk_array_free(p);

    /* broadcast_to and a copy out of the transposed view */
    int64_t col_shape[] = {3, 1};
    float col[] = {1, 2, 3};
    nnk_array *c = host_f32(2, col_shape, col), *b;
    int64_t bs[] = {2, 3, 5};
    OK(nnk_array_broadcast_to(c, 3, bs, &b));
    CU_ASSERT_EQUAL(nnk_array_strides(b)[0], 0);
    CU_ASSERT_EQUAL(nnk_array_strides(b)[2], 0);
    float bo[30];
    OK(nnk_array_to_host(b, NNK_F32, bo, sizeof bo));
    CU_ASSERT_EQUAL(bo[29], 3);
    CU_ASSERT_EQUAL(bo[5], 2);
    int64_t bs_bad[] = {2, 4, 5};
    FAILS(nnk_array_broadcast_to(c, 3, bs_bad, &r), NNK_ESHAPE);
    nnk_array *tc;
    OK(nnk_array_to(t, NULL, NNK_F64, &tc));
    CU_ASSERT_TRUE(nnk_array_is_contiguous(tc));
    double tco[24];
    OK(nnk_array_to_host(tc, NNK_F64, tco, sizeof tco));
    CU_ASSERT_EQUAL(tco[1], 12); /* t[0, 0, 1] = a[1, 0, 0] */
    CU_ASSERT_EQUAL(tco[2], 4);  /* t[0, 1, 0] = a[0, 1, 0] */
    FAILS(nnk_array_to_host(tc, NNK_F64, tco, 8), NNK_EINVAL);

    nnk_array_free(tc);
    nnk_array_free(b);
    nnk_array_free(c);
    nnk_array_free(t);
    nnk_array_free(v);
    nnk_array_free(a);

    int64_t neg[] = {-2};
    FAILS(nnk_array_new(NULL, NNK_F32, 1, neg, &a), NNK_ESHAPE);
    FAILS(nnk_array_new(NULL, (nnk_dtype)99, 1, shape, &a), NNK_EDTYPE);
    FAILS(nnk_array_new(NULL, NNK_F32, 17, shape, &a), NNK_ESHAPE);
    /* zero-size and zero-rank arrays */
    int64_t z[] = {0, 5};
    OK(nnk_array_zeros(NULL, NNK_F32, 2, z, &a));
    CU_ASSERT_EQUAL(nnk_array_size(a), 0);
    nnk_array_free(a);
    OK(nnk_array_zeros(NULL, NNK_I32, 0, NULL, &a));
    int32_t scalar = 7;
    OK(nnk_array_to_host(a, NNK_I32, &scalar, sizeof scalar));
    CU_ASSERT_EQUAL(scalar, 0);
    nnk_array_free(a);
}

static void test_conversions(void)
{
    /* f32 -> f16 rounds to nearest even: 1 + 2^-11 is a tie (-> 1), 1 + 3 * 2^-11 -> 1 + 2^-9 */
    float in[6] = {1.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, -0.0f, NAN};
    int64_t shape[] = {6};
    nnk_array *a = host_f32(1, shape, in), *h;
    OK(nnk_array_to(a, NULL, NNK_F16, &h));
    uint16_t bits[6];
    OK(nnk_array_to_host(h, NNK_F16, bits, sizeof bits));
    CU_ASSERT_EQUAL(bits[0], 0x3c00);
    CU_ASSERT_EQUAL(bits[1], 0x3c00);
    CU_ASSERT_EQUAL(bits[2], 0x3c02);
    CU_ASSERT_EQUAL(bits[3], 0x7c00); /* overflow to inf */
    CU_ASSERT_EQUAL(bits[4], 0x8000);
    CU_ASSERT_EQUAL(bits[5] & 0x7c00, 0x7c00);
    float back[6];
    OK(nnk_array_to_host(h, NNK_F32, back, sizeof back));
    CU_ASSERT_EQUAL(back[2], 1.0f + 0x1p-9f);
    uint16_t bf[6];
    OK(nnk_array_to_host(a, NNK_BF16, bf, sizeof bf));
    CU_ASSERT_EQUAL(bf[0], 0x3f80);
    /* float -> int truncates and saturates, NaN -> 0 (the generated code's casts) */
    float fi[4] = {2.7f, -2.7f, 1e10f, NAN};
    int64_t s4[] = {4};
    nnk_array *f = host_f32(1, s4, fi);
    int8_t i8[4];
    OK(nnk_array_to_host(f, NNK_I8, i8, sizeof i8));
    CU_ASSERT_EQUAL(i8[0], 2);
    CU_ASSERT_EQUAL(i8[1], -2);
    CU_ASSERT_EQUAL(i8[2], 127);
    CU_ASSERT_EQUAL(i8[3], 0);
    /* copy into a strided destination, broadcasting the source */
    int64_t ds[] = {2, 4};
    nnk_array *d, *dv;
    OK(nnk_array_zeros(NULL, NNK_F64, 2, ds, &d));
    nnk_slice sl[2] = {{NNK_SLICE_NONE, NNK_SLICE_NONE, 1}, {NNK_SLICE_NONE, NNK_SLICE_NONE, 2}};
    OK(nnk_array_slice(d, 2, sl, &dv));
    float row[2] = {5, 6};
    int64_t rs[] = {2};
    nnk_array *src = host_f32(1, rs, row);
    OK(nnk_array_copy(dv, src));
    double got[8];
    OK(nnk_array_to_host(d, NNK_F64, got, sizeof got));
    double exp8[8] = {5, 0, 6, 0, 5, 0, 6, 0};
    CU_ASSERT_EQUAL(memcmp(got, exp8, sizeof got), 0);
    int64_t bad[] = {3};
    nnk_array *src3;
    OK(nnk_array_zeros(NULL, NNK_F32, 1, bad, &src3));
    FAILS(nnk_array_copy(dv, src3), NNK_ESHAPE);
    nnk_array_free(src3);
    nnk_array_free(src);
    nnk_array_free(dv);
    nnk_array_free(d);
    nnk_array_free(f);
    nnk_array_free(h);
    nnk_array_free(a);

    /* wrapped memory */
    double mem[6] = {1, 2, 3, 4, 5, 6};
    int64_t ws[] = {3}, wst[] = {2};
    nnk_array *w;
    OK(nnk_array_wrap(NNK_F64, 1, ws, wst, mem, &w));
    CU_ASSERT_PTR_NULL(nnk_array_extension(w));
    double wo[3];
    OK(nnk_array_to_host(w, NNK_F64, wo, sizeof wo));
    CU_ASSERT_EQUAL(wo[2], 5);
    nnk_array_free(w);
}

/* ---- a test extension: host memory with a budget, and a device whose
 * memory the runtime must not touch (it copies through the copy hook) --- */

static size_t budget_used;
static const size_t budget = 4096;
static int fini_calls;

static nnk_status t_count(void *st, int32_t *n) { *n = 1; return NNK_OK; }
static nnk_status t_devices(void *st, nnk_device_info *out, int32_t cap)
{
    out[0].id = 0;
    snprintf(out[0].name, sizeof out[0].name, "test device");
    return NNK_OK;
}
static nnk_status t_sync(void *st, int32_t d) { return NNK_OK; }
/* Each block remembers its size in the 64 bytes before it. */
static nnk_status t_alloc(void *st, int32_t d, size_t bytes, void **p)
{
    if (budget_used + bytes > budget)
        return NNK_ENOMEM;
    char *b = aligned_alloc(64, bytes + 64);
    *(size_t *)b = bytes;
    *p = b + 64;
    budget_used += bytes;
    return NNK_OK;
}
static void t_free(void *st, int32_t d, void *p)
{
    char *b = (char *)p - 64;
    budget_used -= *(size_t *)b;
    free(b);
}
static nnk_status t_zero(void *st, int32_t d, void *p, size_t n) { memset(p, 0, n); return NNK_OK; }
static nnk_status t_copy(void *st, int32_t d, nnk_copy_kind k, void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
    return NNK_OK;
}
static const nnk_host_api *t_host;
static nnk_status t_init(const nnk_host_api *h, void **st) { t_host = h; *st = NULL; return NNK_OK; }
static void t_fini(void *st) { fini_calls++; }
static nnk_status t_load(void *st, int32_t d, const nnk_kernel_desc *desc, nnk_ext_kernel *k)
{
    k->desc = desc;
    k->handle = NULL;
    return NNK_OK;
}
static void t_kfree(void *st, nnk_ext_kernel *k) {}
static nnk_status t_launch(void *st, int32_t d, const nnk_ext_kernel *k, const nnk_plan *p)
{
    return t_host->run_host(k->desc, p);
}
static nnk_status t_context(void *st, nnk_context_spec *spec)
{
    for (int32_t i = 0; i < spec->nkw; i++)
        if (strcmp(spec->kw[i].key, "mode") != 0)
            return t_host->set_error(NNK_EINVAL, "devsim: unknown key '%s'", spec->kw[i].key);
    spec->nbackends = 2;
    strcpy(spec->backends[0], "devsim:float");
    strcpy(spec->backends[1], "cpu:float");
    return NNK_OK;
}

static const nnk_extension_ops budget_ops = {
    NNK_EXTENSION_ABI_VERSION, sizeof(nnk_extension_ops), "budget", "host memory with a 4 KiB budget",
    NNK_TARGET_NONE, NNK_EXT_HOST_MEMORY, t_init, t_fini, NULL, t_count, t_devices, t_sync, NULL,
    t_alloc, t_free, t_zero, t_copy, NULL, t_load, t_kfree, t_launch, NULL, NULL, NULL, NULL,
};

static const nnk_extension_ops devsim_ops = {
    NNK_EXTENSION_ABI_VERSION, sizeof(nnk_extension_ops), "devsim", "memory only reachable through copy()",
    NNK_TARGET_NONE, 0, t_init, t_fini, t_context, t_count, t_devices, t_sync, NULL,
    t_alloc, t_free, t_zero, t_copy, NULL, t_load, t_kfree, t_launch, NULL, NULL, NULL, NULL,
};

static void test_allocator(void)
{
    nnk_extension *cpu;
    OK(nnk_import_extension("cpu", &cpu));
    OK(nnk_extension_clear_memory_cache(cpu, NULL));
    nnk_memory_stats s0, s1;
    OK(nnk_extension_memory_stats(cpu, 0, &s0));
    int64_t shape[] = {1000};
    nnk_array *a, *b;
    OK(nnk_array_new(NULL, NNK_F32, 1, shape, &a));
    OK(nnk_extension_memory_stats(cpu, 0, &s1));
    CU_ASSERT_EQUAL(s1.misses, s0.misses + 1);
    CU_ASSERT_TRUE(s1.bytes_in_use >= s0.bytes_in_use + 4000);
    nnk_array_free(a);
    OK(nnk_array_new(NULL, NNK_F32, 1, shape, &b)); /* same size class: a hit */
    OK(nnk_extension_memory_stats(cpu, 0, &s1));
    CU_ASSERT_EQUAL(s1.hits, s0.hits + 1);
    nnk_array_free(b);
    OK(nnk_extension_memory_stats(cpu, 0, &s1));
    CU_ASSERT_TRUE(s1.bytes_cached > 0);
    uint64_t released;
    OK(nnk_extension_clear_memory_cache(cpu, &released));
    CU_ASSERT_TRUE(released >= 4000);
    OK(nnk_extension_memory_stats(cpu, 0, &s1));
    CU_ASSERT_EQUAL(s1.bytes_cached, 0);
    FAILS(nnk_extension_memory_stats(cpu, 1, &s1), NNK_EINVAL);
    int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 20};
    FAILS(nnk_array_new(NULL, NNK_F64, 2, huge, &a), NNK_ESHAPE); /* too many elements */
    FAILS(nnk_array_new(NULL, NNK_F64, 1, huge, &a), NNK_ENOMEM); /* 8 TiB */
    MSG_HAS("out of memory");

    /* an extension built against version 1's headers reads nnk_plan with
     * 8-byte scalars: refused with both versions, not launched */
    nnk_extension_ops old_abi = budget_ops;
    old_abi.abi_version = 1;
    old_abi.name = "oldabi";
    FAILS(nnk_register_extension(&old_abi), NNK_EABI);
    MSG_HAS("extension ABI version 1");

    /* a full device: the cache is flushed and the allocation retried once */
    nnk_status st = nnk_register_extension(&budget_ops);
    CU_ASSERT_TRUE(st == NNK_OK || st == NNK_EINVAL); /* registered by an earlier run of main */
    FAILS(nnk_register_extension(&budget_ops), NNK_EINVAL);
    MSG_HAS("already");
    nnk_context *ctx;
    OK(nnk_get_extension_context("budget", NULL, &ctx));
    CU_ASSERT_STRING_EQUAL(nnk_context_backend(ctx, 1), "cpu:float");
    nnk_extension *bx;
    OK(nnk_import_extension("budget", &bx));
    budget_used = 0;
    int64_t s2[] = {512}, s3[] = {768};
    OK(nnk_array_new(ctx, NNK_F32, 1, s2, &a)); /* 2048 bytes */
    nnk_array_free(a);                          /* cached */
    OK(nnk_array_new(ctx, NNK_F32, 1, s3, &a)); /* 3072: only fits after the flush */
    OK(nnk_extension_memory_stats(bx, 0, &s1));
    CU_ASSERT_EQUAL(s1.retries, 1);
    CU_ASSERT_EQUAL(s1.bytes_cached, 0);
    FAILS(nnk_array_new(ctx, NNK_F32, 1, s3, &b), NNK_ENOMEM);
    MSG_HAS("budget:0");
    nnk_array_free(a);
    OK(nnk_extension_clear_memory_cache(bx, NULL));
    nnk_context_free(ctx);
}

/* ---- launches of hand-written descriptors ------------------------------------------ */

static void test_abi_saxpy(void)
{
    nnk_kernel *k;
    OK(nnk_kernel_from_desc(NULL, &abi_saxpy, &k));
    CU_ASSERT_EQUAL(nnk_kernel_input_count(k), 3);
    CU_ASSERT_EQUAL(nnk_kernel_output_count(k), 1);
    CU_ASSERT_FALSE(nnk_kernel_is_reduction(k));
    float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {10, 20, 30};
    int64_t xs[] = {2, 3}, ys[] = {3};
    nnk_array *ax = host_f32(2, xs, x), *ay = host_f32(1, ys, y), *z;
    nnk_args *a;
    OK(nnk_args_new(&a));
    /* a omitted: its default 2; y broadcasts; z allocated */
    OK(nnk_args_named_array(a, "x", ax));
    OK(nnk_args_named_array(a, "y", ay));
    OK(nnk_launch(k, a));
    CU_ASSERT_EQUAL(nnk_args_output_count(a), 1);
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_EQUAL(nnk_array_ndim(z), 2);
    float zo[6];
    OK(nnk_array_to_host(z, NNK_F32, zo, sizeof zo));
    CU_ASSERT_EQUAL(zo[0], 12);
    CU_ASSERT_EQUAL(zo[5], 42);
    /* positional, with a, into a given strided output (the transpose of a 3x2) */
    nnk_array *zt, *ztv;
    int64_t ts[] = {3, 2};
    OK(nnk_array_zeros(NULL, NNK_F32, 2, ts, &zt));
    OK(nnk_array_transpose(zt, &ztv));
    nnk_args_reset(a);
    OK(nnk_args_f64(a, 0.5));
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_args_out(a, ztv));
    OK(nnk_launch(k, a));
    OK(nnk_array_to_host(zt, NNK_F32, zo, sizeof zo));
    CU_ASSERT_EQUAL(zo[1], 12);   /* zt[0, 1] = z[1, 0] = 0.5 * 4 + 10 */
    CU_ASSERT_EQUAL(zo[5], 33);   /* zt[2, 1] = 0.5 * 6 + 30 */

    /* wrong calls: each a status and a message */
    nnk_args_reset(a);
    OK(nnk_args_f64(a, 1));
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_args_array(a, ay));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("takes 3 inputs but 4 were given");
    /* the count is of every positional argument, not the first extra one */
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("takes 3 inputs but 6 were given");
    nnk_args_reset(a);
    OK(nnk_args_f64(a, 1));
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_args_out(a, ax));
    OK(nnk_args_out(a, ax));
    OK(nnk_args_out(a, ay));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("has 1 output but 3 were given");
    nnk_args_reset(a);
    OK(nnk_args_array(a, ax));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("scalar");
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", ax));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("missing argument 'y'");
    nnk_args_reset(a);
    OK(nnk_args_named_f64(a, "alpha", 1));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("no parameter 'alpha'");
    MSG_HAS("a, x, y, z");
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", ax));
    OK(nnk_args_named_array(a, "x", ax));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("twice");
    int64_t bs[] = {4};
    nnk_array *bad;
    OK(nnk_array_zeros(NULL, NNK_F32, 1, bs, &bad));
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", ax));
    OK(nnk_args_named_array(a, "y", bad));
    FAILS(nnk_launch(k, a), NNK_ESHAPE);
    MSG_HAS("broadcast");
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", ax));
    OK(nnk_args_named_array(a, "y", ay));
    OK(nnk_args_out(a, bad));
    FAILS(nnk_launch(k, a), NNK_ESHAPE);
    MSG_HAS("output");
    nnk_array_free(bad);
    OK(nnk_array_zeros(NULL, NNK_F64, 1, ys, &bad));
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", ax));
    OK(nnk_args_named_array(a, "y", bad));
    FAILS(nnk_launch(k, a), NNK_EDTYPE);
    MSG_HAS("f64");
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", ax));
    OK(nnk_args_named_array(a, "y", ay));
    int32_t ax0 = 0;
    OK(nnk_args_axes(a, 1, &ax0));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("elementwise");
    FAILS(nnk_args_output(a, 0, &z), NNK_EINVAL); /* a failed launch has no outputs */
    nnk_array_free(z);
    nnk_array_free(bad);
    nnk_array_free(ztv);
    nnk_array_free(zt);
    nnk_array_free(ax);
    nnk_array_free(ay);
    nnk_args_free(a);
    nnk_kernel_free(k);

    nnk_kernel_desc broken = abi_saxpy;
    broken.abi = 99;
    FAILS(nnk_kernel_from_desc(NULL, &broken, &k), NNK_EABI);
    broken = abi_saxpy;
    broken.run = NULL;
    FAILS(nnk_kernel_from_desc(NULL, &broken, &k), NNK_EINVAL);
}

/* sum over a (rows, cols) array of integers (exact in f64) along `axis`. */
static void check_sum(int64_t rows, int64_t cols, int axis, int keepdims)
{
    nnk_kernel *k;
    OK(nnk_kernel_from_desc(NULL, &abi_sum, &k));
    int64_t shape[] = {rows, cols};
    double *x = malloc(sizeof(double) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = (double)(i % 7) - 3;
    nnk_array *ax, *r;
    OK(nnk_array_from_host(NULL, NNK_F64, 2, shape, x, &ax));
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    if (axis >= -2) {
        int32_t axes[1] = {axis};
        OK(nnk_args_axes(a, 1, axes));
    }
    OK(nnk_args_keepdims(a, keepdims));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &r));
    int64_t nout = axis < -2 ? 1 : (axis == 0 || axis == -2) ? cols : rows;
    CU_ASSERT_EQUAL(nnk_array_size(r), nout);
    CU_ASSERT_EQUAL(nnk_array_ndim(r), keepdims ? 2 : axis < -2 ? 0 : 1);
    double *got = malloc(sizeof(double) * (size_t)nout);
    OK(nnk_array_to_host(r, NNK_F64, got, sizeof(double) * (size_t)nout));
    for (int64_t o = 0; o < nout; o++) {
        double want = 0;
        for (int64_t i = 0; i < rows * cols; i++) {
            int64_t rr = i / cols, cc = i % cols;
            if (axis < -2 || ((axis == 0 || axis == -2) ? cc == o : rr == o))
                want += x[i];
        }
        if (got[o] != want) {
            CU_FAIL("wrong sum");
            break;
        }
    }
    free(got);
    free(x);
    nnk_array_free(r);
    nnk_array_free(ax);
    nnk_args_free(a);
    nnk_kernel_free(k);
}

static void test_abi_reductions(void)
{
    check_sum(3, 5, -3, 0);         /* everything, inline */
    check_sum(2, 200001, 1, 0);     /* few outputs: the reduced range is split */
    check_sum(1, 300000, -3, 1);
    check_sum(4000, 20, 1, 1);      /* many outputs: split by position */
    check_sum(20, 5000, 0, 0);      /* strided reduction axis */
    check_sum(0, 4, 1, 0);          /* no outputs */
    check_sum(3, 0, 1, 0);          /* empty slices: sum 0 */

    /* center: phase + tensor epilogue over a split range */
    nnk_kernel *k;
    OK(nnk_kernel_from_desc(NULL, &abi_center, &k));
    int64_t n = 100003, shape[] = {n};
    double *x = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (double)(i % 5);
    nnk_array *ax, *y, *m;
    OK(nnk_array_from_host(NULL, NNK_F64, 1, shape, x, &ax));
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    OK(nnk_args_output(a, 1, &m));
    double mean;
    OK(nnk_array_to_host(m, NNK_F64, &mean, sizeof mean));
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += x[i];
    CU_ASSERT_DOUBLE_EQUAL(mean, sum / (double)n, 1e-12);
    OK(nnk_array_to_host(y, NNK_F64, x, sizeof(double) * (size_t)n));
    CU_ASSERT_DOUBLE_EQUAL(x[n - 1], (double)((n - 1) % 5) - mean, 1e-12);
    nnk_array_free(y);
    nnk_array_free(m);
    int32_t bad_axis = 3;
    OK(nnk_args_axes(a, 1, &bad_axis));
    FAILS(nnk_launch(k, a), NNK_ESHAPE);
    MSG_HAS("axis 3");
    int32_t twice[2] = {0, -1};
    OK(nnk_args_axes(a, 2, twice));
    FAILS(nnk_launch(k, a), NNK_ESHAPE);
    MSG_HAS("repeated");
    nnk_args_free(a);
    nnk_array_free(ax);
    nnk_kernel_free(k);
    free(x);

    /* argmax of an empty slice is an error, of a non-empty one fine */
    OK(nnk_kernel_from_desc(NULL, &abi_argmax, &k));
    int64_t es[] = {3, 0};
    OK(nnk_array_zeros(NULL, NNK_F64, 2, es, &ax));
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    int32_t ax1 = 1;
    OK(nnk_args_axes(a, 1, &ax1));
    FAILS(nnk_launch(k, a), NNK_ESHAPE);
    MSG_HAS("empty");
    nnk_array_free(ax);
    double v[4] = {1, 9, 3, 9};
    int64_t vs[] = {4};
    OK(nnk_array_from_host(NULL, NNK_F64, 1, vs, v, &ax));
    nnk_args_reset(a);
    OK(nnk_args_array(a, ax));
    OK(nnk_launch(k, a));
    nnk_array *idx;
    OK(nnk_args_output(a, 0, &idx));
    int64_t i;
    OK(nnk_array_to_host(idx, NNK_I64, &i, sizeof i));
    CU_ASSERT_EQUAL(i, 1);
    nnk_array_free(idx);
    nnk_array_free(ax);
    nnk_args_free(a);
    nnk_kernel_free(k);
}

/* Backend selection: a device extension's arrays run there; host arrays
 * with a context that lists the device first fall back to cpu. */
static void test_backends(void)
{
    nnk_status st = nnk_register_extension(&devsim_ops);
    CU_ASSERT_TRUE(st == NNK_OK || st == NNK_EINVAL);
    nnk_context *ctx;
    FAILS(nnk_get_extension_context("devsim", "speed=3", &ctx), NNK_EINVAL);
    MSG_HAS("speed");
    OK(nnk_get_extension_context("devsim", "mode=fast", &ctx));
    CU_ASSERT_STRING_EQUAL(nnk_context_backend(ctx, 0), "devsim:float");
    budget_used = 0;
    float x[3] = {1, 2, 3}, y[3] = {1, 1, 1};
    int64_t s[] = {3};
    nnk_array *dx, *dy, *z, *hx = host_f32(1, s, x), *hy = host_f32(1, s, y);
    OK(nnk_array_from_host(ctx, NNK_F32, 1, s, x, &dx)); /* through copy() */
    OK(nnk_array_from_host(ctx, NNK_F32, 1, s, y, &dy));
    CU_ASSERT_STRING_EQUAL(nnk_extension_name(nnk_array_extension(dx)), "devsim");
    nnk_kernel *k;
    OK(nnk_kernel_from_desc(ctx, &abi_saxpy, &k));
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_named_array(a, "x", dx));
    OK(nnk_args_named_array(a, "y", dy));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_STRING_EQUAL(nnk_extension_name(nnk_array_extension(z)), "devsim");
    float zo[3];
    OK(nnk_array_to_host(z, NNK_F32, zo, sizeof zo));
    CU_ASSERT_EQUAL(zo[2], 7);
    nnk_array_free(z);
    /* a strided device view copied out through the staging buffer */
    nnk_slice rev = {NNK_SLICE_NONE, NNK_SLICE_NONE, -1};
    nnk_array *dr;
    OK(nnk_array_slice(dx, 1, &rev, &dr));
    OK(nnk_array_to_host(dr, NNK_F32, zo, sizeof zo));
    CU_ASSERT_EQUAL(zo[0], 3);
    OK(nnk_array_copy(dr, hy)); /* host -> strided device view */
    OK(nnk_array_to_host(dx, NNK_F32, zo, sizeof zo));
    CU_ASSERT_EQUAL(zo[0], 1);
    nnk_array_free(dr);
    /* host arrays: devsim cannot reach them, cpu runs */
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", hx));
    OK(nnk_args_named_array(a, "y", hy));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_STRING_EQUAL(nnk_extension_name(nnk_array_extension(z)), "cpu");
    nnk_array_free(z);
    /* mixed: no backend reaches both */
    nnk_args_reset(a);
    OK(nnk_args_named_array(a, "x", dx));
    OK(nnk_args_named_array(a, "y", hy));
    FAILS(nnk_launch(k, a), NNK_EUNSUPPORTED);
    MSG_HAS("no backend");
    nnk_args_free(a);
    nnk_kernel_free(k);
    nnk_array_free(dx);
    nnk_array_free(dy);
    nnk_array_free(hx);
    nnk_array_free(hy);
    nnk_context_free(ctx);
}

/* ---- the CPU JIT --------------------------------------------------------------------------- */

static char *abi_source(const char *body)
{
    char path[512];
    snprintf(path, sizeof path, "%s/runtime/include/nnk/abi.h", NNK_TEST_SRCDIR);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *src = malloc(n + strlen(body) + 1);
    strcpy(src, buf);
    strcat(src, body);
    return src;
}

static const char neg_body[] =
    "static void neg_run(const nnk_plan *p, int64_t b, int64_t e)\n"
    "{ /* contiguous 1-d only */\n"
    "    for (int64_t i = b; i < e; i++)\n"
    "        ((double *)p->data[1])[i * p->strides[1][0]] = -((const double *)p->data[0])[i * p->strides[0][0]];\n"
    "}\n"
    "static const nnk_param_desc neg_params[] = {{\"x\", NNK_F64, NNK_PARAM_TENSOR, {0}},\n"
    "    {\"y\", NNK_F64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}}};\n"
    "const nnk_kernel_desc neg_desc = {NNK_ABI_VERSION, NNK_KIND_ELEMENTWISE, \"neg\", \"neg\", 1, 1, neg_params,\n"
    "    0, 0, neg_run, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};\n";

static int run_neg(const char *salt, nnk_status *status)
{
    char body[sizeof neg_body + 64];
    snprintf(body, sizeof body, "/* %s */\n%s", salt, neg_body);
    char *src = abi_source(body);
    nnk_kernel *k;
    *status = nnk_kernel_from_source(NULL, src, "neg_desc", &k);
    free(src);
    if (*status)
        return 0;
    double x[3] = {1, -2, 3}, y[3];
    int64_t s[] = {3};
    nnk_array *ax, *ay;
    nnk_args *a;
    int ok = nnk_array_from_host(NULL, NNK_F64, 1, s, x, &ax) == NNK_OK;
    ok &= nnk_args_new(&a) == NNK_OK;
    ok &= nnk_args_array(a, ax) == NNK_OK && (*status = nnk_launch(k, a)) == NNK_OK;
    ok &= nnk_args_output(a, 0, &ay) == NNK_OK;
    ok &= nnk_array_to_host(ay, NNK_F64, y, sizeof y) == NNK_OK;
    ok &= y[0] == -1 && y[1] == 2 && y[2] == -3;
    nnk_array_free(ay);
    nnk_array_free(ax);
    nnk_args_free(a);
    nnk_kernel_free(k);
    return ok;
}

static void test_jit_caches(void)
{
    fresh_cache("jit");
    nnk_jit_stats s0, s1;
    nnk_jit_get_stats(&s0);
    nnk_status st;
    CU_ASSERT_TRUE(run_neg("caches", &st));
    nnk_jit_get_stats(&s1);
    CU_ASSERT_EQUAL(s1.compiles, s0.compiles + 1);
    CU_ASSERT_TRUE(run_neg("caches", &st)); /* memory */
    nnk_jit_get_stats(&s0);
    CU_ASSERT_EQUAL(s0.memory_hits, s1.memory_hits + 1);
    nnk_jit_clear_memory_cache();
    CU_ASSERT_TRUE(run_neg("caches", &st)); /* disk */
    nnk_jit_get_stats(&s1);
    CU_ASSERT_EQUAL(s1.disk_hits, s0.disk_hits + 1);
    CU_ASSERT_EQUAL(s1.compiles, s0.compiles);

    /* corrupt every entry: detected, recompiled */
    nnk_jit_clear_memory_cache();
    run_cmd("for f in '%s'/*.so; do printf garbage >> \"$f\"; done", getenv("NNK_CACHE_DIR"));
    CU_ASSERT_TRUE(run_neg("caches", &st));
    nnk_jit_get_stats(&s0);
    CU_ASSERT_EQUAL(s0.corrupt_entries, s1.corrupt_entries + 1);
    CU_ASSERT_EQUAL(s0.compiles, s1.compiles + 1);
    /* truncated entry */
    nnk_jit_clear_memory_cache();
    run_cmd("for f in '%s'/*.so; do head -c 100 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done", getenv("NNK_CACHE_DIR"));
    CU_ASSERT_TRUE(run_neg("caches", &st));
    nnk_jit_get_stats(&s1);
    CU_ASSERT_EQUAL(s1.corrupt_entries, s0.corrupt_entries + 1);

    /* a read-only cache directory (skipped as root, who writes anyway) and NNK_CACHE=0 */
    fresh_cache("ro");
    run_cmd("mkdir -p '%s' && chmod 555 \"$NNK_CACHE_DIR\"", getenv("NNK_CACHE_DIR"));
    CU_ASSERT_TRUE(run_neg("read-only", &st));
    run_cmd("chmod 755 '%s'", getenv("NNK_CACHE_DIR"));
    setenv("NNK_CACHE", "0", 1);
    fresh_cache("off");
    CU_ASSERT_TRUE(run_neg("off", &st));
    struct stat sb;
    CU_ASSERT_NOT_EQUAL(stat(getenv("NNK_CACHE_DIR"), &sb), 0); /* never created */
    unsetenv("NNK_CACHE");
    setenv("NNK_CACHE_DIR", "/proc/nnk-cannot-exist", 1); /* uncreatable: temp files */
    CU_ASSERT_TRUE(run_neg("uncreatable", &st));
    fresh_cache("jit");
}

static void test_jit_errors(void)
{
    fresh_cache("errors");
    nnk_status st;
    setenv("NNK_CC", "/nonexistent/cc", 1);
    CU_ASSERT_FALSE(run_neg("missing compiler", &st));
    CU_ASSERT_EQUAL(st, NNK_ECOMPILE);
    MSG_HAS("/nonexistent/cc");
    unsetenv("NNK_CC");
    nnk_kernel *k;
    char *src = abi_source("this is not C;\n");
    FAILS(nnk_kernel_from_source(NULL, src, "neg_desc", &k), NNK_ECOMPILE);
    MSG_HAS("error");
    free(src);
    src = abi_source(neg_body);
    FAILS(nnk_kernel_from_source(NULL, src, "other_desc", &k), NNK_ECOMPILE);
    MSG_HAS("other_desc");
    free(src);
}

/* One launch of parts_src's kernel k on n elements into y (a fresh memory
 * cache and disk cache, so the JIT compiles). */
static const char parts_src[] =
    "elementwise f(a: f32[], b: f32[]) -> (y: f32[]) { y = exp(a) * sin(b) + sqrt(a * b); }\n"
    "reduction sm(a: f32[], b: f32[]) -> (y: f32[]) { let m = max(a * b); let s = sum(exp(a * b - m)); "
    "y = exp(a * b - m) / s; }\n";
static nnk_status parts_run(const char *cache, const char *name, float *y, int64_t n)
{
    fresh_cache(cache);
    nnk_jit_clear_memory_cache();
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)(i % 97) * 0.03125f + 0.5f;
        b[i] = (float)((i * 7919) % 1003) * (i % 5 ? 0.01f : 977.0f); /* some sin arguments out of the fast range */
    }
    int64_t s[] = {n};
    nnk_module *m = NULL;
    nnk_kernel *k;
    nnk_args *args = NULL;
    nnk_array *aa = host_f32(1, s, a), *ab = host_f32(1, s, b), *ay = NULL;
    nnk_status st = nnk_module_compile(NULL, parts_src, NULL, &m);
    if (!st)
        st = nnk_module_kernel(m, name, &k);
    if (!st)
        st = nnk_args_new(&args);
    if (!st)
        st = nnk_args_array(args, aa);
    if (!st)
        st = nnk_args_array(args, ab);
    if (!st)
        st = nnk_launch(k, args);
    if (!st)
        st = nnk_args_output(args, 0, &ay);
    if (!st)
        st = nnk_array_to_host(ay, NNK_F32, y, sizeof(float) * (size_t)n);
    nnk_array_free(ay);
    nnk_array_free(aa);
    nnk_array_free(ab);
    nnk_args_free(args);
    nnk_module_free(m);
    free(a);
    free(b);
    return st;
}

/* The lines of the compiler log holding `what`. */
static int log_count(const char *log, const char *what)
{
    FILE *f = fopen(log, "r");
    int n = 0;
    char line[8192];
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* NNK_JIT_JOBS=2: a module's instance compiles as two parts side by side
 * (NNK_SPLIT, linked into one object); 1: whole.  Both give the same bits;
 * a source of nnk_kernel_from_source compiles whole; a part the compiler
 * refuses fails the compile with the compiler's output. */
static void test_jit_parts(void)
{
    char cc[512], log[512], cmd[2048];
    snprintf(cc, sizeof cc, "%s/cc-log.sh", tmpdir);
    snprintf(log, sizeof log, "%s/cc.log", tmpdir);
    const char *real = getenv("NNK_CC") && *getenv("NNK_CC") ? getenv("NNK_CC") : NNK_DEFAULT_CC;
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && printf '#!/bin/sh\\necho \"$*\" >> %s\\n"
             "case \" $* \" in *\" -DNNK_PART=2 \"*) if [ -n \"$NNK_TEST_FAIL_PART\" ]; then echo part 2 refused >&2; "
             "exit 1; fi;; esac\\nexec %s \"$@\"\\n' > %s && chmod +x %s",
             tmpdir, log, real, cc, cc);
    CU_ASSERT_EQUAL(system(cmd), 0);
    char *old_cc = getenv("NNK_CC") ? strdup(getenv("NNK_CC")) : NULL;
    setenv("NNK_CC", cc, 1);
    /* the compiled objects' bits, and a failed compile at the first launch:
     * without the first-call evaluator (docs/runtime.md, "The first call") */
    setenv("NNK_JIT_EVAL", "0", 1);
    enum { N = 5000 };
    static float whole[2][N], split[2][N];
    const char *names[2] = {"f", "sm"};
    for (int i = 0; i < 2; i++) {
        unlink(log);
        setenv("NNK_JIT_JOBS", "1", 1);
        OK(parts_run("parts1", names[i], whole[i], N));
        CU_ASSERT_EQUAL(log_count(log, "-DNNK_SPLIT"), 0);
        unlink(log);
        setenv("NNK_JIT_JOBS", "2", 1);
        OK(parts_run("parts2", names[i], split[i], N));
        CU_ASSERT_EQUAL(log_count(log, "-DNNK_SPLIT -DNNK_PART=1 "), 1);
        CU_ASSERT_EQUAL(log_count(log, "-DNNK_SPLIT -DNNK_PART=2 "), 1);
        CU_ASSERT_EQUAL(log_count(log, "k1.o"), 2); /* written, then linked */
        CU_ASSERT_EQUAL(memcmp(whole[i], split[i], sizeof whole[i]), 0);
    }
    /* host flags without AVX2 (the clones): part 1 is the whole file,
     * part 2 empty; the portable flags (NNK_JIT_NATIVE=0): whole.  (The
     * host flags are probed once per process and command: other names.) */
    snprintf(cmd, sizeof cmd, "ln -sf cc-log.sh '%s/cc-log2.sh' && ln -sf cc-log.sh '%s/cc-log3.sh'", tmpdir, tmpdir);
    CU_ASSERT_EQUAL(system(cmd), 0);
    snprintf(cc, sizeof cc, "%s/cc-log2.sh", tmpdir);
    setenv("NNK_CC", cc, 1);
#if defined(__x86_64__)
    char *old_march = getenv("NNK_JIT_MARCH") ? strdup(getenv("NNK_JIT_MARCH")) : NULL;
    setenv("NNK_JIT_MARCH", "x86-64", 1);
    unlink(log);
    OK(parts_run("parts5", "f", split[0], N));
    CU_ASSERT_EQUAL(log_count(log, "-march=x86-64 -fvect-cost-model=dynamic -DNNK_SPLIT -DNNK_PART=2 "), 1);
    CU_ASSERT_EQUAL(memcmp(whole[0], split[0], sizeof whole[0]), 0);
    if (old_march) /* (valgrind.sh sets it) */
        setenv("NNK_JIT_MARCH", old_march, 1);
    else
        unsetenv("NNK_JIT_MARCH");
    free(old_march);
#endif
    snprintf(cc, sizeof cc, "%s/cc-log3.sh", tmpdir);
    setenv("NNK_CC", cc, 1);
    setenv("NNK_JIT_NATIVE", "0", 1);
    unlink(log);
    OK(parts_run("parts6", "f", split[0], N));
    CU_ASSERT_EQUAL(log_count(log, "-DNNK_SPLIT"), 0);
    CU_ASSERT_EQUAL(memcmp(whole[0], split[0], sizeof whole[0]), 0);
    unsetenv("NNK_JIT_NATIVE");
    snprintf(cc, sizeof cc, "%s/cc-log.sh", tmpdir);
    setenv("NNK_CC", cc, 1);
    /* not nnkc's C: whole */
    unlink(log);
    nnk_status st;
    fresh_cache("parts3");
    CU_ASSERT_TRUE(run_neg("parts", &st));
    CU_ASSERT_EQUAL(log_count(log, "-DNNK_SPLIT"), 0);
    CU_ASSERT_EQUAL(log_count(log, "-shared"), 1);
    /* a part refused */
    setenv("NNK_TEST_FAIL_PART", "1", 1);
    FAILS(parts_run("parts4", "f", split[0], N), NNK_ECOMPILE);
    MSG_HAS("part 2 refused");
    unsetenv("NNK_TEST_FAIL_PART");
    unsetenv("NNK_JIT_EVAL");
    unsetenv("NNK_JIT_JOBS");
    if (old_cc)
        setenv("NNK_CC", old_cc, 1);
    else
        unsetenv("NNK_CC");
    free(old_cc);
    nnk_jit_clear_memory_cache();
}

/* 8 processes compile the same kernel into one empty cache at once. */
static void test_fork_compile(void)
{
    fresh_cache("fork");
    pid_t pids[8];
    for (int i = 0; i < 8; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            nnk_status st;
            int ok = run_neg("fork", &st);
            nnk_shutdown();
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < 8; i++) {
        int status = -1;
        waitpid(pids[i], &status, 0);
        CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    nnk_status st;
    nnk_jit_stats s0, s1;
    nnk_jit_get_stats(&s0);
    CU_ASSERT_TRUE(run_neg("fork", &st)); /* a whole entry is there */
    nnk_jit_get_stats(&s1);
    CU_ASSERT_EQUAL(s1.compiles, s0.compiles);
    CU_ASSERT_EQUAL(s1.disk_hits, s0.disk_hits + 1);
}

/* 8 threads launch at once; every other one makes a mistake and must get
 * its own message. */
static nnk_kernel *shared_saxpy;

static void *launcher(void *arg)
{
    intptr_t id = (intptr_t)arg;
    int ok = 1;
    for (int it = 0; it < 50 && ok; it++) {
        int64_t n = id % 2 ? 100 : 70000, s[] = {n};
        nnk_array *x, *y, *z;
        nnk_args *a;
        ok &= nnk_array_zeros(NULL, NNK_F32, 1, s, &x) == NNK_OK;
        ok &= nnk_array_zeros(NULL, NNK_F32, 1, s, &y) == NNK_OK;
        ok &= nnk_args_new(&a) == NNK_OK;
        ok &= nnk_args_f64(a, (double)id) == NNK_OK;
        ok &= nnk_args_array(a, x) == NNK_OK;
        if (id % 4 == 3) {
            ok &= nnk_launch(shared_saxpy, a) == NNK_EINVAL;
            ok &= strstr(nnk_last_error(), "missing argument 'y'") != NULL;
        } else {
            ok &= nnk_args_array(a, y) == NNK_OK;
            ok &= nnk_launch(shared_saxpy, a) == NNK_OK;
            ok &= nnk_args_output(a, 0, &z) == NNK_OK;
            float last = -1;
            nnk_slice sl = {-1, NNK_SLICE_NONE, 1};
            nnk_array *zl;
            ok &= nnk_array_slice(z, 1, &sl, &zl) == NNK_OK;
            ok &= nnk_array_to_host(zl, NNK_F32, &last, sizeof last) == NNK_OK && last == 0;
            nnk_array_free(zl);
            nnk_array_free(z);
        }
        nnk_args_free(a);
        nnk_array_free(x);
        nnk_array_free(y);
    }
    return (void *)(intptr_t)ok;
}

static void test_threads(void)
{
    OK(nnk_kernel_from_desc(NULL, &abi_saxpy, &shared_saxpy));
    pthread_t t[8];
    for (intptr_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, launcher, (void *)i);
    for (int i = 0; i < 8; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        CU_ASSERT_TRUE((intptr_t)ok);
    }
    nnk_kernel_free(shared_saxpy);
}

/* ---- modules and jit functions (libnnkc in-process) ------------------------------------------ */

static const char module_src[] =
    "elementwise saxpy(a: f32, x: f32[], y: f32[]) -> (z: f32[]) { z = a * x + y; }\n"
    "elementwise scale<T: float>(x: T[], s: T = 3) -> (y: T[]) { y = s * x; }\n"
    "elementwise fill<T: float>(v: f32) -> (y: T[]) { y = v; }\n"
    "reduction l2norm<T: float>(x: T[]) -> (r: T) { r = sqrt(sum(x * x)); }\n"
    "reduction softmax<T: float>(x: T[]) -> (y: T[]) { let m = max(x); let s = sum(exp(x - m)); y = exp(x - m) / s; }\n"
    "reduction amax(x: f64[]) -> (i: i64) { i = argmax(x); }\n";

static void test_module(void)
{
    fresh_cache("module");
    nnk_module *m;
    FAILS(nnk_module_compile(NULL, "elementwise f(x: f32[]) -> (y: f32[]) { y = x + undefined_name; }", NULL, &m),
          NNK_ECOMPILE);
    MSG_HAS("undefined_name");
    MSG_HAS("error");
    FAILS(nnk_module_compile(NULL, module_src, "opt_level=9", &m), NNK_EINVAL);
    MSG_HAS("opt_level");
    FAILS(nnk_module_compile(NULL, module_src, "optimise=1", &m), NNK_EINVAL);
    MSG_HAS("optimise");
    OK(nnk_module_compile(NULL, module_src, "opt_level=1 name=test.nnk", &m));
    CU_ASSERT_EQUAL(nnk_module_kernel_count(m), 6);
    CU_ASSERT_STRING_EQUAL(nnk_module_kernel_name(m, 0), "saxpy");
    nnk_kernel *k;
    FAILS(nnk_module_kernel(m, "saxpi", &k), NNK_ENOTFOUND);
    MSG_HAS("saxpy");

    /* generic scale on f32 and f16 arrays: two instances */
    OK(nnk_module_kernel(m, "scale", &k));
    float x[4] = {1, 2, 3, 4};
    int64_t s[] = {2, 2};
    nnk_array *ax = host_f32(2, s, x), *ah, *y;
    OK(nnk_array_to(ax, NULL, NNK_F16, &ah));
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    CU_ASSERT_EQUAL(nnk_array_dtype(y), NNK_F32);
    float yo[4];
    OK(nnk_array_to_host(y, NNK_F32, yo, sizeof yo));
    CU_ASSERT_EQUAL(yo[3], 12);
    nnk_array_free(y);
    nnk_args_reset(a);
    OK(nnk_args_array(a, ah));
    OK(nnk_args_named_f64(a, "s", 0.5));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    CU_ASSERT_EQUAL(nnk_array_dtype(y), NNK_F16);
    OK(nnk_array_to_host(y, NNK_F32, yo, sizeof yo));
    CU_ASSERT_EQUAL(yo[3], 2);
    nnk_array_free(y);
    /* an i32 array for T: float is a class error */
    nnk_array *ai;
    OK(nnk_array_to(ax, NULL, NNK_I32, &ai));
    nnk_args_reset(a);
    OK(nnk_args_array(a, ai));
    FAILS(nnk_launch(k, a), NNK_EDTYPE);
    MSG_HAS("must be float");
    MSG_HAS("i32");
    /* saxpy reading f16 and i32 arrays for its f32 parameters (one instance, other storage) */
    OK(nnk_module_kernel(m, "saxpy", &k));
    nnk_args_reset(a);
    OK(nnk_args_f64(a, 2));
    OK(nnk_args_array(a, ah));
    OK(nnk_args_array(a, ai));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    CU_ASSERT_EQUAL(nnk_array_dtype(y), NNK_F32);
    OK(nnk_array_to_host(y, NNK_F32, yo, sizeof yo));
    CU_ASSERT_EQUAL(yo[0], 3);
    CU_ASSERT_EQUAL(yo[3], 12);
    nnk_array_free(y);

    /* an output-only type variable: the given output's dtype, else type_config */
    OK(nnk_module_kernel(m, "fill", &k));
    nnk_args_reset(a);
    OK(nnk_args_f64(a, 1.5));
    OK(nnk_args_out(a, ah));
    OK(nnk_launch(k, a));
    OK(nnk_array_to_host(ah, NNK_F32, yo, sizeof yo));
    CU_ASSERT_EQUAL(yo[2], 1.5f);
    nnk_args_reset(a);
    OK(nnk_args_f64(a, 1.5));
    FAILS(nnk_launch(k, a), NNK_EINVAL);
    MSG_HAS("no array input");

    /* reductions: axes, keepdims, a multi-phase kernel, argmax */
    OK(nnk_module_kernel(m, "l2norm", &k));
    nnk_args_reset(a);
    OK(nnk_args_array(a, ax));
    int32_t ax1 = -1;
    OK(nnk_args_axes(a, 1, &ax1));
    OK(nnk_args_keepdims(a, 1));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    CU_ASSERT_EQUAL(nnk_array_ndim(y), 2);
    CU_ASSERT_EQUAL(nnk_array_shape(y)[1], 1);
    OK(nnk_array_to_host(y, NNK_F32, yo, 2 * sizeof(float)));
    CU_ASSERT_DOUBLE_EQUAL(yo[0], sqrt(5.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(yo[1], 5.0, 1e-6);
    nnk_array_free(y);
    OK(nnk_module_kernel(m, "softmax", &k));
    nnk_args_reset(a);
    OK(nnk_args_array(a, ax));
    OK(nnk_args_axes(a, 1, &ax1));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    OK(nnk_array_to_host(y, NNK_F32, yo, sizeof yo));
    CU_ASSERT_DOUBLE_EQUAL(yo[0] + yo[1], 1.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(yo[1], 1 / (1 + exp(-1.0)), 1e-6);
    nnk_array_free(y);
    OK(nnk_module_kernel(m, "amax", &k));
    int64_t es[] = {2, 0};
    nnk_array *e;
    OK(nnk_array_zeros(NULL, NNK_F64, 2, es, &e));
    nnk_args_reset(a);
    OK(nnk_args_array(a, e));
    OK(nnk_args_axes(a, 1, &ax1));
    FAILS(nnk_launch(k, a), NNK_ESHAPE);
    MSG_HAS("empty");
    nnk_array_free(e);

    nnk_args_free(a);
    nnk_array_free(ai);
    nnk_array_free(ah);
    nnk_array_free(ax);
    nnk_module_free(m);
}

/* The same reduction gives the same bits with 1 thread and with many, and
 * whether the runtime splits each slice over threads (few rows) or runs
 * whole slices (many rows): rows * n floats, row i holding pattern i % 2. */
static void sum_rows(int64_t rows, float *out)
{
    nnk_module *m;
    OK(nnk_module_compile(NULL, "reduction total(x: f32[]) -> (r: f32) { r = sum(x); }", NULL, &m));
    nnk_kernel *k;
    OK(nnk_module_kernel(m, "total", &k));
    int64_t n = 1000003, s[] = {rows, n};
    float *x = malloc(sizeof(float) * (size_t)(rows * n));
    /* values of many magnitudes, so a different order changes the bits */
    for (int64_t i = 0; i < rows * n; i++) {
        int64_t j = i % (2 * n);
        x[i] = (float)((double)(j * 2654435761u % 1000003) * 1e-3 - 500.0) * (j % 7 == 0 ? 1e3f : 1.0f);
    }
    nnk_array *ax = host_f32(2, s, x), *r;
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    int32_t ax1 = 1;
    OK(nnk_args_axes(a, 1, &ax1));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &r));
    OK(nnk_array_to_host(r, NNK_F32, out, (size_t)rows * sizeof(float)));
    nnk_array_free(r);
    nnk_array_free(ax);
    nnk_args_free(a);
    nnk_module_free(m);
    free(x);
}

static void sum_bits(float *out)
{
    sum_rows(2, out);
}

static void test_determinism(void)
{
    float many[2], one[2];
    setenv("NNK_NUM_THREADS", "4", 1);
    nnk_shutdown();
    sum_bits(many);
    setenv("NNK_NUM_THREADS", "1", 1);
    nnk_shutdown();
    sum_bits(one);
    float whole[16];
    sum_rows(16, whole); /* 16 rows keep every thread busy: no split */
    unsetenv("NNK_NUM_THREADS");
    nnk_shutdown();
    CU_ASSERT_EQUAL(memcmp(many, one, sizeof one), 0);
    CU_ASSERT_EQUAL(memcmp(many, whole, sizeof many), 0);
}

/* An elementwise kernel with a transposed input runs in tiles (exec.c):
 * every element as in the flat order, for slices whose sides are not
 * multiples of the tile, a broadcast row, 1 and 2 threads. */
static void test_transposed_tiles(void)
{
    enum { S = 3, R = 130, C = 197 };
    /* x: [S, C, R] in memory, passed as its view [S, R, C] */
    float *xm = malloc(sizeof(float) * S * R * C), *y = malloc(sizeof(float) * S * R * C), b[C];
    float *z = malloc(sizeof(float) * S * R * C);
    for (int64_t i = 0; i < (int64_t)S * R * C; i++)
        xm[i] = (float)(i % 1013) * 0.37f - 100, y[i] = (float)(i % 777) * 1.3f;
    for (int c = 0; c < C; c++)
        b[c] = 1 + (float)c / 7;
    int64_t xs[] = {S, R, C}, xst[] = {(int64_t)R * C, 1, R}, bs[] = {C};
    for (int threads = 1; threads <= 2; threads++) {
        /* nnk_shutdown unloads the JIT's objects: a module of its own each time */
        setenv("NNK_NUM_THREADS", threads == 1 ? "1" : "2", 1);
        nnk_shutdown();
        nnk_module *m;
        OK(nnk_module_compile(NULL, "elementwise f(x: f32[], y: f32[], b: f32[]) -> (z: f32[]) { z = x * 3 - y / b; }",
                              NULL, &m));
        nnk_kernel *k;
        OK(nnk_module_kernel(m, "f", &k));
        nnk_array *ax, *ay, *ab, *az;
        OK(nnk_array_wrap(NNK_F32, 3, xs, xst, xm, &ax));
        OK(nnk_array_wrap(NNK_F32, 3, xs, NULL, y, &ay));
        OK(nnk_array_wrap(NNK_F32, 1, bs, NULL, b, &ab));
        memset(z, 0xff, sizeof(float) * S * R * C);
        OK(nnk_array_wrap(NNK_F32, 3, xs, NULL, z, &az));
        nnk_args *a;
        OK(nnk_args_new(&a));
        OK(nnk_args_array(a, ax));
        OK(nnk_args_array(a, ay));
        OK(nnk_args_array(a, ab));
        OK(nnk_args_out(a, az));
        OK(nnk_launch(k, a));
        int bad = 0;
        for (int64_t s = 0; s < S; s++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++) {
                    int64_t i = (s * R + r) * C + c;
                    volatile float t = xm[(s * C + c) * R + r] * 3, q = y[i] / b[c], want = t - q;
                    bad += memcmp(&z[i], (const void *)&want, sizeof want) != 0;
                }
        CU_ASSERT_EQUAL(bad, 0);
        nnk_args_free(a);
        nnk_array_free(ax);
        nnk_array_free(ay);
        nnk_array_free(ab);
        nnk_array_free(az);
        nnk_module_free(m);
    }
    unsetenv("NNK_NUM_THREADS");
    nnk_shutdown();
    free(xm);
    free(y);
    free(z);
}

/* The tiles copy each transposed input into a buffer (exec.c): the copy of
 * every element size (i8, u16, f64, c128), two such inputs at once, one
 * with a negative stride, and idx, which must stay the element's flat
 * index; 1 and 2 threads, against the flat formula. */
static void test_transposed_tile_copies(void)
{
    enum { S = 2, R = 37, C = 300 };
    const int64_t n = (int64_t)S * R * C;
    double *x = malloc(sizeof(double) * n), *z = malloc(sizeof(double) * n), *q = malloc(2 * sizeof(double) * n);
    int8_t *w = malloc((size_t)n);
    uint16_t *h = malloc(sizeof(uint16_t) * n);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)(i % 1009) * 0.25 - 50, w[i] = (int8_t)(i % 251 - 125), h[i] = (uint16_t)(i * 7 % 65521);
        q[2 * i] = (double)(i % 97), q[2 * i + 1] = -(double)(i % 89);
    }
    /* x: [S, C, R] in memory (transposed); w: the same, its columns in
     * reverse (a negative stride); h: [S, R, C] contiguous; q: c128, transposed */
    int64_t shape[] = {S, R, C}, tst[] = {(int64_t)R * C, 1, R}, nst[] = {(int64_t)R * C, 1, -R};
    for (int threads = 1; threads <= 2; threads++) {
        setenv("NNK_NUM_THREADS", threads == 1 ? "1" : "2", 1);
        nnk_shutdown();
        nnk_module *m;
        OK(nnk_module_compile(NULL,
                              "elementwise g(x: f64[], w: i8[], h: u16[], q: c128[]) -> (z: f64[]) {\n"
                              "    z = x * 2 + f64(w) - f64(h) + real(q) * 3 + imag(q) + f64(idx % 5);\n}\n",
                              NULL, &m));
        nnk_kernel *k;
        OK(nnk_module_kernel(m, "g", &k));
        nnk_array *ax, *aw, *ah, *aq, *az;
        OK(nnk_array_wrap(NNK_F64, 3, shape, tst, x, &ax));
        OK(nnk_array_wrap(NNK_I8, 3, shape, nst, w + (C - 1) * R, &aw));
        OK(nnk_array_wrap(NNK_U16, 3, shape, NULL, h, &ah));
        OK(nnk_array_wrap(NNK_C128, 3, shape, tst, q, &aq));
        memset(z, 0xff, sizeof(double) * n);
        OK(nnk_array_wrap(NNK_F64, 3, shape, NULL, z, &az));
        nnk_args *a;
        OK(nnk_args_new(&a));
        OK(nnk_args_array(a, ax));
        OK(nnk_args_array(a, aw));
        OK(nnk_args_array(a, ah));
        OK(nnk_args_array(a, aq));
        OK(nnk_args_out(a, az));
        OK(nnk_launch(k, a));
        int bad = 0;
        for (int64_t s = 0; s < S; s++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++) {
                    int64_t i = (s * R + r) * C + c, t = (s * C + c) * R + r, tw = (s * C + (C - 1 - c)) * R + r;
                    volatile double v = x[t] * 2;
                    v = v + (double)w[tw];
                    v = v - (double)h[i];
                    volatile double re = q[2 * t] * 3;
                    v = v + re;
                    v = v + q[2 * t + 1];
                    v = v + (double)(i % 5);
                    double want = v;
                    bad += memcmp(&z[i], &want, sizeof want) != 0;
                }
        CU_ASSERT_EQUAL(bad, 0);
        nnk_args_free(a);
        nnk_array_free(ax);
        nnk_array_free(aw);
        nnk_array_free(ah);
        nnk_array_free(aq);
        nnk_array_free(az);
        nnk_module_free(m);
    }
    unsetenv("NNK_NUM_THREADS");
    nnk_shutdown();
    free(x);
    free(z);
    free(q);
    free(w);
    free(h);
}

/* nnk_args_numpy_scalars: integers checked against their parameter's
 * type (NNK_EOVERFLOW) and scalars for tensor inputs as weak 0-d operands
 * (NEP 50); without it, the C conversion and NNK_EINVAL as before. */
static void test_numpy_scalars(void)
{
    nnk_jit_fn *fn;
    OK(nnk_create_jit_fn("elementwise add<T: num>(x: T[], y: T[], b: u8 = 0) -> (z: T[]) { z = x + y + T(b); }", NULL,
                         &fn));
    int64_t s[] = {3};
    int32_t xi[3] = {1, 2, 3};
    nnk_array *x, *z;
    OK(nnk_array_from_host(NULL, NNK_I32, 1, s, xi, &x));
    nnk_args *a;
    OK(nnk_args_new(&a));
    /* C's rules: 300 is 44 for a u8; a scalar for y is refused */
    OK(nnk_args_array(a, x));
    OK(nnk_args_array(a, x));
    OK(nnk_args_named_i64(a, "b", 300));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    int32_t zi[3];
    OK(nnk_array_to_host(z, NNK_I32, zi, sizeof zi));
    CU_ASSERT_EQUAL(zi[0], 1 + 1 + 44);
    nnk_array_free(z);
    nnk_args_reset(a);
    OK(nnk_args_array(a, x));
    OK(nnk_args_f64(a, 2.5));
    FAILS(nnk_jit_fn_call(fn, a), NNK_EINVAL);
    MSG_HAS("is an array, but a scalar was given");
    /* numpy's: the u8 bound, and a weak 2.5 that lifts i32 to f64 */
    nnk_args_reset(a);
    OK(nnk_args_numpy_scalars(a, 1));
    OK(nnk_args_array(a, x));
    OK(nnk_args_array(a, x));
    OK(nnk_args_named_i64(a, "b", 300));
    FAILS(nnk_jit_fn_call(fn, a), NNK_EOVERFLOW);
    MSG_HAS("kernel 'add': integer 300 out of bounds for u8 (parameter 'b')");
    CU_ASSERT_STRING_EQUAL(nnk_status_name(NNK_EOVERFLOW), "NNK_EOVERFLOW");
    nnk_args_reset(a);
    OK(nnk_args_numpy_scalars(a, 1));
    OK(nnk_args_array(a, x));
    OK(nnk_args_f64(a, 2.5));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_EQUAL(nnk_array_dtype(z), NNK_F64);
    double zd[3];
    OK(nnk_array_to_host(z, NNK_F64, zd, sizeof zd));
    CU_ASSERT_EQUAL(zd[2], 5.5);
    nnk_array_free(z);
    /* scalars alone: i64 (a 0-d result); a bool and an int: i64 */
    nnk_args_reset(a);
    OK(nnk_args_numpy_scalars(a, 1));
    OK(nnk_args_bool(a, 1));
    OK(nnk_args_named_i64(a, "y", -7));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_EQUAL(nnk_array_dtype(z), NNK_I64);
    CU_ASSERT_EQUAL(nnk_array_ndim(z), 0);
    int64_t zl = 0;
    OK(nnk_array_to_host(z, NNK_I64, &zl, sizeof zl));
    CU_ASSERT_EQUAL(zl, -6);
    nnk_array_free(z);
    /* a weak integer out of the bound type's range */
    nnk_args_reset(a);
    OK(nnk_args_numpy_scalars(a, 1));
    OK(nnk_args_array(a, x));
    OK(nnk_args_u64(a, UINT64_C(1) << 63));
    FAILS(nnk_jit_fn_call(fn, a), NNK_EOVERFLOW);
    MSG_HAS("integer 9223372036854775808 out of bounds for i32 (parameter 'y')");
    FAILS(nnk_args_numpy_scalars(NULL, 1), NNK_EINVAL);
    FAILS(nnk_args_named_bool(a, NULL, 1), NNK_EINVAL);
    nnk_args_free(a);
    nnk_array_free(x);
    nnk_jit_fn_free(fn);
}

static void test_jit_fn(void)
{
    nnk_jit_fn *fn;
    const char *code = "elementwise axpby<T: float>(x: T[], y: T[], a: T = 1, b: T = 1) -> (z: T[], w: T[]) {\n"
                       "    z = a * x + b * y;\n    w = x - y;\n}\n";
    FAILS(nnk_create_jit_fn(code, "gamma=2", &fn), NNK_EINVAL);
    MSG_HAS("gamma");
    FAILS(nnk_create_jit_fn(code, "x=2", &fn), NNK_EINVAL);
    MSG_HAS("scalar");
    /* below INT64_MIN, after a blank strtoll skips: not the u64 that
     * strtoull's negation makes of it (1) */
    FAILS(nnk_create_jit_fn(code, "a=\\ -18446744073709551615", &fn), NNK_EOVERFLOW);
    MSG_HAS("outside the int64 and uint64 ranges");
    OK(nnk_create_jit_fn(code, "a=\\ +18446744073709551615", &fn));
    nnk_jit_fn_free(fn);
    FAILS(nnk_create_jit_fn("elementwise a(x: f32[]) -> (y: f32[]) { y = x; }\n"
                            "elementwise b(x: f32[]) -> (y: f32[]) { y = x; }\n", NULL, &fn), NNK_EINVAL);
    MSG_HAS("kernel=NAME");
    OK(nnk_create_jit_fn(code, "a=2 opt_level=3", &fn));
    CU_ASSERT_EQUAL(nnk_jit_fn_cache_size(fn), 0);
    float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
    int64_t s[] = {3};
    nnk_array *ax = host_f32(1, s, x), *ay = host_f32(1, s, y), *z, *w, *xd;
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_jit_fn_call(fn, a));
    CU_ASSERT_EQUAL(nnk_args_output_count(a), 2);
    OK(nnk_args_output(a, 0, &z));
    OK(nnk_args_output(a, 1, &w));
    float zo[3], wo[3];
    OK(nnk_array_to_host(z, NNK_F32, zo, sizeof zo));
    OK(nnk_array_to_host(w, NNK_F32, wo, sizeof wo));
    CU_ASSERT_EQUAL(zo[2], 36); /* a=2 from the options, b=1 by default */
    CU_ASSERT_EQUAL(wo[2], -27);
    nnk_array_free(z);
    nnk_array_free(w);
    OK(nnk_args_named_f64(a, "b", 0));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    OK(nnk_array_to_host(z, NNK_F32, zo, sizeof zo));
    CU_ASSERT_EQUAL(zo[2], 6);
    nnk_array_free(z);
    CU_ASSERT_EQUAL(nnk_jit_fn_cache_size(fn), 1);
    /* f64 and f32 arrays: T is promoted to f64, a new signature */
    OK(nnk_array_to(ax, NULL, NNK_F64, &xd));
    nnk_args_reset(a);
    OK(nnk_args_array(a, xd));
    OK(nnk_args_array(a, ay));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_EQUAL(nnk_array_dtype(z), NNK_F64);
    nnk_array_free(z);
    CU_ASSERT_EQUAL(nnk_jit_fn_cache_size(fn), 2);
    OK(nnk_jit_fn_call(fn, a));
    CU_ASSERT_EQUAL(nnk_jit_fn_cache_size(fn), 2);
    CU_ASSERT_PTR_NOT_NULL(nnk_jit_fn_kernel(fn));
    nnk_args_free(a);
    nnk_array_free(xd);
    nnk_array_free(ax);
    nnk_array_free(ay);
    nnk_jit_fn_free(fn);
}

/* An output read back has the value it stores (language.md §5), also when
 * the call stores it in another dtype than its type (docs/runtime.md: the
 * instance is generated for the storage dtypes): p as f16 rounds 0.1f * 3
 * to 0.300048828125, p as i8 saturates 200 to 127, and a = p reads that
 * back. */
static void test_jit_fn_stored_readback(void)
{
    nnk_jit_fn *fn;
    OK(nnk_create_jit_fn("elementwise rb(x: f32[], k: f32) -> (p: f32[], a: f32[]) { p = x * k; a = p; }\n", NULL,
                         &fn));
    float x[2] = {0.1f, 2.0f}, ao[2];
    int64_t s2[] = {2};
    nnk_array *ax = host_f32(1, s2, x), *ph, *pi, *pf, *a;
    OK(nnk_array_zeros(NULL, NNK_F16, 1, s2, &ph));
    OK(nnk_array_zeros(NULL, NNK_I8, 1, s2, &pi));
    OK(nnk_array_zeros(NULL, NNK_F32, 1, s2, &pf));
    nnk_args *args;
    OK(nnk_args_new(&args));
    const struct { nnk_array *p; double k; float a0, a1; } cases[] = {
        {ph, 3, 0.300048828125f, 6}, /* 0.1f * 3 = 0.3000000045 as f16; 6 is exact */
        {pi, 100, 10, 127},        /* 10.000000149 truncates to 10; 200 saturates */
        {pf, 3, 0.1f * 3, 6},      /* stored as f32: the product itself */
    };
    for (int i = 0; i < 3; i++) {
        nnk_args_reset(args);
        OK(nnk_args_array(args, ax));
        OK(nnk_args_f64(args, cases[i].k));
        OK(nnk_args_out(args, cases[i].p));
        OK(nnk_jit_fn_call(fn, args));
        OK(nnk_args_output(args, 1, &a));
        OK(nnk_array_to_host(a, NNK_F32, ao, sizeof ao));
        CU_ASSERT_EQUAL(ao[0], cases[i].a0);
        CU_ASSERT_EQUAL(ao[1], cases[i].a1);
        nnk_array_free(a);
    }
    nnk_args_free(args);
    nnk_array_free(ax);
    nnk_array_free(ph);
    nnk_array_free(pi);
    nnk_array_free(pf);
    nnk_jit_fn_free(fn);
}

/* docs/runtime.md, generic kernels: a generic kernel whose default
 * instance does not type-check compiles; each call checks its own
 * instance, and one its body cannot take is NNK_EDTYPE with the rendered
 * diagnostic (every time it is asked). */
static void test_lazy_generic(void)
{
    nnk_jit_fn *fn;
    OK(nnk_create_jit_fn("elementwise gband<T>(x: T[], y: T[]) -> (z: T[]) { z = x & y; }\n", NULL, &fn));
    int32_t xi[4] = {12, -1, 7, 0x70}, yi[4] = {10, 5, 3, 0x1f}, zi[4];
    uint8_t xu[2] = {0xf0, 0x3c}, yu[2] = {0x3c, 0xff}, zu[2];
    int64_t s4[] = {4}, s2[] = {2};
    nnk_array *ax, *ay, *ux, *uy, *fx, *z;
    OK(nnk_array_from_host(NULL, NNK_I32, 1, s4, xi, &ax));
    OK(nnk_array_from_host(NULL, NNK_I32, 1, s4, yi, &ay));
    OK(nnk_array_from_host(NULL, NNK_U8, 1, s2, xu, &ux));
    OK(nnk_array_from_host(NULL, NNK_U8, 1, s2, yu, &uy));
    OK(nnk_array_to(ax, NULL, NNK_F32, &fx));
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    CU_ASSERT_EQUAL(nnk_array_dtype(z), NNK_I32);
    OK(nnk_array_to_host(z, NNK_I32, zi, sizeof zi));
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(zi[i], xi[i] & yi[i]);
    nnk_array_free(z);
    for (int rep = 0; rep < 2; rep++) {
        nnk_args_reset(a);
        OK(nnk_args_array(a, fx));
        OK(nnk_args_array(a, fx));
        FAILS(nnk_jit_fn_call(fn, a), NNK_EDTYPE);
        MSG_HAS("operator '&' needs integer operands, but both are f32");
        MSG_HAS("note: in instance 'gband<f32>'");
        MSG_HAS("^");
    }
    nnk_args_reset(a);
    OK(nnk_args_array(a, ux));
    OK(nnk_args_array(a, uy));
    OK(nnk_jit_fn_call(fn, a));
    OK(nnk_args_output(a, 0, &z));
    OK(nnk_array_to_host(z, NNK_U8, zu, sizeof zu));
    CU_ASSERT_EQUAL(zu[0], 0x30);
    CU_ASSERT_EQUAL(zu[1], 0x3c);
    nnk_array_free(z);
    nnk_jit_fn_free(fn);
    /* a module of such kernels compiles; errors that hold for every type
     * (an unknown name) and a body no type of its class can take do not */
    nnk_module *m;
    OK(nnk_module_compile(NULL, "elementwise gband<T>(x: T[], y: T[]) -> (z: T[]) { z = x & y; }\n"
                                "reduction ror<T: int>(x: T[]) -> (r: T) { r = sum(x | 1); }\n"
                                "elementwise gneg<T>(x: T[]) -> (z: T[]) { z = ~x; }\n", NULL, &m));
    nnk_module_free(m);
    FAILS(nnk_module_compile(NULL, "elementwise g<T>(x: T[]) -> (z: T[]) { z = tahn(x) & 1; }\n", NULL, &m),
          NNK_ECOMPILE);
    MSG_HAS("unknown function 'tahn'");
    FAILS(nnk_module_compile(NULL, "elementwise g<T: float>(x: T[]) -> (z: T[]) { z = x << 1; }\n", NULL, &m),
          NNK_ECOMPILE);
    MSG_HAS("no type of class 'float' type-checks");
    nnk_args_free(a);
    nnk_array_free(ax);
    nnk_array_free(ay);
    nnk_array_free(ux);
    nnk_array_free(uy);
    nnk_array_free(fx);
}

/* docs/runtime.md, "In place": an output that is exactly an input (out=x)
 * runs in place; one that overlaps an input otherwise reads a copy of the
 * input taken first (numpy).  Both kernels of the first half are the ones
 * whose restrict loops gcc -O2 and clang miscompiled in place. */
static const char *const inplace_src =
    "elementwise k0(c: i16[], a: i16[]) -> (z0: i16[], z1: i8[]) { z0 = a; z1 = c; }\n"
    "reduction k1(b: f32[]) -> (z0: f32[], z1: f32[]) { z1 = b; z0 = 1; }\n"
    "elementwise fma1(y: f32[], r: f32[]) -> (z: f32[]) { z = y * r + 1; }\n"
    "elementwise inc(x: f32[]) -> (z: f32[]) { z = x + 1; }\n"
    "reduction rs(x: f32[]) -> (r: f32, y: f32[]) { r = sum(x) + 1; y = x * 2; }\n";

static nnk_array *iota_f32(int32_t ndim, const int64_t *shape, float from)
{
    float v[64];
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++)
        n *= shape[d];
    for (int64_t i = 0; i < n && i < 64; i++)
        v[i] = from + (float)i;
    return host_f32(ndim, shape, v);
}

static void test_inplace(void)
{
    fresh_cache("inplace");
    nnk_module *m;
    OK(nnk_module_compile(NULL, inplace_src, NULL, &m));
    nnk_kernel *k;
    nnk_args *a;
    OK(nnk_args_new(&a));

    /* k0 with z0 = c: z1 gets c's values, not a's */
    int16_t cv[40], av[40], co[40];
    int8_t z1[40];
    for (int i = 0; i < 40; i++)
        cv[i] = (int16_t)(i + 1), av[i] = (int16_t)(1000 + i);
    int64_t s40[] = {40};
    nnk_array *c, *av_, *z;
    OK(nnk_array_from_host(NULL, NNK_I16, 1, s40, cv, &c));
    OK(nnk_array_from_host(NULL, NNK_I16, 1, s40, av, &av_));
    OK(nnk_module_kernel(m, "k0", &k));
    OK(nnk_args_array(a, c));
    OK(nnk_args_array(a, av_));
    OK(nnk_args_out(a, c));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 1, &z));
    OK(nnk_array_to_host(z, NNK_I8, z1, sizeof z1));
    OK(nnk_array_to_host(c, NNK_I16, co, sizeof co));
    int bad = 0;
    for (int i = 0; i < 40; i++)
        bad += z1[i] != (int8_t)(i + 1) || co[i] != 1000 + i;
    CU_ASSERT_EQUAL(bad, 0);
    nnk_array_free(z);

    /* k1 with z0 = b, shape (1, 33, 1), reducing axis 1 */
    int64_t s133[] = {1, 33, 1};
    nnk_array *b = iota_f32(3, s133, 2);
    float bo[33], zo[33];
    OK(nnk_module_kernel(m, "k1", &k));
    nnk_args_reset(a);
    OK(nnk_args_array(a, b));
    OK(nnk_args_out(a, b));
    int32_t ax1 = 1;
    OK(nnk_args_axes(a, 1, &ax1));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 1, &z));
    OK(nnk_array_to_host(z, NNK_F32, zo, sizeof zo));
    OK(nnk_array_to_host(b, NNK_F32, bo, sizeof bo));
    bad = 0;
    for (int i = 0; i < 33; i++)
        bad += zo[i] != (float)(i + 2) || bo[i] != 1;
    CU_ASSERT_EQUAL(bad, 0);
    nnk_array_free(z);

    /* y = y * y[0] + 1 with y[0] a broadcast view of y's first row */
    int64_t s45[] = {4, 5};
    nnk_array *y = iota_f32(2, s45, 1), *row;
    nnk_slice first = {0, 1, 1};
    OK(nnk_array_slice(y, 1, &first, &row));
    OK(nnk_module_kernel(m, "fma1", &k));
    nnk_args_reset(a);
    OK(nnk_args_array(a, y));
    OK(nnk_args_array(a, row));
    OK(nnk_args_out(a, y));
    OK(nnk_launch(k, a));
    float yo[20];
    OK(nnk_array_to_host(y, NNK_F32, yo, sizeof yo));
    bad = 0;
    for (int i = 0; i < 20; i++)
        bad += yo[i] != (float)(i + 1) * (float)(i % 5 + 1) + 1;
    CU_ASSERT_EQUAL(bad, 0);
    nnk_array_free(row);
    nnk_array_free(y);

    /* shifted and reversed outputs over the input: x[1:] = x[:-1] + 1,
     * x[::-1] = x + 1 (each reads x as it was) */
    nnk_array *x = iota_f32(1, s40, 0), *lo, *hi, *rev;
    nnk_slice head = {0, 39, 1}, tail = {1, NNK_SLICE_NONE, 1}, back = {NNK_SLICE_NONE, NNK_SLICE_NONE, -1};
    OK(nnk_array_slice(x, 1, &head, &lo));
    OK(nnk_array_slice(x, 1, &tail, &hi));
    OK(nnk_array_slice(x, 1, &back, &rev));
    OK(nnk_module_kernel(m, "inc", &k));
    nnk_args_reset(a);
    OK(nnk_args_array(a, lo));
    OK(nnk_args_out(a, hi));
    OK(nnk_launch(k, a));
    float xo[40];
    OK(nnk_array_to_host(x, NNK_F32, xo, sizeof xo));
    bad = xo[0] != 0;
    for (int i = 1; i < 40; i++)
        bad += xo[i] != (float)i; /* x[i] = x_orig[i - 1] + 1 = i */
    CU_ASSERT_EQUAL(bad, 0);
    nnk_args_reset(a);
    OK(nnk_args_array(a, x));
    OK(nnk_args_out(a, rev));
    OK(nnk_launch(k, a));
    OK(nnk_array_to_host(x, NNK_F32, xo, sizeof xo));
    bad = 0;
    for (int i = 0; i < 40; i++)
        bad += xo[39 - i] != (float)i + 1; /* before: x[i] = i (x[0] = 0) */
    CU_ASSERT_EQUAL(bad, 0);
    nnk_array_free(lo);
    nnk_array_free(hi);
    nnk_array_free(rev);
    nnk_array_free(x);

    /* a reduced-shape output over its input: r (4, 1) = x (4, 1), reducing
     * axis 1 with keepdims; y must read x as it was */
    int64_t s41[] = {4, 1};
    x = iota_f32(2, s41, 3);
    OK(nnk_module_kernel(m, "rs", &k));
    nnk_args_reset(a);
    OK(nnk_args_array(a, x));
    OK(nnk_args_out(a, x));
    OK(nnk_args_axes(a, 1, &ax1));
    OK(nnk_args_keepdims(a, 1));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 1, &z));
    float ro[4], yo4[4];
    OK(nnk_array_to_host(x, NNK_F32, ro, sizeof ro));
    OK(nnk_array_to_host(z, NNK_F32, yo4, sizeof yo4));
    bad = 0;
    for (int i = 0; i < 4; i++)
        bad += ro[i] != (float)(i + 3) + 1 || yo4[i] != 2 * (float)(i + 3);
    CU_ASSERT_EQUAL(bad, 0);
    nnk_array_free(z);
    nnk_array_free(x);

    nnk_args_free(a);
    nnk_array_free(b);
    nnk_array_free(c);
    nnk_array_free(av_);
    nnk_module_free(m);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/nnk-test-runtime-%ld", (long)getpid());
    mkdir(tmpdir, 0700);
    fresh_cache("jit");
}

static void teardown(void)
{
    nnk_shutdown();
    run_cmd("chmod -R u+w '%1$s' 2>/dev/null; rm -rf '%1$s'", tmpdir);
}

/* Raw and inout parameters through linked descriptors (abi_kernels.c):
 * the runtime's half of language.md "Raw parameters" and "In-out
 * parameters", without the compiler. */
static void test_abi_raw_inout(void)
{
    nnk_kernel *k;
    OK(nnk_kernel_from_desc(NULL, &abi_take, &k));
    float t[8] = {0, 10, 20, 30, 40, 50, 60, 70};
    int64_t ts[] = {4}, tst[] = {2}, ks[] = {3};
    int64_t kv[3] = {3, 0, 2}, kbad[3] = {1, 4, 0};
    nnk_array *at, *atv, *ak, *akbad, *y;
    (void)ts;
    OK(nnk_array_wrap(NNK_F32, 1, (int64_t[]){8}, (int64_t[]){1}, t, &at));
    OK(nnk_array_wrap(NNK_F32, 1, (int64_t[]){4}, tst, t, &atv)); /* t[::2]: 0 20 40 60 */
    OK(nnk_array_from_host(NULL, NNK_I64, 1, ks, kv, &ak));
    OK(nnk_array_from_host(NULL, NNK_I64, 1, ks, kbad, &akbad));
    nnk_args *a;
    OK(nnk_args_new(&a));
    OK(nnk_args_array(a, atv));
    OK(nnk_args_array(a, ak));
    OK(nnk_launch(k, a));
    OK(nnk_args_output(a, 0, &y));
    CU_ASSERT_EQUAL(nnk_array_ndim(y), 1); /* the iteration space is k's, not t's */
    float yo[3];
    OK(nnk_array_to_host(y, NNK_F32, yo, sizeof yo));
    CU_ASSERT(yo[0] == 60 && yo[1] == 0 && yo[2] == 40);
    nnk_array_free(y);
    nnk_args_reset(a);
    OK(nnk_args_array(a, atv));
    OK(nnk_args_array(a, akbad));
    CU_ASSERT_EQUAL(nnk_launch(k, a), NNK_ERANGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(nnk_last_error(), "kernel 'take': flat index 4 of raw parameter 't' is out of range [0, 4)"));
    CU_ASSERT_STRING_EQUAL(nnk_status_name(NNK_ERANGE), "NNK_ERANGE");
    nnk_kernel_free(k);

    OK(nnk_kernel_from_desc(NULL, &abi_bump, &k));
    CU_ASSERT_EQUAL(nnk_kernel_input_count(k), 2);
    CU_ASSERT(nnk_kernel_input_is_inout(k, 1, NULL) && nnk_kernel_input_is_inout(k, 0, "y"));
    CU_ASSERT(!nnk_kernel_input_is_inout(k, 0, NULL) && !nnk_kernel_input_is_inout(k, 0, "x"));
    CU_ASSERT(!nnk_kernel_input_is_scalar(k, 0, NULL) && !nnk_kernel_input_is_scalar(k, 0, "y") &&
              !nnk_kernel_input_is_scalar(k, 2, NULL) && !nnk_kernel_input_is_scalar(NULL, 0, NULL));
    float x[3] = {1, 2, 3}, yv[3] = {10, 20, 30};
    nnk_array *ax = host_f32(1, ks, x), *ay = host_f32(1, ks, yv);
    nnk_args_reset(a);
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_launch(k, a));
    OK(nnk_array_to_host(ay, NNK_F32, yo, sizeof yo));
    CU_ASSERT(yo[0] == 11 && yo[1] == 22 && yo[2] == 33);
    CU_ASSERT_EQUAL(nnk_args_output_count(a), 1);
    OK(nnk_args_output(a, 0, &y));
    CU_ASSERT_PTR_EQUAL(y, ay); /* the inout output is the array passed */
    nnk_array_free(y);
    /* given as an output too: an error, and y is not written */
    nnk_args_reset(a);
    OK(nnk_args_array(a, ax));
    OK(nnk_args_array(a, ay));
    OK(nnk_args_out(a, ay));
    CU_ASSERT_EQUAL(nnk_launch(k, a), NNK_EINVAL);
    OK(nnk_array_to_host(ay, NNK_F32, yo, sizeof yo));
    CU_ASSERT(yo[0] == 11);
    nnk_kernel_free(k);
    CU_ASSERT_EQUAL(nnk_kernel_from_desc(NULL, &abi_bad_inout, &k), NNK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(nnk_last_error(), "inout output without its inout tensor parameter"));
    nnk_args_free(a);
    nnk_array_free(ax);
    nnk_array_free(ay);
    nnk_array_free(at);
    nnk_array_free(atv);
    nnk_array_free(ak);
    nnk_array_free(akbad);
}

static const CunitTest tests_runtime[] = {
    {"errors", test_errors},
    {"extensions", test_extensions},
    {"contexts", test_contexts},
    {"arrays", test_arrays},
    {"conversions", test_conversions},
    {"allocator", test_allocator},
    {"abi_saxpy", test_abi_saxpy},
    {"abi_reductions", test_abi_reductions},
    {"abi_raw_inout", test_abi_raw_inout},
    {"backends", test_backends},
    {"jit_caches", test_jit_caches},
    {"jit_parts", test_jit_parts},
    {"jit_errors", test_jit_errors},
    {"fork_compile", test_fork_compile},
    {"threads", test_threads},
    {"module", test_module},
    {"determinism", test_determinism},
    {"jit_fn", test_jit_fn},
    {"numpy_scalars", test_numpy_scalars},
    {"jit_fn_stored_readback", test_jit_fn_stored_readback},
    {"lazy_generic", test_lazy_generic},
    {"inplace", test_inplace},
    {"transposed_tiles", test_transposed_tiles},
    {"transposed_tile_copies", test_transposed_tile_copies},
    {NULL},
};

static const CunitSuite suites[] = {
    {"runtime", tests_runtime},
    {NULL},
};

const CunitProgram cunit_program = {suites, setup, teardown};
