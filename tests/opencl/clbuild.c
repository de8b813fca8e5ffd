/* clbuild FILE.cl... - builds each OpenCL C file with clBuildProgram on the
 * first OpenCL device (PoCL in CI) and checks that it defines the kernels
 * docs/opencl.md lists for the instances its first comment names.  The
 * OpenCL counterpart of the CUDA PTX lint: every kernel of tests/ and
 * samples/ must compile.  libOpenCL.so.1 is loaded with dlopen; without
 * it, or without a device, the test is skipped (exit 77).
 *
 * Options are passed on as build options (-D..., -cl-...). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef void *cl_id;
#define CL_SUCCESS 0
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_PROGRAM_KERNEL_NAMES 0x1168
#define CL_PROGRAM_NUM_KERNELS 0x1167

static struct {
    cl_int (*GetPlatformIDs)(cl_uint, cl_id *, cl_uint *);
    cl_int (*GetDeviceIDs)(cl_id, uint64_t, cl_uint, cl_id *, cl_uint *);
    cl_id (*CreateContext)(const intptr_t *, cl_uint, const cl_id *, void *, void *, cl_int *);
    cl_id (*CreateProgramWithSource)(cl_id, cl_uint, const char **, const size_t *, cl_int *);
    cl_int (*BuildProgram)(cl_id, cl_uint, const cl_id *, const char *, void *, void *);
    cl_int (*GetProgramBuildInfo)(cl_id, cl_id, cl_uint, size_t, void *, size_t *);
    cl_int (*GetProgramInfo)(cl_id, cl_uint, size_t, void *, size_t *);
    cl_int (*ReleaseProgram)(cl_id);
} cl;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t r; b && (r = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (cap - n < 2) {
            char *nb = realloc(b, cap * 2);
            if (!nb)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (b)
        b[n] = 0;
    *len = n;
    return b;
}

/* The kernels an instance must have: the list after "kernels of: ". */
static int check_kernels(const char *path, const char *src, const char *names)
{
    static const char *const ew[] = {"__ew_c", "__ew_s", NULL};
    static const char *const rd[] = {"__rd_group", "__rd_item", "__rd_part", "__rd_fin", "__rd_epi", "__info", NULL};
    const char *l = strstr(src, "kernels of: ");
    if (!l)
        return 0;
    l += strlen("kernels of: ");
    int bad = 0;
    while (*l && *l != '\n' && strncmp(l, "(none)", 6) != 0) {
        size_t n = strcspn(l, ", \n");
        char inst[256];
        snprintf(inst, sizeof inst, "%.*s", (int)n, l);
        char marker[320];
        snprintf(marker, sizeof marker, " %s__rd_group(", inst);
        const char *const *sfx = strstr(src, marker) ? rd : ew;
        for (int i = 0; sfx[i]; i++) {
            char want[320];
            snprintf(want, sizeof want, "%s%s", inst, sfx[i]);
            const char *p = names;
            bool found = false;
            while (*p && !found) {
                size_t m = strcspn(p, ";");
                found = m == strlen(want) && strncmp(p, want, m) == 0;
                p += m + (p[m] == ';');
            }
            if (!found) {
                fprintf(stderr, "%s: no kernel %s\n", path, want);
                bad = 1;
            }
        }
        l += n;
        while (*l == ',' || *l == ' ')
            l++;
    }
    return bad;
}

int main(int argc, char **argv)
{
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("SKIP: no libOpenCL.so.1\n");
        return 77;
    }
#define SYM(n) (*(void **)&cl.n = dlsym(h, "cl" #n))
    if (!SYM(GetPlatformIDs) || !SYM(GetDeviceIDs) || !SYM(CreateContext) || !SYM(CreateProgramWithSource) ||
        !SYM(BuildProgram) || !SYM(GetProgramBuildInfo) || !SYM(GetProgramInfo) || !SYM(ReleaseProgram)) {
        printf("SKIP: libOpenCL.so.1 lacks a function\n");
        return 77;
    }
    cl_id plat[8], dev = NULL;
    cl_uint np = 0;
    if (cl.GetPlatformIDs(8, plat, &np) != CL_SUCCESS)
        np = 0;
    for (cl_uint i = 0; i < np && !dev; i++) {
        cl_uint nd = 0;
        if (cl.GetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 1, &dev, &nd) != CL_SUCCESS || nd == 0)
            dev = NULL;
    }
    if (!dev) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    cl_id ctx = cl.CreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!ctx) {
        printf("SKIP: no OpenCL context (%d)\n", (int)err);
        return 77;
    }
    char opts[4096] = "-cl-std=CL1.2";
    int nfiles = 0, failed = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-') {
            strncat(opts, " ", sizeof opts - strlen(opts) - 1);
            strncat(opts, argv[i], sizeof opts - strlen(opts) - 1);
        }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        size_t len;
        char *src = slurp(argv[i], &len);
        if (!src) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            failed++;
            continue;
        }
        nfiles++;
        const char *s = src;
        cl_id prog = cl.CreateProgramWithSource(ctx, 1, &s, &len, &err);
        if (!prog || cl.BuildProgram(prog, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
            char log[16384] = "";
            if (prog)
                cl.GetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            fprintf(stderr, "%s: clBuildProgram failed:\n%s\n", argv[i], log);
            failed++;
        } else {
            char names[65536] = "";
            cl.GetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, sizeof names - 1, names, NULL);
            failed += check_kernels(argv[i], src, names);
        }
        if (prog)
            cl.ReleaseProgram(prog);
        free(src);
    }
    printf("%d file(s) built, %d failed\n", nfiles, failed);
    return failed ? 1 : 0;
}
