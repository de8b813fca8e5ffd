// cudaemu.cc: the runtime of the test-only CUDA emulation layer.
//
// Each block of a launch runs on one OS thread; its CUDA threads are
// fibers that run until they reach a synchronising primitive
// (__syncthreads, a warp primitive) or return, and then hand the OS thread
// to the next ready fiber.  A barrier releases its waiters when every thread
// of the block has arrived; a warp primitive completes when every lane named
// in its mask has arrived.  When no fiber is ready and some have not
// returned, the block has deadlocked and the launch fails with a
// description of who waits where.  See docs/cuda-backend.md.
#include "cudaemu.h"

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CUDAEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDAEMU_ASAN 1
#endif
#endif
#ifndef CUDAEMU_ASAN
#define CUDAEMU_ASAN 0
#endif
#if CUDAEMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
// (cudaemu.h defines __noinline__ as a macro, hence the plain spelling.)
#define CUDAEMU_NO_ASAN __attribute__((no_sanitize_address, noinline))
#else
#define CUDAEMU_NO_ASAN
#endif

// CUDAEMU_FORCE_UCONTEXT: use the portable (slow) switch on x86-64 too, to
// test it.
#if defined(__x86_64__) && defined(__ELF__) && !defined(CUDAEMU_FORCE_UCONTEXT)
#define CUDAEMU_ASM_SWITCH 1
#else
#define CUDAEMU_ASM_SWITCH 0
#include <ucontext.h>
#endif

namespace cudaemu {
namespace detail {

__thread Builtins tl_builtins;

namespace {

constexpr unsigned kMaxThreads = 1024;     // per block, as on every CUDA GPU
constexpr std::size_t kMaxDynamicShared = 232448; // 227 KiB: sm_90's per-block maximum
constexpr std::size_t kSharedGuard = 256;  // poisoned bytes around it under ASan
constexpr std::size_t kMaxParamBytes = 32764; // CUDA 12.1+ on Volta and later

} // namespace
} // namespace detail
} // namespace cudaemu

// ---------------------------------------------------------------------------
// Dynamic shared memory: the one `nnk_smem` every kernel declares.  On
// x86-64 ELF it is laid out by hand inside a larger TLS object so that a
// guard zone precedes it too (an underflow like smem[tid - 1] then hits
// poisoned bytes under ASan instead of the runtime's own TLS).
#if defined(__x86_64__) && defined(__ELF__)
asm(".section .tbss,\"awT\",@nobits\n"
    "\t.p2align 8\n"
    "\t.type cudaemu_smem_area, @object\n"
    "\t.size cudaemu_smem_area, 256 + 232448 + 256\n"
    "cudaemu_smem_area:\n"
    "\t.zero 256\n"
    "\t.globl nnk_smem\n"
    "\t.type nnk_smem, @object\n"
    "\t.size nnk_smem, 232448\n"
    "nnk_smem:\n"
    "\t.zero 232448 + 256\n"
    "\t.previous\n");
static_assert(cudaemu::detail::kMaxDynamicShared == 232448 && cudaemu::detail::kSharedGuard == 256,
              "keep the asm above in sync");
#define CUDAEMU_SMEM_LOWER_GUARD 1
#else
extern "C" {
alignas(256) thread_local unsigned char
    nnk_smem[cudaemu::detail::kMaxDynamicShared + cudaemu::detail::kSharedGuard];
}
#define CUDAEMU_SMEM_LOWER_GUARD 0
#endif

// ---------------------------------------------------------------------------
// Context switching.  swapcontext() saves and restores the signal mask with
// a system call at every switch, which is far too slow for a switch per
// thread per barrier; on x86-64 a switch saves the callee-saved registers on
// the old stack and pops them from the new one.  (MXCSR and the x87 control
// word are not switched: kernels cannot change rounding modes.)
#if CUDAEMU_ASM_SWITCH
extern "C" void cudaemu_switch_context(void **save_sp, void *new_sp);
extern "C" void cudaemu_fiber_start();
asm(".text\n"
    "\t.p2align 4\n"
    "\t.globl cudaemu_switch_context\n"
    "\t.hidden cudaemu_switch_context\n"
    "\t.type cudaemu_switch_context, @function\n"
    "cudaemu_switch_context:\n"
    "\tpushq %rbp\n"
    "\tpushq %rbx\n"
    "\tpushq %r12\n"
    "\tpushq %r13\n"
    "\tpushq %r14\n"
    "\tpushq %r15\n"
    "\tmovq %rsp, (%rdi)\n"
    "\tmovq %rsi, %rsp\n"
    "\tpopq %r15\n"
    "\tpopq %r14\n"
    "\tpopq %r13\n"
    "\tpopq %r12\n"
    "\tpopq %rbx\n"
    "\tpopq %rbp\n"
    "\tret\n"
    "\t.size cudaemu_switch_context, .-cudaemu_switch_context\n"
    // First code a fiber runs: rbx = Fiber*, r12 = entry function.  A zero
    // frame pointer and an undefined return address end stack walks here.
    "\t.p2align 4\n"
    "\t.globl cudaemu_fiber_start\n"
    "\t.hidden cudaemu_fiber_start\n"
    "\t.type cudaemu_fiber_start, @function\n"
    "cudaemu_fiber_start:\n"
    "\t.cfi_startproc\n"
    "\t.cfi_undefined rip\n"
    "\txorl %ebp, %ebp\n"
    "\tpushq %rbp\n"
    "\tmovq %rbx, %rdi\n"
    "\tcallq *%r12\n"
    "\tud2\n"
    "\t.cfi_endproc\n"
    "\t.size cudaemu_fiber_start, .-cudaemu_fiber_start\n");
#endif

// Fail the block from inside a fiber (a member of Worker): CUDAEMU_FAIL((fmt, args...)).
#define CUDAEMU_FAIL(args) \
	do { \
		record(format args); \
		abandon(); \
	} while (0)

