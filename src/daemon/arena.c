/*
 * arena.c - page arena; see arena.h for the design.
 */
#include "arena.h"
#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
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

/*
 * Zeros to copy from: a read-only anonymous mapping, which costs no
 * memory (every page of it is the kernel's zero page).  Set up once per
 * program, never unmapped.
 */
#define ZERO_SRC_BYTES (1u << 20)
static const char *zero_src;
static pthread_once_t zero_src_once = PTHREAD_ONCE_INIT;

static void zero_src_map(void)
{
	void *p = mmap(NULL, ZERO_SRC_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	zero_src = p == MAP_FAILED ? NULL : p;
}

int arena_init(struct arena *a)
{
	memset(a, 0, sizeof(*a));
	atomic_init(&a->in_use, 0);
	atomic_init(&a->stray_faults, 0);
	atomic_init(&a->uffd, -1);
	atomic_init(&a->uffd_pid, 0);
	a->uffd_stop = -1;
	a->pidfd = -1;
	return -pthread_mutex_init(&a->lock, NULL);
}

/* Stops this process's fault thread and closes the userfaultfd (one
 * inherited from a parent is only closed).  Caller holds a->lock or is
 * the only user. */
static void uffd_close_locked(struct arena *a)
{
	int fd = atomic_exchange(&a->uffd, -1);

	if (fd < 0)
		return;
	if (atomic_load(&a->uffd_pid) == getpid()) {
		uint64_t one = 1;

		if (write(a->uffd_stop, &one, sizeof(one)) == (ssize_t)sizeof(one))
			pthread_join(a->uffd_thread, NULL);
	}
	close(a->uffd_stop);
	a->uffd_stop = -1;
	close(fd);
}

void arena_destroy(struct arena *a)
{
	uffd_close_locked(a);
	for (size_t i = 0; i < a->nchunks; i++)
		munmap(a->chunks[i], ARENA_CHUNK_BYTES);
	free(a->chunks);
	free(a->free_pages);
	if (a->pidfd >= 0)
		close(a->pidfd);
	pthread_mutex_destroy(&a->lock);
	memset(a, 0, sizeof(*a));
}

/*
 * The fault thread.  Every page handed out is filled before use, so a
 * fault here means code touched a page that is not handed out; it gets
 * a zero page, as it would without a userfaultfd, and is counted.
 */
static void *uffd_fault_thread(void *arg)
{
	struct arena *a = arg;
	int fd = atomic_load(&a->uffd);
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = a->uffd_stop, .events = POLLIN } };

	for (;;) {
		struct uffd_msg msg;
		struct uffdio_zeropage z;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (read(fd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		z = (struct uffdio_zeropage){
			.range = { .start = msg.arg.pagefault.address & ~(uint64_t)(ARENA_PAGE_SIZE - 1),
				   .len = ARENA_PAGE_SIZE },
		};
		/* Counted first: mapping the page wakes the faulting thread,
		 * which may look at the count at once. */
		atomic_fetch_add_explicit(&a->stray_faults, 1, memory_order_relaxed);
		while (ioctl(fd, UFFDIO_ZEROPAGE, &z) < 0 && errno == EAGAIN && z.zeropage <= 0)
			z.zeropage = 0; /* the address space was changing: again */
		if (z.zeropage != ARENA_PAGE_SIZE) {
			/* Answered already (a fault raised twice, or a fill got
			 * there first), or refused: wake the thread, which faults
			 * again if the page is still missing. */
			atomic_fetch_sub_explicit(&a->stray_faults, 1, memory_order_relaxed);
			ioctl(fd, UFFDIO_WAKE, &z.range);
		}
	}
	return NULL;
}

static int uffd_register(int fd, char *chunk)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)chunk, .len = ARENA_CHUNK_BYTES },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(fd, UFFDIO_REGISTER, &reg);
}

/*
 * A userfaultfd for this process, with every chunk registered and the
 * fault thread running; on any failure none, and pages are faulted in.
 * Root gets one that also answers the kernel's own accesses; others one
 * for user-mode faults only.  Caller holds a->lock.
 */
static void uffd_setup_locked(struct arena *a)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd;

	if (atomic_load(&a->uffd) >= 0 && atomic_load(&a->uffd_pid) == getpid())
		return;
	uffd_close_locked(a); /* a parent's, after a fork */
	if (a->uffd_refused)
		return;
	pthread_once(&zero_src_once, zero_src_map);
	fd = -1;
	if (!UNDER_VALGRIND() && zero_src) {
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 && errno == EPERM)
			fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	}
	if (fd < 0 || ioctl(fd, UFFDIO_API, &api) < 0)
		goto refused;
	for (size_t i = 0; i < a->nchunks; i++)
		if (uffd_register(fd, a->chunks[i]) < 0)
			goto refused;
	a->uffd_stop = eventfd(0, EFD_CLOEXEC);
	if (a->uffd_stop < 0)
		goto refused;
	atomic_store(&a->uffd, fd);
	atomic_store(&a->uffd_pid, getpid());
	if (pthread_create(&a->uffd_thread, NULL, uffd_fault_thread, a) != 0) {
		atomic_store(&a->uffd, -1);
		goto refused;
	}
	return;
