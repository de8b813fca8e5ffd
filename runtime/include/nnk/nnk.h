/* nnk/nnk.h - the public API of libnnk, the nnk runtime.
 *
 * libnnk runs kernels written in the .nnk language (docs/language.md) on
 * the devices of its extensions: `cpu` is built in, others (`cuda`,
 * `cudnn`, third-party devices) are shared objects loaded at run time.
 * The extension API follows NNabla's `nnabla.ext_utils`; the JIT follows
 * PyTorch's jiterator.  docs/runtime.md is the reference manual.
 *
 * Conventions:
 *  - Every function that can fail returns an nnk_status; results come back
 *    through pointer arguments, which are left untouched on failure.
 *  - On failure nnk_last_error() gives a message for the calling thread.
 *  - Nothing aborts or exits the host program; NULL handles are errors
 *    (NNK_EINVAL), and *_free(NULL) does nothing.
 *  - Objects (contexts, arrays, modules, kernels, argument lists, jit
 *    functions) may be used from several threads as long as one thread
 *    does not free an object another is using.  An nnk_args is meant for
 *    one thread at a time.
 *  - Shapes and strides are int64_t; strides count elements, not bytes.
 */
#ifndef NNK_NNK_H
#define NNK_NNK_H

#include <stddef.h>
#include <stdint.h>

#include "nnk/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NNK_VERSION "0.1.0"

/* ---- status ------------------------------------------------------------ */

typedef enum nnk_status {
    NNK_OK = 0,
    NNK_EINVAL,       /* a bad argument: NULL handle, bad kw string, unknown name, ... */
    NNK_ENOMEM,       /* out of host or device memory */
    NNK_ENOTFOUND,    /* no such extension, kernel, parameter or cache entry */
    NNK_ECOMPILE,     /* the .nnk source or the generated code does not compile */
    NNK_EDEVICE,      /* the device or its driver failed */
    NNK_ESHAPE,       /* shapes do not broadcast, wrong output shape, bad reshape or axis */
    NNK_EDTYPE,       /* a dtype the kernel cannot take */
    NNK_EUNSUPPORTED, /* valid, but no backend or build can do it */
    NNK_EIO,          /* a file or process operation failed */
    NNK_EABI,         /* an extension or kernel built for another ABI version */
    NNK_EINTERNAL,    /* a bug in nnk; the message says where */
    NNK_ERANGE,       /* a raw parameter's index out of range: the message names kernel, parameter and index */
    NNK_EOVERFLOW,    /* an integer outside its parameter's type (numpy's rules: nnk_args_numpy_scalars), or a
                       * jit function option's outside the int64 and uint64 ranges */
    NNK_STATUS_COUNT
} nnk_status;

/* The message of the last failed call on this thread ("" when none).  A
 * call that succeeds leaves it as it was.  Valid until the next nnk call
 * on this thread. */
const char *nnk_last_error(void);
/* "NNK_EINVAL", ... */
const char *nnk_status_name(nnk_status s);

/* Releases every global resource: the thread pool, loaded extensions (their
 * fini hook, then dlclose), compiled kernels, memory caches, the default
 * context.  Objects still alive stay valid only if they were freed first:
 * call it last.  The library is usable again afterwards (it re-initialises
 * lazily).  It also runs from a destructor at exit, where it only stops the
 * thread pool when objects are still alive. */
void nnk_shutdown(void);

/* ---- dtypes -------------------------------------------------------------- */

/* "f32", "bf16", ...; NULL for a value out of range. */
const char *nnk_dtype_name(nnk_dtype t);
/* Bytes per element (bool: 1); 0 for a value out of range. */
size_t nnk_dtype_size(nnk_dtype t);
/* Parses a dtype name ("f32", also "float32", "half", "float", "double"). */
nnk_status nnk_dtype_parse(const char *name, nnk_dtype *out);

/* ---- extensions (NNabla's ext_utils) ------------------------------------ */

typedef struct nnk_extension nnk_extension;   /* owned by the runtime */
typedef struct nnk_context nnk_context;       /* owned by the caller */