namespace cudaemu {
namespace detail {
namespace {

std::string vformat(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	const int n = std::vsnprintf(nullptr, 0, fmt, ap2);
	va_end(ap2);
	std::string s(n > 0 ? (std::size_t)n : 0, '\0');
	if (n > 0)
		std::vsnprintf(&s[0], (std::size_t)n + 1, fmt, ap);
	return s;
}

__attribute__((format(printf, 1, 2))) std::string format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::string s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

std::string dim_str(uint3 d) { return format("(%u,%u,%u)", d.x, d.y, d.z); }

struct Context {
	void *sp = nullptr;
#if !CUDAEMU_ASM_SWITCH
	ucontext_t uc;
#endif
#if CUDAEMU_ASAN
	const void *stack_bottom = nullptr;
	std::size_t stack_size = 0;
	void *fake_stack = nullptr;
#endif
};

enum class Wait : unsigned char { ready, barrier, warp, exited };

struct Fiber {
	Context ctx;
	uint3 tid;
	unsigned index; // linear thread index in the block
	Wait wait;
	// The primitive it is blocked in, for diagnostics.
	const char *file;
	int line;
	const char *func;
	WarpOp op;
	unsigned mask;
	std::uint64_t result; // of the warp primitive it waited in
};

// A warp primitive in progress: the lanes named by `mask`, of which
// `arrived` have called it.  Masks of groups in flight may overlap only
// when the overlapping lanes have not arrived yet (they will then find two
// groups naming them, and one of them is a divergence error).
struct WarpGroup {
	unsigned mask, arrived;
	WarpOp op;
	int type;
	unsigned first_lane;
};

struct Warp {
	unsigned lanes;  // lanes that exist (the last warp of a block may be partial)
	unsigned exited;
	unsigned runnable;   // lanes running or in the ready queue
	unsigned activemask; // lanes waiting in __activemask()
	unsigned at_barrier; // lanes waiting at __syncthreads()
	unsigned ngroups;
	WarpGroup groups[32];
	std::uint64_t value[32];
	int arg[32];
	int width[32];
};

const char *op_name(WarpOp op)
{
	switch (op) {
	case op_shfl_idx: return "__shfl_sync";
	case op_shfl_up: return "__shfl_up_sync";
	case op_shfl_down: return "__shfl_down_sync";
	case op_shfl_xor: return "__shfl_xor_sync";
	case op_ballot: return "__ballot_sync";
	case op_any: return "__any_sync";
	case op_all: return "__all_sync";
	case op_syncwarp: return "__syncwarp";
	case op_activemask: return "__activemask";
	}
	return "?";
}

const char *type_name(int type)
{
	static const char *const names[] = {"", "int", "unsigned int", "long long",
	                                    "unsigned long long", "float", "double"};
	return type >= 0 && type < 7 ? names[type] : "?";
}

// "__shfl_sync(float, mask=0xffffffff)", "__ballot_sync(mask=0x0000ffff)"
std::string call_str(WarpOp op, int type, unsigned mask)
{
	return type ? format("%s(%s, mask=0x%08x)", op_name(op), type_name(type), mask)
	            : format("%s(mask=0x%08x)", op_name(op), mask);
}

bool same_site(const char *f1, int l1, const char *f2, int l2)
{
	return l1 == l2 && (f1 == f2 || std::strcmp(f1, f2) == 0);
}

// Fiber stacks: one mapping per worker, a PROT_NONE guard page under each
// stack so that an overflow faults instead of corrupting the neighbour.
class StackPool {
public:
	StackPool() = default;
	StackPool(const StackPool &) = delete;
	StackPool &operator=(const StackPool &) = delete;
	~StackPool()
	{
		if (base_)
			munmap(base_, (std::size_t)kMaxThreads * slot_);
	}

	// Make stacks 0..n-1 usable.  False when the memory cannot be had.
	bool reserve(unsigned n)
	{
		if (!base_) {
			const std::size_t page = (std::size_t)sysconf(_SC_PAGESIZE);
			guard_ = page;
			stack_size_ = (default_stack_size() + page - 1) / page * page;
			slot_ = stack_size_ + guard_;
			void *p = mmap(nullptr, (std::size_t)kMaxThreads * slot_, PROT_READ | PROT_WRITE,
			               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p == MAP_FAILED)
				return false;
			base_ = static_cast<unsigned char *>(p);
		}
		for (; guarded_ < n; ++guarded_)
			if (mprotect(base_ + (std::size_t)guarded_ * slot_, guard_, PROT_NONE) != 0)
				return false;
		return true;
	}
	unsigned char *bottom(unsigned i) const { return base_ + (std::size_t)i * slot_ + guard_; }
	unsigned char *top(unsigned i) const { return base_ + (std::size_t)(i + 1) * slot_; }
	std::size_t size() const { return stack_size_; }

private:
	static std::size_t default_stack_size()
	{
		// ASan's redzones make frames several times larger.
		std::size_t kib = CUDAEMU_ASAN ? 256 : 128;
		if (const char *e = std::getenv("CUDAEMU_STACK_KB")) {
			const long v = std::strtol(e, nullptr, 10);
			if (v >= 16 && v <= 65536)
				kib = (std::size_t)v;
		}
		return kib * 1024;
	}

	unsigned char *base_ = nullptr;
	std::size_t slot_ = 0, guard_ = 0, stack_size_ = 0;
	unsigned guarded_ = 0;
};

struct Launch {
	std::string name;
	dim3 grid, block;
	std::size_t shmem;
	invoke_fn invoke;
	const void *ctx;
	std::uint64_t nblocks;
	unsigned nthreads;
	std::atomic<std::uint64_t> next{0};
	std::atomic<bool> stop{false};
	std::mutex mu;
	std::uint64_t err_block = UINT64_MAX;
	int err_status = CUDAEMU_OK;
	std::string err_msg;

	// Keep the failure of the lowest block: blocks are claimed in
	// increasing order and a claimed block always runs to its end, so this
	// is the failure a sequential run would report, whatever the threads.
	void report(std::uint64_t block, int status, std::string msg)
	{
		std::lock_guard<std::mutex> lk(mu);
		if (block < err_block) {
			err_block = block;
			err_status = status;
			err_msg = std::move(msg);
		}
		stop.store(true, std::memory_order_relaxed);
	}
};

class Worker;
__thread Worker *tl_worker;
__thread Fiber *tl_fiber; // the running fiber; null outside kernels

[[noreturn]] CUDAEMU_NO_ASAN void fiber_entry(Fiber *self);

class Worker {
public:
	Worker() : fibers_(kMaxThreads), warps_(kMaxThreads / 32), ready_(kMaxThreads),
	           waiters_(kMaxThreads) {}

	// Prepare for the blocks of L; false if stacks are unavailable.
	bool begin(const Launch &L)
	{
		if (!stacks_.reserve(L.nthreads))
			return false;
		launch_ = &L;
		tl_builtins.block_dim = uint3(L.block);
		tl_builtins.grid_dim = uint3(L.grid);
		prepare_shared(L.shmem);
		return true;
	}

