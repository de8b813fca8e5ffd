/* nvrtc_check.c - compiles generated CUDA with NVRTC for every GPU
 * architecture NVRTC supports from sm_75 up, through the cuda extension's
 * own JIT code (cuda_core.c: the same library search, options and
 * headers as at run time), without a GPU.
 *
 *     nvrtc_check [-j JOBS] [-a MIN_ARCH] [-L KERNELS] FILE.cu...
 *
 * Each file is one NVRTC program (all the kernels of one .nnk file),
 * compiled to a cubin with --Ofast-compile=max (opt_level 0: the whole
 * front end and ptxas, less optimisation) for every arch.  Files with more
 * than KERNELS kernels (default 300; 0: none; NNK_NVRTC_FULL=1 sets 0) are
 * large: a cubin for the oldest and the newest arch, the front end only
 * (--fdevice-syntax-only, which is where the source depends on the arch)
 * for the others; a full matrix of the conformance files takes minutes.
 * JOBS threads (default: online CPUs).  Prints one line per file and a
 * summary; exit 0 when every file compiles, 1 otherwise, 77 when NVRTC
 * cannot be loaded (the caller decides whether that is a skip). */
#include "cuda_core.h"
#include "internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
} job;

static cu_state *S;
static job *jobs;
static int njobs, archs[64], narchs;
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

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        int t = atomic_fetch_add(&next_task, 1);
        if (t >= njobs * narchs)
            return NULL;
        job *j = &jobs[t / narchs];
        int arch = archs[t % narchs];
        char *image = NULL, key[65];
        size_t size = 0;
        bool ptx = false;
        const char *base = strrchr(j->path, '/');
        char prefix[128];
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
    int nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN), min_arch = 75, a = 1, large = 300;
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
    }
    if (a >= argc) {
        fprintf(stderr, "usage: nvrtc_check [-j JOBS] [-a MIN_ARCH] FILE.cu...\n");
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
    printf("; %d threads\n", nthreads);
    fflush(stdout);
    njobs = argc - a;
    jobs = calloc((size_t)njobs, sizeof *jobs);
    for (int i = 0; i < njobs; i++) {
        jobs[i].path = argv[a + i];
        jobs[i].src = slurp(argv[a + i]);
        for (const char *p = jobs[i].src; p && (p = strstr(p, "__global__")); p++)
            jobs[i].kernels++;
        jobs[i].large = large > 0 && jobs[i].kernels > large && narchs > 2;
    }
    double t0 = now();
    pthread_t th[64];
    if (nthreads > 64)
        nthreads = 64;
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    int bad = 0;
    for (int i = 0; i < njobs; i++) {
        job *j = &jobs[i];
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
    printf("nvrtc_check: %d file%s x %d archs in %.1fs: %d failed\n", njobs, njobs == 1 ? "" : "s", narchs,
           now() - t0, bad);
    return bad ? 1 : 0;
}
