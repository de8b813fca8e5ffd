/* pool.c - the persistent thread pool of host kernels.
 *
 * Created at the first job big enough to need it, with NNK_NUM_THREADS
 * threads in all (default: the online cores), the caller being one of them.
 * Idle workers sleep on a condition variable.  One job runs at a time: a
 * caller that finds the pool busy (another thread's launch) runs its job
 * inline instead of queueing, which keeps concurrent launches from
 * serialising on the pool and avoids any deadlock.
 *
 * Tasks are claimed one at a time, so uneven tasks balance themselves, and
 * the caller claims like any worker: it never waits for a worker that has
 * not claimed a task.  It wakes the workers only when the tasks left would
 * take it more than WAKE_WORK_NS alone, judged by its own first tasks
 * (caller_run), so a short job never pays for a wake-up.  On a loaded machine a woken worker may be
 * descheduled for milliseconds before it runs (a busy process on its
 * core); the caller then takes every task itself and returns, as a
 * work-stealing pool does, and waits only for tasks a worker has claimed
 * and is running (spinning a little first: see run_batch).  A claim is a compare-and-swap on one word holding the
 * job's number (high 32 bits) and the next task (low 32), so a worker that
 * wakes late, still holding an old job's function, claims nothing from
 * the next job.  Jobs of more than 2^32 - 1 tasks run as several.
 *
 * A worker descheduled in the middle of a task it claimed still makes the
 * caller wait for it (its outputs may not be written twice, nor after the
 * call returns): on a core shared with a busy process that is a scheduler
 * slice, milliseconds, for a job that takes less.  So a caller that waited
 * long for a claimed task (LATE_MIN_NS and four of its own task times)
 * marks the pool late: the jobs of the next LATE_MIN_RUN_NS run on the
 * caller alone, as with one thread, twice as long after each further late
 * job (at most LATE_MAX_RUN_NS), half as long after one that a worker took
 * part in on time; then the pool is tried again, so it comes back within
 * seconds after the contention ends.  The period is a time, not a count of
 * jobs: short jobs, which wake no worker, used up a count, and a longer
 * job then met the late worker again in most calls (under a busy loop
 * pinned to one core, 2^20-element jobs took 30-100 ms instead of 1).
 * A job counts as late, too, when its caller was off its core for longer
 * than it ran after it woke the workers (and over LATE_MIN_NS): a worker
 * woken onto the caller's own core (the other one busy) displaces it, and
 * the job then lasts as long as the scheduler's turns, milliseconds.  A job's bits do not
 * depend on the threads that ran it (exec.c), so this changes no result.
 */
#include "internal.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BATCH = 0x7fffffff };   /* tasks per job: the low half of `claim` */
/* how long a caller with nothing left to claim spins before it sleeps */
#define SPIN_MIN_NS 20000
#define SPIN_MAX_NS 500000
/* a wait for claimed tasks longer than this (and 4 task times) is late */
#define LATE_MIN_NS 200000
/* how long jobs then run on the caller alone: first, at most */
#define LATE_MIN_RUN_NS 250000000
#define LATE_MAX_RUN_NS 4000000000
/* the workers are woken once the tasks left would take the caller this long */
#define WAKE_WORK_NS 100000

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pthread_t *threads;
    int nworkers;
    int nthreads;             /* workers + the caller; 0 until started */
    bool stop, busy;
    /* the current job, written under the lock before `generation` moves */
    uint32_t generation;      /* bumped for each job */
    rt_task_fn fn;
    void *arg;
    int64_t base, ntasks;     /* tasks base .. base + ntasks - 1 */
    atomic_uint_least64_t claim;   /* generation << 32 | the next task */
    atomic_llong remaining;        /* tasks claimed or not, not yet finished */
    /* lateness (under the lock): jobs run on the caller alone until
     * inline_until (monotonic ns), a period of inline_run ns */
    int64_t inline_until, inline_run;
    int64_t late_jobs;             /* counted, for the tests */
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

void (*rt_pool_test_stall)(void);
void (*rt_pool_test_claimed)(void);

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The calling thread's CPU time. */
static int64_t thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A worker's part of job `gen`: claims and runs its tasks until none is
 * left; the worker that finishes the job's last task wakes the caller. */
