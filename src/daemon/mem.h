/*
 * mem.h - memory accounting: the daemon's RSS against memory_limit.
 *
 * The figure compared with the limit is the daemon's resident memory as
 * the kernel reports it (/proc/self/statm).  Reading it on every write
 * would cost a system call per request, so the write path uses an
 * estimate instead:
 *
 *     rss ~= arena pages * 4096 + overhead
 *
 * where overhead (code, heap, libfuse buffers, metadata) is the kernel's
 * figure minus the arena's share at the last reconciliation.  The
 * estimate is reconciled with the kernel whenever MEM_RECONCILE_BYTES
 * were allocated since the last time, whenever a charge would come
 * within MEM_RECONCILE_BYTES of the limit, and on demand (mem_reconcile).
 *
 * All fields are atomics: no lock.  Two writers charging at once may
 * both pass the check; the overshoot is bounded by the number of worker
 * threads times the largest request (1 MiB).
 */
#ifndef VOLATILEFS_MEM_H
#define VOLATILEFS_MEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"

#define MEM_RECONCILE_BYTES (4u << 20)

struct mem {
	struct arena *arena;
	_Atomic uint64_t limit;
	_Atomic uint64_t low;
	_Atomic bool low_explicit;     /* memory_low given by the user ... */
	_Atomic uint64_t low_asked;    /* ... and its value, before capping */
	_Atomic int64_t overhead;      /* kernel RSS - arena bytes, last reconcile */
	_Atomic uint64_t pages_at_reconcile;
	_Atomic uint64_t enospc_total;
	int statm_fd;
};

/* Default memory_limit: half of physical memory. */
uint64_t mem_default_limit(void);

/*
 * limit: bytes (0 = default); low: bytes (0 = 90% of limit, else capped
 * at limit).  Zero or -errno.
 */
int mem_init(struct mem *m, struct arena *a, uint64_t limit, uint64_t low);
void mem_destroy(struct mem *m);
/*
 * Reopen /proc/self/statm: "self" is resolved at open, so a daemon that
 * forked into the background must call this.  Zero or -errno.
 */
int mem_reopen(struct mem *m);

/* Change the limit; a default memory_low follows at 90%, an explicit one is capped. */
void mem_set_limit(struct mem *m, uint64_t limit);

/* The kernel's figure for our RSS in bytes, or 0 if it cannot be read. */
uint64_t mem_rss_kernel(struct mem *m);
/* Re-read the kernel's figure and reset the estimate's overhead. */
void mem_reconcile(struct mem *m);
/* Estimated RSS in bytes (cheap). */
uint64_t mem_rss(struct mem *m);

/*
 * May npages new pages be allocated without going over the limit?
 * Zero, or -ENOSPC (the caller counts enospc_total when it gives up).  Asking for no page always
 * succeeds: a write into memory already held never fails for space.
 */
int mem_charge(struct mem *m, uint64_t npages);
/* As mem_charge, but npages 0 asks "is there room at all?" (new nodes). */
int mem_charge_check(struct mem *m, uint64_t npages);

#endif
