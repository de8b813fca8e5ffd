/* cl_min.h - the few OpenCL 1.2 entry points the tests/opencl programs use,
 * loaded from libOpenCL.so.1 with dlopen (no OpenCL headers or library at
 * build time), and the first device of the first platform that has one. */
#ifndef CL_MIN_H
#define CL_MIN_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef void *cl_id;
#define CL_SUCCESS 0
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_PROGRAM_KERNEL_NAMES 0x1168
#define CL_MEM_READ_WRITE 1
#define CL_MEM_COPY_HOST_PTR 32

static struct {
    cl_int (*GetPlatformIDs)(cl_uint, cl_id *, cl_uint *);
    cl_int (*GetDeviceIDs)(cl_id, uint64_t, cl_uint, cl_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_id, cl_uint, size_t, void *, size_t *);
    cl_id (*CreateContext)(const intptr_t *, cl_uint, const cl_id *, void *, void *, cl_int *);
    cl_id (*CreateCommandQueue)(cl_id, cl_id, uint64_t, cl_int *);
    cl_id (*CreateProgramWithSource)(cl_id, cl_uint, const char **, const size_t *, cl_int *);
    cl_int (*BuildProgram)(cl_id, cl_uint, const cl_id *, const char *, void *, void *);
    cl_int (*GetProgramBuildInfo)(cl_id, cl_id, cl_uint, size_t, void *, size_t *);
    cl_int (*GetProgramInfo)(cl_id, cl_uint, size_t, void *, size_t *);
    cl_id (*CreateKernel)(cl_id, const char *, cl_int *);
    cl_int (*SetKernelArg)(cl_id, cl_uint, size_t, const void *);
    cl_id (*CreateBuffer)(cl_id, uint64_t, size_t, void *, cl_int *);
    cl_int (*EnqueueReadBuffer)(cl_id, cl_id, cl_uint, size_t, size_t, void *, cl_uint, const void *, void *);
    cl_int (*EnqueueWriteBuffer)(cl_id, cl_id, cl_uint, size_t, size_t, const void *, cl_uint, const void *, void *);
    cl_int (*EnqueueNDRangeKernel)(cl_id, cl_id, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint,
                                   const void *, void *);
    cl_int (*Finish)(cl_id);
    cl_int (*ReleaseMemObject)(cl_id);
    cl_int (*ReleaseKernel)(cl_id);
    cl_int (*ReleaseProgram)(cl_id);
    cl_id dev, ctx, queue;
} cl;

/* 0 with cl.dev, cl.ctx and cl.queue set, or 77 (the test is skipped)
 * after saying why. */
static int cl_setup(void)
{
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("SKIP: no libOpenCL.so.1\n");
        return 77;
    }
#define CL_SYM_(n) (*(void **)&cl.n = dlsym(h, "cl" #n))
    if (!CL_SYM_(GetPlatformIDs) || !CL_SYM_(GetDeviceIDs) || !CL_SYM_(GetDeviceInfo) || !CL_SYM_(CreateContext) ||
        !CL_SYM_(CreateCommandQueue) || !CL_SYM_(CreateProgramWithSource) || !CL_SYM_(BuildProgram) ||
        !CL_SYM_(GetProgramBuildInfo) || !CL_SYM_(GetProgramInfo) || !CL_SYM_(CreateKernel) ||
        !CL_SYM_(SetKernelArg) || !CL_SYM_(CreateBuffer) || !CL_SYM_(EnqueueReadBuffer) ||
        !CL_SYM_(EnqueueWriteBuffer) || !CL_SYM_(EnqueueNDRangeKernel) || !CL_SYM_(Finish) ||
        !CL_SYM_(ReleaseMemObject) || !CL_SYM_(ReleaseKernel) || !CL_SYM_(ReleaseProgram)) {
        printf("SKIP: libOpenCL.so.1 lacks a function\n");
        return 77;
    }
#undef CL_SYM_
    cl_id plat[8];
    cl_uint np = 0;
    if (cl.GetPlatformIDs(8, plat, &np) != CL_SUCCESS)
        np = 0;
    for (cl_uint i = 0; i < np && i < 8 && !cl.dev; i++) {
        cl_uint nd = 0;
        if (cl.GetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 1, &cl.dev, &nd) != CL_SUCCESS || nd == 0)
            cl.dev = NULL;
    }
    if (!cl.dev) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    cl.ctx = cl.CreateContext(NULL, 1, &cl.dev, NULL, NULL, &err);
    cl.queue = cl.ctx ? cl.CreateCommandQueue(cl.ctx, cl.dev, 0, &err) : NULL;
    if (!cl.queue) {
        printf("SKIP: no OpenCL context or queue (%d)\n", (int)err);
        return 77;
    }
    return 0;
}

/* A built program, or NULL after printing the build log. */
static cl_id cl_build(const char *what, const char *src, const char *opts)
{
    cl_int err;
    size_t len = 0;
    while (src[len])
        len++;
    cl_id prog = cl.CreateProgramWithSource(cl.ctx, 1, &src, &len, &err);
    if (prog && cl.BuildProgram(prog, 1, &cl.dev, opts, NULL, NULL) == CL_SUCCESS)
        return prog;
    static char log[65536];
    log[0] = 0;
    if (prog)
        cl.GetProgramBuildInfo(prog, cl.dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    fprintf(stderr, "%s: clBuildProgram failed:\n%s\n", what, log);
    if (prog)
        cl.ReleaseProgram(prog);
    return NULL;
}

#endif /* CL_MIN_H */
