/* test_oom.c - allocation failure at every point of a session.
 *
 * The program is linked with libnnk's objects and -Wl,--wrap for malloc,
 * calloc, realloc, aligned_alloc, strndup and free (Makefile.am), so every
 * allocation the runtime and the compiler make goes through the wrappers
 * here.  A first run of the scenario (compile a module -> arrays -> launch
 * an elementwise and a reduction kernel -> a jit function -> free ->
 * nnk_shutdown; also an import, a module with an error, contexts, views
 * and copies)
 * counts its allocations, T; then for every N in 1..T a
 * child process fails the N-th allocation and checks that
 *   - every call returns NNK_OK or NNK_ENOMEM, and an NNK_OK result is
 *     right (a failure nobody reports is as bad as a crash); a call that
 *     returned NNK_ENOMEM succeeds when made again with the same objects
 *     (the module, kernel, arguments and arrays are still usable);
 *   - nothing crashes, nothing is printed (a library prints nothing);
 *   - after nnk_shutdown no block allocated through the wrappers is left
 *     (the wrappers track them, so this holds in every build; under
 *     AddressSanitizer its leak checker runs in each child as well);
 *   - the same scenario then succeeds in the same process (a failure
 *     leaves no broken state behind).
 * NNK_OOM_STEP=K tries every K-th N only.  The default is every N (about
 * 350 children, 12 s of CPU) in a plain build, which checks statuses,
 * crashes and leaks (the wrappers' own accounting) at every point; under
 * the sanitizers (SAN_FLAGS set by make check) a child costs about ten
 * times as much, and every 8th N is tried, for the memory errors only
 * AddressSanitizer sees.  The disk cache is warmed first, so the
 * children compile no C. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nnk/nnk.h"

/* ---- the wrappers ----------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
char *__real_strndup(const char *s, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
char *__wrap_strndup(const char *s, size_t n);
void __wrap_free(void *p);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count;      /* allocations since arm() */
static long fail_at;    /* the one to fail (0: none) */
static int failed;      /* it was reached */

/* Live blocks: an open-addressing set of pointers. */
enum { SLOTS = 1 << 17 };
static void *live[SLOTS];
static long nlive;
static void *const TOMB = (void *)1;

static size_t slot_of(void *p) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - 17); }

static void track(void *p)
{
    size_t i = slot_of(p);
    while (live[i] && live[i] != TOMB)
        i = (i + 1) & (SLOTS - 1);
    live[i] = p;
    nlive++;
}

static void untrack(void *p)
{
    for (size_t i = slot_of(p); live[i]; i = (i + 1) & (SLOTS - 1))
        if (live[i] == p) {
            live[i] = TOMB;
            nlive--;
            return;
        }
}

/* Whether this allocation is the one to fail (with lock held). */
static int fail_now(void)
{
    if (++count != fail_at)
        return 0;
    failed = 1;
    return 1;
}

#define ALLOC(expr)                       \
    pthread_mutex_lock(&lock);            \
    void *p_ = fail_now() ? NULL : (expr); \
    if (p_)                               \
        track(p_);                        \
    pthread_mutex_unlock(&lock);          \
    return p_;

void *__wrap_malloc(size_t n) { ALLOC(__real_malloc(n)) }
void *__wrap_calloc(size_t n, size_t m) { ALLOC(__real_calloc(n, m)) }
void *__wrap_aligned_alloc(size_t a, size_t n) { ALLOC(__real_aligned_alloc(a, n)) }
char *__wrap_strndup(const char *s, size_t n)
{
    ALLOC(__real_strndup(s, n))
}

void *__wrap_realloc(void *p, size_t n)
{
    pthread_mutex_lock(&lock);
    void *q = fail_now() ? NULL : __real_realloc(p, n);
    if (q) {
        if (p)
            untrack(p);
        track(q);
    }
    pthread_mutex_unlock(&lock);
    return q;
}

