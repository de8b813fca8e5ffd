/* test-list.h - the cudaemu self-tests, run by run-tests (libuv's
 * test/test-list.h shape).  A test is TEST_IMPL(name) in a driver that
 * #includes its kernels (NAME.cu, plain CUDA that nvcc also compiles:
 * nvcc-check.sh); adding one is a line here, one there, and the driver in
 * Makefile.am's CUDAEMU_TESTS.  The including file defines the macros. */
TEST_DECLARE(reduce)     /* block reductions, dynamic shared memory, grid-stride loops, 3-D launches */
TEST_DECLARE(warp)       /* shuffles, votes, __syncwarp, warp scans */
TEST_DECLARE(errors)     /* early returns, deadlocks and misuse reported as errors */
TEST_DECLARE(atomics)    /* every atomic, last-block patterns, histograms */
TEST_DECLARE(halfconv)   /* __half / __nv_bfloat16 conversions against the rounding rules */
TEST_DECLARE(vector)     /* vector loads and stores (float4, int2, ...) */
TEST_DECLARE(capi)       /* the C entry points (cudaemu_launch.h) from a C driver */
TEST_DECLARE(shared_oob) /* out-of-bounds shared memory under AddressSanitizer (skips without) */
TEST_DECLARE(bench)      /* launch speed, 1 and 2 OS threads (results checked, times printed) */

TASK_LIST_START
TEST_ENTRY(reduce)
TEST_ENTRY(warp)
TEST_ENTRY(errors)
TEST_ENTRY(atomics)
TEST_ENTRY(halfconv)
TEST_ENTRY(vector)
TEST_ENTRY(capi)
TEST_ENTRY(shared_oob)
TEST_ENTRY(bench)
TASK_LIST_END
