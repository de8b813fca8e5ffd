/* fatobj.c - fat objects (nnkc -c): one relocatable object with the CPU
 * code, the CUDA code of every instance as a fatbin (SASS per requested
 * architecture family plus PTX of the newest for later GPUs, from one
 * cicc run), and two
 * more entry points per instance:
 *
 *   int NAME_cuda(<the contiguous entry's parameters>, void *stream)
 *       device pointers, queued on a CUDA stream (through libnnk's
 *       nnk_launch_desc_stream and the cuda extension);
 *   int NAME_run(struct nnk_context *ctx, [int32_t naxes, const int32_t *axes,]
 *                <scalars by value, struct nnk_array * per tensor and output>)
 *       nnk arrays on the context's backends (nnk_launch_desc).
 *
 * The fatbin is appended to the assembly of the C (fatobj_object, the
 * steps); descriptors point at it
 * (cuda_image, cuda_image_size, cuda_symbol = the instance name, the
 * prefix of its kernel names).  References to libnnk are weak: an
 * application that never calls NAME_cuda/NAME_run needs no -lnnk.
 * docs/cuda-backend.md describes the layout.
 */
#include "nnkc.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* ---- the CUDA plan ---------------------------------------------------------------------- */

/* What the fatbin holds for an arch list: SASS once per architecture
 * family (the SASS of X.y runs on every X.z with z >= y, so sm_86 next
 * to sm_80 adds nothing; arch-specific variants are kept), PTX of the
 * newest arch that is not arch-specific, and the virtual arch cicc
 * compiles for: the oldest of them all.  The generated CUDA has no code
 * that depends on __CUDA_ARCH__, so NVVM's PTX for compute_75 and for
 * compute_90 differ in their .target line only, and ptxas makes the same
 * SASS of either (docs/cuda-backend.md): one cicc run serves every arch. */
typedef struct Plan {
    Arch sass[32];
    int nsass;
    int ptx;  /* arch number of the PTX entry, 0: none (only arch-specific entries) */
    int base; /* the virtual arch of the one cicc run */
} Plan;

static void plan_archs(const Arch *a, int na, Plan *p)
{
    p->nsass = 0;
    p->ptx = 0;
    p->base = a[0].num;
    for (int i = 0; i < na; i++) {
        if (!a[i].variant)
            p->ptx = a[i].num; /* ascending: the newest */
        if (a[i].num < p->base)
            p->base = a[i].num;
        bool covered = false;
        for (int j = 0; j < na; j++)
            covered |= !a[i].variant && !a[j].variant && a[j].num / 10 == a[i].num / 10 && a[j].num < a[i].num;
        if (!covered)
            p->sass[p->nsass++] = a[i];
    }
}

/* ---- finding the toolkit's tools ---------------------------------------------------------------- */

/* ptxas or fatbinary: next to nvcc (its real location, then as named),
 * else on PATH; NULL when none is there. */
static char *toolkit_tool(Arena *ar, const char *nvcc, const char *tool)
{
    char found[PATH_MAX], real[PATH_MAX];
    if (!nnkc_find_program(nvcc, found, sizeof found))
        return NULL;
    const char *dirs[2] = {realpath(found, real) ? real : NULL, found};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i])
            continue;
        const char *slash = strrchr(dirs[i], '/');
        char *cand = arena_printf(ar, "%.*s/%s", (int)(slash - dirs[i]), dirs[i], tool);
        if (access(cand, X_OK) == 0)
            return cand;
    }
    return nnkc_find_program(tool, found, sizeof found) ? arena_strdup(ar, found) : NULL;
}

/* ---- files ------------------------------------------------------------------------------- */

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

static bool write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data ? data : "", 1, len, f) == len;
    if (f)
        ok &= fclose(f) == 0;
    return ok;
}

/* The PTX of compute_<from> as PTX of compute_<to>: its .target line
 * names the arch (NVVM writes the same instructions for both; see Plan). */
