/* cache.c - the on-disk cache of compiled kernels, and private temporary
 * directories.
 *
 * The cache loads code into the process, so it trusts nothing that
 * another user could have written (the model of docs/runtime.md, "The
 * disk cache"; ccache's and CuPy's caches are the comparison):
 *
 * - The directory (NNK_CACHE_DIR, else $XDG_CACHE_HOME/nnk, else
 *   ~/.cache/nnk; NNK_CACHE=0 turns the cache off) is created 0700.  It
 *   is used only when it is owned by the effective user and not writable
 *   by group or others, every directory above it is owned by that user or
 *   root and not writable by others unless sticky (/tmp), and every
 *   symbolic link on the way is owned by that user or root.  Otherwise
 *   the process keeps its kernels in memory only and nnk_cache_debug()
 *   says why; nothing is printed.
 * - The directory is opened once per operation and entries are reached
 *   with openat(O_NOFOLLOW) from that descriptor, so a path swapped after
 *   the checks leads nowhere.  An entry is used only when it is a regular
 *   file owned by the user and not writable by group or others.
 * - An entry KEY SUFFIX is a 64-byte header, then the object:
 *       "NNKENTRY" | body length (LE u64) | SHA-256 digest | 16 zero bytes
 *   where the digest covers a domain tag, the key, the suffix, the
 *   effective uid, the length and the body, so an entry moved to another
 *   key (or written for another user) is rejected.  The size in the header
 *   must match the file's before anything else is read, and is bounded.
 * - Readers verify the bytes they read and hand on those bytes (the JIT
 *   loads them from a memfd, jit_cpu.c), never the file again.
 * - Writers create ".tmp-RANDOM" with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600,
 *   and rename() it into place: readers see no entry or a whole one.  A
 *   failed write (a full disk) removes its file; the kernel still runs
 *   from memory.  Temporary files older than an hour (a killed process's)
 *   are removed by the next writer.
 * - NNK_CACHE_MAX (bytes, K/M/G suffixes; default 1G, 0 = no bound)
 *   bounds the directory: after a write, the least recently used entries
 *   (every hit refreshes an entry's time) go until it holds 90% of it.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { HEADER = 64, ORPHAN_AGE_S = 3600 };
static const char magic[8] = {'N', 'N', 'K', 'E', 'N', 'T', 'R', 'Y'};
static const uint64_t default_max = 1ull << 30;
static const uint64_t entry_cap = 1ull << 30; /* no single entry is larger */

/* ---- the debug message --------------------------------------------------------- */

static struct {
    pthread_mutex_t lock;
    char why[600];
} dbg = {.lock = PTHREAD_MUTEX_INITIALIZER};

__attribute__((format(printf, 1, 2))) static void debug(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&dbg.lock);
    vsnprintf(dbg.why, sizeof dbg.why, fmt, ap);
    pthread_mutex_unlock(&dbg.lock);
    va_end(ap);
}

const char *nnk_cache_debug(void)
{
    static _Thread_local char copy[sizeof dbg.why];
    pthread_mutex_lock(&dbg.lock);
    memcpy(copy, dbg.why, sizeof copy);
    pthread_mutex_unlock(&dbg.lock);
    return copy;
}

void rt_cache_atfork_child(void)
{
    pthread_mutex_init(&dbg.lock, NULL);
}

/* ---- random names ----------------------------------------------------------------- */

static void random_hex(char *out, size_t nbytes)
{
    uint8_t r[16];
    if (nbytes > sizeof r)
        nbytes = sizeof r;
    if (getrandom(r, nbytes, GRND_NONBLOCK) != (ssize_t)nbytes) {
        static atomic_ulong serial;
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        uint64_t x = rt_hash64(&t, sizeof t, (uint64_t)getpid() << 20 ^ atomic_fetch_add(&serial, 1));
        for (size_t i = 0; i < nbytes; i++)
            r[i] = (uint8_t)(x >> (8 * (i % 8))) ^ (uint8_t)(i * 131);
    }
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = digits[r[i] >> 4];
        out[2 * i + 1] = digits[r[i] & 15];
    }
    out[2 * nbytes] = 0;
}

