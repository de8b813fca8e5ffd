/* fatobj.c - fat objects (nnkc -c): one relocatable object with the CPU
 * code, the CUDA code of every instance as a fatbin (SASS per requested
 * architecture family plus PTX of the newest for later GPUs, from one nvcc
 * -fatbin), and two
 * more entry points per instance:
 *
 *   int NAME_cuda(<the contiguous entry's parameters>, void *stream)
 *       device pointers, queued on a CUDA stream (through libnnk's
 *       nnk_launch_desc_stream and the cuda extension);
 *   int NAME_run(struct nnk_context *ctx, [int32_t naxes, const int32_t *axes,]
 *                <scalars by value, struct nnk_array * per tensor and output>)
 *       nnk arrays on the context's backends (nnk_launch_desc).
 *
 * The fatbin bytes become a static array at the top of the generated C, so
 * the C compiler makes the one object; descriptors point at it
 * (cuda_image, cuda_image_size, cuda_symbol = the instance name, the
 * prefix of its kernel names).  References to libnnk are weak: an
 * application that never calls NAME_cuda/NAME_run needs no -lnnk.
 * docs/cuda-backend.md describes the layout.
 */
#include "nnkc.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef NNK_NVCC
#define NNK_NVCC "no"
#endif

/* ---- architectures ----------------------------------------------------------------- */

/* "sm_75,sm_80,sm_90" (also "75", "compute_90", "sm_90a"); at most 32. */
typedef struct Arch {
    int num;
    char variant; /* 0, 'a' or 'f': arch-specific (no forward-compatible PTX) */
} Arch;