/* One device of an extension, as get_devices() reports it. */
typedef struct nnk_device_info {
    int32_t id;               /* the device_id a context names */
    char name[128];           /* e.g. "cpu (16 threads)", "NVIDIA H100 80GB HBM3" */
    uint64_t total_memory;    /* bytes, 0 when unknown */
    int32_t host_accessible;  /* its memory is host memory */
} nnk_device_info;

/* Everything get_devices() knows of one device
 * (nnk_extension_get_device_props).  The caller sets `size` to
 * sizeof(nnk_device_props) of its header; the runtime fills only the
 * members that `size` covers, so later versions append members and old
 * callers keep working. */
typedef struct nnk_device_props {
    uint32_t size;            /* in: sizeof(nnk_device_props) of the caller */
    int32_t id;
    char name[128];           /* as nnk_device_info's */
    char vendor[128];         /* e.g. "NVIDIA Corporation", "AuthenticAMD"; "" when unknown */
    char driver_version[128]; /* the driver's version string; "" when unknown */
    uint64_t total_memory;    /* bytes, 0 when unknown */
    int32_t host_accessible;  /* as nnk_device_info's: the runtime reads its memory directly */
    int32_t unified_memory;   /* 1: the device works in the host's physical memory (a CPU device,
                               * an integrated GPU), 0: memory of its own, -1: unknown */
} nnk_device_props;

/* Statistics of the caching allocator of one device. */
typedef struct nnk_memory_stats {
    uint64_t bytes_in_use;    /* in blocks handed out (rounded to size classes) */
    uint64_t bytes_cached;    /* in free blocks kept for reuse */
    uint64_t peak_bytes_in_use;
    uint64_t hits;            /* allocations served from the cache */
    uint64_t misses;          /* allocations that went to the device */
    uint64_t retries;         /* failed device allocations retried after a cache flush */
} nnk_memory_stats;

/* Names of the available extensions: `cpu`, extensions registered with
 * nnk_register_extension, then every `libnnk_ext_NAME.so` found in the
 * directories of NNK_EXTENSION_PATH (colon-separated, searched first) and
 * in the installed extension directory (nnk_extension_dir()).  A name
 * found twice is listed once.  Writes up to `cap` names into names[] and
 * the total into *count (which may exceed cap: call again with more room).
 * The strings stay valid until nnk_shutdown().  names may be NULL when cap
 * is 0. */
nnk_status nnk_list_extensions(const char **names, int32_t cap, int32_t *count);
/* The installed extension directory, $(libdir)/nnk/extensions. */
const char *nnk_extension_dir(void);
/* Loads extension `name` (once per process) and calls its init hook.  When
 * it is not found, NNK_ENOTFOUND with the directories searched. */
nnk_status nnk_import_extension(const char *name, nnk_extension **ext);
/* Adds an extension linked into the application (the same vtable as a
 * shared object's, see nnk/extension.h).  `ops` must outlive the runtime
 * (static storage).  NNK_EINVAL when the name is taken. */
struct nnk_extension_ops;
nnk_status nnk_register_extension(const struct nnk_extension_ops *ops);

const char *nnk_extension_name(const nnk_extension *ext);
/* NNabla's `context(**kw)` of the extension: same as
 * nnk_get_extension_context(nnk_extension_name(ext), kw, ctx). */
nnk_status nnk_extension_context(nnk_extension *ext, const char *kw, nnk_context **ctx);
/* Waits until all work queued on `device` has finished. */
nnk_status nnk_extension_device_synchronize(nnk_extension *ext, int32_t device);
/* The number of devices (>= 1 for cpu; 0 for a GPU extension without GPUs). */
nnk_status nnk_extension_get_device_count(nnk_extension *ext, int32_t *count);
/* Describes up to `cap` devices into out[0..), in id order; *count gets the
 * device count (which may exceed cap). */
