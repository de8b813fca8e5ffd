/* cuda_api.h - the few CUDA driver, NVRTC and cuDNN declarations the cuda
 * and cudnn extensions use.  The libraries are loaded with dlopen at run
 * time, so nothing here needs cuda.h, nvrtc.h or cudnn.h at build time and
 * the extensions load (and report no devices) on machines without them.
 * The values are those of the CUDA 11-13 and cuDNN 8-9 headers; the driver
 * functions are looked up by their ABI names (cuMemAlloc_v2, ...). */
#ifndef NNK_CUDA_API_H
#define NNK_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- driver API (libcuda.so.1) ------------------------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_NOT_FOUND = 500,
};

enum { CU_STREAM_NON_BLOCKING = 1 };
enum { CU_STREAM_CAPTURE_STATUS_NONE = 0 };
enum { CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
enum { CU_MEMHOSTALLOC_PORTABLE = 1 };
enum { CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4 };

enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
};

/* The driver entry points, by the names libcuda.so.1 exports. */
#define NNK_CU_FUNCTIONS(X)                                                                              \
    X(cuInit, "cuInit", CUresult, (unsigned flags))                                                       \
    X(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int *v))                                       \
    X(cuGetErrorName, "cuGetErrorName", CUresult, (CUresult e, const char **s))                           \
    X(cuGetErrorString, "cuGetErrorString", CUresult, (CUresult e, const char **s))                       \
    X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int *n))                                           \
    X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice * d, int ordinal))                                  \
    X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char *name, int len, CUdevice d))                    \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t * bytes, CUdevice d))                    \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *v, int attr, CUdevice d))             \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext * c, CUdevice d))        \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice d))                  \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", CUresult, (CUcontext c))                                   \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", CUresult, (CUcontext * c))                                   \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext * c))                                      \
    X(cuCtxGetDevice, "cuCtxGetDevice", CUresult, (CUdevice * d))                                         \
    X(cuCtxSynchronize, "cuCtxSynchronize", CUresult, (void))                                             \
    X(cuStreamCreate, "cuStreamCreate", CUresult, (CUstream * s, unsigned flags))                         \
    X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult, (CUstream s))                                      \
    X(cuStreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream s))                                 \
    X(cuMemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr * p, size_t bytes))                             \
    X(cuMemFree, "cuMemFree_v2", CUresult, (CUdeviceptr p))                                               \
    X(cuMemsetD8Async, "cuMemsetD8Async", CUresult, (CUdeviceptr p, unsigned char v, size_t n, CUstream s)) \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult, (CUdeviceptr d, const void *s, size_t n, CUstream st)) \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult, (void *d, CUdeviceptr s, size_t n, CUstream st)) \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", CUresult, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)) \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *d, CUdeviceptr s, size_t n))                     \
    X(cuModuleLoadData, "cuModuleLoadData", CUresult, (CUmodule * m, const void *image))                  \
    X(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule m))                                           \
    X(cuModuleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction * f, CUmodule m, const char *name)) \
    X(cuModuleGetGlobal, "cuModuleGetGlobal_v2", CUresult, (CUdeviceptr * p, size_t * bytes, CUmodule m, const char *name)) \
    X(cuLaunchKernel, "cuLaunchKernel", CUresult,                                                         \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,        \
       unsigned shmem, CUstream s, void **params, void **extra))

/* cuMemcpy2DAsync's description of a copy (cuda.h's CUDA_MEMCPY2D; the
 * extension fills the device-to-device fields only). */
enum { CU_MEMORYTYPE_DEVICE = 2 };
typedef struct CUDA_MEMCPY2D {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

/* Entry points of newer drivers (11.2, 11.3): NULL when the driver lacks
 * them, and the extension does without (stream-ordered scratch; strided
 * device copies, which the runtime then stages through the host).  The
 * page-locked staging of host copies (cuMemHostAlloc, cuMemFreeHost) is
 * optional too: without it copies are pageable. */
/* cuFuncGetAttribute / cuFuncSetAttribute, cuDeviceGetAttribute */
enum {
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN_ = 97
};
#define NNK_CU_OPTIONAL(X)                                                                               \
    X(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", CUresult, (const CUDA_MEMCPY2D *c, CUstream s))             \
    X(cuMemAllocAsync, "cuMemAllocAsync", CUresult, (CUdeviceptr * p, size_t bytes, CUstream s))          \
    X(cuMemFreeAsync, "cuMemFreeAsync", CUresult, (CUdeviceptr p, CUstream s))                            \
    X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", CUresult, (CUmemoryPool * pool, CUdevice d)) \
    X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", CUresult, (CUmemoryPool pool, int attr, void *value)) \
    X(cuStreamIsCapturing, "cuStreamIsCapturing", CUresult, (CUstream s, int *status))                    \
    X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", CUresult, (int *mode))          \
    X(cuMemHostAlloc, "cuMemHostAlloc", CUresult, (void **p, size_t bytes, unsigned flags))               \
    X(cuMemFreeHost, "cuMemFreeHost", CUresult, (void *p))                                                \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult, (int *v, int attr, CUfunction f))               \
    X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult, (CUfunction f, int attr, int v))

