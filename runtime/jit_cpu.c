/* jit_cpu.c - the CPU JIT: C source -> shared object -> loaded descriptor.
 *
 * The key of a compiled object is the SHA-256 of the source, the symbol,
 * the compiler's identity (its `--version` output, asked once per process
 * and compiler) and the flags, so a compiler upgrade or another -O level
 * never reuses a stale object; the effective uid joins it (per-user
 * keys).  Lookups go to the process's memory cache, then to the disk
 * cache (cache.c: verified bytes), then to the compiler, which runs in a
 * private temporary directory through spawn.c (no shell: NNK_CC is split
 * on blanks; killed after NNK_COMPILE_TIMEOUT), and its output becomes the
 * error message when it fails.  Objects are loaded from memory (load()).
 *
 * One mutex covers the memory cache, held only for short sections: the
 * first thread that wants a kernel leaves a busy entry and compiles
 * without the lock; the others wait for it on a condition variable, so
 * several kernels compile at once and fork() never waits for a compiler.
 */
#define _GNU_SOURCE
#include "config.h"
#include "internal.h"
#include "libnnkc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct jit_entry {
    char key[65];
    void *dl;
    const nnk_kernel_desc *desc;
    long refs;              /* kernels using it; extensions' compile_c pins it */
    bool busy;              /* a thread is compiling it (dl and desc not yet set) */
    nnk_status failed;      /* a source the compiler rejected (dl NULL): its status */
    char *message;          /* and its message, given again without compiling */
    struct jit_entry *next;
} jit_entry;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t done;    /* a busy entry was filled in or dropped */
    jit_entry *entries;
    char *cc;               /* the compiler the identity belongs to */
    char *cc_identity;      /* its --version and the target macros of host_flags */
    char *host_flags;       /* flags for this machine's CPU the compiler accepts ("" for none) */
    nnk_jit_stats stats;
} jit = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

void nnk_jit_get_stats(nnk_jit_stats *out)
{
    if (!out)
        return;
    pthread_mutex_lock(&jit.lock);
    *out = jit.stats;
    pthread_mutex_unlock(&jit.lock);
}

/* ---- running the compiler ---------------------------------------------------- */

/* Splits s on blanks into argv (at most cap-1 words, NULL-terminated);
 * the words point into a copy the caller frees. */
static int split_words(const char *s, char **copy, char **argv, int cap)
{
    *copy = rt_strdup(s);
    if (!*copy)
        return -1;
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(*copy, " \t\n", &save); p && n < cap - 1; p = strtok_r(NULL, " \t\n", &save))
        argv[n++] = p;
    argv[n] = NULL;
    return n;
}

/* Runs argv (spawn.c: the host's SIGCHLD cannot take its status; killed
 * after NNK_COMPILE_TIMEOUT), its stdout and stderr into out.  Returns
 * the exit status (0 = success), or -1 with an NNK_ECOMPILE error set
 * (RUN_ENOMEM: NNK_ENOMEM). */
enum { RUN_ENOMEM = -2 };
#define RUN_STATUS(st) ((st) == RUN_ENOMEM ? NNK_ENOMEM : NNK_ECOMPILE)
/* The status of a tool that nnkc_tool_run or nnkc_runs_wait gave st, as
 * run() returns it. */
static int run_result(char *const *argv, const NnkcTool *t, int st)
{
    if (st >= 0)
        return st;
    if (t->timed_out)
        rt_error(NNK_ECOMPILE, "the C compiler '%s' did not finish in %.3g s (killed; NNK_COMPILE_TIMEOUT sets the limit)",
                 argv[0], (double)t->timeout_ms / 1000.0);
    else
        rt_error(NNK_ECOMPILE, "cannot run the C compiler '%s' (set NNK_CC to a C compiler): %s", argv[0],
                 strerror(t->err));
    return -1;
}

static int run(char *const *argv, rt_str *out)
{
    enum { CAP = 65536 };
    char *buf = malloc(CAP);
    if (!buf) {
        rt_error(NNK_ENOMEM, "out of memory running the C compiler");
        return RUN_ENOMEM;
    }
    NnkcTool t = {.out = buf, .outcap = CAP, .timeout_ms = nnkc_tool_timeout_ms()};
    int st = nnkc_tool_run(argv, &t);
    if (t.outlen)
        rt_str_add(out, buf, t.outlen);
    free(buf);
    return run_result(argv, &t, st);
}

/* Two compilers at once (argv[0] and argv[1]), as run(): the status of
 * the first that failed (0 when both succeeded), and its output into out
 * (else both outputs). */
static int run_two(char *const *const *argv, rt_str *out)
{
    enum { CAP = 65536 };
    char *buf[2] = {malloc(CAP), malloc(CAP)};
    NnkcRuns *r = buf[0] && buf[1] ? nnkc_runs_new(2, 2) : NULL;
    if (!r) {
        free(buf[0]);
        free(buf[1]);
        rt_error(NNK_ENOMEM, "out of memory running the C compiler");
        return RUN_ENOMEM;
    }
    NnkcTool t[2];
    int st[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        t[i] = (NnkcTool){.out = buf[i], .outcap = CAP, .timeout_ms = nnkc_tool_timeout_ms()};
        nnkc_runs_add(r, argv[i], &t[i]);
    }
    int failed = -1, status;
    NnkcTool *done;
    while ((done = nnkc_runs_wait(r, &status))) {
        int i = done == &t[0] ? 0 : 1;
        st[i] = status;
        if (status != 0 && failed < 0) {
            failed = i;
            break; /* nnkc_runs_free kills the other */
        }
    }
    nnkc_runs_free(r);
    int res = 0;
    for (int i = 0; i < 2; i++)
        if (failed < 0 || failed == i) {
            if (t[i].outlen)
                rt_str_add(out, buf[i], t[i].outlen);
        }
    if (failed >= 0)
        res = run_result(argv[failed], &t[failed], st[failed]);
    free(buf[0]);
    free(buf[1]);
    return res;
}

/* Compiler processes one compile of generated code may run at once:
 * NNK_JIT_JOBS (1, or 2 and up: 2), else 2 when this process may run on
 * two CPUs or more and one of them is idle on average (the 1-minute load
 * at most the CPUs less one).  The two parts cost about a fifth more CPU
 * than the whole file (each parses the prelude), so on a busy machine
 * they take longer, not less (docs/runtime.md, "The first call"). */
