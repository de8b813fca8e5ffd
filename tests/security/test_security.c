/* test_security.c - the kernel cache, temporary files, the compiler's
 * subprocess and JIT imports, probed as an adversary would (issue 12,
 * docs/runtime.md "The disk cache").
 *
 * Every probe runs in a child process of its own (its environment, a
 * crash or a hang cannot touch the others; a hang is ended by alarm()),
 * and prints one line: PASS, FAIL with the reason, or SKIP with the
 * reason (the probes that need a second user, a tmpfs mount or root).
 * The second user is `nobody`, taken with setuid() in a forked child.
 * Exit status 1 when any probe fails.  `test_security NAME...` runs some.
 *
 * The attacker knows the entry format: a forged entry is made in the
 * format of the library under test (read from a real entry's first
 * bytes), with its integrity digest computed, so only the trust checks
 * (owner, mode, links, the keyed digest) can stop it.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Absent from libraries older than these probes: the probe then fails. */
nnk_status nnk_cache_clear(void) __attribute__((weak));
const char *nnk_cache_debug(void) __attribute__((weak));

static char base[256];
static const uid_t nobody = 65534;

#define FAIL(...) return snprintf(why, n, __VA_ARGS__), 1
#define SKIP(...) return snprintf(why, n, __VA_ARGS__), 2
#define NEED(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)

/* ---- helpers ------------------------------------------------------------------------ */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    size_t got = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    if (b)
        b[got] = 0;
    if (len)
        *len = got;
    return b;
}

static bool spit(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0)
        return false;
    bool ok = write(fd, data, len) == (ssize_t)len;
    close(fd);
    return ok;
}

static void mkdir_mode(const char *path, mode_t mode)
{
    mkdir(path, mode);
    chmod(path, mode);
}

/* The probe's directory base/NAME, reachable by `nobody`. */
static void workdir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", base, name);
    sh("rm -rf '%s'", out);
    mkdir_mode(out, 0755);
}

/* C source of a kernel `neg_desc` computing y = factor * x (f64, 1-d),
 * with `extra` C appended (an attacker's constructor). */
static char *kernel_source(const char *salt, double factor, const char *extra, int abi_delta)
{
    size_t hn;
    char path[512];
    snprintf(path, sizeof path, "%s/runtime/include/nnk/abi.h", NNK_TEST_SRCDIR);
    char *abi = slurp(path, &hn);
    if (!abi)
        return NULL;
    char body[4096];
    snprintf(body, sizeof body,
             "/* %s */\n"
             "static void neg_run(const nnk_plan *p, int64_t b, int64_t e)\n"
             "{\n"
             "    for (int64_t i = b; i < e; i++)\n"
             "        ((double *)p->data[1])[i * p->strides[1][0]] = %.17g * ((const double *)p->data[0])[i * p->strides[0][0]];\n"
             "}\n"
             "static const nnk_param_desc neg_params[] = {{\"x\", NNK_F64, NNK_PARAM_TENSOR, {0}},\n"
             "    {\"y\", NNK_F64, NNK_PARAM_TENSOR | NNK_PARAM_OUTPUT, {0}}};\n"
             "const nnk_kernel_desc neg_desc = {NNK_ABI_VERSION + %d, NNK_KIND_ELEMENTWISE, \"neg\", \"neg\", 1, 1, neg_params,\n"
             "    0, 0, neg_run, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};\n%s",
             salt, factor, abi_delta, extra ? extra : "");
    char *src = malloc(hn + strlen(body) + 1);
    memcpy(src, abi, hn);
    strcpy(src + hn, body);
    free(abi);
    return src;
}

/* Builds and launches the kernel; true when it ran and computed factor * x.
 * *status is the first failing status (NNK_OK when it ran). */
static bool run_kernel(const char *salt, double factor, nnk_status *status)
{
    char *src = kernel_source(salt, factor, NULL, 0);
    nnk_kernel *k = NULL;
    *status = src ? nnk_kernel_from_source(NULL, src, "neg_desc", &k) : NNK_ENOMEM;
    free(src);
    if (*status)
        return false;
    double x[3] = {1, -2, 3}, y[3] = {0, 0, 0};
    int64_t s[] = {3};
    nnk_array *ax = NULL, *ay = NULL;
    nnk_args *a = NULL;
    bool ok = nnk_array_from_host(NULL, NNK_F64, 1, s, x, &ax) == NNK_OK && nnk_args_new(&a) == NNK_OK &&
              nnk_args_array(a, ax) == NNK_OK;
    ok = ok && (*status = nnk_launch(k, a)) == NNK_OK;
    ok = ok && nnk_args_output(a, 0, &ay) == NNK_OK && nnk_array_to_host(ay, NNK_F64, y, sizeof y) == NNK_OK;
    ok = ok && y[0] == factor && y[1] == -2 * factor && y[2] == 3 * factor;
    nnk_array_free(ay);
    nnk_array_free(ax);
    nnk_args_free(a);
    nnk_kernel_free(k);
    return ok;
}

/* The kernel objects in dir (names KEY.so), joined by ' ' (not the
 * compiler identities, KEY.ccid, that the first compile remembers too). */
static void list_dir(const char *dir, char *out, size_t n)
{
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] != '.' && l > 3 && strcmp(e->d_name + l - 3, ".so") == 0)
            snprintf(out + strlen(out), n - strlen(out), "%s%s", *out ? " " : "", e->d_name);
    }
    closedir(d);
}