nnk_status nnk_extension_get_devices(nnk_extension *ext, nnk_device_info *out, int32_t cap, int32_t *count);
/* Describes device `device` into *out, whose `size` the caller sets
 * (nnk_device_props).  NNK_EINVAL for a size below the members of ABI 1's
 * struct (through unified_memory) or a device out of range. */
nnk_status nnk_extension_get_device_props(nnk_extension *ext, int32_t device, nnk_device_props *out);
/* Releases every free block cached by the extension's allocators (all its
 * devices) back to the device, and asks the extension to drop its own
 * caches.  Blocks in use are untouched.  Returns the bytes released in
 * *released (may be NULL). */
nnk_status nnk_extension_clear_memory_cache(nnk_extension *ext, uint64_t *released);
/* Allocator statistics of one device. */
nnk_status nnk_extension_memory_stats(nnk_extension *ext, int32_t device, nnk_memory_stats *stats);
/* One line from the extension on its devices, above all why it has none
 * (cuda without a driver: "no NVIDIA driver: libcuda.so.1: cannot open
 * shared object file ..."); "" when the extension says nothing (cpu).
 * Valid until nnk_shutdown(); NULL for a NULL ext. */
const char *nnk_extension_status(nnk_extension *ext);

/* ---- contexts ------------------------------------------------------------- */

#define NNK_MAX_BACKENDS 8

/* A context names where work runs: a backend priority list (NNabla's
 * `backend`, e.g. "cudnn:half", "cuda:half", "cuda:float", "cpu:float"),
 * a device id and a type configuration ("float" or "half").
 *
 * kw is a string of key=value pairs separated by spaces or commas, e.g.
 * "device_id=0 type_config=half"; in a value a backslash takes the next
 * character as it is ("include_dirs=/a\\ b").  Keys every extension knows:
 *   device_id    integer >= 0                   (default 0)
 *   type_config  float | half | mixed_half      (default float)
 * Making a context asks nothing of the device, as NNabla's context() does:
 * an extension without devices (cuda without a GPU) or a device_id past
 * its devices fails at the context's first use (a launch, an array):
 * NNK_EDEVICE ("extension 'cuda' has no devices: ...") or NNK_EINVAL.
 * mixed_half is NNabla's name for half with float master weights; nnk has
 * no weights: it takes half's dtype (f16), with NNabla's backend names.
 * Extensions may accept more keys; any other key is an error naming it.
 * kw may be NULL or "". */
nnk_status nnk_get_extension_context(const char *ext_name, const char *kw, nnk_context **ctx);
nnk_status nnk_context_clone(const nnk_context *ctx, nnk_context **out);
void nnk_context_free(nnk_context *ctx);
int32_t nnk_context_backend_count(const nnk_context *ctx);
/* "cuda:half"; NULL when i is out of range. */
const char *nnk_context_backend(const nnk_context *ctx, int32_t i);
int32_t nnk_context_device_id(const nnk_context *ctx);
/* NNK_F16 for type_config=half and mixed_half, NNK_F32 for float. */
nnk_dtype nnk_context_type_config(const nnk_context *ctx);
/* "float", "half" or "mixed_half", as the context was made ("float" for NULL). */
const char *nnk_context_type_config_name(const nnk_context *ctx);
/* "backends=[cpu:float] device_id=0 type_config=float" */
const char *nnk_context_str(const nnk_context *ctx);
/* The default context is used where a call takes no context (NULL).  It
 * starts as `cpu` with NNabla's defaults; set copies ctx. */
nnk_status nnk_set_default_context(const nnk_context *ctx);
/* A copy of the default context, to free with nnk_context_free. */
nnk_status nnk_get_default_context(nnk_context **ctx);

/* ---- arrays -------------------------------------------------------------- */

typedef struct nnk_array nnk_array;

/* Creates an uninitialised C-contiguous array on the context's device (its
 * first backend; NULL ctx: the default context). */
