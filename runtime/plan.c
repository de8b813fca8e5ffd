/* plan.c - the runtime's use of the plan builder that generated code
 * shares (templates/c/plan.h, included as text so the broadcasting and
 * coalescing rules exist once). */
#include "internal.h"

#include "c/plan.h"

nnk_status rt_plan_build(nnk_plan *p, int32_t nin, int32_t nout, const nnk_view *const *views, const uint8_t *reduced,
                         bool is_reduction, int32_t naxes, const int32_t *axes)
{
    char msg[512];
    int r = nnk_plan_build(p, nin, nout, views, reduced, is_reduction, naxes, axes, msg, sizeof msg);
    switch (r) {
    case NNK_PLAN_OK: return NNK_OK;
    case NNK_PLAN_EARGS: return rt_error(NNK_EINVAL, "%s", msg);
    default: return rt_error(NNK_ESHAPE, "%s", msg);
    }
}