	// Run one block to completion.  False (and error()) when it failed.
	bool run_block(std::uint64_t linear)
	{
		const Launch &L = *launch_;
		const std::uint64_t gx = L.grid.x, gy = L.grid.y;
		tl_builtins.block_idx = uint3{(unsigned)(linear % gx), (unsigned)(linear / gx % gy),
		                              (unsigned)(linear / (gx * gy))};
		const unsigned n = L.nthreads, bx = L.block.x, by = L.block.y;
		for (unsigned i = 0; i < n; ++i) {
			Fiber &f = fibers_[i];
			f.tid = uint3{i % bx, i / bx % by, i / (bx * by)};
			f.index = i;
			f.wait = Wait::ready;
			init_context(f, i);
		}
		for (unsigned w = 0; w * 32 < n; ++w) {
			const unsigned lanes = n - w * 32;
			warps_[w].lanes = lanes >= 32 ? ~0u : (1u << lanes) - 1u;
			warps_[w].exited = 0;
			warps_[w].runnable = lanes >= 32 ? 32 : lanes;
			warps_[w].activemask = 0;
			warps_[w].at_barrier = 0;
			warps_[w].ngroups = 0;
		}
		ready_head_ = 0;
		ready_count_ = 0;
		for (unsigned i = 1; i < n; ++i)
			push_ready(&fibers_[i]);
		arrived_ = 0;
		exited_ = 0;
		failed_ = false;
		error_.clear();
		// Shared memory starts out as garbage on a GPU; all-ones bytes make
		// a read before write visible (NaN, -1) and are deterministic.
		std::memset(nnk_smem, 0xff, L.shmem);

		tl_fiber = &fibers_[0];
		tl_builtins.thread_idx = fibers_[0].tid;
		switch_context(main_, fibers_[0].ctx);
		tl_fiber = nullptr;
		if (failed_) {
#if CUDAEMU_ASAN
			// Abandoned fibers leave their frames' redzones poisoned.
			for (unsigned i = 0; i < n; ++i)
				ASAN_UNPOISON_MEMORY_REGION(stacks_.bottom(i), stacks_.size());
#endif
			return false;
		}
		return true;
	}

	const std::string &error() const { return error_; }

	// --- called from fibers -------------------------------------------

	void syncthreads(Fiber *self, const char *file, int line, const char *func, int site)
	{
		if (exited_)
			CUDAEMU_FAIL(("barrier divergence: thread %s reached __syncthreads() at %s:%d but "
			            "thread %s has already exited; every thread of the block must reach "
			            "every __syncthreads() (an early return before a barrier?)",
			            dim_str(self->tid).c_str(), file, line,
			            dim_str(first_in(Wait::exited)->tid).c_str()));
		if (const WarpGroup *g = group_naming(self))
			CUDAEMU_FAIL(("deadlock: thread %s reached __syncthreads() at %s:%d while lane %u of "
			            "its warp waits in %s(mask=0x%08x) at %s:%d, whose mask names it",
			            dim_str(self->tid).c_str(), file, line, g->first_lane, op_name(g->op),
			            g->mask, waiter_of(self, *g)->file, waiter_of(self, *g)->line));
		if (arrived_ == 0) {
			bar_file_ = file;
			bar_line_ = line;
			bar_func_ = func;
			bar_site_ = site;
		} else if (site != bar_site_ || !same_site(bar_file_, bar_line_, file, line)) {
			const Fiber *other = waiters_[0];
			CUDAEMU_FAIL(("barrier divergence: thread %s reached __syncthreads() at %s:%d (in %s) "
			            "while thread %s waits at %s__syncthreads() at %s:%d (in %s); all "
			            "threads of a block must reach the same __syncthreads()",
			            dim_str(self->tid).c_str(), file, line, func,
			            dim_str(other->tid).c_str(), line == bar_line_ ? "another " : "",
			            bar_file_, bar_line_, bar_func_));
		}
		if (arrived_ + 1 == launch_->nthreads) {
			for (unsigned i = 0; i < arrived_; ++i)
				make_ready(waiters_[i]);
			for (unsigned w = 0; w * 32 < launch_->nthreads; ++w)
				warps_[w].at_barrier = 0;
			arrived_ = 0;
			return; // the last thread to arrive goes on without a switch
		}
		waiters_[arrived_++] = self;
		warps_[self->index >> 5].at_barrier |= 1u << (self->index & 31u);
		park(self, Wait::barrier, file, line, func);
	}

	std::uint64_t warp_op(Fiber *self, const char *file, int line, const char *func, WarpOp op,
	                      int type, unsigned mask, std::uint64_t value, int arg, int width)
	{
		const unsigned lane = self->index & 31u;
		Warp &w = warps_[self->index >> 5];
		// One test for every way a call can be wrong; the diagnosis is cold.
		if (__builtin_expect(!(mask >> lane & 1u) || (mask & (~w.lanes | w.exited | w.at_barrier)) ||
		                         (op <= op_shfl_xor &&
		                          (width < 1 || width > 32 || (width & (width - 1)))),
		                     0))
			bad_warp_call(self, file, line, op, mask, width);

		// Join the group in flight for exactly this call, if any.  A group
		// for another primitive or mask that names this lane is no error by
		// itself (the lane may get there later, as on Volta and later GPUs),
		// unless some lane already waiting in it is named by this call too:
		// each then waits for the other.
		WarpGroup *g = nullptr;
		for (unsigned i = 0; i < w.ngroups; ++i) {
			WarpGroup &cand = w.groups[i];
			if (!(cand.mask >> lane & 1u))
				continue;
			if (cand.mask == mask && cand.op == op && cand.type == type) {
				g = &cand;
				break;
			}
			if (cand.arrived & mask)
				crossed_warp_calls(self, file, line, op, type, mask, cand);
		}
		if (!g) {
			g = &w.groups[w.ngroups++];
			*g = WarpGroup{mask, 0, op, type, lane};
		}
		w.value[lane] = value;
		w.arg[lane] = arg;
		w.width[lane] = width;
		g->arrived |= 1u << lane;
		if (g->arrived != g->mask) {
			self->op = op;
			self->mask = mask;
			park(self, Wait::warp, file, line, func);
			return self->result;
		}
		complete(w, *g, self);
		*g = w.groups[--w.ngroups];
		return self->result;
	}

