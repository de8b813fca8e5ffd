/* ptx_lint.h - a scan of PTX for the shapes of a device-compiler
 * miscompile (docs/cuda-backend.md, "PTX lint"):
 *
 *  - a global (or generic) load, store or atomic inside a loop whose
 *    address register is, unchanged, a kernel-parameter pointer (one
 *    definition: cvta.to.global of an ld.param, or the ld.param itself) -
 *    every iteration reads or writes the same element, as the split
 *    reductions of CUDA 13.0 did (NAME__rd_part read data[0] only);
 *  - a memory access through a register that nothing defines;
 *  - local memory (ld.local, st.local) in a NAME__rd_row kernel, whose
 *    row array must stay in registers (docs/cuda-backend.md, "The row on
 *    chip"), or in a NAME__rd_srow kernel (the row in shared memory).
 *
 * ptx_lint prints one line per finding, "LABEL: kernel K: ..." (at most
 * 20 per kernel), counts kernels in *nkernels, and returns the number of
 * findings.  Used by nvrtc_check (NVRTC PTX) and the ptx_lint program
 * (PTX files nvcc kept). */
#ifndef NNK_PTX_LINT_H
#define NNK_PTX_LINT_H

#include <stdio.h>

int ptx_lint(const char *ptx, const char *label, FILE *out, int *nkernels);

#endif
