/* nnkmodule.c - nnk._nnk, the CPython extension under the `nnk` package:
 * libnnk's C API (nnk/nnk.h) as Python types, with arrays taken from the
 * buffer protocol and DLPack and given back as numpy arrays or nnk.Array.
 * The Python half (python/nnk/__init__.py, ext_utils.py, jiterator.py)
 * names things as NNabla and PyTorch do; everything that touches memory,
 * the GIL or a launch is here.  docs/python.md is the manual.
 *
 * Sections:
 *   errors      status -> exception class (one table), raising
 *   dtypes      nnk dtype <-> numpy name, buffer format, DLPack code
 *   numpy       optional: found in sys.modules, never imported to build
 *   Context     nnk_context
 *   Extension   nnk_extension (ext_utils' module-like object)
 *   Array       nnk_array with the buffer protocol and __dlpack__
 *   import      any object -> nnk_array (nnk.Array, buffer, DLPack)
 *   Kernel      module kernels and jit functions: the call path
 *   Module      nnk_module with attribute access to kernels
 *   functions   the module's functions and its init
 *
 * Everything runs with the GIL held except the libnnk calls that may take
 * long (launches, compiles, copies, synchronisation), which release it.
 * Per-object state touched by calls (a kernel's cached nnk_args) is only
 * read and written with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdarg.h>
#include <string.h>

#include <nnk/nnk.h>

#include "dlpack.h"

PyMODINIT_FUNC PyInit__nnk(void);

static PyTypeObject ContextType, ExtensionType, ArrayType, DLOwnerType, BufHolderType, KernelType, JitFunctionType,
    ModuleType;

/* ---- errors ------------------------------------------------------------------- */

/* One exception class per status: name, extra builtin bases (so that
 * `except ValueError` keeps working for a bad argument), docstring. */
#define NNK_PY_ERRORS(X)                                                                                    \
    X(NNK_EINVAL, "ArgumentError", &PyExc_ValueError, &PyExc_TypeError, "a bad argument (NNK_EINVAL)")     \
    X(NNK_ENOMEM, "OutOfMemoryError", &PyExc_MemoryError, NULL, "out of host or device memory (NNK_ENOMEM)") \
    X(NNK_ENOTFOUND, "NotFoundError", &PyExc_LookupError, NULL, "no such extension, kernel or parameter (NNK_ENOTFOUND)") \
    X(NNK_ECOMPILE, "CompileError", NULL, NULL, "the source does not compile; .diagnostics has the rendered diagnostics (NNK_ECOMPILE)") \
    X(NNK_EDEVICE, "DeviceError", NULL, NULL, "the device or its driver failed (NNK_EDEVICE)")            \
    X(NNK_ESHAPE, "ShapeError", &PyExc_ValueError, NULL, "shapes do not broadcast, bad axis or output shape (NNK_ESHAPE)") \
    X(NNK_EDTYPE, "DTypeError", &PyExc_TypeError, NULL, "a dtype the kernel or nnk cannot take (NNK_EDTYPE)") \
    X(NNK_EUNSUPPORTED, "UnsupportedError", NULL, NULL, "valid, but no backend can do it (NNK_EUNSUPPORTED)") \
    X(NNK_EIO, "IOFailureError", &PyExc_OSError, NULL, "a file or process operation failed (NNK_EIO)")      \
    X(NNK_EABI, "ABIError", NULL, NULL, "an extension or kernel built for another ABI (NNK_EABI)")          \
    X(NNK_EINTERNAL, "InternalError", NULL, NULL, "a bug in nnk (NNK_EINTERNAL)")                      \
    X(NNK_ERANGE, "RangeError", &PyExc_IndexError, NULL, "a raw parameter's index out of range (NNK_ERANGE)") \
    X(NNK_EOVERFLOW, "IntegerOverflowError", &status_error[NNK_EINVAL], &PyExc_OverflowError,               \
      "an integer out of bounds for its parameter's integer type: an OverflowError as numpy 2's, and an "    \
      "ArgumentError as before (NNK_EOVERFLOW)")

static PyObject *Error;                         /* nnk.Error */
static PyObject *status_error[NNK_STATUS_COUNT]; /* its subclasses, by status */

static const struct {
    nnk_status status;
    const char *name;
    PyObject **base1, **base2;  /* base1 may be a class above (made first): then not nnk.Error itself */
    const char *doc;
} error_table[] = {
#define X(s, n, b1, b2, d) {s, n, b1, b2, d},
    NNK_PY_ERRORS(X)
#undef X
};

/* Raises the class of status s with message `text` (a new reference, stolen). */
static PyObject *raise_text(nnk_status s, PyObject *text)
{
    if (!text)
        return NULL;
    PyObject *cls = s > 0 && s < NNK_STATUS_COUNT && status_error[s] ? status_error[s] : Error;
    PyObject *exc = PyObject_CallOneArg(cls, text);
    if (exc) {
        const char *sname = nnk_status_name(s);
        PyObject *v = PyUnicode_FromString(sname ? sname : "NNK_EINTERNAL");
        if (!v || PyObject_SetAttrString(exc, "status", v) < 0 ||
            (s == NNK_ECOMPILE && PyObject_SetAttrString(exc, "diagnostics", text) < 0)) {
            Py_XDECREF(v);
            Py_DECREF(exc);
            Py_DECREF(text);
            return NULL;
        }
        Py_DECREF(v);
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    Py_DECREF(text);
    return NULL;
}

/* The words of libnnk's messages that name its C API where this module has
 * its own: the C function, then what a Python caller writes. */
#define NNK_PY_API_WORDS(X)                                         \
    X("(nnk_args_out)", "(out=)")                                   \
    X("(nnk_args_shape)", "(shape=)")                               \
    X("nnk_args_shape: ", "shape=: ")                               \
    X("nnk_args_axes: ", "axis=: ")                                 \
    X("nnk_create_jit_fn: ", "_create_jit_fn: ")                    \
    X("nnk_extension_device_synchronize: ", "device_synchronize: ") \
    X("nnk_extension_memory_stats: ", "memory_stats: ")             \
    X("see nnk_extension_status)", "see the extension's .status)")

/* Raises the exception of a failed libnnk call, with nnk_last_error() in
 * this module's words (not in diagnostics, which quote the source). */
static PyObject *raise_status(nnk_status s)
{
    static const char *const words[][2] = {
#define X(c, py) {c, py},
        NNK_PY_API_WORDS(X)
#undef X
    };
    const char *msg = nnk_last_error();
    if (!msg || !*msg)
        msg = nnk_status_name(s) ? nnk_status_name(s) : "nnk error";
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    for (size_t i = 0; text && s != NNK_ECOMPILE && strstr(msg, "nnk_") && i < sizeof words / sizeof words[0]; i++) {
        if (!strstr(msg, words[i][0]))
            continue;
        PyObject *from = PyUnicode_FromString(words[i][0]), *to = PyUnicode_FromString(words[i][1]);
        PyObject *t = from && to ? PyUnicode_Replace(text, from, to, -1) : NULL;
        Py_XDECREF(from);
        Py_XDECREF(to);
        Py_DECREF(text);
        text = t;
    }
    return raise_text(s, text);
}

/* Raises the exception of status s with a PyUnicode_FromFormat message. */
static PyObject *fail(nnk_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *text = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    return raise_text(s, text);
}

/* A status -> -1 with the exception set, 0 for NNK_OK. */
static int check(nnk_status s)
{
    if (s == NNK_OK)
        return 0;
    raise_status(s);
    return -1;
}

/* A name (keyword, context, dtype) as a C string: one with a NUL character
 * would be cut there and name another ('s\0x' named s). */
static const char *name_utf8(PyObject *s)
{
    Py_ssize_t n;
    const char *c = PyUnicode_AsUTF8AndSize(s, &n);
    if (c && (Py_ssize_t)strlen(c) != n) {
        fail(NNK_EINVAL, "the name %R holds a NUL character", s);
        return NULL;
    }
    return c;
}

/* ---- dtypes ------------------------------------------------------------------- */

/* 'l' where long is 64 bits: numpy reads it as its int64 (np.int_), 'q' as
 * np.longlong, a look-alike type */
#define I64_FORMAT (sizeof(long) == 8 ? "l" : "q")
#define U64_FORMAT (sizeof(long) == 8 ? "L" : "Q")

/* numpy's name, the struct-module format of the buffer protocol (NULL: none,
 * bfloat16), the kind of the format's letter class, the DLPack code. */
#define NNK_PY_DTYPES(X)                          \
    X(NNK_BOOL, "bool", "?", 'b', kDLBool)        \
    X(NNK_I8, "int8", "b", 'i', kDLInt)           \
    X(NNK_I16, "int16", "h", 'i', kDLInt)         \
    X(NNK_I32, "int32", "i", 'i', kDLInt)         \
    X(NNK_I64, "int64", I64_FORMAT, 'i', kDLInt)  \
    X(NNK_U8, "uint8", "B", 'u', kDLUInt)         \
    X(NNK_U16, "uint16", "H", 'u', kDLUInt)       \
    X(NNK_U32, "uint32", "I", 'u', kDLUInt)       \
    X(NNK_U64, "uint64", U64_FORMAT, 'u', kDLUInt) \
    X(NNK_F16, "float16", "e", 'f', kDLFloat)     \
    X(NNK_BF16, "bfloat16", NULL, 'f', kDLBfloat) \
    X(NNK_F32, "float32", "f", 'f', kDLFloat)     \
    X(NNK_F64, "float64", "d", 'f', kDLFloat)     \
    X(NNK_C64, "complex64", "Zf", 'c', kDLComplex) \
    X(NNK_C128, "complex128", "Zd", 'c', kDLComplex)

static const struct {
    nnk_dtype dtype;
    const char *name, *format;
    char kind;
    uint8_t dl_code;
} dtype_table[NNK_DTYPE_COUNT] = {
#define X(t, n, f, k, c) [t] = {t, n, f, k, c},
    NNK_PY_DTYPES(X)
#undef X
};
/* one row per nnk_dtype (the designated initializers would leave a missing one zero) */
#define X(...) +1
_Static_assert(0 NNK_PY_DTYPES(X) == NNK_DTYPE_COUNT, "NNK_PY_DTYPES has a row for every nnk_dtype (types.def)");
#undef X

/* numpy spellings that nnk_dtype_parse reads otherwise (it follows NNabla,
 * where "float" is f32): in a dtype= argument they mean what numpy means. */
static const struct {
    const char *name;
    nnk_dtype dtype;
} numpy_alias[] = {
    {"float", NNK_F64}, {"double", NNK_F64}, {"float_", NNK_F64}, {"int", NNK_I64}, {"int_", NNK_I64},
    {"long", NNK_I64},  {"bool_", NNK_BOOL}, {"half", NNK_F16},   {"single", NNK_F32},
};

static PyObject *dtype_name_obj(nnk_dtype t)
{
    return PyUnicode_FromString((unsigned)t < NNK_DTYPE_COUNT ? dtype_table[t].name : "?");
}

static int dtype_from_name(const char *s, nnk_dtype *out)
{
    if (strncmp(s, "torch.", 6) == 0 || strncmp(s, "numpy.", 6) == 0)
        s += 6;
    for (int i = 0; i < NNK_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_table[i].name) == 0)
            return *out = (nnk_dtype)i, 0;
    for (size_t i = 0; i < sizeof numpy_alias / sizeof *numpy_alias; i++)
        if (strcmp(s, numpy_alias[i].name) == 0)
            return *out = numpy_alias[i].dtype, 0;
    if (nnk_dtype_parse(s, out) == NNK_OK)   /* f32, bf16, ... */
        return 0;
    fail(NNK_EDTYPE, "unknown dtype '%s' (numpy names as float32, or nnk's f32)", s);
    return -1;
}

static PyObject *numpy_name;   /* "numpy" */

/* A dtype argument: a name, a numpy dtype (its .name), a type (float, int,
 * bool, np.float32: its __name__), torch.float32 (its str()). */
static int dtype_arg(PyObject *o, nnk_dtype *out)
{
    PyObject *s = NULL;
    if (PyUnicode_Check(o)) {
        s = o;
        Py_INCREF(s);
    } else if (PyType_Check(o)) {
        s = PyObject_GetAttrString(o, "__name__");
    } else if (PyObject_HasAttrString(o, "name") && PyObject_HasAttrString(o, "itemsize")) {
        PyObject *bo = PyObject_GetAttrString(o, "byteorder");   /* numpy.dtype; torch's have none */
        int swapped = bo && PyUnicode_Check(bo) && PyUnicode_CompareWithASCIIString(bo, PY_LITTLE_ENDIAN ? ">" : "<") == 0;
        Py_XDECREF(bo);
        PyErr_Clear();
        if (swapped) {
            fail(NNK_EDTYPE, "dtype %R is not in the machine's byte order (nnk computes in native order)", o);
            return -1;
        }
        s = PyObject_GetAttrString(o, "name");
    } else {
        s = PyObject_Str(o);
    }
    if (!s)
        return -1;
    const char *c = PyUnicode_Check(s) ? name_utf8(s) : NULL;
    if (!c) {
        Py_DECREF(s);
        if (!PyErr_Occurred())
            fail(NNK_EDTYPE, "not a dtype: %R", o);
        return -1;
    }
    int r = dtype_from_name(c, out);
    Py_DECREF(s);
    if (r < 0 && !PyType_Check(o)) {
        /* what numpy.dtype() reads ('f4', '<i8', 'd', np.dtype('=f2')), when
         * numpy is loaded and the order is the machine's (the names above
         * are numpy's own, so a name numpy knows means what it means there) */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);   /* dtype_from_name's error, raised if numpy does not know o either */
        PyObject *np = PyImport_GetModule(numpy_name);
        PyObject *d = np ? PyObject_CallMethod(np, "dtype", "O", o) : NULL;
        Py_XDECREF(np);
        PyObject *bo = d ? PyObject_GetAttrString(d, "byteorder") : NULL;
        PyObject *nm = bo && PyUnicode_Check(bo) && PyUnicode_GetLength(bo) == 1 &&
                               strchr(PY_LITTLE_ENDIAN ? "=|<" : "=|>", (int)PyUnicode_READ_CHAR(bo, 0))
                           ? PyObject_GetAttrString(d, "name") : NULL;
        const char *n = nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8(nm) : NULL;
        nnk_dtype t;
        int ok = 0;
        if (n) {
            for (int i = 0; i < NNK_DTYPE_COUNT && !ok; i++)
                if (strcmp(n, dtype_table[i].name) == 0)
                    t = (nnk_dtype)i, ok = 1;
        }
        Py_XDECREF(d);
        Py_XDECREF(bo);
        Py_XDECREF(nm);
        PyErr_Clear();
        if (ok) {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            *out = t;
            return 0;
        }
        PyErr_Restore(et, ev, tb);
    }
    return r;
}