	// What is wrong with a warp primitive call that failed warp_op's test.
	[[noreturn, gnu::cold, gnu::noinline]] void bad_warp_call(Fiber *self, const char *file,
	                                                         int line, WarpOp op, unsigned mask,
	                                                         int width)
	{
		const unsigned lane = self->index & 31u, base = self->index & ~31u;
		const Warp &w = warps_[self->index >> 5];
		const char *name = op_name(op);
		if (!(mask >> lane & 1u))
			CUDAEMU_FAIL(("%s() at %s:%d: the calling lane %u (thread %s) is not in mask 0x%08x",
			              name, file, line, lane, dim_str(self->tid).c_str(), mask));
		if (const unsigned missing = mask & ~w.lanes)
			CUDAEMU_FAIL(("%s() at %s:%d: mask 0x%08x names lane %d, which does not exist (the "
			              "block has %u threads, so warp %u has lanes 0-%d)",
			              name, file, line, mask, __builtin_ctz(missing), launch_->nthreads,
			              self->index >> 5, 31 - __builtin_clz(w.lanes)));
		if (const unsigned gone = mask & w.exited)
			CUDAEMU_FAIL(("%s() at %s:%d: mask 0x%08x names lane %d (thread %s), which has exited",
			              name, file, line, mask, __builtin_ctz(gone),
			              dim_str(fibers_[base + __builtin_ctz(gone)].tid).c_str()));
		if (const unsigned parked = mask & w.at_barrier) {
			const Fiber &f = fibers_[base + __builtin_ctz(parked)];
			CUDAEMU_FAIL(("deadlock: lane %u (thread %s) called %s(mask=0x%08x) at %s:%d, but "
			              "lane %d, which the mask names, waits at __syncthreads() at %s:%d",
			              lane, dim_str(self->tid).c_str(), name, mask, file, line,
			              __builtin_ctz(parked), f.file, f.line));
		}
		CUDAEMU_FAIL(("%s() at %s:%d: width %d is not a power of two in [1, 32]", name, file, line,
		              width));
	}

	[[noreturn, gnu::cold, gnu::noinline]] void crossed_warp_calls(Fiber *self, const char *file,
	                                                              int line, WarpOp op, int type,
	                                                              unsigned mask,
	                                                              const WarpGroup &cand)
	{
		const unsigned both = cand.arrived & mask;
		const Fiber &other = fibers_[(self->index & ~31u) + __builtin_ctz(both)];
		CUDAEMU_FAIL(("warp divergence: lane %u (thread %s) called %s at %s:%d while lane %d "
		              "waits in %s at %s:%d; each mask names the other lane, so neither call "
		              "can complete (the lanes named in a mask must all call the same primitive "
		              "with the same mask)",
		              self->index & 31u, dim_str(self->tid).c_str(),
		              call_str(op, type, mask).c_str(), file, line, __builtin_ctz(both),
		              call_str(cand.op, cand.type, cand.mask).c_str(), other.file, other.line));
	}

	// The lanes that call __activemask() at the same place before any of
	// them goes on: the caller waits until no lane of its warp can run
	// (each has blocked somewhere or exited), as a stand-in for the lanes
	// a GPU would execute the call with, converged.
	unsigned activemask(Fiber *self, const char *file, int line, const char *func)
	{
		Warp &w = warps_[self->index >> 5];
		w.activemask |= 1u << (self->index & 31u);
		self->op = op_activemask;
		self->mask = 0;
		if (w.runnable == 1) {
			self->file = file;
			self->line = line;
			release_activemask(w, self);
		} else {
			park(self, Wait::warp, file, line, func);
		}
		return (unsigned)self->result;
	}

	// self returned from the kernel: the context to run next.
	Context *thread_exit(Fiber *self)
	{
		self->wait = Wait::exited;
		++exited_;
		Warp &w = warps_[self->index >> 5];
		w.exited |= 1u << (self->index & 31u);
		if (--w.runnable == 0 && w.activemask)
			release_activemask(w, nullptr);
		if (arrived_)
			CUDAEMU_FAIL(("barrier divergence: thread %s exited while thread %s waits at "
			            "__syncthreads() at %s:%d (in %s); every thread of the block must reach "
			            "every __syncthreads() (an early return before a barrier?)",
			            dim_str(self->tid).c_str(), dim_str(waiters_[0]->tid).c_str(), bar_file_,
			            bar_line_, bar_func_));
		if (const WarpGroup *g = group_naming(self))
			CUDAEMU_FAIL(("thread %s exited while lane %u of its warp waits in %s(mask=0x%08x) at "
			            "%s:%d, whose mask names it",
			            dim_str(self->tid).c_str(), g->first_lane, op_name(g->op), g->mask,
			            waiter_of(self, *g)->file, waiter_of(self, *g)->line));
		if (Fiber *next = pop_ready()) {
			tl_fiber = next;
			tl_builtins.thread_idx = next->tid;
			return &next->ctx;
		}
		if (exited_ != launch_->nthreads)
			deadlock();
		return &main_;
	}

	// A failure of the block is recorded, then the block is abandoned:
	// control goes back to run_block and no fiber of the block runs again.
	// Two steps, because the frames of an abandoned fiber are never
	// unwound: whatever a temporary of the failing statement owns must be
	// released (at the end of record()'s full-expression) before abandon().
	void record(std::string msg)
	{
		failed_ = true;
		error_ = std::move(msg);
	}
	[[noreturn]] void abandon() { leave_for(main_); }

	// The life of a fiber, on its own stack: run the kernel, then return
	// the context to switch to.
	Context *run_thread(Fiber *self)
	{
#if CUDAEMU_ASAN
		const void *bottom;
		std::size_t size;
		__sanitizer_finish_switch_fiber(nullptr, &bottom, &size);
		from_->stack_bottom = bottom;
		from_->stack_size = size;
#endif
		// Run the kernel; an exception must not unwind past this frame, and
		// the block must not be abandoned from inside the handler (that would
		// leave the C++ runtime with a caught exception that never ends).
		bool threw = false;
		try {
			launch_->invoke(launch_->ctx);
		} catch (const std::exception &e) {
			record(format("thread %s: an exception escaped the kernel: %s",
			              dim_str(self->tid).c_str(), e.what()));
			threw = true;
		} catch (...) {
			record(format("thread %s: an exception escaped the kernel",
			              dim_str(self->tid).c_str()));
			threw = true;
		}
		if (threw)
			abandon();
		return thread_exit(self);
	}

