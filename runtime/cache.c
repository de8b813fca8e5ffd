/* cache.c - the on-disk cache of compiled kernels.
 *
 * Directory: NNK_CACHE_DIR, else $XDG_CACHE_HOME/nnk, else ~/.cache/nnk
 * (created on demand); NNK_CACHE=0 turns the disk cache off.  An entry is
 * KEY.so where KEY is the SHA-256 of everything that determines the
 * object (see jit_cpu.c).  Its last 48 bytes are a trailer,
 *     "NNKCACHE" | SHA-256 of the bytes before the trailer | their length (LE u64),
 * which the dynamic loader ignores (ELF is located by its headers) and
 * which lets a reader reject a torn or corrupted file.  Writers build the
 * entry under a unique temporary name in the same directory and rename()
 * it into place, which is atomic, so concurrent processes see either no
 * entry or a whole one; when two race, the last rename wins and both
 * entries are equally valid.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { TRAILER = 48 };
static const char magic[8] = {'N', 'N', 'K', 'C', 'A', 'C', 'H', 'E'};

static _Thread_local char dir_buf[4096];

/* mkdir -p; true when the directory exists and is writable. */
static bool make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
    mkdir(path, 0755);
    return access(path, W_OK | X_OK) == 0;
}

const char *rt_cache_dir(void)
{
    const char *off = getenv("NNK_CACHE");
    if (off && strcmp(off, "0") == 0)
        return NULL;
    const char *d = getenv("NNK_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (d && *d)
        n = snprintf(dir_buf, sizeof dir_buf, "%s", d);
    else if (xdg && *xdg)
        n = snprintf(dir_buf, sizeof dir_buf, "%s/nnk", xdg);
    else if (home && *home)
        n = snprintf(dir_buf, sizeof dir_buf, "%s/.cache/nnk", home);
    else
        return NULL;
    if (n <= 0 || (size_t)n >= sizeof dir_buf - 128)
        return NULL;
    return make_dirs(dir_buf) ? dir_buf : NULL;
}

static nnk_status read_file(const char *path, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? NNK_ENOTFOUND : rt_error(NNK_EIO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0) {
        close(fd);
        return rt_error(NNK_EIO, "cannot stat %s", path);
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf)
        return rt_error(NNK_ENOMEM, "out of memory reading %s", path);
    *data = buf;
    *len = got;
    return NNK_OK;
}

nnk_status rt_cache_verify(const char *path)
{
    uint8_t *data;
    size_t len;
    nnk_status s = read_file(path, &data, &len);
    if (s)
        return s;
    bool ok = len > TRAILER && memcmp(data + len - TRAILER, magic, 8) == 0;
    if (ok) {
        uint64_t n = 0;
        for (int i = 0; i < 8; i++)
            n |= (uint64_t)data[len - 8 + i] << (8 * i);
        uint8_t digest[32];
        rt_sha256 h;
        rt_sha256_init(&h);
        rt_sha256_update(&h, data, len - TRAILER);
        rt_sha256_final(&h, digest);
        ok = n == len - TRAILER && memcmp(digest, data + len - TRAILER + 8, 32) == 0;
    }
    free(data);
    if (ok)
        return NNK_OK;
    unlink(path); /* the next writer replaces it */
    return rt_error(NNK_EIO, "corrupt cache entry %s (removed)", path);
}

nnk_status rt_cache_commit(const char *tmp, const char *path)
{
    uint8_t *data;
    size_t len;
    nnk_status s = read_file(tmp, &data, &len);
    if (s)
        return s == NNK_ENOTFOUND ? rt_error(NNK_EIO, "%s vanished", tmp) : s;
    uint8_t trailer[TRAILER];
    memcpy(trailer, magic, 8);
    rt_sha256 h;
    rt_sha256_init(&h);
    rt_sha256_update(&h, data, len);
    rt_sha256_final(&h, trailer + 8);
    for (int i = 0; i < 8; i++)
        trailer[40 + i] = (uint8_t)((uint64_t)len >> (8 * i));
    free(data);
    int fd = open(tmp, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return rt_error(NNK_EIO, "cannot open %s: %s", tmp, strerror(errno));
    bool ok = write(fd, trailer, TRAILER) == TRAILER;
    ok &= close(fd) == 0;
    if (!ok || rename(tmp, path) != 0)
        return rt_error(NNK_EIO, "cannot write cache entry %s: %s", path, strerror(errno));
    return NNK_OK;
}

/* ---- whole entries for extensions (nnk_host_api cache_load/cache_store) ---- */

static bool entry_path(char *path, size_t n, const char *key, const char *suffix)
{
    const char *dir = rt_cache_dir();
    if (!dir || !key || strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64 || !suffix ||
        strlen(suffix) > 16 || strchr(suffix, '/'))
        return false;
    return (size_t)snprintf(path, n, "%s/%s%s", dir, key, suffix) < n;
}

nnk_status rt_cache_load(const char *key, const char *suffix, void **data, size_t *size)
{
    char path[4300];
    if (!data || !size || !entry_path(path, sizeof path, key, suffix))
        return NNK_ENOTFOUND;
    nnk_status s = rt_cache_verify(path);
    if (s)
        return s == NNK_EIO ? NNK_ENOTFOUND : s;
    uint8_t *buf;
    size_t len;
    if ((s = read_file(path, &buf, &len)))
        return s;
    if (len < TRAILER) { /* replaced between the two reads: treat as absent */
        free(buf);
        return NNK_ENOTFOUND;
    }
    *data = buf;
    *size = len - TRAILER;
    return NNK_OK;
}

nnk_status rt_cache_store(const char *key, const char *suffix, const void *data, size_t size)
{
    static atomic_ulong serial;
    char path[4300], tmp[4400];
    if (!data || !entry_path(path, sizeof path, key, suffix))
        return NNK_EIO;
    snprintf(tmp, sizeof tmp, "%s.tmp%ld.%lu", path, (long)getpid(), (unsigned long)atomic_fetch_add(&serial, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return rt_error(NNK_EIO, "cannot write %s: %s", tmp, strerror(errno));
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, (const char *)data + off, size - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    bool ok = off == size;
    ok &= close(fd) == 0;
    nnk_status s = ok ? rt_cache_commit(tmp, path) : rt_error(NNK_EIO, "cannot write %s", tmp);
    if (s)
        unlink(tmp);
    return s;
}