/* The dtype of a buffer: the letter's class and the item size decide, so that
 * both native ('l') and standard ('<l', 4 bytes) sizes come out right. */
static int buffer_dtype(const Py_buffer *v, nnk_dtype *out)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    else if (*f == '>' || *f == '!') {
        fail(NNK_EDTYPE, "big-endian buffer format '%s' is not supported", v->format);
        return -1;
    }
    char kind = 0;
    if (f[0] && !f[1]) {
        if (strchr("bhilqn", f[0]))
            kind = 'i';
        else if (strchr("BHILQN", f[0]))
            kind = 'u';
        else if (strchr("efd", f[0]))
            kind = 'f';
        else if (f[0] == '?')
            kind = 'b';
    } else if (f[0] == 'Z' && strchr("fd", f[1]) && !f[2]) {
        kind = 'c'; /* the struct module's complex: Zf, Zd */
    }
    for (int i = 0; kind && i < NNK_DTYPE_COUNT; i++) {
        if (dtype_table[i].kind == kind && dtype_table[i].format && (Py_ssize_t)nnk_dtype_size((nnk_dtype)i) == v->itemsize) {
            *out = (nnk_dtype)i;
            return 0;
        }
    }
    fail(NNK_EDTYPE,
         "buffer format '%s' (item size %zd) has no nnk dtype (bool, int8-64, uint8-64, float16/32/64, complex64/128)",
         v->format ? v->format : "B", v->itemsize);
    return -1;
}

static int dl_dtype(DLDataType t, nnk_dtype *out)
{
    if (t.lanes == 1) {
        for (int i = 0; i < NNK_DTYPE_COUNT; i++) {
            if (dtype_table[i].dl_code == t.code && nnk_dtype_size((nnk_dtype)i) * 8 == t.bits) {
                *out = (nnk_dtype)i;
                return 0;
            }
        }
    }
    fail(NNK_EDTYPE, "DLPack dtype (code %d, %d bits, %d lanes) has no nnk dtype", t.code, t.bits, t.lanes);
    return -1;
}

/* ---- numpy -------------------------------------------------------------------------- */

/* Found once numpy is in sys.modules: an object can only be a numpy array
 * when numpy has been imported, so the module never imports it to decide. */
static PyObject *np_ndarray, *np_generic, *np_asarray;

static PyObject *numpy_name;

/* numpy's C API without its headers: the function table numpy publishes
 * in the _ARRAY_API capsule, indexed as numpy's own headers index it (the
 * slots are numpy's ABI, the same in numpy 1.x and 2.x), and the leading
 * fields of its array and dtype structs (PyArrayObject_fields,
 * PyArray_Descr: also unchanged between 1.x and 2.x).  Both are checked
 * against the buffer protocol once, on a real array, and left unused when
 * anything differs (or with NNK_PY_NUMPY_API=0): numpy.asarray and the
 * buffer protocol are the slower path that always works. */
enum { NP_API_NDARRAY = 2, NP_API_DESCR_FROM_TYPE = 45, NP_API_NEW_FROM_DESCR = 94, NP_API_SET_BASE = 282 };
enum { NP_WRITEABLE = 0x0400 };

typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} np_array_head;

typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind, type, byteorder, former_flags;
    int type_num;
} np_descr_head;

typedef PyObject *(*np_descr_from_type_fn)(int);
typedef PyObject *(*np_new_from_descr_fn)(PyTypeObject *, PyObject *, int, const Py_ssize_t *, const Py_ssize_t *,
                                          void *, int, PyObject *);
typedef int (*np_set_base_fn)(PyObject *, PyObject *);

static void **np_api;      /* NULL: numpy.asarray for results */
static int np_fields_ok;   /* the struct heads read right: numpy inputs without PyObject_GetBuffer */

/* numpy's type numbers of the nnk dtypes (NPY_BOOL = 0 ... NPY_HALF = 23); -1: none */
static const int np_typenum[NNK_DTYPE_COUNT] = {
    [NNK_BOOL] = 0, [NNK_I8] = 1,  [NNK_U8] = 2,   [NNK_I16] = 3,   [NNK_U16] = 4,  [NNK_I32] = 5,  [NNK_U32] = 6,
    [NNK_F16] = 23, [NNK_BF16] = -1, [NNK_F32] = 11, [NNK_F64] = 12, [NNK_C64] = 14, [NNK_C128] = 15,
    /* NPY_LONG where it is 64 bits: numpy's int64 is then long, and its
     * arrays' dtype.type is np.int64 (NPY_LONGLONG's would be np.longlong) */
    [NNK_I64] = sizeof(long) == 8 ? 7 : 9, [NNK_U64] = sizeof(long) == 8 ? 8 : 10,
};

static int np_dtype_of(int type_num, nnk_dtype *out)
{
    if (type_num == 7 || type_num == 8) {   /* NPY_LONG, NPY_ULONG */
        if (sizeof(long) != 8 && sizeof(long) != 4)
            return -1;
        *out = type_num == 7 ? (sizeof(long) == 8 ? NNK_I64 : NNK_I32) : (sizeof(long) == 8 ? NNK_U64 : NNK_U32);
        return 0;
    }
    for (int i = 0; i < NNK_DTYPE_COUNT; i++)
        if (np_typenum[i] == type_num && type_num >= 0)
            return *out = (nnk_dtype)i, 0;
    return -1;
}

static void numpy_api_check(void)
{
    const char *env = getenv("NNK_PY_NUMPY_API");
    if (env && strcmp(env, "0") == 0)
        return;
    const char *mods[] = {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"};
    void **api = NULL;
    for (size_t i = 0; !api && i < 2; i++) {
        PyObject *m = PyImport_ImportModule(mods[i]);
        PyObject *cap = m ? PyObject_GetAttrString(m, "_ARRAY_API") : NULL;
        if (cap && PyCapsule_CheckExact(cap))
            api = PyCapsule_GetPointer(cap, NULL);
        Py_XDECREF(cap);
        Py_XDECREF(m);
        PyErr_Clear();
    }
    if (!api || api[NP_API_NDARRAY] != (void *)np_ndarray || !api[NP_API_DESCR_FROM_TYPE] ||
        !api[NP_API_NEW_FROM_DESCR] || !api[NP_API_SET_BASE])
        return;
    /* an array made through the table must read back through the buffer
     * protocol as made, and its struct heads as the buffer says */
    float data[6] = {0};
    Py_ssize_t dims[2] = {2, 3}, strides[2] = {4, 8};
    PyObject *descr = ((np_descr_from_type_fn)api[NP_API_DESCR_FROM_TYPE])(11);
    PyObject *a = descr ? ((np_new_from_descr_fn)api[NP_API_NEW_FROM_DESCR])((PyTypeObject *)np_ndarray, descr, 2,
                                                                             dims, strides, data, NP_WRITEABLE, NULL)
                        : NULL;
    Py_buffer v;
    if (a && PyObject_GetBuffer(a, &v, PyBUF_RECORDS) == 0) {
        int ok = v.buf == (void *)data && v.ndim == 2 && v.shape[0] == 2 && v.shape[1] == 3 && v.strides[0] == 4 &&
                 v.strides[1] == 8 && v.itemsize == 4 && v.format && strcmp(v.format, "f") == 0 && !v.readonly;
        if (ok)
            np_api = api;
        np_array_head *h = (np_array_head *)a;
        np_descr_head *d = (np_descr_head *)h->descr;
        np_fields_ok = ok && h->data == (char *)data && h->nd == 2 && h->dimensions[0] == 2 &&
                       h->dimensions[1] == 3 && h->strides[0] == 4 && h->strides[1] == 8 && (h->flags & NP_WRITEABLE) &&
                       d && d->type_num == 11 && d->kind == 'f' && d->type == 'f';
        PyBuffer_Release(&v);
    }
    Py_XDECREF(a);
    PyErr_Clear();
}

static int numpy_lookup(void)
{
    if (np_ndarray)
        return 1;
    PyObject *np = PyImport_GetModule(numpy_name);
    if (!np) {
        PyErr_Clear();
        return 0;
    }
    PyObject *nd = PyObject_GetAttrString(np, "ndarray");
    PyObject *gen = PyObject_GetAttrString(np, "generic");
    PyObject *asa = PyObject_GetAttrString(np, "asarray");
    Py_DECREF(np);
    if (!nd || !gen || !asa || !PyType_Check(nd) || !PyType_Check(gen)) {
        Py_XDECREF(nd);
        Py_XDECREF(gen);
        Py_XDECREF(asa);
        PyErr_Clear();
        return 0;
    }
    np_ndarray = nd;
    np_generic = gen;
    np_asarray = asa;
    numpy_api_check();
    return 1;
}

static int is_numpy_array(PyObject *o)
{
    return numpy_lookup() && PyObject_TypeCheck(o, (PyTypeObject *)np_ndarray);
}

static int is_numpy_scalar(PyObject *o)
{
    return numpy_lookup() && PyObject_TypeCheck(o, (PyTypeObject *)np_generic);
}

/* ---- Context ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    nnk_context *ctx;
} ContextObject;

static PyObject *context_wrap(nnk_context *c)
{
    ContextObject *o = PyObject_New(ContextObject, &ContextType);
    if (!o) {
        nnk_context_free(c);
        return NULL;
    }
    o->ctx = c;
    return (PyObject *)o;
}

static void context_dealloc(ContextObject *o)
{
    nnk_context_free(o->ctx);
    PyObject_Free(o);
}

static PyObject *context_str(ContextObject *o) { return PyUnicode_FromString(nnk_context_str(o->ctx)); }

static PyObject *context_repr(ContextObject *o) { return PyUnicode_FromFormat("nnk.Context(%s)", nnk_context_str(o->ctx)); }

static PyObject *context_backend(ContextObject *o, void *closure)
{
    int32_t n = nnk_context_backend_count(o->ctx);
    PyObject *l = PyList_New(n);
    for (int32_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(nnk_context_backend(o->ctx, i));
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *context_device_id(ContextObject *o, void *closure)
{
    return PyUnicode_FromFormat("%d", (int)nnk_context_device_id(o->ctx));   /* a string, as NNabla's */
}

static PyObject *context_type_config(ContextObject *o, void *closure)
{
    return PyUnicode_FromString(nnk_context_type_config_name(o->ctx));
}

static PyObject *context_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!PyObject_TypeCheck(b, &ContextType) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    int eq = strcmp(nnk_context_str(((ContextObject *)a)->ctx), nnk_context_str(((ContextObject *)b)->ctx)) == 0;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t context_hash(ContextObject *o)
{
    PyObject *s = context_str(o);
    if (!s)
        return -1;
    Py_hash_t h = PyObject_Hash(s);
    Py_DECREF(s);
    return h;
}

static PyGetSetDef context_getset[] = {
    {"backend", (getter)context_backend, NULL, "backend priority list, best first (NNabla's ctx.backend)", NULL},
    {"device_id", (getter)context_device_id, NULL, "device id, a string as NNabla's", NULL},
    {"type_config", (getter)context_type_config, NULL, "'float', 'half' or 'mixed_half'", NULL},
    {0},
};

/* A context is immutable: copy.copy and copy.deepcopy give it back (NNabla
 * scripts copy the default context before they change a copy's fields). */
static PyObject *context_copy(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyMethodDef context_methods[] = {
    {"__copy__", context_copy, METH_NOARGS, "the context itself (contexts are immutable)"},
    {"__deepcopy__", context_copy, METH_O, "the context itself (contexts are immutable)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk.Context",
    .tp_methods = context_methods,
    .tp_basicsize = sizeof(ContextObject),
    .tp_dealloc = (destructor)context_dealloc,
    .tp_repr = (reprfunc)context_repr,
    .tp_str = (reprfunc)context_str,
    .tp_hash = (hashfunc)context_hash,
    .tp_richcompare = context_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Where work runs: a backend list, a device id, a type_config (nnk_context).\n"
              "Made by ext_utils.get_extension_context() or an extension's context().",
    .tp_getset = context_getset,
};

/* A context argument: None (NULL: the default context), a Context, or an
 * extension name ("cpu").  *hold gets a reference to free. */
static int context_arg(PyObject *o, const nnk_context **out, PyObject **hold)
{
    *hold = NULL;
    *out = NULL;
    if (!o || o == Py_None)
        return 0;
    if (PyObject_TypeCheck(o, &ContextType)) {
        *out = ((ContextObject *)o)->ctx;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        const char *name = name_utf8(o);
        nnk_context *c;
        if (!name || check(nnk_get_extension_context(name, NULL, &c)) < 0)
            return -1;
        if (!(*hold = context_wrap(c)))
            return -1;
        *out = c;
        return 0;
    }
    fail(NNK_EINVAL, "ctx: expected an nnk.Context, an extension name or None, got %.100s", Py_TYPE(o)->tp_name);
    return -1;
}

/* ---- kw strings ---------------------------------------------------------------------- */

/* Python keywords -> libnnk's "key=value ..." string (nnk_get_extension_context,
 * compile options).  The kw syntax has no quoting, so values holding a
 * separator are refused here rather than split there. */
static int kw_value(PyObject *v, PyObject **out)
{
    if (v == Py_True || v == Py_False) {
        *out = PyUnicode_FromString(v == Py_True ? "true" : "false");
    } else if (PyFloat_Check(v)) {
        char *s = PyOS_double_to_string(PyFloat_AS_DOUBLE(v), 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (!s)
            return -1;
        *out = PyUnicode_FromString(s);
        PyMem_Free(s);
    } else if (PyComplex_Check(v)) {
        /* "RE+IMj", each part round-tripping (jitfn.c reads it back) */
        Py_complex z = PyComplex_AsCComplex(v);
        char *re = PyOS_double_to_string(z.real, 'r', 0, 0, NULL);
        char *im = PyOS_double_to_string(z.imag, 'r', 0, Py_DTSF_SIGN, NULL);
        *out = re && im ? PyUnicode_FromFormat("%s%sj", re, im) : NULL;
        PyMem_Free(re);
        PyMem_Free(im);
    } else if (PyUnicode_Check(v)) {
        *out = v;
        Py_INCREF(v);
    } else if (PyLong_Check(v) || PyIndex_Check(v)) {
        PyObject *i = PyNumber_Index(v);
        *out = i ? PyObject_Str(i) : NULL;
        Py_XDECREF(i);
    } else if (is_numpy_scalar(v)) {
        PyObject *item = PyObject_CallMethod(v, "item", NULL);
        if (!item)
            return -1;
        int r = is_numpy_scalar(item) ? (fail(NNK_EINVAL, "unsupported value %R", v), -1) : kw_value(item, out);
        Py_DECREF(item);
        return r;
    } else {
        fail(NNK_EINVAL, "keyword value %R: expected a string, a number or a bool", v);
        return -1;
    }
    return *out ? 0 : -1;
}

static char *kw_string(PyObject *dict)
{
    PyObject *parts = PyList_New(0);
    if (!parts)
        return NULL;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    char *result = NULL;
    while (dict && PyDict_Next(dict, &pos, &key, &value)) {
        if (value == Py_None)
            continue;   /* an omitted option, as NNabla's defaults */
        const char *k = PyUnicode_Check(key) ? name_utf8(key) : NULL;
        if (!k)
            goto done;
        int ok = (k[0] == '_' || (k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z'));
        for (const char *p = k; ok && *p; p++)
            ok = *p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!ok) {
            fail(NNK_EINVAL, "bad keyword name %R", key);
            goto done;
        }
        PyObject *vs;
        if (kw_value(value, &vs) < 0)
            goto done;
        Py_ssize_t n;
        const char *v = PyUnicode_AsUTF8AndSize(vs, &n);
        if (!v || n == 0 || memchr(v, 0, (size_t)n)) {
            if (v)
                fail(NNK_EINVAL, "keyword '%s': the value %R is empty or holds a NUL character", k, vs);
            Py_DECREF(vs);
            goto done;
        }
        /* separators and backslashes escaped with a backslash (runtime/kw.c):
         * a directory with a space in its name is a value like any other */
        char *esc = PyMem_Malloc(2 * (size_t)n + 1);
        if (!esc) {
            Py_DECREF(vs);
            PyErr_NoMemory();
            goto done;
        }
        size_t m = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (strchr(" \t\n,\\", v[i]))
                esc[m++] = '\\';
            esc[m++] = v[i];
        }
        esc[m] = 0;
        PyObject *pair = PyUnicode_FromFormat("%s=%s", k, esc);
        PyMem_Free(esc);
        Py_DECREF(vs);
        if (!pair || PyList_Append(parts, pair) < 0) {
            Py_XDECREF(pair);
            goto done;
        }
        Py_DECREF(pair);
    }
    PyObject *sep = PyUnicode_FromString(" ");
    PyObject *joined = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    if (joined) {
        const char *s = PyUnicode_AsUTF8(joined);
        if (s && (result = PyMem_Malloc(strlen(s) + 1)))
            strcpy(result, s);
        else if (s)
            PyErr_NoMemory();
        Py_DECREF(joined);
    }
done:
    Py_DECREF(parts);
    return result;
}

/* ---- Extension ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    nnk_extension *ext;   /* owned by the runtime */
} ExtensionObject;

static PyObject *extension_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    const char *name;
    static char *kwlist[] = {"name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s:Extension", kwlist, &name))
        return NULL;
    nnk_extension *ext;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_import_extension(name, &ext);   /* dlopen and init may take a while */
    Py_END_ALLOW_THREADS
    if (s)
        return raise_status(s);
    ExtensionObject *o = (ExtensionObject *)type->tp_alloc(type, 0);
    if (o)
        o->ext = ext;
    return (PyObject *)o;
}

