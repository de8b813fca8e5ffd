/* jit_cpu.c - the CPU JIT: C source -> shared object -> loaded descriptor.
 *
 * The key of a compiled object is the SHA-256 of the source, the symbol,
 * the compiler's identity (its `--version` output, asked once per process
 * and compiler) and the flags, so a compiler upgrade or another -O level
 * never reuses a stale object.  Lookups go to the process's memory cache,
 * then to the disk cache (cache.c), then to the compiler.  The compiler
 * runs with posix_spawn (no shell: NNK_CC is split on blanks), and its
 * stderr becomes the error message when it fails.
 *
 * One mutex covers the memory cache and compilations: when several threads
 * want the same kernel, one compiles and the others find it loaded.
 */
#include "config.h"
#include "internal.h"
#include "nnkc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct jit_entry {
    char key[65];
    void *dl;
    const nnk_kernel_desc *desc;
    long refs;              /* kernels using it; extensions' compile_c pins it */
    struct jit_entry *next;
} jit_entry;

static struct {
    pthread_mutex_t lock;
    jit_entry *entries;
    char *cc;               /* the compiler the identity belongs to */
    char *cc_identity;      /* its --version and the target macros of host_flags */
    char *host_flags;       /* flags for this machine's CPU the compiler accepts ("" for none) */
    nnk_jit_stats stats;
    unsigned long serial;   /* unique temporary names */
} jit = {.lock = PTHREAD_MUTEX_INITIALIZER};

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
    for (char *p = strtok(*copy, " \t\n"); p && n < cap - 1; p = strtok(NULL, " \t\n"))
        argv[n++] = p;
    argv[n] = NULL;
    return n;
}

/* Runs argv, collecting stdout and stderr into out.  Returns the exit
 * status (0 = success), or -1 with an error set when it cannot run. */
static int run(char *const *argv, rt_str *out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        rt_error(NNK_EIO, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err) {
        close(fds[0]);
        rt_error(NNK_EIO, "cannot run the C compiler '%s' (set NNK_CC to a C compiler): %s", argv[0], strerror(err));
        return -1;
    }
    char buf[4096];
    ssize_t r;
    while ((r = read(fds[0], buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0 && out->len < 65536)
            rt_str_add(out, buf, (size_t)r);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            rt_error(NNK_EIO, "waitpid: %s", strerror(errno));
            return -1;
        }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
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
    "-march=native -fvect-cost-model=dynamic", /* gcc */
    "-march=native",                           /* clang, and compilers without the cost model flag */
};

/* With jit.lock held: finds the host flags of `cc` (argv of its words);
 * appends the target macros to `id`. */
static void probe_host_flags(char **argv, int n, rt_str *id)
{
    free(jit.host_flags);
    jit.host_flags = NULL;
    const char *env = getenv("NNK_JIT_NATIVE");
    if (env && strcmp(env, "0") == 0)
        return;
    for (size_t c = 0; c < sizeof host_candidates / sizeof host_candidates[0]; c++) {
        char *copy, *fargv[8];
        int nf = split_words(host_candidates[c], &copy, fargv, 8);
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
            jit.host_flags = rt_strdup(host_candidates[c]);
            rt_str_add(id, "\n", 1);
            if (out.s)
                rt_str_add(id, out.s, strlen(out.s));
            rt_str_free(&out);
            return;
        }
        rt_str_free(&out);
    }
}

/* `$NNK_CC --version` and its host flags, once per process and compiler;
 * with jit.lock held. */
static nnk_status compiler_identity(const char *cc, const char **id)
{
    if (jit.cc && strcmp(jit.cc, cc) == 0)
        return *id = jit.cc_identity, NNK_OK;
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
        probe_host_flags(argv, n, &out);
    free(copy);
    if (st != 0) {
        nnk_status s = st < 0 ? NNK_ECOMPILE
                              : rt_error(NNK_ECOMPILE, "the C compiler '%s' does not answer --version (exit %d): %s", cc,
                                         st, out.s ? out.s : "");
        if (st < 0)
            rt_error_prefix(NNK_ECOMPILE, "JIT");
        rt_str_free(&out);
        return s;
    }
    free(jit.cc);
    free(jit.cc_identity);
    jit.cc = rt_strdup(cc);
    jit.cc_identity = out.s ? out.s : rt_strdup("");
    if (!jit.cc || !jit.cc_identity)
        return NNK_ENOMEM;
    *id = jit.cc_identity;
    return NNK_OK;
}