static int jit_jobs(void)
{
    const char *v = getenv("NNK_JIT_JOBS");
    if (v && *v) {
        char *end;
        long j = strtol(v, &end, 10);
        if (!*end && j >= 1)
            return j >= 2 ? 2 : 1;
    }
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    double load;
    if (cpus < 2 || (getloadavg(&load, 1) == 1 && load > (double)(cpus - 1)))
        return 1;
    return 2;
}

static const char *compiler_command(void)
{
    const char *cc = getenv("NNK_CC");
    return cc && *cc ? cc : NNK_DEFAULT_CC;
}

/* The flags that tune generated code for this machine (the JIT runs what
 * it compiles where it compiles it): the first candidate the compiler
 * accepts.  -march=native gives AVX2 (8 floats per vector instead of
 * SSE2's 4), F16C, ... where the CPU has them; gcc's dynamic vectorizer
 * cost model vectorizes the vector-math loops that -O2's "very cheap" one
 * leaves scalar.  Neither changes a result: the generated code is compiled
 * with -ffp-contract=off, so no multiply-add is fused, and vmath.h uses
 * only correctly rounded operations (docs/c-backend.md).  The macros the
 * compiler predefines with them (__AVX2__, __F16C__, ...) join the cache
 * key, so a cache shared between machines never hands an object built for
 * one CPU to another.  NNK_JIT_NATIVE=0 turns this off (portable code, as
 * nnkc -c compiles). */
static const char *const host_candidates[] = {
    "-march=%s -fvect-cost-model=dynamic", /* gcc */
    "-march=%s",                           /* clang, and compilers without the cost model flag */
};

/* NNK_JIT_MARCH=ARCH targets ARCH instead of the host (x86-64-v3: AVX2
 * without AVX-512, which valgrind 3.19 cannot decode; or another machine's
 * code to reproduce it): a name of letters, digits and ".-_", else NULL. */
static const char *jit_march(void)
{
    const char *env = getenv("NNK_JIT_MARCH");
    if (!env || !*env)
        return "native";
    size_t n = strlen(env);
    if (n > 64 || strspn(env, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != n)
        return NULL;
    return env;
}

/* Finds the host flags of `cc` (argv of its words) into *flags (NULL for
 * none); appends the target macros to `id`. */
static void probe_host_flags(char **argv, int n, rt_str *id, char **flags)
{
    *flags = NULL;
    const char *env = getenv("NNK_JIT_NATIVE");
    const char *march = jit_march();
    if ((env && strcmp(env, "0") == 0) || !march)
        return;
    for (size_t c = 0; c < sizeof host_candidates / sizeof host_candidates[0]; c++) {
        char cand[128], *copy, *fargv[8];
        snprintf(cand, sizeof cand, host_candidates[c], march);
        int nf = split_words(cand, &copy, fargv, 8);
        if (nf < 0)
            return;
        int m = n;
        for (int i = 0; i < nf; i++)
            argv[m++] = fargv[i];
        const char *tail[] = {"-E", "-dM", "-x", "c", "/dev/null"};
        for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
            argv[m++] = (char *)tail[i];
        argv[m] = NULL;
        rt_str out = {0};
        int st = run(argv, &out);
        free(copy);
        if (st == 0) {
            *flags = rt_strdup(cand);
            rt_str_add(id, "\n", 1);
            if (out.s)
                rt_str_add(id, out.s, strlen(out.s));
            rt_str_free(&out);
            return;
        }
        rt_str_free(&out);
    }
}

/* ---- the compiler's identity, remembered between processes ------------------------
 * `cc --version` and the host-flag probe are two compiler processes (two
 * with gcc's cc1: 20-50 ms on a loaded machine), and a fresh process
 * whose kernels are all in the disk cache needs nothing else from the
 * compiler: they were most of its first call.  So their answer is kept in
 * the disk cache (KEY.ccid: verified like every entry, only the user's)
 * under a key of everything it depends on, as ccache's default
 * compiler_check ("mtime") does: the command; for each of its words that
 * names a file (directly or through PATH), the file's real path, device,
 * inode, size, mtime and ctime (an upgrade or another `alternatives`
 * choice changes them); the environment that chooses the probe or the
 * compiler's parts (NNK_JIT_NATIVE, NNK_JIT_MARCH, GCC_EXEC_PREFIX,
 * COMPILER_PATH); and the CPU, from cpuid (-march=native depends on it,
 * and a cache directory may be shared by machines).  Where the CPU cannot
 * be named so (not x86) or the command's program is not found, nothing is
 * remembered and every process probes.  docs/runtime.md, "The first call". */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
/* The leaves -march=native reads (vendor, family/model, feature bits,
 * brand) and the OS-enabled vector state (XCR0); leaf 1's EBX without its
 * APIC id, which differs between cores. */
static bool cpu_identity(rt_sha256 *h)
{
    static const unsigned leaves[][2] = {{0, 0},          {1, 0},          {7, 0},          {7, 1},
                                         {0xd, 1},        {0x24, 0},       {0x80000000, 0}, {0x80000001, 0},
                                         {0x80000002, 0}, {0x80000003, 0}, {0x80000004, 0}, {0x80000008, 0}};
    unsigned max = __get_cpuid_max(0, NULL), ext = __get_cpuid_max(0x80000000, NULL);
    if (max == 0)
        return false;
    unsigned ecx1 = 0;
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        unsigned l = leaves[i][0], r[5] = {l, 0, 0, 0, 0};
        if (l < 0x80000000 ? l <= max : l <= ext)
            __cpuid_count(l, leaves[i][1], r[1], r[2], r[3], r[4]);
        if (l == 1) {
            r[2] &= 0x00ffffffu;
            ecx1 = r[3];
        }
        rt_sha256_update(h, r, sizeof r);
    }
    uint32_t xcr0[2] = {0, 0};
    if (ecx1 & (1u << 27)) /* OSXSAVE */
        __asm__ volatile("xgetbv" : "=a"(xcr0[0]), "=d"(xcr0[1]) : "c"(0));
    rt_sha256_update(h, xcr0, sizeof xcr0);
    return true;
}
#else
static bool cpu_identity(rt_sha256 *h)
{
    (void)h;
    return false;
}
#endif