static PyObject *extension_name(ExtensionObject *o, void *c) { return PyUnicode_FromString(nnk_extension_name(o->ext)); }
static PyObject *extension_status(ExtensionObject *o, void *c) { return PyUnicode_FromString(nnk_extension_status(o->ext)); }

static PyObject *extension_context(ExtensionObject *o, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) > 0)
        return fail(NNK_EINVAL, "context() takes keyword arguments only (device_id=..., type_config=...)");
    char *kw = kw_string(kwds);
    if (!kw)
        return NULL;
    nnk_context *c;
    nnk_status s = nnk_extension_context(o->ext, kw, &c);
    PyMem_Free(kw);
    return s ? raise_status(s) : context_wrap(c);
}

/* A device argument: an int or NNabla's string id ('0'). */
static int device_arg(PyObject *v, int32_t *out)
{
    long d;
    int overflow = 0;
    if (PyUnicode_Check(v)) {
        PyObject *i = PyLong_FromUnicodeObject(v, 10);
        if (!i) {
            PyErr_Clear();
            fail(NNK_EINVAL, "device %R is not an integer", v);
            return -1;
        }
        d = PyLong_AsLongAndOverflow(i, &overflow);
        Py_DECREF(i);
    } else {
        d = PyLong_AsLongAndOverflow(v, &overflow);
    }
    if (d == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        fail(NNK_EINVAL, "device %R is not an integer", v);
        return -1;
    }
    /* an integer too large for a long is out of range too, not "not an integer" */
    if (overflow || d < 0 || d > INT32_MAX) {
        fail(NNK_EINVAL, "device %R out of range", v);
        return -1;
    }
    *out = (int32_t)d;
    return 0;
}