	// Leave the running fiber for good.  Not instrumented by ASan: the
	// frames of a fiber that leaves are never popped, and an instrumented
	// frame here would leave poisoned redzones on the stack for the next
	// block's fiber to trip over.  (The exit path therefore returns to
	// fiber_entry, also uninstrumented, before switching; only failures
	// abandon instrumented frames, and run_block cleans those stacks.)
	[[noreturn]] CUDAEMU_NO_ASAN void leave_for(Context &to)
	{
#if CUDAEMU_ASAN
		static thread_local Context scratch;
		from_ = tl_fiber ? &tl_fiber->ctx : &scratch;
		__sanitizer_start_switch_fiber(nullptr, to.stack_bottom, to.stack_size);
#endif
#if CUDAEMU_ASM_SWITCH
		void *discard;
		cudaemu_switch_context(&discard, to.sp);
#else
		setcontext(&to.uc);
#endif
		__builtin_unreachable();
	}

private:
	void init_context(Fiber &f, unsigned i)
	{
#if CUDAEMU_ASM_SWITCH
		auto *sp = reinterpret_cast<std::uintptr_t *>(
		    reinterpret_cast<std::uintptr_t>(stacks_.top(i)) & ~std::uintptr_t(15));
		// Popped by cudaemu_switch_context: r15 r14 r13 r12 rbx rbp, then
		// `ret` into cudaemu_fiber_start with the stack as after a call.
		*--sp = 0;
		*--sp = reinterpret_cast<std::uintptr_t>(&cudaemu_fiber_start);
		*--sp = 0;                                          // rbp
		*--sp = reinterpret_cast<std::uintptr_t>(&f);       // rbx
		*--sp = reinterpret_cast<std::uintptr_t>(&fiber_entry); // r12
		*--sp = 0;                                          // r13
		*--sp = 0;                                          // r14
		*--sp = 0;                                          // r15
		f.ctx.sp = sp;
#else
		getcontext(&f.ctx.uc);
		f.ctx.uc.uc_stack.ss_sp = stacks_.bottom(i);
		f.ctx.uc.uc_stack.ss_size = stacks_.size();
		f.ctx.uc.uc_link = nullptr;
		const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(&f);
		makecontext(&f.ctx.uc, reinterpret_cast<void (*)()>(&fiber_entry_ucontext), 2,
		            (unsigned)(p >> 32), (unsigned)p);
#endif
#if CUDAEMU_ASAN
		f.ctx.stack_bottom = stacks_.bottom(i);
		f.ctx.stack_size = stacks_.size();
		f.ctx.fake_stack = nullptr;
#endif
	}

#if !CUDAEMU_ASM_SWITCH
	static void fiber_entry_ucontext(unsigned hi, unsigned lo)
	{
		fiber_entry(reinterpret_cast<Fiber *>(((std::uintptr_t)hi << 32) | lo));
	}
#endif

	// Suspend `from` and run `to`; returns when something switches back.
	void switch_context(Context &from, Context &to)
	{
#if CUDAEMU_ASAN
		from_ = &from;
		__sanitizer_start_switch_fiber(&from.fake_stack, to.stack_bottom, to.stack_size);
#endif
#if CUDAEMU_ASM_SWITCH
		cudaemu_switch_context(&from.sp, to.sp);
#else
		swapcontext(&from.uc, &to.uc);
#endif
#if CUDAEMU_ASAN
		const void *bottom;
		std::size_t size;
		__sanitizer_finish_switch_fiber(from.fake_stack, &bottom, &size);
		from_->stack_bottom = bottom; // learns the main stack's bounds
		from_->stack_size = size;
#endif
	}

	// Park `self` until a barrier or warp group releases it.
	void park(Fiber *self, Wait why, const char *file, int line, const char *func)
	{
		self->wait = why;
		self->file = file;
		self->line = line;
		self->func = func;
		Warp &w = warps_[self->index >> 5];
		if (--w.runnable == 0 && w.activemask)
			release_activemask(w, nullptr);
		Fiber *next = pop_ready();
		if (!next)
			deadlock();
		if (next == self) // released while parking (by release_activemask)
			return;
		tl_fiber = next;
		tl_builtins.thread_idx = next->tid;
		switch_context(self->ctx, next->ctx);
	}

	// Every lane of g has arrived, `last` being the last: compute each
	// lane's result and make the others ready.
	void complete(Warp &w, const WarpGroup &g, Fiber *last)
	{
		std::uint64_t ballot = 0;
		for (unsigned m = g.mask; m; m &= m - 1)
			ballot |= (w.value[__builtin_ctz(m)] & 1u) << __builtin_ctz(m);
		const unsigned base = last->index & ~31u;
		for (unsigned m = g.mask; m; m &= m - 1) {
			const int lane = __builtin_ctz(m);
			std::uint64_t r = 0;
			switch (g.op) {
			case op_ballot: r = ballot; break;
			case op_any: r = ballot != 0; break;
			case op_all: r = ballot == g.mask; break;
			case op_syncwarp: break;
			default: {
				const int j = source_lane(g.op, lane, w.arg[lane], w.width[lane]);
				// A source lane outside the mask did not take part: CUDA
				// leaves the value undefined; all-ones bits make it stand out.
				r = (g.mask >> j & 1u) ? w.value[j] : ~std::uint64_t(0);
			}
			}
			Fiber &f = fibers_[base + (unsigned)lane];
			f.result = r;
			if (&f != last)
				make_ready(&f);
		}
	}

	// PTX shfl.sync's lane arithmetic, with CUDA's c operand
	// ((32 - width) << 8 | clamp): an out-of-segment source yields the
	// caller's own value.
	static int source_lane(WarpOp op, int lane, int b, int width)
	{
		const int segmask = (32 - width) & 31;
		const int clamp = op == op_shfl_up ? 0 : 31;
		const int max_lane = (lane & segmask) | (clamp & ~segmask);
		const int min_lane = lane & segmask;
		int j;
		bool ok;
		switch (op) {
		case op_shfl_up: j = lane - b; ok = j >= max_lane; break;
		case op_shfl_down: j = lane + b; ok = j <= max_lane; break;
		case op_shfl_xor: j = lane ^ b; ok = j <= max_lane; break;
		default: j = min_lane | (b & 31 & ~segmask); ok = j <= max_lane; break;
		}
		return ok ? j : lane;
	}

