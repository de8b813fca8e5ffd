/* lifecycle.c - the runtime's global state as a whole: nnk_shutdown, the
 * fork handlers that take every global lock in one order, and the
 * exit-time teardown (unless objects are still alive). */
#include "internal.h"

#include <pthread.h>

atomic_long rt_live_objects;

void nnk_shutdown(void)
{
    rt_jit_jobs_wait(); /* background compiles finish (their cache entries whole) */
    rt_pool_shutdown();
    rt_context_shutdown();
    rt_linked_shutdown();      /* kernels of nnk_launch_desc, before their extensions */
    rt_extensions_shutdown();  /* frees allocators, then fini + dlclose */
    rt_jit_shutdown();
}

/* One set of fork handlers so that the locks are taken in the order the
 * runtime nests them (a kernel of a linked descriptor is made under
 * linked.lock, which makes the default context, which imports the cpu
 * extension, whose init may compile): a fork waits for what holds them
 * and the child finds them free and the data consistent. */
static void fork_prepare(void)
{
    rt_linked_atfork(RT_FORK_PREPARE);
    rt_context_atfork(RT_FORK_PREPARE);
    rt_extensions_atfork(RT_FORK_PREPARE);
    rt_jit_atfork(RT_FORK_PREPARE);
}

static void fork_parent(void)
{
    rt_jit_atfork(RT_FORK_PARENT);
    rt_extensions_atfork(RT_FORK_PARENT);
    rt_context_atfork(RT_FORK_PARENT);
    rt_linked_atfork(RT_FORK_PARENT);
}

static void fork_child(void)
{
    rt_jit_atfork(RT_FORK_CHILD);
    rt_extensions_atfork(RT_FORK_CHILD);
    rt_context_atfork(RT_FORK_CHILD);
    rt_linked_atfork(RT_FORK_CHILD);
}

__attribute__((constructor)) static void rt_fork_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* At exit, tearing down under live objects would turn their later frees
 * (from other destructors) into use-after-free: then only the threads go. */
__attribute__((destructor)) static void rt_fini(void)
{
    if (atomic_load(&rt_live_objects) == 0)
        nnk_shutdown();
    else
        rt_pool_shutdown();
}