static bool retarget_ptx(Arena *ar, const unsigned char *ptx, size_t len, int from, int to, Buf *out)
{
    const char *old = arena_printf(ar, "\n.target sm_%d", from);
    size_t ol = strlen(old);
    for (size_t i = 0; i + ol <= len; i++)
        if (memcmp(ptx + i, old, ol) == 0 && (i + ol == len || ptx[i + ol] < '0' || ptx[i + ol] > '9')) {
            buf_put(out, (const char *)ptx, i);
            buf_printf(out, "\n.target sm_%d", to);
            buf_put(out, (const char *)ptx + i + ol, len - i - ol);
            return true;
        }
    return false;
}

/* ---- the object ---------------------------------------------------------------------------- */

/* The steps of a fat object, run through one NnkcRuns (spawn.c):
 *
 *   nvcc -ptx -arch=compute_<base>  ->  ptxas -arch=sm_XX (each)  ->  fatbinary  --.
 *   cc -S -DNNK_PART=1 (the C but its loops, on stdin)  ------------------------------+->  cc -c (part 1 + the fatbin)  --.
 *   cc -c -DNNK_PART=2 (the loops, baseline)  ---------------------------------------------------------------------------+->  cc -r (the object)
 *   cc -c -DNNK_PART=3 (the loops, AVX2)  -----------------------------------------------------------------------------'
 *
 * The C is compiled as three parts (templates/c/prelude.tmpl, NNK_PART):
 * the two clones of the loops are most of the C compiler's time, so the
 * parts and the CUDA steps run side by side, at most cfg->jobs at once.
 * Part 1 refers to the fatbin by symbol (nnk_fatbin_, and nnk_fatbin_size_
 * for its size); the assembly the C compiler wrote gets both appended once
 * the fatbin is there, as local symbols.  Without nvcc part 1 is compiled
 * to an object directly.  The parts are linked with -r into one object. */
enum { STEP_CC, STEP_PTX, STEP_SASS, STEP_FATBIN, STEP_ASM, STEP_LINK };
enum { NPARTS = 3 };

typedef struct Step {
    NnkcTool t; /* first: nnkc_runs_wait returns it */
    int kind, arch;
    char **argv;
} Step;

static Step *step_new(Arena *ar, int kind, int arch)
{
    Step *s = arena_alloc(ar, sizeof *s);
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->arch = arch;
    s->argv = arena_alloc(ar, 128 * sizeof *s->argv);
    s->t.outcap = 65536;
    s->t.out = arena_alloc(ar, s->t.outcap);
    s->t.timeout_ms = nnkc_tool_timeout_ms();
    return s;
}

static const char *step_what(const Step *s)
{
    switch (s->kind) {
    case STEP_CC: return "the C compiler";
    case STEP_ASM: return "the assembler (the C compiler)";
    case STEP_LINK: return "the linker (the C compiler, -r)";
    default: return "nvcc";
    }
}

/* The message for a step that failed (status as nnkc_tool_run's).  The
 * generated code is meant to compile with the configured tools, so their
 * failure on it is nnkc's bug; a tool the user named (NNK_CC, NNK_NVCC)
 * may be the cause, and the message says which variable chose it. */
static void step_failed(const Step *s, const FatobjConfig *cfg, int st, Buf *msg)
{
    bool cc = s->kind == STEP_CC || s->kind == STEP_ASM || s->kind == STEP_LINK;
    bool chosen = cc ? cfg->cc_chosen : cfg->nvcc_chosen;
    if (s->t.timed_out)
        buf_printf(msg, "%s '%s' did not finish in %.3g s (killed; NNK_COMPILE_TIMEOUT sets the limit)", step_what(s),
                   s->argv[0], (double)s->t.timeout_ms / 1000.0);
    else if (st < 0)
        buf_printf(msg, "cannot run %s '%s': %s%s", step_what(s), s->argv[0], strerror(s->t.err),
                   cc ? " (set NNK_CC)" : "");
    else
        buf_printf(msg, "%s '%s' failed on the generated code (exit %d; %s)%s%s", step_what(s), s->argv[0], st,
                   !chosen ? "this is a bug in nnkc"
                   : cc    ? "NNK_CC chose this compiler: if it compiles C11, this is a bug in nnkc"
                           : "NNK_NVCC chose this nvcc: if it is CUDA 11 or newer, this is a bug in nnkc",
                   s->t.outlen ? ":\n" : "", s->t.outlen ? s->t.out : "");
}

static const char *sm_suffix(const Arch *a)
{
    return a->variant == 'a' ? "a" : a->variant == 'f' ? "f" : "";
}