static void claim_and_run(uint32_t gen, rt_task_fn fn, void *arg, int64_t base, int64_t ntasks)
{
    uint64_t c = atomic_load(&pool.claim);
    for (;;) {
        if ((uint32_t)(c >> 32) != gen || (int64_t)(c & 0xffffffffu) >= ntasks)
            return;
        if (!atomic_compare_exchange_weak(&pool.claim, &c, c + 1))
            continue; /* c is the current value again */
        if (rt_pool_test_claimed)
            rt_pool_test_claimed();
        fn(arg, base + (int64_t)(c & 0xffffffffu));
        if (atomic_fetch_sub(&pool.remaining, 1) == 1) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
        c = atomic_load(&pool.claim);
    }
}

/* The caller's part of job `gen`: claims and runs tasks as a worker does,
 * and wakes the workers only once the tasks left would take it more than
 * WAKE_WORK_NS alone, judged by its own tasks so far: a job of a few tens
 * of microseconds is over before a woken worker would run (a futex wake
 * and a scheduler's latency, milliseconds on a loaded machine), and a
 * worker that claims a task late only makes the caller wait for it; a
 * short job so costs nothing but the caller's time, as with one thread.
 * (A worker not waiting on `work` sees the new generation itself and may
 * join without being woken.)  Returns the tasks it ran. */
static int64_t caller_run(uint32_t gen, rt_task_fn fn, void *arg, int64_t base, int64_t ntasks, int64_t t0,
                          int64_t *off_cpu)
{
    int64_t ran = 0, woke_ns = 0, woke_cpu = 0;
    bool woke = false;
    uint64_t c = atomic_load(&pool.claim);
    for (;;) {
        if ((uint32_t)(c >> 32) != gen || (int64_t)(c & 0xffffffffu) >= ntasks)
            break;
        if (!atomic_compare_exchange_weak(&pool.claim, &c, c + 1))
            continue; /* c is the current value again */
        int64_t task = (int64_t)(c & 0xffffffffu);
        fn(arg, base + task);
        ran++;
        atomic_fetch_sub(&pool.remaining, 1);
        if (!woke) {
            int64_t left = ntasks - task - 1;
            if (left > 0 && (now_ns() - t0) / ran * left > WAKE_WORK_NS) {
                woke_ns = now_ns(), woke_cpu = thread_cpu_ns();
                pthread_cond_broadcast(&pool.work);
                woke = true;
            }
        }
        c = atomic_load(&pool.claim);
    }
    /* how long the caller was off its core since it woke the workers, in
     * excess of the time it ran */
    if (woke) {
        int64_t wall = now_ns() - woke_ns, cpu = thread_cpu_ns() - woke_cpu;
        *off_cpu = wall - cpu > cpu ? wall - cpu : 0;
    }
    return ran;
}

