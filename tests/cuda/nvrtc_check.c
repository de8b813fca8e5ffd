/* nvrtc_check.c - compiles generated CUDA with NVRTC for every GPU
 * architecture NVRTC supports from sm_75 up, through the cuda extension's
 * own JIT code (cuda_core.c: the same library search, options and
 * headers as at run time), without a GPU.
 *
 *     nvrtc_check [-j JOBS] [-a MIN_ARCH] [-L KERNELS] [-l LINT_ARCH] FILE.cu...
 *
 * Each file is one NVRTC program (all the kernels of one .nnk file),
 * compiled to a cubin with --Ofast-compile=max (opt_level 0 with
 * cu_state's ofast_max: the whole front end and ptxas, less optimisation)
 * for every arch.  Files with more
 * than KERNELS kernels (default 20; 0: none; NNK_NVRTC_FULL=1 sets 0) or
 * over 128 KB of source are
 * large: a cubin for the oldest and the newest arch, the front end only
 * (--fdevice-syntax-only, which is where the source depends on the arch)
 * for the others; a full matrix of every file takes twice as long as
 * this check with the lint (make check's budget).
 * JOBS threads (default: online CPUs).
 *
 * The PTX lint (ptx_lint.h): each file is also compiled to PTX for
 * compute_LINT_ARCH (default 90, or the nearest NVRTC has; 0: no lint)
 * at the runtime's own options and optimisation level (opt_level 2,
 * which is where NVVM optimises), and the PTX is scanned; a finding fails
 * the file, naming the kernel.
 *
 * Prints one line per file and a summary; exit 0 when every file compiles
 * and lints clean, 1 otherwise, 77 when NVRTC cannot be loaded (the caller
 * decides whether that is a skip). */
#include "cuda_core.h"
#include "internal.h"
#include "ptx_lint.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef struct job {
    const char *path;
    char *src;
    int kernels;
    bool large;
    int cubins, fronts;
    int ok;           /* archs compiled */
    char *fail;       /* the first failure */
    double secs;
    bool linted;
    int findings, lint_kernels;
    char *lint;       /* the findings, or the reason the lint could not run */
    double lint_secs;
} job;

static cu_state *S;
static job *jobs;
/* the jobs by size, largest first: the tasks take them in this order, so
 * that the longest compiles do not start last (the lint round ends with
 * its longest file: in file order, 20-reductions.cu's 1.2 MB began on one
 * thread after the others had taken the small files) */
static int *order;
static int njobs, archs[64], narchs, lint_arch, ntasks;
static atomic_int next_task;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void lint_job(job *j, const char *prefix)
{
    char *ptx = NULL, *text = NULL;
    size_t size = 0, tlen = 0;
    double t0 = now();
    nnk_status s = j->src ? cu_jit_ptx(S, lint_arch, j->src, prefix, 2, &ptx, &size) : NNK_EIO;
    int findings = 1, kernels = 0;
    FILE *m = open_memstream(&text, &tlen);
    if (m && s == NNK_OK && ptx && size > 0 && ptx[size - 1] == 0)
        findings = ptx_lint(ptx, j->path, m, &kernels);
    else if (m)
        fprintf(m, "%s: no PTX for compute_%d: %s\n", j->path, lint_arch,
                s ? nnk_last_error() : !j->src ? "cannot read the file" : "NVRTC gave no PTX");
    if (m)
        fclose(m);
    free(ptx);
    double dt = now() - t0;
    pthread_mutex_lock(&lock);
    j->linted = m != NULL;
    j->findings = findings;
    j->lint_kernels = kernels;
    j->lint = text;
    j->lint_secs = dt;
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        int t = atomic_fetch_add(&next_task, 1);
        if (t >= ntasks)
            return NULL;
        /* the lint tasks first: they are the longest (full optimisation) */
        const char *base;
        char prefix[128];
        if (lint_arch && t < njobs) {
            job *j = &jobs[order[t]];
            base = strrchr(j->path, '/');
            snprintf(prefix, sizeof prefix, "%s", base ? base + 1 : j->path);
            lint_job(j, prefix);
            continue;
        }
        if (lint_arch)
            t -= njobs;
        job *j = &jobs[order[t / narchs]];
        int arch = archs[t % narchs];
        char *image = NULL, key[65];
        size_t size = 0;
        bool ptx = false;
        base = strrchr(j->path, '/');
        snprintf(prefix, sizeof prefix, "%s", base ? base + 1 : j->path);
        double t0 = now();
        bool front = j->large && arch != archs[0] && arch != archs[narchs - 1];
        nnk_status s = j->src ? cu_jit(S, arch, j->src, prefix, front ? -1 : 0, &image, &size, &ptx, key) : NNK_EIO;
        double dt = now() - t0;
        bool good = s == NNK_OK && (front || (image && size > 0 && !ptx && memcmp(image, "\177ELF", 4) == 0));
        pthread_mutex_lock(&lock);
        j->secs += dt;
        if (good) {
            j->ok++;
            j->cubins += !front;
            j->fronts += front;
        } else if (!j->fail) {
            char *m = malloc(8200);
            if (m)
                snprintf(m, 8200, "sm_%d: %s", arch,
                         s ? nnk_last_error() : !j->src ? "cannot read the file" : "NVRTC gave no cubin");
            j->fail = m;
        }
        pthread_mutex_unlock(&lock);
        free(image);
    }
}

