/* pool.c - the persistent thread pool of host kernels.
 *
 * Created at the first job big enough to need it, with NNK_NUM_THREADS
 * threads in all (default: the online cores), the caller being one of them.
 * Idle workers sleep on a condition variable.  One job runs at a time: a
 * caller that finds the pool busy (another thread's launch) runs its job
 * inline instead of queueing, which keeps concurrent launches from
 * serialising on the pool and avoids any deadlock.  Tasks are claimed with
 * an atomic counter, so uneven tasks balance themselves.
 */
#include "internal.h"

#include <stdlib.h>
#include <unistd.h>

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pthread_t *threads;
    int nworkers;
    int nthreads;             /* workers + the caller; 0 until started */
    bool stop, busy;
    uint64_t generation;      /* bumped for each job */
    rt_task_fn fn;
    void *arg;
    int64_t ntasks;
    atomic_llong next;        /* the next task to claim */
    int64_t ndone;
    int active;               /* workers inside the current job */
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static int64_t claim_and_run(rt_task_fn fn, void *arg, int64_t ntasks)
{
    int64_t done = 0;
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed);
        if (t >= ntasks)
            return done;
        fn(arg, t);
        done++;
    }
}

static void *worker(void *unused)
{
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.lock);
    seen = pool.generation;
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
        int64_t ntasks = pool.ntasks;
        pool.active++;
        pthread_mutex_unlock(&pool.lock);
        int64_t done = claim_and_run(fn, arg, ntasks);
        pthread_mutex_lock(&pool.lock);
        pool.ndone += done;
        pool.active--;
        if (pool.active == 0 && pool.ndone == pool.ntasks)
            pthread_cond_signal(&pool.done);
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
        if (pthread_create(&pool.threads[i], NULL, worker, NULL) != 0)
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

void rt_pool_run(int64_t ntasks, rt_task_fn fn, void *arg)
{
    if (ntasks <= 0)
        return;
    bool inline_run = ntasks == 1;
    if (!inline_run) {
        pthread_mutex_lock(&pool.lock);
        if (!pool.nthreads)
            start_locked();
        inline_run = pool.busy || pool.nworkers == 0;
        if (!inline_run) {
            pool.busy = true;
            pool.fn = fn;
            pool.arg = arg;
            pool.ntasks = ntasks;
            pool.ndone = 0;
            atomic_store(&pool.next, 0);
            pool.generation++;
            pthread_cond_broadcast(&pool.work);
        }
        pthread_mutex_unlock(&pool.lock);
    }
    if (inline_run) {
        for (int64_t t = 0; t < ntasks; t++)
            fn(arg, t);
        return;
    }
    int64_t done = claim_and_run(fn, arg, ntasks);
    pthread_mutex_lock(&pool.lock);
    pool.ndone += done;
    while (pool.ndone < pool.ntasks || pool.active > 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pool.busy = false;
    pthread_mutex_unlock(&pool.lock);
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
    pthread_mutex_unlock(&pool.lock);
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
}

__attribute__((constructor)) static void pool_init(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}
