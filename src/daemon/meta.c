/*
 * meta.c - charged metadata allocations; see meta.h.
 */
#include "meta.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "mem.h"

static struct mem *_Atomic bound;
static _Atomic uint64_t held;
static _Thread_local uint64_t credit;
static _Thread_local bool unlimited;

bool meta_unlimited(bool on)
{
	bool was = unlimited;

	unlimited = on;
	return was;
}

void meta_bind(struct mem *m)
{
	atomic_store(&bound, m);
}

uint64_t meta_bytes(void)
{
	return atomic_load(&held);
}

void meta_credit_begin(uint64_t bytes)
{
	credit = bytes;
}

uint64_t meta_credit_end(void)
{
	uint64_t left = credit;

	credit = 0;
	return left;
}

/* What malloc spends on a block of size bytes: glibc's chunk, header included. */
size_t meta_cost(size_t size)
{
	size_t chunk = (size + sizeof(size_t) + 15) & ~(size_t)15;

	return chunk < 32 ? 32 : chunk;
}

/* What a block that exists costs. */
static size_t cost(void *p)
{
	return malloc_usable_size(p) + sizeof(size_t);
}

static int charge(size_t bytes)
{
	struct mem *m = atomic_load(&bound);

	if (m && credit >= bytes) {
		/* Reserved already: it only becomes metadata now. */
		credit -= bytes;
		atomic_fetch_add(&m->meta, bytes);
	} else if (m && unlimited) {
		atomic_fetch_add(&m->charged, bytes);
		atomic_fetch_add(&m->meta, bytes);
	} else if (m && mem_meta_charge(m, bytes) < 0)
		return -ENOMEM;
	atomic_fetch_add(&held, bytes);
	return 0;
}

static void uncharge(size_t bytes)
{
	struct mem *m = atomic_load(&bound);

	if (m)
		mem_meta_uncharge(m, bytes);
	atomic_fetch_sub(&held, bytes);
}

static void *alloc(size_t size, bool zero)
{
	size_t est = meta_cost(size), real;
	void *p;

	if (size > SIZE_MAX / 2 || FAULT("volatilefs/meta") || charge(est) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	p = zero ? calloc(1, size) : malloc(size);
	if (!p) {
		uncharge(est);
		errno = ENOMEM;
		return NULL;
	}
	/* The estimate is glibc's rule; another allocator (a sanitizer's)
	 * spends differently: count what it really did.  A few bytes may
	 * go past the reservation here; never more than one block's slack. */
	real = cost(p);
	if (real > est) {
		struct mem *m = atomic_load(&bound);

		atomic_fetch_add(&held, real - est);
		if (m) {
			atomic_fetch_add(&m->meta, real - est);
			atomic_fetch_add(&m->charged, real - est);
		}
	} else if (real < est) {
		uncharge(est - real);
	}
	return p;
}

void *meta_alloc(size_t size)
{
	return alloc(size, false);
}

void *meta_calloc(size_t size)
{
	return alloc(size, true);
}

char *meta_strdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = meta_alloc(len);

	if (p)
		memcpy(p, s, len);
	return p;
}

void meta_free(void *p)
{
	if (!p)
		return;
	uncharge(cost(p));
	free(p);
}