/* The C compiler's first nwords words (cfg->cc), then tail, reading `in`
 * on stdin (no file name of ours in the object). */
static Step *step_stdin(Arena *ar, int kind, const FatobjConfig *cfg, int nwords, const char *const *tail, int ntail,
                        const Buf *in)
{
    Step *s = step_new(ar, kind, 0);
    int n = 0;
    for (int i = 0; i < nwords; i++)
        s->argv[n++] = cfg->cc[i];
    for (int i = 0; i < ntail; i++)
        s->argv[n++] = (char *)tail[i];
    s->t.in = in->data ? in->data : "";
    s->t.inlen = in->len;
    return s;
}

/* Part `part` of the C (1..NPARTS) into out: assembly with -S (part 1,
 * which gets the fatbin), else an object.  The baseline loops (part 2),
 * which only CPUs without AVX2 run, at -O1 with the vectorizer from -O2
 * up: a third less of the C compiler's time (samples/norms.nnk: 1.4
 * instead of 2.0 CPU-s), the same bits and, measured on norms.nnk's
 * instances (docs/c-backend.md), the same speed.  (A later -O wins; the
 * -f options given stay.) */
static Step *step_part(Arena *ar, const FatobjConfig *cfg, int part, bool assembly, const char *out, const Buf *csrc)
{
    bool cheap = part == 2 && cfg->opt >= 2;
    /* -pipe: no temporary assembly of the driver's that a kill would leave */
    const char *tail[] = {"-fPIC", "-pipe", arena_printf(ar, "-DNNK_PART=%d", part), assembly ? "-S" : "-c", "-x", "c", "-",
                          "-o", out, cheap ? "-O1" : NULL, cheap ? "-ftree-vectorize" : NULL};
    int ntail = sizeof tail / sizeof *tail - (cheap ? 0 : 2);
    Step *s = step_stdin(ar, STEP_CC, cfg, cfg->ncc, tail, ntail, csrc);
    s->arch = part;
    return s;
}

/* The parts' objects linked into cfg->output. */
static Step *step_link(Arena *ar, const FatobjConfig *cfg, const char *const *objs)
{
    Step *s = step_new(ar, STEP_LINK, 0);
    int n = 0;
    for (int i = 0; i < cfg->ncc_tool; i++)
        s->argv[n++] = cfg->cc[i];
    s->argv[n++] = (char *)"-r";
    s->argv[n++] = (char *)"-nostdlib";
    for (int i = 0; i < NPARTS; i++)
        s->argv[n++] = (char *)objs[i];
    s->argv[n++] = (char *)"-o";
    s->argv[n++] = (char *)cfg->output;
    return s;
}

/* The front end and NVVM once, for the oldest virtual arch. */
static Step *step_ptx(Arena *ar, const FatobjConfig *cfg, int base, const char *ptx, const char *cu)
{
    Step *s = step_new(ar, STEP_PTX, base);
    const char *argv[] = {cfg->nvcc, "-ptx", "-std=c++17",
                          /* no FMA contraction unless asked: the C code is
                           * built with -ffp-contract=off, and the GPU must
                           * round as it does */
                          cfg->fmad ? "-fmad=true" : "-fmad=false", arena_printf(ar, "-arch=compute_%d", base), "-o",
                          ptx, cu};
    for (size_t i = 0; i < sizeof argv / sizeof *argv; i++)
        s->argv[i] = (char *)argv[i];
    return s;
}

static Step *step_sass(Arena *ar, const char *ptxas, const FatobjConfig *cfg, const Arch *a, int i, const char *ptx,
                       const char *cubin)
{
    Step *s = step_new(ar, STEP_SASS, i);
    int n = 0;
    s->argv[n++] = (char *)ptxas;
    s->argv[n++] = arena_printf(ar, "-arch=sm_%d%s", a->num, sm_suffix(a));
    s->argv[n++] = (char *)"-m64";
    if (!cfg->fmad) {
        s->argv[n++] = (char *)"--fmad";
        s->argv[n++] = (char *)"false";
    }
    s->argv[n++] = (char *)ptx;
    s->argv[n++] = (char *)"-o";
    s->argv[n++] = (char *)cubin;
    return s;
}

