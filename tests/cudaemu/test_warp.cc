// Driver for test_warp.cu.  The expected shuffle results are computed
// from the CUDA programming guide's description of each primitive, not
// from the PTX formula the layer implements.
#include "test_warp.cu"

#include <vector>

#include "test_util.h"

// CUDA C++ Programming Guide, "Warp Shuffle Functions".
static int ref_idx(int lane, int src, int width) { return (lane & ~(width - 1)) + src % width; }
static int ref_up(int lane, int delta, int width)
{
	return lane % width >= delta ? lane - delta : lane;
}
static int ref_down(int lane, int delta, int width)
{
	return lane % width + delta < width ? lane + delta : lane;
}
static int ref_xor(int lane, int mask, int width)
{
	const int src = lane ^ mask; // later groups (or beyond the warp): own value
	return src / width > lane / width || src > 31 ? lane : src;
}

template <class T>
static void check_sums(const char *type)
{
	const unsigned n = 256;
	std::vector<T> in(n), down(n), xored(n);
	for (unsigned i = 0; i < n; ++i)
		in[i] = (T)(i % 7 + 1) * (T)(sizeof(T) == 8 ? 1e9 : 1); // 64-bit types need 64 bits
	LAUNCH_OK(warp_sums<T>, 2, 128, 0, in.data(), down.data(), xored.data());
	int bad_down = 0, bad_xor = 0;
	for (unsigned w = 0; w < n / 32; ++w) {
		T total = 0;
		for (unsigned l = 0; l < 32; ++l)
			total += in[w * 32 + l];
		bad_down += down[w * 32] != total;
		for (unsigned l = 0; l < 32; ++l)
			bad_xor += xored[w * 32 + l] != total;
	}
	CHECK(bad_down == 0 && bad_xor == 0, "%s: %d wrong __shfl_down_sync sums, %d wrong "
	      "__shfl_xor_sync sums", type, bad_down, bad_xor);
}