nnk_status nnk_array_new(const nnk_context *ctx, nnk_dtype dtype, int32_t ndim, const int64_t *shape, nnk_array **out);
/* The same with the context's dtype: f16 for type_config=half, else f32. */
nnk_status nnk_array_new_default(const nnk_context *ctx, int32_t ndim, const int64_t *shape, nnk_array **out);
nnk_status nnk_array_zeros(const nnk_context *ctx, nnk_dtype dtype, int32_t ndim, const int64_t *shape, nnk_array **out);
/* A new array holding a copy of C-contiguous host data of the same dtype. */
nnk_status nnk_array_from_host(const nnk_context *ctx, nnk_dtype dtype, int32_t ndim, const int64_t *shape,
                               const void *data, nnk_array **out);
/* An array over caller-owned host memory (never freed by nnk).  strides
 * NULL means C-contiguous; `data` is the address of element (0,...,0). */
nnk_status nnk_array_wrap(nnk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *strides, void *data,
                          nnk_array **out);
/* Another reference to the same array object; each reference is freed. */
nnk_array *nnk_array_retain(nnk_array *a);
void nnk_array_free(nnk_array *a);

nnk_dtype nnk_array_dtype(const nnk_array *a);
int32_t nnk_array_ndim(const nnk_array *a);
const int64_t *nnk_array_shape(const nnk_array *a);
const int64_t *nnk_array_strides(const nnk_array *a);   /* in elements */
int64_t nnk_array_offset(const nnk_array *a);           /* elements from the buffer start */
int64_t nnk_array_size(const nnk_array *a);             /* number of elements */
int nnk_array_is_contiguous(const nnk_array *a);        /* C order */
/* The address of element (0,...,0): a device address for device arrays. */
void *nnk_array_data(const nnk_array *a);
/* The extension and device that hold the data (NULL for wrapped memory:
 * it is host memory, usable by every host-accessible backend). */
nnk_extension *nnk_array_extension(const nnk_array *a);
int32_t nnk_array_device(const nnk_array *a);

/* Views share the data of `a` (they keep it alive). */
#define NNK_SLICE_NONE INT64_MIN /* an omitted start or stop, as Python's None */
typedef struct nnk_slice {
    int64_t start, stop, step;   /* Python semantics; step 0 means 1 */
} nnk_slice;
/* Slices the first nslices axes (the others are kept whole). */
nnk_status nnk_array_slice(const nnk_array *a, int32_t nslices, const nnk_slice *s, nnk_array **out);
/* Axis i of the result is axis perm[i] of a; negative entries count from the end. */
nnk_status nnk_array_permute(const nnk_array *a, int32_t n, const int32_t *perm, nnk_array **out);
/* Reverses the axes. */
nnk_status nnk_array_transpose(const nnk_array *a, nnk_array **out);
/* A view with another shape (one extent may be -1): NNK_ESHAPE when the
 * strides cannot express it without a copy (use nnk_array_copy into a
 * contiguous array first). */
nnk_status nnk_array_reshape(const nnk_array *a, int32_t ndim, const int64_t *shape, nnk_array **out);
/* numpy's broadcast_to: a read-only-by-convention view with zero strides. */
nnk_status nnk_array_broadcast_to(const nnk_array *a, int32_t ndim, const int64_t *shape, nnk_array **out);

/* Copies src into dst elementwise, converting the dtype (f16/bf16 round to
 * nearest even) and broadcasting src to dst's shape; any layouts, any
 * devices.  Overlapping src and dst give an unspecified result. */
nnk_status nnk_array_copy(nnk_array *dst, const nnk_array *src);
/* A new C-contiguous array on ctx's device (NULL: a's device) with dtype
 * `dtype` holding a's values. */
nnk_status nnk_array_to(const nnk_array *a, const nnk_context *ctx, nnk_dtype dtype, nnk_array **out);
/* Copies the elements of a, in C order, to host memory as dtype `dtype`;
 * bytes must be at least size * dtype size. */
nnk_status nnk_array_to_host(const nnk_array *a, nnk_dtype dtype, void *dst, size_t bytes);
/* Fills a from C-order host data of dtype `dtype`. */
nnk_status nnk_array_from_host_into(nnk_array *a, nnk_dtype dtype, const void *src, size_t bytes);

