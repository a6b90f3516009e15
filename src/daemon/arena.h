/*
 * arena.h - the page arena: where file data lives.
 *
 * The arena hands out 4096-byte pages carved from large anonymous
 * mappings (chunks of ARENA_CHUNK_BYTES, reserved with MAP_NORESERVE so
 * virtual space costs nothing until a page is touched).  Freed pages go
 * on a free stack and are given back to the kernel at once with
 * madvise(MADV_DONTNEED), so the daemon's RSS falls as soon as data is
 * deleted, truncated or purged.  A freed page reads as zeros when it is
 * handed out again.
 *
 * Batches (arena_free_batch) are sorted and coalesced into runs so that
 * freeing a large file costs one madvise per contiguous run, not per page.
 *
 * Filling fresh pages: where the kernel allows it, every chunk is
 * registered with a userfaultfd (missing mode) and a page is made
 * resident by UFFDIO_COPY: the kernel allocates the page and copies the
 * data (or zeros) into it in one step, without clearing it first and
 * without a page fault per page.  On this kind of machine (a guest with
 * shadow paging, where a fault is dear) that fills fresh memory 10x
 * faster than MADV_POPULATE_WRITE + memcpy (bench/fillbench.c).  Where
 * userfaultfd is refused (a seccomp filter, an old kernel, valgrind),
 * pages are faulted in with MADV_POPULATE_WRITE as before.  A thread
 * answers any fault on a page that is not handed out (a bug elsewhere)
 * with UFFDIO_ZEROPAGE, the kernel's shared zero page, as a read fault
 * would be answered without a userfaultfd: such a read reads zeros,
 * costs no memory and never hangs (a write then copies the zero page as
 * usual); arena_stray_faults() counts them.  Non-root daemons open the
 * userfaultfd with UFFD_USER_MODE_ONLY (vm.unprivileged_userfaultfd is
 * 0 on Debian); then a kernel access to such a page fails with EFAULT.
 * The userfaultfd belongs to the process that set it up: after a fork
 * the child sets up its own at its next chunk, and fills by faulting
 * until then.
 *
 * Accounting: arena_pages() is the number of pages handed out and not
 * freed.  Pages are resident when handed out (arena_alloc_many fills
 * them; arena_take_many's caller fills them with arena_fill before the
 * pages are used), so this is the arena's share of RSS.  The arena does not
 * decide whether a page may be had: its caller reserves the memory
 * first (mem_reserve, mem.h) and allocates against that reservation.
 * When a->charged is set, freeing a page gives its 4096 bytes back
 * there, after the memory went back to the kernel, so the reserved
 * figure never falls below what is resident.
 *
 * Transparent huge pages: every chunk is madvise(MADV_NOHUGEPAGE).  A
 * huge page frees nothing until all of its 512 small pages are freed
 * (or the kernel splits it), so a freed 4 KiB page would fall out of
 * VmRSS's reckoning without going back to the system where THP is
 * "always".
 *
 * Locking: one mutex, a leaf lock (nothing else is taken while it is
 * held).  The free stack, the chunk table and the bump pointer are
 * protected by it; the page counter is atomic and may be read lock-free.
 */
#ifndef VOLATILEFS_ARENA_H
#define VOLATILEFS_ARENA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ARENA_PAGE_SIZE 4096u
#define ARENA_PAGE_SHIFT 12
#define ARENA_CHUNK_BYTES (64u << 20)

struct arena {
	pthread_mutex_t lock;
	char **chunks;            /* protected by lock */
	size_t nchunks, chunks_cap; /* protected by lock */
	char *bump;               /* next never-used page of the newest chunk */
	char *bump_end;
	void **free_pages;        /* free stack; protected by lock */
	size_t nfree, free_cap;
	atomic_uint_fast64_t in_use; /* pages handed out */
	_Atomic uint64_t *charged;   /* bytes reserved (mem.h), or NULL; set once */
	/* process_madvise(2) of this process, for freeing a batch of
	 * scattered pages in one call and one TLB flush (MADV_DONTNEED on
	 * oneself: Linux 6.13 and later); opened on first use by the process
	 * that frees (the daemon forks after arena_init).  Under lock. */
	int pidfd;                /* -1: not opened */
	int pidfd_pid;            /* the process it was opened for */
	bool no_batch_advice;     /* the kernel refused it: one madvise per run */
	/* The userfaultfd every chunk is registered with, valid in process
	 * uffd_pid only; -1 when none.  Set and cleared under lock; read
	 * without it by arena_fill (a fill that sees -1 faults pages in,
	 * which the fault thread answers if the chunk is registered). */
	_Atomic int uffd;
	_Atomic int uffd_pid;
	bool uffd_refused;        /* userfaultfd is not to be had: fault */
	int uffd_stop;            /* eventfd that stops the fault thread */
	pthread_t uffd_thread;
	atomic_uint_fast64_t stray_faults; /* faults answered with the zero page */
};

/* Zero on success, -errno on failure. */
int arena_init(struct arena *a);
/* Unmaps everything; pages still handed out become invalid. */
void arena_destroy(struct arena *a);

/* A page, or NULL when the system is out of memory. */
void *arena_alloc(struct arena *a);
/*
 * Up to n pages into pages[], sorted by address and already resident
 * (faulted in a run at a time, cheaper than a fault per page).  Returns
 * how many; fewer than n only when the system is out of memory.
 */
size_t arena_alloc_many(struct arena *a, void **pages, size_t n);
/*
 * Up to n pages into pages[], sorted by address, NOT yet resident: the
 * caller fills every one with arena_fill before anything reads or writes
 * it (or frees it unfilled).  Returns how many.
 */
size_t arena_take_many(struct arena *a, void **pages, size_t n);
/*
 * Make the taken pages [dst, dst + len) resident, holding len bytes of
 * src, or zeros when src is NULL.  dst is page-aligned and len a
 * multiple of the page size.  Zero, or -ENOMEM (the pages are then in an
 * unknown state: free them).
 */
int arena_fill(struct arena *a, void *dst, const void *src, size_t len);
/* Faults on pages not handed out, answered with the zero page, so far. */
static inline uint64_t arena_stray_faults(struct arena *a)
{
	return atomic_load_explicit(&a->stray_faults, memory_order_relaxed);
}
void arena_free(struct arena *a, void *page);
/* Frees n pages; reorders the array. */
void arena_free_batch(struct arena *a, void **pages, size_t n);

static inline uint64_t arena_pages(struct arena *a)
{
	return atomic_load_explicit(&a->in_use, memory_order_relaxed);
}

#endif
