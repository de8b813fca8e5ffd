/* jit_demo.c - the JIT half of the README demo: a kernel from a string,
 * compiled at run time for the CPU, called on arrays, results checked and
 * printed.  Once through nnk_create_jit_fn (PyTorch jiterator style), once
 * through nnk_module_compile (a module with several kernels). */
#include <math.h>
#include <stdio.h>

#include <nnk/nnk.h>

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        nnk_status s_ = (call);                                                                         \
        if (s_ != NNK_OK) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(s_), nnk_last_error()); \
            return 1;                                                                                   \
        }                                                                                               \
    } while (0)

static const char gelu_code[] =
    "const SQRT_2_OVER_PI = 0.7978845608028654;\n"
    "elementwise gelu<T: float>(x: T[], scale: T = 1) -> (y: T[]) {\n"
    "    let u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);\n"
    "    y = scale * 0.5 * x * (1 + tanh(u));\n"
    "}\n";

static const char module_code[] =
    "reduction softmax<T: float>(x: T[]) -> (y: T[]) {\n"
    "    let m = max(x);\n"
    "    let s = sum(exp(x - m));\n"
    "    y = exp(x - m) / s;\n"
    "}\n"
    "reduction l2norm<T: float>(x: T[]) -> (r: T) { r = sqrt(sum(x * x)); }\n";

static double gelu_ref(double x)
{
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

int main(void)
{
    float x[6] = {-3, -1, -0.5f, 0, 1, 2};
    int64_t shape[] = {2, 3};
    nnk_array *ax, *y;
    CHECK(nnk_array_from_host(NULL, NNK_F32, 2, shape, x, &ax));
    nnk_args *args;
    CHECK(nnk_args_new(&args));

    /* 1. jiterator style: compiled at the first call for f32 */
    nnk_jit_fn *gelu;
    CHECK(nnk_create_jit_fn(gelu_code, NULL, &gelu));
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_jit_fn_call(gelu, args));
    CHECK(nnk_args_output(args, 0, &y));
    float out[6];
    CHECK(nnk_array_to_host(y, NNK_F32, out, sizeof out));
    int bad = 0;
    printf("gelu(x), f32:\n");
    for (int i = 0; i < 6; i++) {
        printf("  gelu(%5.2f) = % .6f\n", x[i], out[i]);
        bad |= fabs(out[i] - gelu_ref(x[i])) > 1e-6;
    }
    nnk_array_free(y);
    /* the same function on f16 storage: another instance */
    nnk_array *xh;
    CHECK(nnk_array_to(ax, NULL, NNK_F16, &xh));
    nnk_args_reset(args);
    CHECK(nnk_args_array(args, xh));
    CHECK(nnk_args_named_f64(args, "scale", 2));
    CHECK(nnk_jit_fn_call(gelu, args));
    CHECK(nnk_args_output(args, 0, &y));
    CHECK(nnk_array_to_host(y, NNK_F32, out, sizeof out));
    printf("2 * gelu(x) on %s arrays (scale=2; a second instance, %d signatures compiled):\n",
           nnk_dtype_name(nnk_array_dtype(y)), nnk_jit_fn_cache_size(gelu));
    for (int i = 0; i < 6; i++) {
        printf("  2 * gelu(%5.2f) = % .4f  (f64 reference % .6f)\n", x[i], out[i], 2 * gelu_ref(x[i]));
        bad |= fabs(out[i] - 2 * gelu_ref(x[i])) > 2e-3 * (1 + fabs(out[i]));
    }
    nnk_array_free(y);

    /* 2. a module: softmax over the last axis, l2norm over the first */
    nnk_module *m;
    nnk_kernel *softmax, *l2norm;
    CHECK(nnk_module_compile(NULL, module_code, "name=demo.nnk", &m));
    CHECK(nnk_module_kernel(m, "softmax", &softmax));
    CHECK(nnk_module_kernel(m, "l2norm", &l2norm));
    int32_t last = -1, first = 0;
    nnk_args_reset(args);
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_args_axes(args, 1, &last));
    CHECK(nnk_launch(softmax, args));
    CHECK(nnk_args_output(args, 0, &y));
    CHECK(nnk_array_to_host(y, NNK_F32, out, sizeof out));
    printf("softmax(x, axis=-1):\n  [% .6f % .6f % .6f]\n  [% .6f % .6f % .6f]\n", out[0], out[1], out[2], out[3],
           out[4], out[5]);
    for (int r = 0; r < 2; r++) { /* against a double-precision softmax of each row */
        double top = fmax(fmax(x[3 * r], x[3 * r + 1]), x[3 * r + 2]), e = 0;
        for (int j = 0; j < 3; j++)
            e += exp(x[3 * r + j] - top);
        for (int j = 0; j < 3; j++)
            bad |= fabs(out[3 * r + j] - exp(x[3 * r + j] - top) / e) > 1e-6;
    }
    nnk_array_free(y);
    nnk_args_reset(args);
    CHECK(nnk_args_array(args, ax));
    CHECK(nnk_args_axes(args, 1, &first));
    CHECK(nnk_launch(l2norm, args));
    CHECK(nnk_args_output(args, 0, &y));
    CHECK(nnk_array_to_host(y, NNK_F32, out, 3 * sizeof(float)));
    printf("l2norm(x, axis=0): [% .6f % .6f % .6f]\n", out[0], out[1], out[2]);
    for (int j = 0; j < 3; j++)
        bad |= fabs(out[j] - hypot(x[j], x[j + 3])) > 1e-5;
    nnk_array_free(y);

    /* where it ran: every call above used the default context */
    nnk_context *ctx;
    CHECK(nnk_get_default_context(&ctx));
    printf("ran on the default context, %s: gelu and the module's %d kernels, compiled by libnnk's CPU JIT\n",
           nnk_context_str(ctx), nnk_module_kernel_count(m));
    nnk_context_free(ctx);

    nnk_module_free(m);
    nnk_jit_fn_free(gelu);
    nnk_args_free(args);
    nnk_array_free(xh);
    nnk_array_free(ax);
    nnk_shutdown();
    printf("%s\n", bad ? "MISMATCH" : "all results match the reference");
    return bad;
}