static nnk_status write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    if (!f)
        return rt_error(NNK_EIO, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    ok &= fclose(f) == 0;
    return ok ? NNK_OK : rt_error(NNK_EIO, "cannot write %s", path);
}

/* Compiles `base`.c into `base`.so. */
static nnk_status compile(const char *cc, const char *flags, const char *base)
{
    char src[4200], obj[4200];
    snprintf(src, sizeof src, "%s.c", base);
    snprintf(obj, sizeof obj, "%s.so", base);
    char *cc_copy, *fl_copy = NULL, *argv[128], *fargv[64];
    int n = split_words(cc, &cc_copy, argv, 60);
    int nf = n < 0 ? -1 : split_words(flags, &fl_copy, fargv, 60);
    if (n <= 0 || nf < 0) {
        free(cc_copy);
        free(fl_copy);
        return n == 0 ? rt_error(NNK_EINVAL, "NNK_CC is empty") : NNK_ENOMEM;
    }
    for (int i = 0; i < nf; i++)
        argv[n++] = fargv[i];
    const char *tail[] = {"-shared", "-fPIC", "-o", obj, src};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        argv[n++] = (char *)tail[i];
    argv[n] = NULL;
    rt_str out = {0};
    int st = run(argv, &out);
    free(cc_copy);
    free(fl_copy);
    nnk_status s = NNK_OK;
    if (st < 0)
        s = rt_error_prefix(NNK_ECOMPILE, "JIT");
    else if (st > 0)
        s = rt_error(NNK_ECOMPILE, "the C compiler failed (%s %s, exit %d):\n%s", cc, flags, st,
                     out.s ? out.s : "(no output)");
    rt_str_free(&out);
    unlink(src);
    return s;
}

static nnk_status load(const char *path, const char *symbol, void **dl, const nnk_kernel_desc **desc)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        return rt_error(NNK_EIO, "cannot load %s: %s", path, e ? e : "dlopen failed");
    }
    const nnk_kernel_desc *d = dlsym(h, symbol);
    if (!d) {
        dlclose(h);
        return rt_error(NNK_ECOMPILE, "the compiled kernel has no symbol '%s'", symbol);
    }
    if (d->abi != NNK_ABI_VERSION) {
        dlclose(h);
        return rt_error(NNK_EABI, "kernel '%s' was generated for ABI version %d; the runtime has version %d", symbol,
                        d->abi, NNK_ABI_VERSION);
    }
    *dl = h;
    *desc = d;
    return NNK_OK;
}

/* Compiles in a private temporary directory (no usable disk cache). */
static nnk_status compile_private(const char *cc, const char *flags, const char *source, const char *symbol,
                                  void **dl, const nnk_kernel_desc **desc)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], base[4200], obj[4300];
    snprintf(dir, sizeof dir, "%s/nnk-jit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return rt_error(NNK_EIO, "cannot create a temporary directory in %s: %s", tmp && *tmp ? tmp : "/tmp",
                        strerror(errno));
    snprintf(base, sizeof base, "%s/k", dir);
    snprintf(obj, sizeof obj, "%s.so", base);
    char src[4300];
    snprintf(src, sizeof src, "%s.c", base);
    nnk_status s = write_text(src, source);
    if (!s && !(s = compile(cc, flags, base)))
        s = load(obj, symbol, dl, desc);
    unlink(src);
    unlink(obj);
    rmdir(dir);
    return s;
}

