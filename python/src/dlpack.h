/* dlpack.h - the DLPack exchange structs (DLPack 1.0, the C API of
 * https://dmlc.github.io/dlpack/latest/c_api.html), written from the
 * specification so that the package needs no third-party header.  Only
 * what nnk's Python module uses; the layout is the ABI and must not change.
 *
 * The Python side of the protocol (the "Python Specification for DLPack"):
 * __dlpack__() returns a PyCapsule named "dltensor" (a DLManagedTensor) or,
 * when the consumer passed max_version >= (1, 0), "dltensor_versioned" (a
 * DLManagedTensorVersioned).  A consumer that takes ownership renames the
 * capsule "used_dltensor" / "used_dltensor_versioned" and calls the deleter
 * when done; a capsule still carrying the original name when it dies is
 * deleted by its destructor. */
#ifndef NNK_PY_DLPACK_H
#define NNK_PY_DLPACK_H

#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/* DLManagedTensorVersioned.flags */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
} DLDataTypeCode;

typedef struct {
    uint8_t code;   /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes; /* 1 for scalars; nnk takes nothing else */
} DLDataType;

typedef struct {
    void *data;           /* the allocation; element 0 is at data + byte_offset */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;     /* in elements; NULL: C-contiguous */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* NNK_PY_DLPACK_H */
