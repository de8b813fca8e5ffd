/* test_api.c - the API's promises to a careless caller.
 *
 * 1. nnk_last_error() does not change after successful calls, even those
 *    that do first-time work (importing an extension, running its init and
 *    context hooks).
 * 2. Every function of nnk/nnk.h (and the host API an extension gets),
 *    called with NULL in each pointer argument the documentation does not
 *    say may be NULL, returns NNK_EINVAL with a message (status
 *    functions) or a documented neutral value (getters, *_free), and
 *    never crashes.  docs/runtime.md, "Conventions".
 * 3. Sizes, strides and iteration spaces that overflow int64_t are
 *    NNK_ESHAPE, not views outside their storage.
 * 4. A kernel past the language's limits (32 scalars, 32 tensors) is a
 *    compile error; one at the limits runs.
 *
 * One row per case; each runs in a child process, so a crash is reported
 * as that row's failure and the others still run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nnk/extension.h"
#include "nnk/nnk.h"

/* Valid objects for the arguments that are not the NULL under test. */
static nnk_context *ctx;
static nnk_extension *ext;
static nnk_array *arr;
static nnk_module *mod;
static nnk_kernel *ker;
static nnk_args *args;
static nnk_jit_fn *jfn;
static const nnk_host_api *host;
static const int64_t shape[] = {4};
static float data[4];
static const char *names[4];
static int32_t count, perm[] = {0};
static nnk_slice sl[] = {{0, 2, 1}};
static nnk_device_info devs[2];
static nnk_memory_stats stats;
static void fill_run(const nnk_plan *p, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++)
        ((float *)p->data[0])[i] = 1;
}
static const nnk_param_desc fill_params[] = {{"y", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}}};
static const nnk_kernel_desc fill_desc = {.abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "fill",
                                          .kernel = "fill", .nparams = 0, .nouts = 1, .params = fill_params,
                                          .run = fill_run};
static const nnk_kernel_desc *desc = &fill_desc;
static nnk_plan plan;
static const char *src = "elementwise k(x: f32[], s: f32 = 1) -> (y: f32[]) { y = x * s; }";

/* A status call that must be NNK_EINVAL; "e" rows. */
typedef struct row {
    const char *what;
    int kind;           /* 0: NNK_EINVAL expected; 1: no crash (value checked by `ok`) */
    int (*run)(void);   /* returns 1 when the row passes */
} row;

#define EINVAL_ROW(id, call) \
    static int id(void) { nnk_status s_ = (call); return s_ == NNK_EINVAL && nnk_last_error()[0] != 0; }
#define STATUS_ROW(id, status, call) \
    static int id(void) { nnk_status s_ = (call); return s_ == (status) && nnk_last_error()[0] != 0; }
#define VALUE_ROW(id, expr) \
    static int id(void) { return (expr); }

