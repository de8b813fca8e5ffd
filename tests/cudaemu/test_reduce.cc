// Driver for test_reduce.cu: block reductions, dynamic shared memory,
// grid-stride loops, multi-dimensional launches, determinism across
// CUDAEMU thread counts.
#include "test_reduce.cu"

#include <cmath>
#include <vector>

#include "test_util.h"

static double two_level_sum(const std::vector<double> &in, unsigned grid)
{
	std::vector<double> partial(grid), total(1);
	LAUNCH_OK(reduce_sum_f64, grid, BLOCK, 0, in.data(), partial.data(), (long long)in.size());
	LAUNCH_OK(reduce_sum_f64, 1, BLOCK, 0, partial.data(), total.data(), (long long)grid);
	return total[0];
}

TEST_IMPL(reduce)
{
	// Integers in doubles: every order of summation gives the exact value.
	note("two-level block reduction (static __shared__, 8 __syncthreads per block)");
	for (long long n : {1LL, 255LL, 256LL, 257LL, 1000003LL}) {
		std::vector<double> in((size_t)n);
		double expect = 0;
		for (long long i = 0; i < n; ++i) {
			in[(size_t)i] = (double)(i % 1000) - 400;
			expect += in[(size_t)i];
		}
		for (unsigned grid : {1u, 3u, 64u, 333u}) {
			const double got = two_level_sum(in, grid);
			CHECK(got == expect, "n=%lld grid=%u: sum %.17g, expected %.17g", n, grid, got,
			      expect);
		}
	}

	note("dynamic shared memory, block sizes that are not powers of two");
	{
		const int n = 100001;
		std::vector<float> in(n);
		for (int i = 0; i < n; ++i)
			in[i] = (float)((i * 7919) % 100003) - 5.0f;
		const float expect = 100002.0f - 5.0f;
		for (unsigned block : {1u, 31u, 33u, 96u, 200u, 1024u}) {
			const unsigned grid = 7;
			std::vector<float> out(grid), total(1);
			LAUNCH_OK(reduce_max_dyn, grid, block, block * sizeof(float), in.data(), out.data(), n);
			LAUNCH_OK(reduce_max_dyn, 1, block, block * sizeof(float), out.data(), total.data(),
			          (int)grid);
			CHECK(total[0] == expect, "block=%u: max %g, expected %g", block, total[0], expect);
		}
	}

	note("grid-stride saxpy with grids smaller than the data and odd sizes");
	for (int n : {1, 17, 1023, 65537}) {
		for (unsigned grid : {1u, 2u, 5u}) {
			std::vector<float> x(n), y(n);
			for (int i = 0; i < n; ++i) {
				x[i] = (float)i;
				y[i] = 1.0f;
			}
			LAUNCH_OK(saxpy, grid, 96, 0, 2.0f, x.data(), y.data(), n);
			int bad = 0;
			for (int i = 0; i < n; ++i)
				bad += y[i] != 2.0f * (float)i + 1.0f;
			CHECK(bad == 0, "n=%d grid=%u: %d wrong elements", n, grid, bad);
		}
	}

	note("3-D grids of 3-D blocks: threadIdx, blockIdx, blockDim, gridDim");
	{
		const dim3 grid(3, 2, 2), block(8, 4, 3);
		const unsigned tpb = block.x * block.y * block.z, nb = grid.x * grid.y * grid.z;
		std::vector<Who> out(tpb * nb);
		LAUNCH_OK(whoami, grid, block, 0, out.data());
		int bad = 0;
		for (unsigned b = 0; b < nb; ++b)
			for (unsigned t = 0; t < tpb; ++t) {
				const Who &w = out[b * tpb + t];
				bad += w.tx != t % 8 || w.ty != t / 8 % 4 || w.tz != t / 32 ||
				       w.bx != b % 3 || w.by != b / 3 % 2 || w.bz != b / 6 || w.dx != 8 ||
				       w.dy != 4 || w.dz != 3 || w.gx != 3 || w.gy != 2 || w.gz != 2;
			}
		CHECK(bad == 0, "%d threads saw wrong built-ins", bad);
	}

	note("2-D shared tile transpose (partial tiles at the edges)");
	{
		const int w = 70, h = 45;
		std::vector<int> in(w * h), out(w * h, -1);
		for (int i = 0; i < w * h; ++i)
			in[i] = i;
		LAUNCH_OK(transpose32, dim3((w + 31) / 32, (h + 31) / 32), dim3(32, 32), 0, in.data(),
		          out.data(), w, h);
		int bad = 0;
		for (int y = 0; y < h; ++y)
			for (int x = 0; x < w; ++x)
				bad += out[x * h + y] != in[y * w + x];
		CHECK(bad == 0, "%d elements misplaced", bad);
	}

	note("results are bit-identical with 1 and 2 OS threads (float sums, 64 blocks)");
	{
		const int n = 300007;
		std::vector<double> in(n);
		for (int i = 0; i < n; ++i)
			in[i] = std::sin((double)i) * 1e3;
		std::vector<double> p1(64), p2(64);
		cudaemu::set_threads(1);
		LAUNCH_OK(reduce_sum_f64, 64, BLOCK, 0, in.data(), p1.data(), (long long)n);
		cudaemu::set_threads(2);
		LAUNCH_OK(reduce_sum_f64, 64, BLOCK, 0, in.data(), p2.data(), (long long)n);
		cudaemu::set_threads(0);
		CHECK(std::memcmp(p1.data(), p2.data(), sizeof(double) * 64) == 0,
		      "partials differ between thread counts");
	}

	return test_finish("test_reduce");
}