TEST_IMPL(warp)
{
	note("block reduction from __shfl_down_sync/__shfl_xor_sync warp sums");
	for (unsigned block : {32u, 64u, 256u, 1024u}) {
		const int n = 123457;
		std::vector<float> in(n), out(9), total(1);
		double expect = 0;
		for (int i = 0; i < n; ++i) {
			in[i] = (float)(i % 5);
			expect += in[i];
		}
		LAUNCH_OK(block_sum_shfl, 9, block, 0, in.data(), out.data(), n);
		LAUNCH_OK(block_sum_shfl, 1, 32, 0, out.data(), total.data(), 9);
		CHECK(total[0] == (float)expect, "block=%u: %g, expected %g", block, total[0], expect);
	}

	note("warp sums for int, unsigned, long long, unsigned long long, float, double");
	check_sums<int>("int");
	check_sums<unsigned>("unsigned");
	check_sums<long long>("long long");
	check_sums<unsigned long long>("unsigned long long");
	check_sums<float>("float");
	check_sums<double>("double");

	note("__shfl_sync/_up/_down/_xor with width 1..32 against the programming guide");
	{
		const unsigned n = 64;
		std::vector<int> in(n), idx(n), up(n), down(n), bfly(n);
		for (unsigned i = 0; i < n; ++i)
			in[i] = 1000 + (int)i;
		for (int width = 1; width <= 32; width *= 2)
			for (int src : {0, 3, 17, 31, 45})
				for (int delta : {0, 1, 3, 8, 16, 31, 32, 40}) {
					LAUNCH_OK(shuffles_width, 1, n, 0, in.data(), idx.data(), up.data(),
					          down.data(), bfly.data(), width, src, delta);
					int bad = 0;
					for (unsigned i = 0; i < n; ++i) {
						const int lane = (int)(i % 32), base = (int)(i - i % 32);
						bad += idx[i] != in[base + ref_idx(lane, src, width)];
						bad += up[i] != in[base + ref_up(lane, delta, width)];
						bad += down[i] != in[base + ref_down(lane, delta, width)];
						bad += bfly[i] != in[base + ref_xor(lane, delta, width)];
					}
					CHECK(bad == 0, "width=%d src=%d delta=%d: %d wrong results", width,
					      src, delta, bad);
				}
	}

	note("inclusive warp scan with __shfl_up_sync");
	{
		std::vector<int> in(96), out(96);
		for (int i = 0; i < 96; ++i)
			in[i] = i * i % 11;
		LAUNCH_OK(warp_scan, 1, 96, 0, in.data(), out.data());
		int bad = 0;
		for (int w = 0; w < 3; ++w) {
			int acc = 0;
			for (int l = 0; l < 32; ++l) {
				acc += in[w * 32 + l];
				bad += out[w * 32 + l] != acc;
			}
		}
		CHECK(bad == 0, "%d wrong prefix sums", bad);
	}

	note("__ballot_sync, __any_sync, __all_sync, __activemask");
	{
		const unsigned n = 128;
		std::vector<int> pred(n);
		std::vector<unsigned> out(4 * n);
		for (unsigned i = 0; i < n; ++i) // warp 0 mixed, warp 1 none, warp 2 all, warp 3 one
			pred[i] = i < 32 ? (int)(i % 3 == 0) * 7 : i < 64 ? 0 : i < 96 ? -1 : i == 100;
		LAUNCH_OK(votes, 1, n, 0, pred.data(), out.data());
		int bad = 0;
		for (unsigned w = 0; w < 4; ++w) {
			unsigned ballot = 0;
			for (unsigned l = 0; l < 32; ++l)
				ballot |= (unsigned)(pred[w * 32 + l] != 0) << l;
			for (unsigned l = 0; l < 32; ++l) {
				const unsigned *o = &out[4 * (w * 32 + l)];
				bad += o[0] != ballot || o[1] != (ballot != 0) || o[2] != (ballot == ~0u) ||
				       o[3] != ~0u;
			}
		}
		CHECK(bad == 0, "%d lanes voted wrong", bad);
	}

	note("a partial last warp (48 threads): masks and __activemask cover 16 lanes");
	{
		std::vector<int> out(96);
		LAUNCH_OK(partial_warp, 1, 48, 0, out.data());
		int bad = 0;
		// Each lane sums its aligned 16-lane group (16 * base + 0+1+...+15);
		// warp 0 then takes lane (lane & 15)'s value, from group 0.
		for (unsigned t = 0; t < 48; ++t) {
			bad += out[2 * t] != (t < 32 ? 120 : 16 * 32 + 120);
			bad += out[2 * t + 1] != (t < 32 ? -1 : 0xffff);
		}
		CHECK(bad == 0, "%d wrong values", bad);
	}

	note("disjoint masks in one warp (two halves), then __syncwarp");
	{
		std::vector<int> out(64);
		LAUNCH_OK(split_halves, 1, 64, 0, out.data());
		int bad = 0;
		for (unsigned t = 0; t < 64; ++t)
			bad += out[t] != (t % 32 < 16 ? 120 : 752);
		CHECK(bad == 0, "%d wrong values", bad);
	}

	note("__syncwarp orders shared memory within a warp");
	{
		std::vector<int> out(64);
		LAUNCH_OK(syncwarp_exchange, 1, 64, 0, out.data());
		int bad = 0;
		for (unsigned t = 0; t < 64; ++t)
			bad += out[t] != (int)(((t & ~31u) | ((t + 1) & 31u)) * 3);
		CHECK(bad == 0, "%d wrong values", bad);
	}

	note("per-lane source lanes, 64-bit values (double rotation)");
	{
		std::vector<double> in(64), out(64);
		for (int i = 0; i < 64; ++i)
			in[i] = 1.0 / (i + 1);
		LAUNCH_OK(rotate, 2, 32, 0, in.data(), out.data(), 5);
		int bad = 0;
		for (int i = 0; i < 64; ++i)
			bad += out[i] != in[(i & ~31) + (i % 32 + 5) % 32];
		CHECK(bad == 0, "%d wrong values", bad);
	}

	return test_finish("test_warp");
}