EINVAL_ROW(r_dtype_parse_name, nnk_dtype_parse(NULL, &(nnk_dtype){0}))
EINVAL_ROW(r_dtype_parse_out, nnk_dtype_parse("f32", NULL))
EINVAL_ROW(r_list_ext_count, nnk_list_extensions(names, 4, NULL))
EINVAL_ROW(r_list_ext_names, nnk_list_extensions(NULL, 4, &count))
EINVAL_ROW(r_import_name, nnk_import_extension(NULL, &ext))
EINVAL_ROW(r_import_out, nnk_import_extension("cpu", NULL))
EINVAL_ROW(r_register, nnk_register_extension(NULL))
EINVAL_ROW(r_ext_ctx_ext, nnk_extension_context(NULL, "", &ctx))
EINVAL_ROW(r_ext_ctx_out, nnk_extension_context(ext, "", NULL))
EINVAL_ROW(r_ext_sync, nnk_extension_device_synchronize(NULL, 0))
EINVAL_ROW(r_ext_count_ext, nnk_extension_get_device_count(NULL, &count))
EINVAL_ROW(r_ext_count_out, nnk_extension_get_device_count(ext, NULL))
EINVAL_ROW(r_ext_devs_ext, nnk_extension_get_devices(NULL, devs, 2, &count))
EINVAL_ROW(r_ext_devs_out, nnk_extension_get_devices(ext, NULL, 2, &count))
EINVAL_ROW(r_ext_devs_count, nnk_extension_get_devices(ext, devs, 2, NULL))
EINVAL_ROW(r_ext_clear, nnk_extension_clear_memory_cache(NULL, NULL))
EINVAL_ROW(r_ext_stats_ext, nnk_extension_memory_stats(NULL, 0, &stats))
EINVAL_ROW(r_ext_stats_out, nnk_extension_memory_stats(ext, 0, NULL))
EINVAL_ROW(r_get_ctx_name, nnk_get_extension_context(NULL, "", &ctx))
EINVAL_ROW(r_get_ctx_out, nnk_get_extension_context("cpu", "", NULL))
EINVAL_ROW(r_clone_ctx, nnk_context_clone(NULL, &ctx))
EINVAL_ROW(r_clone_out, nnk_context_clone(ctx, NULL))
EINVAL_ROW(r_set_default, nnk_set_default_context(NULL))
EINVAL_ROW(r_get_default, nnk_get_default_context(NULL))
EINVAL_ROW(r_new_shape, nnk_array_new(NULL, NNK_F32, 1, NULL, &arr))
EINVAL_ROW(r_new_out, nnk_array_new(NULL, NNK_F32, 1, shape, NULL))
EINVAL_ROW(r_new_default_shape, nnk_array_new_default(NULL, 1, NULL, &arr))
EINVAL_ROW(r_new_default_out, nnk_array_new_default(NULL, 1, shape, NULL))
EINVAL_ROW(r_zeros_shape, nnk_array_zeros(NULL, NNK_F32, 1, NULL, &arr))
EINVAL_ROW(r_zeros_out, nnk_array_zeros(NULL, NNK_F32, 1, shape, NULL))
EINVAL_ROW(r_from_host_shape, nnk_array_from_host(NULL, NNK_F32, 1, NULL, data, &arr))
EINVAL_ROW(r_from_host_data, nnk_array_from_host(NULL, NNK_F32, 1, shape, NULL, &arr))
EINVAL_ROW(r_from_host_out, nnk_array_from_host(NULL, NNK_F32, 1, shape, data, NULL))
EINVAL_ROW(r_wrap_shape, nnk_array_wrap(NNK_F32, 1, NULL, NULL, data, &arr))
EINVAL_ROW(r_wrap_data, nnk_array_wrap(NNK_F32, 1, shape, NULL, NULL, &arr))
EINVAL_ROW(r_wrap_out, nnk_array_wrap(NNK_F32, 1, shape, NULL, data, NULL))
EINVAL_ROW(r_slice_a, nnk_array_slice(NULL, 1, sl, &arr))
EINVAL_ROW(r_slice_s, nnk_array_slice(arr, 1, NULL, &arr))
EINVAL_ROW(r_slice_out, nnk_array_slice(arr, 1, sl, NULL))
EINVAL_ROW(r_permute_a, nnk_array_permute(NULL, 1, perm, &arr))
EINVAL_ROW(r_permute_perm, nnk_array_permute(arr, 1, NULL, &arr))
EINVAL_ROW(r_permute_out, nnk_array_permute(arr, 1, perm, NULL))
EINVAL_ROW(r_transpose_a, nnk_array_transpose(NULL, &arr))
EINVAL_ROW(r_transpose_out, nnk_array_transpose(arr, NULL))
EINVAL_ROW(r_reshape_a, nnk_array_reshape(NULL, 1, shape, &arr))
EINVAL_ROW(r_reshape_shape, nnk_array_reshape(arr, 1, NULL, &arr))
EINVAL_ROW(r_reshape_out, nnk_array_reshape(arr, 1, shape, NULL))
EINVAL_ROW(r_bcast_a, nnk_array_broadcast_to(NULL, 1, shape, &arr))
EINVAL_ROW(r_bcast_shape, nnk_array_broadcast_to(arr, 1, NULL, &arr))
EINVAL_ROW(r_bcast_out, nnk_array_broadcast_to(arr, 1, shape, NULL))
EINVAL_ROW(r_copy_dst, nnk_array_copy(NULL, arr))
EINVAL_ROW(r_copy_src, nnk_array_copy(arr, NULL))
EINVAL_ROW(r_to_a, nnk_array_to(NULL, NULL, NNK_F32, &arr))
EINVAL_ROW(r_to_out, nnk_array_to(arr, NULL, NNK_F32, NULL))
EINVAL_ROW(r_to_host_a, nnk_array_to_host(NULL, NNK_F32, data, sizeof data))
EINVAL_ROW(r_to_host_dst, nnk_array_to_host(arr, NNK_F32, NULL, sizeof data))
EINVAL_ROW(r_from_into_a, nnk_array_from_host_into(NULL, NNK_F32, data, sizeof data))
EINVAL_ROW(r_from_into_src, nnk_array_from_host_into(arr, NNK_F32, NULL, sizeof data))
EINVAL_ROW(r_module_src, nnk_module_compile(NULL, NULL, NULL, &mod))
EINVAL_ROW(r_module_out, nnk_module_compile(NULL, src, NULL, NULL))
EINVAL_ROW(r_module_kernel_m, nnk_module_kernel(NULL, "k", &ker))
EINVAL_ROW(r_module_kernel_name, nnk_module_kernel(mod, NULL, &ker))
EINVAL_ROW(r_module_kernel_out, nnk_module_kernel(mod, "k", NULL))
EINVAL_ROW(r_from_desc_desc, nnk_kernel_from_desc(NULL, NULL, &ker))
EINVAL_ROW(r_from_desc_out, nnk_kernel_from_desc(NULL, desc, NULL))
EINVAL_ROW(r_from_source_src, nnk_kernel_from_source(NULL, NULL, "sym", &ker))
EINVAL_ROW(r_from_source_sym, nnk_kernel_from_source(NULL, "int x;", NULL, &ker))
EINVAL_ROW(r_from_source_out, nnk_kernel_from_source(NULL, "int x;", "sym", NULL))
EINVAL_ROW(r_launch_desc_desc, nnk_launch_desc(NULL, args))
EINVAL_ROW(r_launch_desc_args, nnk_launch_desc(desc, NULL))
EINVAL_ROW(r_launch_stream_desc, nnk_launch_desc_stream("cpu", NULL, &plan, NULL))
EINVAL_ROW(r_launch_stream_plan, nnk_launch_desc_stream("cpu", desc, NULL, NULL))
EINVAL_ROW(r_args_new, nnk_args_new(NULL))
EINVAL_ROW(r_args_array_a, nnk_args_array(NULL, arr))
EINVAL_ROW(r_args_array_x, nnk_args_array(args, NULL))
EINVAL_ROW(r_args_named_array_a, nnk_args_named_array(NULL, "x", arr))
EINVAL_ROW(r_args_named_array_name, nnk_args_named_array(args, NULL, arr))
EINVAL_ROW(r_args_named_array_x, nnk_args_named_array(args, "x", NULL))
EINVAL_ROW(r_args_f64, nnk_args_f64(NULL, 1))
EINVAL_ROW(r_args_named_f64_a, nnk_args_named_f64(NULL, "s", 1))
EINVAL_ROW(r_args_named_f64_name, nnk_args_named_f64(args, NULL, 1))
EINVAL_ROW(r_args_i64, nnk_args_i64(NULL, 1))
EINVAL_ROW(r_args_named_i64_a, nnk_args_named_i64(NULL, "s", 1))
EINVAL_ROW(r_args_named_i64_name, nnk_args_named_i64(args, NULL, 1))
EINVAL_ROW(r_args_u64, nnk_args_u64(NULL, 1))
EINVAL_ROW(r_args_named_u64_a, nnk_args_named_u64(NULL, "s", 1))
EINVAL_ROW(r_args_named_u64_name, nnk_args_named_u64(args, NULL, 1))
EINVAL_ROW(r_args_c128, nnk_args_c128(NULL, 1, 2))
EINVAL_ROW(r_args_named_c128_a, nnk_args_named_c128(NULL, "s", 1, 2))
EINVAL_ROW(r_args_named_c128_name, nnk_args_named_c128(args, NULL, 1, 2))
EINVAL_ROW(r_args_out_a, nnk_args_out(NULL, arr))
EINVAL_ROW(r_args_out_y, nnk_args_out(args, NULL))
EINVAL_ROW(r_args_axes_a, nnk_args_axes(NULL, 1, perm))
EINVAL_ROW(r_args_axes_axes, nnk_args_axes(args, 1, NULL))
EINVAL_ROW(r_args_keepdims, nnk_args_keepdims(NULL, 1))
EINVAL_ROW(r_args_context_a, nnk_args_context(NULL, ctx))
EINVAL_ROW(r_args_output_a, nnk_args_output(NULL, 0, &arr))
EINVAL_ROW(r_args_output_out, nnk_args_output(args, 0, NULL))
EINVAL_ROW(r_launch_k, nnk_launch(NULL, args))
EINVAL_ROW(r_launch_args, nnk_launch(ker, NULL))
EINVAL_ROW(r_jit_code, nnk_create_jit_fn(NULL, NULL, &jfn))
EINVAL_ROW(r_jit_out, nnk_create_jit_fn(src, NULL, NULL))
EINVAL_ROW(r_jit_call_fn, nnk_jit_fn_call(NULL, args))
EINVAL_ROW(r_jit_call_args, nnk_jit_fn_call(jfn, NULL))
EINVAL_ROW(r_host_run_desc, host->run_host(NULL, &plan))
EINVAL_ROW(r_host_run_plan, host->run_host(desc, NULL))
EINVAL_ROW(r_host_compile_src, host->compile_c(NULL, "sym", 0, &desc))
EINVAL_ROW(r_host_compile_sym, host->compile_c("int x;", NULL, 0, &desc))
EINVAL_ROW(r_host_compile_out, host->compile_c("int x;", "sym", 0, NULL))
EINVAL_ROW(r_host_block_ptr, host->block_alloc("cpu", 0, 16, NULL, &(void *){0}))
EINVAL_ROW(r_host_block_block, host->block_alloc("cpu", 0, 16, &(void *){0}, NULL))
EINVAL_ROW(r_host_cache_load_key, host->cache_load(NULL, ".x", &(void *){0}, &(size_t){0}))
EINVAL_ROW(r_host_cache_load_data, host->cache_load("00", ".x", NULL, &(size_t){0}))
EINVAL_ROW(r_host_cache_store_key, host->cache_store(NULL, ".x", data, 4))
/* Sizes that overflow int64_t: an error, never a view outside its storage. */
static nnk_status reshape_huge(void)
{
    const int64_t t[] = {4, ((int64_t)1 << 62) + 4};
    nnk_array *a, *b;
    nnk_status s = nnk_array_zeros(NULL, NNK_F32, 1, (int64_t[]){16}, &a);
    return s ? NNK_EINTERNAL : nnk_array_reshape(a, 2, t, &b);
}
static nnk_status wrap_huge_strides(void)
{
    nnk_array *a;
    return nnk_array_wrap(NNK_F32, 2, (int64_t[]){2, 2}, (int64_t[]){(int64_t)1 << 62, 1}, data, &a);
}
static nnk_status wrap_negative_strides(void)
{
    nnk_array *a;
    return nnk_array_wrap(NNK_F64, 1, (int64_t[]){3}, (int64_t[]){INT64_MIN / 4}, data, &a);
}
/* A huge step on an axis of stride 4 selects one element: a valid view
 * whose element is the first of the axis. */
