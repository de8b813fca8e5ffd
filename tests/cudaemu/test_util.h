// test_util.h: checks and launch helpers shared by the cudaemu self-test
// drivers (host code; the kernels live in the matching .cu files).  A
// driver is TEST_IMPL(name), listed in test-list.h and run by run-tests.
#ifndef CUDAEMU_TEST_UTIL_H
#define CUDAEMU_TEST_UTIL_H

#include <cstdarg>
#include <cstdio>
#include <cstring>

static int test_failures;
static int test_checks;

// Print what is being checked, so that a log shows the coverage.
__attribute__((format(printf, 1, 2))) static inline void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::printf("-- ");
	std::vprintf(fmt, ap);
	std::printf("\n");
	va_end(ap);
	std::fflush(stdout);
}

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		++test_checks;                                                    \
		if (!(cond)) {                                                    \
			++test_failures;                                          \
			std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			std::printf(__VA_ARGS__);                                 \
			std::printf("\n");                                        \
		}                                                                 \
	} while (0)

// A launch that must succeed.
#define LAUNCH_OK(...)                                                                      \
	do {                                                                                \
		const int launch_status_ = CUDAEMU_LAUNCH(__VA_ARGS__);                     \
		CHECK(launch_status_ == 0, "launch failed (%d): %s", launch_status_,        \
		      cudaemu::last_error());                                               \
	} while (0)

// The test function run-tests calls: 0 passed, 1 failed, 77 skipped.
#define TEST_IMPL(name) extern "C" int run_test_##name(void)

static inline int test_finish(const char *name)
{
	if (test_failures) {
		std::printf("%s: %d of %d checks FAILED\n", name, test_failures, test_checks);
		return 1;
	}
	std::printf("%s: all %d checks passed\n", name, test_checks);
	return 0;
}

#endif
