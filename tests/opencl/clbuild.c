/* clbuild FILE.cl... - builds each OpenCL C file with clBuildProgram on the
 * first OpenCL device (PoCL in CI) and checks that it defines the kernels
 * docs/opencl.md lists for the instances its first comment names.  The
 * OpenCL counterpart of the CUDA PTX lint: every kernel of tests/ and
 * samples/ must compile.  libOpenCL.so.1 is loaded with dlopen; without
 * it, or without a device, the test is skipped (exit 77).
 *
 * Options are passed on as build options (-D..., -cl-...). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cl_min.h"

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
    int rc = cl_setup();
    if (rc)
        return rc;
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
        cl_id prog = cl_build(argv[i], src, opts);
        if (!prog) {
            failed++;
        } else {
            char names[65536] = "";
            cl.GetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, sizeof names - 1, names, NULL);
            failed += check_kernels(argv[i], src, names);
            cl.ReleaseProgram(prog);
        }
        free(src);
    }
    printf("%d file(s) built, %d failed\n", nfiles, failed);
    return failed ? 1 : 0;
}
