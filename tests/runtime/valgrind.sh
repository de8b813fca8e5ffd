#!/bin/sh
# Runs a subset of the runtime tests under valgrind: no leaks, no invalid
# accesses.  Skipped (77) without valgrind and in sanitizer builds.  The
# compiler's waiter (compiler/spawn.c) is a forked copy that never execs:
# its exit is not checked for leaks (--child-silent-after-fork).
: "${top_builddir:=.}"
command -v valgrind >/dev/null 2>&1 || exit 77
grep -q 'fsanitize' "$top_builddir/Makefile" 2>/dev/null && grep -q '^SAN_FLAGS = -f' "$top_builddir/Makefile" && exit 77
# The JIT compiles for the host (-march=native); valgrind 3.19 cannot decode
# AVX-512 (SIGILL in a JIT-compiled kernel), so on such a host the JIT
# targets AVX2 here (NNK_JIT_MARCH, docs/runtime.md).
if grep -q '^flags.* avx512f' /proc/cpuinfo 2>/dev/null; then
    NNK_JIT_MARCH=${NNK_VALGRIND_MARCH:-x86-64-v3}
    export NNK_JIT_MARCH
    echo "valgrind: the host has AVX-512; the JIT targets $NNK_JIT_MARCH"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-valgrind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
for t in errors contexts arrays conversions allocator abi_saxpy abi_reductions backends jit_caches jit_parts jit_errors threads module jit_fn; do
    NNK_TEST_ONLY=$t NNK_CACHE_DIR="$tmp/cache" "$top_builddir/libtool" --mode=execute \
        valgrind -q --child-silent-after-fork=yes --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=1 \
        --suppressions=/dev/null "$top_builddir/tests/runtime/test_runtime" >"$tmp/$t.log" 2>&1 \
        || { echo "valgrind: $t failed"; cat "$tmp/$t.log"; status=1; }
done
exit $status