	// The warp group in flight that names self's lane, if any.
	const WarpGroup *group_naming(const Fiber *self) const
	{
		const Warp &w = warps_[self->index >> 5];
		for (unsigned i = 0; i < w.ngroups; ++i)
			if (w.groups[i].mask >> (self->index & 31u) & 1u)
				return &w.groups[i];
		return nullptr;
	}

	const Fiber *waiter_of(const Fiber *self, const WarpGroup &g) const
	{
		return &fibers_[(self->index & ~31u) + g.first_lane];
	}

	const Fiber *first_in(Wait state) const
	{
		for (unsigned i = 0; i < launch_->nthreads; ++i)
			if (fibers_[i].wait == state)
				return &fibers_[i];
		return &fibers_[0];
	}

	// No fiber can run.
	[[noreturn]] void deadlock()
	{
		record(describe_deadlock());
		abandon();
	}

	// Every place where threads wait, for the deadlock message.
	std::string describe_deadlock() const
	{
		struct Spot {
			Wait wait;
			const char *file;
			int line;
			const char *func;
			WarpOp op;
			unsigned mask, count;
			uint3 first;
		};
		std::vector<Spot> spots;
		for (unsigned i = 0; i < launch_->nthreads; ++i) {
			const Fiber &f = fibers_[i];
			if (f.wait == Wait::ready)
				continue;
			bool found = false;
			for (Spot &s : spots) {
				if (s.wait == f.wait && (f.wait == Wait::exited ||
				                         (same_site(s.file, s.line, f.file, f.line) &&
				                          (f.wait != Wait::warp || (s.op == f.op && s.mask == f.mask))))) {
					++s.count;
					found = true;
					break;
				}
			}
			if (!found)
				spots.push_back(Spot{f.wait, f.file, f.line, f.func, f.op, f.mask, 1, f.tid});
		}
		std::string msg = "deadlock: no thread of the block can proceed:";
		for (const Spot &s : spots) {
			const std::string who = s.count == 1
			                            ? format("1 thread %s", dim_str(s.first).c_str())
			                            : format("%u threads (first %s)", s.count,
			                                     dim_str(s.first).c_str());
			const char *verb = s.count == 1 ? "waits" : "wait";
			if (s.wait == Wait::exited)
				msg += format(" %s exited;", who.c_str());
			else if (s.wait == Wait::barrier)
				msg += format(" %s %s at __syncthreads() at %s:%d (in %s);", who.c_str(), verb,
				              s.file, s.line, s.func);
			else
				msg += format(" %s %s in %s at %s:%d (in %s);", who.c_str(), verb,
				              call_str(s.op, 0, s.mask).c_str(), s.file, s.line, s.func);
		}
		msg.back() = '.';
		msg += " A warp primitive needs every lane its mask names; __syncthreads() needs "
		       "every thread of the block.";
		return msg;
	}

	void make_ready(Fiber *f)
	{
		f->wait = Wait::ready;
		++warps_[f->index >> 5].runnable;
		push_ready(f);
	}

	// Release the lanes of w waiting in __activemask(): each gets the set
	// of lanes waiting at the same call site.  `running`, if not null, is
	// one of them and goes on without being queued.
	void release_activemask(Warp &w, Fiber *running)
	{
		const unsigned base = (unsigned)(&w - warps_.data()) * 32;
		for (unsigned m = w.activemask; m; m &= m - 1) {
			Fiber &f = fibers_[base + __builtin_ctz(m)];
			unsigned same = 0;
			for (unsigned o = w.activemask; o; o &= o - 1) {
				const Fiber &g = fibers_[base + __builtin_ctz(o)];
				if (same_site(f.file, f.line, g.file, g.line))
					same |= 1u << __builtin_ctz(o);
			}
			f.result = same;
			if (&f != running)
				make_ready(&f);
		}
		w.activemask = 0;
	}

	void push_ready(Fiber *f)
	{
		ready_[(ready_head_ + ready_count_++) & (kMaxThreads - 1)] = f;
	}
	Fiber *pop_ready()
	{
		if (!ready_count_)
			return nullptr;
		Fiber *f = ready_[ready_head_];
		ready_head_ = (ready_head_ + 1) & (kMaxThreads - 1);
		--ready_count_;
		return f;
	}

	// Under ASan, make exactly [0, shmem) of nnk_smem addressable.
	void prepare_shared(std::size_t shmem)
	{
#if CUDAEMU_ASAN
		if (shmem == shared_bytes_)
			return;
		unsigned char *base = nnk_smem;
		if (!shared_guarded_ && CUDAEMU_SMEM_LOWER_GUARD) // the zone laid out before nnk_smem
			ASAN_POISON_MEMORY_REGION(
			    reinterpret_cast<void *>(reinterpret_cast<std::uintptr_t>(base) - kSharedGuard),
			    kSharedGuard);
		shared_guarded_ = true;
		ASAN_UNPOISON_MEMORY_REGION(base, shmem);
		ASAN_POISON_MEMORY_REGION(base + shmem, kMaxDynamicShared + kSharedGuard - shmem);
		shared_bytes_ = shmem;
#else
		(void)shmem;
#endif
	}