static PyObject *extension_device_synchronize(ExtensionObject *o, PyObject *args, PyObject *kwds)
{
    PyObject *dev = NULL;
    static char *kwlist[] = {"device", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:device_synchronize", kwlist, &dev))
        return NULL;
    int32_t d = 0;
    if (dev && dev != Py_None && device_arg(dev, &d) < 0)
        return NULL;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_extension_device_synchronize(o->ext, d);
    Py_END_ALLOW_THREADS
    if (s)
        return raise_status(s);
    Py_RETURN_NONE;
}

static PyObject *extension_get_device_count(ExtensionObject *o, PyObject *unused)
{
    int32_t n;
    if (check(nnk_extension_get_device_count(o->ext, &n)) < 0)
        return NULL;
    return PyLong_FromLong(n);
}

static PyObject *utf8(char *s, size_t cap)
{
    s[cap - 1] = 0;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* [(id, name, total_memory, host_accessible, vendor, driver_version,
 * unified_memory), ...] (nnk_extension_get_device_props): ext_utils turns
 * them into DeviceInfo strings. */
static PyObject *extension_device_info(ExtensionObject *o, PyObject *unused)
{
    int32_t n;
    if (check(nnk_extension_get_device_count(o->ext, &n)) < 0)
        return NULL;
    PyObject *l = PyList_New(n > 0 ? n : 0);
    for (int32_t i = 0; l && i < n; i++) {
        nnk_device_props p;
        memset(&p, 0, sizeof p);
        p.size = sizeof p;
        if (check(nnk_extension_get_device_props(o->ext, i, &p)) < 0) {
            Py_CLEAR(l);
            break;
        }
        PyObject *t = Py_BuildValue("(iNKONNO)", (int)p.id, utf8(p.name, sizeof p.name),
                                    (unsigned long long)p.total_memory, p.host_accessible ? Py_True : Py_False,
                                    utf8(p.vendor, sizeof p.vendor), utf8(p.driver_version, sizeof p.driver_version),
                                    p.unified_memory < 0 ? Py_None : p.unified_memory ? Py_True : Py_False);
        if (!t) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

static PyObject *extension_clear_memory_cache(ExtensionObject *o, PyObject *unused)
{
    uint64_t released = 0;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_extension_clear_memory_cache(o->ext, &released);
    Py_END_ALLOW_THREADS
    if (s)
        return raise_status(s);
    return PyLong_FromUnsignedLongLong(released);
}

static PyObject *extension_memory_stats(ExtensionObject *o, PyObject *args, PyObject *kwds)
{
    PyObject *dev = NULL;
    static char *kwlist[] = {"device", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:memory_stats", kwlist, &dev))
        return NULL;
    int32_t d = 0;
    if (dev && dev != Py_None && device_arg(dev, &d) < 0)
        return NULL;
    nnk_memory_stats st;
    if (check(nnk_extension_memory_stats(o->ext, d, &st)) < 0)
        return NULL;
    return Py_BuildValue("{sKsKsKsKsKsK}", "bytes_in_use", (unsigned long long)st.bytes_in_use, "bytes_cached",
                         (unsigned long long)st.bytes_cached, "peak_bytes_in_use", (unsigned long long)st.peak_bytes_in_use,
                         "hits", (unsigned long long)st.hits, "misses", (unsigned long long)st.misses, "retries",
                         (unsigned long long)st.retries);
}

static PyObject *extension_repr(ExtensionObject *o)
{
    return PyUnicode_FromFormat("<nnk extension '%s'>", nnk_extension_name(o->ext));
}

static PyMethodDef extension_methods[] = {
    {"context", (PyCFunction)(void (*)(void))extension_context, METH_VARARGS | METH_KEYWORDS,
     "context(**kw): a Context of this extension (device_id=..., type_config=...)"},
    {"device_synchronize", (PyCFunction)(void (*)(void))extension_device_synchronize, METH_VARARGS | METH_KEYWORDS,
     "device_synchronize(device=0): waits for the work queued on the device"},
    {"get_device_count", (PyCFunction)extension_get_device_count, METH_NOARGS, "the number of devices"},
    {"_device_info", (PyCFunction)extension_device_info, METH_NOARGS,
     "[(id, name, total_memory, host_accessible), ...]"},
    {"clear_memory_cache", (PyCFunction)extension_clear_memory_cache, METH_NOARGS,
     "releases the cached free blocks of every device; returns the bytes released"},
    {"memory_stats", (PyCFunction)(void (*)(void))extension_memory_stats, METH_VARARGS | METH_KEYWORDS,
     "memory_stats(device=0): the caching allocator's statistics as a dict"},
    {0},
};

static PyGetSetDef extension_getset[] = {
    {"name", (getter)extension_name, NULL, "the extension's name", NULL},
    {"status", (getter)extension_status, NULL, "the extension's line on its devices ('' when none)", NULL},
    {0},
};

static PyTypeObject ExtensionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk.Extension",
    .tp_basicsize = sizeof(ExtensionObject),
    .tp_repr = (reprfunc)extension_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Extension(name): a loaded nnk extension (nnk_extension)",
    .tp_methods = extension_methods,
    .tp_getset = extension_getset,
    .tp_new = extension_new,
};

/* Whether arrays of (ext, device) live in host memory (the buffer protocol
 * and numpy views need it).  Wrapped memory has no extension: host. */
static int memory_is_host(nnk_extension *ext, int32_t device)
{
    static nnk_extension *cpu;
    if (!ext || ext == cpu)
        return 1;
    const char *name = nnk_extension_name(ext);
    if (name && strcmp(name, "cpu") == 0) {
        cpu = ext;
        return 1;
    }
    int32_t n = 0;
    if (device < 0 || nnk_extension_get_device_count(ext, &n) != NNK_OK || device >= n)
        return 0;
    nnk_device_info *info = PyMem_Calloc((size_t)device + 1, sizeof *info);
    int host = 0, count = 0;
    if (info && nnk_extension_get_devices(ext, info, device + 1, &count) == NNK_OK)
        host = info[device].host_accessible != 0;
    PyMem_Free(info);
    return host;
}

/* ---- Array ---------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    nnk_array *a;
    PyObject *owner;   /* what keeps wrapped memory alive (a buffer holder, a DLPack owner), or NULL */
    int readonly;
    int host;          /* the data is host memory */
    int ndim;
    Py_ssize_t shape[NNK_MAX_DIMS], strides[NNK_MAX_DIMS];   /* for the buffer protocol: bytes */
} ArrayObject;

/* Takes a and owner (references stolen). */
static PyObject *array_wrap(nnk_array *a, PyObject *owner, int readonly)
{
    ArrayObject *o = PyObject_New(ArrayObject, &ArrayType);
    if (!o) {
        nnk_array_free(a);
        Py_XDECREF(owner);
        return NULL;
    }
    o->a = a;
    o->owner = owner;
    o->readonly = readonly;
    o->ndim = nnk_array_ndim(a);
    o->host = memory_is_host(nnk_array_extension(a), nnk_array_device(a));
    const int64_t *sh = nnk_array_shape(a), *st = nnk_array_strides(a);
    Py_ssize_t item = (Py_ssize_t)nnk_dtype_size(nnk_array_dtype(a));
    for (int d = 0; d < o->ndim; d++) {
        o->shape[d] = (Py_ssize_t)sh[d];
        o->strides[d] = (Py_ssize_t)st[d] * item;
    }
    return (PyObject *)o;
}

static void array_dealloc(ArrayObject *o)
{
    nnk_array_free(o->a);
    Py_XDECREF(o->owner);
    PyObject_Free(o);
}

static PyObject *tuple_of(int n, const int64_t *v, int64_t scale)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i] * scale);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static int64_t array_itemsize(ArrayObject *o) { return (int64_t)nnk_dtype_size(nnk_array_dtype(o->a)); }

static PyObject *array_shape(ArrayObject *o, void *c) { return tuple_of(o->ndim, nnk_array_shape(o->a), 1); }
static PyObject *array_strides(ArrayObject *o, void *c)
{
    return tuple_of(o->ndim, nnk_array_strides(o->a), array_itemsize(o));
}
static PyObject *array_dtype(ArrayObject *o, void *c) { return dtype_name_obj(nnk_array_dtype(o->a)); }
static PyObject *array_ndim(ArrayObject *o, void *c) { return PyLong_FromLong(o->ndim); }
static PyObject *array_size(ArrayObject *o, void *c) { return PyLong_FromLongLong(nnk_array_size(o->a)); }
static PyObject *array_itemsize_get(ArrayObject *o, void *c) { return PyLong_FromLongLong(array_itemsize(o)); }
static PyObject *array_nbytes(ArrayObject *o, void *c)
{
    return PyLong_FromLongLong(nnk_array_size(o->a) * array_itemsize(o));
}
static PyObject *array_readonly(ArrayObject *o, void *c) { return PyBool_FromLong(o->readonly); }

static PyObject *array_device(ArrayObject *o, void *c)
{
    nnk_extension *e = nnk_array_extension(o->a);
    if (!e)
        return PyUnicode_FromString("host");
    return PyUnicode_FromFormat("%s:%d", nnk_extension_name(e), (int)nnk_array_device(o->a));
}

static PyObject *array_repr(ArrayObject *o)
{
    PyObject *shape = array_shape(o, NULL), *dev = array_device(o, NULL);
    PyObject *r = NULL;
    if (shape && dev)
        r = PyUnicode_FromFormat("nnk.Array(shape=%R, dtype=%s, device=%U%s)", shape,
                                 dtype_table[nnk_array_dtype(o->a)].name, dev, o->readonly ? ", readonly" : "");
    Py_XDECREF(shape);
    Py_XDECREF(dev);
    return r;
}

static Py_ssize_t array_len(ArrayObject *o)
{
    if (o->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d nnk.Array");
        return -1;
    }
    return o->shape[0];
}

/* The buffer protocol, for host memory: numpy views (np.asarray) and
 * memoryview read and write nnk's memory in place. */
static char zero_size_data;

static int array_getbuffer(ArrayObject *o, Py_buffer *view, int flags)
{
    nnk_dtype t = nnk_array_dtype(o->a);
    if (!o->host) {
        PyErr_Format(PyExc_BufferError, "nnk.Array on device %s is not in host memory: use .numpy() or .to('cpu')",
                     nnk_extension_name(nnk_array_extension(o->a)));
        return -1;
    }
    if (!dtype_table[t].format) {
        PyErr_Format(PyExc_BufferError, "%s has no buffer format: convert first (.to(dtype='float32'))",
                     dtype_table[t].name);
        return -1;
    }
    if ((flags & PyBUF_WRITABLE) && o->readonly) {
        PyErr_SetString(PyExc_BufferError, "nnk.Array is read-only");
        return -1;
    }
    /* a request for contiguity (C, F or any) or without strides needs a
     * C-contiguous array; F only when at most one axis is longer than 1 */
    int contiguous = nnk_array_is_contiguous(o->a);
    int want_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    int want_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS;
    int want_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS;
    int want_any = (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
    if (!contiguous && (!want_strides || want_c || want_f || want_any)) {
        PyErr_SetString(PyExc_BufferError, "nnk.Array is not C-contiguous");
        return -1;
    }
    if (want_f && !want_c && !want_any) {
        int nontrivial = 0;
        for (int d = 0; d < o->ndim; d++)
            nontrivial += o->shape[d] > 1;
        if (nontrivial > 1) {
            PyErr_SetString(PyExc_BufferError, "nnk.Array is C-ordered, not Fortran-contiguous");
            return -1;
        }
    }
    void *data = nnk_array_data(o->a);
    view->buf = data ? data : &zero_size_data;
    view->obj = (PyObject *)o;
    Py_INCREF(o);
    view->itemsize = (Py_ssize_t)nnk_dtype_size(t);
    view->len = (Py_ssize_t)nnk_array_size(o->a) * view->itemsize;
    view->readonly = o->readonly;
    view->format = (flags & PyBUF_FORMAT) ? (char *)dtype_table[t].format : NULL;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? o->shape : NULL;
    view->ndim = view->shape ? o->ndim : 1;   /* without a shape: bytes, as PyBuffer_FillInfo */
    view->strides = want_strides ? o->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs array_as_buffer = {(getbufferproc)array_getbuffer, NULL};

/* A numpy array over the memory of an nnk.Array in host memory, which it
 * keeps alive (its base). */
static PyObject *numpy_view(PyObject *arr)
{
    ArrayObject *o = (ArrayObject *)arr;
    int tn = np_typenum[nnk_array_dtype(o->a)];
    if (!np_api || tn < 0)
        return PyObject_CallOneArg(np_asarray, arr);   /* the buffer protocol */
    PyObject *descr = ((np_descr_from_type_fn)np_api[NP_API_DESCR_FROM_TYPE])(tn);
    if (!descr)
        return NULL;
    void *data = nnk_array_data(o->a);
    PyObject *r = ((np_new_from_descr_fn)np_api[NP_API_NEW_FROM_DESCR])(
        (PyTypeObject *)np_ndarray, descr, o->ndim, o->shape, o->strides, data ? data : &zero_size_data,
        o->readonly ? 0 : NP_WRITEABLE, NULL);
    if (!r)
        return NULL;
    Py_INCREF(arr);
    if (((np_set_base_fn)np_api[NP_API_SET_BASE])(r, arr) < 0) {   /* steals arr, also on failure */
        Py_DECREF(r);
        return NULL;
    }
    return r;
}

/* numpy view over host memory; a copy through the host for device memory. */
static PyObject *array_to_numpy_view(PyObject *arr)
{
    if (!numpy_lookup()) {
        PyObject *np = PyImport_ImportModule("numpy");
        if (!np)
            return NULL;
        Py_DECREF(np);
        if (!numpy_lookup())
            return fail(NNK_EINTERNAL, "numpy has no ndarray");
    }
    return numpy_view(arr);
}

static PyObject *array_to_impl(ArrayObject *o, const nnk_context *ctx, nnk_dtype t)
{
    nnk_array *b;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_array_to(o->a, ctx, t, &b);
    Py_END_ALLOW_THREADS
    if (s)
        return raise_status(s);
    return array_wrap(b, NULL, 0);
}

static PyObject *array_numpy(ArrayObject *o, PyObject *unused)
{
    if (o->host && dtype_table[nnk_array_dtype(o->a)].format)
        return array_to_numpy_view((PyObject *)o);
    nnk_context *cpu;
    if (check(nnk_get_extension_context("cpu", NULL, &cpu)) < 0)
        return NULL;
    nnk_dtype t = nnk_array_dtype(o->a);
    PyObject *h = array_to_impl(o, cpu, t == NNK_BF16 ? NNK_F32 : t);
    nnk_context_free(cpu);
    if (!h)
        return NULL;
    PyObject *r = array_to_numpy_view(h);
    Py_DECREF(h);
    return r;
}

/* float(), int(), bool(), operator.index(), complex(), .item() and
 * .tolist() as numpy's, on .numpy() (a view of host memory, a copy of device
 * memory): a size-1 array converts, any other gets numpy's error.  Without
 * them float() and int() read the buffer protocol's bytes as text (an
 * ValueError, or a wrong number for uint8 digits) and bool() took len(). */
static PyObject *array_via_numpy(PyObject *o, PyObject *(*f)(PyObject *))
{
    PyObject *np = array_numpy((ArrayObject *)o, NULL);
    if (!np)
        return NULL;
    PyObject *r = f(np);
    Py_DECREF(np);
    return r;
}

static PyObject *array_float(PyObject *o) { return array_via_numpy(o, PyNumber_Float); }
static PyObject *array_int(PyObject *o) { return array_via_numpy(o, PyNumber_Long); }
static PyObject *array_index(PyObject *o) { return array_via_numpy(o, PyNumber_Index); }

static int array_bool(PyObject *o)
{
    PyObject *np = array_numpy((ArrayObject *)o, NULL);
    if (!np)
        return -1;
    int r = PyObject_IsTrue(np);
    Py_DECREF(np);
    return r;
}

static PyObject *array_numpy_method(PyObject *o, const char *name)
{
    PyObject *np = array_numpy((ArrayObject *)o, NULL);
    if (!np)
        return NULL;
    PyObject *r = PyObject_CallMethod(np, name, NULL);
    Py_DECREF(np);
    return r;
}

static PyObject *array_item(PyObject *o, PyObject *unused) { return array_numpy_method(o, "item"); }
static PyObject *array_tolist(PyObject *o, PyObject *unused) { return array_numpy_method(o, "tolist"); }
static PyObject *array_complex(PyObject *o, PyObject *unused) { return array_numpy_method(o, "__complex__"); }

static PyObject *array_to(ArrayObject *o, PyObject *args, PyObject *kwds)
{
    PyObject *ctxo = Py_None, *dto = Py_None;
    static char *kwlist[] = {"ctx", "dtype", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO:to", kwlist, &ctxo, &dto))
        return NULL;
    const nnk_context *ctx;
    PyObject *hold;
    nnk_dtype t = nnk_array_dtype(o->a);
    if ((dto != Py_None && dtype_arg(dto, &t) < 0) || context_arg(ctxo, &ctx, &hold) < 0)
        return NULL;
    PyObject *r = array_to_impl(o, ctx, t);
    Py_XDECREF(hold);
    return r;
}

/* copy.copy / copy.deepcopy: a copy of the elements on the same device, as
 * numpy's copy.copy(ndarray) is (.to() with no arguments). */
static PyObject *array_copy(ArrayObject *o, PyObject *unused)
{
    (void)unused;
    return array_to_impl(o, NULL, nnk_array_dtype(o->a));
}

/* DLPack export.  The capsule's tensor holds a reference to the Array (so
 * that wrapped memory's owner stays alive too); the deleter drops it. */
static void dl_release(PyObject *arr)
{
    if (!Py_IsInitialized())
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(arr);
    PyGILState_Release(g);
}

static void dl_deleter(DLManagedTensor *m)
{
    dl_release(m->manager_ctx);
    PyMem_RawFree(m);
}

static void dl_deleter_versioned(DLManagedTensorVersioned *m)
{
    dl_release(m->manager_ctx);
    PyMem_RawFree(m);
}

static void dl_capsule_destructor(PyObject *cap)
{
    /* a capsule nobody consumed still has its first name; an exception being
     * raised (the capsule dies on an error path) is kept */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter)
            m->deleter(m);
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter)
            m->deleter(m);
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

static DLDevice array_dl_device(ArrayObject *o)
{
    nnk_extension *e = nnk_array_extension(o->a);
    if (o->host)
        return (DLDevice){kDLCPU, 0};
    const char *n = nnk_extension_name(e);
    if (n && (strcmp(n, "cuda") == 0 || strcmp(n, "cudnn") == 0))
        return (DLDevice){kDLCUDA, nnk_array_device(o->a)};
    return (DLDevice){kDLExtDev, nnk_array_device(o->a)};
}

static PyObject *array_dlpack_device(ArrayObject *o, PyObject *unused)
{
    DLDevice d = array_dl_device(o);
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

static PyObject *array_dlpack(ArrayObject *o, PyObject *args, PyObject *kwds)
{
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    /* stream may come positionally from older consumers */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O$OOO:__dlpack__", kwlist, &stream, &max_version, &dl_device, &copy))
        return NULL;
    int versioned = 0;
    if (max_version != Py_None) {
        long major = -1;
        if (PyTuple_Check(max_version) && PyTuple_GET_SIZE(max_version) >= 1)
            major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred())
            return NULL;
        if (major < 0)
            return fail(NNK_EINVAL, "__dlpack__: max_version must be a (major, minor) tuple");
        versioned = major >= 1;
    }
    DLDevice dev = array_dl_device(o);
    if (dl_device != Py_None) {
        int dt, di;
        if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &dt, &di))
            return NULL;
        if (dt != (int)dev.device_type || di != dev.device_id) {
            PyErr_Format(PyExc_BufferError, "__dlpack__: the array is on DLPack device (%d, %d), not (%d, %d)",
                         (int)dev.device_type, (int)dev.device_id, dt, di);
            return NULL;
        }
    }
    int want_copy = copy != Py_None && PyObject_IsTrue(copy) == 1;
    if (dev.device_type == kDLExtDev) {
        PyErr_SetString(PyExc_BufferError, "__dlpack__: this extension's memory has no DLPack device type");
        return NULL;
    }
    if (o->readonly && !versioned && !want_copy) {
        /* the classic capsule cannot say read-only: refuse, as numpy does */
        PyErr_SetString(PyExc_BufferError, "__dlpack__: a read-only nnk.Array needs max_version >= (1, 0) (the "
                                           "read-only flag) or copy=True");
        return NULL;
    }
    PyObject *src = (PyObject *)o;
    Py_INCREF(src);
    if (want_copy) {
        Py_DECREF(src);
        if (!(src = array_to_impl(o, NULL, nnk_array_dtype(o->a))))
            return NULL;
    }
    if (!o->host) {
        /* consumers on any stream see finished data */
        nnk_status s;
        Py_BEGIN_ALLOW_THREADS
        s = nnk_extension_device_synchronize(nnk_array_extension(o->a), nnk_array_device(o->a));
        Py_END_ALLOW_THREADS
        if (s) {
            Py_DECREF(src);
            return raise_status(s);
        }
    }
    ArrayObject *so = (ArrayObject *)src;
    DLTensor t = {
        .data = nnk_array_data(so->a),
        .device = dev,
        .ndim = so->ndim,
        .dtype = {dtype_table[nnk_array_dtype(so->a)].dl_code, (uint8_t)(8 * array_itemsize(so)), 1},
        .shape = (int64_t *)nnk_array_shape(so->a),     /* live as long as the array: the tensor holds it */
        .strides = (int64_t *)nnk_array_strides(so->a),
        .byte_offset = 0,
    };
    if (!t.data)
        t.data = &zero_size_data;
    PyObject *cap;
    if (versioned) {
        DLManagedTensorVersioned *m = PyMem_RawCalloc(1, sizeof *m);
        if (!m) {
            Py_DECREF(src);
            return PyErr_NoMemory();
        }
        m->version = (DLPackVersion){DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
        m->manager_ctx = src;
        m->deleter = dl_deleter_versioned;
        m->flags = (so->readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0) | (want_copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
        m->dl_tensor = t;
        cap = PyCapsule_New(m, "dltensor_versioned", dl_capsule_destructor);
        if (!cap)
            dl_deleter_versioned(m);
    } else {
        DLManagedTensor *m = PyMem_RawCalloc(1, sizeof *m);
        if (!m) {
            Py_DECREF(src);
            return PyErr_NoMemory();
        }
        m->manager_ctx = src;
        m->deleter = dl_deleter;
        m->dl_tensor = t;
        cap = PyCapsule_New(m, "dltensor", dl_capsule_destructor);
        if (!cap)
            dl_deleter(m);
    }
    return cap;
}

static PyMethodDef array_methods[] = {
    {"numpy", (PyCFunction)array_numpy, METH_NOARGS,
     "a numpy array: a view over host memory (kept alive), a copy of device memory"},
    {"item", (PyCFunction)array_item, METH_NOARGS, "the one element as a Python number (numpy's item())"},
    {"tolist", (PyCFunction)array_tolist, METH_NOARGS, "nested lists of Python numbers (numpy's tolist())"},
    {"__complex__", (PyCFunction)array_complex, METH_NOARGS, "complex() of a size-1 array"},
    {"to", (PyCFunction)(void (*)(void))array_to, METH_VARARGS | METH_KEYWORDS,
     "to(ctx=None, dtype=None): a new C-contiguous copy on ctx's device (None: this device) in dtype"},
    {"__dlpack__", (PyCFunction)(void (*)(void))array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule (no copy)"},
    {"__dlpack_device__", (PyCFunction)array_dlpack_device, METH_NOARGS, "(DLPack device type, device id)"},
    {"__copy__", (PyCFunction)array_copy, METH_NOARGS, "a C-contiguous copy on the same device (.to())"},
    {"__deepcopy__", (PyCFunction)array_copy, METH_O, "a C-contiguous copy on the same device (.to())"},
    {0},
};

static PyGetSetDef array_getset[] = {
    {"shape", (getter)array_shape, NULL, "the shape, a tuple", NULL},
    {"dtype", (getter)array_dtype, NULL, "numpy's name of the dtype ('float32', 'bfloat16', ...)", NULL},
    {"strides", (getter)array_strides, NULL, "strides in bytes, as numpy's", NULL},
    {"ndim", (getter)array_ndim, NULL, "number of axes", NULL},
    {"size", (getter)array_size, NULL, "number of elements", NULL},
    {"itemsize", (getter)array_itemsize_get, NULL, "bytes per element", NULL},
    {"nbytes", (getter)array_nbytes, NULL, "size * itemsize", NULL},
    {"device", (getter)array_device, NULL, "'EXT:ID' of the memory, 'host' for wrapped host memory", NULL},
    {"readonly", (getter)array_readonly, NULL, "the memory came read-only (an out= refuses it)", NULL},
    {0},
};

static PySequenceMethods array_as_sequence = {.sq_length = (lenfunc)array_len};
static PyNumberMethods array_as_number = {
    .nb_bool = array_bool, .nb_int = array_int, .nb_float = array_float, .nb_index = array_index,
};

static PyTypeObject ArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk.Array",
    .tp_basicsize = sizeof(ArrayObject),
    .tp_dealloc = (destructor)array_dealloc,
    .tp_repr = (reprfunc)array_repr,
    .tp_as_number = &array_as_number,
    .tp_as_sequence = &array_as_sequence,
    .tp_as_buffer = &array_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An nnk array (nnk_array): host or device memory with shape, dtype and strides.\n"
              "Made by nnk.asarray(), nnk.empty(), nnk.zeros() and kernel calls; exports DLPack\n"
              "and, in host memory, the buffer protocol.",
    .tp_methods = array_methods,
    .tp_getset = array_getset,
};

/* Keeps an imported DLPack tensor alive; calls its deleter when it dies. */
typedef struct {
    PyObject_HEAD
    void *managed;
    int versioned;
} DLOwnerObject;

static void dlowner_dealloc(DLOwnerObject *o)
{
    if (o->versioned) {
        DLManagedTensorVersioned *m = o->managed;
        if (m && m->deleter)
            m->deleter(m);
    } else {
        DLManagedTensor *m = o->managed;
        if (m && m->deleter)
            m->deleter(m);
    }
    PyObject_Free(o);
}

static PyTypeObject DLOwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk._DLPackOwner",
    .tp_basicsize = sizeof(DLOwnerObject),
    .tp_dealloc = (destructor)dlowner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

/* Holds a buffer-protocol export for the lifetime of an nnk.Array over it. */
typedef struct {
    PyObject_HEAD
    Py_buffer view;
} BufHolderObject;

static void bufholder_dealloc(BufHolderObject *o)
{
    PyBuffer_Release(&o->view);
    PyObject_Free(o);
}

static PyTypeObject BufHolderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk._BufferOwner",
    .tp_basicsize = sizeof(BufHolderObject),
    .tp_dealloc = (destructor)bufholder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

/* ---- import: any array object -> nnk_array ------------------------------------------------------ */

typedef struct {
    nnk_array *a;      /* a reference */
    Py_buffer *view;   /* the buffer export to release (caller's storage), or NULL */
    PyObject *owner;   /* a reference keeping the memory alive, or NULL */
    int readonly;
    int numpy;         /* a numpy array: results come back as numpy arrays */
} Imported;

static void imported_release(Imported *im)
{
    nnk_array_free(im->a);
    im->a = NULL;
    if (im->view) {
        PyBuffer_Release(im->view);
        im->view = NULL;
    }
    Py_CLEAR(im->owner);
}

/* The error of an out= or inout argument that cannot be written. */
static int refuse_readonly(PyObject *o)
{
    fail(NNK_EINVAL, "%.100s is read-only, and the kernel writes it (out=, or an inout parameter)", Py_TYPE(o)->tp_name);
    return -1;
}

static int import_buffer(PyObject *o, int writable, Py_buffer *view, Imported *im)
{
    if (PyObject_GetBuffer(o, view, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) < 0) {
        /* numpy says ValueError, bytes BufferError: a read-only export is the test */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (writable && PyObject_GetBuffer(o, view, PyBUF_RECORDS_RO) == 0) {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            PyBuffer_Release(view);
            return refuse_readonly(o);
        }
        /* as nnk.ArgumentError (a ValueError and TypeError), caused by the
         * exporter's own exception: a released memoryview, a numpy object array */
        PyErr_Clear();
        PyErr_NormalizeException(&et, &ev, &tb);
        fail(NNK_EINVAL, "%.100s: its buffer cannot be used: %S", Py_TYPE(o)->tp_name, ev ? ev : Py_None);
        PyObject *nt, *nv, *ntb;
        PyErr_Fetch(&nt, &nv, &ntb);
        PyErr_NormalizeException(&nt, &nv, &ntb);
        if (nv && ev) {
            if (tb)
                PyException_SetTraceback(ev, tb);
            Py_INCREF(ev);
            PyException_SetCause(nv, ev);   /* steals */
            Py_INCREF(ev);
            PyException_SetContext(nv, ev); /* steals */
        }
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        PyErr_Restore(nt, nv, ntb);
        return -1;
    }
    nnk_dtype t;
    int64_t shape[NNK_MAX_DIMS], strides[NNK_MAX_DIMS];
    if (buffer_dtype(view, &t) < 0)
        goto bad;
    if (view->ndim > NNK_MAX_DIMS) {
        fail(NNK_ESHAPE, "%.100s has %d axes; nnk arrays have at most %d", Py_TYPE(o)->tp_name, view->ndim,
             NNK_MAX_DIMS);
        goto bad;
    }
    if (view->suboffsets) {
        fail(NNK_EUNSUPPORTED, "buffers with suboffsets (PIL-style) are not supported");
        goto bad;
    }
    for (int d = 0; d < view->ndim; d++) {
        shape[d] = view->shape ? view->shape[d] : view->len / view->itemsize;
        if (view->strides) {
            if (view->strides[d] % view->itemsize) {
                fail(NNK_EUNSUPPORTED, "%.100s: stride %zd of axis %d is not a multiple of the item size %zd",
                     Py_TYPE(o)->tp_name, view->strides[d], d, view->itemsize);
                goto bad;
            }
            strides[d] = view->strides[d] / view->itemsize;
        }
    }
    nnk_array *a;
    if (check(nnk_array_wrap(t, view->ndim, shape, view->strides ? strides : NULL, view->buf, &a)) < 0)
        goto bad;
    im->a = a;
    im->view = view;
    im->readonly = view->readonly;
    return 1;
bad:
    PyBuffer_Release(view);
    return -1;
}

static PyObject *str_dlpack, *str_dlpack_device, *str_max_version, *max_version_1;

static int dl_host_device(int type) { return type == kDLCPU || type == kDLCUDAHost || type == kDLROCMHost; }

static int import_dlpack(PyObject *o, int writable, Imported *im)
{
    PyObject *dev = PyObject_CallMethodNoArgs(o, str_dlpack_device);
    if (dev) {
        int type = -1, id = 0;
        int ok = PyTuple_Check(dev) && PyArg_ParseTuple(dev, "ii", &type, &id);
        Py_DECREF(dev);
        if (!ok) {
            if (!PyErr_Occurred())
                fail(NNK_EINVAL, "%.100s.__dlpack_device__() did not return (type, id)", Py_TYPE(o)->tp_name);
            return -1;
        }
        if (!dl_host_device(type)) {
            fail(NNK_EUNSUPPORTED,
                 "%.100s is on DLPack device type %d (2 is CUDA): nnk takes host memory through DLPack; "
                 "copy it to the CPU first (torch: x.cpu())",
                 Py_TYPE(o)->tp_name, type);
            return -1;
        }
    } else if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
    } else {
        return -1;
    }
    /* versioned capsules where the producer knows them (read-only flag) */
    PyObject *kw = PyDict_New();
    PyObject *cap = NULL;
    if (kw && PyDict_SetItem(kw, str_max_version, max_version_1) == 0) {
        PyObject *meth = PyObject_GetAttr(o, str_dlpack);
        if (meth) {
            PyObject *noargs = PyTuple_New(0);
            cap = noargs ? PyObject_Call(meth, noargs, kw) : NULL;
            if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {   /* a pre-1.0 producer */
                PyErr_Clear();
                cap = PyObject_CallNoArgs(meth);
            }
            Py_XDECREF(noargs);
            Py_DECREF(meth);
        }
    }
    Py_XDECREF(kw);
    if (!cap)
        return -1;
    DLTensor *t;
    void *managed;
    int versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
    int readonly = 0;
    if (versioned) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m->version.major > DLPACK_MAJOR_VERSION) {
            fail(NNK_EUNSUPPORTED, "DLPack %u.%u is newer than nnk's %d.%d", m->version.major, m->version.minor,
                 DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
            goto bad;
        }
        t = &m->dl_tensor;
        readonly = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
        managed = m;
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        t = &m->dl_tensor;
        managed = m;
    } else {
        fail(NNK_EINVAL, "%.100s.__dlpack__() did not return an unused DLPack capsule", Py_TYPE(o)->tp_name);
        goto bad;
    }
    nnk_dtype dt;
    if (!dl_host_device(t->device.device_type)) {
        fail(NNK_EUNSUPPORTED, "DLPack tensor on device type %d: nnk takes host memory through DLPack",
             (int)t->device.device_type);
        goto bad;
    }
    if (dl_dtype(t->dtype, &dt) < 0)
        goto bad;
    if (t->ndim < 0 || t->ndim > NNK_MAX_DIMS) {
        fail(NNK_ESHAPE, "DLPack tensor with %d axes; nnk arrays have at most %d", (int)t->ndim, NNK_MAX_DIMS);
        goto bad;
    }
    if (writable && readonly) {
        refuse_readonly(o);
        goto bad;
    }
    nnk_array *a;
    if (check(nnk_array_wrap(dt, t->ndim, t->shape, t->strides, (char *)t->data + t->byte_offset, &a)) < 0)
        goto bad;
    /* ownership moves to a DLOwner: the capsule is marked used */
    DLOwnerObject *own = PyObject_New(DLOwnerObject, &DLOwnerType);
    if (!own) {
        nnk_array_free(a);
        goto bad;
    }
    own->managed = managed;
    own->versioned = versioned;
    if (PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
        own->managed = NULL;
        Py_DECREF(own);
        nnk_array_free(a);
        goto bad;
    }
    Py_DECREF(cap);
    im->a = a;
    im->owner = (PyObject *)own;
    im->readonly = readonly;
    return 1;
bad:
    Py_DECREF(cap);   /* its destructor deletes the tensor, still unconsumed */
    return -1;
}

/* A numpy array read from its struct head (checked by numpy_api_check):
 * 1 done, 0 not a plain array of an nnk dtype (the buffer protocol
 * decides), -1 error.  The reference taken keeps it from being resized. */
static int import_numpy_fields(PyObject *o, int writable, Imported *im)
{
    np_array_head *h = (np_array_head *)o;
    np_descr_head *d = (np_descr_head *)h->descr;
    nnk_dtype t;
    if (!d || d->byteorder == '>' || np_dtype_of(d->type_num, &t) < 0 || h->nd > NNK_MAX_DIMS)
        return 0;
    if (writable && !(h->flags & NP_WRITEABLE))
        return refuse_readonly(o);
    int64_t shape[NNK_MAX_DIMS], strides[NNK_MAX_DIMS];
    Py_ssize_t item = (Py_ssize_t)nnk_dtype_size(t);
    for (int k = 0; k < h->nd; k++) {
        if (h->strides[k] % item)
            return 0;
        shape[k] = h->dimensions[k];
        strides[k] = h->strides[k] / item;
    }
    nnk_array *a;
    if (check(nnk_array_wrap(t, h->nd, shape, strides, h->data, &a)) < 0)
        return -1;
    im->a = a;
    im->owner = o;
    Py_INCREF(o);
    im->readonly = !(h->flags & NP_WRITEABLE);
    return 1;
}

/* o as an nnk_array: 1 done (im filled), 0 not an array (no error: a
 * scalar, say), -1 error.  view: storage for a buffer export, released by
 * imported_release. */
static PyObject *str_out, *str_axis, *str_keepdims, *str_ctx, *str_shape, *str_dtype;
static PyObject *str_array_interface, *str_array_struct;

static int import_object(PyObject *o, int writable, Py_buffer *view, Imported *im)
{
    *im = (Imported){0};
    if (PyObject_TypeCheck(o, &ArrayType)) {
        ArrayObject *ao = (ArrayObject *)o;
        if (writable && ao->readonly)
            return refuse_readonly(o);
        im->a = nnk_array_retain(ao->a);
        im->readonly = ao->readonly;
        return 1;
    }
    if (PyFloat_Check(o) || PyLong_Check(o) || PyComplex_Check(o) || PyUnicode_Check(o) || o == Py_None)
        return 0;
    if (is_numpy_array(o)) {
        im->numpy = 1;
        if (np_fields_ok && Py_TYPE(o) == (PyTypeObject *)np_ndarray) {
            int r = import_numpy_fields(o, writable, im);
            if (r != 0)
                return r;
        }
        return import_buffer(o, writable, view, im);   /* faster than numpy's __dlpack__, and keeps read-only */
    }
    if (is_numpy_scalar(o))
        return 0;
    if (PyObject_HasAttr((PyObject *)Py_TYPE(o), str_dlpack))
        return import_dlpack(o, writable, im);
    if (PyObject_CheckBuffer(o))
        return import_buffer(o, writable, view, im);
    if ((PyObject_HasAttr((PyObject *)Py_TYPE(o), str_array_interface) || PyObject_HasAttr(o, str_array_interface) ||
         PyObject_HasAttr(o, str_array_struct)) && numpy_lookup()) {
        /* numpy's array interface (an object that only describes its memory):
         * numpy.asarray makes the view of that memory, not a copy; the import
         * holds its own reference to the view, which holds the object */
        PyObject *v = PyObject_CallOneArg(np_asarray, o);
        if (!v)
            return -1;
        int r = is_numpy_array(v) ? import_object(v, writable, view, im) : 0;
        Py_DECREF(v);
        return r;
    }
    return 0;
}

/* ---- Kernel: the call path ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    nnk_kernel *k;       /* a module's kernel, or the jit function's */
    nnk_jit_fn *fn;      /* a jit function (owned), or NULL */
    PyObject *handle;    /* a capsule owning the module of k, or NULL */
    nnk_args *cached;    /* reused by a call that finds it free (GIL held) */
    int busy;
    int nouts;
    int tuple_out;       /* results as a tuple */
} KernelObject;