/* ---- trusting a directory ------------------------------------------------------------ */

/* A directory above the cache: nobody but the user or root can change it. */
static bool trusted_parent(const struct stat *st, uid_t me)
{
    return S_ISDIR(st->st_mode) && (st->st_uid == me || st->st_uid == 0) &&
           (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX));
}

static bool why_not_private(const struct stat *st, uid_t me, const char *what, const char *path)
{
    if (st->st_uid != me)
        debug("%s %s refused: owned by uid %u, not %u", what, path, (unsigned)st->st_uid, (unsigned)me);
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        debug("%s %s refused: writable by group or others (mode %03o)", what, path, (unsigned)st->st_mode & 0777);
    else
        return false;
    return true;
}

/* Every prefix of path: directories trusted, symbolic links owned by the
 * user or root (lstat: the link itself). */
static bool check_chain(const char *path, uid_t me, bool links)
{
    char p[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof p)
        return false;
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        struct stat st;
        if (lstat(p, &st) != 0) {
            debug("cache directory: cannot stat %s: %s", p, strerror(errno));
            return false;
        }
        bool last = c == 0;
        if (S_ISLNK(st.st_mode)) {
            if (!links || (st.st_uid != me && st.st_uid != 0)) {
                debug("cache directory refused: the symbolic link %s is owned by uid %u", p, (unsigned)st.st_uid);
                return false;
            }
        } else if (!last && !trusted_parent(&st, me)) {
            debug("cache directory refused: %s (above it) is %s", p,
                  S_ISDIR(st.st_mode) ? "writable by others and not sticky, or owned by another user" : "not a directory");
            return false;
        }
        p[i] = c;
    }
    return true;
}

/* mkdir -p, mode 0700 for what it creates. */
static void make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        mkdir(path, 0700);
        *p = '/';
    }
    mkdir(path, 0700);
}