void __wrap_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&lock);
    untrack(p);
    pthread_mutex_unlock(&lock);
    __real_free(p);
}

static void arm(long n)
{
    pthread_mutex_lock(&lock);
    count = 0;
    fail_at = n;
    failed = 0;
    pthread_mutex_unlock(&lock);
}

/* ---- the scenario ------------------------------------------------------------ */

static const char *module_src =
    "import \"lib.nnk\";\n"
    "elementwise axpy(a: f32, x: f32[], y: f32[]) -> (z: f32[]) { z = a * x + y; }\n"
    "reduction rsum(x: f32[]) -> (s: f32) { s = sum(sq(x)); }\n";
static const char *lib_src = "func sq(v) = v * v;\n"; /* imported from the cache directory */
static char module_options[512];
static const char *jit_src = "elementwise scale<T: float>(x: T[], k: T = 1) -> (y: T[]) { y = x * k; }\n";

/* What the scenario saw: the first failing status, or NNK_EINTERNAL for a
 * wrong result reported as success. */
typedef struct outcome {
    nnk_status status;
    int enomem;         /* a call returned NNK_ENOMEM (and then worked when made again) */
    char where[128];
    char msg[256];
} outcome;

/* A call that ran out of memory is made again at once (the failing
 * allocation is past): the objects it was given must still work. */