/* Hashes the file `word` names (a path, or a program found on PATH): its
 * real path and stat.  False when it names none. */
static bool hash_file(rt_sha256 *h, const char *word)
{
    char path[4096], real[4096];
    struct stat st;
    /* the file nnkc_tool_run runs for it (one search, spawn.c's) */
    if (!nnkc_find_program(word, path, sizeof path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        !realpath(path, real))
        return false;
    const int64_t f[] = {(int64_t)st.st_dev,           (int64_t)st.st_ino,         (int64_t)st.st_size,
                         (int64_t)st.st_mtim.tv_sec,   (int64_t)st.st_mtim.tv_nsec, (int64_t)st.st_ctim.tv_sec,
                         (int64_t)st.st_ctim.tv_nsec, (int64_t)st.st_mode};
    rt_sha256_update(h, real, strlen(real) + 1);
    rt_sha256_update(h, f, sizeof f);
    return true;
}

/* The key of cc's remembered identity into key; false: not to be remembered. */
static bool identity_key(const char *cc, char key[65])
{
    rt_sha256 h;
    rt_sha256_init(&h);
    char uid[32];
    snprintf(uid, sizeof uid, "euid %u", (unsigned)geteuid());
    static const char tag[] = "nnk-cc-identity 1";
    const char *env[] = {"NNK_JIT_NATIVE", "NNK_JIT_MARCH", "GCC_EXEC_PREFIX", "COMPILER_PATH"};
    const char *parts[] = {tag, uid, cc};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        rt_sha256_update(&h, parts[i], strlen(parts[i]) + 1);
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        const char *v = getenv(env[i]);
        rt_sha256_update(&h, v ? "=" : "-", 1);
        if (v)
            rt_sha256_update(&h, v, strlen(v) + 1);
    }
    if (!cpu_identity(&h))
        return false;
    char *copy, *argv[64];
    int n = split_words(cc, &copy, argv, 64);
    bool ok = n > 0 && hash_file(&h, argv[0]);
    for (int i = 1; ok && i < n; i++)
        if (argv[i][0] != '-')
            rt_sha256_update(&h, hash_file(&h, argv[i]) ? "f" : "w", 1); /* "ccache gcc": gcc's file too */
    free(copy);
    if (!ok)
        return false;
    uint8_t digest[32];
    rt_sha256_final(&h, digest);
    rt_sha256_hex(digest, key);
    return true;
}

/* A remembered identity: "FLAGS\0IDENTITY" (FLAGS empty: none).  The
 * entry is the user's own and verified (cache.c); its flags must still be
 * one of host_candidates, else it is not used. */
static bool recall_identity(const char *key, char **id, char **flags)
{
    void *data;
    size_t len;
    if (rt_cache_load(key, ".ccid", &data, &len) != NNK_OK)
        return false;
    const char *b = data, *nul = memchr(b, 0, len);
    const char *march = jit_march();
    bool ok = nul && len - (size_t)(nul - b) >= 2 && !memchr(nul + 1, 0, len - (size_t)(nul - b) - 2) &&
              b[len - 1] == 0;
    if (ok && nul != b) {
        ok = false;
        for (size_t c = 0; march && c < sizeof host_candidates / sizeof host_candidates[0]; c++) {
            char cand[128];
            snprintf(cand, sizeof cand, host_candidates[c], march);
            ok = ok || strcmp(cand, b) == 0;
        }
    }
    *id = ok ? rt_strdup(nul + 1) : NULL;
    *flags = ok && nul != b ? rt_strdup(b) : NULL;
    free(data);
    if (ok && (!*id || (nul != b && !*flags))) {
        free(*id);
        free(*flags);
        return false;
    }
    return ok;
}

static void remember_identity(const char *key, const char *id, const char *flags)
{
    size_t fl = flags ? strlen(flags) : 0, il = strlen(id);
    char *b = malloc(fl + il + 2);
    if (!b)
        return;
    memcpy(b, flags ? flags : "", fl + 1);
    memcpy(b + fl + 1, id, il + 1);
    (void)rt_cache_store(key, ".ccid", b, fl + il + 2); /* not stored: the next process probes */
    free(b);
}

/* `$NNK_CC --version` and its host flags, once per process and compiler
 * (remembered between processes, above).  The probe runs without jit.lock
 * (a fork or another thread never waits for a compiler); the result is
 * installed with it. */
static nnk_status install_identity(const char *cc, char *id, char *flags);

/* cc's identity without running it: known in this process, or remembered
 * in the disk cache (installed then).  *keyed: cc's program was found, so
 * ikey is its key and a probe would run it. */
static bool identity_ready(const char *cc, char ikey[65], bool *keyed)
{
    pthread_mutex_lock(&jit.lock);
    bool known = jit.cc && strcmp(jit.cc, cc) == 0;
    pthread_mutex_unlock(&jit.lock);
    *keyed = known;
    if (known)
        return true;
    char *id = NULL, *flags = NULL;
    *keyed = identity_key(cc, ikey);
    return *keyed && recall_identity(ikey, &id, &flags) && install_identity(cc, id, flags) == NNK_OK;
}

static nnk_status compiler_identity(const char *cc)
{
    char ikey[65], *id = NULL, *flags = NULL;
    bool keyed;
    if (identity_ready(cc, ikey, &keyed))
        return NNK_OK;
    char *copy, *argv[80]; /* the compiler's words, then at most 16 of the probe's */
    int n = split_words(cc, &copy, argv, 62);
    if (n <= 0) {
        free(copy);
        return n < 0 ? NNK_ENOMEM : rt_error(NNK_EINVAL, "NNK_CC is empty");
    }
    argv[n] = (char *)"--version";
    argv[n + 1] = NULL;
    rt_str out = {0};
    int st = run(argv, &out);
    if (st == 0)
        probe_host_flags(argv, n, &out, &flags);
    free(copy);
    if (st != 0) {
        nnk_status s = st < 0 ? rt_error_prefix(RUN_STATUS(st), "JIT")
                              : rt_error(NNK_ECOMPILE, "the C compiler '%s' does not answer --version (exit %d): %s", cc,
                                         st, out.s ? out.s : "");
        rt_str_free(&out);
        free(flags);
        return s;
    }
    id = out.s ? out.s : rt_strdup("");
    if (!id || out.oom) {
        free(id);
        free(flags);
        return NNK_ENOMEM;
    }
    /* without host flags only when none were asked for: a probe that
     * failed (killed, timed out) is tried again by the next process */
    const char *native = getenv("NNK_JIT_NATIVE");
    if (keyed && (flags || (native && strcmp(native, "0") == 0) || !jit_march()))
        remember_identity(ikey, id, flags);
    return install_identity(cc, id, flags);
}

