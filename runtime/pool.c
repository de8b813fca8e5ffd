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
 * not claimed a task.  A claim is a compare-and-swap on one word holding
 * the job's number (high 32 bits) and the next task (low 32), so a worker
 * that wakes late, still holding an old job's function, claims nothing
 * from the next job.  Jobs of more than 2^32 - 1 tasks run as several.
 * The caller posts a job to the workers (and wakes them) only when the
 * tasks left would take it more than WAKE_WORK_NS alone, judged by its own
 * first tasks (caller_run), so a short job never pays for a wake-up; a job
 * whose size says it is long (rt_pool_run_work: elements per task) wakes
 * them before its first task, since a job of few long tasks (a column sum
 * of 4096 x 4096 is one task a thread) would otherwise run its first task
 * on the caller alone: with two tasks, the whole job twice as long.
 *
 * Under contention (a busy process on one core, a loaded machine) two
 * things made 2 threads slower than 1 (bench/perf, docs/performance.md):
 *  - a woken worker descheduled before it claims: the caller takes every
 *    task itself and returns, as a work-stealing pool does;
 *  - a worker descheduled in the middle of a task it claimed: the caller
 *    must wait for it, a scheduler slice or several (milliseconds; 40 ms
 *    at a load of 15 on 2 cores), since a task's outputs may not be
 *    written twice nor after the call returns: a caller that re-ran the
 *    task would return while the late worker still has stores pending,
 *    and those land later on memory the user may have written or freed
 *    since (and an output that is also an input, z = z * 2, gives other
 *    bits when run twice).  So the pool keeps an estimate of how long a
 *    worker is descheduled, the delay: a late wait for a claimed task
 *    (over LATE_MIN_NS and 4 of the caller's task times) adds its length,
 *    and a worker's task that took far longer than the caller's tasks (it
 *    was descheduled in it, whether or not the caller waited) raises the
 *    delay to that excess, as does a caller that was off its core after
 *    waking the workers for longer than it ran (on a loaded machine a
 *    worker woken onto the caller's core preempts it, and the caller then
 *    waits its turn behind every other runnable thread there: 2^16
 *    elements took 4-15 ms on 2 threads, 0.2 ms on 1, at a load of 20);
 *    it halves every DELAY_HALF_NS.  A job shorter
 *    than twice the delay runs on the caller alone (no wake-up), and in a
 *    longer one a worker claims no task once the tasks after it would take
 *    the caller less than the delay: the job's end is the caller's, and a
 *    worker descheduled in its last task has that long to finish it.
 * A worker woken onto the caller's own CPU (the scheduler's wake-up
 * placement when the other core is busy) takes turns with the caller on
 * one core; that is left as it is: keeping such a worker off (yielding)
 * made 2^25 jobs slower on a loaded machine, where the two threads' turns
 * are a share of a core that others use too, and the wait it causes at a
 * job's end is the delay above.
 * A job's bits do not depend on the threads that ran it (exec.c), so none
 * of this changes a result.
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
/* the workers' delay estimate: at most, and halved every DELAY_HALF_NS */
#define DELAY_MAX_NS 100000000
#define DELAY_HALF_NS 2000000000
/* the workers are woken once the tasks left would take the caller this long */
#define WAKE_WORK_NS 100000
/* the least time an element of a task takes (rt_pool_run_work: a sum of
 * f32 streams 4 bytes an element, 16-32 GB/s on one core of these
 * machines): a job whose elements take longer than WAKE_WORK_NS at this
 * rate wakes the workers before its first task */
#define ELEMENT_PS_MIN 125

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pthread_t *threads;
    int nworkers;
    int nthreads;             /* workers + the caller; 0 until started */
    bool stop, busy;
    /* the current job, written under the lock before `posted` moves */
    uint32_t generation;      /* bumped for each job */
    uint32_t posted;          /* the job the workers were woken for */
    rt_task_fn fn;
    void *arg;
    int64_t base, ntasks;     /* tasks base .. base + ntasks - 1 */
    int64_t task_ns;          /* the caller's time per task so far */
    int64_t est_ns;           /* the least time a task takes, by its size (0: unknown) */
    int64_t reserve_ns;       /* the work a worker leaves to the caller */
    atomic_uint_least64_t claim;   /* generation << 32 | the next task */
    atomic_llong remaining;        /* tasks claimed or not, not yet finished */
    atomic_llong worker_late;      /* the longest a worker was descheduled in a task of this job */
    /* lateness (under the lock): the workers' delay, delay_ns at delay_t
     * (monotonic ns), halved every DELAY_HALF_NS since */
    int64_t delay_ns, delay_t;
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

