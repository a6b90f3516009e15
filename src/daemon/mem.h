/*
 * mem.h - memory accounting: everything the daemon holds, against
 * memory_limit, reserved before it is used (DESIGN section 3).
 *
 * One figure is compared with the limit:
 *
 *     rss = base + charged
 *
 * charged (bytes) is what the daemon's own code holds or has promised:
 *   - every arena page handed out (file data), 4096 bytes each;
 *   - reservations taken for pages not yet handed out (a write or
 *     fallocate reserves all it needs before it allocates one page),
 *     and for metadata not yet allocated (fs_room, meta.h's credit);
 *   - metadata: nodes, names, xattrs, units, extents, page-map nodes,
 *     open files, counted at the size the allocator really uses for each
 *     block (meta.h).
 * base is what the kernel counts and charged does not: code, thread
 * stacks, libfuse's request buffers, the arena's own tables, allocator
 * slack.  It is measured: at each reconciliation, base = the kernel's
 * VmRSS - (arena pages + metadata), never below zero.
 *
 * Memory is added to charged by a reservation before it is used:
 * mem_reserve() (mem_reserve_meta() for metadata, mem_meta_charge()
 * for a block charged as it is allocated), one atomic compare-and-swap
 * against the limit: two writers cannot both pass a check that only one
 * of them fits, so concurrent writes, fallocates, creates and marks
 * together stay under the limit.  The exceptions are paid for
 * otherwise: mem_charge() for pages the kernel already gave, and
 * meta.h's unlimited charges, each bounded by what its caller frees.  What a reservation
 * did not use goes back with mem_unreserve(); the arena gives back
 * 4096 bytes per page it frees (arena.h: a->charged).
 *
 * base moves only at reconciliation: the monitor thread, every
 * EVICT_MONITOR_MS, and any reservation or metadata charge that would
 * come within MEM_RECONCILE_BYTES of its limit (base grows with
 * metadata too: allocator headers, a sanitizer's redzones and shadow).
 * Far from the limit a stale base costs nothing; near it, it is read
 * again before each decision.
 *
 * Memory comes back: freed metadata returns to malloc's free lists,
 * which keep it resident; mem_trim() hands whole free pages back to the
 * kernel (malloc_trim) once enough was freed since the last time, and
 * is called by the monitor thread and before a request is refused.
 *
 * All fields are atomics: no lock.
 */
#ifndef VOLATILEFS_MEM_H
#define VOLATILEFS_MEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arena.h"

/* Within this of the limit, a reservation reads the kernel's figure first. */
#define MEM_RECONCILE_BYTES (4u << 20)
/*
 * Metadata charged without a reservation may pass the limit by this
 * much.  A request reserves what it will allocate first (fs_room:
 * purging, under the limit) and pays from that; what it allocates
 * beyond its estimate (a longer name, an allocator's larger block) is
 * charged on the spot, and failing then would refuse a create or an
 * open while volatile data could have been purged for it.  The monitor
 * thread purges what passes the limit.  Data pages get no such slack.
 */
#define MEM_META_SLACK (2u << 20)
/* Metadata freed before mem_trim() calls malloc_trim. */
#define MEM_TRIM_BYTES (1u << 20)

struct mem {
	struct arena *arena;
	_Atomic uint64_t limit;
	_Atomic uint64_t low;
	_Atomic bool low_explicit;     /* memory_low given by the user ... */
	_Atomic uint64_t low_asked;    /* ... and its value, before capping */
	_Atomic uint64_t charged;      /* bytes reserved: pages, promises, metadata */
	_Atomic uint64_t meta;         /* bytes of metadata (part of charged) */
	_Atomic uint64_t meta_freed;   /* metadata bytes freed since the last trim */
	_Atomic int64_t base;          /* kernel RSS - pages - metadata, last reconcile */
	_Atomic uint64_t enospc_total;
	/*
	 * Shared memory (DESIGN section 11): bytes of backing-file pages
	 * charged (part of charged), and what the backing files really
	 * hold, read at each reconciliation: what writers the daemon did
	 * not see added since is added to base.  shared_used NULL: none.
	 */
	_Atomic uint64_t shared;
	uint64_t (*shared_used)(void *ctx);
	void *shared_ctx;
	/*
	 * Reservations (mem_reserve) stop this far (at most limit/32) under the limit: room
	 * kept for what the daemon cannot reserve (on the passthrough path,
	 * stores and loads through mappings of the backing files); 0 on the
	 * classic path.  Set before any thread.
	 */
	uint64_t keep;
	int statm_fd;
};