/* Installs cc's identity and host flags (taking both). */
static nnk_status install_identity(const char *cc, char *id, char *flags)
{
    char *ccd = rt_strdup(cc);
    if (!ccd) {
        free(id);
        free(flags);
        return NNK_ENOMEM;
    }
    pthread_mutex_lock(&jit.lock);
    free(jit.cc);
    free(jit.cc_identity);
    free(jit.host_flags);
    jit.cc = ccd;
    jit.cc_identity = id;
    jit.host_flags = flags;
    pthread_mutex_unlock(&jit.lock);
    return NNK_OK;
}

/* The largest object the JIT reads back from the compiler. */
static const size_t max_object = (size_t)1 << 30;

/* Compiles source into an object in a private temporary directory
 * (cache.c: 0700, unpredictable name, files O_EXCL|O_NOFOLLOW); the
 * object's bytes into *img.  parts: the source is nnkc's, whose prelude
 * splits it in two (NNK_SPLIT, templates/c/prelude.tmpl): with two jobs
 * the parts compile side by side and are linked into the object. */
/* *rejected: the compiler ran and refused the source (not: it could not
 * run, no memory, no temporary directory). */
static nnk_status compile(const char *cc, const char *flags, const char *source, bool parts, uint8_t **img,
                          size_t *len, bool *rejected)
{
    char dir[4096], src[4200], obj[4200], part[2][4200];
    nnk_status s = rt_private_dir(dir, sizeof dir);
    if (s)
        return rt_error_prefix(NNK_ECOMPILE, "JIT");
    snprintf(src, sizeof src, "%s/k.c", dir);
    snprintf(obj, sizeof obj, "%s/k.so", dir);
    for (int i = 0; i < 2; i++)
        snprintf(part[i], sizeof part[i], "%s/k%d.o", dir, i + 1);
    if ((s = rt_private_write(src, source, strlen(source)))) {
        rmdir(dir);
        return rt_error_prefix(NNK_ECOMPILE, "JIT");
    }
    bool split = parts && jit_jobs() >= 2;
    char *cc_copy, *fl_copy = NULL, *argv[128], *fargv[64], *pargv[2][128];
    int n = split_words(cc, &cc_copy, argv, 60);
    int nf = n < 0 ? -1 : split_words(flags, &fl_copy, fargv, 60);
    if (n <= 0 || nf < 0) {
        s = n == 0 ? rt_error(NNK_EINVAL, "NNK_CC is empty") : NNK_ENOMEM;
    } else {
        int ncc = n;
        for (int i = 0; i < nf; i++)
            argv[n++] = fargv[i];
        rt_str out = {0};
        int st;
        if (split) {
            /* the parts side by side, then linked (their flags are the key's) */
            for (int p = 0; p < 2; p++) {
                memcpy(pargv[p], argv, (size_t)n * sizeof *argv);
                /* -pipe: the assembler reads cc1's output as it comes */
                const char *tail[] = {"-DNNK_SPLIT", p ? "-DNNK_PART=2" : "-DNNK_PART=1", "-fPIC", "-pipe", "-c", "-o",
                                      part[p], src};
                int m = n;
                for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
                    pargv[p][m++] = (char *)tail[i];
                pargv[p][m] = NULL;
            }
            char *const *both[2] = {pargv[0], pargv[1]};
            st = run_two(both, &out);
            if (st == 0) {
                const char *tail[] = {"-shared", "-fPIC", "-o", obj, part[0], part[1]};
                int m = ncc;
                for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
                    argv[m++] = (char *)tail[i];
                argv[m] = NULL;
                st = run(argv, &out);
            }
        } else {
            const char *tail[] = {"-shared", "-fPIC", "-o", obj, src};
            for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
                argv[n++] = (char *)tail[i];
            argv[n] = NULL;
            st = run(argv, &out);
        }
        if (st < 0)
            s = rt_error_prefix(RUN_STATUS(st), "JIT");
        else if (st > 128)
            /* killed by a signal (the OOM killer, a kill from outside): the
             * machine's state, not the source's; the next call tries again */
            s = rt_error(NNK_ECOMPILE, "the C compiler was killed by signal %d (%s %s):\n%s", st - 128, cc, flags,
                         out.s ? out.s : "(no output)");
        else if (st > 0)
            *rejected = true, s = rt_error(NNK_ECOMPILE, "the C compiler failed (%s %s, exit %d):\n%s", cc, flags,
                                           st, out.s ? out.s : "(no output)");
        else if ((s = rt_private_read(obj, max_object, img, len)))
            s = rt_error_prefix(s == NNK_ENOMEM ? s : NNK_ECOMPILE, "JIT");
        rt_str_free(&out);
    }
    free(cc_copy);
    free(fl_copy);
    unlink(src);
    unlink(obj);
    for (int i = 0; i < 2; i++)
        unlink(part[i]);
    rmdir(dir);
    return s;
}

static nnk_status lookup(void *h, const char *symbol, const nnk_kernel_desc **desc)
{
    const nnk_kernel_desc *d = dlsym(h, symbol);
    if (!d)
        return rt_error(NNK_ECOMPILE, "the compiled kernel has no symbol '%s'", symbol);
    int abi = d->abi; /* read before any dlclose */
    if (abi != NNK_ABI_VERSION)
        return rt_error(NNK_EABI, "kernel '%s' was generated for ABI version %d; the runtime has version %d", symbol,
                        abi, NNK_ABI_VERSION);
    *desc = d;
    return NNK_OK;
}

/* Loads an object from its bytes (verified or just compiled: never the
 * cache file again).  They go into a sealed memfd that dlopen maps
 * through /proc/self/fd; the dynamic loader takes a path it has seen for
 * the object it loaded then, so the path is varied until it names
 * nothing loaded.  Without memfds or /proc: a private temporary file. */
