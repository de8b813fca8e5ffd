/* run_host2.c - finds the host2 sample extension through
 * NNK_EXTENSION_PATH, lists it, imports it and runs a kernel on it (a
 * hand-written descriptor, and a .nnk kernel through the JIT).  Run by
 * tests/runtime/extension-sample.sh. */
#include <stdio.h>
#include <string.h>

#include <nnk/nnk.h>

#define CHECK(call)                                                                 \
    do {                                                                            \
        nnk_status s_ = (call);                                                     \
        if (s_ != NNK_OK) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(s_), nnk_last_error()); \
            return 1;                                                               \
        }                                                                           \
    } while (0)

/* y = 2 x, by hand against nnk/abi.h (1-d views only). */
static void twice_run(const nnk_plan *p, int64_t b, int64_t e)
{
    int64_t sx = p->ndim ? p->strides[0][0] : 0, sy = p->ndim ? p->strides[1][0] : 0;
    for (int64_t i = b; i < e; i++)
        ((float *)p->data[1])[i * sy] = 2 * ((const float *)p->data[0])[i * sx];
}
static const nnk_param_desc twice_params[] = {
    {"x", NNK_F32, NNK_PARAM_TENSOR, {0}},
    {"y", NNK_F32, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}},
};
static const nnk_kernel_desc twice = {
    .abi = NNK_ABI_VERSION, .kind = NNK_KIND_ELEMENTWISE, .name = "twice", .kernel = "twice",
    .nparams = 1, .nouts = 1, .params = twice_params, .run = twice_run,
};

static int check(nnk_array *y, const float *want, int n)
{
    float got[8];
    CHECK(nnk_array_to_host(y, NNK_F32, got, sizeof got));
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "element %d: got %g, want %g\n", i, got[i], want[i]);
            return 1;
        }
    return 0;
}

int main(void)
{
    const char *names[16];
    int32_t n;
    CHECK(nnk_list_extensions(names, 16, &n));
    int found = 0;
    printf("extensions:");
    for (int32_t i = 0; i < n && i < 16; i++) {
        printf(" %s", names[i]);
        found |= strcmp(names[i], "host2") == 0;
    }
    printf("\n");
    if (!found) {
        fprintf(stderr, "host2 is not listed (NNK_EXTENSION_PATH?)\n");
        return 1;
    }
    nnk_extension *ext;
    CHECK(nnk_import_extension("host2", &ext));
    int32_t count;
    nnk_device_info dev[4];
    CHECK(nnk_extension_get_devices(ext, dev, 4, &count));
    printf("%d devices; device 1: %s\n", count, dev[1].name);

    nnk_context *ctx;
    CHECK(nnk_get_extension_context("host2", "device_id=1", &ctx));
    printf("context: %s\n", nnk_context_str(ctx));
    float x[4] = {1, 2, 3, 4};
    int64_t shape[] = {4};
    nnk_array *ax, *y;
    CHECK(nnk_array_from_host(ctx, NNK_F32, 1, shape, x, &ax));
    if (strcmp(nnk_extension_name(nnk_array_extension(ax)), "host2") != 0 || nnk_array_device(ax) != 1)
        return fprintf(stderr, "the array is not on host2:1\n"), 1;

    nnk_kernel *k;
    nnk_args *args;
    CHECK(nnk_kernel_from_desc(ctx, &twice, &k));
    CHECK(nnk_args_new(&args));
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_launch(k, args));
    CHECK(nnk_args_output(args, 0, &y));
    const float want1[4] = {2, 4, 6, 8};
    if (check(y, want1, 4))
        return 1;
    printf("twice on host2:1: ok\n");
    nnk_array_free(y);

    /* a .nnk kernel, generated C compiled through the runtime's JIT */
    nnk_module *m;
    CHECK(nnk_module_compile(ctx, "elementwise axpy(a: f32, x: f32[], y: f32[]) -> (z: f32[]) { z = a * x + y; }",
                             NULL, &m));
    nnk_kernel *axpy;
    CHECK(nnk_module_kernel(m, "axpy", &axpy));
    nnk_args_reset(args);
    CHECK(nnk_args_f64(args, 10));
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_launch(axpy, args));
    CHECK(nnk_args_output(args, 0, &y));
    const float want2[4] = {11, 22, 33, 44};
    if (check(y, want2, 4))
        return 1;
    printf("axpy on host2:1: ok\n");
    CHECK(nnk_extension_device_synchronize(ext, 1));
    nnk_memory_stats st;
    CHECK(nnk_extension_memory_stats(ext, 1, &st));
    printf("host2:1 memory: %llu bytes in use, %llu misses\n", (unsigned long long)st.bytes_in_use,
           (unsigned long long)st.misses);

    nnk_array_free(y);
    nnk_array_free(ax);
    nnk_args_free(args);
    nnk_kernel_free(k);
    nnk_module_free(m);
    nnk_context_free(ctx);
    nnk_shutdown();
    return 0;
}