bool rt_cache_open(rt_cache *c)
{
    c->fd = -1;
    const char *off = getenv("NNK_CACHE");
    if (off && strcmp(off, "0") == 0) {
        debug("disk cache off (NNK_CACHE=0)");
        return false;
    }
    const char *d = getenv("NNK_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char want[PATH_MAX];
    int n;
    if (d && *d)
        n = snprintf(want, sizeof want, "%s", d);
    else if (xdg && *xdg)
        n = snprintf(want, sizeof want, "%s/nnk", xdg);
    else if (home && *home)
        n = snprintf(want, sizeof want, "%s/.cache/nnk", home);
    else {
        debug("no cache directory (NNK_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)");
        return false;
    }
    if (n <= 0 || (size_t)n >= sizeof want - 128) {
        debug("cache directory name too long");
        return false;
    }
    make_dirs(want);
    uid_t me = geteuid();
    char real[PATH_MAX];
    if (!realpath(want, real)) {
        debug("cache directory %s unusable: %s", want, strerror(errno));
        return false;
    }
    /* the path as given (its links; a relative one from the working
     * directory), then the directories it leads to */
    char given[PATH_MAX], cwd[PATH_MAX];
    if (want[0] == '/')
        memcpy(given, want, strlen(want) + 1);
    else if (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(given, sizeof given, "%s/%s", cwd, want) >= sizeof given) {
        debug("cache directory %s: the working directory is unknown or too long", want);
        return false;
    }
    if (!check_chain(given, me, true))
        return false;
    if (!check_chain(real, me, false))
        return false;
    int fd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        debug("cache directory %s unusable: %s", real, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (why_not_private(&st, me, "cache directory", real)) {
        close(fd);
        return false;
    }
    c->fd = fd;
    memcpy(c->path, real, strlen(real) + 1);
    return true;
}

void rt_cache_close(rt_cache *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* ---- entries ------------------------------------------------------------------------- */

static bool entry_name(char *name, size_t n, const char *key, const char *suffix)
{
    size_t sl = suffix ? strlen(suffix) : 0;
    if (!key || strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64 || sl < 2 || sl > 16 || suffix[0] != '.' ||
        strspn(suffix + 1, "abcdefghijklmnopqrstuvwxyz0123456789_-") != sl - 1)
        return false;
    return (size_t)snprintf(name, n, "%s%s", key, suffix) < n;
}

static void digest(const char *key, const char *suffix, const uint8_t *body, uint64_t len, uint8_t out[32])
{
    static const char tag[] = "nnk-cache-entry 1";
    uint8_t meta[12];
    uint32_t uid = (uint32_t)geteuid();
    for (int i = 0; i < 4; i++)
        meta[i] = (uint8_t)(uid >> (8 * i));
    for (int i = 0; i < 8; i++)
        meta[4 + i] = (uint8_t)(len >> (8 * i));
    rt_sha256 h;
    rt_sha256_init(&h);
    rt_sha256_update(&h, tag, sizeof tag);
    rt_sha256_update(&h, key, strlen(key) + 1);
    rt_sha256_update(&h, suffix, strlen(suffix) + 1);
    rt_sha256_update(&h, meta, sizeof meta);
    rt_sha256_update(&h, body, (size_t)len);
    rt_sha256_final(&h, out);
}

static uint64_t cache_max(void)
{
    const char *v = getenv("NNK_CACHE_MAX");
    if (!v || !*v)
        return default_max;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10, end++; break;
    case 'm': case 'M': shift = 20, end++; break;
    case 'g': case 'G': shift = 30, end++; break;
    case 't': case 'T': shift = 40, end++; break;
    default: break;
    }
    if (end == v || *end || errno || v[0] == '-' || (shift && x > (UINT64_MAX >> shift)))
        return default_max;
    return (uint64_t)x << shift;
}

static bool full_read(int fd, void *buf, size_t n, off_t at)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, at + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static bool full_write(int fd, const void *buf, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, (const char *)buf + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        off += (size_t)w;
    }
    return true;
}

static nnk_status reject(rt_cache *c, const char *name, const char *why)
{
    debug("cache entry %s/%s rejected: %s", c->path, name, why);
    unlinkat(c->fd, name, 0); /* the directory is the user's: the next writer replaces it */
    return NNK_EIO;
}

nnk_status rt_cache_get(rt_cache *c, const char *key, const char *suffix, uint8_t **data, size_t *size)
{
    char name[100];
    if (c->fd < 0 || !entry_name(name, sizeof name, key, suffix))
        return NNK_ENOTFOUND;
    int fd = openat(c->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP)
            return reject(c, name, "a symbolic link");
        /* ENOENT, or the process out of descriptors or memory (EMFILE,
         * ENFILE, ENOMEM): a miss, and the entry stays for the next call */
        if (errno != ENOENT)
            debug("cache entry %s/%s not opened: %s", c->path, name, strerror(errno));
        return NNK_ENOTFOUND;
    }
    struct stat st;
    uint8_t h[HEADER];
    nnk_status s = NNK_EIO;
    uint8_t *body = NULL;
    uint64_t len = 0;
    uint64_t max = cache_max();
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        s = reject(c, name, "not a regular file");
    } else if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        /* not ours to remove either: a file we did not make */
        debug("cache entry %s/%s refused: owned by uid %u, mode %03o", c->path, name, (unsigned)st.st_uid,
              (unsigned)st.st_mode & 0777);
    } else if (st.st_size < HEADER || !full_read(fd, h, HEADER, 0) || memcmp(h, magic, 8) != 0) {
        s = reject(c, name, "no entry header");
    } else {
        for (int i = 0; i < 8; i++)
            len |= (uint64_t)h[8 + i] << (8 * i);
        if (len != (uint64_t)st.st_size - HEADER)
            s = reject(c, name, "its size differs from its header's");
        else if (len > entry_cap || (max && len > max))
            s = reject(c, name, "larger than the cache bound");
        else if (!(body = malloc(len ? (size_t)len : 1)))
            s = rt_error(NNK_ENOMEM, "out of memory reading a cache entry");
        else if (!full_read(fd, body, (size_t)len, HEADER))
            s = reject(c, name, "short read");
        else {
            uint8_t d[32];
            digest(key, suffix, body, len, d);
            if (memcmp(d, h + 16, 32) != 0) {
                s = reject(c, name, "its digest does not match (corrupt, or made for another key or user)");
            } else {
                futimens(fd, NULL); /* recently used: last to be evicted */
                s = NNK_OK;
            }
        }
    }
    close(fd);
    if (s) {
        free(body);
        return s;
    }
    *data = body;
    *size = (size_t)len;
    return NNK_OK;
}

