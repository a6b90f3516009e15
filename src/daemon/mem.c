/*
 * mem.c - memory accounting; see mem.h.
 */
#include "mem.h"
#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t mem_default_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long psz = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || psz <= 0)
		return 1ull << 30;
	return (uint64_t)pages * (uint64_t)psz / 2;
}

static uint64_t default_low(uint64_t limit)
{
	return limit / 10 * 9 + limit % 10 * 9 / 10;
}

int mem_init(struct mem *m, struct arena *a, uint64_t limit, uint64_t low)
{
	memset(m, 0, sizeof(*m));
	m->arena = a;
	m->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (m->statm_fd < 0)
		return -errno;
	if (!limit)
		limit = mem_default_limit();
	atomic_store(&m->limit, limit);
	atomic_store(&m->low_explicit, low != 0);
	atomic_store(&m->low_asked, low);
	atomic_store(&m->low, low ? (low < limit ? low : limit) : default_low(limit));
	/* Pages handed out before now (none, in the daemon) are charged too. */
	atomic_store(&m->charged, arena_pages(a) * ARENA_PAGE_SIZE);
	a->charged = &m->charged;
	mem_reconcile(m);
	return 0;
}

int mem_reopen(struct mem *m)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (m->statm_fd >= 0)
		close(m->statm_fd);
	m->statm_fd = fd;
	mem_reconcile(m);
	return 0;
}

void mem_destroy(struct mem *m)
{
	if (m->arena && m->arena->charged == &m->charged)
		m->arena->charged = NULL;
	if (m->statm_fd >= 0)
		close(m->statm_fd);
	m->statm_fd = -1;
}

void mem_set_limit(struct mem *m, uint64_t limit)
{
	uint64_t low = default_low(limit);

	atomic_store(&m->limit, limit);
	/* An explicit memory_low is capped at the limit, and comes back
	 * when the limit rises again. */
	if (atomic_load(&m->low_explicit)) {
		low = atomic_load(&m->low_asked);
		if (low > limit)
			low = limit;
	}
	atomic_store(&m->low, low);
}

uint64_t mem_rss_kernel(struct mem *m)
{
	char buf[128];
	unsigned long long size, resident;
	ssize_t n;

	n = pread(m->statm_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

void mem_reconcile(struct mem *m)
{
	uint64_t rss = mem_rss_kernel(m);
	uint64_t held = arena_pages(m->arena) * ARENA_PAGE_SIZE + atomic_load(&m->meta);

	if (!rss)
		return;
	/* Shared memory is not in our RSS: what the backing files hold
	 * beyond the pages charged for them counts as base. */
	if (m->shared_used) {
		uint64_t real = m->shared_used(m->shared_ctx), known = atomic_load(&m->shared);

		if (real > known)
			rss += real - known;
	}
	atomic_store(&m->base, rss > held ? (int64_t)(rss - held) : 0);
}

uint64_t mem_rss(struct mem *m)
{
	return (uint64_t)atomic_load_explicit(&m->base, memory_order_relaxed) +
	       atomic_load_explicit(&m->charged, memory_order_relaxed);
}

/* Would base + cur + bytes + slack pass limit? */
static bool over(uint64_t limit, uint64_t base, uint64_t cur, uint64_t bytes, uint64_t slack)
{
	return base > limit || bytes > limit - base || slack > limit - base - bytes ||
	       cur > limit - base - bytes - slack;
}

/*
 * base, or near limit the kernel's figure read again: base may have grown
 * since the last reading (new threads, buffers, and metadata itself:
 * allocator headers, a sanitizer's redzones and shadow; a flood of small
 * metadata charges on a 100 ms old base went 1.3 MiB past the slack
 * under ASan).
 */
static uint64_t fresh_base(struct mem *m, uint64_t limit, uint64_t base, uint64_t cur,
			   uint64_t bytes)
{
	if (!over(limit, base, cur, bytes, MEM_RECONCILE_BYTES))
		return base;
	mem_reconcile(m);
	return (uint64_t)atomic_load(&m->base);
}

/* Add bytes to charged unless base + charged + bytes would pass limit. */
static int charge_under(struct mem *m, uint64_t limit, uint64_t base, uint64_t bytes)
{
	uint64_t cur = atomic_load(&m->charged);

	do {
		if (over(limit, base, cur, bytes, 0))
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak(&m->charged, &cur, cur + bytes));
	return 0;
}

void mem_charge(struct mem *m, uint64_t bytes)
{
	atomic_fetch_add(&m->charged, bytes);
}

/* Reserve bytes under limit, on base read again if near it. */
static int reserve_under(struct mem *m, uint64_t limit, uint64_t bytes)
{
	uint64_t base = (uint64_t)atomic_load_explicit(&m->base, memory_order_relaxed);

	if (FAULT("volatilefs/reserve"))
		return -ENOSPC;
	base = fresh_base(m, limit, base, atomic_load(&m->charged), bytes);
	return charge_under(m, limit, base, bytes);
}

int mem_reserve(struct mem *m, uint64_t bytes)
{
	uint64_t limit = atomic_load_explicit(&m->limit, memory_order_relaxed);

	/* At most 1/32 of the limit: a tiny mount keeps its room for data. */
	limit -= m->keep < limit / 32 ? m->keep : limit / 32;
	if (bytes == 0)
		return 0;
	return reserve_under(m, limit, bytes);
}

int mem_reserve_meta(struct mem *m, uint64_t bytes)
{
	if (bytes == 0)
		return 0;
	return reserve_under(m, atomic_load_explicit(&m->limit, memory_order_relaxed), bytes);
}

void mem_unreserve(struct mem *m, uint64_t bytes)
{
	if (bytes)
		atomic_fetch_sub(&m->charged, bytes);
}

bool mem_fits(struct mem *m, uint64_t bytes)
{
	uint64_t limit = atomic_load_explicit(&m->limit, memory_order_relaxed);
	uint64_t rss = mem_rss(m);

	return rss <= limit && bytes <= limit - rss;
}

int mem_meta_charge(struct mem *m, uint64_t bytes)
{
	uint64_t limit = atomic_load_explicit(&m->limit, memory_order_relaxed) + MEM_META_SLACK;

	if (reserve_under(m, limit, bytes) < 0)
		return -ENOSPC;
	atomic_fetch_add(&m->meta, bytes);
	return 0;
}

void mem_meta_uncharge(struct mem *m, uint64_t bytes)
{
	atomic_fetch_sub(&m->meta, bytes);
	atomic_fetch_add(&m->meta_freed, bytes);
	mem_unreserve(m, bytes);
}

void mem_tune_malloc(void)
{
	/* Failing leaves glibc's defaults: slower to give back, not wrong. */
	mallopt(M_TRIM_THRESHOLD, MEM_MALLOC_TRIM);
	mallopt(M_MMAP_THRESHOLD, MEM_MALLOC_TRIM);
	mallopt(M_MXFAST, 0);
}

bool mem_trim(struct mem *m, bool force)
{
	bool trim = force || atomic_load(&m->meta_freed) >= MEM_TRIM_BYTES;

	if (trim) {
		atomic_store(&m->meta_freed, 0);
		malloc_trim(0);
	}
	mem_reconcile(m);
	return trim;
}