/* With jit.lock held: disk cache, then the compiler. */
static nnk_status obtain(const char *dir, const char *key, const char *cc, const char *flags, const char *source,
                         const char *symbol, void **dl, const nnk_kernel_desc **desc)
{
    if (!dir) {
        jit.stats.compiles++;
        return compile_private(cc, flags, source, symbol, dl, desc);
    }
    char path[4200], base[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s.so", dir, key);
    nnk_status s = rt_cache_verify(path);
    if (s == NNK_OK && load(path, symbol, dl, desc) == NNK_OK) {
        jit.stats.disk_hits++;
        return NNK_OK;
    }
    if (s == NNK_EIO)
        jit.stats.corrupt_entries++;
    /* A unique name per process and call, in the cache directory so that
     * rename() stays within one file system. */
    snprintf(base, sizeof base, "%s/%s.tmp%ld.%lu", dir, key, (long)getpid(), ++jit.serial);
    snprintf(tmp, sizeof tmp, "%s.c", base);
    jit.stats.compiles++;
    if (write_text(tmp, source) != NNK_OK) /* an unwritable directory */
        return compile_private(cc, flags, source, symbol, dl, desc);
    if ((s = compile(cc, flags, base)))
        return s;
    snprintf(tmp, sizeof tmp, "%s.so", base);
    if (rt_cache_commit(tmp, path) == NNK_OK)
        return load(path, symbol, dl, desc);
    s = load(tmp, symbol, dl, desc);
    unlink(tmp);
    return s;
}

nnk_status rt_jit_c(const char *source, const char *symbol, int32_t opt_level, const nnk_kernel_desc **desc,
                    void **ref)
{
    if (!source || !symbol || !desc)
        return rt_error(NNK_EINVAL, "JIT: source, symbol or desc is NULL");
    const char *cc = compiler_command();
    pthread_mutex_lock(&jit.lock);
    const char *id = NULL;
    nnk_status s = compiler_identity(cc, &id);
    if (s) {
        pthread_mutex_unlock(&jit.lock);
        return s;
    }
    char flags[512];
    snprintf(flags, sizeof flags, "%s%s%s", nnkc_c_flags(opt_level), jit.host_flags ? " " : "",
             jit.host_flags ? jit.host_flags : "");
    uint8_t digest[32];
    rt_sha256 h;
    rt_sha256_init(&h);
    static const char tag[] = "nnk-jit-c 1";
    const char *parts[] = {tag, id, cc, flags, symbol, source};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        rt_sha256_update(&h, parts[i], strlen(parts[i]) + 1);
    rt_sha256_final(&h, digest);
    char key[65];
    rt_sha256_hex(digest, key);

    for (jit_entry *e = jit.entries; e; e = e->next) {
        if (memcmp(e->key, key, 64) == 0) {
            jit.stats.memory_hits++;
            e->refs++;
            *desc = e->desc;
            if (ref)
                *ref = e;
            pthread_mutex_unlock(&jit.lock);
            return NNK_OK;
        }
    }
    jit_entry *e = rt_calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&jit.lock);
        return NNK_ENOMEM;
    }
    s = obtain(rt_cache_dir(), key, cc, flags, source, symbol, &e->dl, &e->desc);
    if (s) {
        free(e);
    } else {
        memcpy(e->key, key, 65);
        e->refs = 1;
        e->next = jit.entries;
        jit.entries = e;
        *desc = e->desc;
        if (ref)
            *ref = e;
    }
    pthread_mutex_unlock(&jit.lock);
    return s;
}

void rt_jit_release(void *ref)
{
    pthread_mutex_lock(&jit.lock);
    ((jit_entry *)ref)->refs--;
    pthread_mutex_unlock(&jit.lock);
}

/* With jit.lock held: unloads the entries nobody uses (all: every one). */
static void drop(bool all)
{
    for (jit_entry **p = &jit.entries; *p;) {
        jit_entry *e = *p;
        if (e->refs > 0 && !all) {
            p = &e->next;
            continue;
        }
        *p = e->next;
        dlclose(e->dl);
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