/* ---- bounding the directory ------------------------------------------------------------ */

typedef struct entry_info {
    char name[100];
    uint64_t size;
    struct timespec used;
} entry_info;

static int older(const void *a, const void *b)
{
    const struct timespec *x = &((const entry_info *)a)->used, *y = &((const entry_info *)b)->used;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
                                  : (x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec);
}

static bool is_entry_name(const char *n)
{
    size_t l = strlen(n);
    return l > 66 && l <= 80 && strspn(n, "0123456789abcdef") == 64 && n[64] == '.';
}

/* Walks the directory: removes old temporary files (all of them and every
 * entry when clear), then the least recently used entries beyond max. */
static nnk_status sweep(rt_cache *c, bool clear, uint64_t max)
{
    int fd = dup(c->fd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0)
            close(fd);
        return rt_error(NNK_EIO, "cannot read the cache directory %s: %s", c->path, strerror(errno));
    }
    rewinddir(dir);
    entry_info *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    uid_t me = geteuid();
    nnk_status s = NNK_OK;
    for (struct dirent *de; (de = readdir(dir));) {
        bool tmp = strncmp(de->d_name, ".tmp-", 5) == 0, entry = is_entry_name(de->d_name);
        struct stat st;
        if ((!tmp && !entry) || fstatat(c->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (tmp || clear) {
            if (clear || now - st.st_mtime > ORPHAN_AGE_S)
                unlinkat(c->fd, de->d_name, 0);
            continue;
        }
        if (!S_ISREG(st.st_mode) || st.st_uid != me)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            entry_info *w = realloc(v, cap * sizeof *v);
            if (!w) {
                s = NNK_ENOMEM;
                break;
            }
            v = w;
        }
        memcpy(v[n].name, de->d_name, strlen(de->d_name) + 1); /* is_entry_name: at most 80 bytes */
        v[n].size = (uint64_t)st.st_size;
        v[n].used = st.st_mtim;
        total += v[n].size;
        n++;
    }
    closedir(dir);
    if (!s && max && total > max) {
        qsort(v, n, sizeof *v, older);
        uint64_t goal = max - max / 10;
        for (size_t i = 0; i < n && total > goal; i++)
            if (unlinkat(c->fd, v[i].name, 0) == 0)
                total -= v[i].size;
    }
    free(v);
    return s;
}

nnk_status rt_cache_put(rt_cache *c, const char *key, const char *suffix, const void *data, size_t size)
{
    char name[100], tmp[40];
    if (c->fd < 0 || !entry_name(name, sizeof name, key, suffix))
        return NNK_EIO;
    uint64_t max = cache_max();
    if ((uint64_t)size > entry_cap || (max && (uint64_t)size + HEADER > max)) {
        debug("cache entry %s not written: %zu bytes is over the cache bound", name, size);
        return NNK_EIO;
    }
    uint8_t h[HEADER] = {0};
    memcpy(h, magic, 8);
    for (int i = 0; i < 8; i++)
        h[8 + i] = (uint8_t)((uint64_t)size >> (8 * i));
    digest(key, suffix, data, size, h + 16);
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 8; tries++) {
        memcpy(tmp, ".tmp-", 5);
        random_hex(tmp + 5, 12);
        fd = openat(c->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        debug("cache entry %s not written: %s", name, strerror(errno));
        return NNK_EIO;
    }
    bool ok = full_write(fd, h, HEADER) && full_write(fd, data, size);
    int err = errno;
    if (close(fd) != 0 && ok)
        ok = false, err = errno;
    if (ok && renameat(c->fd, tmp, c->fd, name) != 0)
        ok = false, err = errno;
    if (!ok) {
        unlinkat(c->fd, tmp, 0); /* no partial file stays (a full disk) */
        debug("cache entry %s/%s not written: %s", c->path, name, strerror(err));
        return NNK_EIO;
    }
    sweep(c, false, max);
    return NNK_OK;
}

