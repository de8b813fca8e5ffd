// Driver for test_errors.cu: every broken kernel must make its launch
// return an error whose message names the problem and where it happened,
// without hanging or aborting; a correct launch must work afterwards.
#include "test_errors.cu"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

// Kernels that are not CUDA at all (host-only C++), so they live here and
// not in the .cu that nvcc-check.sh compiles.
__global__ void throws(int *out)
{
	if (threadIdx.x == 5)
		throw std::runtime_error("boom");
	__syncthreads();
	out[threadIdx.x] = 1;
}

__global__ void launches_a_kernel(int *out)
{
	out[threadIdx.x] = CUDAEMU_LAUNCH(healthy, 1, 128, 0, out + 64);
}

static void check_recovery()
{
	std::vector<int> out(256, -1);
	LAUNCH_OK(healthy, 2, 128, 0, out.data());
	int bad = 0;
	for (int i = 0; i < 256; ++i) {
		const int t = i % 128, u = t ^ 16;
		bad += out[i] != (t + 1) % 128 + (u + 1) % 128;
	}
	CHECK(bad == 0, "the launch after an error computed %d wrong values", bad);
}

// The last launch returned `status`: check it and that the message
// contains every needle.
static std::string expect_error(int status, int expected,
                                std::initializer_list<const char *> needles)
{
	const std::string msg = cudaemu::last_error();
	std::printf("   -> status %d: %s\n", status, msg.c_str());
	CHECK(status == expected, "status %d, expected %d", status, expected);
	for (const char *needle : needles)
		CHECK(msg.find(needle) != std::string::npos, "the message lacks \"%s\"", needle);
	check_recovery();
	return msg;
}

// The line numbers that follow each "test_errors.cu:" in msg.
static std::vector<int> lines_in(const std::string &msg)
{
	std::vector<int> lines;
	const std::string key = "test_errors.cu:";
	for (size_t at = msg.find(key); at != std::string::npos; at = msg.find(key, at + 1))
		lines.push_back(std::atoi(msg.c_str() + at + key.size()));
	return lines;
}