/*
 * DESIGN section 3's allowance over the limit: max(1% of it, 4 MiB).  The
 * passthrough path sizes its tmpfs with it (fs_shm_recap).
 */
static inline uint64_t mem_allowance(uint64_t limit)
{
	return limit / 100 > (4u << 20) ? limit / 100 : (4u << 20);
}

/* Default memory_limit: half of physical memory. */
uint64_t mem_default_limit(void);

/*
 * limit: bytes (0 = default); low: bytes (0 = 90% of limit, else capped
 * at limit).  Binds a's page frees to this accounting.  Zero or -errno.
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
/* Re-read the kernel's figure and set base from it. */
void mem_reconcile(struct mem *m);
/* base + charged: the figure compared with the limit (cheap). */
uint64_t mem_rss(struct mem *m);

/*
 * Reserve bytes against the limit: zero, or -ENOSPC when base + charged
 * + bytes would pass it (nothing is reserved then).  Reserving 0 bytes
 * always succeeds.
 */
int mem_reserve(struct mem *m, uint64_t bytes);
/*
 * The same for metadata about to be allocated (fs_room, which hands it
 * to the thread as meta.h's credit): against the whole limit, none of
 * it kept back for the passthrough path's mappings.
 */
int mem_reserve_meta(struct mem *m, uint64_t bytes);
/*
 * Add bytes to charged whatever the limit: memory the kernel already
 * gave (a page a passthrough writer allocated in a backing file,
 * shmfile.h), which the purge must now see.
 */
void mem_charge(struct mem *m, uint64_t bytes);
/* Give back bytes reserved and not used (or metadata freed). */
void mem_unreserve(struct mem *m, uint64_t bytes);
/* Would bytes fit now?  A check, not a reservation. */
bool mem_fits(struct mem *m, uint64_t bytes);

/* Metadata: meta.c charges and uncharges through these (a reservation of its own). */
int mem_meta_charge(struct mem *m, uint64_t bytes);
void mem_meta_uncharge(struct mem *m, uint64_t bytes);

/*
 * Tune glibc's malloc for memory that comes back, once, before any
 * thread starts: fixed trim and mmap thresholds of MEM_MALLOC_TRIM bytes.
 * By default both grow on their own (up to 32 MiB and twice that) once a
 * large block was freed, and a worker thread's arena then keeps its free
 * top resident: malloc_trim gives back the free chunks inside an arena,
 * but only the main arena's top.  Measured: 8 MiB left after a flood of
 * marks was deleted, on a loaded machine.
 *
 * And no fastbins (M_MXFAST 0).  A worker thread's arena gives its top
 * back only when a free merges at least 64 KiB into it (glibc's
 * heap_trim); a small block freed into a fastbin is not merged at all
 * until malloc_consolidate, which malloc_trim itself calls: it then
 * merges a deleted flood's units (112-byte chunks) into the top of their
 * arena, and nothing trims that top again.  Measured: 2 of 12 sparse
 * floods left one arena's top of 6-13 MiB resident (malloc_info: the
 * heap's free top = its resident figure, 10 KiB in use).  Without
 * fastbins a free merges at once and trims the top past MEM_MALLOC_TRIM;
 * the thread caches (tcache) still serve small blocks without a lock.
 */
#define MEM_MALLOC_TRIM (128u << 10)
void mem_tune_malloc(void);

/*
 * Give free heap memory back to the kernel (malloc_trim) if force, or if
 * at least MEM_TRIM_BYTES of metadata were freed since the last time;
 * then reconcile.  True when it trimmed.
 */
bool mem_trim(struct mem *m, bool force);

#endif