refused:
	/* Closing it unregisters every range it had. */
	if (fd >= 0)
		close(fd);
	if (a->uffd_stop >= 0)
		close(a->uffd_stop);
	a->uffd_stop = -1;
	a->uffd_refused = true;
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
	/* A chunk the userfaultfd would not take is filled by faulting
	 * (arena_fill falls back when UFFDIO_COPY refuses). */
	if (atomic_load(&a->uffd) >= 0 && atomic_load(&a->uffd_pid) == getpid())
		uffd_register(atomic_load(&a->uffd), c);
	else
		uffd_setup_locked(a);
	return 0;
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

/* How many of the sorted pages[i..n) are contiguous from pages[i]. */
static size_t run_at(void *const *pages, size_t i, size_t n)
{
	size_t run = 1;

	while (i + run < n && (char *)pages[i + run] == (char *)pages[i] + run * ARENA_PAGE_SIZE)
		run++;
	return run;
}

static void release_pages(struct arena *a, void **pages, size_t n, bool uncharge);

size_t arena_take_many(struct arena *a, void **pages, size_t n)
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
	return got;
}

/*
 * Without a userfaultfd: fault [dst, dst + len) in (one
 * MADV_POPULATE_WRITE, or a write per page before Linux 5.14; a freed
 * page reads as zeros) and copy src over it.
 */
static int fill_by_fault(char *dst, const char *src, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(dst, len, MADV_POPULATE_WRITE) != 0)
#endif
		for (size_t j = 0; j < len; j += ARENA_PAGE_SIZE)
			*(volatile char *)(dst + j) = 0;
	if (src)
		memcpy(dst, src, len);
	return 0;
}

int arena_fill(struct arena *a, void *dst, const void *src, size_t len)
{
	int fd = atomic_load_explicit(&a->uffd, memory_order_acquire);
	char *d = dst;
	const char *s = src;

	if (FAULT("volatilefs/arena_fill"))
		return -ENOMEM;
	if (fd < 0 || atomic_load(&a->uffd_pid) != getpid())
		return fill_by_fault(d, s, len);
	while (len) {
		size_t step = s || len <= ZERO_SRC_BYTES ? len : ZERO_SRC_BYTES;
		struct uffdio_copy c = {
			.dst = (uintptr_t)d,
			.src = (uintptr_t)(s ? s : zero_src),
			.len = step,
		};
		int err = 0;

		if (ioctl(fd, UFFDIO_COPY, &c) < 0)
			err = errno;
		else
			c.copy = (int64_t)step;
		if (c.copy > 0) { /* a part, or all of it */
			d += c.copy;
			s = s ? s + c.copy : NULL;
			len -= (size_t)c.copy;
			continue;
		}
		if (err == EAGAIN)
			continue; /* the address space was changing: again */
		if (err == ENOMEM)
			return -ENOMEM;
		/* EEXIST: this page is resident already (a stray fault gave it
		 * zeros, or a madvise that failed left it); anything else: a
		 * chunk not registered.  Either way, by hand, a page. */
		fill_by_fault(d, s, ARENA_PAGE_SIZE);
		if (!s)
			memset(d, 0, ARENA_PAGE_SIZE);
		d += ARENA_PAGE_SIZE;
		s = s ? s + ARENA_PAGE_SIZE : NULL;
		len -= ARENA_PAGE_SIZE;
	}
	return 0;
}

size_t arena_alloc_many(struct arena *a, void **pages, size_t n)
{
	size_t got = arena_take_many(a, pages, n), i, run;

	for (i = 0; i < got; i += run) {
		char *start = pages[i];

		run = run_at(pages, i, got);
		if (arena_fill(a, start, NULL, run * ARENA_PAGE_SIZE) < 0) {
			/* Never counted as taken by the caller: not uncharged. */
			release_pages(a, pages + i, got - i, false);
			return i;
		}
	}
	return got;
}

void *arena_alloc(struct arena *a)
{
	void *p;

	return arena_alloc_many(a, &p, 1) == 1 ? p : NULL;
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

/* Frees n pages; their bytes go back to a->charged when uncharge is set. */
static void release_pages(struct arena *a, void **pages, size_t n, bool uncharge)
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

		run = run_at(pages, i, n);
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
	if (a->charged && uncharge)
		atomic_fetch_sub(a->charged, (uint64_t)n * ARENA_PAGE_SIZE);
}

void arena_free_batch(struct arena *a, void **pages, size_t n)
{
	release_pages(a, pages, n, true);
}
