/* emu_plan.c - the plan builder of generated code (templates/c/plan.h),
 * compiled once more for the CUDA emulation backend of the tests. */
#include "nnk/abi.h"

#include "c/plan.h"

int nnk_emu_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views, const uint8_t *reduced,
                       int32_t is_reduction, int32_t naxes, const int32_t *axes, char *err, unsigned long errlen);

int nnk_emu_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views, const uint8_t *reduced,
                       int32_t is_reduction, int32_t naxes, const int32_t *axes, char *err, unsigned long errlen)
{
    return nnk_plan_build(p, nin, nout, views, reduced, is_reduction, naxes, axes, err, errlen);
}

int nnk_emu_plan_raw(nnk_plan *p, int32_t nops, const nnk_view *const *views, const int8_t *slot, nnk_range_error *range,
                     char *err, unsigned long errlen);

int nnk_emu_plan_raw(nnk_plan *p, int32_t nops, const nnk_view *const *views, const int8_t *slot, nnk_range_error *range,
                     char *err, unsigned long errlen)
{
    return nnk_plan_raw_(p, nops, views, slot, range, err, errlen);
}