static nnk_status load(const uint8_t *img, size_t len, const char *symbol, void **dl, const nnk_kernel_desc **desc)
{
    void *h = NULL;
    const char *why = NULL;
    bool tried = false; /* dlopen saw the memfd: its error is the object's (unless there is no /proc) */
    int fd = memfd_create("nnk-kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd >= 0) {
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(fd, img + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        if (off == len) {
            tried = true;
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
            /* the variants spell a serial in binary ("/." a one, "//" a
             * zero): every load gets a name of its own however many stay
             * loaded with this descriptor's number (growing one name by
             * "/." ran out of room after 25) */
            static atomic_uint serial;
            for (int i = 0; i < 64; i++) {
                char path[128];
                unsigned v = atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed);
                size_t pl = (size_t)snprintf(path, sizeof path, "/proc/self");
                for (int b = 0; b < 32; b++, pl += 2)
                    memcpy(path + pl, (v >> b) & 1 ? "/." : "//", 3);
                snprintf(path + pl, sizeof path - pl, "/fd/%d", fd);
                void *old = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
                if (!old) {
                    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                    if (!h)
                        why = dlerror();
                    break;
                }
                dlclose(old);
            }
        }
        close(fd);
    }
    if (!h && (!tried || access("/proc/self/fd", X_OK) != 0)) {
        char dir[4096], obj[4200];
        nnk_status s = rt_private_dir(dir, sizeof dir);
        if (s)
            return s;
        snprintf(obj, sizeof obj, "%s/k.so", dir);
        if (!(s = rt_private_write(obj, img, len))) {
            h = dlopen(obj, RTLD_NOW | RTLD_LOCAL);
            if (!h)
                why = dlerror();
            unlink(obj);
        }
        rmdir(dir);
        if (s)
            return s;
    }
    if (!h)
        return rt_error(NNK_EIO, "cannot load the compiled kernel '%s': %s", symbol, why ? why : strerror(errno));
    nnk_status s = lookup(h, symbol, desc);
    if (s) {
        dlclose(h);
        return s;
    }
    *dl = h;
    return NNK_OK;
}

/* The disk cache, then the compiler; without jit.lock.  Counts into st.
 * *rejected: the failure is the source's own (the compiler refused it, or
 * the object it made does not load: an undefined symbol, another ABI). */
static nnk_status obtain(const char *key, const char *cc, const char *flags, const char *portable,
                         const char *source, bool parts, const char *symbol, void **dl, const nnk_kernel_desc **desc,
                         nnk_jit_stats *st, bool *rejected, bool *miss)
{
    rt_cache c;
    bool disk = rt_cache_open(&c);
    uint8_t *img = NULL;
    size_t len = 0;
    nnk_status s = disk ? rt_cache_get(&c, key, ".so", &img, &len) : NNK_ENOTFOUND;
    if (s == NNK_OK) {
        s = load(img, len, symbol, dl, desc);
        free(img);
        img = NULL;
        if (s == NNK_OK) {
            st->disk_hits++;
            rt_cache_close(&c);
            return NNK_OK;
        }
        if (s == NNK_ENOMEM) {
            rt_cache_close(&c);
            return s;
        }
    }
    if (s == NNK_EIO)
        st->corrupt_entries++;
    else if (s == NNK_ENOMEM) {
        rt_cache_close(&c);
        return s;
    }
    if (miss) { /* the disk only: the caller compiles later (rt_jit_c_begin) */
        *miss = true;
        rt_cache_close(&c);
        return NNK_ENOTFOUND;
    }
    st->compiles++;
    /* split only the host's code: the portable one has the clones, which
     * leave the parts nothing to share (templates/c/prelude.tmpl) */
    s = compile(cc, flags, source, parts && strcmp(flags, portable) != 0, &img, &len, rejected);
    /* A compiler that crashes on the host's flags is the compiler's bug,
     * not the source's (gcc 12 at -O2 with AVX-512: "unrecognizable insn"
     * on a masked 16-bit max, tests/fuzz/README): the
     * same source once more with the portable flags (-march of the
     * default target, the generated AVX2 clones), which give the same
     * results within the documented bounds, under the same key. */
    if (s == NNK_ECOMPILE && *rejected && strcmp(flags, portable) != 0 &&
        strstr(nnk_last_error(), "internal compiler error")) {
        *rejected = false;
        s = compile(cc, portable, source, false, &img, &len, rejected);
    }
    if (!s) {
        if (disk)
            rt_cache_put(&c, key, ".so", img, len); /* a full disk: the kernel runs from memory */
        s = load(img, len, symbol, dl, desc);
        *rejected = s != NNK_OK && s != NNK_ENOMEM;
    }
    free(img);
    rt_cache_close(&c);
    return s;
}

/* A compile rt_jit_c_begin left to its caller: the busy entry and what
 * obtain() needs. */
struct rt_jit_pending {
    jit_entry *e;           /* NULL: the compiler's identity is to be probed first */
    char key[65];
    char *cc, *flags, *portable, *source, *symbol;
    bool parts;
    int32_t opt_level;
};

static void pending_free(rt_jit_pending *p)
{
    if (!p)
        return;
    free(p->cc);
    free(p->flags);
    free(p->portable);
    free(p->source);
    free(p->symbol);
    free(p);
}

/* A pending compile a fork's child inherits: its entry is gone there. */
static void rt_jit_pending_drop(rt_jit_pending *p)
{
    pending_free(p);
}

/* Fills in (or drops) the busy entry e after obtain() gave s. */
static nnk_status settle(jit_entry *e, nnk_status s, const nnk_jit_stats *st, void *dl, const nnk_kernel_desc *d,
                         bool rejected, const nnk_kernel_desc **desc, void **ref)
{
    /* a rejected source is remembered under its key (source, compiler,
     * flags); other failures (no compiler, a full disk, no memory) are not */
    char *msg = s && rejected ? rt_strdup(nnk_last_error()) : NULL;

    pthread_mutex_lock(&jit.lock);
    jit.stats.disk_hits += st->disk_hits;
    jit.stats.compiles += st->compiles;
    jit.stats.corrupt_entries += st->corrupt_entries;
    for (jit_entry **p = &jit.entries; *p; p = &(*p)->next)
        if (*p == e) {
            if (s && !msg)
                *p = e->next; /* the next caller tries again */
            break;
        }
    if (s && msg) {
        e->failed = s;
        e->message = msg;
        e->busy = false;
    } else if (s) {
        free(e);
    } else {
        e->dl = dl;
        e->desc = d;
        e->busy = false;
        e->refs = 1;
        *desc = d;
        if (ref)
            *ref = e;
    }
    pthread_cond_broadcast(&jit.done);
    pthread_mutex_unlock(&jit.lock);
    return s;
}

