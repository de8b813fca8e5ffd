// Driver for test_atomics.cu, run with 1 and 2 OS threads so that blocks
// really race on the atomics.
#include "test_atomics.cu"

#include <algorithm>
#include <climits>
#include <vector>

#include "test_util.h"

TEST_IMPL(atomics)
{
	for (unsigned threads : {1u, 2u}) {
		cudaemu::set_threads(threads);
		note("atomicAdd/Max/Min/CAS on every documented type, 37 blocks x 96 (%u OS thread%s)",
		     threads, threads == 1 ? "" : "s");
		const int n = 3500; // < 37 * 96: some threads of the last block do nothing
		for (int rep = 0; rep < 3; ++rep) {
			Counters c = {};
			c.imax = INT_MIN;
			c.imin = INT_MAX;
			c.umin = UINT_MAX;
			c.llmax = LLONG_MIN;
			c.llmin = LLONG_MAX;
			c.ullmin = ULLONG_MAX;
			LAUNCH_OK(atomics_all, 37, 96, 0, &c, n);
			CHECK(c.i == n && c.u == 2u * n && c.ull == (3ull << 32) * n, "integer sums %d %u %llu",
			      c.i, c.u, c.ull);
			CHECK(c.f == 0.5f * n && c.d == 0.25 * n, "float sums %g %g", c.f, c.d);
			CHECK(c.imax == n - 1 - n / 2 && c.imin == -n / 2, "int max/min %d %d", c.imax, c.imin);
			CHECK(c.umax == 3u * (n - 1) && c.umin == 5u, "unsigned max/min %u %u", c.umax, c.umin);
			CHECK(c.llmax == (long long)(n - 1 - n / 2) << 33 && c.llmin == (long long)(-n / 2) * (1LL << 33),
			      "long long max/min %lld %lld", c.llmax, c.llmin);
			CHECK(c.ullmax == (unsigned long long)(n - 1) << 40 && c.ullmin == 9,
			      "unsigned long long max/min %llu %llu", c.ullmax, c.ullmin);
			CHECK(c.cas_i == n && c.cas_u == 3u * n && c.cas_ull == (1ull << 35) * n,
			      "CAS counters %d %u %llu", c.cas_i, c.cas_u, c.cas_ull);
		}

		note("atomicExch on int, unsigned, unsigned long long, float");
		{
			const int n = 2000;
			int slot = -1;
			unsigned uslot = 0xffffffffu;
			unsigned long long llslot = ~0ull;
			float fslot = -1.0f;
			std::vector<int> seen(n);
			std::vector<unsigned> useen(n);
			std::vector<unsigned long long> llseen(n);
			std::vector<float> fseen(n);
			LAUNCH_OK(exchange, 16, 128, 0, &slot, seen.data(), useen.data(), &uslot, &llslot,
			          llseen.data(), &fslot, fseen.data(), n);
			seen.push_back(slot);
			useen.push_back(uslot);
			llseen.push_back(llslot);
			fseen.push_back(fslot);
			std::sort(seen.begin(), seen.end());
			std::sort(useen.begin(), useen.end());
			std::sort(llseen.begin(), llseen.end());
			std::sort(fseen.begin(), fseen.end());
			int bad = 0;
			bad += seen[0] != -1 || useen[n] != 0xffffffffu || llseen[n] != ~0ull ||
			       fseen[0] != -1.0f;
			for (int k = 0; k < n; ++k)
				bad += seen[k + 1] != k || useen[k] != (unsigned)k ||
				       llseen[k] != (unsigned long long)k << 32 || fseen[k + 1] != (float)k;
			CHECK(bad == 0, "%d values lost or duplicated", bad);
		}

		note("__threadfence + atomicAdd ticket: the last block adds the partials");
		for (unsigned grid : {1u, 2u, 19u, 64u}) {
			const int n = 77777;
			std::vector<float> in(n), partial(grid);
			for (int k = 0; k < n; ++k)
				in[k] = (float)(k % 3);
			unsigned ticket = 0;
			float total = -1.0f;
			LAUNCH_OK(last_block_sum, grid, 128, 0, in.data(), partial.data(), &ticket, &total, n);
			CHECK(total == 77776.0f && ticket == 0, "grid=%u: total %g, ticket %u", grid, total,
			      ticket);
		}

		note("shared-memory atomics (block histograms)");
		{
			const int n = 100003;
			std::vector<unsigned char> in(n);
			std::vector<unsigned> bins(16, 0), expect(16, 0);
			for (int k = 0; k < n; ++k) {
				in[k] = (unsigned char)(k * 31 + 7);
				++expect[in[k] % 16];
			}
			LAUNCH_OK(histogram, 13, 256, 0, in.data(), bins.data(), n);
			CHECK(bins == expect, "histogram differs");
		}
	}
	cudaemu::set_threads(0);
	return test_finish("test_atomics");
}