/* ---- modules, kernels and launches ---------------------------------------- */

typedef struct nnk_module nnk_module;
typedef struct nnk_kernel nnk_kernel;
typedef struct nnk_args nnk_args;

/* Compiles .nnk source in-process (libnnkc).  Kernels are instantiated and
 * code-generated lazily, per backend and dtype signature, at launch.
 * ctx: the context launches use (NULL: the default context at each
 * launch).  options: kw string with
 *   opt_level=0..3 (default 2)   include_dirs=DIR:DIR   name=NAME (for diagnostics)
 * A source with errors gives NNK_ECOMPILE with the rendered diagnostics in
 * nnk_last_error(). */
nnk_status nnk_module_compile(const nnk_context *ctx, const char *source, const char *options, nnk_module **out);
void nnk_module_free(nnk_module *m);   /* also frees its kernels */
int32_t nnk_module_kernel_count(const nnk_module *m);
/* Name of kernel i, NULL when out of range. */
const char *nnk_module_kernel_name(const nnk_module *m, int32_t i);
/* The kernel called `name` (owned by the module). */
nnk_status nnk_module_kernel(nnk_module *m, const char *name, nnk_kernel **k);

/* A kernel from a descriptor of linked code (AOT output of nnkc, or written
 * by hand against nnk/abi.h); runs on host-accessible backends.  ctx as in
 * nnk_module_compile.  Free with nnk_kernel_free. */
nnk_status nnk_kernel_from_desc(const nnk_context *ctx, const nnk_kernel_desc *desc, nnk_kernel **k);
/* A kernel from source code for the target of ctx's first backend (C for
 * cpu) that defines `const nnk_kernel_desc SYMBOL`, compiled and cached
 * like generated code.  Free with nnk_kernel_free. */
nnk_status nnk_kernel_from_source(const nnk_context *ctx, const char *source, const char *symbol, nnk_kernel **k);
/* Runs a linked descriptor as nnk_kernel_from_desc + nnk_launch would,
 * with the kernel kept by the runtime (one per descriptor, until
 * nnk_shutdown), so that repeated calls reuse its compiled or loaded
 * instances.  This is what NAME_run of nnkc fat objects calls. */
nnk_status nnk_launch_desc(const nnk_kernel_desc *desc, nnk_args *args);
/* Runs desc's device code on extension `ext` (NULL: "cuda") over a plan
 * whose data pointers are device addresses, queued on the caller's
 * `stream` (a CUstream / cudaStream_t; NULL: the default stream) of the
 * device current to the calling thread.  The plan's scalars are set.
 * Returns when the work is queued.  NNK_EUNSUPPORTED when the extension
 * cannot run linked code on foreign streams or desc has no device code.
 * This is what NAME_cuda of nnkc fat objects calls. */
nnk_status nnk_launch_desc_stream(const char *ext, const nnk_kernel_desc *desc, const nnk_plan *plan, void *stream);
/* Frees a kernel from nnk_kernel_from_desc/_source (module kernels belong
 * to their module: this does nothing for them). */
void nnk_kernel_free(nnk_kernel *k);
const char *nnk_kernel_name(const nnk_kernel *k);
int nnk_kernel_is_reduction(const nnk_kernel *k);
/* Inputs (tensor and scalar parameters) and outputs. */
int32_t nnk_kernel_input_count(const nnk_kernel *k);
int32_t nnk_kernel_output_count(const nnk_kernel *k);
/* Whether input i (0-based), or the input named `name` when name is not
 * NULL, is an inout parameter: the launch writes its array (its output
 * too, after the declared outputs).  0 for no such input. */
int nnk_kernel_input_is_inout(const nnk_kernel *k, int32_t i, const char *name);
/* Whether input i (or the input named `name`) is a scalar parameter (the
 * Python module reads a 0-d array given for one as its value).  0 for no
 * such input. */