nnk_status rt_jit_c(const char *source, bool parts, const char *symbol, int32_t opt_level,
                    const nnk_kernel_desc **desc, void **ref)
{
    return rt_jit_c_begin(source, parts, symbol, opt_level, desc, ref, NULL);
}

nnk_status rt_jit_c_begin(const char *source, bool parts, const char *symbol, int32_t opt_level,
                          const nnk_kernel_desc **desc, void **ref, rt_jit_pending **pending)
{
    if (pending)
        *pending = NULL;
    if (!source || !symbol || !desc)
        return rt_error(NNK_EINVAL, "JIT: source, symbol or desc is NULL");
    const char *cc = compiler_command();
    char ikey[65];
    bool found;
    if (pending && !identity_ready(cc, ikey, &found) && found) {
        /* the probe (two compiler processes, 20-50 ms and more on a busy
         * machine) goes to the caller's compile too; a command whose
         * program is not found is probed here, for its error */
        rt_jit_pending *p = rt_calloc(1, sizeof *p);
        if (p && (p->source = rt_strdup(source)) && (p->symbol = rt_strdup(symbol))) {
            p->parts = parts;
            p->opt_level = opt_level;
            *pending = p;
            return NNK_OK;
        }
        pending_free(p);
        return NNK_ENOMEM;
    }
    nnk_status s = compiler_identity(cc);
    if (s)
        return s;
    pthread_mutex_lock(&jit.lock);
    if (!jit.cc || strcmp(jit.cc, cc) != 0) { /* another thread switched compilers: take its */
        pthread_mutex_unlock(&jit.lock);
        return rt_jit_c_begin(source, parts, symbol, opt_level, desc, ref, pending);
    }
    /* NNK_NO_ENTRY_POINTS: a launch runs the descriptor only, so the
     * contiguous entry point and NAME_strided (with the plan builder they
     * inline) are left out of the object; they were half of the C
     * compiler's time for an elementwise kernel (docs/runtime.md, "The
     * first call") */
    char portable[512], flags[1024], uid[32];
    snprintf(portable, sizeof portable, "%s -DNNK_NO_ENTRY_POINTS", nnkc_c_flags(opt_level));
    snprintf(flags, sizeof flags, "%s%s%s", portable, jit.host_flags ? " " : "", jit.host_flags ? jit.host_flags : "");
    snprintf(uid, sizeof uid, "euid %u", (unsigned)geteuid()); /* per-user keys */
    uint8_t digest[32];
    rt_sha256 h;
    rt_sha256_init(&h);
    static const char tag[] = "nnk-jit-c 2";
    const char *keyed[] = {tag, uid, jit.cc_identity, cc, flags, symbol, source};
    for (size_t i = 0; i < sizeof keyed / sizeof keyed[0]; i++)
        rt_sha256_update(&h, keyed[i], strlen(keyed[i]) + 1);
    rt_sha256_final(&h, digest);
    char key[65];
    rt_sha256_hex(digest, key);

    for (;;) {
        jit_entry *e = jit.entries;
        while (e && memcmp(e->key, key, 64) != 0)
            e = e->next;
        if (!e)
            break;
        if (e->busy) { /* another thread compiles it: wait, then look again */
            pthread_cond_wait(&jit.done, &jit.lock);
            continue;
        }
        if (e->failed) {
            /* the compiler rejected this source before: the same answer,
             * without running it again on every failing launch */
            s = rt_error(e->failed, "%s", e->message);
            pthread_mutex_unlock(&jit.lock);
            return s;
        }
        jit.stats.memory_hits++;
        e->refs++;
        *desc = e->desc;
        if (ref)
            *ref = e;
        pthread_mutex_unlock(&jit.lock);
        return NNK_OK;
    }
    jit_entry *e = rt_calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&jit.lock);
        return NNK_ENOMEM;
    }
    memcpy(e->key, key, 65);
    e->busy = true;
    e->next = jit.entries;
    jit.entries = e;
    char *fl = rt_strdup(flags), *pfl = rt_strdup(portable);
    pthread_mutex_unlock(&jit.lock);

    nnk_jit_stats st = {0};
    void *dl = NULL;
    const nnk_kernel_desc *d = NULL;
    bool rejected = false, miss = false;
    s = fl && pfl ? obtain(key, cc, fl, pfl, source, parts, symbol, &dl, &d, &st, &rejected, pending ? &miss : NULL)
                  : NNK_ENOMEM;
    if (miss) {
        /* not in the disk cache: the caller compiles (rt_jit_c_finish),
         * the entry staying busy until then */
        rt_jit_pending *p = rt_calloc(1, sizeof *p);
        if (p) {
            p->e = e;
            memcpy(p->key, key, 65);
            p->cc = rt_strdup(cc);
            p->flags = fl;
            p->portable = pfl;
            p->source = rt_strdup(source);
            p->symbol = rt_strdup(symbol);
            p->parts = parts;
            fl = pfl = NULL;
        }
        if (p && p->cc && p->source && p->symbol) {
            pthread_mutex_lock(&jit.lock);
            jit.stats.corrupt_entries += st.corrupt_entries;
            pthread_mutex_unlock(&jit.lock);
            *pending = p;
            return NNK_OK;
        }
        pending_free(p);
        s = NNK_ENOMEM;
    }
    free(fl);
    free(pfl);
    return settle(e, s, &st, dl, d, rejected, desc, ref);
}

nnk_status rt_jit_c_finish(rt_jit_pending *p, const nnk_kernel_desc **desc, void **ref)
{
    if (!p->e) { /* the identity first: all of rt_jit_c */
        nnk_status s = rt_jit_c_begin(p->source, p->parts, p->symbol, p->opt_level, desc, ref, NULL);
        pending_free(p);
        return s;
    }
    nnk_jit_stats st = {0};
    void *dl = NULL;
    const nnk_kernel_desc *d = NULL;
    bool rejected = false;
    nnk_status s = obtain(p->key, p->cc, p->flags, p->portable, p->source, p->parts, p->symbol, &dl, &d, &st,
                          &rejected, NULL);
    s = settle(p->e, s, &st, dl, d, rejected, desc, ref);
    pending_free(p);
    return s;
}

