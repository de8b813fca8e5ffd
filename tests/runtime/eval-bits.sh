#!/bin/sh
# The first-call evaluator (compiler/eval.c) against the compiled code, bit
# for bit, over every elementwise kernel of the conformance kernels
# (tests/runtime/eval_bits.c; docs/runtime.md, "The first call").  About
# 20 s of CPU, nearly all of it the C compiles of the reference objects:
# skipped (77) in sanitizer builds, whose test_runtime runs the evaluator
# too (a module's first launches), and under ThreadSanitizer make
# check-tsan runs `eval_bits --threads`.
: "${top_builddir:=.}" "${top_srcdir:=..}"
grep -q '^SAN_FLAGS = -f' "$top_builddir/Makefile" 2>/dev/null && exit 77
NNK_JIT_JOBS=1 exec "$top_builddir/tests/runtime/eval_bits" "$top_srcdir"/tests/conformance/kernels/*.nnk
