/*
 * arena.c - page arena; see arena.h for the design.
 */
#include "arena.h"
#include "fault.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Under valgrind, which knows neither pidfd_open nor process_madvise and
 * says so on stderr, free page runs one madvise at a time. */
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() RUNNING_ON_VALGRIND
#else
#define UNDER_VALGRIND() 0
#endif

int arena_init(struct arena *a)
{
	memset(a, 0, sizeof(*a));
	atomic_init(&a->in_use, 0);
	a->pidfd = -1;
	return -pthread_mutex_init(&a->lock, NULL);
}

void arena_destroy(struct arena *a)
{
	for (size_t i = 0; i < a->nchunks; i++)
		munmap(a->chunks[i], ARENA_CHUNK_BYTES);
	free(a->chunks);
	free(a->free_pages);
	if (a->pidfd >= 0)
		close(a->pidfd);
	pthread_mutex_destroy(&a->lock);
	memset(a, 0, sizeof(*a));
}

/* Caller holds a->lock. */
static int arena_grow_locked(struct arena *a)
{
	char *c;

	if (a->nchunks == a->chunks_cap) {
		size_t cap = a->chunks_cap ? a->chunks_cap * 2 : 16;
		char **n = realloc(a->chunks, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->chunks = n;
		a->chunks_cap = cap;
	}
	if (FAULT("volatilefs/arena"))
		return -ENOMEM;
	c = mmap(NULL, ARENA_CHUNK_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c == MAP_FAILED)
		return -errno;
	/* Advice only: a kernel without THP refuses it, and that is fine. */
	madvise(c, ARENA_CHUNK_BYTES, MADV_NOHUGEPAGE);
	a->chunks[a->nchunks++] = c;
	a->bump = c;
	a->bump_end = c + ARENA_CHUNK_BYTES;
	return 0;
}

void *arena_alloc(struct arena *a)
{
	void *p = NULL;

	pthread_mutex_lock(&a->lock);
	if (a->nfree) {
		p = a->free_pages[--a->nfree];
	} else {
		if (a->bump == a->bump_end && arena_grow_locked(a) < 0)
			goto out_unlock;
		p = a->bump;
		a->bump += ARENA_PAGE_SIZE;
	}
	atomic_fetch_add_explicit(&a->in_use, 1, memory_order_relaxed);
out_unlock:
	pthread_mutex_unlock(&a->lock);
	return p;
}

/*
 * Room on the free stack for n more pages.  Pages always fit in the end:
 * the stack can never hold more pages than were carved, and we size it
 * ahead; if growing fails we keep the page out of circulation (still
 * released to the kernel) rather than lose track of the count.
 */
static int arena_reserve_free_locked(struct arena *a, size_t n)
{
	size_t cap;
	void **p;

	if (a->nfree + n <= a->free_cap)
		return 0;
	cap = a->free_cap ? a->free_cap : 1024;
	while (cap < a->nfree + n)
		cap *= 2;
	p = realloc(a->free_pages, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	a->free_pages = p;
	a->free_cap = cap;
	return 0;
}

static int cmp_ptr(const void *x, const void *y);

/*
 * Make pages[0..n) resident, sorted: one MADV_POPULATE_WRITE per
 * contiguous run (the kernel faults the run in without a trap per page),
 * or a write to each page where the kernel cannot (before Linux 5.14).
 */
static void arena_populate(void **pages, size_t n)
{
	size_t i, run;

	for (i = 0; i < n; i += run) {
		char *start = pages[i];

		for (run = 1; i + run < n &&
		     (char *)pages[i + run] == start + run * ARENA_PAGE_SIZE; run++)
			;
#ifdef MADV_POPULATE_WRITE
		if (madvise(start, run * ARENA_PAGE_SIZE, MADV_POPULATE_WRITE) == 0)
			continue;
#endif
		for (size_t j = 0; j < run; j++)
			*(volatile char *)(start + j * ARENA_PAGE_SIZE) = 0;
	}
}

size_t arena_alloc_many(struct arena *a, void **pages, size_t n)
{
	size_t got = 0;

	pthread_mutex_lock(&a->lock);
	while (got < n && a->nfree)
		pages[got++] = a->free_pages[--a->nfree];
	while (got < n) {
		if (a->bump == a->bump_end && arena_grow_locked(a) < 0)
			break;
		pages[got++] = a->bump;
		a->bump += ARENA_PAGE_SIZE;
	}
	atomic_fetch_add_explicit(&a->in_use, got, memory_order_relaxed);
	pthread_mutex_unlock(&a->lock);
	if (got > 1)
		qsort(pages, got, sizeof(*pages), cmp_ptr);
	arena_populate(pages, got);
	return got;
}

void arena_free(struct arena *a, void *page)
{
	arena_free_batch(a, &page, 1);
}

static int cmp_ptr(const void *x, const void *y)
{
	uintptr_t a = (uintptr_t)*(void *const *)x;
	uintptr_t b = (uintptr_t)*(void *const *)y;

	return (a > b) - (a < b);
}

/* This process's pidfd for process_madvise, or -1 (then one madvise per run). */
static int advice_pidfd(struct arena *a)
{
	int fd;

	pthread_mutex_lock(&a->lock);
	if (!a->no_batch_advice && UNDER_VALGRIND())
		a->no_batch_advice = true;
	if (!a->no_batch_advice && (a->pidfd < 0 || a->pidfd_pid != getpid())) {
		/* Opened before a fork, it names the parent: never use it. */
		if (a->pidfd >= 0)
			close(a->pidfd);
		a->pidfd_pid = getpid();
		a->pidfd = (int)syscall(SYS_pidfd_open, a->pidfd_pid, 0);
		if (a->pidfd < 0)
			a->no_batch_advice = true;
	}
	fd = a->no_batch_advice ? -1 : a->pidfd;
	pthread_mutex_unlock(&a->lock);
	return fd;
}

/*
 * Give runs iov[0..n) back to the kernel.  A freed page must read as
 * zeros when it is handed out again: a run the kernel would not take
 * back is cleared by hand.
 */
static void advise_dontneed(struct arena *a, struct iovec *iov, size_t n)
{
	size_t done = 0;
	int fd = n > 1 ? advice_pidfd(a) : -1;

	if (fd >= 0) {
		/* One call and one TLB flush for the lot: page by page, each
		 * madvise interrupts every CPU running one of our threads. */
		ssize_t got = syscall(SYS_process_madvise, fd, iov, n, MADV_DONTNEED, 0);

		if (got < 0 && (errno == EINVAL || errno == ENOSYS || errno == EPERM ||
				errno == ESRCH || errno == EBADF)) {
			pthread_mutex_lock(&a->lock);
			a->no_batch_advice = true; /* an older kernel: per run from now on */
			pthread_mutex_unlock(&a->lock);
		}
		/* What it did is whole runs from the start; the rest by hand. */
		for (size_t left = got > 0 ? (size_t)got : 0; done < n && left >= iov[done].iov_len;
		     done++)
			left -= iov[done].iov_len;
	}
	for (; done < n; done++)
		if (madvise(iov[done].iov_base, iov[done].iov_len, MADV_DONTNEED) != 0)
			memset(iov[done].iov_base, 0, iov[done].iov_len);
}

void arena_free_batch(struct arena *a, void **pages, size_t n)
{
	struct iovec iov[64];
	size_t i, run, niov = 0;

	if (!n)
		return;
	if (n > 1)
		qsort(pages, n, sizeof(*pages), cmp_ptr);
	/* Give the memory back outside the lock: madvise can be slow. */
	for (i = 0; i < n; i += run) {
		char *start = pages[i];

		for (run = 1; i + run < n &&
		     (char *)pages[i + run] == start + run * ARENA_PAGE_SIZE; run++)
			;
		iov[niov].iov_base = start;
		iov[niov].iov_len = run * ARENA_PAGE_SIZE;
		if (++niov == sizeof(iov) / sizeof(iov[0])) {
			advise_dontneed(a, iov, niov);
			niov = 0;
		}
	}
	advise_dontneed(a, iov, niov);
	pthread_mutex_lock(&a->lock);
	if (arena_reserve_free_locked(a, n) == 0) {
		memcpy(a->free_pages + a->nfree, pages, n * sizeof(*pages));
		a->nfree += n;
	}
	atomic_fetch_sub_explicit(&a->in_use, n, memory_order_relaxed);
	pthread_mutex_unlock(&a->lock);
	if (a->charged)
		atomic_fetch_sub(a->charged, (uint64_t)n * ARENA_PAGE_SIZE);
}