static int parse_archs(const char *list, Arch *out, int max, const char **bad, size_t *badlen)
{
    int n = 0;
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *q = p;
        if (len > 3 && strncmp(q, "sm_", 3) == 0)
            q += 3;
        else if (len > 8 && strncmp(q, "compute_", 8) == 0)
            q += 8;
        char *end;
        long v = strtol(q, &end, 10);
        char variant = 0;
        if (end < p + len && (*end == 'a' || *end == 'f'))
            variant = *end++;
        if (q == p + len || end != p + len || v < 30 || v > 999 || n == max) {
            *bad = p;
            *badlen = len;
            return -1;
        }
        bool dup = false;
        for (int i = 0; i < n; i++)
            dup |= out[i].num == v && out[i].variant == variant;
        if (!dup)
            out[n++] = (Arch){(int)v, variant};
        p = e ? e + 1 : p + len;
    }
    if (n == 0) {
        *bad = list ? list : "";
        *badlen = list ? strlen(list) : 0;
        return -1;
    }
    for (int i = 1; i < n; i++) /* ascending, so the command line is canonical */
        for (int j = i; j > 0 && (out[j - 1].num > out[j].num ||
                                  (out[j - 1].num == out[j].num && out[j - 1].variant > out[j].variant)); j--) {
            Arch t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

bool fatobj_check_archs(const char *list, char *err, size_t errlen)
{
    Arch a[32];
    const char *bad;
    size_t badlen;
    if (parse_archs(list, a, 32, &bad, &badlen) < 0) {
        snprintf(err, errlen, "bad --cuda-arch entry '%.*s' (expected a list like sm_75,sm_80,sm_90)", (int)badlen, bad);
        return false;
    }
    return true;
}

const char *fatobj_nvcc(void)
{
    const char *v = getenv("NNK_NVCC");
    if (v && *v)
        return strcmp(v, "no") == 0 ? NULL : v;
    return strcmp(NNK_NVCC, "no") == 0 || !*NNK_NVCC ? NULL : NNK_NVCC;
}

/* ---- running nvcc ---------------------------------------------------------------------- */

/* Runs argv (spawn.c) with its output collected in *log; the exit status, or -1. */
static int run_tool(char *const *argv, Buf *log)
{
    enum { CAP = 65536 };
    char *out = malloc(CAP);
    if (!out)
        return -1;
    NnkcTool t = {.out = out, .outcap = CAP, .timeout_ms = nnkc_tool_timeout_ms()};
    int st = nnkc_tool_run(argv, &t);
    buf_put(log, out, t.outlen);
    free(out);
    if (t.timed_out)
        buf_printf(log, "%s did not finish in %.3g s (killed; NNK_COMPILE_TIMEOUT sets the limit)\n", argv[0],
                   (double)t.timeout_ms / 1000.0);
    else if (st < 0)
        buf_printf(log, "cannot run %s: %s\n", argv[0], strerror(t.err));
    return st;
}

static bool read_all(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    Buf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        buf_put(&b, tmp, n);
    bool ok = !ferror(f);
    fclose(f);
    *size = b.len;
    *data = (unsigned char *)buf_detach(&b);
    return ok && *data;
}

unsigned char *fatobj_fatbin(Compiler *c, const List *instances, const EmitOptions *opt, const char *nvcc,
                             const char *archs, int opt_level, bool fmad, size_t *size, char **err)
{
    *err = NULL;
    Arch a[32];
    const char *bad;
    size_t badlen;
    int na = parse_archs(archs, a, 32, &bad, &badlen);
    Buf msg = {0};
    if (na < 0) {
        buf_printf(&msg, "bad --cuda-arch entry '%.*s'", (int)badlen, bad);
        *err = buf_detach(&msg);
        return NULL;
    }
    Buf cu = {0};
    emit_cuda_file(c, instances, opt, &cu);

    const char *tmpdir = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/nnkc-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        buf_printf(&msg, "cannot create a temporary directory: %s", strerror(errno));
        buf_free(&cu);
        *err = buf_detach(&msg);
        return NULL;
    }
    char src[4200], out[4200];
    snprintf(src, sizeof src, "%s/kernels.cu", dir);
    snprintf(out, sizeof out, "%s/kernels.fatbin", dir);
    FILE *f = fopen(src, "wb");
    bool ok = f && fwrite(cu.data ? cu.data : "", 1, cu.len, f) == cu.len;
    if (f)
        ok &= fclose(f) == 0;
    buf_free(&cu);
    unsigned char *bin = NULL;
    if (!ok) {
        buf_printf(&msg, "cannot write %s", src);
    } else {
        /* One nvcc -fatbin for every arch: SASS for each, PTX of the newest
         * portable one.  --threads runs the per-arch pipelines (cicc, ptxas)
         * side by side, one thread an arch up to the CPUs there are: they
         * are most of the time of nnkc -c (docs/cuda-backend.md). */
        char *argv[128];
        int n = 0;
        char optflag[16], threads[16];
        snprintf(optflag, sizeof optflag, "-O%d", opt_level < 3 ? 3 : opt_level); /* host side only */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        snprintf(threads, sizeof threads, "%d", cpus > 0 && cpus < na ? (int)cpus : na);
        argv[n++] = (char *)nvcc;
        argv[n++] = (char *)"-fatbin";
        argv[n++] = (char *)"-std=c++17";
        argv[n++] = optflag;
        argv[n++] = (char *)"--threads";
        argv[n++] = threads;
        /* no FMA contraction unless asked: the C code is built with
         * -ffp-contract=off, and the GPU must round as it does */
        argv[n++] = (char *)(fmad ? "-fmad=true" : "-fmad=false");
        /* NNKC_CUDA_KEEP=DIR keeps nvcc's intermediate files (the PTX the
         * lint of tests/cuda/fatobj-check.sh reads) */
        const char *keep = getenv("NNKC_CUDA_KEEP");
        if (keep && *keep) {
            argv[n++] = (char *)"-keep";
            argv[n++] = (char *)"-keep-dir";
            argv[n++] = (char *)keep;
        }
        int ptx = -1;
        for (int i = 0; i < na; i++)
            if (!a[i].variant)
                ptx = i;
        for (int i = 0; i < na; i++) {
            /* SASS once per architecture family: the SASS of X.y runs on
             * every X.z with z >= y, so sm_86 next to sm_80 adds nothing
             * (arch-specific variants are kept; the PTX of the newest is) */
            bool covered = false;
            for (int j = 0; j < na; j++)
                covered |= !a[i].variant && !a[j].variant && a[j].num / 10 == a[i].num / 10 && a[j].num < a[i].num;
            const char *v = a[i].variant == 'a' ? "a" : a[i].variant == 'f' ? "f" : "";
            char *g;
            if (i == ptx)
                g = covered ? arena_printf(c->arena, "arch=compute_%d,code=compute_%d", a[i].num, a[i].num)
                            : arena_printf(c->arena, "arch=compute_%d,code=[sm_%d,compute_%d]", a[i].num, a[i].num,
                                           a[i].num);
            else if (covered)
                continue;
            else
                g = arena_printf(c->arena, "arch=compute_%d%s,code=sm_%d%s", a[i].num, v, a[i].num, v);
            argv[n++] = (char *)"-gencode";
            argv[n++] = g;
        }
        argv[n++] = (char *)"-o";
        argv[n++] = out;
        argv[n++] = src;
        argv[n] = NULL;
        Buf log = {0};
        int st = run_tool(argv, &log);
        if (st < 0) {
            buf_printf(&msg, "%s", log.data ? log.data : "nvcc did not run");
        } else if (st != 0) {
            buf_printf(&msg, "nvcc failed on the generated CUDA (%s, exit %d; this is a bug in nnkc):\n%s", nvcc, st,
                       log.data ? log.data : "");
        } else if (!read_all(out, &bin, size)) {
            buf_printf(&msg, "nvcc wrote no %s", out);
            free(bin);
            bin = NULL;
        }
        buf_free(&log);
    }
    unlink(src);
    unlink(out);
    rmdir(dir);
    if (!bin)
        *err = buf_detach(&msg);
    else
        buf_free(&msg);
    return bin;
}