static void *worker(void *start)
{
    uint32_t seen = (uint32_t)(uintptr_t)start;   /* the generation when it was created */
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (!pool.stop && pool.generation == seen)
            pthread_cond_wait(&pool.work, &pool.lock);
        if (pool.stop)
            break;
        seen = pool.generation;
        if (!pool.busy)
            continue;
        rt_task_fn fn = pool.fn;
        void *arg = pool.arg;
        int64_t base = pool.base, ntasks = pool.ntasks;
        pthread_mutex_unlock(&pool.lock);
        if (rt_pool_test_stall)
            rt_pool_test_stall();
        claim_and_run(seen, fn, arg, base, ntasks);
        pthread_mutex_lock(&pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

static int wanted_threads(void)
{
    const char *env = getenv("NNK_NUM_THREADS");
    if (env && *env) {
        char *end;
        long n = strtol(env, &end, 10);
        if (!*end && n >= 1)
            return n > 1024 ? 1024 : (int)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

/* With pool.lock held. */
static void start_locked(void)
{
    int n = wanted_threads();
    pool.nthreads = n;
    pool.nworkers = 0;
    if (n == 1)
        return;
    pool.threads = calloc((size_t)n - 1, sizeof *pool.threads);
    if (!pool.threads)
        return; /* run everything inline */
    pool.stop = false;
    for (int i = 0; i < n - 1; i++) {
        if (pthread_create(&pool.threads[i], NULL, worker, (void *)(uintptr_t)pool.generation) != 0)
            break;
        pool.nworkers++;
    }
}

int rt_pool_threads(void)
{
    pthread_mutex_lock(&pool.lock);
    if (!pool.nthreads)
        start_locked();
    int n = pool.nworkers + 1;
    pthread_mutex_unlock(&pool.lock);
    return n;
}

/* One job of at most MAX_BATCH tasks; false: the pool is busy or has no
 * workers, and the caller runs the tasks inline. */
static bool run_batch(int64_t base, int64_t ntasks, rt_task_fn fn, void *arg)
{
    pthread_mutex_lock(&pool.lock);
    if (!pool.nthreads)
        start_locked();
    if (pool.busy || pool.nworkers == 0) {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    if (pool.inline_until && now_ns() < pool.inline_until) { /* late workers: the caller alone (above) */
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    pool.busy = true;
    pool.fn = fn;
    pool.arg = arg;
    pool.base = base;
    pool.ntasks = ntasks;
    uint32_t gen = ++pool.generation;
    atomic_store(&pool.remaining, ntasks);
    atomic_store(&pool.claim, (uint64_t)gen << 32);
    pthread_mutex_unlock(&pool.lock);
    int64_t t0 = now_ns(), off_cpu = 0;
    int64_t mine = caller_run(gen, fn, arg, base, ntasks, t0, &off_cpu);
    /* Only tasks a worker claimed are left, and it is running them: they
     * end within a task's time unless it was descheduled.  Sleeping hands
     * the caller's core away, and on a loaded machine getting it back
     * takes milliseconds, so the caller spins for a few of its own task
     * times first (at least SPIN_MIN_NS, at most SPIN_MAX_NS). */
    int64_t t1 = 0, per = 0;
    const bool waited = atomic_load(&pool.remaining) > 0;
    if (waited) {
        t1 = now_ns(), per = mine > 0 ? (t1 - t0) / mine : SPIN_MIN_NS;
        int64_t until = t1 + (4 * per < SPIN_MIN_NS ? SPIN_MIN_NS : 4 * per > SPIN_MAX_NS ? SPIN_MAX_NS : 4 * per);
        for (int i = 0; atomic_load(&pool.remaining) > 0; i++) {
            if ((i & 63) == 63 && now_ns() > until)
                break;
            cpu_relax();
        }
    }
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.remaining) > 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    int64_t t2 = waited ? now_ns() : 0, wait = t2 - t1;
    if ((waited && wait > LATE_MIN_NS && wait > 4 * per) || off_cpu > LATE_MIN_NS) {
        if (!waited)
            t2 = now_ns();
        pool.inline_run = pool.inline_run ? 2 * pool.inline_run : LATE_MIN_RUN_NS;
        if (pool.inline_run > LATE_MAX_RUN_NS)
            pool.inline_run = LATE_MAX_RUN_NS;
        pool.inline_until = t2 + pool.inline_run;
        pool.late_jobs++;
    } else if (mine < ntasks) {
        pool.inline_run /= 2; /* a worker took part, in time */
        if (pool.inline_run < LATE_MIN_RUN_NS)
            pool.inline_run = 0;
    }
    pool.busy = false;
    pthread_mutex_unlock(&pool.lock);
    return true;
}

void rt_pool_run(int64_t ntasks, rt_task_fn fn, void *arg)
{
    for (int64_t base = 0; base < ntasks; base += MAX_BATCH) {
        int64_t n = ntasks - base < MAX_BATCH ? ntasks - base : MAX_BATCH;
        if (n == 1 || !run_batch(base, n, fn, arg))
            for (int64_t t = base; t < base + n; t++)
                fn(arg, t);
    }
}

void rt_pool_shutdown(void)
{
    pthread_mutex_lock(&pool.lock);
    pool.stop = true;
    pthread_cond_broadcast(&pool.work);
    int n = pool.nworkers;
    pthread_t *threads = pool.threads;
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_lock(&pool.lock);
    free(threads);
    pool.threads = NULL;
    pool.nworkers = 0;
    pool.nthreads = 0;
    pool.stop = false;
    pool.inline_until = pool.inline_run = pool.late_jobs = 0;
    pthread_mutex_unlock(&pool.lock);
}

int64_t rt_pool_late_jobs(void)
{
    pthread_mutex_lock(&pool.lock);
    int64_t n = pool.late_jobs;
    pthread_mutex_unlock(&pool.lock);
    return n;
}

/* A forked child has none of the parent's workers: it starts its own pool
 * when it needs one. */
static void atfork_child(void)
{
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.done, NULL);
    free(pool.threads);
    pool.threads = NULL;
    pool.nworkers = 0;
    pool.nthreads = 0;
    pool.busy = false;
    pool.stop = false;
    pool.inline_until = pool.inline_run = 0;
}

__attribute__((constructor)) static void pool_init(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}
