/* cl_api.h - the few OpenCL 1.2 declarations the opencl extension uses.
 * libOpenCL.so.1 (the ICD loader) is loaded with dlopen at run time, so
 * nothing here needs CL/cl.h at build time and the extension loads (and
 * reports no devices, with the reason) on machines without OpenCL.  The
 * values are those of the Khronos headers. */
#ifndef NNK_CL_API_H
#define NNK_CL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_bitfield cl_device_fp_config;
typedef intptr_t cl_context_properties;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

enum {
    CL_SUCCESS = 0,
    CL_DEVICE_NOT_FOUND = -1,
    CL_MEM_OBJECT_ALLOCATION_FAILURE = -4,
    CL_MEM_COPY_OVERLAP = -8,
    CL_OUT_OF_RESOURCES = -5,
    CL_OUT_OF_HOST_MEMORY = -6,
    CL_BUILD_PROGRAM_FAILURE = -11,
    CL_INVALID_BINARY = -42,
    CL_INVALID_BUFFER_SIZE = -61,
    CL_PLATFORM_NOT_FOUND_KHR = -1001,
};

enum {
    CL_PLATFORM_VERSION = 0x0901,
    CL_PLATFORM_NAME = 0x0902,
    CL_PLATFORM_VENDOR = 0x0903,
    CL_DEVICE_TYPE = 0x1000,
    CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
    CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004,
    CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010,
    CL_DEVICE_MEM_BASE_ADDR_ALIGN = 0x1019,
    CL_DEVICE_SINGLE_FP_CONFIG = 0x101B,
    CL_DEVICE_GLOBAL_MEM_SIZE = 0x101F,
    CL_DEVICE_ENDIAN_LITTLE = 0x1026,
    CL_DEVICE_AVAILABLE = 0x1027,
    CL_DEVICE_COMPILER_AVAILABLE = 0x1028,
    CL_DEVICE_NAME = 0x102B,
    CL_DEVICE_VENDOR = 0x102C,
    CL_DRIVER_VERSION = 0x102D,
    CL_DEVICE_VERSION = 0x102F,
    CL_DEVICE_EXTENSIONS = 0x1030,
    CL_DEVICE_HOST_UNIFIED_MEMORY = 0x1035,
    CL_CONTEXT_PLATFORM = 0x1084,
    CL_PROGRAM_BINARY_SIZES = 0x1165,
    CL_PROGRAM_BINARIES = 0x1166,
    CL_PROGRAM_BUILD_LOG = 0x1183,
    CL_KERNEL_NUM_ARGS = 0x1191,
    CL_KERNEL_WORK_GROUP_SIZE = 0x11B0,
};

enum {
    CL_DEVICE_TYPE_DEFAULT = 1 << 0,
    CL_DEVICE_TYPE_CPU = 1 << 1,
    CL_DEVICE_TYPE_GPU = 1 << 2,
    CL_DEVICE_TYPE_ACCELERATOR = 1 << 3,
};
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
enum { CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7 };
enum { CL_MEM_READ_WRITE = 1 << 0, CL_MEM_READ_ONLY = 1 << 2, CL_MEM_COPY_HOST_PTR = 1 << 5 };
enum { CL_FALSE = 0, CL_TRUE = 1 };