void rt_jit_release(void *ref)
{
    pthread_mutex_lock(&jit.lock);
    ((jit_entry *)ref)->refs--;
    pthread_mutex_unlock(&jit.lock);
}

/* With jit.lock held: unloads the entries nobody uses (all: every one).
 * Entries being compiled stay (their thread fills them in). */
static void drop(bool all)
{
    for (jit_entry **p = &jit.entries; *p;) {
        jit_entry *e = *p;
        if (e->busy || (e->refs > 0 && !all)) {
            p = &e->next;
            continue;
        }
        *p = e->next;
        if (e->dl)
            dlclose(e->dl);
        free(e->message);
        free(e);
    }
}

void nnk_jit_clear_memory_cache(void)
{
    pthread_mutex_lock(&jit.lock);
    drop(false);
    pthread_mutex_unlock(&jit.lock);
}

void rt_jit_shutdown(void)
{
    pthread_mutex_lock(&jit.lock);
    drop(true);
    free(jit.cc);
    free(jit.cc_identity);
    free(jit.host_flags);
    jit.cc = jit.cc_identity = jit.host_flags = NULL;
    jit.stats = (nnk_jit_stats){0};
    pthread_mutex_unlock(&jit.lock);
}

/* ---- fork ------------------------------------------------------------------------- */

/* The lock is held only for short sections (never over a compiler), so
 * fork takes it (lifecycle.c, after the locks that nest outside it): the
 * child gets a consistent table and a free lock.  Entries that threads of
 * the parent were compiling have no thread in the child: they go (whoever
 * wants them there compiles them again). */
static void jobs_atfork(rt_fork_phase phase);

void rt_jit_atfork(rt_fork_phase phase)
{
    if (phase == RT_FORK_PREPARE) {
        jobs_atfork(phase);
        pthread_mutex_lock(&jit.lock);
        return;
    }
    if (phase == RT_FORK_CHILD) {
        for (jit_entry **p = &jit.entries; *p;) {
            jit_entry *e = *p;
            if (!e->busy) {
                p = &e->next;
                continue;
            }
            *p = e->next;
            free(e);
        }
        pthread_cond_init(&jit.done, NULL);
        rt_cache_atfork_child();
    }
    pthread_mutex_unlock(&jit.lock);
    jobs_atfork(phase);
}

/* ---- compiling in the background ---------------------------------------------------
 * A module instance's first launch that finds its object in neither cache
 * does not wait for the C compiler (150-300 ms for an elementwise kernel
 * with vector math): a thread compiles it (and fills the disk cache) while
 * the launches run on the evaluator of the instance's IR (libnnkc's
 * eval.c, the bits of the generated code), on the calling thread, as long
 * as the launch is small (elements times nodes at most EVAL_BUDGET); a
 * larger launch waits for the compile.  Once the object is loaded every
 * launch runs it.  docs/runtime.md, "The first call". */

enum { JOB_RUNNING, JOB_DONE, JOB_RETRY };
/* node evaluations one launch may take on the evaluator (about 40 ns of
 * CPU each: 40 ms at most, a fraction of the compile it overlaps) */
#define EVAL_BUDGET ((int64_t)1 << 20)

typedef struct rt_job {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int state;
    bool thread_live;          /* a thread to join (none in a fork's child) */
    bool compiling;            /* JOB_RETRY: a launch compiles it (the others wait) */
    pthread_t thread;
    rt_jit_pending *pending;   /* JOB_RUNNING: what the thread compiles */
    NnkcEval *ev;
    nnk_status status;         /* JOB_DONE */
    const nnk_kernel_desc *desc;
    void *ref;
    char *message;             /* a failed compile's error, given to the next launch */
    char *source, *symbol;     /* JOB_RETRY: compiled again by a launch */
    int32_t opt_level;
    struct rt_job *next;       /* jobs, for fork and shutdown */
} rt_job;

static struct {
    pthread_mutex_t lock;
    rt_job *list;
} jobs = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* NNK_JIT_EVAL: 0 turns the evaluator off (every first call waits for its
 * compile); "always" keeps running it after the compile (for the tests
 * that compare its bits with the compiled code's). */
bool rt_jit_eval_enabled(void)
{
    const char *v = getenv("NNK_JIT_EVAL");
    return !v || strcmp(v, "0") != 0;
}

static atomic_bool eval_forced; /* rt_jit_eval_always */

void rt_jit_eval_always(bool on)
{
    atomic_store(&eval_forced, on);
}

static bool eval_always(void)
{
    if (atomic_load(&eval_forced))
        return true;
    const char *v = getenv("NNK_JIT_EVAL");
    return v && strcmp(v, "always") == 0;
}

void rt_jit_job_wait(void *job)
{
    rt_job *j = job;
    pthread_mutex_lock(&j->lock);
    while (j->state == JOB_RUNNING)
        pthread_cond_wait(&j->done, &j->lock);
    pthread_mutex_unlock(&j->lock);
}

static void *job_main(void *arg)
{
    rt_job *j = arg;
    pthread_mutex_lock(&j->lock);
    rt_jit_pending *p = j->pending;
    pthread_mutex_unlock(&j->lock);
    const nnk_kernel_desc *d = NULL;
    void *ref = NULL;
    nnk_status s = rt_jit_c_finish(p, &d, &ref);
    char *msg = s ? rt_strdup(nnk_last_error()) : NULL;
    pthread_mutex_lock(&j->lock);
    j->pending = NULL;
    j->status = s;
    j->desc = d;
    j->ref = ref;
    j->message = msg;
    j->state = JOB_DONE;
    pthread_cond_broadcast(&j->done);
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

static void job_destroy(rt_job *j)
{
    if (j->ref)
        rt_jit_release(j->ref);
    nnkc_eval_free(j->ev);
    free(j->message);
    free(j->source);
    free(j->symbol);
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->done);
    free(j);
}

nnk_status rt_jit_c_async(const char *source, const char *symbol, int32_t opt_level, NnkcEval *ev,
                          const nnk_kernel_desc *iface, nnk_ext_kernel *out)
{
    rt_jit_pending *p = NULL;
    const nnk_kernel_desc *d = NULL;
    void *ref = NULL;
    nnk_status s = rt_jit_c_begin(source, true, symbol, opt_level, &d, &ref, &p);
    if (s || !p) {
        nnkc_eval_free(ev);
        if (!s)
            out->desc = d, out->handle = ref;
        return s;
    }
    rt_job *j = rt_calloc(1, sizeof *j);
    char *src = rt_strdup(source), *sym = rt_strdup(symbol);
    if (!j || !src || !sym) {
        free(j);
        free(src);
        free(sym);
        nnkc_eval_free(ev);
        s = rt_jit_c_finish(p, &d, &ref); /* settles the busy entry */
        if (!s)
            out->desc = d, out->handle = ref;
        return s ? s : NNK_OK;
    }
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->done, NULL);
    j->state = JOB_RUNNING;
    j->pending = p;
    j->ev = ev;
    j->source = src;
    j->symbol = sym;
    j->opt_level = opt_level;
    pthread_mutex_lock(&jobs.lock);
    j->thread_live = pthread_create(&j->thread, NULL, job_main, j) == 0;
    if (j->thread_live) {
        j->next = jobs.list;
        jobs.list = j;
    }
    pthread_mutex_unlock(&jobs.lock);
    if (!j->thread_live) { /* no thread: compiled here, as without the evaluator */
        j->pending = NULL;
        job_destroy(j);
        s = rt_jit_c_finish(p, &d, &ref);
        if (!s)
            out->desc = d, out->handle = ref;
        return s;
    }
    out->desc = iface;
    out->handle = j;
    return NNK_OK;
}