	StackPool stacks_;
	std::vector<Fiber> fibers_;
	std::vector<Warp> warps_;
	std::vector<Fiber *> ready_;
	unsigned ready_head_ = 0, ready_count_ = 0;
	std::vector<Fiber *> waiters_; // at the barrier, in arrival order
	unsigned arrived_ = 0;
	const char *bar_file_ = nullptr;
	int bar_line_ = 0;
	const char *bar_func_ = nullptr;
	int bar_site_ = 0;
	unsigned exited_ = 0;
	const Launch *launch_ = nullptr;
	Context main_;
	bool failed_ = false;
	std::string error_;
#if CUDAEMU_ASAN
	Context *from_ = nullptr; // the context the last switch left
	std::size_t shared_bytes_ = SIZE_MAX;
	bool shared_guarded_ = false;
#endif
};

[[noreturn]] CUDAEMU_NO_ASAN void fiber_entry(Fiber *self)
{
	Worker *w = tl_worker;
	w->leave_for(*w->run_thread(self));
}

// The worker of the calling OS thread, created on first use and kept (with
// its stacks) for the life of the thread.
Worker *this_worker() noexcept
{
	static thread_local std::unique_ptr<Worker> owner;
	if (!owner) {
		try {
			owner.reset(new Worker);
		} catch (...) {
			return nullptr;
		}
	}
	tl_worker = owner.get();
	return owner.get();
}

std::string launch_prefix(const Launch &L)
{
	return format("cudaemu: kernel '%s' (grid %s, block %s, %zu bytes of dynamic shared memory)",
	              L.name.c_str(), dim_str(L.grid).c_str(), dim_str(L.block).c_str(), L.shmem);
}

// Claim and run blocks until none is left or one has failed.
void run_blocks(Launch &L, bool caller) noexcept
{
	Worker *w = this_worker();
	if (!w || !w->begin(L)) {
		// A pool thread without resources just sits this launch out.
		if (caller)
			L.report(0, CUDAEMU_OUT_OF_RESOURCES,
			         launch_prefix(L) + ": cannot allocate the fiber stacks");
		return;
	}
	while (!L.stop.load(std::memory_order_relaxed)) {
		const std::uint64_t b = L.next.fetch_add(1, std::memory_order_relaxed);
		if (b >= L.nblocks)
			break;
		if (!w->run_block(b)) {
			const std::uint64_t gx = L.grid.x, gy = L.grid.y;
			const uint3 idx{(unsigned)(b % gx), (unsigned)(b / gx % gy), (unsigned)(b / (gx * gy))};
			L.report(b, CUDAEMU_LAUNCH_FAILURE,
			         launch_prefix(L) + ", blockIdx " + dim_str(idx) + ": " + w->error());
		}
	}
}

// Threads that run blocks next to the launching thread.  Created on demand,
// never destroyed (the object is leaked on purpose so that no std::thread is
// destroyed while joinable at exit).
class Pool {
public:
	void run(Launch &L, unsigned nworkers)
	{
		unsigned extra = nworkers - 1;
		while (threads_.size() < extra) {
			try {
				const unsigned idx = (unsigned)threads_.size();
				threads_.emplace_back([this, idx] { loop(idx); });
			} catch (...) {
				extra = (unsigned)threads_.size();
				break;
			}
		}
		{
			std::lock_guard<std::mutex> lk(mu_);
			job_ = &L;
			wanted_ = extra;
			running_ = extra;
			++generation_;
		}
		start_.notify_all();
		run_blocks(L, true);
		std::unique_lock<std::mutex> lk(mu_);
		done_.wait(lk, [this] { return running_ == 0; });
		job_ = nullptr;
	}

private:
	void loop(unsigned idx)
	{
		std::uint64_t seen = 0;
		std::unique_lock<std::mutex> lk(mu_);
		for (;;) {
			start_.wait(lk, [&] { return generation_ != seen; });
			seen = generation_;
			if (idx >= wanted_)
				continue;
			Launch *L = job_;
			lk.unlock();
			run_blocks(*L, false);
			lk.lock();
			if (--running_ == 0)
				done_.notify_all();
		}
	}

