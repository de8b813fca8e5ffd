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