/* The workers' delay estimate now (with pool.lock held). */
static int64_t delay_locked(int64_t now)
{
    if (!pool.delay_ns)
        return 0;
    int64_t halvings = (now - pool.delay_t) / DELAY_HALF_NS;
    return halvings >= 63 ? 0 : pool.delay_ns >> halvings;
}

/* A worker's part of job `gen`: claims and runs its tasks until none is
 * left, or until the tasks left after the next one would take the caller
 * less than `reserve` ns alone (those are the caller's: it is not made to
 * wait for a worker descheduled in the last of them).  A task's time is
 * the caller's (task_ns) when the caller woke the workers after tasks of
 * its own, else the worker's own so far, else before its first task the
 * least the job's size allows (est_ns, rt_pool_run_work: a job woken
 * before its first task is longer than twice the reserve by that bound,
 * so this first claim keeps the reserve).  Without any, it claims
 * nothing.  (Judging by task_ns alone left a job woken by its size, task
 * time 0, wholly to the caller whenever the delay was not 0: a 2^25
 * fused elementwise kernel ran at one thread's speed in bench/perf, where
 * the delay's halving every DELAY_HALF_NS left it above 0 for tens of
 * seconds after one late wait.)  The worker that finishes the job's last
 * task wakes the caller. */
static void claim_and_run(uint32_t gen, rt_task_fn fn, void *arg, int64_t base, int64_t ntasks, int64_t task_ns,
                          int64_t est_ns, int64_t reserve)
{
    int64_t done = 0, busy_ns = 0;
    uint64_t c = atomic_load(&pool.claim);
    for (;;) {
        /* the tasks that must be left unclaimed after a claim */
        int64_t per = task_ns > 0 ? task_ns : done > 0 ? busy_ns / done : est_ns;
        int64_t keep = reserve > 0 ? (per > 0 ? reserve / per : ntasks) : 0;
        if ((uint32_t)(c >> 32) != gen || (int64_t)(c & 0xffffffffu) >= ntasks - keep)
            return;
        if (!atomic_compare_exchange_weak(&pool.claim, &c, c + 1))
            continue; /* c is the current value again */
        int64_t a = now_ns();
        if (rt_pool_test_claimed)
            rt_pool_test_claimed();
        fn(arg, base + (int64_t)(c & 0xffffffffu));
        int64_t took = now_ns() - a;
        done++, busy_ns += took;
        /* a task far longer than the caller's: descheduled in it for the
         * difference, which the caller would wait for at the job's end */
        int64_t late = took - task_ns;
        if (task_ns > 0 && late > LATE_MIN_NS && late > 4 * task_ns) {
            long long seen = atomic_load_explicit(&pool.worker_late, memory_order_relaxed);
            while (seen < late && !atomic_compare_exchange_weak(&pool.worker_late, &seen, late))
                ;
        }
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
 * WAKE_WORK_NS alone (and twice the workers' delay estimate `delay`),
 * judged by its own tasks so far: a job of a few tens of microseconds is
 * over before a woken worker would run (a futex wake and a scheduler's
 * latency, milliseconds on a loaded machine), and a worker that claims a
 * task late only makes the caller wait for it; a short job so costs
 * nothing but the caller's time, as with one thread.  Returns the tasks
 * it ran; *off_cpu: how long it was off its core after waking the workers,
 * beyond the time it ran (a worker woken onto its core displaced it). */
static void wake_workers(uint32_t gen, int64_t per)
{
    pthread_mutex_lock(&pool.lock);
    pool.task_ns = per;
    pool.posted = gen;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.lock);
}

static int64_t caller_run(uint32_t gen, rt_task_fn fn, void *arg, int64_t base, int64_t ntasks, int64_t t0,
                          int64_t delay, int64_t est_ns, int64_t *off_cpu)
{
    int64_t ran = 0, woke_ns = 0, woke_cpu = 0;
    bool woke = false;
    int64_t wake_ns = 2 * delay > WAKE_WORK_NS ? 2 * delay : WAKE_WORK_NS;
    /* long by its size (est_ns: the least time a task takes) */
    if (ntasks > 1 && est_ns > 0 && est_ns > wake_ns / (ntasks - 1)) {
        woke_ns = now_ns(), woke_cpu = thread_cpu_ns();
        /* no task time yet (0): the estimate is a lower bound, and a
         * worker judged its tasks late against it (a slow kernel's) */
        wake_workers(gen, 0);
        woke = true;
    }
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
            int64_t left = ntasks - task - 1, per = (now_ns() - t0) / ran;
            if (left > 0 && per * left > wake_ns) {
                woke_ns = now_ns(), woke_cpu = thread_cpu_ns();
                wake_workers(gen, per > 0 ? per : 1);
                woke = true;
            }
        }
        c = atomic_load(&pool.claim);
    }
    if (woke) {
        int64_t wall = now_ns() - woke_ns, cpu = thread_cpu_ns() - woke_cpu;
        *off_cpu = wall - cpu > cpu ? wall - cpu : 0;
    }
    return ran;
}

