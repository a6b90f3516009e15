/*
 * mem.c - RSS accounting; see mem.h.
 */
#include "mem.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
	uint64_t pages = arena_pages(m->arena);
	uint64_t rss = mem_rss_kernel(m);

	if (!rss)
		return;
	atomic_store(&m->overhead, (int64_t)rss - (int64_t)(pages * ARENA_PAGE_SIZE));
	atomic_store(&m->pages_at_reconcile, pages);
}

uint64_t mem_rss(struct mem *m)
{
	int64_t est = (int64_t)(arena_pages(m->arena) * ARENA_PAGE_SIZE) +
		      atomic_load_explicit(&m->overhead, memory_order_relaxed);

	return est > 0 ? (uint64_t)est : 0;
}

int mem_charge(struct mem *m, uint64_t npages)
{
	if (npages == 0)
		return 0; /* needing no memory never fails */
	return mem_charge_check(m, npages);
}

int mem_charge_check(struct mem *m, uint64_t npages)
{
	uint64_t limit = atomic_load_explicit(&m->limit, memory_order_relaxed);
	uint64_t need = npages * ARENA_PAGE_SIZE;
	uint64_t pages = arena_pages(m->arena);
	uint64_t last = atomic_load_explicit(&m->pages_at_reconcile, memory_order_relaxed);
	uint64_t rss = mem_rss(m);

	if ((pages > last && (pages - last) * ARENA_PAGE_SIZE >= MEM_RECONCILE_BYTES) ||
	    rss + need + MEM_RECONCILE_BYTES > limit) {
		mem_reconcile(m);
		rss = mem_rss(m);
	}
	if (rss + need > limit)
		return -ENOSPC;
	return 0;
}