	std::mutex mu_;
	std::condition_variable start_, done_;
	std::vector<std::thread> threads_;
	Launch *job_ = nullptr;
	std::uint64_t generation_ = 0;
	unsigned wanted_ = 0, running_ = 0;
};

std::mutex g_launch_mu; // launches run one at a time
std::atomic<unsigned> g_threads{0};
thread_local std::string tl_last_error;

unsigned default_threads()
{
	static const unsigned n = [] {
		if (const char *e = std::getenv("CUDAEMU_THREADS")) {
			const long v = std::strtol(e, nullptr, 10);
			if (v >= 1)
				return (unsigned)(v < 64 ? v : 64);
		}
		const unsigned hw = std::thread::hardware_concurrency();
		return hw == 0 ? 1u : hw < 64 ? hw : 64u;
	}();
	return n;
}

std::string kernel_name(const char *name, void (*kernel)())
{
	if (name && *name)
		return name;
	Dl_info info;
	if (kernel && dladdr(reinterpret_cast<void *>(kernel), &info) && info.dli_sname) {
		int st = 0;
		char *demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &st);
		std::string s = st == 0 && demangled ? demangled : info.dli_sname;
		std::free(demangled);
		return s;
	}
	return "<unnamed kernel>";
}

int set_error(int status, std::string msg)
{
	tl_last_error = std::move(msg);
	return status;
}

const char *config_error(const dim3 &g, const dim3 &b, std::size_t shmem)
{
	if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
		return "a grid or block dimension is 0";
	if (b.x > 1024 || b.y > 1024 || b.z > 64)
		return "block dimensions exceed (1024, 1024, 64)";
	if ((std::uint64_t)b.x * b.y * b.z > kMaxThreads)
		return "more than 1024 threads per block";
	if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
		return "grid dimensions exceed (2^31-1, 65535, 65535)";
	if (shmem > kMaxDynamicShared)
		return "more than 232448 bytes (227 KiB) of dynamic shared memory per block";
	return nullptr;
}

} // namespace

// --- entry points used by cudaemu.h -----------------------------------------

void syncthreads(const char *file, int line, const char *func, int site)
{
	if (Fiber *self = tl_fiber)
		tl_worker->syncthreads(self, file, line, func, site);
}

std::uint64_t warp_op(const char *file, int line, const char *func, WarpOp op, int type,
                      unsigned mask, std::uint64_t value, int arg, int width)
{
	if (Fiber *self = tl_fiber)
		return tl_worker->warp_op(self, file, line, func, op, type, mask, value, arg, width);
	// Outside a kernel: a lone lane 0.
	switch (op) {
	case op_ballot: return (mask & 1u) && value;
	case op_any: case op_all: return value;
	default: return value;
	}
}

unsigned activemask(const char *file, int line, const char *func)
{
	Fiber *self = tl_fiber;
	return self ? tl_worker->activemask(self, file, line, func) : 1u;
}

void fail_misaligned(const char *file, int line, const char *func, const void *p,
                     std::size_t align, const char *type)
{
	if (!tl_fiber)
		return; // host code: nothing to abandon
	tl_worker->record(format("__ldg() at %s:%d (in %s): thread %s loads a %s from %p, which "
	                         "is not %zu-byte aligned",
	                         file, line, func, dim_str(tl_fiber->tid).c_str(), type, p, align));
	tl_worker->abandon();
}

int launch_erased(const char *name, void (*kernel)(), dim3 grid, dim3 block, std::size_t shmem,
                  invoke_fn invoke, const void *ctx) noexcept
{
	try {
		tl_last_error.clear();
		if (tl_fiber)
			return set_error(CUDAEMU_INVALID_VALUE,
			                 "cudaemu: a kernel launched a kernel (dynamic parallelism is not "
			                 "emulated)");
		Launch L;
		L.name = kernel_name(name, kernel);
		L.grid = grid;
		L.block = block;
		L.shmem = shmem;
		L.invoke = invoke;
		L.ctx = ctx;
		if (!invoke)
			return set_error(CUDAEMU_INVALID_VALUE, launch_prefix(L) + ": no kernel");
		if (const char *why = config_error(grid, block, shmem))
			return set_error(CUDAEMU_INVALID_CONFIGURATION,
			                 launch_prefix(L) + ": invalid configuration: " + why);
		L.nblocks = (std::uint64_t)grid.x * grid.y * grid.z;
		L.nthreads = block.x * block.y * block.z;

		std::lock_guard<std::mutex> lk(g_launch_mu);
		const unsigned want = g_threads.load() ? g_threads.load() : default_threads();
		const unsigned nworkers = (unsigned)(L.nblocks < want ? L.nblocks : want);
		if (nworkers <= 1) {
			run_blocks(L, true);
		} else {
			static Pool *const pool = new Pool;
			pool->run(L, nworkers);
		}
		// (Set even on success: a kernel's own nested launch attempt may
		// have left a message on this OS thread.)
		return set_error(L.err_status, std::move(L.err_msg));
	} catch (const std::exception &e) {
		return set_error(CUDAEMU_OUT_OF_RESOURCES, std::string("cudaemu: launch failed: ") + e.what());
	} catch (...) {
		return set_error(CUDAEMU_OUT_OF_RESOURCES, "cudaemu: launch failed");
	}
}

namespace {

// cudaemu_launch_kernel: forward a parameter struct of a known size to a
// kernel of unknown type.  Above 16 bytes the x86-64 SysV ABI passes a
// struct by value in memory, at the bottom of the caller's argument area,
// whatever its fields; a byte blob of the same or a larger size is passed
// the same way, and the callee reads only its own bytes.  Size classes keep
// the per-thread copy (made straight from the launch's buffer into the
// argument area) within 1.5x of the real size.
template <std::size_t N>
struct alignas(16) Blob {
	unsigned char bytes[N];
};

struct BlobCall {
	cudaemu_kernel_fn fn;
	const unsigned char *bytes; // at least the size class, zero-padded
};

template <std::size_t N>
#ifdef __clang__
__attribute__((no_sanitize("function")))
#endif
void call_blob(const void *ctx)
{
	const BlobCall &c = *static_cast<const BlobCall *>(ctx);
	reinterpret_cast<void (*)(Blob<N>)>(c.fn)(*reinterpret_cast<const Blob<N> *>(c.bytes));
}

void call_noargs(const void *ctx) { static_cast<const BlobCall *>(ctx)->fn(); }

constexpr std::size_t kBlobSizes[] = {32,   64,   128,  256,  512,   768,   1024,  1536,  2048,
                                      3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
constexpr invoke_fn kBlobCalls[] = {
    call_blob<32>,    call_blob<64>,    call_blob<128>,   call_blob<256>,   call_blob<512>,
    call_blob<768>,   call_blob<1024>,  call_blob<1536>,  call_blob<2048>,  call_blob<3072>,
    call_blob<4096>,  call_blob<6144>,  call_blob<8192>,  call_blob<12288>, call_blob<16384>,
    call_blob<24576>, call_blob<32768>};
static_assert(sizeof kBlobSizes / sizeof *kBlobSizes == sizeof kBlobCalls / sizeof *kBlobCalls,
              "one caller per size class");

std::size_t blob_class(std::size_t size)
{
	for (std::size_t c : kBlobSizes)
		if (size <= c)
			return c;
	return 0;
}

invoke_fn blob_invoker(std::size_t size)
{
	if (size == 0)
		return call_noargs;
	for (std::size_t i = 0; i < sizeof kBlobSizes / sizeof *kBlobSizes; ++i)
		if (size <= kBlobSizes[i])
			return kBlobCalls[i];
	return nullptr;
}

struct ThunkCall {
	void (*thunk)(void *);
	void *arg;
};

void call_thunk(const void *ctx)
{
	const ThunkCall &c = *static_cast<const ThunkCall *>(ctx);
	c.thunk(c.arg);
}

} // namespace
} // namespace detail
} // namespace cudaemu

// --- C interface ----------------------------------------------------------------

using namespace cudaemu::detail;

extern "C" int cudaemu_launch_thunk(const char *name, void (*thunk)(void *), void *arg,
                                    unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                    unsigned by, unsigned bz, size_t shmem)
{
	const ThunkCall call{thunk, arg};
	return launch_erased(name, nullptr, dim3(gx, gy, gz), dim3(bx, by, bz), shmem,
	                     thunk ? call_thunk : nullptr, &call);
}

extern "C" int cudaemu_launch_kernel(const char *name, cudaemu_kernel_fn fn, unsigned gx,
                                     unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, size_t shmem, void **params, size_t params_size)
{
	if (!fn || (params_size && (!params || !params[0])) ||
	    (params_size > 0 && params_size <= 16) || params_size > kMaxParamBytes) {
		tl_last_error = format(
		    "cudaemu: kernel '%s': cudaemu_launch_kernel needs a kernel and a parameter "
		    "struct of 0 or 17..%zu bytes (got %zu); smaller structs travel in registers "
		    "according to their field types, so launch those with cudaemu_launch_thunk",
		    kernel_name(name, fn).c_str(), kMaxParamBytes, params_size);
		return CUDAEMU_INVALID_VALUE;
	}
	// The blob lives for the whole launch, padded to its size class.
	std::unique_ptr<Blob<16>[]> bytes(
	    new (std::nothrow) Blob<16>[(params_size ? blob_class(params_size) : 16) / 16]());
	if (!bytes) {
		tl_last_error = "cudaemu: out of memory";
		return CUDAEMU_OUT_OF_RESOURCES;
	}
	if (params_size)
		std::memcpy(bytes.get(), params[0], params_size);
	const BlobCall call{fn, bytes.get()->bytes};
	return launch_erased(name, fn, dim3(gx, gy, gz), dim3(bx, by, bz), shmem,
	                     blob_invoker(params_size), &call);
}

extern "C" const char *cudaemu_last_error(void) { return tl_last_error.c_str(); }

extern "C" void cudaemu_set_threads(unsigned n) { g_threads.store(n < 64 ? n : 64); }

extern "C" unsigned cudaemu_get_threads(void)
{
	const unsigned n = g_threads.load();
	return n ? n : default_threads();
}