int main(int argc, char **argv)
{
    int nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN), min_arch = 75, a = 1, large = 20, want_lint = 90;
    const char *full = getenv("NNK_NVRTC_FULL");
    if (full && strcmp(full, "1") == 0)
        large = 0;
    for (; a < argc && argv[a][0] == '-'; a += 2) {
        if (a + 1 >= argc)
            break;
        if (strcmp(argv[a], "-j") == 0)
            nthreads = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "-a") == 0)
            min_arch = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "-L") == 0)
            large = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "-l") == 0)
            want_lint = atoi(argv[a + 1]);
    }
    if (a >= argc) {
        fprintf(stderr, "usage: nvrtc_check [-j JOBS] [-a MIN_ARCH] [-L KERNELS] [-l LINT_ARCH] FILE.cu...\n");
        return 2;
    }
    if (nthreads < 1)
        nthreads = 1;
    if (cu_init(&rt_host_api, "cuda", &S) != NNK_OK || cu_nvrtc_ready(S) != NNK_OK) {
        printf("nvrtc_check: %s\n", nnk_last_error());
        return 77;
    }
    for (int i = 0; i < S->narchs; i++)
        if (S->archs[i] >= min_arch)
            archs[narchs++] = S->archs[i];
    printf("nvrtc_check: NVRTC %d.%d (headers: %s), %d archs:", S->nvrtc_major, S->nvrtc_minor,
           S->include_dir[0] ? S->include_dir : "built-in", narchs);
    for (int i = 0; i < narchs; i++)
        printf(" sm_%d", archs[i]);
    /* the lint's arch: the wanted one, else the newest NVRTC has below it, else its oldest */
    for (int i = 0; want_lint && i < S->narchs; i++)
        if (S->archs[i] <= want_lint && S->archs[i] > lint_arch)
            lint_arch = S->archs[i];
    if (want_lint && !lint_arch)
        lint_arch = S->archs[0];
    if (lint_arch)
        printf("; PTX lint at compute_%d, opt_level 2", lint_arch);
    printf("; %d threads\n", nthreads);
    fflush(stdout);
    njobs = argc - a;
    jobs = calloc((size_t)njobs, sizeof *jobs);
    order = calloc((size_t)njobs, sizeof *order);
    if (!jobs || !order) {
        fprintf(stderr, "nvrtc_check: out of memory\n");
        return 1;
    }
    for (int i = 0; i < njobs; i++) {
        jobs[i].path = argv[a + i];
        jobs[i].src = slurp(argv[a + i]);
        for (const char *p = jobs[i].src; p && (p = strstr(p, "__global__")); p++)
            jobs[i].kernels++;
        jobs[i].large = large > 0 && (jobs[i].kernels > large || (jobs[i].src && strlen(jobs[i].src) > (128 << 10))) &&
                        narchs > 2;
    }
    for (int i = 0; i < njobs; i++) {
        size_t len = jobs[i].src ? strlen(jobs[i].src) : 0;
        int k = i;
        for (; k > 0 && (jobs[order[k - 1]].src ? strlen(jobs[order[k - 1]].src) : 0) < len; k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    double t0 = now();
    pthread_t th[64];
    if (nthreads > 64)
        nthreads = 64;
    /* Two rounds: the lint's compiles (full optimisation) all end before
     * the cubin compiles begin, which are at --Ofast-compile=max (9 times
     * faster than opt_level 0's -Xptxas=-O0 for samples/norms.nnk):
     * with NVRTC 13.0 one such compile changes every later compile of the
     * process (cuda_core.c, jit_setup; test_cuda test_jit_gate), so the
     * runtime never passes it, and here only once the lint is done. */
    for (int round = lint_arch ? 0 : 1; round < 2; round++) {
        ntasks = round == 0 ? njobs : njobs * narchs + (lint_arch ? njobs : 0);
        S->ofast_max = round == 1;
        for (int i = 0; i < nthreads; i++)
            pthread_create(&th[i], NULL, worker, NULL);
        for (int i = 0; i < nthreads; i++)
            pthread_join(th[i], NULL);
        atomic_store(&next_task, lint_arch ? njobs : 0);
    }
    int bad = 0, findings = 0, lint_kernels = 0;
    double lint_secs = 0;
    for (int i = 0; i < njobs; i++) {
        job *j = &jobs[i];
        if (lint_arch) {
            lint_secs += j->lint_secs;
            lint_kernels += j->lint_kernels;
            if (!j->linted || j->findings) {
                bad += j->ok == narchs; /* counted once per file */
                findings += j->linted ? j->findings : 1;
                printf("nvrtc_check: FAIL %s: PTX lint: %d finding%s\n%s", j->path, j->findings,
                       j->findings == 1 ? "" : "s", j->lint ? j->lint : "(the lint could not run)\n");
            }
            free(j->lint);
        }
        if (j->ok == narchs && !j->large) {
            printf("nvrtc_check: ok   %s (%d kernels): cubins for %d archs (%.1fs)\n", j->path, j->kernels, narchs,
                   j->secs);
        } else if (j->ok == narchs) {
            printf("nvrtc_check: ok   %s (%d kernels, large): cubins for sm_%d and sm_%d, the front end for %d more "
                   "(%.1fs)\n",
                   j->path, j->kernels, archs[0], archs[narchs - 1], j->fronts, j->secs);
        } else {
            bad++;
            printf("nvrtc_check: FAIL %s: %d of %d archs; %s\n", j->path, j->ok, narchs, j->fail ? j->fail : "?");
        }
    }
    if (lint_arch)
        printf("nvrtc_check: PTX lint: %d kernels of %d files at compute_%d in %.1fs (summed over threads): %d findings\n",
               lint_kernels, njobs, lint_arch, lint_secs, findings);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("nvrtc_check: %d file%s x %d archs in %.1fs (%.1f CPU seconds): %d failed\n", njobs, njobs == 1 ? "" : "s",
           narchs, now() - t0, (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec, bad);
    return bad ? 1 : 0;
}