nnk_status nnk_cache_clear(void)
{
    rt_cache c;
    if (!rt_cache_open(&c)) {
        const char *off = getenv("NNK_CACHE");
        if (off && strcmp(off, "0") == 0)
            return NNK_OK;
        return rt_error(NNK_EIO, "nnk_cache_clear: %s", nnk_cache_debug());
    }
    nnk_status s = sweep(&c, true, 0);
    rt_cache_close(&c);
    return s;
}

/* ---- whole entries for extensions (nnk_host_api cache_load/cache_store) ---- */

nnk_status rt_cache_load(const char *key, const char *suffix, void **data, size_t *size)
{
    if (!data || !size)
        return NNK_ENOTFOUND;
    rt_cache c;
    if (!rt_cache_open(&c))
        return NNK_ENOTFOUND;
    uint8_t *buf;
    size_t len;
    nnk_status s = rt_cache_get(&c, key, suffix, &buf, &len);
    rt_cache_close(&c);
    if (s)
        return s == NNK_ENOMEM ? s : NNK_ENOTFOUND;
    *data = buf;
    *size = len;
    return NNK_OK;
}

nnk_status rt_cache_store(const char *key, const char *suffix, const void *data, size_t size)
{
    rt_cache c;
    if (!data || !rt_cache_open(&c))
        return NNK_EIO;
    nnk_status s = rt_cache_put(&c, key, suffix, data, size);
    rt_cache_close(&c);
    return s;
}

/* ---- private temporary directories ------------------------------------------------------- */

/* Removes what a killed process left in $TMPDIR: nnk-jit-* directories of
 * this user older than an hour (their plain files, then the directory);
 * once per process. */
static void clean_tmp_orphans(const char *tmp)
{
    static atomic_flag done = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&done))
        return;
    DIR *d = opendir(tmp);
    if (!d)
        return;
    time_t now = time(NULL);
    uid_t me = geteuid();
    for (struct dirent *de; (de = readdir(d));) {
        struct stat st;
        if (strncmp(de->d_name, "nnk-jit-", 8) != 0 || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != me || now - st.st_mtime <= ORPHAN_AGE_S)
            continue;
        int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *sub = fd >= 0 ? fdopendir(fd) : NULL;
        if (!sub) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        for (struct dirent *f; (f = readdir(sub));)
            if (f->d_name[0] != '.')
                unlinkat(fd, f->d_name, 0);
        closedir(sub);
        unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

nnk_status rt_private_dir(char *out, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    clean_tmp_orphans(tmp);
    if ((size_t)snprintf(out, n, "%s/nnk-jit-XXXXXX", tmp) >= n)
        return rt_error(NNK_EIO, "TMPDIR is too long");
    if (!mkdtemp(out)) /* mode 0700, an unpredictable name */
        return rt_error(NNK_EIO, "cannot create a temporary directory in %s: %s", tmp, strerror(errno));
    return NNK_OK;
}

nnk_status rt_private_write(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return rt_error(NNK_EIO, "cannot create %s: %s", path, strerror(errno));
    bool ok = full_write(fd, data, size);
    int err = errno;
    if (close(fd) != 0 && ok)
        ok = false, err = errno;
    if (!ok) {
        unlink(path);
        return rt_error(NNK_EIO, "cannot write %s: %s", path, strerror(err));
    }
    return NNK_OK;
}

nnk_status rt_private_read(const char *path, size_t cap, uint8_t **data, size_t *size)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > cap) {
        nnk_status s = rt_error(NNK_EIO, "cannot read %s: %s", path,
                                fd < 0 ? strerror(errno) : "not a regular file of bounded size");
        if (fd >= 0)
            close(fd);
        return s;
    }
    uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
    bool ok = buf && full_read(fd, buf, (size_t)st.st_size, 0);
    close(fd);
    if (!ok) {
        nnk_status s = buf ? rt_error(NNK_EIO, "cannot read %s", path) : rt_error(NNK_ENOMEM, "out of memory reading %s", path);
        free(buf);
        return s;
    }
    *data = buf;
    *size = (size_t)st.st_size;
    return NNK_OK;
}