TEST_IMPL(errors)
{
	std::vector<float> f(4096);
	std::vector<int> i(4096);
	const int FAIL = CUDAEMU_LAUNCH_FAILURE;

	for (unsigned threads : {1u, 2u}) {
		cudaemu::set_threads(threads);
		note("(with %u OS thread%s)", threads, threads == 1 ? "" : "s");

		note("early return before __syncthreads (threads 0-4 exit first)");
		expect_error(CUDAEMU_LAUNCH(early_return, 4, 64, 0, f.data()), FAIL,
		             {"kernel 'early_return'", "blockIdx (0,0,0)", "barrier divergence",
		              "thread (5,0,0)", "has already exited", "test_errors.cu:"});

		note("return while the other threads wait at __syncthreads");
		expect_error(CUDAEMU_LAUNCH(late_return, 2, 64, 0, f.data()), FAIL,
		             {"barrier divergence", "thread (63,0,0) exited while", "__syncthreads()",
		              "test_errors.cu:"});

		note("different __syncthreads() in the two branches of an if");
		{
			const std::vector<int> lines = lines_in(expect_error(
			    CUDAEMU_LAUNCH(divergent_barriers, 1, 64, 0, f.data()), FAIL,
			    {"barrier divergence", "divergent_barriers", "thread (1,0,0)",
			     "thread (0,0,0) waits"}));
			CHECK(lines.size() == 2 && lines[0] != lines[1] && lines[0] > 0 && lines[1] > 0,
			      "expected the two call sites, on different lines");
		}

		note("shuffle mask naming a lane that has exited");
		expect_error(CUDAEMU_LAUNCH(shfl_exited_lane, 1, 32, 0, i.data()), FAIL,
		             {"__shfl_down_sync() at", "mask 0xffffffff names lane 0",
		              "which has exited"});

		note("a lane exits while its warp waits for it in a shuffle");
		expect_error(CUDAEMU_LAUNCH(lane_exits_during_shuffle, 1, 32, 0, i.data()), FAIL,
		             {"thread (7,0,0) exited while lane 0",
		              "__shfl_down_sync(mask=0xffffffff) at", "whose mask names it"});

		note("calling lane not in its own mask");
		expect_error(CUDAEMU_LAUNCH(shfl_not_in_mask, 1, 32, 0, i.data()), FAIL,
		             {"__shfl_sync()", "lane 16", "is not in mask 0x0000ffff"});

		note("full mask in a partial warp (40 threads)");
		expect_error(CUDAEMU_LAUNCH(shfl_missing_lane, 1, 40, 0, i.data()), FAIL,
		             {"__shfl_xor_sync()", "names lane 8", "does not exist", "40 threads"});

		note("different primitives with the same mask (ballot vs shuffle)");
		expect_error(CUDAEMU_LAUNCH(mismatched_primitives, 1, 32, 0, i.data()), FAIL,
		             {"warp divergence", "lane 31", "__ballot_sync(mask=0xffffffff)",
		              "__shfl_sync(int, mask=0xffffffff)"});

		note("a lane at __syncthreads while its warp waits for it in a shuffle");
		expect_error(CUDAEMU_LAUNCH(shfl_vs_barrier, 1, 64, 0, i.data()), FAIL,
		             {"deadlock", "thread (3,0,0)", "__syncthreads()", "__shfl_xor_sync"});

		note("a cycle of __syncwarp masks: found when no thread can run");
		expect_error(CUDAEMU_LAUNCH(three_way_deadlock, 1, 32, 0, i.data()), FAIL,
		             {"deadlock: no thread of the block can proceed",
		              "1 thread (0,0,0) waits in __syncwarp(mask=0x00000003)",
		              "__syncwarp(mask=0x00000006)", "__syncwarp(mask=0x00000005)",
		              "29 threads (first (3,0,0)) exited"});

		note("shuffle width that is not a power of two");
		expect_error(CUDAEMU_LAUNCH(bad_width, 1, 32, 0, i.data()), FAIL,
		             {"width 12 is not a power of two"});

		note("misaligned float4 __ldg");
		{
			std::vector<float4> out(32);
			expect_error(CUDAEMU_LAUNCH(misaligned_ldg, 1, 32, 0, f.data(), out.data()), FAIL,
			             {"__ldg()", "float4", "not 16-byte aligned", "thread (0,0,0)"});
		}

		note("exception escaping a kernel");
		expect_error(CUDAEMU_LAUNCH(throws, 1, 32, 0, i.data()), FAIL,
		             {"thread (5,0,0)", "exception escaped the kernel: boom"});

		note("the lowest failing block is reported (blocks 3.. fail, 16 blocks)");
		for (int rep = 0; rep < 5; ++rep)
			expect_error(CUDAEMU_LAUNCH(fails_from_block_3, 16, 64, 0, i.data()), FAIL,
			             {"blockIdx (3,0,0)"});

		note("a kernel that launches a kernel gets an error, its own launch works");
		{
			std::vector<int> out(256, -1);
			LAUNCH_OK(launches_a_kernel, 1, 32, 0, out.data());
			CHECK(out[0] == CUDAEMU_INVALID_VALUE, "nested launch returned %d", out[0]);
			CHECK(*cudaemu::last_error() == 0, "stale message: %s", cudaemu::last_error());
		}
	}
	cudaemu::set_threads(0);

	note("invalid configurations");
	expect_error(CUDAEMU_LAUNCH(healthy, 1, dim3(64, 32), 0, i.data()),
	             CUDAEMU_INVALID_CONFIGURATION, {"more than 1024 threads per block"});
	expect_error(CUDAEMU_LAUNCH(healthy, 1, 1025, 0, i.data()), CUDAEMU_INVALID_CONFIGURATION,
	             {"exceed (1024, 1024, 64)"});
	expect_error(CUDAEMU_LAUNCH(healthy, 1, dim3(1, 1, 65), 0, i.data()),
	             CUDAEMU_INVALID_CONFIGURATION, {"exceed (1024, 1024, 64)"});
	expect_error(CUDAEMU_LAUNCH(healthy, dim3(2, 0), 32, 0, i.data()),
	             CUDAEMU_INVALID_CONFIGURATION, {"dimension is 0"});
	expect_error(CUDAEMU_LAUNCH(healthy, 1, 32, 300000, i.data()), CUDAEMU_INVALID_CONFIGURATION,
	             {"dynamic shared memory"});

	note("C entry points reject what they cannot forward");
	{
		struct Small { int *p; } small = {i.data()};
		void *params[] = {&small};
		expect_error(cudaemu_launch_kernel("small", (cudaemu_kernel_fn)healthy, 1, 1, 1, 32, 1, 1,
		                                   0, params, sizeof small),
		             CUDAEMU_INVALID_VALUE, {"kernel 'small'", "17..32764 bytes", "got 8"});
		expect_error(cudaemu_launch_thunk("nothing", nullptr, nullptr, 1, 1, 1, 1, 1, 1, 0),
		             CUDAEMU_INVALID_VALUE, {"kernel 'nothing'", "no kernel"});
	}

	return test_finish("test_errors");
}
