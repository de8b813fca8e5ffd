/* runtime_bench.c - figures of the runtime (not a test):
 *   launch overhead of a 1,000-element elementwise kernel (median of many calls),
 *   cold JIT compile (emit + C compiler + load), disk-cache hit, memory-cache hit,
 *   and module compilation (libnnkc front end).
 * Usage: bench/runtime_bench [calls]   (uses a fresh NNK_CACHE_DIR under /tmp) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nnk/nnk.h>

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        nnk_status s_ = (call);                                                                         \
        if (s_ != NNK_OK) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, nnk_status_name(s_), nnk_last_error()); \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A saxpy whose source differs by `salt` (a distinct kernel each time). */
static void source(char *buf, size_t n, int salt)
{
    snprintf(buf, n, "elementwise saxpy(a: f32, x: f32[], y: f32[]) -> (z: f32[]) { z = a * x + y + %d.0; }\n", salt);
}

/* Seconds for the first launch of a fresh module of `src` (module
 * compilation excluded; it is timed separately). */
static double first_launch(const char *src, nnk_args *args, double *module_s)
{
    nnk_module *m;
    nnk_kernel *k;
    double t0 = now();
    CHECK(nnk_module_compile(NULL, src, NULL, &m));
    double t1 = now();
    CHECK(nnk_module_kernel(m, "saxpy", &k));
    CHECK(nnk_launch(k, args));
    double t2 = now();
    nnk_module_free(m);
    if (module_s)
        *module_s = t1 - t0;
    return t2 - t1;
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 100000;
    if (calls < 10)
        calls = 10;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/nnk-bench-%ld", (long)getpid());
    setenv("NNK_CACHE_DIR", dir, 1);

    int64_t shape[] = {1000};
    nnk_array *x, *y, *z;
    CHECK(nnk_array_zeros(NULL, NNK_F32, 1, shape, &x));
    CHECK(nnk_array_zeros(NULL, NNK_F32, 1, shape, &y));
    CHECK(nnk_array_zeros(NULL, NNK_F32, 1, shape, &z));
    nnk_args *args;
    CHECK(nnk_args_new(&args));
    CHECK(nnk_args_f64(args, 2));
    CHECK(nnk_args_array(args, x));
    CHECK(nnk_args_array(args, y));
    CHECK(nnk_args_out(args, z));

    /* cold compiles, disk hits and memory hits, each on distinct kernels */
    enum { REPS = 7 };
    double cold[REPS], disk[REPS], mem[REPS], modc[REPS];
    char src[256];
    for (int i = 0; i < REPS; i++) {
        source(src, sizeof src, 1000 + i);
        cold[i] = first_launch(src, args, &modc[i]);  /* emit + cc + load */
        mem[i] = first_launch(src, args, NULL);       /* emit + hash + in-process lookup */
        nnk_jit_clear_memory_cache();
        disk[i] = first_launch(src, args, NULL);      /* emit + hash + verify + dlopen */
    }

    /* launch overhead: one kernel, warm, arguments reused */
    nnk_module *m;
    nnk_kernel *k;
    source(src, sizeof src, 0);
    CHECK(nnk_module_compile(NULL, src, NULL, &m));
    CHECK(nnk_module_kernel(m, "saxpy", &k));
    CHECK(nnk_launch(k, args));
    double *lat = malloc(sizeof(double) * (size_t)calls);
    for (int i = 0; i < calls; i++) {
        double t0 = now();
        CHECK(nnk_launch(k, args));
        lat[i] = now() - t0;
    }
    double launch_given = median(lat, calls);
    /* the same with the output allocated by each launch (caching allocator) */
    nnk_args *args2;
    CHECK(nnk_args_new(&args2));
    CHECK(nnk_args_f64(args2, 2));
    CHECK(nnk_args_array(args2, x));
    CHECK(nnk_args_array(args2, y));
    for (int i = 0; i < calls; i++) {
        double t0 = now();
        CHECK(nnk_launch(k, args2));
        lat[i] = now() - t0;
    }
    double launch_alloc = median(lat, calls);
    nnk_jit_stats js;
    nnk_jit_get_stats(&js);

    printf("%-48s %12s\n", "nnk runtime (cpu extension)", "median");
    printf("%-48s %9.3f us\n", "launch, 1000 elements, output given", launch_given * 1e6);
    printf("%-48s %9.3f us\n", "launch, 1000 elements, output allocated", launch_alloc * 1e6);
    printf("%-48s %9.3f ms\n", "cold JIT compile (emit + cc + dlopen)", median(cold, REPS) * 1e3);
    printf("%-48s %9.3f ms\n", "disk-cache hit (emit + verify + dlopen)", median(disk, REPS) * 1e3);
    printf("%-48s %9.3f ms\n", "memory-cache hit (emit + hash + lookup)", median(mem, REPS) * 1e3);
    printf("%-48s %9.3f ms\n", "module compile (libnnkc front end)", median(modc, REPS) * 1e3);
    printf("(%d launches each; %d kernels compiled; JIT: %llu compiles, %llu disk hits, %llu memory hits)\n", calls,
           REPS, (unsigned long long)js.compiles, (unsigned long long)js.disk_hits,
           (unsigned long long)js.memory_hits);

    free(lat);
    nnk_module_free(m);
    nnk_args_free(args);
    nnk_args_free(args2);
    nnk_array_free(x);
    nnk_array_free(y);
    nnk_array_free(z);
    nnk_shutdown();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) != 0;
}