/* Runs the kernel once in a fresh private cache `dir` and returns its
 * entry's name (the key's file) and the entry's first 8 bytes. */
static bool reference_entry(const char *dir, const char *salt, double factor, char *name, size_t n, char fmt[9])
{
    sh("rm -rf '%s'", dir);
    setenv("NNK_CACHE_DIR", dir, 1);
    nnk_status st;
    if (!run_kernel(salt, factor, &st))
        return false;
    nnk_jit_clear_memory_cache();
    list_dir(dir, name, n);
    if (!*name || strchr(name, ' '))
        return false;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *b = slurp(path, &len);
    if (!b || len < 8) {
        free(b);
        return false;
    }
    memcpy(fmt, b, 8);
    fmt[8] = 0;
    free(b);
    return true;
}

/* An object whose constructor creates `marker`: the attacker's code. */
static char *evil_object(const char *dir, const char *marker, size_t *len)
{
    char extra[1024];
    snprintf(extra, sizeof extra,
             "#include <fcntl.h>\n#include <unistd.h>\n"
             "__attribute__((constructor)) static void evil(void) { close(open(\"%s\", O_CREAT | O_WRONLY, 0644)); }\n",
             marker);
    char *src = kernel_source("evil", -1, extra, 0);
    char c[600], so[600];
    snprintf(c, sizeof c, "%s/evil.c", dir);
    snprintf(so, sizeof so, "%s/evil.so", dir);
    bool ok = src && spit(c, src, strlen(src), 0644);
    free(src);
    if (!ok || sh("gcc -shared -fPIC -o '%s' '%s'", so, c) != 0)
        return NULL;
    return slurp(so, len);
}

/* An entry for `key`.suffix holding body, valid in the format `fmt` (the
 * first bytes of a real entry): what an attacker who reads the source
 * writes.  `uid` is the victim's. */
static bool forge_entry(const char *path, const char *name, const char *fmt, const char *body, size_t len, uid_t uid)
{
    uint8_t *e = malloc(len + 64);
    size_t total;
    if (memcmp(fmt, "NNKENTRY", 8) == 0) {
        char key[65];
        memcpy(key, name, 64);
        key[64] = 0;
        const char *suffix = name + 64;
        static const char tag[] = "nnk-cache-entry 1";
        uint8_t meta[12];
        for (int i = 0; i < 4; i++)
            meta[i] = (uint8_t)((uint32_t)uid >> (8 * i));
        for (int i = 0; i < 8; i++)
            meta[4 + i] = (uint8_t)((uint64_t)len >> (8 * i));
        memset(e, 0, 64);
        memcpy(e, "NNKENTRY", 8);
        memcpy(e + 8, meta + 4, 8);
        rt_sha256 h;
        rt_sha256_init(&h);
        rt_sha256_update(&h, tag, sizeof tag);
        rt_sha256_update(&h, key, 65);
        rt_sha256_update(&h, suffix, strlen(suffix) + 1);
        rt_sha256_update(&h, meta, sizeof meta);
        rt_sha256_update(&h, body, len);
        rt_sha256_final(&h, e + 16);
        memcpy(e + 64, body, len);
        total = len + 64;
    } else { /* the first format: the object, then "NNKCACHE" | SHA-256 | length */
        memcpy(e, body, len);
        memcpy(e + len, "NNKCACHE", 8);
        rt_sha256 h;
        rt_sha256_init(&h);
        rt_sha256_update(&h, body, len);
        rt_sha256_final(&h, e + len + 8);
        for (int i = 0; i < 8; i++)
            e[len + 40 + i] = (uint8_t)((uint64_t)len >> (8 * i));
        total = len + 48;
    }
    unlink(path);
    bool ok = spit(path, e, total, 0644);
    free(e);
    return ok;
}

