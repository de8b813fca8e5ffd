/* opencl_demo.c - the OpenCL step of the README demo: one kernel from a
 * string on the `opencl` extension's first device (PoCL's CPU device, or
 * a GPU's OpenCL driver), checked against the same kernel on the CPU.
 * Without an OpenCL device it says why (nnk_extension_status) and exits 0:
 * the demo is about what runs where, and nothing runs here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <nnk/nnk.h>

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        nnk_status s_ = (call);                                                                         \
        if (s_ != NNK_OK) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(s_), nnk_last_error()); \
            return 1;                                                                                   \
        }                                                                                               \
    } while (0)

static const char code[] =
    "reduction softmax<T: float>(x: T[]) -> (y: T[]) {\n"
    "    let m = max(x);\n"
    "    let s = sum(exp(x - m));\n"
    "    y = exp(x - m) / s;\n"
    "}\n";

enum { ROWS = 4, COLS = 1000 };

/* softmax of every row of x into y, through the kernel, on ctx's device */
static int run(nnk_context *ctx, const float *x, float *y, const char **where)
{
    nnk_module *m;
    nnk_kernel *k;
    nnk_array *ax, *ay;
    nnk_args *args;
    int64_t shape[2] = {ROWS, COLS};
    CHECK(nnk_module_compile(ctx, code, "name=softmax.nnk", &m));
    CHECK(nnk_module_kernel(m, "softmax", &k));
    CHECK(nnk_array_from_host(ctx, NNK_F32, 2, shape, x, &ax));
    CHECK(nnk_args_new(&args));
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_launch(k, args));
    CHECK(nnk_args_output(args, 0, &ay));
    CHECK(nnk_array_to_host(ay, NNK_F32, y, sizeof(float) * ROWS * COLS));
    *where = nnk_extension_name(nnk_array_extension(ay)); /* valid until nnk_shutdown */
    nnk_array_free(ay);
    nnk_args_free(args);
    nnk_array_free(ax);
    nnk_module_free(m);
    return 0;
}

int main(void)
{
    nnk_extension *ext;
    CHECK(nnk_import_extension("opencl", &ext));
    int32_t n = 0;
    CHECK(nnk_extension_get_device_count(ext, &n));
    if (n == 0) {
        printf("no OpenCL device, so nothing runs on opencl: %s\n", nnk_extension_status(ext));
        nnk_shutdown();
        return 0;
    }
    nnk_device_info dev;
    CHECK(nnk_extension_get_devices(ext, &dev, 1, &n));
    static float x[ROWS * COLS], y[ROWS * COLS], ref[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)sin(i * 0.37) * 8;
    nnk_context *ctx, *cpu;
    const char *where = "?", *cpu_where = "?";
    CHECK(nnk_get_extension_context("opencl", "device_id=0", &ctx));
    CHECK(nnk_get_extension_context("cpu", "", &cpu));
    if (run(ctx, x, y, &where) || run(cpu, x, ref, &cpu_where))
        return 1;
    double worst = 0;
    for (int i = 0; i < ROWS * COLS; i++)
        worst = fmax(worst, fabs((double)y[i] - ref[i]) / fmax(fabs((double)ref[i]), 1e-30));
    printf("softmax of %d rows of %d on %s (opencl device 0: %s): y[0][0..2] = %.6g %.6g %.6g\n", ROWS, COLS, where,
           dev.name, y[0], y[1], y[2]);
    printf("the same kernel on %s: largest relative difference %.2g\n", cpu_where, worst);
    printf("%s\n", nnk_extension_status(ext));
    const int ok = strcmp(where, "opencl") == 0 && worst < 1e-5;
    nnk_context_free(ctx);
    nnk_context_free(cpu);
    nnk_shutdown();
    return ok ? 0 : 1;
}