#define MAX_ARRAY_ARGS (2 * NNK_MAX_TENSORS)   /* more cannot bind: the runtime refuses them */



/* A scalar argument: 1 added, 0 not a number, -1 error.  The launch checks
 * an integer against its parameter's type (nnk_args_numpy_scalars). */
static int add_scalar(nnk_args *A, const char *name, PyObject *o)
{
    if (PyBool_Check(o)) { /* numpy's kind bool, for a tensor input */
        int b = o == Py_True;
        return check(name ? nnk_args_named_bool(A, name, b) : nnk_args_bool(A, b)) < 0 ? -1 : 1;
    }
    if (PyLong_Check(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow > 0) { /* above INT64_MAX: a u64 value (np.uint64(2**64 - 1), a mask) */
            unsigned long long u = PyLong_AsUnsignedLongLong(o);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                fail(NNK_EOVERFLOW, "integer %R is outside the int64 and uint64 ranges", o);
                return -1;
            }
            return check(name ? nnk_args_named_u64(A, name, u) : nnk_args_u64(A, u)) < 0 ? -1 : 1;
        }
        if (overflow) {
            fail(NNK_EOVERFLOW, "integer %R is outside the int64 and uint64 ranges", o);
            return -1;
        }
        return check(name ? nnk_args_named_i64(A, name, v) : nnk_args_i64(A, v)) < 0 ? -1 : 1;
    }
    if (PyFloat_Check(o)) {
        double v = PyFloat_AS_DOUBLE(o);
        return check(name ? nnk_args_named_f64(A, name, v) : nnk_args_f64(A, v)) < 0 ? -1 : 1;
    }
    if (PyComplex_Check(o)) {
        Py_complex z = PyComplex_AsCComplex(o);
        return check(name ? nnk_args_named_c128(A, name, z.real, z.imag) : nnk_args_c128(A, z.real, z.imag)) < 0
                   ? -1 : 1;
    }
    if (is_numpy_scalar(o)) {
        PyObject *item = PyObject_CallMethod(o, "item", NULL);   /* np.float32(2) -> 2.0 */
        if (!item)
            return -1;
        int r = is_numpy_scalar(item) ? 0 : add_scalar(A, name, item);
        Py_DECREF(item);
        if (r == 0)
            fail(NNK_EDTYPE, "numpy scalar %R has no nnk dtype", o);
        return r == 0 ? -1 : r;
    }
    return 0;
}

