/* abi_kernels.h - kernel descriptors written by hand against nnk/abi.h,
 * for the ABI tests: they exercise every member the runtime uses without
 * depending on the compiler. */
#ifndef NNK_TEST_ABI_KERNELS_H
#define NNK_TEST_ABI_KERNELS_H

#include "nnk/abi.h"

/* saxpy(a: f32 = 2, x: f32[], y: f32[]) -> (z: f32[]): z = a * x + y */
extern const nnk_kernel_desc abi_saxpy;
/* sum(x: f64[]) -> (r: f64), with red_partial/merge/final/epilogue */
extern const nnk_kernel_desc abi_sum;
/* center(x: f64[]) -> (y: f64[], m: f64): m = mean(x); y = x - m (epilogue) */
extern const nnk_kernel_desc abi_center;
/* argmax(x: f64[]) -> (i: i64): sets argmax_empty_error */
extern const nnk_kernel_desc abi_argmax;
/* take(raw t: f32[], k: i64[]) -> (y: f32[]): y = t[k], a flat index into
 * t's own 1-D view; an index out of range sets the plan's range error */
extern const nnk_kernel_desc abi_take;
/* bump(x: f32[], inout y: f32[]): y = y + x (the inout output after the declared ones) */
extern const nnk_kernel_desc abi_bump;
/* a bad descriptor: an inout output with no inout input of its name */
extern const nnk_kernel_desc abi_bad_inout;

#endif
