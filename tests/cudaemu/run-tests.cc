// run-tests.cc - the one program of the cudaemu self-tests (libuv's
// runner): every test of test-list.h in a child process of its own, so a
// crash, an abort or a sanitizer report fails that test only and each
// starts from a fresh emulator (thread count, error state).
//     tests/cudaemu/run-tests          every test; exit 1 if one failed
//     tests/cudaemu/run-tests NAME     one test, in this process (a debugger)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_DECLARE(name) extern "C" int run_test_##name(void);
#define TASK_LIST_START static const struct { const char *name; int (*run)(void); } tasks[] = {
#define TEST_ENTRY(name) {#name, run_test_##name},
#define TASK_LIST_END };
#include "test-list.h"

enum { NTASKS = sizeof tasks / sizeof tasks[0] };

static int run_in_child(int i)
{
	std::fflush(stdout);
	const pid_t pid = fork();
	if (pid < 0) {
		std::perror("run-tests: fork");
		return -1;
	}
	if (pid == 0)
		std::exit(tasks[i].run()); // exit, as returning from a main would
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		;
	if (WIFSIGNALED(status)) {
		std::printf("%s: killed by signal %d\n", tasks[i].name, WTERMSIG(status));
		return -1;
	}
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	if (argc == 2) {
		for (int i = 0; i < NTASKS; ++i)
			if (std::strcmp(argv[1], tasks[i].name) == 0)
				return tasks[i].run();
		std::fprintf(stderr, "run-tests: no test '%s'\n", argv[1]);
		return 2;
	}
	int failed = 0, passed = 0;
	for (int i = 0; i < NTASKS; ++i) {
		std::printf("== %s\n", tasks[i].name);
		const auto t0 = std::chrono::steady_clock::now();
		const int rc = run_in_child(i);
		const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		const char *verdict = rc == 0 ? "PASS" : rc == 77 ? "SKIP" : "FAIL";
		std::printf("%s: %s (%.1f s)\n", verdict, tasks[i].name, s);
		failed += rc != 0 && rc != 77;
		passed += rc == 0;
	}
	std::printf("run-tests: %d passed, %d failed, %d skipped\n", passed, failed, NTASKS - passed - failed);
	return failed ? 1 : passed ? 0 : 77;
}
