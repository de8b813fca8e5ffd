/* Front-end throughput: checks a generated file of N kernels (default
 * 10,000) in memory and reports the time and the peak memory.  The goal is
 * under one second for 10,000 kernels.  Usage: frontend_bench [N] [REPEAT] */
#include "nnkc.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    int repeat = argc > 2 ? atoi(argv[2]) : 5;
    Buf src = {0};
    buf_puts(&src, "const SCALE = 0.5;\nfunc sq(x) = x * x;\n");
    for (int i = 0; i < n; i++) {
        if (i % 4 == 3)
            buf_printf(&src,
                       "reduction r%d<T: float>(x: T[], eps: T = 0.00001) -> (y: T[]) {\n"
                       "    let mu = mean(x);\n    let var = mean(sq(x - mu));\n"
                       "    y = (x - mu) * rsqrt(var + eps);\n}\n", i);
        else
            buf_printf(&src,
                       "elementwise k%d<T: float>(a: T, x: T[], y: T[]) -> (z: T[]) {\n"
                       "    let u = SCALE * (x + 0.044715 * x * sq(x));\n"
                       "    z = a * x * (1 + tanh(u)) + y / %d;\n}\n", i, i + 1);
    }
    double best_check = 1e30, best_full = 1e30;
    int instances = 0;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        Compiler *c = nnkc_new();
        jmp_buf jb; /* the emitters' scratch lives in the entered compiler's arena */
        if (!c)
            return 1;
        if (setjmp(jb) != 0) {
            fprintf(stderr, "out of memory or an internal error\n");
            return 1;
        }
        nnkc_enter(c, &jb);
        nnkc_compile(c, "bench.nnk", src.data, src.len, false); /* lowering is timed apart */
        double t1 = now();
        for (int i = 0; i < c->instances.n; i++)
            lower_instance(c, c->instances.items[i]);
        Buf out = {0};
        EmitOptions eo = {.source_name = "bench.nnk", .symbol_suffix = ""};
        emit_c_file(c, &c->instances, &eo, &out);
        double t2 = now();
        if (c->nerrors) {
            fprintf(stderr, "unexpected errors in the generated file\n");
            return 1;
        }
        instances = c->instances.n;
        if (t1 - t0 < best_check)
            best_check = t1 - t0;
        if (t2 - t0 < best_full)
            best_full = t2 - t0;
        buf_free(&out);
        nnkc_leave(c);
        nnkc_free(c);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("front end: %d kernels (%zu bytes of source, %d instances)\n", n, src.len, instances);
    printf("  check (parse + sema):            %8.3f s  (goal < 1 s for 10,000 kernels)\n", best_check);
    printf("  check + IR + C emission:         %8.3f s\n", best_full);
    printf("  peak resident memory:            %8.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    buf_free(&src);
    return 0;
}