static int slice_huge_step(void)
{
    float v[16], o[4];
    for (int i = 0; i < 16; i++)
        v[i] = (float)i;
    nnk_array *a, *b;
    nnk_slice s1[] = {{1, NNK_SLICE_NONE, (int64_t)1 << 62}};
    if (nnk_array_from_host(NULL, NNK_F32, 2, (int64_t[]){4, 4}, v, &a) || nnk_array_slice(a, 1, s1, &b) ||
        nnk_array_ndim(b) != 2 || nnk_array_shape(b)[0] != 1 || nnk_array_to_host(b, NNK_F32, o, sizeof o))
        return 0;
    return o[0] == 4 && o[3] == 7;
}
/* Zero-stride views that broadcast to 2^31 x 2^33 elements: the
 * iteration space of a reduction over both does not fit in int64_t... */
static nnk_status broadcast_space_huge(void)
{
    nnk_array *x, *y;
    nnk_module *m;
    nnk_kernel *k;
    nnk_args *a;
    if (nnk_array_wrap(NNK_F32, 2, (int64_t[]){(int64_t)1 << 31, 1}, (int64_t[]){0, 0}, data, &x) ||
        nnk_array_wrap(NNK_F32, 2, (int64_t[]){1, (int64_t)1 << 33}, (int64_t[]){0, 0}, data, &y) ||
        nnk_module_compile(NULL, "reduction r(x: f32[], y: f32[]) -> (s: f32) { s = sum(x + y); }", NULL, &m) ||
        nnk_module_kernel(m, "r", &k) || nnk_args_new(&a) || nnk_args_array(a, x) || nnk_args_array(a, y))
        return NNK_EINTERNAL;
    return nnk_launch(k, a);
}
/* The language's limits: 32 scalars and 32 tensors work; one more is a
 * compile error (it used to overflow the plan's scalars, or read the
 * kernel's name after freeing the module). */