/* The entry points, by the names libOpenCL.so.1 exports (all OpenCL 1.2). */
#define NNK_CL_FUNCTIONS(X)                                                                                     \
    X(clGetPlatformIDs, cl_int, (cl_uint n, cl_platform_id * p, cl_uint * count))                               \
    X(clGetPlatformInfo, cl_int, (cl_platform_id p, cl_uint what, size_t n, void *v, size_t *ret))              \
    X(clGetDeviceIDs, cl_int, (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id * d, cl_uint * count)) \
    X(clGetDeviceInfo, cl_int, (cl_device_id d, cl_uint what, size_t n, void *v, size_t *ret))                  \
    X(clCreateContext, cl_context,                                                                              \
      (const cl_context_properties *props, cl_uint n, const cl_device_id *d,                                     \
       void (*notify)(const char *, const void *, size_t, void *), void *user, cl_int *err))                     \
    X(clReleaseContext, cl_int, (cl_context c))                                                                 \
    X(clCreateCommandQueue, cl_command_queue,                                                                   \
      (cl_context c, cl_device_id d, cl_command_queue_properties props, cl_int * err))                          \
    X(clReleaseCommandQueue, cl_int, (cl_command_queue q))                                                      \
    X(clCreateBuffer, cl_mem, (cl_context c, cl_mem_flags f, size_t bytes, void *host, cl_int *err))            \
    X(clReleaseMemObject, cl_int, (cl_mem m))                                                                   \
    X(clEnqueueReadBuffer, cl_int,                                                                              \
      (cl_command_queue q, cl_mem m, cl_bool block, size_t off, size_t n, void *p, cl_uint nw,                   \
       const cl_event *w, cl_event *e))                                                                         \
    X(clEnqueueWriteBuffer, cl_int,                                                                             \
      (cl_command_queue q, cl_mem m, cl_bool block, size_t off, size_t n, const void *p, cl_uint nw,             \
       const cl_event *w, cl_event *e))                                                                         \
    X(clEnqueueCopyBuffer, cl_int,                                                                              \
      (cl_command_queue q, cl_mem src, cl_mem dst, size_t soff, size_t doff, size_t n, cl_uint nw,               \
       const cl_event *w, cl_event *e))                                                                         \
    X(clEnqueueCopyBufferRect, cl_int,                                                                          \
      (cl_command_queue q, cl_mem src, cl_mem dst, const size_t *so, const size_t *dor, const size_t *region,    \
       size_t srp, size_t ssp, size_t drp, size_t dsp, cl_uint nw, const cl_event *w, cl_event *e))              \
    X(clEnqueueFillBuffer, cl_int,                                                                              \
      (cl_command_queue q, cl_mem m, const void *pat, size_t patn, size_t off, size_t n, cl_uint nw,             \
       const cl_event *w, cl_event *e))                                                                         \
    X(clFinish, cl_int, (cl_command_queue q))                                                                   \
    X(clCreateProgramWithSource, cl_program,                                                                    \
      (cl_context c, cl_uint n, const char **src, const size_t *len, cl_int *err))                              \
    X(clCreateProgramWithBinary, cl_program,                                                                    \
      (cl_context c, cl_uint n, const cl_device_id *d, const size_t *len, const unsigned char **bin,             \
       cl_int *status, cl_int *err))                                                                            \
    X(clBuildProgram, cl_int,                                                                                   \
      (cl_program p, cl_uint n, const cl_device_id *d, const char *opts,                                         \
       void (*notify)(cl_program, void *), void *user))                                                         \
    X(clGetProgramBuildInfo, cl_int, (cl_program p, cl_device_id d, cl_uint what, size_t n, void *v, size_t *ret)) \
    X(clGetProgramInfo, cl_int, (cl_program p, cl_uint what, size_t n, void *v, size_t *ret))                   \
    X(clReleaseProgram, cl_int, (cl_program p))                                                                 \
    X(clCreateKernel, cl_kernel, (cl_program p, const char *name, cl_int *err))                                 \
    X(clReleaseKernel, cl_int, (cl_kernel k))                                                                   \
    X(clSetKernelArg, cl_int, (cl_kernel k, cl_uint i, size_t n, const void *v))                                \
    X(clGetKernelInfo, cl_int, (cl_kernel k, cl_uint what, size_t n, void *v, size_t *ret))                     \
    X(clGetKernelWorkGroupInfo, cl_int, (cl_kernel k, cl_device_id d, cl_uint what, size_t n, void *v, size_t *ret)) \
    X(clEnqueueNDRangeKernel, cl_int,                                                                           \
      (cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off, const size_t *global,                   \
       const size_t *local, cl_uint nw, const cl_event *w, cl_event *e))

#endif