/* As nvcc -fatbin does; the options recorded for the driver's JIT of the
 * PTX (--fmad false there too). */
static Step *step_fatbin(Arena *ar, const char *fatbinary, const FatobjConfig *cfg, const Plan *plan,
                         const char *const *cubin, const char *ptx_new, const char *fatbin)
{
    Step *s = step_new(ar, STEP_FATBIN, 0);
    int n = 0;
    s->argv[n++] = (char *)fatbinary;
    s->argv[n++] = arena_printf(ar, "--create=%s", fatbin);
    s->argv[n++] = (char *)"-64";
    if (!cfg->fmad)
        s->argv[n++] = (char *)"--cmdline= --fmad false ";
    s->argv[n++] = arena_printf(ar, "--cicc-cmdline=-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=%d ", cfg->fmad);
    for (int i = 0; i < plan->nsass; i++)
        s->argv[n++] = arena_printf(ar, "--image3=kind=elf,sm=%d%s,file=%s", plan->sass[i].num, sm_suffix(&plan->sass[i]),
                                    cubin[i]);
    if (ptx_new)
        s->argv[n++] = arena_printf(ar, "--image3=kind=ptx,sm=%d,file=%s", plan->ptx, ptx_new);
    return s;
}

/* The PTX is there: its copy retargeted to the newest PTX arch, and the
 * copy NNKC_CUDA_KEEP=DIR asks for (the lint of tests/cuda/fatobj-check.sh
 * reads it). */
static bool ptx_written(Arena *ar, const Plan *plan, const char *ptx, const char *ptx_new)
{
    unsigned char *text = NULL;
    size_t len = 0;
    bool ok = read_all(ptx, &text, &len);
    if (ok && ptx_new != ptx && ptx_new) {
        Buf re = {0};
        ok = retarget_ptx(ar, text, len, plan->base, plan->ptx, &re) && write_all(ptx_new, re.data, re.len);
        buf_free(&re);
    }
    const char *keep = getenv("NNKC_CUDA_KEEP");
    if (ok && keep && *keep)
        ok = write_all(arena_printf(ar, "%s/kernels.compute_%d.ptx", keep, plan->base), text, len);
    free(text);
    return ok;
}

/* The assembly the C compiler wrote, with the fatbin appended, into out
 * (the assembler's input). */
static bool asm_with_fatbin(const char *asm_file, const char *fatbin, Buf *out)
{
    unsigned char *text = NULL, *bin = NULL;
    size_t len = 0, size = 0;
    bool ok = read_all(asm_file, &text, &len) && read_all(fatbin, &bin, &size);
    free(bin);
    if (ok) {
        buf_put(out, (const char *)text, len);
        /* 64-byte aligned (the driver wants 8), then a NUL as the C string
         * literal of earlier objects had; the size is the fatbin's, an
         * absolute symbol the C reads as an address */
        buf_printf(out, "\n\t.section .nv_fatbin,\"a\"\n\t.balign 64\n\t.type nnk_fatbin_, STT_OBJECT\n"
                        "\t.size nnk_fatbin_, %zu\nnnk_fatbin_:\n\t.incbin \"%s\"\n\t.byte 0\n"
                        "\t.set nnk_fatbin_size_, %zu\n",
                   size + 1, fatbin, size); /* no quote in the directory (fatobj_object) */
    }
    free(text);
    return ok;
}