static char *limit_source(int nscalars, int ntensors)
{
    static char text[8192];
    int n = snprintf(text, sizeof text, "elementwise k(");
    for (int i = 0; i < nscalars; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "s%d: f32, ", i);
    for (int i = 0; i < ntensors - 1; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%sx%d: f32[]", i ? ", " : "", i);
    snprintf(text + n, sizeof text - (size_t)n, ") -> (y: f32[]) { y = x0 + x%d + s0 + s%d; }", ntensors - 2,
             nscalars - 1);
    return text;
}
static int limits_launch(void)
{
    nnk_module *m;
    nnk_kernel *k;
    nnk_args *a;
    nnk_array *x, *y;
    float v[4] = {1, 2, 3, 4}, o[4];
    if (nnk_module_compile(NULL, limit_source(32, 32), NULL, &m) || nnk_module_kernel(m, "k", &k) ||
        nnk_args_new(&a) || nnk_array_from_host(NULL, NNK_F32, 1, (int64_t[]){4}, v, &x))
        return 0;
    for (int i = 0; i < 32; i++)
        nnk_args_f64(a, i);
    for (int i = 0; i < 31; i++)
        nnk_args_array(a, x);
    if (nnk_launch(k, a) || nnk_args_output(a, 0, &y) || nnk_array_to_host(y, NNK_F32, o, sizeof o))
        return 0;
    return o[0] == 2 + 31 && o[3] == 8 + 31;
}
STATUS_ROW(l_33_scalars, NNK_ECOMPILE, nnk_module_compile(NULL, limit_source(40, 2), NULL, &mod))
STATUS_ROW(l_33_tensors, NNK_ECOMPILE, nnk_module_compile(NULL, limit_source(2, 33), NULL, &mod))
STATUS_ROW(l_70_params, NNK_ECOMPILE, nnk_module_compile(NULL, limit_source(40, 30), NULL, &mod))
VALUE_ROW(l_32_and_32, limits_launch())
STATUS_ROW(o_reshape_huge, NNK_ESHAPE, reshape_huge())
STATUS_ROW(o_wrap_huge_strides, NNK_ESHAPE, wrap_huge_strides())
STATUS_ROW(o_wrap_negative_strides, NNK_ESHAPE, wrap_negative_strides())
VALUE_ROW(o_slice_huge_step, slice_huge_step())
STATUS_ROW(o_broadcast_space_huge, NNK_ESHAPE, broadcast_space_huge())
/* Getters and releases: a neutral value, no crash. */
VALUE_ROW(v_ext_name, nnk_extension_name(NULL) == NULL)
VALUE_ROW(v_ext_status, nnk_extension_status(NULL) == NULL)
VALUE_ROW(v_ctx_free, (nnk_context_free(NULL), 1))
VALUE_ROW(v_ctx_backend_count, nnk_context_backend_count(NULL) == 0)
VALUE_ROW(v_ctx_backend, nnk_context_backend(NULL, 0) == NULL && nnk_context_backend(ctx, 99) == NULL &&
                         nnk_context_backend(ctx, -1) == NULL)
VALUE_ROW(v_ctx_device, nnk_context_device_id(NULL) == -1)
VALUE_ROW(v_ctx_type, nnk_context_type_config(NULL) == NNK_F32)
VALUE_ROW(v_ctx_type_name, strcmp(nnk_context_type_config_name(NULL), "float") == 0)
VALUE_ROW(v_ctx_str, nnk_context_str(NULL) != NULL)
VALUE_ROW(v_array_retain, nnk_array_retain(NULL) == NULL)
VALUE_ROW(v_array_free, (nnk_array_free(NULL), 1))
VALUE_ROW(v_array_getters, nnk_array_dtype(NULL) == NNK_DTYPE_COUNT && nnk_array_ndim(NULL) == -1 &&
                           !nnk_array_shape(NULL) && !nnk_array_strides(NULL) && nnk_array_offset(NULL) == 0 &&
                           nnk_array_size(NULL) == 0 && nnk_array_is_contiguous(NULL) == 0 && !nnk_array_data(NULL) &&
                           !nnk_array_extension(NULL) && nnk_array_device(NULL) == -1)
VALUE_ROW(v_module_free, (nnk_module_free(NULL), 1))
VALUE_ROW(v_module_count, nnk_module_kernel_count(NULL) == 0)
VALUE_ROW(v_module_name, nnk_module_kernel_name(NULL, 0) == NULL && nnk_module_kernel_name(mod, 99) == NULL &&
                         nnk_module_kernel_name(mod, -1) == NULL)
VALUE_ROW(v_kernel_free, (nnk_kernel_free(NULL), 1))
VALUE_ROW(v_kernel_getters, nnk_kernel_name(NULL) == NULL && nnk_kernel_is_reduction(NULL) == 0 &&
                            nnk_kernel_input_count(NULL) == 0 && nnk_kernel_output_count(NULL) == 0)
VALUE_ROW(v_args_free, (nnk_args_free(NULL), nnk_args_reset(NULL), 1))
VALUE_ROW(v_args_output_count, nnk_args_output_count(NULL) == 0)
VALUE_ROW(v_jit_getters, nnk_jit_fn_cache_size(NULL) == 0 && nnk_jit_fn_kernel(NULL) == NULL)
VALUE_ROW(v_jit_free, (nnk_jit_fn_free(NULL), 1))
VALUE_ROW(v_jit_stats, (nnk_jit_get_stats(NULL), 1))
VALUE_ROW(v_names, nnk_status_name((nnk_status)-1) != NULL && nnk_dtype_name((nnk_dtype)99) == NULL &&
                   nnk_dtype_size((nnk_dtype)99) == 0)

#define R(id) {#id, id}
static const struct { const char *what; int (*run)(void); } rows[] = {
    R(r_dtype_parse_name), R(r_dtype_parse_out), R(r_list_ext_count), R(r_list_ext_names), R(r_import_name),
    R(r_import_out), R(r_register), R(r_ext_ctx_ext), R(r_ext_ctx_out), R(r_ext_sync), R(r_ext_count_ext),
    R(r_ext_count_out), R(r_ext_devs_ext), R(r_ext_devs_out), R(r_ext_devs_count), R(r_ext_clear),
    R(r_ext_stats_ext), R(r_ext_stats_out), R(r_get_ctx_name), R(r_get_ctx_out), R(r_clone_ctx), R(r_clone_out),
    R(r_set_default), R(r_get_default), R(r_new_shape), R(r_new_out), R(r_new_default_shape), R(r_new_default_out),
    R(r_zeros_shape), R(r_zeros_out), R(r_from_host_shape), R(r_from_host_data), R(r_from_host_out),
    R(r_wrap_shape), R(r_wrap_data), R(r_wrap_out), R(r_slice_a), R(r_slice_s), R(r_slice_out), R(r_permute_a),
    R(r_permute_perm), R(r_permute_out), R(r_transpose_a), R(r_transpose_out), R(r_reshape_a), R(r_reshape_shape),
    R(r_reshape_out), R(r_bcast_a), R(r_bcast_shape), R(r_bcast_out), R(r_copy_dst), R(r_copy_src), R(r_to_a),
    R(r_to_out), R(r_to_host_a), R(r_to_host_dst), R(r_from_into_a), R(r_from_into_src), R(r_module_src),
    R(r_module_out), R(r_module_kernel_m), R(r_module_kernel_name), R(r_module_kernel_out), R(r_from_desc_desc),
    R(r_from_desc_out), R(r_from_source_src), R(r_from_source_sym), R(r_from_source_out), R(r_launch_desc_desc),
    R(r_launch_desc_args), R(r_launch_stream_desc), R(r_launch_stream_plan),
    R(r_args_new), R(r_args_array_a), R(r_args_array_x), R(r_args_named_array_a), R(r_args_named_array_name),
    R(r_args_named_array_x), R(r_args_f64), R(r_args_named_f64_a), R(r_args_named_f64_name), R(r_args_i64),
    R(r_args_named_i64_a), R(r_args_named_i64_name), R(r_args_u64), R(r_args_named_u64_a), R(r_args_named_u64_name),
    R(r_args_c128), R(r_args_named_c128_a),
    R(r_args_named_c128_name), R(r_args_out_a), R(r_args_out_y), R(r_args_axes_a),
    R(r_args_axes_axes), R(r_args_keepdims), R(r_args_context_a), R(r_args_output_a), R(r_args_output_out),
    R(r_launch_k), R(r_launch_args), R(r_jit_code), R(r_jit_out), R(r_jit_call_fn), R(r_jit_call_args),
    R(r_host_run_desc), R(r_host_run_plan), R(r_host_compile_src), R(r_host_compile_sym), R(r_host_compile_out),
    R(r_host_block_ptr), R(r_host_block_block), R(r_host_cache_load_key), R(r_host_cache_load_data),
    R(r_host_cache_store_key),
    R(o_reshape_huge), R(o_wrap_huge_strides), R(o_wrap_negative_strides), R(o_slice_huge_step),
    R(o_broadcast_space_huge), R(l_33_scalars), R(l_33_tensors), R(l_70_params), R(l_32_and_32),
    R(v_ext_name), R(v_ext_status), R(v_ctx_free), R(v_ctx_backend_count), R(v_ctx_backend), R(v_ctx_device),
    R(v_ctx_type), R(v_ctx_type_name), R(v_ctx_str), R(v_array_retain), R(v_array_free), R(v_array_getters), R(v_module_free),
    R(v_module_count), R(v_module_name), R(v_kernel_free), R(v_kernel_getters), R(v_args_free),
    R(v_args_output_count), R(v_jit_getters), R(v_jit_free), R(v_jit_stats), R(v_names),
};

/* An extension whose init records the host API (for the host rows). */
static nnk_status probe_init(const nnk_host_api *h, void **state)
{
    host = h;
    *state = NULL;
    return NNK_OK;
}
static nnk_status probe_count(void *state, int32_t *n)
{
    (void)state;
    *n = 1;
    return NNK_OK;
}
static nnk_status probe_context(void *st, nnk_context_spec *spec)
{
    (void)st;
    spec->nbackends = 1;
    strcpy(spec->backends[0], "cpu:float");
    return NNK_OK;
}
static nnk_status probe_devices(void *st, nnk_device_info *o, int32_t c) { (void)st, (void)o, (void)c; return NNK_OK; }
static nnk_status probe_sync(void *st, int32_t d) { (void)st, (void)d; return NNK_OK; }
static nnk_status probe_alloc(void *st, int32_t d, size_t n, void **p) { (void)st, (void)d, (void)n, (void)p; return NNK_ENOMEM; }
static void probe_free(void *st, int32_t d, void *p) { (void)st, (void)d, (void)p; }
static nnk_status probe_zero(void *st, int32_t d, void *p, size_t n) { (void)st, (void)d, (void)p, (void)n; return NNK_OK; }
static nnk_status probe_copy(void *st, int32_t d, nnk_copy_kind k, void *a, const void *b, size_t n)
{
    (void)st, (void)d, (void)k, (void)a, (void)b, (void)n;
    return NNK_OK;
}
static void probe_kfree(void *st, nnk_ext_kernel *k) { (void)st, (void)k; }
static nnk_status probe_launch(void *st, int32_t d, const nnk_ext_kernel *k, const nnk_plan *p)
{
    (void)st, (void)d, (void)k, (void)p;
    return NNK_EUNSUPPORTED;
}

int main(void)
{
    char dir[] = "/tmp/nnk-null-XXXXXX";
    if (!mkdtemp(dir))
        return 99;
    setenv("NNK_CACHE_DIR", dir, 1);
    static nnk_extension_ops ops = {.abi_version = NNK_EXTENSION_ABI_VERSION, .size = sizeof ops,
                                    .name = "nullprobe", .init = probe_init, .context = probe_context, .get_device_count = probe_count,
                                    .get_devices = probe_devices, .device_synchronize = probe_sync,
                                    .mem_alloc = probe_alloc, .mem_free = probe_free, .memset_zero = probe_zero,
                                    .copy = probe_copy, .kernel_free = probe_kfree, .launch = probe_launch};
    nnk_extension *pe;
    nnk_context *pctx = NULL;
    nnk_dtype_parse(NULL, NULL); /* a failure: the message the successes below must keep */
    char before[512];
    snprintf(before, sizeof before, "%s", nnk_last_error());
    if (nnk_get_extension_context("cpu", "", &ctx) || nnk_import_extension("cpu", &ext) ||
        nnk_array_zeros(NULL, NNK_F32, 1, shape, &arr) || nnk_module_compile(NULL, src, NULL, &mod) ||
        nnk_module_kernel(mod, "k", &ker) || nnk_args_new(&args) || nnk_create_jit_fn(src, NULL, &jfn) ||
        nnk_register_extension(&ops) || nnk_import_extension("nullprobe", &pe) || nnk_extension_context(pe, "", &pctx) || !host) {
        fprintf(stderr, "setup failed: %s\n", nnk_last_error());
        return 99;
    }
    nnk_context_free(pctx);
    int failed = 0;
    if (strcmp(before, nnk_last_error()) != 0) {
        printf("nnk_last_error() changed by successful calls: '%s' became '%s'\n", before, nnk_last_error());
        failed++;
    }
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0)
            _exit(rows[i].run() ? 0 : 1);
        int ws = 0;
        waitpid(p, &ws, 0);
        const char *verdict = WIFSIGNALED(ws) ? "CRASH" : WEXITSTATUS(ws) ? "FAIL" : "ok";
        if (strcmp(verdict, "ok") != 0) {
            printf("%-28s %s\n", rows[i].what, verdict);
            failed++;
        }
    }
    printf("%zu rows, %d failed\n", sizeof rows / sizeof *rows, failed);
    nnk_jit_fn_free(jfn);
    nnk_args_free(args);
    nnk_module_free(mod);
    nnk_array_free(arr);
    nnk_context_free(ctx);
    nnk_shutdown();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 99;
    return failed ? 1 : 0;
}
