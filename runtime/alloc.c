/* alloc.c - the caching allocator, one per (extension, device).
 *
 * Requests are rounded up to size classes: 256 bytes at least, then four
 * classes per power of two (2^k, 1.25, 1.5 and 1.75 x 2^k), which wastes
 * at most 25% and lets a freed block serve any later request of its class.
 * Freed blocks go to the free list of their class instead of back to the
 * device (device allocation is slow: cudaMalloc synchronises).  The
 * extension only sees whole blocks through mem_alloc / mem_free.  When the
 * device says it is full, the cache is flushed and the allocation retried
 * once.  Block headers live in host memory, so device addresses stay
 * opaque.
 */
#include "internal.h"

#include <stdlib.h>

enum { NCLASSES = 4 * 64 };

struct rt_allocator {
    rt_ext *ext;
    int32_t device;
    pthread_mutex_t lock;
    rt_block *free_list[NCLASSES];
    nnk_memory_stats stats;
};

/* The class index and rounded size of a request. */
static int class_of(size_t bytes, size_t *rounded)
{
    if (bytes <= 256) {
        *rounded = 256;
        return 0;
    }
    int k = 63 - __builtin_clzll((unsigned long long)bytes); /* 2^k <= bytes */
    size_t base = (size_t)1 << k, quarter = base / 4;
    int sub = (int)((bytes - base + quarter - 1) / quarter);  /* 0..4 quarters above 2^k */
    if (sub == 4)
        k++, sub = 0, base <<= 1, quarter <<= 1;
    *rounded = base + (size_t)sub * quarter;
    return (k - 8) * 4 + sub;
}

size_t rt_size_class(size_t bytes)
{
    size_t r;
    class_of(bytes, &r);
    return r;
}

rt_allocator *rt_allocator_new(rt_ext *ext, int32_t device)
{
    rt_allocator *a = rt_calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->ext = ext;
    a->device = device;
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

/* Returns every cached block to the device; with a->lock held. */
static uint64_t flush_locked(rt_allocator *a)
{
    uint64_t released = 0;
    for (int c = 0; c < NCLASSES; c++) {
        while (a->free_list[c]) {
            rt_block *b = a->free_list[c];
            a->free_list[c] = b->next;
            a->ext->ops->mem_free(a->ext->state, a->device, b->ptr);
            released += b->size;
            free(b);
        }
    }
    a->stats.bytes_cached -= released;
    return released;
}

uint64_t rt_allocator_flush(rt_allocator *a)
{
    pthread_mutex_lock(&a->lock);
    uint64_t r = flush_locked(a);
    pthread_mutex_unlock(&a->lock);
    return r;
}

void rt_allocator_free(rt_allocator *a)
{
    if (!a)
        return;
    flush_locked(a);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

nnk_status rt_alloc(rt_allocator *a, size_t bytes, rt_block **out)
{
    size_t size;
    if (bytes > ((size_t)1 << 62))
        return rt_error(NNK_ENOMEM, "cannot allocate %zu bytes on %s:%d", bytes, a->ext->ops->name, a->device);
    int c = class_of(bytes, &size);
    pthread_mutex_lock(&a->lock);
    rt_block *b = a->free_list[c];
    if (b) {
        a->free_list[c] = b->next;
        a->stats.hits++;
        a->stats.bytes_cached -= size;
    } else {
        a->stats.misses++;
    }
    if (b) {
        a->stats.bytes_in_use += size;
        if (a->stats.bytes_in_use > a->stats.peak_bytes_in_use)
            a->stats.peak_bytes_in_use = a->stats.bytes_in_use;
        pthread_mutex_unlock(&a->lock);
        *out = b;
        return NNK_OK;
    }
    pthread_mutex_unlock(&a->lock);

    b = rt_malloc(sizeof *b);
    if (!b)
        return NNK_ENOMEM;
    b->size = size;
    b->next = NULL;
    b->ptr = NULL;
    nnk_status s = a->ext->ops->mem_alloc(a->ext->state, a->device, size, &b->ptr);
    if (s == NNK_ENOMEM) {
        /* Memory held in the cache may be what the device lacks. */
        pthread_mutex_lock(&a->lock);
        a->stats.retries++;
        flush_locked(a);
        pthread_mutex_unlock(&a->lock);
        s = a->ext->ops->mem_alloc(a->ext->state, a->device, size, &b->ptr);
    }
    if (s != NNK_OK || !b->ptr) {
        free(b);
        nnk_memory_stats st;
        rt_allocator_stats(a, &st);
        return rt_error(s == NNK_OK ? NNK_ENOMEM : s,
                        "out of memory on %s:%d: cannot allocate %zu bytes (%llu bytes in use; the cache was flushed and the allocation retried)",
                        a->ext->ops->name, a->device, size, (unsigned long long)st.bytes_in_use);
    }
    pthread_mutex_lock(&a->lock);
    a->stats.bytes_in_use += size;
    if (a->stats.bytes_in_use > a->stats.peak_bytes_in_use)
        a->stats.peak_bytes_in_use = a->stats.bytes_in_use;
    pthread_mutex_unlock(&a->lock);
    *out = b;
    return NNK_OK;
}

void rt_dealloc(rt_allocator *a, rt_block *b)
{
    size_t size;
    int c = class_of(b->size, &size);
    pthread_mutex_lock(&a->lock);
    b->next = a->free_list[c];
    a->free_list[c] = b;
    a->stats.bytes_in_use -= size;
    a->stats.bytes_cached += size;
    pthread_mutex_unlock(&a->lock);
}

void rt_allocator_stats(rt_allocator *a, nnk_memory_stats *out)
{
    pthread_mutex_lock(&a->lock);
    *out = a->stats;
    pthread_mutex_unlock(&a->lock);
}