#define STEP(call)                                                                          \
    do {                                                                                    \
        nnk_status st_ = (call);                                                            \
        if (st_ == NNK_ENOMEM) {                                                            \
            o->enomem = 1;                                                                  \
            st_ = (call);                                                                   \
        }                                                                                   \
        if (st_) {                                                                          \
            o->status = st_;                                                                \
            snprintf(o->where, sizeof o->where, "%s", #call);                               \
            snprintf(o->msg, sizeof o->msg, "%s", nnk_last_error());                        \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)
#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            o->status = NNK_EINTERNAL;                                                      \
            snprintf(o->where, sizeof o->where, "wrong result: %s", #cond);                 \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

static void scenario(outcome *o)
{
    o->status = NNK_OK;
    o->enomem = 0;
    nnk_module *m = NULL, *bad = NULL;
    nnk_context *ctx = NULL, *ctx2 = NULL;
    nnk_array *vs = NULL, *vt = NULL, *vr = NULL, *vb = NULL;
    nnk_kernel *k;
    nnk_array *x = NULL, *y = NULL, *z = NULL, *s = NULL, *h = NULL, *w = NULL;
    nnk_args *a = NULL;
    nnk_jit_fn *fn = NULL;
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[8];
    const int64_t shape[] = {2, 4};
    /* a module with an error: its diagnostics, or out of memory */
    const char *bad_src = "elementwise f(x: f32[]) -> (y: f32[]) { y = x + nope; }";
    nnk_status sb;
    STEP((sb = nnk_module_compile(NULL, bad_src, NULL, &bad)) == NNK_ECOMPILE ? NNK_OK : sb);
    CHECK(sb == NNK_ECOMPILE && strstr(nnk_last_error(), "nope") && strstr(nnk_last_error(), "^"));
    STEP(nnk_get_extension_context("cpu", "device_id=0", &ctx));
    STEP(nnk_context_clone(ctx, &ctx2));
    STEP(nnk_module_compile(ctx2, module_src, module_options, &m));
    STEP(nnk_array_from_host(NULL, NNK_F32, 2, shape, v, &x));
    STEP(nnk_array_zeros(NULL, NNK_F32, 2, shape, &y));
    /* views and copies: y[:, 1:3] = x.T reshaped */
    nnk_slice sl[] = {{NNK_SLICE_NONE, NNK_SLICE_NONE, 1}, {1, 3, 1}};
    STEP(nnk_array_slice(y, 2, sl, &vs));
    STEP(nnk_array_transpose(x, &vt));
    STEP(nnk_array_reshape(vs, 1, (int64_t[]){4}, &vr) == NNK_ESHAPE ? NNK_OK : NNK_EINTERNAL);
    STEP(nnk_array_broadcast_to(vs, 3, (int64_t[]){3, 2, 2}, &vb));
    nnk_slice sx[] = {{NNK_SLICE_NONE, NNK_SLICE_NONE, 1}, {0, 2, 1}};
    nnk_array_free(vr);
    vr = NULL;
    STEP(nnk_array_slice(x, 2, sx, &vr));
    STEP(nnk_array_copy(vs, vt) == NNK_ESHAPE ? nnk_array_copy(vs, vr) : NNK_EINTERNAL);
    STEP(nnk_array_to_host(y, NNK_F32, r, sizeof r));
    CHECK(r[1] == 1 && r[2] == 2 && r[5] == 5 && r[6] == 6 && r[0] == 0 && r[7] == 0);
    STEP(nnk_args_new(&a));
    STEP(nnk_args_context(a, ctx));
    STEP(nnk_module_kernel(m, "axpy", &k));
    STEP(nnk_args_f64(a, 2));
    STEP(nnk_args_array(a, x));
    STEP(nnk_args_named_array(a, "y", x));
    STEP(nnk_launch(k, a));
    STEP(nnk_args_output(a, 0, &z));
    STEP(nnk_array_to_host(z, NNK_F32, r, sizeof r));
    CHECK(r[0] == 3 && r[7] == 24);
    nnk_args_reset(a);
    STEP(nnk_module_kernel(m, "rsum", &k));
    STEP(nnk_args_array(a, x));
    STEP(nnk_launch(k, a));
    STEP(nnk_args_output(a, 0, &s));
    STEP(nnk_array_to_host(s, NNK_F32, r, sizeof r[0]));
    CHECK(r[0] == 204);
    nnk_args_reset(a);
    STEP(nnk_create_jit_fn(jit_src, "k=3", &fn));
    STEP(nnk_array_to(x, NULL, NNK_F16, &h));
    STEP(nnk_args_array(a, h));
    STEP(nnk_jit_fn_call(fn, a));
    STEP(nnk_args_output(a, 0, &w));
    STEP(nnk_array_to_host(w, NNK_F32, r, sizeof r));
    CHECK(r[1] == 6 && r[7] == 24 && nnk_array_dtype(w) == NNK_F16);
out:
    nnk_array_free(vb);
    nnk_array_free(vr);
    nnk_array_free(vt);
    nnk_array_free(vs);
    nnk_context_free(ctx2);
    nnk_context_free(ctx);
    nnk_module_free(bad);
    nnk_array_free(w);
    nnk_array_free(h);
    nnk_jit_fn_free(fn);
    nnk_array_free(s);
    nnk_array_free(z);
    nnk_args_free(a);
    nnk_array_free(y);
    nnk_array_free(x);
    nnk_module_free(m);
    nnk_shutdown();
}

/* ---- one child per N ----------------------------------------------------------- */

typedef struct report {
    long allocations; /* counted while armed */
    int reached;      /* the N-th allocation happened */
    outcome first, again;
    long leaked;      /* tracked blocks alive after the first run's shutdown */
} report;

/* Runs the scenario with allocation n failing (0: none) in a child;
 * returns the child's wait status and fills *r and the child's output. */
static int run_child(long n, report *r, char *printed, size_t cap)
{
    int rp[2], op[2];
    if (pipe(rp) || pipe(op))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(rp[0]);
        close(op[0]);
        dup2(op[1], 1);
        dup2(op[1], 2);
        report rep = {0};
        arm(n);
        scenario(&rep.first);
        pthread_mutex_lock(&lock);
        rep.allocations = count;
        rep.reached = failed;
        fail_at = 0;
        rep.leaked = nlive;
        pthread_mutex_unlock(&lock);
        scenario(&rep.again);
        if (write(rp[1], &rep, sizeof rep) != (ssize_t)sizeof rep)
            _exit(3);
        exit(0); /* not _exit: LeakSanitizer checks at exit */
    }
    close(rp[1]);
    close(op[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(op[0], printed + len, cap - 1 - len)) > 0 && len + (size_t)got < cap - 1)
        len += (size_t)got;
    printed[len] = 0;
    memset(r, 0, sizeof *r);
    ssize_t rn = read(rp[0], r, sizeof *r);
    close(rp[0]);
    close(op[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (rn != (ssize_t)sizeof *r && WIFEXITED(ws) && !WEXITSTATUS(ws))
        return 0x7f00; /* no report */
    return ws;
}

int main(void)
{
    char dir[] = "/tmp/nnk-oom-XXXXXX";
    if (!mkdtemp(dir))
        return 99;
    setenv("NNK_CACHE_DIR", dir, 1);
    char lib[300];
    snprintf(lib, sizeof lib, "%s/lib", dir);
    snprintf(module_options, sizeof module_options, "opt_level=1 include_dirs=%s", lib);
    snprintf(lib, sizeof lib, "%s/lib/lib.nnk", dir);
    FILE *lf;
    if (mkdir(module_options + strlen("opt_level=1 include_dirs="), 0700) || !(lf = fopen(lib, "w")) ||
        fputs(lib_src, lf) < 0 || fclose(lf))
        return 99;
    const char *step_env = getenv("NNK_OOM_STEP"), *san = getenv("SAN_FLAGS");
    long step = step_env ? atol(step_env) : san && *san ? 8 : 1;
    if (step < 1)
        step = 1;
    static char printed[1 << 16];
    report r;
    /* Warm the disk cache and count the allocations. */
    int ws = run_child(0, &r, printed, sizeof printed);
    if (ws || r.first.status || r.again.status || r.leaked || printed[0]) {
        printf("the scenario fails without injected failures: wait status %#x, %s at %s: %s; %ld leaked; output:\n%s\n",
               ws, nnk_status_name(r.first.status), r.first.where, r.first.msg, r.leaked, printed);
        return 1;
    }
    long total = r.allocations;
    int bad = 0;
    long runs = 0, enomem = 0, absorbed = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long n = 1; n <= total + 1; n += step) {
        runs++;
        ws = run_child(n, &r, printed, sizeof printed);
        const char *why = NULL;
        char buf[512];
        if (WIFSIGNALED(ws))
            snprintf(buf, sizeof buf, "crash (signal %d)", WTERMSIG(ws)), why = buf;
        else if (ws)
            snprintf(buf, sizeof buf, "exit status %d", WEXITSTATUS(ws)), why = buf;
        else if (r.first.status != NNK_OK)
            snprintf(buf, sizeof buf, "%s at %s%s: %s", nnk_status_name(r.first.status), r.first.where,
                     r.first.enomem ? " (made again after NNK_ENOMEM)" : " (not NNK_ENOMEM)", r.first.msg),
                why = buf;
        else if (r.leaked)
            snprintf(buf, sizeof buf, "%ld blocks leaked", r.leaked), why = buf;
        else if (r.again.status)
            snprintf(buf, sizeof buf, "the next run fails: %s at %s: %s", nnk_status_name(r.again.status),
                     r.again.where, r.again.msg),
                why = buf;
        else if (printed[0])
            snprintf(buf, sizeof buf, "the library printed: %.300s", printed), why = buf;
        if (why) {
            if (bad < 40)
                printf("N=%ld: %s\n", n, why);
            bad++;
        }
        enomem += r.first.enomem;
        absorbed += r.reached && !r.first.enomem;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%ld allocations in the scenario; %ld runs (every %ld): %ld NNK_ENOMEM then recovered, %ld absorbed (the call "
           "succeeded anyway), %d bad; %.1f s\n",
           total, runs, step, enomem, absorbed, bad, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 99;
    return bad ? 1 : 0;
}
