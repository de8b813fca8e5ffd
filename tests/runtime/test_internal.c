/* test_internal.c - CUnit tests of libnnk's internals: SHA-256 against
 * the FIPS 180-4 / NIST vectors, the kw parser, the allocator's size
 * classes, the cache entry trailer, the JIT's memory of failed compiles,
 * the thread pool with a descheduled worker. */
#include "../cunit-main.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "nnkc.h"

static void sha(const void *data, size_t n, char hex[65])
{
    rt_sha256 s;
    uint8_t d[32];
    rt_sha256_init(&s);
    rt_sha256_update(&s, data, n);
    rt_sha256_final(&s, d);
    rt_sha256_hex(d, hex);
}

static void test_sha256(void)
{
    char hex[65];
    sha("", 0, hex);
    CU_ASSERT_STRING_EQUAL(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha("abc", 3, hex);
    CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha(two, strlen(two), hex);
    CU_ASSERT_STRING_EQUAL(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces */
    rt_sha256 s;
    uint8_t d[32];
    char buf[997];
    memset(buf, 'a', sizeof buf);
    rt_sha256_init(&s);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof buf ? left : sizeof buf;
        rt_sha256_update(&s, buf, n);
        left -= n;
    }
    rt_sha256_final(&s, d);
    rt_sha256_hex(d, hex);
    CU_ASSERT_STRING_EQUAL(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* 55, 56 and 64 bytes: the padding boundaries */
    memset(buf, 'x', 64);
    sha(buf, 55, hex);
    CU_ASSERT_STRING_EQUAL(hex, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
    sha(buf, 56, hex);
    CU_ASSERT_STRING_EQUAL(hex, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
    sha(buf, 64, hex);
    CU_ASSERT_STRING_EQUAL(hex, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}

static void test_kw(void)
{
    rt_kw kw;
    CU_ASSERT_EQUAL(rt_kw_parse(" device_id=1,type_config=half  x_2=a:b ", "test", &kw), NNK_OK);
    CU_ASSERT_EQUAL(kw.n, 3);
    CU_ASSERT_STRING_EQUAL(rt_kw_take(&kw, "x_2"), "a:b");
    int64_t v = 0;
    CU_ASSERT_EQUAL(rt_kw_int(&kw, "device_id", 0, 3, &v), NNK_OK);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(rt_kw_check_unused(&kw, "test"), NNK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(nnk_last_error(), "type_config"));
    CU_ASSERT_PTR_NULL(rt_kw_take(&kw, "absent"));
    rt_kw_take(&kw, "type_config");
    CU_ASSERT_EQUAL(rt_kw_check_unused(&kw, "test"), NNK_OK);
    rt_kw_free(&kw);
    CU_ASSERT_EQUAL(rt_kw_parse(NULL, "test", &kw), NNK_OK);
    CU_ASSERT_EQUAL(kw.n, 0);
    rt_kw_free(&kw);
    CU_ASSERT_EQUAL(rt_kw_parse("a=1 2b=3", "test", &kw), NNK_EINVAL);
    CU_ASSERT_EQUAL(rt_kw_parse("a = 1", "test", &kw), NNK_EINVAL);
    CU_ASSERT_EQUAL(rt_kw_parse("a=1 a=2", "test", &kw), NNK_EINVAL);
    CU_ASSERT_EQUAL(rt_kw_parse("n=12", "test", &kw), NNK_OK);
    CU_ASSERT_EQUAL(rt_kw_int(&kw, "n", 0, 10, &v), NNK_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(nnk_last_error(), "'n'"));
    rt_kw_free(&kw);
    /* a backslash takes the next character as it is: separators and
     * backslashes in values (a directory with a space in its name) */
    static const struct { const char *text, *a, *b; } esc[] = {
        {"a=/tmp/my\\ dir b=x", "/tmp/my dir", "x"},
        {"a=1\\,2,b=\\\\", "1,2", "\\"},
        {"a=\\ \\\t\\\n b=c\\", " \t\n", "c\\"},
        {"a=\\x\\=y b=\\ ", "x=y", " "},
    };
    for (size_t i = 0; i < sizeof esc / sizeof *esc; i++) {
        CU_ASSERT_EQUAL_FATAL(rt_kw_parse(esc[i].text, "test", &kw), NNK_OK);
        CU_ASSERT_EQUAL(kw.n, 2);
        CU_ASSERT_STRING_EQUAL(rt_kw_take(&kw, "a"), esc[i].a);
        CU_ASSERT_STRING_EQUAL(rt_kw_take(&kw, "b"), esc[i].b);
        rt_kw_free(&kw);
    }
}

static void test_size_classes(void)
{
    CU_ASSERT_EQUAL(rt_size_class(0), 256);
    CU_ASSERT_EQUAL(rt_size_class(256), 256);
    CU_ASSERT_EQUAL(rt_size_class(257), 320);
    CU_ASSERT_EQUAL(rt_size_class(1000), 1024);
    CU_ASSERT_EQUAL(rt_size_class(1025), 1280);
    CU_ASSERT_EQUAL(rt_size_class(4000), 4096);
    CU_ASSERT_EQUAL(rt_size_class(3 << 20), 3 << 20);
    for (size_t n = 1; n < (1u << 24); n = n * 3 + 1) {
        size_t c = rt_size_class(n);
        CU_ASSERT_TRUE(c >= n && (c <= 256 || c - n <= c / 4));
        CU_ASSERT_EQUAL(c % 64, 0);
    }
}

static void test_cache_entry(void)
{
    /* a bound the descriptor-exhaustion step below can reach */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 1024) {
        rl.rlim_cur = 1024;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char dir[] = "/tmp/nnk-test-internal-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    setenv("NNK_CACHE_DIR", dir, 1);
    rt_cache c;
    CU_ASSERT_TRUE_FATAL(rt_cache_open(&c));
    const char *key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const char *other = "1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char path[200], moved[200];
    snprintf(path, sizeof path, "%s/%s.x", dir, key);
    snprintf(moved, sizeof moved, "%s/%s.x", dir, other);
    uint8_t *data;
    size_t n;
    CU_ASSERT_EQUAL(rt_cache_get(&c, key, ".x", &data, &n), NNK_ENOTFOUND);
    CU_ASSERT_EQUAL(rt_cache_put(&c, key, ".x", "not really an object", 20), NNK_OK);
    struct stat st;
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    CU_ASSERT_EQUAL(rt_cache_get(&c, key, ".x", &data, &n), NNK_OK);
    CU_ASSERT_TRUE(n == 20 && memcmp(data, "not really an object", 20) == 0);
    free(data);
    /* out of descriptors (EMFILE): a miss, and the entry stays */
    int fds[4096], nfd = 0;
    while (nfd < 4096 && (fds[nfd] = dup(0)) >= 0)
        nfd++;
    CU_ASSERT_TRUE(nfd < 4096 && errno == EMFILE);
    CU_ASSERT_EQUAL(rt_cache_get(&c, key, ".x", &data, &n), NNK_ENOTFOUND);
    while (nfd > 0)
        close(fds[--nfd]);
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    data = NULL;
    CU_ASSERT_EQUAL(rt_cache_get(&c, key, ".x", &data, &n), NNK_OK);
    free(data);
    /* moved to another key: the keyed digest rejects it */
    CU_ASSERT_EQUAL(rename(path, moved), 0);
    CU_ASSERT_EQUAL(rt_cache_get(&c, other, ".x", &data, &n), NNK_EIO);
    CU_ASSERT_EQUAL(access(moved, F_OK), -1); /* removed */
    /* one flipped byte of the body */
    CU_ASSERT_EQUAL(rt_cache_put(&c, key, ".x", "not really an object", 20), NNK_OK);
    FILE *f = fopen(path, "r+");
    fseek(f, 70, SEEK_SET);
    fputc('N', f);
    fclose(f);
    CU_ASSERT_EQUAL(rt_cache_get(&c, key, ".x", &data, &n), NNK_EIO);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    /* bad names never reach the file system */
    CU_ASSERT_EQUAL(rt_cache_put(&c, "../x", ".x", "a", 1), NNK_EIO);
    CU_ASSERT_EQUAL(rt_cache_put(&c, key, "/../x", "a", 1), NNK_EIO);
    rt_cache_close(&c);
    CU_ASSERT_EQUAL(nnk_cache_clear(), NNK_OK);
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* nothing left */
    unsetenv("NNK_CACHE_DIR");
}

/* spawn.c: statuses, exec failures, input, bounded output, the timeout. */
static void test_tool_run(void)
{
    char out[64];
    NnkcTool t = {.out = out, .outcap = sizeof out};
    char *echo[] = {(char *)"sh", (char *)"-c", (char *)"echo hello; exit 3", NULL};
    CU_ASSERT_EQUAL(nnkc_tool_run(echo, &t), 3);
    CU_ASSERT_STRING_EQUAL(out, "hello\n");
    char *killed[] = {(char *)"sh", (char *)"-c", (char *)"kill -9 $$", NULL};
    CU_ASSERT_EQUAL(nnkc_tool_run(killed, &t), 128 + 9);
    char *missing[] = {(char *)"/nonexistent/tool", NULL};
    CU_ASSERT_EQUAL(nnkc_tool_run(missing, &t), -1);
    CU_ASSERT_EQUAL(t.err, ENOENT);
    char noexec[] = "/tmp/nnk-tool-XXXXXX"; /* a file without x bits: execve fails in the child */
    int fd = mkstemp(noexec);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    close(fd);
    char *noexec_argv[] = {noexec, NULL};
    CU_ASSERT_EQUAL(nnkc_tool_run(noexec_argv, &t), -1);
    CU_ASSERT_EQUAL(t.err, EACCES);
    unlink(noexec);
    /* 200 KiB through stdin and back: more than a pipe holds, output cut at 63 bytes */
    size_t n = 200 << 10;
    char *in = malloc(n);
    memset(in, 'x', n);
    char *cat[] = {(char *)"cat", NULL};
    t.in = in, t.inlen = n;
    CU_ASSERT_EQUAL(nnkc_tool_run(cat, &t), 0);
    CU_ASSERT_EQUAL(t.outlen, sizeof out - 1);
    /* a tool that stops reading its input early: no SIGPIPE in the host */
    char *head[] = {(char *)"head", (char *)"-c", (char *)"1", NULL};
    CU_ASSERT_EQUAL(nnkc_tool_run(head, &t), 0);
    CU_ASSERT_STRING_EQUAL(out, "x");
    free(in);
    t.in = NULL;
    char *sleeper[] = {(char *)"sh", (char *)"-c", (char *)"sleep 30; echo late", NULL};
    t.timeout_ms = 200;
    CU_ASSERT_EQUAL(nnkc_tool_run(sleeper, &t), -1);
    CU_ASSERT_TRUE(t.timed_out);
    t.timeout_ms = 0;
    setenv("NNK_COMPILE_TIMEOUT", "2.5", 1);
    CU_ASSERT_EQUAL(nnkc_tool_timeout_ms(), 2500);
    setenv("NNK_COMPILE_TIMEOUT", "0", 1);
    CU_ASSERT_EQUAL(nnkc_tool_timeout_ms(), 0);
    setenv("NNK_COMPILE_TIMEOUT", "soon", 1);
    CU_ASSERT_EQUAL(nnkc_tool_timeout_ms(), NNKC_DEFAULT_TIMEOUT_S * 1000L);
    unsetenv("NNK_COMPILE_TIMEOUT");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* spawn.c's NnkcRuns (nnkc -c's steps side by side): the job count, the
 * order, and no tool waiting for another's descriptors: cat reads its
 * input to the end while a slow tool started after it runs (before the
 * waiter closed every descriptor not its own, the slow one's waiter held
 * cat's input open, and cat ended only after it, a minute later). */
static void test_tool_runs(void)
{
    char out[3][64];
    NnkcTool t[3];
    for (int i = 0; i < 3; i++)
        t[i] = (NnkcTool){.out = out[i], .outcap = sizeof out[i], .timeout_ms = 20000};
    t[0].in = "abc", t[0].inlen = 3;
    char *cat[] = {(char *)"cat", NULL};
    char *slow[] = {(char *)"sh", (char *)"-c", (char *)"sleep 60; echo slow", NULL};
    char *fail[] = {(char *)"sh", (char *)"-c", (char *)"echo third; exit 4", NULL};
    NnkcRuns *r = nnkc_runs_new(2, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(nnkc_runs_add(r, cat, &t[0]));
    CU_ASSERT_TRUE(nnkc_runs_add(r, slow, &t[1]));
    CU_ASSERT_TRUE(nnkc_runs_add(r, fail, &t[2]));
    CU_ASSERT_FALSE(nnkc_runs_add(r, fail, &t[2])); /* room for 3 */
    double t0 = now_s();
    int st = -9;
    CU_ASSERT_PTR_EQUAL(nnkc_runs_wait(r, &st), &t[0]); /* cat, long before the sleeper */
    CU_ASSERT_EQUAL(st, 0);
    CU_ASSERT_STRING_EQUAL(out[0], "abc");
    CU_ASSERT_TRUE(now_s() - t0 < 30.0); /* not after the sleeper's minute */
    /* two jobs: the third starts only now, and ends before the sleeper */
    CU_ASSERT_PTR_EQUAL(nnkc_runs_wait(r, &st), &t[2]);
    CU_ASSERT_EQUAL(st, 4);
    CU_ASSERT_STRING_EQUAL(out[2], "third\n");
    /* freed while the sleeper runs (as after a failed step): killed and
     * reaped at once */
    t0 = now_s();
    nnkc_runs_free(r);
    CU_ASSERT_TRUE(now_s() - t0 < 30.0);
    /* all to the end */
    char *quick[] = {(char *)"sh", (char *)"-c", (char *)"echo quick", NULL};
    r = nnkc_runs_new(2, 2);
    CU_ASSERT_TRUE(nnkc_runs_add(r, quick, &t[1]));
    CU_ASSERT_TRUE(nnkc_runs_add(r, cat, &t[0]));
    int ended = 0;
    NnkcTool *e;
    while ((e = nnkc_runs_wait(r, &st))) {
        CU_ASSERT_EQUAL(st, 0);
        ended++;
    }
    CU_ASSERT_EQUAL(ended, 2);
    CU_ASSERT_STRING_EQUAL(out[1], "quick\n");
    CU_ASSERT_STRING_EQUAL(out[0], "abc");
    nnkc_runs_free(r);
    /* nnkc_runs_add_first: before the queued ones, after earlier firsts */
    {
        char o[5][64];
        NnkcTool q[5];
        char *echo[5][4];
        char *words[5] = {(char *)"echo 0", (char *)"echo 1", (char *)"echo 2", (char *)"echo 3", (char *)"echo 4"};
        for (int i = 0; i < 5; i++) {
            q[i] = (NnkcTool){.out = o[i], .outcap = sizeof o[i], .timeout_ms = 20000};
            echo[i][0] = (char *)"sh", echo[i][1] = (char *)"-c", echo[i][2] = words[i], echo[i][3] = NULL;
        }
        r = nnkc_runs_new(1, 5);
        CU_ASSERT_TRUE(nnkc_runs_add(r, echo[0], &q[0]));
        CU_ASSERT_TRUE(nnkc_runs_add(r, echo[1], &q[1]));
        CU_ASSERT_TRUE(nnkc_runs_add(r, echo[2], &q[2]));
        CU_ASSERT_PTR_EQUAL(nnkc_runs_wait(r, &st), &q[0]);
        CU_ASSERT_TRUE(nnkc_runs_add_first(r, echo[3], &q[3]));
        CU_ASSERT_TRUE(nnkc_runs_add_first(r, echo[4], &q[4]));
        NnkcTool *order[4] = {&q[3], &q[4], &q[1], &q[2]};
        for (int i = 0; i < 4; i++) {
            CU_ASSERT_PTR_EQUAL(nnkc_runs_wait(r, &st), order[i]);
            CU_ASSERT_EQUAL(st, 0);
        }
        CU_ASSERT_PTR_NULL(nnkc_runs_wait(r, &st));
        CU_ASSERT_STRING_EQUAL(o[3], "3\n");
        CU_ASSERT_FALSE(nnkc_runs_add_first(r, echo[0], &q[0])); /* room for 5 */
        nnkc_runs_free(r);
    }
    /* a tool that cannot start: its NnkcTool, -1, ENOENT */
    char *missing[] = {(char *)"/nonexistent/tool", NULL};
    r = nnkc_runs_new(1, 1);
    CU_ASSERT_TRUE(nnkc_runs_add(r, missing, &t[2]));
    CU_ASSERT_PTR_EQUAL(nnkc_runs_wait(r, &st), &t[2]);
    CU_ASSERT_EQUAL(st, -1);
    CU_ASSERT_EQUAL(t[2].err, ENOENT);
    nnkc_runs_free(r);
    /* a deadline */
    r = nnkc_runs_new(1, 1);
    t[1].timeout_ms = 100;
    CU_ASSERT_TRUE(nnkc_runs_add(r, slow, &t[1]));
    t0 = now_s();
    CU_ASSERT_PTR_EQUAL(nnkc_runs_wait(r, &st), &t[1]);
    CU_ASSERT_EQUAL(st, -1);
    CU_ASSERT_TRUE(t[1].timed_out);
    CU_ASSERT_TRUE(now_s() - t0 < 30.0);
    nnkc_runs_free(r);
    setenv("NNKC_JOBS", "3", 1);
    CU_ASSERT_EQUAL(nnkc_jobs(), 3);
    setenv("NNKC_JOBS", "zero", 1);
    CU_ASSERT_TRUE(nnkc_jobs() >= 1);
    unsetenv("NNKC_JOBS");
}

/* A source the compiler rejects, one that compiles but lacks its
 * descriptor, one that does not load (an undefined function, as a call of
 * a helper the prelude lacks did): each compiled once, the failure
 * remembered per key (the same status and message again, no compiler
 * run), until the memory cache is cleared. */
static void test_jit_failures_cached(void)
{
    char dir[] = "/tmp/nnk-test-internal-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    setenv("NNK_CACHE_DIR", dir, 1);
    static const char *const bad[] = {"int broken( = ;\n", "int no_descriptor_here;\n",
                                      "int nnk_test_undefined(void);\nint k__desc(void) { return nnk_test_undefined(); }\n"};
    static const nnk_status want[] = {NNK_ECOMPILE, NNK_ECOMPILE, NNK_EIO};
    for (int i = 0; i < 3; i++) {
        nnk_jit_stats st0, st1, st2;
        const nnk_kernel_desc *d = NULL;
        nnk_jit_get_stats(&st0);
        nnk_status s1 = rt_jit_c(bad[i], false, "k__desc", 0, &d, NULL);
        char *m1 = strdup(nnk_last_error());
        nnk_jit_get_stats(&st1);
        nnk_status s2 = rt_jit_c(bad[i], false, "k__desc", 0, &d, NULL);
        nnk_jit_get_stats(&st2);
        CU_ASSERT_EQUAL(s1, want[i]);
        CU_ASSERT_EQUAL(s2, s1);
        CU_ASSERT_STRING_EQUAL(nnk_last_error(), m1);
        CU_ASSERT_EQUAL(st1.compiles, st0.compiles + 1);
        CU_ASSERT_EQUAL(st2.compiles, st1.compiles); /* not compiled again */
        free(m1);
    }
    nnk_jit_stats a, b;
    nnk_jit_clear_memory_cache();
    nnk_jit_get_stats(&a);
    const nnk_kernel_desc *d = NULL;
    CU_ASSERT_EQUAL(rt_jit_c(bad[0], false, "k__desc", 0, &d, NULL), NNK_ECOMPILE);
    nnk_jit_get_stats(&b);
    CU_ASSERT_EQUAL(b.compiles, a.compiles + 1); /* forgotten with the memory cache */
    unsetenv("NNK_CACHE_DIR");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

/* ---- the pool: a worker descheduled before it claims a task ------------------ */

static atomic_int stalled, caller_back, woke_early, runs[2][64], wrong;
static pthread_t caller;

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The worker stops where a descheduled one would, until the caller is back
 * from rt_pool_run (at most 3 s: with a pool that waits for it, never). */
static void stall(void)
{
    if (atomic_exchange(&stalled, 1))
        return;   /* only the first job's worker */
    for (int i = 0; i < 3000 && !atomic_load(&caller_back); i++)
        sleep_ms(1);
    if (!atomic_load(&caller_back))
        atomic_store(&woke_early, 1);
}

static void count_task(void *arg, int64_t t)
{
    int job = (int)(intptr_t)arg;
    /* the caller's first task takes 2 ms, so the 63 left look long enough
     * to wake the worker (pool.c wakes none for a short job); its second
     * waits until the worker has taken up the job */
    if (job == 0 && t == 0 && pthread_equal(pthread_self(), caller))
        sleep_ms(2);
    if (job == 0 && t == 1 && pthread_equal(pthread_self(), caller))
        for (int i = 0; i < 3000 && !atomic_load(&stalled); i++)
            sleep_ms(1);
    if (t < 0 || t >= 64)
        atomic_store(&wrong, 1);
    else
        atomic_fetch_add(&runs[job][t], 1);
}

static void test_pool_stalled_worker(void)
{
    setenv("NNK_NUM_THREADS", "2", 1);
    rt_pool_shutdown();
    caller = pthread_self();
    rt_pool_test_stall = stall;
    CU_ASSERT_EQUAL(rt_pool_threads(), 2);
    rt_pool_run(64, count_task, (void *)(intptr_t)0);
    atomic_store(&caller_back, 1);
    /* the next job at once, while the stale worker may still hold the
     * first one's function: it must run none of the second's tasks with it */
    rt_pool_run(64, count_task, (void *)(intptr_t)1);
    rt_pool_shutdown();
    rt_pool_test_stall = NULL;
    unsetenv("NNK_NUM_THREADS");
    CU_ASSERT_EQUAL(atomic_load(&stalled), 1);
    CU_ASSERT_EQUAL(atomic_load(&woke_early), 0);   /* the caller did not wait for it */
    CU_ASSERT_EQUAL(atomic_load(&wrong), 0);
    for (int j = 0; j < 2; j++)
        for (int t = 0; t < 64; t++)
            CU_ASSERT_EQUAL(atomic_load(&runs[j][t]), 1);
}

/* ---- the pool: a worker descheduled after it claimed a task ------------------ */

static atomic_int claimed_stalls;

/* A worker stops 50 ms after each claim, as one descheduled in the middle
 * of a task would (a busy process on its core). */
static void stall_claimed(void)
{
    atomic_fetch_add(&claimed_stalls, 1);
    sleep_ms(50);
}

static void spin_task(void *arg, int64_t t)
{
    (void)t;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do /* 100 us of work */
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 100000);
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* The caller must wait for a claimed task (its outputs are not written
 * twice), but a job that waited late raises the pool's estimate of the
 * workers' delay: a job shorter than twice that runs on the caller alone,
 * and a longer one leaves its last tasks to the caller, so 40 jobs (each
 * 20 tasks of 100 us) meet a stalled worker a few times, not in every job
 * (which made 2 threads slower than 1 under contention). */
static void test_pool_late_worker(void)
{
    setenv("NNK_NUM_THREADS", "2", 1);
    rt_pool_shutdown();
    caller = pthread_self();
    atomic_store(&claimed_stalls, 0);
    rt_pool_test_claimed = stall_claimed;
    CU_ASSERT_EQUAL(rt_pool_threads(), 2);
    atomic_int done = 0;
    for (int job = 0; job < 40; job++)
        rt_pool_run(20, spin_task, &done);
    int stalls = atomic_load(&claimed_stalls);
    int64_t late = rt_pool_late_jobs();
    rt_pool_shutdown();
    rt_pool_test_claimed = NULL;
    unsetenv("NNK_NUM_THREADS");
    CU_ASSERT_EQUAL(atomic_load(&done), 40 * 20);
    /* 1 (job 1: a wait of about 50 ms, so the 2 ms jobs after it run
     * alone) when the caller's own tasks are not slowed (a loaded machine
     * stretches them, and a wait under 4 of them is not late); 39 of 40
     * with a pool that never runs alone */
    CU_ASSERT(stalls >= 1 && stalls <= 20);
    CU_ASSERT(late >= 1);
    if (stalls > 20)
        fprintf(stderr, "pool_late_worker: the stalled worker held %d of 40 jobs\n", stalls);
}

static atomic_int worker_claims;

static void count_claim(void) { atomic_fetch_add(&worker_claims, 1); }

/* ---- the pool: a short job wakes no worker ------------------------------------ */

static void short_task(void *arg, int64_t t)
{
    (void)t;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do /* 2 us of work: 32 of them are a job under pool.c's WAKE_WORK_NS */
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 2000);
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* A job the caller finishes alone in less than a wake-up's worth of time
 * runs on the caller: the sleeping worker is not woken (it claimed tasks
 * of such jobs late, and the caller then waited for them: 2 threads were
 * slower than 1 at 2^16 elements). */
static void test_pool_short_jobs_alone(void)
{
    setenv("NNK_NUM_THREADS", "2", 1);
    rt_pool_shutdown();
    CU_ASSERT_EQUAL(rt_pool_threads(), 2);
    sleep_ms(50); /* the worker is asleep on the pool's condition variable */
    rt_pool_test_claimed = count_claim;
    atomic_int done = 0;
    int joined = 0; /* jobs a worker took part in */
    for (int job = 0; job < 200; job++) {
        int before = atomic_load(&worker_claims);
        rt_pool_run(32, short_task, &done);
        joined += atomic_load(&worker_claims) > before;
    }
    rt_pool_test_claimed = NULL;
    rt_pool_shutdown();
    unsetenv("NNK_NUM_THREADS");
    CU_ASSERT_EQUAL(atomic_load(&done), 200 * 32);
    /* none on a quiet machine; a caller descheduled in a job (a loaded
     * one) sees its tasks take long and wakes the worker, rightly */
    CU_ASSERT(joined <= 25);
    if (joined > 0)
        fprintf(stderr, "pool_short_jobs_alone: a worker took part in %d of 200 short jobs\n", joined);
}

/* After a late job the pool's delay estimate lasts a time (halved every
 * 2 s), not a count of jobs: short jobs between the long ones (which
 * wake no worker) used up a count, and every long job met the stalled
 * worker again. 20 rounds of 8 short jobs and one long one (20 tasks of
 * 100 us, about 2 ms): after the first late job (a 50 ms wait) the long
 * jobs run alone.  On a loaded machine a worker task descheduled for
 * long raises the estimate too. */
static void test_pool_late_period(void)
{
    setenv("NNK_NUM_THREADS", "2", 1);
    rt_pool_shutdown();
    caller = pthread_self();
    atomic_store(&claimed_stalls, 0);
    rt_pool_test_claimed = stall_claimed;
    CU_ASSERT_EQUAL(rt_pool_threads(), 2);
    atomic_int done = 0, sdone = 0;
    for (int round = 0; round < 20; round++) {
        for (int j = 0; j < 8; j++)
            rt_pool_run(32, short_task, &sdone);
        rt_pool_run(20, spin_task, &done);
    }
    int stalls = atomic_load(&claimed_stalls);
    rt_pool_shutdown();
    rt_pool_test_claimed = NULL;
    unsetenv("NNK_NUM_THREADS");
    CU_ASSERT_EQUAL(atomic_load(&done), 20 * 20);
    CU_ASSERT_EQUAL(atomic_load(&sdone), 20 * 8 * 32);
    /* 1 (a count of 4, 8, 16 jobs alone: about 6; a period of 250 ms
     * first: 1) */
    CU_ASSERT(stalls >= 1 && stalls <= 3);
    if (stalls > 3)
        fprintf(stderr, "pool_late_period: the stalled worker held %d of 20 long jobs\n", stalls);
}

/* ---- the pool: a job woken by its size after a late one --------------------- */

static atomic_int size_claims, size_stall;

/* every claim is counted, and while size_stall is set it stalls 50 ms (a
 * late job: the delay estimate rises to about 50 ms) */
static void stall_first_claim(void)
{
    atomic_fetch_add(&size_claims, 1);
    if (atomic_load(&size_stall))
        sleep_ms(50);
}

/* A job whose size wakes the workers before its first task (no task time
 * of the caller's yet) still has workers while the delay estimate is not
 * 0: they leave the caller the tasks the delay covers, judged by the
 * size's least task time and then by their own, not every task.  2000
 * tasks of 100 us (2^20 elements each: a least time of 131 us) after a
 * 50 ms late job: the worker takes about 750 (at least 200 asserted); it
 * took none when a task time of 0 meant "leave them all" (bench/perf:
 * 2^25 elementwise kernels at one thread's speed for tens of seconds
 * after one late wait). */
static void test_pool_size_woken_after_late(void)
{
    setenv("NNK_NUM_THREADS", "2", 1);
    rt_pool_shutdown();
    atomic_store(&size_claims, 0);
    rt_pool_test_claimed = stall_first_claim;
    CU_ASSERT_EQUAL(rt_pool_threads(), 2);
    atomic_int done = 0;
    /* until a job meets the stall and is late (on a loaded machine the
     * worker may wake after the caller has run every task: no claim, no
     * stall; or the caller's own tasks are stretched, and the wait is not
     * late against them) */
    int jobs = 0;
    int64_t late0 = rt_pool_late_jobs();
    atomic_store(&size_stall, 1);
    while (rt_pool_late_jobs() == late0 && jobs < 50) {
        rt_pool_run(20, spin_task, &done);
        jobs++;
    }
    atomic_store(&size_stall, 0);
    CU_ASSERT(rt_pool_late_jobs() > late0);
    int before = atomic_load(&size_claims);
    rt_pool_run_work(2000, INT64_C(1) << 20, spin_task, &done);
    int claims = atomic_load(&size_claims) - before;
    rt_pool_test_claimed = NULL;
    rt_pool_shutdown();
    unsetenv("NNK_NUM_THREADS");
    CU_ASSERT_EQUAL(atomic_load(&done), 20 * jobs + 2000);
    /* about 750 on a quiet machine; a worker that gets a share of a
     * loaded core still runs hundreds, the old pool none */
    CU_ASSERT(claims >= 200);
    if (claims < 200)
        fprintf(stderr, "pool_size_woken_after_late: the worker ran %d of 2000 tasks\n", claims);
}

/* ---- the pool: a job of few long tasks wakes the workers first ------------- */

static atomic_int long_started[2], long_overlap;

/* Task 0 waits (at most 3 s) for task 1 to start: with the workers woken
 * before the first task they overlap; woken after it (judged by the
 * caller's first task, as rt_pool_run does) task 1 starts only once task 0
 * is over, and a job of two tasks took both on one thread. */
static void long_task(void *arg, int64_t t)
{
    (void)arg;
    atomic_store(&long_started[t], 1);
    int other = atomic_load(&long_started[1 - t]);
    for (int i = 0; i < 3000 && !other; i++) {
        sleep_ms(1);
        other = atomic_load(&long_started[1 - t]);
    }
    if (other)
        atomic_fetch_add(&long_overlap, 1);
}

static void test_pool_long_tasks_wake_first(void)
{
    setenv("NNK_NUM_THREADS", "2", 1);
    rt_pool_shutdown();
    CU_ASSERT_EQUAL(rt_pool_threads(), 2);
    /* two tasks of 2^24 elements each: long by any rate of pool.c's */
    rt_pool_run_work(2, INT64_C(1) << 24, long_task, NULL);
    rt_pool_shutdown();
    unsetenv("NNK_NUM_THREADS");
    CU_ASSERT_EQUAL(atomic_load(&long_overlap), 2);
}

static const CunitTest tests_internal[] = {
    {"sha256", test_sha256},
    {"kw", test_kw},
    {"size_classes", test_size_classes},
    {"cache_entry", test_cache_entry},
    {"tool_run", test_tool_run},
    {"tool_runs", test_tool_runs},
    {"jit_failures_cached", test_jit_failures_cached},
    {"pool_stalled_worker", test_pool_stalled_worker},
    {"pool_late_worker", test_pool_late_worker},
    {"pool_short_jobs_alone", test_pool_short_jobs_alone},
    {"pool_late_period", test_pool_late_period},
    {"pool_size_woken_after_late", test_pool_size_woken_after_late},
    {"pool_long_tasks_wake_first", test_pool_long_tasks_wake_first},
    {NULL},
};

static const CunitSuite suites[] = {
    {"internal", tests_internal},
    {NULL},
};

const CunitProgram cunit_program = {suites, NULL, nnk_shutdown};