/* ---- the object's C source ---------------------------------------------------------- */

void fatobj_c_file(Compiler *c, const List *instances, const EmitOptions *opt, const unsigned char *fatbin,
                   size_t size, Buf *out)
{
    if (fatbin) {
        /* A fatbin must be 8-byte aligned for the driver; 64 costs nothing.
         * The bytes are a string literal, not a list of numbers: the C
         * compiler reads a megabyte of "\xHH" in a tenth of a second and
         * a megabyte of "N," initializers in seconds.  The array has room
         * for the literal's NUL (no warning about an unterminated string);
         * cuda_image_size leaves it out. */
        buf_printf(out, "/* The CUDA code of this object: an nvcc fatbin of %zu bytes (docs/cuda-backend.md). */\n"
                        "static const unsigned char nnk_fatbin_[%zu + 1] __attribute__((aligned(64), used)) =\n",
                   size, size);
        static const char hex[] = "0123456789abcdef";
        char line[32 * 4 + 8];
        for (size_t i = 0; i < size; i += 32) {
            size_t n = 0;
            line[n++] = '"';
            for (size_t j = i; j < size && j < i + 32; j++) {
                line[n++] = '\\';
                line[n++] = 'x';
                line[n++] = hex[fatbin[j] >> 4];
                line[n++] = hex[fatbin[j] & 15];
            }
            line[n++] = '"';
            line[n++] = '\n';
            buf_put(out, line, n);
        }
        buf_puts(out, ";\n\n");
    }
    emit_c_file(c, instances, opt, out);
    TDict *d = tdict_new(c->arena);
    for (int i = 0; i < instances->n; i++) {
        EmitOperands o;
        emit_operands_init(&o, c, instances->items[i]);
        emit_instance_keys(&o, opt, tpush(d, "instances"));
    }
    tlist(d, "instances");
    template_render("fatobj.tmpl", d, out);
}