int nnk_kernel_input_is_scalar(const nnk_kernel *k, int32_t i, const char *name);
/* The index of the parameter (inputs, then outputs) named `name`, or -1. */
int32_t nnk_kernel_param_index(const nnk_kernel *k, const char *name);

/* Arguments of a launch.  Positional inputs fill the kernel's parameters in
 * order; named ones match by name (inputs or outputs).  Scalars omitted
 * take their defaults; outputs omitted are allocated (on the backend the
 * kernel runs on, with the output's declared dtype) and returned through
 * nnk_args_output.  An array argument is retained until the list is reset
 * or freed. */
nnk_status nnk_args_new(nnk_args **out);
void nnk_args_free(nnk_args *a);
/* Empties the list (keeps its storage, for launch loops). */
void nnk_args_reset(nnk_args *a);
nnk_status nnk_args_array(nnk_args *a, nnk_array *x);
nnk_status nnk_args_named_array(nnk_args *a, const char *name, nnk_array *x);
nnk_status nnk_args_f64(nnk_args *a, double v);
nnk_status nnk_args_named_f64(nnk_args *a, const char *name, double v);
nnk_status nnk_args_i64(nnk_args *a, int64_t v);
nnk_status nnk_args_named_i64(nnk_args *a, const char *name, int64_t v);
/* An integer of the uint64 range (above INT64_MAX too), converted to the
 * parameter's type as C converts a uint64_t. */
nnk_status nnk_args_u64(nnk_args *a, uint64_t v);
nnk_status nnk_args_named_u64(nnk_args *a, const char *name, uint64_t v);
/* A complex scalar, for a c64 or c128 parameter (a real or integer one
 * refuses it at the launch: NNK_EDTYPE); real ones convert to complex. */
nnk_status nnk_args_c128(nnk_args *a, double re, double im);
nnk_status nnk_args_named_c128(nnk_args *a, const char *name, double re, double im);
/* A bool (0 or 1 for an integer or float parameter, as nnk_args_i64), which
 * with numpy's rules is of numpy's kind bool for a tensor input. */
nnk_status nnk_args_bool(nnk_args *a, int v);
nnk_status nnk_args_named_bool(nnk_args *a, const char *name, int v);
/* numpy's rules for scalars (NEP 50), what the Python module uses (off by
 * default; nnk_args_reset turns them off):
 *  - an integer (nnk_args_i64/u64) that the integer type of its parameter
 *    cannot hold is NNK_EOVERFLOW at the launch ("integer 300 out of
 *    bounds for u8"), not converted as C converts it; bool and float
 *    parameters convert as before (a float past f16's or f32's range is
 *    inf, as numpy's);
 *  - a scalar given for a tensor input (not an inout or raw one) is a 0-d
 *    operand that broadcasts, and weak: it takes the type the arrays bind
 *    its type variable to, lifting it to its own kind when that is higher
 *    (an i32 array with 2.5: f64; f32 with 1j: c64; bool with 2: i64), and
 *    scalars alone bind it to bool, i64 (u64 for an integer above
 *    INT64_MAX), f64 or c128 by their highest kind (nnk_args_bool gives
 *    the kind bool), or the next of those the variable's class holds (f64
 *    for a float variable given only integers); a given output binds a
 *    variable that no array input binds before the scalars do. */
nnk_status nnk_args_numpy_scalars(nnk_args *a, int on);
/* The next output, in declaration order. */
nnk_status nnk_args_out(nnk_args *a, nnk_array *y);
/* Reduction axes (default: all); negative axes count from the end. */
nnk_status nnk_args_axes(nnk_args *a, int32_t n, const int32_t *axes);
nnk_status nnk_args_keepdims(nnk_args *a, int keepdims);
/* The iteration shape of an elementwise kernel whose tensor inputs are all
 * raw (language.md, "Raw parameters"), for the outputs it allocates; with
 * other tensor inputs it must be their broadcast shape (NNK_ESHAPE). */
