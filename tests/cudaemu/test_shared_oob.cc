// Driver for test_shared_oob.cu: in a sanitizer build, every out-of-bounds
// shared-memory access must be reported (the report ends the process, so
// each case runs in a child process).  Skipped (77) without
// AddressSanitizer.
#include "test_shared_oob.cu"

#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

#ifdef HAVE_ASAN
// Run f in a child; return its exit status and what it wrote to stderr.
template <class F>
static int in_child(F f, std::string &err)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	std::fflush(stdout);
	const pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		cudaemu::set_threads(1);
		f();
		_exit(0); // the access went unnoticed
	}
	close(fds[1]);
	char buf[4096];
	ssize_t n;
	while ((n = read(fds[0], buf, sizeof buf)) > 0)
		err.append(buf, (size_t)n);
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return status;
}

static void expect_report(const char *what, int status, const std::string &err,
                          std::initializer_list<const char *> needles)
{
	const size_t at = err.find("ERROR") == std::string::npos ? 0 : err.find("ERROR");
	std::printf("   -> %s\n", err.substr(at, err.find('\n', at) - at).c_str());
	CHECK(status != 0, "%s: not reported", what);
	for (const char *needle : needles)
		CHECK(err.find(needle) != std::string::npos, "%s: the report lacks \"%s\"", what, needle);
}
#endif

TEST_IMPL(shared_oob)
{
#ifndef HAVE_ASAN
	std::printf("test_shared_oob: SKIP: needs a build with AddressSanitizer (--enable-sanitizers)\n");
	return 77;
#else
	static float out[128];
	std::string err;

	note("dynamic shared memory: one element past the end (ASan, exact size)");
	int st = in_child([] { CUDAEMU_LAUNCH(dynamic_overflow, 1, 64, 64 * sizeof(float), out); }, err);
	expect_report("overflow", st, err, {"AddressSanitizer", "dynamic_overflow", "test_shared_oob.cu:"});

	note("dynamic shared memory: one element before the start (ASan, guard zone)");
	err.clear();
	st = in_child([] { CUDAEMU_LAUNCH(dynamic_underflow, 1, 64, 64 * sizeof(float), out, 1); }, err);
	expect_report("underflow", st, err, {"AddressSanitizer", "dynamic_underflow", "test_shared_oob.cu:"});

	note("in bounds: the same kernels with exact sizes run clean");
	LAUNCH_OK(dynamic_overflow, 1, 64, 65 * sizeof(float), out);
	LAUNCH_OK(dynamic_underflow, 1, 64, 64 * sizeof(float), out, 0);

	note("static __shared__ array indexed past its end (UBSan's bounds check)");
	err.clear();
	st = in_child([] { CUDAEMU_LAUNCH(static_overflow, 1, 128, 0, out); }, err);
	if (st == 0 && err.empty())
		std::printf("   (not reported: this build has no -fsanitize=bounds)\n");
	else
		expect_report("static", st, err, {"out of bounds", "test_shared_oob.cu:"});

	return test_finish("test_shared_oob");
#endif
}