bool fatobj_object(Compiler *c, const List *instances, EmitOptions *eo, const FatobjConfig *cfg, char **err)
{
    *err = NULL;
    Arena *ar = c->arena;
    Buf msg = {0};
    Arch a[32];
    Plan plan = {0};
    if (cfg->nvcc) {
        const char *bad;
        size_t badlen;
        int na = parse_archs(cfg->archs, a, 32, &bad, &badlen);
        if (na < 0) {
            buf_printf(&msg, "bad --cuda-arch entry '%.*s'", (int)badlen, bad);
            *err = buf_detach(&msg);
            return false;
        }
        plan_archs(a, na, &plan);
    }
    const char *ptxas = NULL, *fatbinary = NULL;
    if (cfg->nvcc && (!(ptxas = toolkit_tool(ar, cfg->nvcc, "ptxas")) ||
                      !(fatbinary = toolkit_tool(ar, cfg->nvcc, "fatbinary")))) {
        buf_printf(&msg, "no %s next to %s or on PATH (the CUDA toolkit's)", ptxas ? "fatbinary" : "ptxas", cfg->nvcc);
        *err = buf_detach(&msg);
        return false;
    }

    eo->with_cuda = cfg->nvcc != NULL;
    Buf csrc = {0};
    fatobj_c_file(c, instances, eo, &csrc);

    /* fatbinary parses its --image3 options itself and stops at a quote,
     * and the assembler reads the fatbin's name in a string: a TMPDIR with
     * more than these characters is not used */
    const char *tmpdir = getenv("TMPDIR");
    if (tmpdir && tmpdir[strspn(tmpdir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-")])
        tmpdir = NULL;
    char *dir = arena_printf(ar, "%s/nnkc-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        buf_printf(&msg, "cannot create a temporary directory: %s", strerror(errno));
        buf_free(&csrc);
        *err = buf_detach(&msg);
        return false;
    }
    /* every file the steps may write, removed at the end */
    const char *files[48];
    int nfiles = 0;
    const char *objs[NPARTS];
    for (int i = 0; i < NPARTS; i++)
        objs[i] = files[nfiles++] = arena_printf(ar, "%s/part%d.o", dir, i + 1);
    const char *cu = NULL, *ptx = NULL, *ptx_new = NULL, *fatbin = NULL, *asm_file = NULL, *cubin[32];
    bool ok = true;
    if (cfg->nvcc) {
        cu = files[nfiles++] = arena_printf(ar, "%s/kernels.cu", dir);
        ptx = files[nfiles++] = arena_printf(ar, "%s/kernels.compute_%d.ptx", dir, plan.base);
        ptx_new = plan.ptx && plan.ptx != plan.base
                      ? (files[nfiles++] = arena_printf(ar, "%s/kernels.compute_%d.ptx", dir, plan.ptx))
                      : plan.ptx ? ptx : NULL;
        fatbin = files[nfiles++] = arena_printf(ar, "%s/kernels.fatbin", dir);
        asm_file = files[nfiles++] = arena_printf(ar, "%s/part1.s", dir);
        for (int i = 0; i < plan.nsass; i++)
            cubin[i] = files[nfiles++] =
                arena_printf(ar, "%s/kernels.sm_%d%s.cubin", dir, plan.sass[i].num, sm_suffix(&plan.sass[i]));
        Buf cuda = {0};
        emit_cuda_file(c, instances, eo, &cuda);
        ok = write_all(cu, cuda.data, cuda.len);
        buf_free(&cuda);
        if (!ok)
            buf_printf(&msg, "cannot write %s", cu);
    }

    NnkcRuns *runs = ok ? nnkc_runs_new(cfg->jobs, plan.nsass + NPARTS + 5) : NULL;
    if (ok && !runs) {
        buf_printf(&msg, "out of memory");
        ok = false;
    }
    /* the CUDA first, then the parts, the loops first (part 1 waits for
     * the fatbin anyway); the later CUDA steps go before the parts not yet
     * started (nnkc_runs_add_first): their chain ends with the fatbin that
     * part 1's assembly waits for, so on 2 cores the parts fill the gaps */
    if (ok && cfg->nvcc) {
        Step *px = step_ptx(ar, cfg, plan.base, ptx, cu);
        ok = nnkc_runs_add(runs, px->argv, &px->t);
    }
    for (int i = NPARTS; i >= 1 && ok; i--) {
        bool assembly = i == 1 && cfg->nvcc;
        Step *cc = step_part(ar, cfg, i, assembly, assembly ? asm_file : objs[i - 1], &csrc);
        ok = nnkc_runs_add(runs, cc->argv, &cc->t);
    }
    int left_sass = cfg->nvcc ? plan.nsass : -1;
    int left_parts = NPARTS; /* objects still to come */
    bool asm_done = false, fat_done = !cfg->nvcc;
    Buf as_in = {0};
    NnkcTool *done = NULL;
    int st;
    while (ok && (done = nnkc_runs_wait(runs, &st))) {
        Step *s = (Step *)done;
        if (st != 0) {
            step_failed(s, cfg, st, &msg);
            ok = false;
            break;
        }
        if (s->kind == STEP_PTX) {
            if (!(ok = ptx_written(ar, &plan, ptx, ptx_new))) {
                buf_printf(&msg, "cannot read or write the PTX in %s", dir);
                break;
            }
            for (int i = 0; i < plan.nsass && ok; i++) {
                Step *x = step_sass(ar, ptxas, cfg, &plan.sass[i], i, ptx, cubin[i]);
                ok = nnkc_runs_add_first(runs, x->argv, &x->t);
            }
        } else if (s->kind == STEP_SASS) {
            left_sass--;
        } else if (s->kind == STEP_CC) {
            if (s->arch == 1 && cfg->nvcc)
                asm_done = true;
            else
                left_parts--;
        } else if (s->kind == STEP_FATBIN) {
            fat_done = true;
        } else if (s->kind == STEP_ASM) {
            left_parts--;
        } else if (s->kind == STEP_LINK) {
            break; /* the object is written */
        }
        if (ok && cfg->nvcc && left_sass == 0 && (s->kind == STEP_PTX || s->kind == STEP_SASS)) {
            Step *f = step_fatbin(ar, fatbinary, cfg, &plan, cubin, ptx_new, fatbin);
            ok = nnkc_runs_add_first(runs, f->argv, &f->t);
        }
        if (ok && asm_done && fat_done) {
            /* part 1's assembly with the fatbin appended, assembled */
            asm_done = false;
            if (!(ok = asm_with_fatbin(asm_file, fatbin, &as_in))) {
                buf_printf(&msg, "cannot read %s or %s", asm_file, fatbin);
                break;
            }
            const char *tail[] = {"-c", "-x", "assembler", "-", "-o", objs[0]};
            Step *as = step_stdin(ar, STEP_ASM, cfg, cfg->ncc_tool, tail, sizeof tail / sizeof *tail, &as_in);
            ok = nnkc_runs_add_first(runs, as->argv, &as->t);
        }
        if (ok && left_parts == 0) {
            left_parts = -1; /* added */
            Step *ln = step_link(ar, cfg, objs);
            ok = nnkc_runs_add(runs, ln->argv, &ln->t);
        }
    }
    if (ok && !done) {
        buf_printf(&msg, "the steps of the fat object ended early (this is a bug in nnkc)");
        ok = false;
    }
    nnkc_runs_free(runs); /* kills what still runs after a failure */
    buf_free(&csrc);
    buf_free(&as_in);
    for (int i = 0; i < nfiles; i++)
        unlink(files[i]);
    rmdir(dir);
    if (!ok) {
        if (!msg.len)
            buf_printf(&msg, "cannot build the fat object");
        *err = buf_detach(&msg);
    } else {
        buf_free(&msg);
    }
    return ok;
}

/* ---- the object's C source ---------------------------------------------------------- */

void fatobj_c_file(Compiler *c, const List *instances, const EmitOptions *opt, Buf *out)
{
    if (opt->with_cuda)
        /* The CUDA code: an nvcc fatbin that fatobj_object appends to the
         * assembly (the C is compiled while nvcc runs); its size is an
         * absolute symbol, read as its address (docs/cuda-backend.md). */
        buf_puts(out, "/* The CUDA code of this object: an nvcc fatbin, and its size (docs/cuda-backend.md). */\n"
                      "extern const unsigned char nnk_fatbin_[] __attribute__((visibility(\"hidden\")));\n"
                      "extern const unsigned char nnk_fatbin_size_[] __attribute__((visibility(\"hidden\")));\n"
                      "#define NNK_FATBIN_SIZE_ ((uint64_t)(uintptr_t)nnk_fatbin_size_)\n\n");
    emit_c_file(c, instances, opt, out);
    TDict *d = tdict_new(c->arena);
    for (int i = 0; i < instances->n; i++) {
        EmitOperands o;
        emit_operands_init(&o, c, instances->items[i]);
        emit_instance_keys(&o, opt, tpush(d, "instances"));
    }
    tlist(d, "instances");
    /* (only in part 1 of nnkc -c's parts: templates/c/prelude.tmpl) */
    buf_puts(out, "\n#if NNK_REST_");
    template_render("fatobj.tmpl", d, out);
    buf_puts(out, "#endif\n");
}