/* A 0-d array (numpy's, nnk.Array, a torch tensor: anything with ndim 0 and
 * item()) for a scalar parameter: its value, as the numpy scalar of its dtype
 * would be (nnk's reductions return 0-d arrays, which feed scalar parameters
 * so).  1 added, 0 not a 0-d array, -1 error.  Python and numpy scalars are
 * add_scalar's; an array of another rank stays the runtime's error. */
static int add_zero_d(nnk_args *A, const char *name, PyObject *o)
{
    if (PyFloat_Check(o) || PyLong_Check(o) || PyComplex_Check(o) || PyUnicode_Check(o) || o == Py_None ||
        is_numpy_scalar(o))
        return 0;
    PyObject *nd = PyObject_GetAttrString(o, "ndim");
    if (!nd) {
        PyErr_Clear();
        return 0;
    }
    long n = PyLong_Check(nd) ? PyLong_AsLong(nd) : -1;
    Py_DECREF(nd);
    if (n != 0) {
        PyErr_Clear();
        return 0;
    }
    PyObject *item = PyObject_CallMethod(o, "item", NULL);
    if (!item)
        return -1;
    int r = add_scalar(A, name, item);
    Py_DECREF(item);
    if (r == 0)
        fail(NNK_EDTYPE, "the 0-d %.100s given for scalar parameter '%s' has no number (item() is not one)",
             Py_TYPE(o)->tp_name, name ? name : "?");
    return r == 0 ? -1 : r;
}

typedef struct {
    Imported im[MAX_ARRAY_ARGS];
    Py_buffer views[MAX_ARRAY_ARGS];
    int n;
    int numpy;
    /* the objects given for inout parameters, by parameter index: their
     * outputs (after the declared ones, in parameter order) come back as
     * these objects, as out= arrays do */
    int ninout;
    struct { int32_t param; PyObject *o; } inout[NNK_MAX_TENSORS];
} CallArrays;

static int add_arg(nnk_args *A, const nnk_kernel *k, const char *name, Py_ssize_t pos, PyObject *o, CallArrays *ca)
{
    if (ca->n >= MAX_ARRAY_ARGS) {
        fail(NNK_EINVAL, "too many array arguments (a kernel takes at most %d tensors)", NNK_MAX_TENSORS);
        return -1;
    }
    Imported *im = &ca->im[ca->n];
    /* an inout parameter's array is written: imported as out= is */
    int inout = pos <= INT32_MAX && nnk_kernel_input_is_inout(k, (int32_t)pos, name);
    int scalar = pos <= INT32_MAX && nnk_kernel_input_is_scalar(k, (int32_t)pos, name);
    if (scalar) {
        int r = add_zero_d(A, name, o);
        if (r)
            return r < 0 ? -1 : 0;
    } else if ((PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o)) && !is_numpy_scalar(o)) {
        /* a Python number for a tensor input: a weak 0-d operand (NEP 50;
         * CuPy's ElementwiseKernel and jiterator take them too), which
         * the launch makes in the type the arrays bind */
        return add_scalar(A, name, o) < 0 ? -1 : 0;
    } else if (!inout && is_numpy_scalar(o) && (name ? nnk_kernel_param_index(k, name) >= 0 && nnk_kernel_param_index(k, name) <
                                                                                          nnk_kernel_input_count(k)
                                           : pos < nnk_kernel_input_count(k))) {
        /* np.float32(2) for a tensor input: the 0-d array of its dtype (numpy's
         * ufuncs take it so; a numpy scalar is typed, not weak, under NEP 50).
         * The import holds its own reference to the temporary. */
        PyObject *tmp = numpy_lookup() ? PyObject_CallOneArg(np_asarray, o) : NULL;
        if (!tmp)
            return -1;
        int r = import_object(tmp, inout, &ca->views[ca->n], im);
        Py_DECREF(tmp);
        if (r < 0)
            return -1;
        if (r > 0) {
            ca->n++;
            ca->numpy = 1;
            return check(name ? nnk_args_named_array(A, name, im->a) : nnk_args_array(A, im->a));
        }
    }
    int r = import_object(o, inout, &ca->views[ca->n], im);
    if (r < 0)
        return -1;
    if (r == 0) {
        r = add_scalar(A, name, o);
        if (r == 0) {
            if (name)
                fail(NNK_EINVAL, "argument '%s': expected an array (buffer protocol, __dlpack__, nnk.Array) or a number, got %.100s",
                     name, Py_TYPE(o)->tp_name);
            else
                fail(NNK_EINVAL, "argument %zd: expected an array (buffer protocol, __dlpack__, nnk.Array) or a number, got %.100s",
                     pos + 1, Py_TYPE(o)->tp_name);
            return -1;
        }
        return r < 0 ? -1 : 0;
    }
    ca->n++;
    ca->numpy |= im->numpy;
    if (inout && ca->ninout < NNK_MAX_TENSORS) { /* kept in parameter order (borrowed: the call holds it) */
        int32_t p = name ? nnk_kernel_param_index(k, name) : (int32_t)pos;
        int j = ca->ninout++;
        for (; j > 0 && ca->inout[j - 1].param > p; j--)
            ca->inout[j] = ca->inout[j - 1];
        ca->inout[j].param = p;
        ca->inout[j].o = o;
    }
    return check(name ? nnk_args_named_array(A, name, im->a) : nnk_args_array(A, im->a));
}