nnk_status nnk_args_shape(nnk_args *a, int32_t ndim, const int64_t *shape);
/* An explicit type argument: type variable `name` (when not NULL), else
 * the i-th in declaration order, or with i == -1 the kernel's only one, is
 * t for this launch, whatever the arrays' dtypes (which are then read and
 * written in their own dtype, as nnk_launch says).  The way to call an
 * instance whose type variable only scalars (or outputs) have, as
 * `k<i32>` names it in .nnk.  Checked at the launch: an unknown variable,
 * one given twice, or -1 for a kernel without exactly one is NNK_EINVAL, a
 * dtype outside the variable's class NNK_EDTYPE. */
nnk_status nnk_args_type(nnk_args *a, int32_t i, const char *name, nnk_dtype t);
/* The context of this launch (default: the kernel's). */
nnk_status nnk_args_context(nnk_args *a, const nnk_context *ctx);
/* After a launch: output i (given or allocated), as a new reference. */
nnk_status nnk_args_output(nnk_args *a, int32_t i, nnk_array **out);
int32_t nnk_args_output_count(const nnk_args *a);

/* Runs k.  Type variables bind to the explicit type arguments
 * (nnk_args_type), else from the dtypes of the tensor arguments typed with
 * them (promoted, language.md §2); a variable no input binds takes a given
 * output's dtype, else the context's type_config.  Tensor
 * arguments whose dtype differs from the parameter's type are read and
 * written in their own dtype.  On return the work is queued on the device
 * (complete for cpu); outputs are in the list. */
nnk_status nnk_launch(nnk_kernel *k, nnk_args *args);

/* ---- jiterator-style functions --------------------------------------------- */

typedef struct nnk_jit_fn nnk_jit_fn;

/* One kernel in a string as a callable (PyTorch's _create_jit_fn over
 * .nnk).  options: kw string; `kernel=NAME` picks a kernel when the source
 * has several, opt_level and include_dirs as nnk_module_compile, and any
 * other key must name a scalar parameter whose default it replaces
 * (jiterator's kwargs).  The kernel is compiled per dtype signature at
 * the first call with it, in the default context of that call. */
nnk_status nnk_create_jit_fn(const char *code, const char *options, nnk_jit_fn **out);
/* Runs the function; as nnk_launch. */
nnk_status nnk_jit_fn_call(nnk_jit_fn *fn, nnk_args *args);
/* Dtype signatures compiled so far. */
int32_t nnk_jit_fn_cache_size(const nnk_jit_fn *fn);
nnk_kernel *nnk_jit_fn_kernel(nnk_jit_fn *fn);
void nnk_jit_fn_free(nnk_jit_fn *fn);

/* ---- JIT cache statistics ---------------------------------------------------- */

typedef struct nnk_jit_stats {
    uint64_t memory_hits;     /* a compiled object already loaded in this process */
    uint64_t disk_hits;       /* loaded from the disk cache */
    uint64_t compiles;        /* the C compiler ran */
    uint64_t corrupt_entries; /* disk entries that failed verification (recompiled) */
} nnk_jit_stats;
void nnk_jit_get_stats(nnk_jit_stats *out);
/* Forgets the compiled objects of this process's memory cache that no
 * kernel uses (the next lookup goes to disk). For tests and benchmarks. */
void nnk_jit_clear_memory_cache(void);

/* ---- the disk cache (docs/runtime.md) --------------------------------------------- */

/* Removes every entry of the disk cache directory (NNK_CACHE_DIR, else
 * $XDG_CACHE_HOME/nnk, else ~/.cache/nnk) and its temporary files; loaded
 * kernels stay loaded.  NNK_OK when the cache is off (NNK_CACHE=0);
 * NNK_EIO when its directory is refused or unreadable. */
nnk_status nnk_cache_clear(void);
/* Why the disk cache was last refused, an entry rejected or not written
 * ("" when nothing went wrong in this process): the runtime never prints
 * it.  The string is the calling thread's until its next call. */
const char *nnk_cache_debug(void);

#ifdef __cplusplus
}
#endif

#endif /* NNK_NNK_H */