/* Runs fn as `nobody` in a child; true when it returned true. */
static bool as_nobody(bool (*fn)(void *), void *arg)
{
    pid_t p = fork();
    if (p == 0) {
        setgroups(0, NULL);
        if (setgid(nobody) != 0 || setuid(nobody) != 0)
            _exit(2);
        _exit(fn(arg) ? 0 : 1);
    }
    int st;
    return p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

typedef struct plant {
    const char *path, *name, *fmt, *body;
    size_t len;
    uid_t victim;
    const char *link_to; /* also: a symbolic link here to this directory */
} plant;

static bool do_plant(void *arg)
{
    plant *p = arg;
    if (p->link_to) {
        mkdir_mode(p->link_to, 0755);
        char path[700];
        snprintf(path, sizeof path, "%s/%s", p->link_to, p->name);
        if (!forge_entry(path, p->name, p->fmt, p->body, p->len, p->victim))
            return false;
        return symlink(p->link_to, p->path) == 0;
    }
    return forge_entry(p->path, p->name, p->fmt, p->body, p->len, p->victim);
}

static bool can_reach(void *dir)
{
    return access(dir, W_OK | X_OK) == 0;
}

static const char *debug_message(void)
{
    return nnk_cache_debug ? nnk_cache_debug() : "(no nnk_cache_debug)";
}

/* ---- the cache: modes, other users, links, swapped and junk entries ------------------------- */

static int p_modes(char *why, size_t n)
{
    char dir[300], cache[400], names[2000];
    workdir(dir, sizeof dir, "modes");
    snprintf(cache, sizeof cache, "%s/new/cache", dir);
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    NEED(run_kernel("modes", -1, &st), "the kernel did not run (%s)", nnk_last_error());
    struct stat sb;
    NEED(stat(cache, &sb) == 0 && (sb.st_mode & 0777) == 0700, "the cache directory has mode %03o, not 0700",
         (unsigned)sb.st_mode & 0777);
    list_dir(cache, names, sizeof names);
    char path[2500];
    snprintf(path, sizeof path, "%s/%s", cache, names);
    NEED(*names && stat(path, &sb) == 0, "no entry written");
    NEED((sb.st_mode & 0777) == 0600, "the entry has mode %03o, not 0600", (unsigned)sb.st_mode & 0777);
    return 0;
}

/* The victim's cache `cache` was prepared by `setup` (an attacker's
 * entry or link planted); the victim's launch must not run the attacker's
 * code, and must still compute right. */
static int attack(char *why, size_t n, const char *name, mode_t cache_mode, bool link, bool chown_entry)
{
    if (geteuid() != 0)
        SKIP("needs root (a second user, `nobody`)");
    char dir[300], ref[400], cache[400], marker[400], fmt[9], key[200];
    workdir(dir, sizeof dir, name);
    snprintf(ref, sizeof ref, "%s/ref", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(marker, sizeof marker, "%s/pwned", dir);
    NEED(reference_entry(ref, name, -1, key, sizeof key, fmt), "no reference entry (%s)", nnk_last_error());
    size_t len;
    char *evil = evil_object(dir, marker, &len);
    NEED(evil, "cannot build the attacker's object");
    char entry[700], evil_dir[400];
    snprintf(entry, sizeof entry, "%s/%s", cache, key);
    snprintf(evil_dir, sizeof evil_dir, "%s/attacker", dir);
    plant p = {entry, key, fmt, evil, len, geteuid(), NULL};
    chmod(dir, 0777);
    bool reach = as_nobody(can_reach, dir);
    chmod(dir, 0755);
    if (!reach) {
        free(evil);
        SKIP("`nobody` cannot reach %s (a private TMPDIR?)", dir);
    }
    bool planted;
    if (link) { /* a sticky world-writable parent, as /tmp: the attacker's link to the attacker's directory */
        chmod(dir, 01777);
        p.path = cache;
        p.link_to = evil_dir;
        planted = as_nobody(do_plant, &p);
    } else if (chown_entry) { /* the victim's own private directory, an entry owned by someone else */
        mkdir_mode(cache, 0700);
        planted = do_plant(&p) && chown(entry, nobody, nobody) == 0;
    } else {
        mkdir_mode(cache, cache_mode);
        planted = as_nobody(do_plant, &p);
    }
    free(evil);
    NEED(planted, "cannot plant the attacker's entry");
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    bool ran = run_kernel(name, -1, &st);
    NEED(access(marker, F_OK) != 0, "the attacker's constructor ran in the victim's process (launch said %s)",
         nnk_status_name(st));
    NEED(ran, "the kernel did not run after the attack: %s", nnk_last_error());
    NEED(*debug_message(), "no debug message says why");
    snprintf(why, n, "refused: %s", debug_message());
    return 0;
}

static int p_shared_dir(char *why, size_t n) { return attack(why, n, "shared-dir", 0777, false, false); }
static int p_sticky_dir(char *why, size_t n) { return attack(why, n, "sticky-dir", 01777, false, false); }
static int p_group_dir(char *why, size_t n) { return attack(why, n, "group-dir", 0773, false, false); }
static int p_link_dir(char *why, size_t n) { return attack(why, n, "link-dir", 0, true, false); }
static int p_foreign_entry(char *why, size_t n) { return attack(why, n, "foreign-entry", 0, false, true); }

/* Pre-planted links at the temporary names the compile used to write. */
static int p_symlink_clobber(char *why, size_t n)
{
    char dir[300], ref[400], cache[400], target[400], fmt[9], key[200];
    workdir(dir, sizeof dir, "clobber");
    snprintf(ref, sizeof ref, "%s/ref", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(target, sizeof target, "%s/precious", dir);
    NEED(reference_entry(ref, "clobber", -1, key, sizeof key, fmt), "no reference entry");
    NEED(spit(target, "precious\n", 9, 0644), "cannot write the target");
    mkdir_mode(cache, 0700);
    char stem[200];
    snprintf(stem, sizeof stem, "%.64s", key);
    for (int s = 0; s < 16; s++) {
        char l[700];
        const char *ext[] = {".c", ".so"};
        for (int e = 0; e < 2; e++) {
            snprintf(l, sizeof l, "%s/%s.tmp%ld.%d%s", cache, stem, (long)getpid(), s, ext[e]);
            symlink(target, l);
        }
    }
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    bool ran = run_kernel("clobber", -1, &st);
    size_t len;
    char *t = slurp(target, &len);
    bool intact = t && len == 9 && memcmp(t, "precious\n", 9) == 0;
    free(t);
    NEED(intact, "the file behind a planted link was overwritten (%zu bytes now)", len);
    NEED(ran, "the kernel did not run: %s", nnk_last_error());
    return 0;
}

/* Kernel b's entry replaced by kernel a's (both the victim's). */
static int p_swapped_entry(char *why, size_t n)
{
    char dir[300], a[400], b[400], fmt[9], ka[200], kb[200];
    workdir(dir, sizeof dir, "swapped");
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    NEED(reference_entry(a, "swapped", -1, ka, sizeof ka, fmt), "no entry a");
    NEED(reference_entry(b, "swapped", 2, kb, sizeof kb, fmt), "no entry b");
    NEED(sh("cp '%s/%s' '%s/%s'", a, ka, b, kb) == 0, "cannot swap");
    setenv("NNK_CACHE_DIR", b, 1);
    nnk_status st;
    NEED(run_kernel("swapped", 2, &st), "kernel b ran another kernel's code (or failed: %s)",
         st ? nnk_last_error() : "wrong values");
    return 0;
}

/* A 512 MiB junk entry: rejected from its header, not read whole. */
static int p_junk_size(char *why, size_t n)
{
    char dir[300], cache[400], fmt[9], key[200], path[700];
    workdir(dir, sizeof dir, "junk");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    NEED(reference_entry(cache, "junk", -1, key, sizeof key, fmt), "no reference entry");
    snprintf(path, sizeof path, "%s/%s", cache, key);
    int fd = open(path, O_WRONLY | O_TRUNC);
    NEED(fd >= 0 && ftruncate(fd, (off_t)512 << 20) == 0, "cannot make the junk entry");
    close(fd);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    nnk_status st;
    NEED(run_kernel("junk", -1, &st), "the kernel did not run: %s", nnk_last_error());
    getrusage(RUSAGE_SELF, &r1);
    long grew = r1.ru_maxrss - r0.ru_maxrss; /* KiB */
    NEED(grew < 128 * 1024, "the junk entry was read whole (peak memory grew by %ld MiB)", grew / 1024);
    return 0;
}

/* ---- the cache's bounds: NNK_CACHE_MAX, nnk_cache_clear, orphans ----------------------------- */

static uint64_t dir_bytes(const char *dir, int *count)
{
    uint64_t total = 0;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat sb;
        char p[700];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(p, &sb) == 0 && S_ISREG(sb.st_mode))
            total += (uint64_t)sb.st_size, ++*count;
    }
    closedir(d);
    return total;
}

static int p_cache_max(char *why, size_t n)
{
    char dir[300], cache[400], fmt[9], key[200], salt[32];
    workdir(dir, sizeof dir, "max");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    NEED(reference_entry(cache, "max0", -1, key, sizeof key, fmt), "no reference entry");
    int count;
    uint64_t one = dir_bytes(cache, &count);
    char max[32];
    snprintf(max, sizeof max, "%llu", (unsigned long long)(one * 5 / 2));
    setenv("NNK_CACHE_MAX", max, 1);
    nnk_status st;
    for (int i = 1; i <= 4; i++) {
        snprintf(salt, sizeof salt, "max%d", i);
        NEED(run_kernel(salt, -1, &st), "kernel %d did not run: %s", i, nnk_last_error());
    }
    uint64_t total = dir_bytes(cache, &count);
    NEED(total <= one * 5 / 2, "NNK_CACHE_MAX=%s, the cache holds %llu bytes in %d entries", max,
         (unsigned long long)total, count);
    /* the newest stays: running it again is a disk hit */
    nnk_jit_clear_memory_cache();
    nnk_jit_stats s0, s1;
    nnk_jit_get_stats(&s0);
    NEED(run_kernel(salt, -1, &st), "the last kernel did not run");
    nnk_jit_get_stats(&s1);
    NEED(s1.disk_hits == s0.disk_hits + 1, "the most recently used entry was evicted");
    return 0;
}

static int p_cache_clear(char *why, size_t n)
{
    NEED(nnk_cache_clear, "the library has no nnk_cache_clear()");
    char dir[300], cache[400], fmt[9], key[200];
    workdir(dir, sizeof dir, "clear");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    NEED(reference_entry(cache, "clear", -1, key, sizeof key, fmt), "no reference entry");
    NEED(nnk_cache_clear() == NNK_OK, "nnk_cache_clear: %s", nnk_last_error());
    int count;
    dir_bytes(cache, &count);
    NEED(count == 0, "%d entries left", count);
    nnk_status st;
    nnk_jit_stats s0, s1;
    nnk_jit_get_stats(&s0);
    NEED(run_kernel("clear", -1, &st), "the kernel did not run after the clear");
    nnk_jit_get_stats(&s1);
    NEED(s1.compiles == s0.compiles + 1, "not recompiled after the clear");
    return 0;
}

static int p_orphans(char *why, size_t n)
{
    char dir[300], cache[400], old[500], young[500];
    workdir(dir, sizeof dir, "orphans");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir_mode(cache, 0700);
    snprintf(old, sizeof old, "%s/.tmp-0123456789ab", cache);
    snprintf(young, sizeof young, "%s/.tmp-ba9876543210", cache);
    NEED(spit(old, "partial", 7, 0600) && spit(young, "partial", 7, 0600), "cannot plant");
    struct timeval tv[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    utimes(old, tv);
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    NEED(run_kernel("orphans", -1, &st), "the kernel did not run: %s", nnk_last_error());
    NEED(access(old, F_OK) != 0, "a two-hour-old temporary file of a killed process is still there");
    NEED(access(young, F_OK) == 0, "a fresh temporary file (a writer at work) was removed");
    return 0;
}

/* ---- the ABI check ---------------------------------------------------------------------- */

static int p_abi(char *why, size_t n)
{
    setenv("NNK_CACHE", "0", 1);
    char *src = kernel_source("abi", -1, NULL, 77);
    nnk_kernel *k = NULL;
    nnk_status st = nnk_kernel_from_source(NULL, src, "neg_desc", &k);
    free(src);
    char want[32];
    snprintf(want, sizeof want, "version %d", NNK_ABI_VERSION + 77);
    NEED(st == NNK_EABI, "status %s, not NNK_EABI", nnk_status_name(st));
    NEED(strstr(nnk_last_error(), want), "the message does not name the object's version: %s", nnk_last_error());
    return 0;
}

/* ---- many kernels loaded at once ----------------------------------------------------------- */

/* Objects are loaded from a memfd through /proc/self/fd/N, and N is the
 * same for every load: each needs a name of its own for the dynamic
 * loader, however many stay loaded (the 26th once failed, and a source
 * that failed to load was then remembered as rejected).  Compiled, then
 * from the disk cache. */
static int p_many_loaded(char *why, size_t n)
{
    char dir[300], cache[400], salt[32];
    workdir(dir, sizeof dir, "many");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    for (int pass = 0; pass < 2; pass++) {
        nnk_jit_stats s0, s1;
        nnk_jit_get_stats(&s0);
        for (int i = 0; i < 40; i++) {
            snprintf(salt, sizeof salt, "many%d", i);
            NEED(run_kernel(salt, i + 1, &st), "pass %d: kernel %d of 40 did not run: %s", pass, i + 1,
                 nnk_last_error());
        }
        nnk_jit_get_stats(&s1);
        NEED(pass == 0 || s1.disk_hits == s0.disk_hits + 40, "pass 1: %llu of 40 from the disk cache",
             (unsigned long long)(s1.disk_hits - s0.disk_hits));
        nnk_jit_clear_memory_cache();
    }
    return 0;
}

/* Without memfds (an old kernel, a seccomp profile that refuses
 * memfd_create) objects load from a private temporary file: compiled,
 * then from the disk cache.  memfd_create fails here by a seccomp filter
 * of this probe's process (and the compiler it runs). */
static int p_no_memfd(char *why, size_t n)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        SKIP("cannot install a seccomp filter: %s", strerror(errno));
    NEED(syscall(SYS_memfd_create, "probe", 0) < 0 && errno == ENOSYS, "memfd_create still works under the filter");
    char dir[300], cache[400];
    workdir(dir, sizeof dir, "no-memfd");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    NEED(run_kernel("no-memfd", 3, &st), "without memfd_create, compiled: %s", nnk_last_error());
    nnk_jit_clear_memory_cache();
    nnk_jit_stats s0, s1;
    nnk_jit_get_stats(&s0);
    NEED(run_kernel("no-memfd", 3, &st), "without memfd_create, from the disk cache: %s", nnk_last_error());
    nnk_jit_get_stats(&s1);
    NEED(s1.disk_hits == s0.disk_hits + 1, "the second run was not a disk hit");
    return 0;
}

/* ---- the compiler's subprocess ----------------------------------------------------------------- */

/* A C compiler killed by a signal (the OOM killer, a kill from outside)
 * says nothing about the source: the failure is not remembered as the
 * source's, and the next call compiles it. */
static int p_compiler_killed(char *why, size_t n)
{
    char dir[300], cache[400], script[400], body[1200];
    workdir(dir, sizeof dir, "killed");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(script, sizeof script, "%s/cc.sh", dir);
    const char *cc = getenv("NNK_CC");
    snprintf(body, sizeof body, "#!/bin/sh\ncase \" $* \" in *\" -shared \"*) [ -e '%s/once' ] || { : > '%s/once'; kill -9 $$; } ;; esac\nexec %s \"$@\"\n",
             dir, dir, cc && *cc ? cc : "cc");
    NEED(spit(script, body, strlen(body), 0700), "cannot write the compiler script");
    setenv("NNK_CACHE_DIR", cache, 1);
    setenv("NNK_CC", script, 1);
    nnk_status st;
    bool first = run_kernel("killed", 5, &st);
    char msg[300];
    snprintf(msg, sizeof msg, "%s", nnk_last_error());
    bool second = run_kernel("killed", 5, &st);
    NEED(!first && strstr(msg, "signal 9"), "the killed compile: ran %d, %s", first, msg);
    NEED(second, "the next compile did not run (remembered as the source's failure?): %s", nnk_last_error());
    return 0;
}

/* A compiler that crashes on the host's flags (gcc 12's AVX-512 ICE on
 * a masked 16-bit max) has not refused the source: the JIT compiles it
 * again with the portable flags, stores that object under the kernel's
 * key, and the next process loads it from the disk cache. */
static int p_compiler_ice(char *why, size_t n)
{
    char dir[300], cache[400], script[400], log[400], body[1200];
    workdir(dir, sizeof dir, "ice");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(script, sizeof script, "%s/cc.sh", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    const char *cc = getenv("NNK_CC");
    snprintf(body, sizeof body,
             "#!/bin/sh\ncase \" $* \" in *\" -shared \"*) echo \"$*\" >> '%s'\n"
             "  case \" $* \" in *\" -march=\"*) echo 'k.c:1:1: internal compiler error: unrecognizable insn' >&2; exit 4 ;; esac ;; esac\n"
             "exec %s \"$@\"\n",
             log, cc && *cc ? cc : "cc");
    NEED(spit(script, body, strlen(body), 0700), "cannot write the compiler script");
    setenv("NNK_CACHE_DIR", cache, 1);
    setenv("NNK_CC", script, 1);
    nnk_status st;
    bool first = run_kernel("ice", 7, &st);
    size_t len = 0;
    char *got = slurp(log, &len);
    if (got && !strstr(got, "-march=")) {
        free(got);
        SKIP("the JIT uses no host flags here (NNK_JIT_NATIVE=0 or no candidate the compiler takes)");
    }
    NEED(first, "after the compiler's crash on the host flags: %s", nnk_last_error());
    const char *again = got ? strstr(got, "\n") : NULL;
    NEED(again && strstr(again, "-shared") && !strstr(again, "-march="),
         "no second compile without the host flags: '%s'", got ? got : "(none)");
    free(got);
    nnk_shutdown();
    unlink(log);
    NEED(run_kernel("ice", 7, &st), "from the disk cache: %s", nnk_last_error());
    got = slurp(log, &len);
    NEED(!got || !strstr(got, "-shared"), "the next process compiled again: '%s'", got);
    free(got);
    return 0;
}

/* The compiler's identity (--version, the host-flag probe) is remembered
 * in the disk cache: a fresh process whose kernel is cached runs no
 * compiler at all; a changed compiler file (its mtime here) or an entry
 * that fails verification makes the next process ask the compiler again. */
static int p_identity_remembered(char *why, size_t n)
{
    char dir[300], cache[400], script[400], log[400], body[1200], ccid[900] = "";
    workdir(dir, sizeof dir, "ccid");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(script, sizeof script, "%s/cc.sh", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    const char *cc = getenv("NNK_CC");
    snprintf(body, sizeof body, "#!/bin/sh\necho \"$*\" >> '%s'\nexec %s \"$@\"\n", log, cc && *cc ? cc : "cc");
    NEED(spit(script, body, strlen(body), 0700), "cannot write the compiler script");
    setenv("NNK_CACHE_DIR", cache, 1);
    setenv("NNK_CC", script, 1);
    size_t len = 0;
    char *got = NULL;
    nnk_status st;
    /* 0: cold; 1: warm (nothing runs); 2: the compiler touched; 3: the
     * remembered identity corrupted.  nnk_shutdown forgets the process's
     * own copy, as a fresh process has none. */
    for (int round = 0; round < 4; round++) {
        unlink(log);
        if (round == 2) {
            struct timespec t[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
            NEED(utimensat(AT_FDCWD, script, t, 0) == 0, "cannot set the script's mtime");
        }
        if (round == 3) { /* every one: round 2 left the old key's too */
            int corrupted = 0;
            DIR *d = opendir(cache);
            for (struct dirent *e; d && (e = readdir(d));)
                if (strstr(e->d_name, ".ccid")) {
                    snprintf(ccid, sizeof ccid, "%s/%s", cache, e->d_name);
                    corrupted += sh("printf X | dd of='%s' bs=1 seek=70 conv=notrunc 2>/dev/null", ccid) == 0;
                }
            if (d)
                closedir(d);
            NEED(corrupted == 2, "%d identity entries corrupted, not 2", corrupted);
        }
        NEED(run_kernel("ccid", -1, &st), "round %d: %s", round, nnk_last_error());
        free(got);
        got = slurp(log, &len);
        bool probed = got && strstr(got, "--version"), compiled = got && strstr(got, "-shared");
        NEED(round == 0 ? probed && compiled : round == 1 ? !got : probed && !compiled,
             "round %d: the compiler ran as '%s'", round, got ? got : "(not at all)");
        /* the object holds the descriptor only (docs/c-backend.md) */
        NEED(!compiled || strstr(got, "-DNNK_NO_ENTRY_POINTS"), "the JIT compiled the entry points: '%s'", got);
        nnk_shutdown();
    }
    free(got);
    return 0;
}

static int p_sigchld_ignored(char *why, size_t n)
{
    char dir[300];
    workdir(dir, sizeof dir, "sigign");
    setenv("NNK_CACHE_DIR", dir, 1);
    signal(SIGCHLD, SIG_IGN);
    nnk_status st;
    NEED(run_kernel("sigign", -1, &st), "with SIGCHLD ignored: %s", nnk_last_error());
    return 0;
}

static void reap(int sig)
{
    (void)sig;
    int e = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = e;
}

static int p_sigchld_reaper(char *why, size_t n)
{
    char dir[300], salt[32];
    workdir(dir, sizeof dir, "sigreap");
    setenv("NNK_CACHE_DIR", dir, 1);
    struct sigaction sa = {.sa_handler = reap, .sa_flags = SA_RESTART};
    sigaction(SIGCHLD, &sa, NULL);
    for (int i = 0; i < 4; i++) {
        snprintf(salt, sizeof salt, "sigreap%d", i);
        nnk_status st;
        NEED(run_kernel(salt, -1, &st), "with a reaping SIGCHLD handler, compile %d: %s", i, nnk_last_error());
    }
    return 0;
}

typedef struct slow_job {
    bool ok;
    nnk_status st;
} slow_job;

static void *slow_compile(void *arg)
{
    slow_job *j = arg;
    j->ok = run_kernel("slow", -1, &j->st);
    return NULL;
}

/* fork() while another thread compiles: the child uses the JIT. */
static int p_fork_compile(char *why, size_t n)
{
    char dir[300], cc[400], mark[400], script[1000];
    workdir(dir, sizeof dir, "fork");
    snprintf(cc, sizeof cc, "%s/slowcc", dir);
    snprintf(mark, sizeof mark, "%s/compiling", dir);
    snprintf(script, sizeof script,
             "#!/bin/sh\ncase \"$*\" in *-shared*) : > '%s'; sleep 2;; esac\nexec gcc \"$@\"\n", mark);
    NEED(spit(cc, script, strlen(script), 0755), "cannot write %s", cc);
    setenv("NNK_CACHE_DIR", dir, 1);
    setenv("NNK_CC", cc, 1);
    slow_job j = {0};
    pthread_t t;
    NEED(pthread_create(&t, NULL, slow_compile, &j) == 0, "pthread_create");
    for (int i = 0; i < 400 && access(mark, F_OK) != 0; i++)
        usleep(50000);
    if (access(mark, F_OK) != 0) {
        pthread_join(t, NULL);
        FAIL("the compile never started: %s", j.st ? nnk_last_error() : "?");
    }
    pid_t p = fork();
    if (p == 0) {
        alarm(30);
        setenv("NNK_CC", "gcc", 1);
        nnk_status st;
        _exit(run_kernel("forked", -1, &st) ? 0 : 1);
    }
    int ws = 0;
    waitpid(p, &ws, 0);
    pthread_join(t, NULL);
    NEED(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the forked child %s",
         WIFSIGNALED(ws) ? (WTERMSIG(ws) == SIGALRM ? "deadlocked (killed after 30 s)" : "crashed") : "failed to compile");
    NEED(j.ok, "the parent's compile failed: %s", nnk_status_name(j.st));
    return 0;
}

static int p_compile_timeout(char *why, size_t n)
{
    char dir[300], cc[400], script[600];
    workdir(dir, sizeof dir, "timeout");
    snprintf(cc, sizeof cc, "%s/hangcc", dir);
    snprintf(script, sizeof script, "#!/bin/sh\ncase \"$*\" in *-shared*) exec sleep 120;; esac\nexec gcc \"$@\"\n");
    NEED(spit(cc, script, strlen(script), 0755), "cannot write %s", cc);
    setenv("NNK_CACHE_DIR", dir, 1);
    setenv("NNK_CC", cc, 1);
    setenv("NNK_COMPILE_TIMEOUT", "1", 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    nnk_status st;
    bool ran = run_kernel("timeout", -1, &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    NEED(!ran && st == NNK_ECOMPILE, "a hanging compiler gave %s", nnk_status_name(st));
    NEED(secs < 10, "returned after %.1f s with NNK_COMPILE_TIMEOUT=1", secs);
    NEED(strstr(nnk_last_error(), "did not finish"), "the message does not say so: %s", nnk_last_error());
    snprintf(why, n, "NNK_ECOMPILE after %.2f s", secs);
    return 0;
}

/* ---- a full cache disk ------------------------------------------------------------------------ */

static int p_full_disk(char *why, size_t n)
{
    if (geteuid() != 0)
        SKIP("needs root (mounts a 1 MiB tmpfs)");
    char dir[300], mnt[400], cache[500], fill[500], names[2000];
    workdir(dir, sizeof dir, "full");
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    snprintf(cache, sizeof cache, "%s/cache", mnt);
    snprintf(fill, sizeof fill, "%s/fill", mnt);
    mkdir_mode(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700") != 0)
        SKIP("cannot mount a tmpfs: %s", strerror(errno));
    mkdir_mode(cache, 0700);
    int fd = open(fill, O_WRONLY | O_CREAT, 0600);
    static char block[4096];
    while (fd >= 0 && write(fd, block, sizeof block) > 0)
        ;
    while (fd >= 0 && write(fd, block, 1) > 0)
        ;
    if (fd >= 0)
        close(fd);
    setenv("NNK_CACHE_DIR", cache, 1);
    nnk_status st;
    bool ran = run_kernel("full", -1, &st);
    const char *msg = nnk_last_error();
    char saved[300];
    snprintf(saved, sizeof saved, "%s", msg);
    list_dir(cache, names, sizeof names);
    DIR *d = opendir(cache);
    int hidden = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        hidden += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    umount(mnt);
    NEED(ran, "with the cache disk full: %s: %s", nnk_status_name(st), saved);
    NEED(!*names && !hidden, "files left in the full cache: %s (%d hidden)", names, hidden);
    snprintf(why, n, "ran from memory: %s", debug_message());
    return 0;
}

/* ---- imports in JIT source strings ----------------------------------------------------------- */

static const char kernel_text[] = "elementwise k(x: f32[]) -> (y: f32[]) { y = x; }\n";

/* nnk_create_jit_fn of `import "what";` + a kernel: its status and message. */
static nnk_status jit_import(const char *what, const char *options, char *msg, size_t n)
{
    char code[1200];
    snprintf(code, sizeof code, "import \"%s\";\n%s", what, kernel_text);
    nnk_jit_fn *fn = NULL;
    nnk_status st = nnk_create_jit_fn(code, options, &fn);
    snprintf(msg, n, "%s", st ? nnk_last_error() : "");
    nnk_jit_fn_free(fn);
    return st;
}

static int p_imports(char *why, size_t n)
{
    char dir[300], inc[400], opt[500], path[600], msg[4096];
    workdir(dir, sizeof dir, "imports");
    snprintf(inc, sizeof inc, "%s/inc", dir);
    mkdir_mode(inc, 0755);
    snprintf(opt, sizeof opt, "include_dirs=%s", inc);
    setenv("NNK_SECRET_MARK", "s3cr3t-mark-47", 1);
    snprintf(path, sizeof path, "%s/lib.nnk", inc);
    const char *lib = "func twice(x) = 2 * x;\n";
    NEED(spit(path, lib, strlen(lib), 0644), "cannot write lib.nnk");
    snprintf(path, sizeof path, "%s/fifo.nnk", inc);
    NEED(mkfifo(path, 0644) == 0, "mkfifo");
    snprintf(path, sizeof path, "%s/pw.nnk", inc);
    NEED(symlink("/etc/passwd", path) == 0, "symlink");
    snprintf(path, sizeof path, "%s/big.nnk", inc);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    NEED(fd >= 0 && ftruncate(fd, (off_t)1 << 30) == 0, "cannot make big.nnk");
    close(fd);

    /* what the caller names works */
    NEED(jit_import("lib.nnk", opt, msg, sizeof msg) == NNK_OK, "an import from include_dirs failed: %s", msg);
    struct {
        const char *import, *options;
    } bad[] = {
        {"/etc/passwd", ""},
        {"/etc/passwd", opt},
        {"../../../../../../../../etc/passwd", opt},
        {"inc/../../../../../../../../etc/passwd", opt},
        {"pw.nnk", opt},           /* a link inside the directory to a file outside */
        {"fifo.nnk", opt},         /* would block forever */
        {"big.nnk", opt},          /* 1 GiB */
        {"environ", "include_dirs=/proc/self"},
        {"lib.nnk", ""},           /* no include_dirs: not the working directory */
    };
    if (chdir(inc) != 0)
        FAIL("chdir");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nnk_status st = jit_import(bad[i].import, bad[i].options, msg, sizeof msg);
        NEED(st != NNK_OK, "import \"%s\" (%s) was accepted", bad[i].import, *bad[i].options ? bad[i].options : "no options");
        NEED(!strstr(msg, "root:") && !strstr(msg, "s3cr3t-mark-47"), "import \"%s\" echoed the file: %.200s",
             bad[i].import, msg);
    }
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(char *, size_t);
    int timeout_s;
} probes[] = {
    {"cache-modes", p_modes, 60},
    {"shared-dir-attack", p_shared_dir, 60},
    {"sticky-dir-attack", p_sticky_dir, 60},
    {"group-writable-dir-attack", p_group_dir, 60},
    {"symlinked-dir-attack", p_link_dir, 60},
    {"foreign-entry", p_foreign_entry, 60},
    {"symlink-clobber", p_symlink_clobber, 60},
    {"swapped-entry", p_swapped_entry, 60},
    {"junk-entry-size", p_junk_size, 60},
    {"cache-max", p_cache_max, 90},
    {"cache-clear", p_cache_clear, 60},
    {"orphan-temp-files", p_orphans, 60},
    {"abi-mismatch", p_abi, 60},
    {"many-kernels-loaded", p_many_loaded, 90},
    {"no-memfd", p_no_memfd, 60},
    {"compiler-killed", p_compiler_killed, 60},
    {"compiler-ice-host-flags", p_compiler_ice, 90},
    {"compiler-identity-remembered", p_identity_remembered, 90},
    {"sigchld-ignored", p_sigchld_ignored, 60},
    {"sigchld-reaper", p_sigchld_reaper, 90},
    {"fork-during-compile", p_fork_compile, 90},
    {"compile-timeout", p_compile_timeout, 30},
    {"full-disk", p_full_disk, 60},
    {"import-escapes", p_imports, 30},
};

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/nnk-security-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    chmod(base, 0755); /* `nobody` must reach its probes' directories */
    int failed = 0, ran = 0;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        bool want = argc < 2;
        for (int a = 1; a < argc; a++)
            want |= strcmp(argv[a], probes[i].name) == 0;
        if (!want)
            continue;
        int fds[2];
        if (pipe(fds) != 0)
            return 1;
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            close(fds[0]);
            alarm((unsigned)probes[i].timeout_s);
            char why[1024] = "";
            int r = probes[i].fn(why, sizeof why);
            if (write(fds[1], why, strlen(why)) < 0)
                r = 1;
            _exit(r);
        }
        close(fds[1]);
        char why[1024];
        ssize_t got = read(fds[0], why, sizeof why - 1);
        why[got > 0 ? got : 0] = 0;
        close(fds[0]);
        int st = 0;
        waitpid(p, &st, 0);
        int r = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        if (WIFSIGNALED(st))
            snprintf(why, sizeof why, "%s", WTERMSIG(st) == SIGALRM ? "hung (killed by its alarm)" : strsignal(WTERMSIG(st)));
        printf("%s %-26s %s\n", r == 0 ? "PASS" : r == 2 ? "SKIP" : "FAIL", probes[i].name, why);
        failed += r == 1;
        ran++;
    }
    sh("rm -rf '%s'", base);
    printf("%d probes, %d failed\n", ran, failed);
    return failed ? 1 : 0;
}
