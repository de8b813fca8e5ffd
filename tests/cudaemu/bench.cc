// Speed of the emulation layer: launches of 1M-element kernels, with 1 and
// 2 OS threads.  Checks the results too, so it doubles as a test; the
// timings are printed, never judged (machines differ).
//     tests/cudaemu/bench            (CUDAEMU_BENCH_REPS=n for more repetitions)
#include "bench.cu"

#include <algorithm>
#include <chrono>
#include <vector>

#include "test_util.h"

template <class F>
static double best_ms(int reps, F run)
{
	std::vector<double> t;
	for (int r = 0; r < reps; ++r) {
		const auto t0 = std::chrono::steady_clock::now();
		run();
		t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
	}
	return *std::min_element(t.begin(), t.end());
}

TEST_IMPL(bench)
{
	const int n = 1 << 20;
	const char *env = std::getenv("CUDAEMU_BENCH_REPS");
	const int reps = env && std::atoi(env) > 0 ? std::atoi(env) : 5;
	std::vector<float> x(n), y(n), partial(256), total(1), chunks(n / 32);
	for (int i = 0; i < n; ++i)
		x[i] = (float)(i % 16);

	for (unsigned threads : {1u, 2u}) {
		cudaemu::set_threads(threads);
		note("%u OS thread%s, best of %d", threads, threads == 1 ? "" : "s", reps);

		const double a1 = best_ms(reps, [&] {
			LAUNCH_OK(bench_axpy, 256, 256, 0, x.data(), y.data(), 2.0f, n);
		});
		const double a2 = best_ms(reps, [&] {
			LAUNCH_OK(bench_axpy, n / 256, 256, 0, x.data(), y.data(), 2.0f, n);
		});
		std::fill(y.begin(), y.end(), 1.0f);
		LAUNCH_OK(bench_axpy, 256, 256, 0, x.data(), y.data(), 2.0f, n);
		int bad = 0;
		for (int i = 0; i < n; ++i)
			bad += y[i] != 2.0f * (float)(i % 16) + 1.0f;
		CHECK(bad == 0, "axpy: %d wrong", bad);
		std::printf("   (a) 1M-element elementwise, grid-stride, 256 blocks x 256: %8.2f ms\n", a1);
		std::printf("       same, one element per thread, 4096 blocks x 256:     %8.2f ms\n", a2);

		const double b = best_ms(reps, [&] {
			LAUNCH_OK(bench_block_sum, 256, 256, 0, x.data(), partial.data(), n);
			LAUNCH_OK(bench_block_sum, 1, 256, 0, partial.data(), total.data(), 256);
		});
		CHECK(total[0] == 7.5f * n, "sum %g", total[0]);
		std::printf("   (b) 1M-element two-level block reduction (257 blocks x 256, 9 barriers "
		            "each): %8.2f ms\n", b);

		const double c = best_ms(reps, [&] {
			LAUNCH_OK(bench_warp_chunks, 256, 256, 0, x.data(), chunks.data(), n);
		});
		bad = 0;
		for (int k = 0; k < n / 32; ++k)
			bad += chunks[k] != 240.0f; // 2 x (0 + 1 + ... + 15)
		CHECK(bad == 0, "warp chunks: %d wrong", bad);
		std::printf("   (c) 1M-element warp reductions, 5 __shfl_down_sync each (5.2M shuffles): "
		            "%8.2f ms\n", c);

		std::vector<int> out(64 * 256);
		const double d = best_ms(reps, [&] { LAUNCH_OK(bench_barriers, 64, 256, 0, out.data()); });
		bad = 0;
		for (int k = 0; k < 64 * 256; ++k) {
			const int t = k % 256, v1 = t + (t + 1) % 256, v2 = v1 + ((t + 1) % 256 + (t + 2) % 256);
			bad += out[k] != v2;
		}
		CHECK(bad == 0, "barriers: %d wrong", bad);
		std::printf("   (d) 64 blocks x 256 threads, 4 __syncthreads each:                      "
		            "%8.2f ms\n", d);
	}
	cudaemu::set_threads(0);
	return test_finish("bench");
}