nnk_status rt_jit_job_launch(void *job, const nnk_plan *plan)
{
    rt_job *j = job;
    pthread_mutex_lock(&j->lock);
    for (;;) {
        if (j->state == JOB_RUNNING) {
            int64_t cost = nnkc_eval_cost(j->ev);
            if (plan->nkept <= EVAL_BUDGET / (cost > 0 ? cost : 1)) {
                pthread_mutex_unlock(&j->lock);
                nnkc_eval_run(j->ev, plan, 0, plan->nkept);
                return NNK_OK;
            }
            pthread_cond_wait(&j->done, &j->lock); /* too large: the compiled code */
            continue;
        }
        if (j->state == JOB_RETRY) {
            /* a compile that failed, or whose thread a fork left behind:
             * this launch compiles it, as without the evaluator */
            if (j->compiling) {
                pthread_cond_wait(&j->done, &j->lock);
                continue;
            }
            j->compiling = true;
            pthread_mutex_unlock(&j->lock);
            const nnk_kernel_desc *d = NULL;
            void *ref = NULL;
            nnk_status s = rt_jit_c(j->source, true, j->symbol, j->opt_level, &d, &ref);
            pthread_mutex_lock(&j->lock);
            j->compiling = false;
            if (!s) {
                j->state = JOB_DONE, j->status = NNK_OK, j->desc = d, j->ref = ref;
            }
            pthread_cond_broadcast(&j->done);
            pthread_mutex_unlock(&j->lock);
            if (s)
                return s;
            pthread_mutex_lock(&j->lock);
            continue;
        }
        /* JOB_DONE */
        if (j->status) {
            /* the compile failed: this launch reports it; the next compiles again */
            nnk_status s = rt_error(j->status, "%s", j->message ? j->message : "JIT: the background compile failed");
            free(j->message);
            j->message = NULL;
            j->status = NNK_OK;
            j->state = JOB_RETRY;
            pthread_mutex_unlock(&j->lock);
            return s;
        }
        const nnk_kernel_desc *d = j->desc;
        pthread_mutex_unlock(&j->lock);
        if (eval_always()) {
            nnkc_eval_run(j->ev, plan, 0, plan->nkept);
            return NNK_OK;
        }
        return rt_host_run(d, plan);
    }
}

/* Waits for the job's thread (the compile finishes and fills the disk
 * cache: a process never leaves one half done by its own choice). */
static void job_join(rt_job *j)
{
    pthread_mutex_lock(&jobs.lock);
    bool live = j->thread_live;
    j->thread_live = false;
    for (rt_job **p = &jobs.list; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    pthread_mutex_unlock(&jobs.lock);
    if (live)
        pthread_join(j->thread, NULL);
}

void rt_jit_job_free(void *job)
{
    rt_job *j = job;
    job_join(j);
    /* (joined by rt_jit_jobs_wait instead: its thread is done with j once
     * the state says so) */
    pthread_mutex_lock(&j->lock);
    while (j->state == JOB_RUNNING)
        pthread_cond_wait(&j->done, &j->lock);
    pthread_mutex_unlock(&j->lock);
    job_destroy(j);
}

void rt_jit_jobs_wait(void)
{
    for (;;) {
        pthread_mutex_lock(&jobs.lock);
        rt_job *j = jobs.list;
        while (j && !j->thread_live)
            j = j->next;
        pthread_t t;
        if (j) {
            t = j->thread;
            j->thread_live = false; /* joined here; the job stays its kernel's */
        }
        pthread_mutex_unlock(&jobs.lock);
        if (!j)
            return;
        pthread_join(t, NULL);
    }
}

/* Fork: the jobs' locks before jit.lock (a launch holds a job's lock only
 * for short sections, never over a compiler).  In the child a job whose
 * thread was compiling has none: its next launch compiles it. */
static void jobs_atfork(rt_fork_phase phase)
{
    if (phase == RT_FORK_PREPARE) {
        pthread_mutex_lock(&jobs.lock);
        for (rt_job *j = jobs.list; j; j = j->next)
            pthread_mutex_lock(&j->lock);
        return;
    }
    for (rt_job *j = jobs.list; j; j = j->next) {
        if (phase == RT_FORK_CHILD) {
            j->thread_live = false;
            if (j->state == JOB_RUNNING) {
                rt_jit_pending_drop(j->pending); /* its busy entry went with rt_jit_atfork */
                j->pending = NULL;
                j->state = JOB_RETRY;
            }
            j->compiling = false;
            pthread_cond_init(&j->done, NULL);
        }
        pthread_mutex_unlock(&j->lock);
    }
    if (phase == RT_FORK_CHILD)
        jobs.list = NULL; /* no threads to join there */
    pthread_mutex_unlock(&jobs.lock);
}