static int add_out(nnk_args *A, PyObject *o, CallArrays *ca)
{
    if (ca->n >= MAX_ARRAY_ARGS) {
        fail(NNK_EINVAL, "too many array arguments (a kernel takes at most %d tensors)", NNK_MAX_TENSORS);
        return -1;
    }
    Imported *im = &ca->im[ca->n];
    int r = import_object(o, 1, &ca->views[ca->n], im);
    if (r <= 0) {
        if (r == 0)
            fail(NNK_EINVAL, "out: expected a writable array, got %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    ca->n++;
    return check(nnk_args_out(A, im->a));
}

static int set_axes(nnk_args *A, PyObject *v)
{
    if (v == Py_None)
        return 0;   /* every axis */
    int32_t axes[NNK_MAX_DIMS];
    Py_ssize_t n;
    PyObject *seq = NULL;
    if (PyLong_Check(v) || PyIndex_Check(v)) {
        n = 1;
        seq = PyTuple_Pack(1, v);
    } else if (PyTuple_Check(v) || PyList_Check(v)) {
        n = PySequence_Fast_GET_SIZE(v);
        seq = v;
        Py_INCREF(seq);
    } else {
        fail(NNK_EINVAL, "axis: expected an int, a tuple of ints or None, got %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    if (!seq)
        return -1;
    if (n > NNK_MAX_DIMS) {
        Py_DECREF(seq);
        fail(NNK_ESHAPE, "axis: %zd axes; arrays have at most %d", n, NNK_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
        int overflow = 0;
        long a = PyIndex_Check(x) && !PyBool_Check(x) ? PyLong_AsLongAndOverflow(x, &overflow)
                                                      : (PyErr_SetString(PyExc_TypeError, ""), -1);
        if (overflow) { /* an integer, too large: out of range as axis 17 is */
            Py_DECREF(seq);
            fail(NNK_ESHAPE, "axis %R is out of range", x);
            return -1;
        }
        if (a == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_DECREF(seq);
            fail(NNK_EINVAL, "axis: %R is not an integer", x);
            return -1;
        }
        if (a < -NNK_MAX_DIMS || a >= NNK_MAX_DIMS) {
            Py_DECREF(seq);
            fail(NNK_ESHAPE, "axis %ld is out of range", a);
            return -1;
        }
        axes[i] = (int32_t)a;
    }
    Py_DECREF(seq);
    return check(nnk_args_axes(A, (int32_t)n, axes));
}

/* shape=: the iteration shape of a kernel whose tensor inputs are all raw. */
static int set_shape(nnk_args *A, PyObject *v)
{
    if (v == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(v, "shape: expected a tuple of ints");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t shape[NNK_MAX_DIMS];
    if (n > NNK_MAX_DIMS) {
        Py_DECREF(seq);
        fail(NNK_ESHAPE, "shape: %zd dimensions; arrays have at most %d", n, NNK_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
        long long e = PyIndex_Check(x) && !PyBool_Check(x) ? PyLong_AsLongLong(x) : (PyErr_SetString(PyExc_TypeError, ""), -1);
        if (e == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_DECREF(seq);
            fail(NNK_EINVAL, "shape: %R is not an integer that int64 holds", x);
            return -1;
        }
        shape[i] = (int64_t)e;
    }
    Py_DECREF(seq);
    return check(nnk_args_shape(A, (int32_t)n, shape));
}

/* dtype=: the type arguments (nnk_args_type): a dtype for the kernel's
 * only type variable, a tuple or list of them in declaration order (None:
 * from the arguments), or a dict of them by variable name. */
static int set_types(nnk_args *A, PyObject *v)
{
    nnk_dtype t;
    if (v == Py_None)
        return 0;
    if (PyDict_Check(v)) {
        PyObject *key, *val;
        Py_ssize_t pos = 0;
        while (PyDict_Next(v, &pos, &key, &val)) {
            const char *n = PyUnicode_Check(key) ? name_utf8(key) : NULL;
            if (!n) {
                if (!PyErr_Occurred())
                    fail(NNK_EINVAL, "dtype: the keys of a dict are type variables' names, not %R", key);
                return -1;
            }
            if (dtype_arg(val, &t) < 0 || check(nnk_args_type(A, 0, n, t)) < 0)
                return -1;
        }
        return 0;
    }
    if (PyTuple_Check(v) || PyList_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(v, i);
            if (x != Py_None && (i > INT32_MAX || dtype_arg(x, &t) < 0 || check(nnk_args_type(A, (int32_t)i, NULL, t)) < 0))
                return -1;
        }
        return 0;
    }
    return dtype_arg(v, &t) < 0 || check(nnk_args_type(A, -1, NULL, t)) < 0 ? -1 : 0;
}

static int kw_is(PyObject *name, PyObject *interned)
{
    return name == interned || PyUnicode_Compare(name, interned) == 0;
}

static PyObject *kernel_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    KernelObject *self = (KernelObject *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    nnk_args *A = NULL;
    int cached = 0;
    if (!self->busy && self->cached) {
        A = self->cached;
        self->busy = cached = 1;
    } else if (check(nnk_args_new(&A)) < 0) {
        return NULL;
    }
    if (check(nnk_args_numpy_scalars(A, 1)) < 0) { /* (reset turns them off) */
        if (cached)
            self->busy = 0;
        else
            nnk_args_free(A);
        return NULL;
    }
    CallArrays *ca, ca_local;
    ca = &ca_local;
    ca->n = 0;
    ca->numpy = 0;
    ca->ninout = 0;
    PyObject *result = NULL, *out = NULL, *ctx_hold = NULL, *out_hold = NULL;
    Py_ssize_t ngiven = 0;
    /* positional arguments past the inputs are outputs, as numpy's
     * np.add(a, b, out) and CuPy's kernel(x, y, z) take them */
    Py_ssize_t nin = nnk_kernel_input_count(self->k), npos = nargs;
    if (nargs > nin && nargs - nin <= nnk_kernel_output_count(self->k)) {
        npos = nin;
        ngiven = nargs - nin;
        if (!(out = out_hold = PyTuple_New(ngiven)))
            goto done;
        for (Py_ssize_t i = 0; i < ngiven; i++) {
            Py_INCREF(args[nin + i]);
            PyTuple_SET_ITEM(out_hold, i, args[nin + i]);
            if (add_out(A, args[nin + i], ca) < 0)
                goto done;
        }
    }
    for (Py_ssize_t i = 0; i < npos; i++)
        if (add_arg(A, self->k, NULL, i, args[i], ca) < 0)
            goto done;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j), *v = args[nargs + j];
        if (kw_is(name, str_out)) {
            if (v == Py_None)
                continue;
            if (out) {
                fail(NNK_EINVAL, "kernel '%s': outputs given both positionally and as out=", nnk_kernel_name(self->k));
                goto done;
            }
            out = v;
            if (PyTuple_Check(v) || PyList_Check(v)) {
                ngiven = PySequence_Fast_GET_SIZE(v);
                for (Py_ssize_t i = 0; i < ngiven; i++)
                    if (add_out(A, PySequence_Fast_GET_ITEM(v, i), ca) < 0)
                        goto done;
            } else {
                ngiven = 1;
                if (add_out(A, v, ca) < 0)
                    goto done;
            }
        } else if (kw_is(name, str_shape) && nnk_kernel_param_index(self->k, "shape") < 0) {
            /* (a parameter named shape takes its argument, as before) */
            if (set_shape(A, v) < 0)
                goto done;
        } else if (kw_is(name, str_dtype) && nnk_kernel_param_index(self->k, "dtype") < 0) {
            /* (a parameter named dtype takes its argument) */
            if (set_types(A, v) < 0)
                goto done;
        } else if (kw_is(name, str_axis)) {
            if (set_axes(A, v) < 0)
                goto done;
        } else if (kw_is(name, str_keepdims)) {
            int k = PyObject_IsTrue(v);
            if (k < 0 || check(nnk_args_keepdims(A, k)) < 0)
                goto done;
        } else if (kw_is(name, str_ctx)) {
            const nnk_context *c;
            Py_CLEAR(ctx_hold);
            if (context_arg(v, &c, &ctx_hold) < 0 || (c && check(nnk_args_context(A, c)) < 0))
                goto done;
        } else {
            const char *n = name_utf8(name);
            if (!n || add_arg(A, self->k, n, 0, v, ca) < 0)
                goto done;
        }
    }
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = self->fn ? nnk_jit_fn_call(self->fn, A) : nnk_launch(self->k, A);
    Py_END_ALLOW_THREADS
    if (s) {
        raise_status(s);
        goto done;
    }
    int32_t nout = nnk_args_output_count(A);
    if (ngiven > nout)
        ngiven = nout;
    PyObject *res[NNK_MAX_TENSORS];
    int got = 0;
    for (int32_t i = 0; i < nout && i < NNK_MAX_TENSORS; i++, got++) {
        if (i < ngiven) {
            res[i] = PyTuple_Check(out) || PyList_Check(out) ? PySequence_Fast_GET_ITEM(out, i) : out;
            Py_INCREF(res[i]);
            continue;
        }
        if (i >= nout - ca->ninout) { /* an inout parameter's output: its array, the caller's object */
            res[i] = ca->inout[i - (nout - ca->ninout)].o;
            Py_INCREF(res[i]);
            continue;
        }
        nnk_array *y;
        if (check(nnk_args_output(A, i, &y)) < 0 || !(res[i] = array_wrap(y, NULL, 0)))
            break;
        ArrayObject *ya = (ArrayObject *)res[i];
        if (ca->numpy && ya->host && dtype_table[nnk_array_dtype(y)].format) {
            PyObject *np = numpy_view(res[i]);   /* keeps the Array alive */
            Py_DECREF(res[i]);
            if (!(res[i] = np))
                break;
        }
    }
    if (got == nout) {
        if (self->tuple_out || nout != 1) {
            result = PyTuple_New(nout);
            for (int32_t i = 0; i < nout; i++) {
                if (result)
                    PyTuple_SET_ITEM(result, i, res[i]);
                else
                    Py_DECREF(res[i]);
            }
        } else {
            result = res[0];
        }
    } else {
        for (int i = 0; i < got; i++)
            Py_DECREF(res[i]);
        if (!PyErr_Occurred())
            fail(NNK_EINTERNAL, "kernel '%s' returned %d outputs; at most %d can come back", nnk_kernel_name(self->k),
                 (int)nout, NNK_MAX_TENSORS);
    }
done:
    /* the list lets go of the arrays before their memory is released */
    if (cached) {
        nnk_args_reset(A);
        self->busy = 0;
    } else {
        nnk_args_free(A);
    }
    for (int i = 0; i < ca->n; i++)
        imported_release(&ca->im[i]);
    Py_XDECREF(ctx_hold);
    Py_XDECREF(out_hold);
    return result;
}

static void kernel_dealloc(KernelObject *o)
{
    nnk_args_free(o->cached);
    nnk_jit_fn_free(o->fn);
    Py_XDECREF(o->handle);
    PyObject_Free(o);
}

static PyObject *kernel_make(PyTypeObject *type, nnk_kernel *k, nnk_jit_fn *fn, PyObject *handle, int tuple_out)
{
    KernelObject *o = PyObject_New(KernelObject, type);
    if (!o) {
        nnk_jit_fn_free(fn);
        return NULL;
    }
    o->vectorcall = kernel_vectorcall;
    o->k = k;
    o->fn = fn;
    o->handle = handle;
    Py_XINCREF(handle);
    o->busy = 0;
    o->nouts = nnk_kernel_output_count(k);
    o->tuple_out = tuple_out;
    if (nnk_args_new(&o->cached) != NNK_OK)
        o->cached = NULL;   /* calls allocate their own */
    return (PyObject *)o;
}

static PyObject *kernel_name(KernelObject *o, void *c) { return PyUnicode_FromString(nnk_kernel_name(o->k)); }
static PyObject *kernel_num_inputs(KernelObject *o, void *c) { return PyLong_FromLong(nnk_kernel_input_count(o->k)); }
static PyObject *kernel_num_outputs(KernelObject *o, void *c) { return PyLong_FromLong(o->nouts); }
static PyObject *kernel_is_reduction(KernelObject *o, void *c) { return PyBool_FromLong(nnk_kernel_is_reduction(o->k)); }
static PyObject *kernel_cache_size(KernelObject *o, void *c) { return PyLong_FromLong(nnk_jit_fn_cache_size(o->fn)); }

static PyObject *kernel_repr(KernelObject *o)
{
    return PyUnicode_FromFormat("<%s %s: %d inputs, %d outputs%s>", o->fn ? "nnk jit function" : "nnk kernel",
                                nnk_kernel_name(o->k), (int)nnk_kernel_input_count(o->k), o->nouts,
                                nnk_kernel_is_reduction(o->k) ? ", reduction" : "");
}

/* The attributes a Kernel and a jit function share (the rows of both tables). */
#define KERNEL_GETSET_ROWS                                                                                       \
    {"__name__", (getter)kernel_name, NULL, "the kernel's name", NULL},                                          \
    {"name", (getter)kernel_name, NULL, "the kernel's name", NULL},                                              \
    {"num_inputs", (getter)kernel_num_inputs, NULL, "tensor and scalar parameters", NULL},                       \
    {"num_outputs", (getter)kernel_num_outputs, NULL, "outputs", NULL},                                          \
    {"is_reduction", (getter)kernel_is_reduction, NULL, "a reduction kernel (takes axis=, keepdims=)", NULL},

static PyGetSetDef kernel_getset[] = {
    KERNEL_GETSET_ROWS
    {0},
};

static PyGetSetDef jit_getset[] = {
    KERNEL_GETSET_ROWS
    {"cache_size", (getter)kernel_cache_size, NULL, "dtype signatures compiled so far", NULL},
    {0},
};

#define KERNEL_CALL_DOC                                                                                          \
    "Call: positional inputs in declaration order, named inputs by name, Python numbers for scalars and\n"         \
    "(weak 0-d operands, numpy 2's NEP 50) for tensor inputs; an int out of its integer type's bounds is\n"      \
    "nnk.IntegerOverflowError;\n"                                                                                  \
    "out= (an array or a tuple), axis= (int or tuple) and keepdims= for reductions, ctx= for the launch's\n"       \
    "context.  numpy in: numpy out (views over nnk memory); other arrays in: nnk.Array out."

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk.Kernel",
    .tp_basicsize = sizeof(KernelObject),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_vectorcall_offset = offsetof(KernelObject, vectorcall),
    .tp_repr = (reprfunc)kernel_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A kernel of an nnk module (nnk_kernel).\n" KERNEL_CALL_DOC,
    .tp_getset = kernel_getset,
};

static PyTypeObject JitFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk.JitFunction",
    .tp_basicsize = sizeof(KernelObject),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_vectorcall_offset = offsetof(KernelObject, vectorcall),
    .tp_repr = (reprfunc)kernel_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A jiterator-style function (nnk_jit_fn), compiled per dtype signature at first use.\n" KERNEL_CALL_DOC,
    .tp_getset = jit_getset,
};

/* ---- Module --------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    nnk_module *m;       /* owned by handle */
    PyObject *handle;    /* capsule: frees the module when the last kernel lets go */
    PyObject *kernels;   /* dict name -> Kernel */
    PyObject *name;
} ModuleObject;

static void module_handle_free(PyObject *cap)
{
    nnk_module_free(PyCapsule_GetPointer(cap, "nnk.module"));
}

static void module_dealloc(ModuleObject *o)
{
    Py_XDECREF(o->kernels);
    Py_XDECREF(o->handle);
    Py_XDECREF(o->name);
    PyObject_Free(o);
}

static PyObject *module_getattro(ModuleObject *o, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr((PyObject *)o, name);
    if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    r = PyDict_GetItemWithError(o->kernels, name);
    if (r) {
        Py_INCREF(r);
        return r;
    }
    if (PyErr_Occurred())
        return NULL;
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *keys = PyDict_Keys(o->kernels);
    PyObject *list = sep && keys ? PyUnicode_Join(sep, keys) : NULL;
    if (list)
        PyErr_Format(PyExc_AttributeError, "nnk module %R has no kernel or attribute %R (kernels: %U)", o->name, name,
                     list);
    Py_XDECREF(sep);
    Py_XDECREF(keys);
    Py_XDECREF(list);
    return NULL;
}

static PyObject *module_subscript(ModuleObject *o, PyObject *key)
{
    PyObject *r = PyDict_GetItemWithError(o->kernels, key);
    if (r) {
        Py_INCREF(r);
        return r;
    }
    if (!PyErr_Occurred())
        fail(NNK_ENOTFOUND, "nnk module %R has no kernel %R", o->name, key);
    return NULL;
}

static PyObject *module_kernels(ModuleObject *o, void *c)
{
    PyObject *k = PyDict_Keys(o->kernels);
    PyObject *t = k ? PyList_AsTuple(k) : NULL;
    Py_XDECREF(k);
    return t;
}

static PyObject *module_dir(ModuleObject *o, PyObject *unused)
{
    PyObject *l = PyDict_Keys(o->kernels);
    if (l) {
        const char *extra[] = {"kernels", "name"};
        for (size_t i = 0; i < 2; i++) {
            PyObject *s = PyUnicode_FromString(extra[i]);
            if (!s || PyList_Append(l, s) < 0) {
                Py_XDECREF(s);
                Py_CLEAR(l);
                break;
            }
            Py_DECREF(s);
        }
    }
    return l;
}

static PyObject *module_repr(ModuleObject *o)
{
    PyObject *k = module_kernels(o, NULL);
    PyObject *r = k ? PyUnicode_FromFormat("<nnk module %R, kernels %R>", o->name, k) : NULL;
    Py_XDECREF(k);
    return r;
}

static PyObject *module_name(ModuleObject *o, void *c)
{
    Py_INCREF(o->name);
    return o->name;
}

static PyMethodDef module_methods[] = {
    {"__dir__", (PyCFunction)module_dir, METH_NOARGS, NULL},
    {0},
};

static PyGetSetDef module_getset[] = {
    {"kernels", (getter)module_kernels, NULL, "names of the kernels, in source order", NULL},
    {"name", (getter)module_name, NULL, "the module's name (diagnostics)", NULL},
    {0},
};

static PyMappingMethods module_as_mapping = {.mp_subscript = (binaryfunc)module_subscript};

static PyTypeObject ModuleType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nnk.Module",
    .tp_basicsize = sizeof(ModuleObject),
    .tp_dealloc = (destructor)module_dealloc,
    .tp_repr = (reprfunc)module_repr,
    .tp_as_mapping = &module_as_mapping,
    .tp_getattro = (getattrofunc)module_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled .nnk module (nnk_module): its kernels are attributes (mod.softmax) and items",
    .tp_methods = module_methods,
    .tp_getset = module_getset,
};

/* ---- functions ------------------------------------------------------------------------------------------ */

/* Source text as UTF-8 without NUL bytes (the C API takes C strings). */
static const char *source_arg(PyObject *o, const char *what)
{
    Py_ssize_t n;
    const char *s;
    if (PyUnicode_Check(o)) {
        s = PyUnicode_AsUTF8AndSize(o, &n);
    } else if (PyBytes_Check(o)) {
        s = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
    } else {
        fail(NNK_EINVAL, "%s: expected a str, got %.100s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    if (s && (Py_ssize_t)strlen(s) != n) {
        fail(NNK_EINVAL, "%s holds a NUL character", what);
        return NULL;
    }
    return s;
}

static PyObject *fn_compile(PyObject *mod, PyObject *args, PyObject *kwds)
{
    PyObject *src, *options = Py_None, *ctxo = Py_None, *name = Py_None;
    static char *kwlist[] = {"source", "options", "ctx", "name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOO:compile", kwlist, &src, &options, &ctxo, &name))
        return NULL;
    if (options != Py_None && !PyDict_Check(options))
        return fail(NNK_EINVAL, "compile: options must be a dict");
    const char *text = source_arg(src, "source");
    if (!text)
        return NULL;
    const nnk_context *ctx;
    PyObject *hold;
    if (context_arg(ctxo, &ctx, &hold) < 0)
        return NULL;
    char *kw = kw_string(options == Py_None ? NULL : options);
    if (!kw) {
        Py_XDECREF(hold);
        return NULL;
    }
    nnk_module *m;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_module_compile(ctx, text, kw, &m);
    Py_END_ALLOW_THREADS
    PyMem_Free(kw);
    Py_XDECREF(hold);
    if (s)
        return raise_status(s);
    ModuleObject *o = PyObject_New(ModuleObject, &ModuleType);
    if (!o) {
        nnk_module_free(m);
        return NULL;
    }
    o->m = m;
    o->kernels = PyDict_New();
    o->handle = PyCapsule_New(m, "nnk.module", module_handle_free);
    o->name = name == Py_None ? PyUnicode_FromString("<string>") : PyObject_Str(name);
    if (!o->handle)
        nnk_module_free(m);
    if (!o->kernels || !o->handle || !o->name) {
        Py_DECREF(o);
        return NULL;
    }
    int32_t n = nnk_module_kernel_count(m);
    for (int32_t i = 0; i < n; i++) {
        const char *kn = nnk_module_kernel_name(m, i);
        nnk_kernel *k;
        PyObject *ko = NULL;
        if (check(nnk_module_kernel(m, kn, &k)) < 0 ||
            !(ko = kernel_make(&KernelType, k, NULL, o->handle, 0)) ||
            PyDict_SetItemString(o->kernels, kn, ko) < 0) {
            Py_XDECREF(ko);
            Py_DECREF(o);
            return NULL;
        }
        Py_DECREF(ko);
    }
    return (PyObject *)o;
}

static PyObject *fn_create_jit_fn(PyObject *mod, PyObject *args, PyObject *kwds)
{
    PyObject *code, *options = Py_None;
    int num_outputs = -1;
    static char *kwlist[] = {"code", "options", "num_outputs", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Oi:create_jit_fn", kwlist, &code, &options, &num_outputs))
        return NULL;
    if (options != Py_None && !PyDict_Check(options))
        return fail(NNK_EINVAL, "create_jit_fn: options must be a dict");
    const char *text = source_arg(code, "code");
    if (!text)
        return NULL;
    char *kw = kw_string(options == Py_None ? NULL : options);
    if (!kw)
        return NULL;
    nnk_jit_fn *fn;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_create_jit_fn(text, kw, &fn);
    Py_END_ALLOW_THREADS
    PyMem_Free(kw);
    if (s)
        return raise_status(s);
    nnk_kernel *k = nnk_jit_fn_kernel(fn);
    int nouts = nnk_kernel_output_count(k);
    if (num_outputs >= 0 && num_outputs != nouts) {
        PyObject *e = fail(NNK_EINVAL, "num_outputs=%d, but kernel '%s' has %d output%s", num_outputs,
                           nnk_kernel_name(k), nouts, nouts == 1 ? "" : "s");
        nnk_jit_fn_free(fn);
        return e;
    }
    return kernel_make(&JitFunctionType, k, fn, NULL, num_outputs >= 0 || nouts > 1);
}

static PyObject *fn_list_extensions(PyObject *mod, PyObject *unused)
{
    int32_t count = 0;
    if (check(nnk_list_extensions(NULL, 0, &count)) < 0)
        return NULL;
    const char **names = PyMem_Calloc(count > 0 ? (size_t)count : 1, sizeof *names);
    if (!names)
        return PyErr_NoMemory();
    int32_t got = count;
    if (check(nnk_list_extensions(names, count, &got)) < 0) {
        PyMem_Free(names);
        return NULL;
    }
    if (got > count)
        got = count;   /* an extension appeared in between: the next call lists it */
    PyObject *l = PyList_New(got);
    for (int32_t i = 0; l && i < got; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, s);
    }
    PyMem_Free(names);
    return l;
}

