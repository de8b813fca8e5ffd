/* emu_backend.cc - runs generated CUDA on the CUDA emulation layer through
 * the same host-side dispatch as the GPU (runtime/ext/cuda/dispatch.c).
 *
 * A test builds one shared object from a kernel file's generated C and
 * generated CUDA (compiled against cudaemu.h), this file, emu_plan.c,
 * dispatch.c and cudaemu.cc; nnk_emu_strided() then takes the arguments of
 * NAME_strided, so each case runs through both back ends and is compared.
 * Instances whose kernels read raw parameters or index(d) (NAME__cu_raw)
 * take their raw views and a zeroed range error, as on the GPU; an index
 * out of range returns -4 with the error's fields in the message. */
#include "cudaemu_launch.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "dispatch.h"
#include "nnk/abi.h"
int nnk_emu_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views, const uint8_t *reduced,
                       int32_t is_reduction, int32_t naxes, const int32_t *axes, char *err, unsigned long errlen);
int nnk_emu_plan_raw(nnk_plan *p, int32_t nops, const nnk_view *const *views, const int8_t *slot, nnk_range_error *range,
                     char *err, unsigned long errlen);
int nnk_emu_strided(const char *name, int reduction, int nin, int nout, const nnk_view *const *views,
                    const uint8_t *reduced, const nnk_scalar *scalars, int nscalars, int naxes, const int32_t *axes,
                    unsigned block, unsigned max_grid, int force, char *err, size_t errlen);
}

namespace {

/* The shared object this code lives in: kernels are found by name there. */
void *self_handle()
{
    static void *h;
    if (!h) {
        Dl_info info;
        if (dladdr((void *)&nnk_emu_strided, &info) && info.dli_fname)
            h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            h = dlopen(nullptr, RTLD_NOW);
    }
    return h;
}

struct Emu {
    char *err;
    size_t errlen;
    bool raw;  /* the kernels take nnk_cuda_rargs */
    const char *name;
};

int emu_launch_shm(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, size_t shmem,
                   const nnk_cuda_args *a)
{
    Emu *e = static_cast<Emu *>(user);
    void *fn = dlsym(self_handle(), name);
    if (!fn) {
        snprintf(e->err, e->errlen, "no kernel %s in the generated CUDA", name);
        return -1;
    }
    void *params[1] = {const_cast<nnk_cuda_args *>(a)};
    /* (with raw views, a is the head of the dispatch's nnk_cuda_rargs) */
    int st = cudaemu_launch_kernel(name, (cudaemu_kernel_fn)fn, gx, gy, 1, block, 1, 1, shmem, params,
                                   e->raw ? sizeof(nnk_cuda_rargs) : sizeof *a);
    if (st != CUDAEMU_OK)
        snprintf(e->err, e->errlen, "%s: %s", name, cudaemu_last_error());
    return st;
}

int emu_launch(void *user, const char *name, unsigned gx, unsigned gy, unsigned block, const nnk_cuda_args *a)
{
    return emu_launch_shm(user, name, gx, gy, block, 0, a);
}

/* Kernels of the shared object by suffix (the dispatch asks for rd_warp). */
int emu_has(void *user, const char *suffix)
{
    char sym[512];
    snprintf(sym, sizeof sym, "%s__%s", static_cast<Emu *>(user)->name, suffix);
    return dlsym(self_handle(), sym) != nullptr;
}

void *emu_alloc(void *, size_t bytes) { return calloc(1, bytes ? bytes : 1); }
void emu_release(void *, void *p) { free(p); }

} // namespace

extern "C" int nnk_emu_strided(const char *name, int reduction, int nin, int nout, const nnk_view *const *views,
                               const uint8_t *reduced, const nnk_scalar *scalars, int nscalars, int naxes,
                               const int32_t *axes, unsigned block, unsigned max_grid, int force, char *err,
                               size_t errlen)
{
    char sym[256];
    snprintf(sym, sizeof sym, "%s__cu_raw", name);
    const int8_t *raw = static_cast<const int8_t *>(dlsym(self_handle(), sym));
    uint8_t red[NNK_MAX_TENSORS];
    for (int k = 0; k < nin + nout && k < NNK_MAX_TENSORS; k++)
        red[k] = reduced[k] || (raw && raw[k]); /* a raw input is no part of the iteration space */
    nnk_plan p;
    int rc = nnk_emu_plan_build(&p, nin, nout, views, red, reduction, naxes, axes, err, errlen);
    nnk_range_error range;
    memset(&range, 0, sizeof range);
    if (!rc && raw)
        rc = nnk_emu_plan_raw(&p, nin + nout, views, raw, &range, err, errlen);
    if (rc)
        return rc;
    for (int s = 0; s < nscalars && s < NNK_MAX_SCALARS; s++)
        p.scalars[s] = scalars[s];
    nnk_cuda_sizes sizes;
    memset(&sizes, 0, sizeof sizes);
    if (reduction) {
        snprintf(sym, sizeof sym, "%s__cu_sizes", name);
        const int32_t *s = static_cast<const int32_t *>(dlsym(self_handle(), sym));
        if (!s) {
            snprintf(err, errlen, "no %s in the generated CUDA", sym);
            return -2;
        }
        sizes.nphases = s[0];
        sizes.finals_size = s[1];
        for (int i = 0; i < s[0] && i < 64; i++)
            sizes.state_size[i] = s[2 + i];
        sizes.row_slots = s[0] >= 0 && s[0] <= 64 ? (s[2 + s[0]] >> 8) & 0xff : 0;
        sizes.row_bytes = s[0] >= 0 && s[0] <= 64 ? (s[2 + s[0]] >> 16) & 0xff : 0;
        sizes.row_inputs = s[0] >= 0 && s[0] <= 64 ? (s[2 + s[0]] >> 24) & 0xf : 0;
    }
    Emu e = {err, errlen, raw != nullptr, name};
    nnk_cuda_launcher L;
    memset(&L, 0, sizeof L);
    L.user = &e;
    L.launch = emu_launch;
    /* NAME__rd_srow's dynamic shared memory: 48 KB, a device without the
     * opt-in (NNK_EMU_SHARED: bytes; 0: no rd_srow) */
    L.launch_shm = emu_launch_shm;
    const char *shared = getenv("NNK_EMU_SHARED");
    L.max_shared = shared ? strtoul(shared, nullptr, 10) : 48 * 1024;
    L.alloc = emu_alloc;
    L.release = emu_release;
    L.num_sms = 4;
    L.block = block;
    L.max_grid = max_grid;
    L.force = force;
    /* NNK_EMU_PARTS: the split's blocks per output position (emu_extra.py's
     * tree merge of many parts, which 4 emulated SMs would never pick) */
    const char *parts = getenv("NNK_EMU_PARTS");
    L.parts = parts ? atoi(parts) : 0;
    L.has = emu_has;
    L.raw = raw != nullptr;
    L.range = raw ? &range : nullptr; /* the emulated device's memory is the host's */
    if (nnk_cuda_dispatch(name, reduction, &sizes, &p, &L, err, errlen))
        return -3;
    if (range.set) {
        snprintf(err, errlen, "range error: raw %d dim %d index %lld extent %lld", range.raw, range.dim,
                 (long long)range.index, (long long)range.extent);
        return -4;
    }
    return 0;
}