static void *worker(void *start)
{
    uint32_t seen = (uint32_t)(uintptr_t)start;   /* the job posted when it was created */
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (!pool.stop && pool.posted == seen)
            pthread_cond_wait(&pool.work, &pool.lock);
        if (pool.stop)
            break;
        seen = pool.posted;
        if (!pool.busy || pool.generation != seen)
            continue;
        rt_task_fn fn = pool.fn;
        void *arg = pool.arg;
        int64_t base = pool.base, ntasks = pool.ntasks, task_ns = pool.task_ns, est_ns = pool.est_ns,
                reserve = pool.reserve_ns;
        pthread_mutex_unlock(&pool.lock);
        if (rt_pool_test_stall)
            rt_pool_test_stall();
        claim_and_run(seen, fn, arg, base, ntasks, task_ns, est_ns, reserve);
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
        if (pthread_create(&pool.threads[i], NULL, worker, (void *)(uintptr_t)pool.posted) != 0)
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
static bool run_batch(int64_t base, int64_t ntasks, int64_t est_ns, rt_task_fn fn, void *arg)
{
    pthread_mutex_lock(&pool.lock);
    if (!pool.nthreads)
        start_locked();
    if (pool.busy || pool.nworkers == 0) {
        pthread_mutex_unlock(&pool.lock);
        return false;
    }
    int64_t t0 = now_ns(), delay = delay_locked(t0);
    pool.busy = true;
    pool.fn = fn;
    pool.arg = arg;
    pool.base = base;
    pool.ntasks = ntasks;
    pool.est_ns = est_ns;
    pool.reserve_ns = delay;
    uint32_t gen = ++pool.generation;
    if (gen == pool.posted) /* wrapped around: posted must differ from a new job's number */
        gen = ++pool.generation;
    atomic_store(&pool.remaining, ntasks);
    atomic_store(&pool.claim, (uint64_t)gen << 32);
    atomic_store_explicit(&pool.worker_late, 0, memory_order_relaxed);
    pthread_mutex_unlock(&pool.lock);
    int64_t off_cpu = 0;
    int64_t mine = caller_run(gen, fn, arg, base, ntasks, t0, delay, est_ns, &off_cpu);
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
    /* The workers' delay: a late wait for a claimed task (the worker was
     * descheduled that long past the reserve it left), a worker's task
     * that took far longer than the caller's (descheduled in it: had that
     * task been its last, the caller would have waited), or a caller off
     * its core after waking the workers for longer than it ran. */
    int64_t t2 = now_ns(), late = atomic_load(&pool.worker_late), d = delay_locked(t2);
    bool was_late = false;
    if (waited && t2 - t1 > LATE_MIN_NS && t2 - t1 > 4 * per)
        d += t2 - t1, was_late = true;
    if (off_cpu > LATE_MIN_NS && off_cpu > late)
        late = off_cpu;
    if (late > d)
        d = late;
    if (was_late || late > 0) {
        pool.delay_ns = d > DELAY_MAX_NS ? DELAY_MAX_NS : d;
        pool.delay_t = t2;
    }
    pool.late_jobs += was_late;
    pool.busy = false;
    pthread_mutex_unlock(&pool.lock);
    return true;
}

void rt_pool_run_work(int64_t ntasks, int64_t task_work, rt_task_fn fn, void *arg)
{
    /* (the estimate saturates: task_work is at most a plan's elements) */
    int64_t est_ns = task_work > 0 ? (task_work > INT64_MAX / ELEMENT_PS_MIN ? INT64_MAX / 1000
                                                                           : task_work * ELEMENT_PS_MIN / 1000) : 0;
    for (int64_t base = 0; base < ntasks; base += MAX_BATCH) {
        int64_t n = ntasks - base < MAX_BATCH ? ntasks - base : MAX_BATCH;
        if (n == 1 || !run_batch(base, n, est_ns, fn, arg))
            for (int64_t t = base; t < base + n; t++)
                fn(arg, t);
    }
}

void rt_pool_run(int64_t ntasks, rt_task_fn fn, void *arg)
{
    rt_pool_run_work(ntasks, 0, fn, arg);
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
    pool.delay_ns = pool.delay_t = pool.late_jobs = 0;
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
    pool.delay_ns = pool.delay_t = 0;
}

__attribute__((constructor)) static void pool_init(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}