/* ---- NVRTC (libnvrtc.so.N) ------------------------------------------------ */

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

#define NNK_NVRTC_FUNCTIONS(X)                                                                           \
    X(nvrtcVersion, "nvrtcVersion", nvrtcResult, (int *major, int *minor))                                \
    X(nvrtcGetErrorString, "nvrtcGetErrorString", const char *, (nvrtcResult r))                         \
    X(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", nvrtcResult, (int *n))                     \
    X(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", nvrtcResult, (int *archs))                       \
    X(nvrtcCreateProgram, "nvrtcCreateProgram", nvrtcResult,                                              \
      (nvrtcProgram * p, const char *src, const char *name, int nheaders, const char *const *headers,    \
       const char *const *include_names))                                                                 \
    X(nvrtcDestroyProgram, "nvrtcDestroyProgram", nvrtcResult, (nvrtcProgram * p))                       \
    X(nvrtcCompileProgram, "nvrtcCompileProgram", nvrtcResult, (nvrtcProgram p, int nopts, const char *const *opts)) \
    X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", nvrtcResult, (nvrtcProgram p, size_t *n))        \
    X(nvrtcGetProgramLog, "nvrtcGetProgramLog", nvrtcResult, (nvrtcProgram p, char *log))                \
    X(nvrtcGetPTXSize, "nvrtcGetPTXSize", nvrtcResult, (nvrtcProgram p, size_t *n))                      \
    X(nvrtcGetPTX, "nvrtcGetPTX", nvrtcResult, (nvrtcProgram p, char *ptx))                              \
    X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize", nvrtcResult, (nvrtcProgram p, size_t *n))                  \
    X(nvrtcGetCUBIN, "nvrtcGetCUBIN", nvrtcResult, (nvrtcProgram p, char *cubin))

/* ---- cuDNN (libcudnn.so.9 / .8) ----------------------------------------------- */

typedef int cudnnStatus_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnReduceTensorStruct *cudnnReduceTensorDescriptor_t;

enum { CUDNN_STATUS_SUCCESS = 0 };
enum { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1, CUDNN_DATA_HALF = 2 };
enum { CUDNN_NOT_PROPAGATE_NAN = 0, CUDNN_PROPAGATE_NAN = 1 };
enum { CUDNN_REDUCE_TENSOR_NO_INDICES = 0 };
enum { CUDNN_32BIT_INDICES = 0 };
/* cudnnReduceTensorOp_t: ADD MUL MIN MAX AMAX AVG NORM1 NORM2 = 0..7
 * (nnk/extension.h's NNK_REDUCE_* minus one). */

#define NNK_CUDNN_FUNCTIONS(X)                                                                           \
    X(cudnnGetVersion, "cudnnGetVersion", size_t, (void))                                                 \
    X(cudnnGetErrorString, "cudnnGetErrorString", const char *, (cudnnStatus_t s))                       \
    X(cudnnCreate, "cudnnCreate", cudnnStatus_t, (cudnnHandle_t * h))                                    \
    X(cudnnDestroy, "cudnnDestroy", cudnnStatus_t, (cudnnHandle_t h))                                    \
    X(cudnnSetStream, "cudnnSetStream", cudnnStatus_t, (cudnnHandle_t h, CUstream s))                    \
    X(cudnnCreateTensorDescriptor, "cudnnCreateTensorDescriptor", cudnnStatus_t, (cudnnTensorDescriptor_t * d)) \
    X(cudnnDestroyTensorDescriptor, "cudnnDestroyTensorDescriptor", cudnnStatus_t, (cudnnTensorDescriptor_t d)) \
    X(cudnnSetTensorNdDescriptor, "cudnnSetTensorNdDescriptor", cudnnStatus_t,                            \
      (cudnnTensorDescriptor_t d, int dtype, int nd, const int *dims, const int *strides))               \
    X(cudnnCreateReduceTensorDescriptor, "cudnnCreateReduceTensorDescriptor", cudnnStatus_t,             \
      (cudnnReduceTensorDescriptor_t * d))                                                                \
    X(cudnnDestroyReduceTensorDescriptor, "cudnnDestroyReduceTensorDescriptor", cudnnStatus_t,           \
      (cudnnReduceTensorDescriptor_t d))                                                                  \
    X(cudnnSetReduceTensorDescriptor, "cudnnSetReduceTensorDescriptor", cudnnStatus_t,                   \
      (cudnnReduceTensorDescriptor_t d, int op, int comp_type, int nan_opt, int indices, int index_type)) \
    X(cudnnGetReductionWorkspaceSize, "cudnnGetReductionWorkspaceSize", cudnnStatus_t,                   \
      (cudnnHandle_t h, cudnnReduceTensorDescriptor_t r, cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t c, \
       size_t *bytes))                                                                                    \
    X(cudnnReduceTensor, "cudnnReduceTensor", cudnnStatus_t,                                              \
      (cudnnHandle_t h, cudnnReduceTensorDescriptor_t r, void *indices, size_t indices_bytes, void *ws,  \
       size_t ws_bytes, const void *alpha, cudnnTensorDescriptor_t a, const void *A, const void *beta,   \
       cudnnTensorDescriptor_t c, void *C))

#endif