static PyObject *fn_get_extension_context(PyObject *mod, PyObject *args, PyObject *kwds)
{
    const char *name;
    PyObject *options = Py_None;
    if (!PyArg_ParseTuple(args, "s|O:get_extension_context", &name, &options))
        return NULL;
    if (options != Py_None && !PyDict_Check(options))
        return fail(NNK_EINVAL, "get_extension_context: options must be a dict");
    char *kw = kw_string(options == Py_None ? NULL : options);
    if (!kw)
        return NULL;
    nnk_context *c;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    s = nnk_get_extension_context(name, kw, &c);   /* may load the extension */
    Py_END_ALLOW_THREADS
    PyMem_Free(kw);
    return s ? raise_status(s) : context_wrap(c);
}

static PyObject *fn_set_default_context(PyObject *mod, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &ContextType))
        return fail(NNK_EINVAL, "set_default_context: expected an nnk.Context, got %.100s", Py_TYPE(arg)->tp_name);
    if (check(nnk_set_default_context(((ContextObject *)arg)->ctx)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *fn_get_default_context(PyObject *mod, PyObject *unused)
{
    nnk_context *c;
    if (check(nnk_get_default_context(&c)) < 0)
        return NULL;
    return context_wrap(c);
}

/* nnk.asarray(obj, ctx=None, dtype=None): zero-copy where obj's memory
 * serves (host memory for cpu), else a copy on ctx's device. */
static PyObject *fn_asarray(PyObject *mod, PyObject *args, PyObject *kwds)
{
    PyObject *obj, *ctxo = Py_None, *dto = Py_None;
    static char *kwlist[] = {"obj", "ctx", "dtype", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OO:asarray", kwlist, &obj, &ctxo, &dto))
        return NULL;
    PyObject *arr = NULL, *tmp = NULL;
    if (PyObject_TypeCheck(obj, &ArrayType)) {
        arr = obj;
        Py_INCREF(arr);
    } else {
        BufHolderObject *bh = PyObject_New(BufHolderObject, &BufHolderType);
        if (!bh)
            return NULL;
        Imported im;
        int r = import_object(obj, 0, &bh->view, &im);
        if (r == 0) {
            /* lists, scalars: through numpy when it is there */
            PyObject_Free(bh);
            if (!numpy_lookup()) {
                PyObject *np = PyImport_ImportModule("numpy");
                if (!np) {
                    PyErr_Clear();
                    return fail(NNK_EINVAL, "asarray: %.100s is not an array (buffer protocol, __dlpack__)",
                                Py_TYPE(obj)->tp_name);
                }
                Py_DECREF(np);
                numpy_lookup();
            }
            if (!np_asarray || !(tmp = PyObject_CallOneArg(np_asarray, obj)))
                return NULL;
            if (!(bh = PyObject_New(BufHolderObject, &BufHolderType))) {
                Py_DECREF(tmp);
                return NULL;
            }
            r = import_object(tmp, 0, &bh->view, &im);
            if (r == 0)
                fail(NNK_EINVAL, "asarray: %.100s is not an array", Py_TYPE(obj)->tp_name);
        }
        if (r <= 0) {
            PyObject_Free(bh);
            Py_XDECREF(tmp);
            return NULL;
        }
        PyObject *owner;
        if (im.view) {
            owner = (PyObject *)bh;   /* the holder releases the export */
            im.view = NULL;
        } else {
            PyObject_Free(bh);
            owner = im.owner;
            im.owner = NULL;
        }
        arr = array_wrap(im.a, owner, im.readonly);
        Py_XDECREF(tmp);
        if (!arr)
            return NULL;
    }
    ArrayObject *ao = (ArrayObject *)arr;
    nnk_dtype t = nnk_array_dtype(ao->a);
    if (dto != Py_None && dtype_arg(dto, &t) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    const nnk_context *ctx;
    PyObject *hold;
    if (context_arg(ctxo, &ctx, &hold) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    int fits = t == nnk_array_dtype(ao->a);
    if (fits && ctx) {
        /* the memory serves ctx when its first backend's extension holds it
         * (host memory for a host-memory extension) */
        const char *b = nnk_context_backend(ctx, 0);
        size_t len = b ? strcspn(b, ":") : 0;
        nnk_extension *e = nnk_array_extension(ao->a);
        const char *en = e ? nnk_extension_name(e) : NULL;
        if (ao->host) {
            nnk_extension *be;
            char bname[64];
            fits = 0;
            if (b && len < sizeof bname) {
                memcpy(bname, b, len);
                bname[len] = 0;
                fits = nnk_import_extension(bname, &be) == NNK_OK && memory_is_host(be, 0);
            }
        } else {
            fits = en && b && strlen(en) == len && strncmp(en, b, len) == 0 &&
                   nnk_array_device(ao->a) == nnk_context_device_id(ctx);
        }
    }
    PyObject *r = arr;
    if (!fits) {
        r = array_to_impl(ao, ctx, t);
        Py_DECREF(arr);
    }
    Py_XDECREF(hold);
    return r;
}

static PyObject *fn_new_array(PyObject *args, PyObject *kwds, int zeros)
{
    PyObject *shapeo, *dto = Py_None, *ctxo = Py_None;
    static char *kwlist[] = {"shape", "dtype", "ctx", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, zeros ? "O|OO:zeros" : "O|OO:empty", kwlist, &shapeo, &dto, &ctxo))
        return NULL;
    int64_t shape[NNK_MAX_DIMS];
    Py_ssize_t n;
    PyObject *seq = PyIndex_Check(shapeo) ? PyTuple_Pack(1, shapeo) : PySequence_Tuple(shapeo);   /* 3, np.int64(3) */
    if (!seq)
        return NULL;
    n = PyTuple_GET_SIZE(seq);
    if (n > NNK_MAX_DIMS) {
        Py_DECREF(seq);
        return fail(NNK_ESHAPE, "shape with %zd axes; nnk arrays have at most %d", n, NNK_MAX_DIMS);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    const nnk_context *ctx;
    PyObject *hold;
    nnk_dtype t = NNK_F32;
    if ((dto != Py_None && dtype_arg(dto, &t) < 0) || context_arg(ctxo, &ctx, &hold) < 0)
        return NULL;
    nnk_array *a;
    nnk_status s;
    Py_BEGIN_ALLOW_THREADS
    if (dto == Py_None)
        s = zeros ? NNK_OK : nnk_array_new_default(ctx, (int32_t)n, shape, &a);
    else
        s = zeros ? nnk_array_zeros(ctx, t, (int32_t)n, shape, &a) : nnk_array_new(ctx, t, (int32_t)n, shape, &a);
    if (zeros && dto == Py_None) {
        /* the context's dtype, zero-filled */
        nnk_context *dc = NULL;
        const nnk_context *c = ctx;
        if (!c && (s = nnk_get_default_context(&dc)) == NNK_OK)
            c = dc;
        if (s == NNK_OK)
            s = nnk_array_zeros(c, nnk_context_type_config(c), (int32_t)n, shape, &a);
        nnk_context_free(dc);
    }
    Py_END_ALLOW_THREADS
    Py_XDECREF(hold);
    if (s)
        return raise_status(s);
    return array_wrap(a, NULL, 0);
}

static PyObject *fn_empty(PyObject *mod, PyObject *args, PyObject *kwds) { return fn_new_array(args, kwds, 0); }
static PyObject *fn_zeros(PyObject *mod, PyObject *args, PyObject *kwds) { return fn_new_array(args, kwds, 1); }

static PyObject *fn_jit_stats(PyObject *mod, PyObject *unused)
{
    nnk_jit_stats st;
    nnk_jit_get_stats(&st);
    return Py_BuildValue("{sKsKsKsK}", "memory_hits", (unsigned long long)st.memory_hits, "disk_hits",
                         (unsigned long long)st.disk_hits, "compiles", (unsigned long long)st.compiles,
                         "corrupt_entries", (unsigned long long)st.corrupt_entries);
}

/* For the tests: whether numpy's C API table and struct heads are used. */
static PyObject *fn_numpy_fast_paths(PyObject *mod, PyObject *unused)
{
    numpy_lookup();
    return Py_BuildValue("(OO)", np_api ? Py_True : Py_False, np_fields_ok ? Py_True : Py_False);
}

static PyMethodDef module_functions[] = {
    {"_numpy_fast_paths", (PyCFunction)fn_numpy_fast_paths, METH_NOARGS,
     "(numpy C API table used, numpy struct heads used)"},
    {"compile", (PyCFunction)(void (*)(void))fn_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(source, options=None, ctx=None, name=None) -> Module"},
    {"create_jit_fn", (PyCFunction)(void (*)(void))fn_create_jit_fn, METH_VARARGS | METH_KEYWORDS,
     "create_jit_fn(code, options=None, num_outputs=-1) -> JitFunction"},
    {"list_extensions", (PyCFunction)fn_list_extensions, METH_NOARGS, "names of the available extensions"},
    {"get_extension_context", (PyCFunction)(void (*)(void))fn_get_extension_context, METH_VARARGS,
     "get_extension_context(name, options=None) -> Context"},
    {"set_default_context", (PyCFunction)fn_set_default_context, METH_O, "set_default_context(ctx)"},
    {"get_default_context", (PyCFunction)fn_get_default_context, METH_NOARGS, "a copy of the default context"},
    {"asarray", (PyCFunction)(void (*)(void))fn_asarray, METH_VARARGS | METH_KEYWORDS,
     "asarray(obj, ctx=None, dtype=None) -> Array"},
    {"empty", (PyCFunction)(void (*)(void))fn_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype=None, ctx=None) -> Array (uninitialised; dtype None: the context's type_config)"},
    {"zeros", (PyCFunction)(void (*)(void))fn_zeros, METH_VARARGS | METH_KEYWORDS,
     "zeros(shape, dtype=None, ctx=None) -> Array"},
    {"jit_stats", (PyCFunction)fn_jit_stats, METH_NOARGS, "the JIT cache's counters"},
    {0},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "nnk._nnk", .m_doc = "libnnk for Python (the C half of the nnk package)",
    .m_size = -1, .m_methods = module_functions,
};

/* PyModule_AddObjectRef of Python 3.10, for 3.9 */
static int add_ref(PyObject *m, const char *name, PyObject *o)
{
    Py_INCREF(o);
    if (PyModule_AddObject(m, name, o) < 0) {
        Py_DECREF(o);
        return -1;
    }
    return 0;
}

static int intern(PyObject **slot, const char *s)
{
    return (*slot = PyUnicode_InternFromString(s)) ? 0 : -1;
}

PyMODINIT_FUNC PyInit__nnk(void)
{
    if (intern(&str_out, "out") < 0 || intern(&str_axis, "axis") < 0 || intern(&str_keepdims, "keepdims") < 0 ||
        intern(&str_shape, "shape") < 0 || intern(&str_dtype, "dtype") < 0 ||
        intern(&str_array_interface, "__array_interface__") < 0 || intern(&str_array_struct, "__array_struct__") < 0 ||
        intern(&str_ctx, "ctx") < 0 || intern(&str_dlpack, "__dlpack__") < 0 ||
        intern(&str_dlpack_device, "__dlpack_device__") < 0 || intern(&str_max_version, "max_version") < 0 ||
        intern(&numpy_name, "numpy") < 0 || !(max_version_1 = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION)))
        return NULL;
    PyTypeObject *types[] = {&ContextType, &ExtensionType, &ArrayType, &DLOwnerType, &BufHolderType,
                             &KernelType,  &JitFunctionType, &ModuleType};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    Error = PyErr_NewExceptionWithDoc("nnk.Error", "an error of libnnk; .status is its status name ('NNK_ESHAPE', ...)",
                                      NULL, NULL);
    if (!Error || add_ref(m, "Error", Error) < 0)
        goto bad;
    for (size_t i = 0; i < sizeof error_table / sizeof *error_table; i++) {
        char qual[64];
        PyOS_snprintf(qual, sizeof qual, "nnk.%s", error_table[i].name);
        PyObject **b1 = error_table[i].base1, **b2 = error_table[i].base2;
        int sub = b1 && PyObject_IsSubclass(*b1, Error) == 1;   /* (Error, ArgumentError) has no MRO */
        PyObject *bases = sub ? (b2 ? PyTuple_Pack(2, *b1, *b2) : PyTuple_Pack(1, *b1))
                          : b2 ? PyTuple_Pack(3, Error, *b1, *b2)
                          : b1 ? PyTuple_Pack(2, Error, *b1)
                               : PyTuple_Pack(1, Error);
        PyObject *cls = bases ? PyErr_NewExceptionWithDoc(qual, error_table[i].doc, bases, NULL) : NULL;
        Py_XDECREF(bases);
        if (!cls || add_ref(m, error_table[i].name, cls) < 0) {
            Py_XDECREF(cls);
            goto bad;
        }
        status_error[error_table[i].status] = cls;
    }
    const struct {
        const char *name;
        PyTypeObject *type;
    } exported[] = {{"Context", &ContextType}, {"Extension", &ExtensionType}, {"Array", &ArrayType},
                    {"Kernel", &KernelType},   {"JitFunction", &JitFunctionType}, {"Module", &ModuleType}};
    for (size_t i = 0; i < sizeof exported / sizeof *exported; i++)
        if (add_ref(m, exported[i].name, (PyObject *)exported[i].type) < 0)
            goto bad;
    if (PyModule_AddStringConstant(m, "__version__", NNK_VERSION) < 0)
        goto bad;
    PyObject *names = PyTuple_New(NNK_DTYPE_COUNT);
    for (int i = 0; names && i < NNK_DTYPE_COUNT; i++)
        PyTuple_SET_ITEM(names, i, PyUnicode_FromString(dtype_table[i].name));
    if (!names || PyModule_AddObject(m, "dtypes", names) < 0) {
        Py_XDECREF(names);
        goto bad;
    }
    return m;
bad:
    Py_DECREF(m);
    return NULL;
}
