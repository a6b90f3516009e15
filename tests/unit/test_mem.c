/*
 * Unit tests for the memory accounting (src/daemon/mem.c) and the
 * charged metadata allocator (src/daemon/meta.c), without an fs.
 *
 * Most tests freeze the accounting's base: the kernel's figure is made
 * unreadable (statm_fd = -1, so mem_reconcile() leaves base alone) and
 * base is set by hand.  Then base + charged against the limit is exact
 * and every boundary can be tested to the byte.  One test keeps the
 * kernel's figure, to see that a reservation near the limit reads it.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "mem.h"
#include "meta.h"
#include "utest.h"

#define MiB (1ull << 20)

static struct arena arena;
static struct mem m;

/* The frozen figures: base and limit. */
#define BASE  (10 * MiB)
#define LIMIT (BASE + 64 * MiB)

static void setup(void)
{
	ck_assert_int_eq(arena_init(&arena), 0);
	ck_assert_int_eq(mem_init(&m, &arena, LIMIT, 0), 0);
	utest_mem_freeze(&m, BASE);
	ck_assert_uint_eq(atomic_load(&m.charged), 0);
}

static void teardown(void)
{
	meta_bind(NULL);
	mem_destroy(&m);
	arena_destroy(&arena);
}

static uint64_t charged(void)
{
	return atomic_load(&m.charged);
}

/* What meta.h says a live block is charged: usable size plus the header word. */
static uint64_t block_cost(void *p)
{
	return malloc_usable_size(p) + sizeof(size_t);
}

/* ---- reservations ---- */

START_TEST(reserve_up_to_the_limit_exactly)
{
	uint64_t room = LIMIT - BASE;

	ck_assert_uint_eq(mem_rss(&m), BASE);
	ck_assert(mem_fits(&m, room));
	ck_assert(!mem_fits(&m, room + 1));
	/* One byte too many: refused, nothing reserved. */
	ck_assert_int_eq(mem_reserve(&m, room + 1), -ENOSPC);
	ck_assert_uint_eq(charged(), 0);
	/* Exactly the room: taken. */
	ck_assert_int_eq(mem_reserve(&m, room), 0);
	ck_assert_uint_eq(charged(), room);
	ck_assert_uint_eq(mem_rss(&m), LIMIT);
	ck_assert(!mem_fits(&m, 1));
	ck_assert_int_eq(mem_reserve(&m, 1), -ENOSPC);
	ck_assert_uint_eq(charged(), room);
	/* Giving part back makes exactly that much room again. */
	mem_unreserve(&m, 4096);
	ck_assert_uint_eq(charged(), room - 4096);
	ck_assert_int_eq(mem_reserve(&m, 4097), -ENOSPC);
	ck_assert_uint_eq(charged(), room - 4096);
	ck_assert_int_eq(mem_reserve(&m, 4096), 0);
	mem_unreserve(&m, room);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

START_TEST(reserve_is_a_reservation_not_a_check)
{
	/* Two reservations that each fit alone but not together. */
	uint64_t half = (LIMIT - BASE) / 2 + 4096;

	ck_assert_int_eq(mem_reserve(&m, half), 0);
	ck_assert_uint_eq(charged(), half);
	ck_assert_int_eq(mem_reserve(&m, half), -ENOSPC);
	ck_assert_uint_eq(charged(), half);
	ck_assert(!mem_fits(&m, half));
	mem_unreserve(&m, half);
	ck_assert_uint_eq(charged(), 0);
	ck_assert_int_eq(mem_reserve(&m, half), 0);
	mem_unreserve(&m, half);
}
END_TEST

START_TEST(reserve_zero_always_succeeds)
{
	ck_assert_int_eq(mem_reserve(&m, 0), 0);
	ck_assert_uint_eq(charged(), 0);
	/* At the limit ... */
	ck_assert_int_eq(mem_reserve(&m, LIMIT - BASE), 0);
	ck_assert_int_eq(mem_reserve(&m, 0), 0);
	ck_assert_uint_eq(charged(), LIMIT - BASE);
	mem_unreserve(&m, LIMIT - BASE);
	/* ... and past it (base alone over the limit). */
	atomic_store(&m.base, (int64_t)(LIMIT + MiB));
	ck_assert_int_eq(mem_reserve(&m, 0), 0);
	ck_assert_int_eq(mem_reserve(&m, 1), -ENOSPC);
	ck_assert_uint_eq(charged(), 0);
	mem_unreserve(&m, 0);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

START_TEST(reserve_of_huge_sizes_does_not_overflow)
{
	uint64_t held = 3 * MiB;
	const uint64_t room = LIMIT - BASE - held;
	/* Sizes whose sum with base, charged or the limit wraps around. */
	const uint64_t sizes[] = {
		UINT64_MAX,
		UINT64_MAX - 1,
		UINT64_MAX - held + 1,
		UINT64_MAX - held - BASE + 1,
		UINT64_MAX - held - BASE + 4096,
		UINT64_MAX - BASE + 1,
		UINT64_MAX - LIMIT + 1,
		UINT64_MAX - room + 1,
		1ull << 63,
		(1ull << 63) + 1,
		1ull << 62,
		room + MEM_META_SLACK + 1,
		room + 1, /* the only one metadata's slack would take */
	};

	ck_assert_int_eq(mem_reserve(&m, held), 0);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_msg(mem_reserve(&m, sizes[i]) == -ENOSPC, "size %u (%llu) was reserved", i,
			      (unsigned long long)sizes[i]);
		ck_assert_uint_eq(charged(), held);
		ck_assert(!mem_fits(&m, sizes[i]));
		/* Metadata's charge has its own arithmetic (limit + slack). */
		if (sizes[i] <= room + MEM_META_SLACK)
			continue;
		ck_assert_msg(mem_meta_charge(&m, sizes[i]) == -ENOSPC,
			      "metadata of size %u (%llu) was charged", i,
			      (unsigned long long)sizes[i]);
		ck_assert_uint_eq(charged(), held);
		ck_assert_uint_eq(atomic_load(&m.meta), 0);
	}
	/* And with a limit near the top of the range. */
	mem_set_limit(&m, UINT64_MAX - 4096);
	ck_assert_int_eq(mem_reserve(&m, UINT64_MAX - held - BASE), -ENOSPC);
	ck_assert_int_eq(mem_reserve(&m, UINT64_MAX), -ENOSPC);
	ck_assert_uint_eq(charged(), held);
	ck_assert_int_eq(mem_meta_charge(&m, UINT64_MAX - held - BASE), -ENOSPC);
	ck_assert_uint_eq(charged(), held);
	mem_unreserve(&m, held);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

/* The kernel's figure, with the limit set just above what this process holds. */
START_TEST(reserve_against_the_kernels_figure)
{
	struct mem k;
	uint64_t c0, rss;

	ck_assert_int_eq(mem_init(&k, &arena, 1ull << 40, 0), 0);
	mem_reconcile(&k);
	rss = mem_rss(&k);
	ck_assert_uint_gt(rss, 0);
	c0 = atomic_load(&k.charged);
	mem_set_limit(&k, rss + 2 * MiB);
	ck_assert_int_eq(mem_reserve(&k, 8 * MiB), -ENOSPC);
	ck_assert_uint_eq(atomic_load(&k.charged), c0);
	ck_assert_int_eq(mem_reserve(&k, 64 * 1024), 0);
	ck_assert_uint_eq(atomic_load(&k.charged), c0 + 64 * 1024);
	mem_unreserve(&k, 64 * 1024);
	ck_assert_uint_eq(atomic_load(&k.charged), c0);
	/*
	 * A stale base (here: zero, as if nothing but our charges were
	 * resident) must not let a reservation near the limit through: within
	 * MEM_RECONCILE_BYTES of it, the kernel's figure is read first.
	 */
	mem_reconcile(&k);
	rss = (uint64_t)atomic_load(&k.base);
	ck_assert_uint_gt(rss, MiB);
	mem_set_limit(&k, rss + MiB);
	atomic_store(&k.base, 0);
	ck_assert_int_eq(mem_reserve(&k, rss + MiB / 2), -ENOSPC);
	ck_assert_uint_eq(atomic_load(&k.charged), c0);
	ck_assert_uint_gt((uint64_t)atomic_load(&k.base), MiB / 2);
	mem_destroy(&k);
	/* k took over the arena's page frees; give them back to m. */
	arena.charged = &m.charged;
}
END_TEST

/*
 * The same for metadata: a flood of small charges near the limit must
 * not run on a stale base (the monitor reads it only every 100 ms, and
 * it grows with the metadata: allocator headers, a sanitizer's
 * redzones).  Charged past the limit + slack it must fail.
 */
START_TEST(meta_charge_against_the_kernels_figure)
{
	struct mem k;
	uint64_t c0, base;

	ck_assert_int_eq(mem_init(&k, &arena, 1ull << 40, 0), 0);
	mem_reconcile(&k);
	base = (uint64_t)atomic_load(&k.base);
	ck_assert_uint_gt(base, MiB);
	c0 = atomic_load(&k.charged);
	mem_set_limit(&k, base + c0 + MiB);
	/* 1 MiB stale: as much as a flood's metadata grew base between two
	 * readings under ASan. */
	atomic_store(&k.base, (int64_t)(base - MiB));
	/* Fits against the stale base, not against the real one. */
	ck_assert_int_eq(mem_meta_charge(&k, MEM_META_SLACK + MiB + MiB / 2), -ENOSPC);
	ck_assert_uint_eq(atomic_load(&k.charged), c0);
	ck_assert_uint_gt((uint64_t)atomic_load(&k.base), base - MiB / 2);
	/* What does fit still goes through. */
	ck_assert_int_eq(mem_meta_charge(&k, 4096), 0);
	mem_meta_uncharge(&k, 4096);
	ck_assert_uint_eq(atomic_load(&k.charged), c0);
	mem_destroy(&k);
	arena.charged = &m.charged;
}
END_TEST

/* ---- concurrency ---- */

#define NTHREADS 8
#define ROUNDS   200000

static _Atomic uint64_t violations, successes, refusals;
static _Atomic uint64_t worst; /* the largest charged seen */
static _Atomic bool stop_checker;

static void note_charged(uint64_t c)
{
	uint64_t w = atomic_load(&worst);

	if (c > LIMIT - BASE)
		atomic_fetch_add(&violations, 1);
	while (c > w && !atomic_compare_exchange_weak(&worst, &w, c))
		;
}

static void *reserver(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	uint64_t held[4] = { 0 };

	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned slot = (unsigned)rand_r(&seed) % 4;
		/* 1 byte .. 24 MiB: a few fit together, not all eight. */
		uint64_t size = (uint64_t)rand_r(&seed) % (24 * MiB) + 1;

		if (held[slot]) {
			mem_unreserve(&m, held[slot]);
			held[slot] = 0;
			continue;
		}
		if (mem_reserve(&m, size) == 0) {
			held[slot] = size;
			atomic_fetch_add(&successes, 1);
			/* What was reserved is there, and nothing passed the limit. */
			note_charged(atomic_load(&m.charged));
		} else {
			atomic_fetch_add(&refusals, 1);
		}
	}
	for (unsigned i = 0; i < 4; i++)
		mem_unreserve(&m, held[i]);
	return NULL;
}

static void *checker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_checker))
		note_charged(atomic_load(&m.charged));
	return NULL;
}

START_TEST(concurrent_reservations_never_pass_the_limit)
{
	pthread_t t[NTHREADS], c;
	uint64_t c0;

	/* Something held already, so that the start value is not zero. */
	ck_assert_int_eq(mem_reserve(&m, 5 * MiB), 0);
	c0 = charged();
	ck_assert_int_eq(pthread_create(&c, NULL, checker, NULL), 0);
	for (uintptr_t i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reserver, (void *)i), 0);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&stop_checker, true);
	pthread_join(c, NULL);
	ck_assert_msg(atomic_load(&violations) == 0,
		      "%llu times base + charged was over the limit (worst %llu bytes over)",
		      (unsigned long long)atomic_load(&violations),
		      (unsigned long long)(atomic_load(&worst) - (LIMIT - BASE)));
	ck_assert_uint_le(atomic_load(&worst), LIMIT - BASE);
	/* The test means something only if both outcomes happened often. */
	ck_assert_uint_gt(atomic_load(&successes), 1000);
	ck_assert_uint_gt(atomic_load(&refusals), 1000);
	ck_assert_uint_eq(charged(), c0);
	mem_unreserve(&m, 5 * MiB);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

/* ---- metadata ---- */

START_TEST(meta_counts_what_the_allocator_spends_unbound)
{
	uint64_t start = meta_bytes(), sum = 0;
	enum { N = 500 };
	void *p[N];
	unsigned seed = 42;

	meta_bind(NULL);
	for (unsigned i = 0; i < N; i++) {
		size_t size = (size_t)rand_r(&seed) % 5000 + 1;

		p[i] = meta_alloc(size);
		ck_assert_ptr_nonnull(p[i]);
		memset(p[i], 0xa5, size);
		ck_assert_uint_ge(block_cost(p[i]), size + sizeof(size_t));
		sum += block_cost(p[i]);
		ck_assert_uint_eq(meta_bytes(), start + sum);
	}
	/* Free in a scrambled order. */
	for (unsigned i = 0; i < N; i++) {
		unsigned j = (i * 7u) % N;

		sum -= block_cost(p[j]);
		meta_free(p[j]);
		ck_assert_uint_eq(meta_bytes(), start + sum);
	}
	ck_assert_uint_eq(meta_bytes(), start);
	meta_free(NULL);
	ck_assert_uint_eq(meta_bytes(), start);
	/* meta_cost is what a fresh block of that size is estimated at. */
	for (size_t s = 1; s < 3000; s += 37) {
		void *q = meta_alloc(s);

		ck_assert_uint_ge(meta_cost(s), s + sizeof(size_t));
		ck_assert_uint_le(meta_cost(s), s + sizeof(size_t) + 32);
		ck_assert_uint_eq(meta_bytes(), start + block_cost(q));
		meta_free(q);
	}
	ck_assert_uint_eq(meta_bytes(), start);
}
END_TEST

START_TEST(meta_calloc_and_strdup)
{
	uint64_t start = meta_bytes();
	const char *s = "a name of some length, to be copied";
	unsigned char *z;
	char *d;

	meta_bind(&m);
	z = meta_calloc(4000);
	ck_assert_ptr_nonnull(z);
	for (unsigned i = 0; i < 4000; i++)
		ck_assert_uint_eq(z[i], 0);
	d = meta_strdup(s);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_ne(d, s);
	ck_assert_str_eq(d, s);
	ck_assert_uint_ge(block_cost(d), strlen(s) + 1 + sizeof(size_t));
	ck_assert_uint_eq(meta_bytes(), start + block_cost(z) + block_cost(d));
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(z) + block_cost(d));
	ck_assert_uint_eq(charged(), block_cost(z) + block_cost(d));
	meta_free(z);
	meta_free(d);
	ck_assert_uint_eq(meta_bytes(), start);
	ck_assert_uint_eq(atomic_load(&m.meta), 0);
	ck_assert_uint_eq(charged(), 0);
	/* An empty string is a block too. */
	d = meta_strdup("");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d, "");
	ck_assert_uint_eq(charged(), block_cost(d));
	meta_free(d);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

START_TEST(meta_bound_charges_the_accounting)
{
	uint64_t start = meta_bytes();
	void *p, *q;

	ck_assert_int_eq(mem_reserve(&m, MiB), 0); /* unrelated: must stay */
	meta_bind(&m);
	p = meta_alloc(1000);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(p));
	ck_assert_uint_eq(charged(), MiB + block_cost(p));
	ck_assert_uint_eq(meta_bytes(), start + block_cost(p));
	q = meta_alloc(100000); /* a block of its own (mmap) for some allocators */
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(p) + block_cost(q));
	ck_assert_uint_eq(charged(), MiB + block_cost(p) + block_cost(q));
	meta_free(p);
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(q));
	ck_assert_uint_eq(charged(), MiB + block_cost(q));
	meta_free(q);
	ck_assert_uint_eq(atomic_load(&m.meta), 0);
	ck_assert_uint_eq(charged(), MiB);
	ck_assert_uint_eq(meta_bytes(), start);
	/* Unbound again: counted, not charged. */
	meta_bind(NULL);
	p = meta_alloc(1000);
	ck_assert_uint_eq(meta_bytes(), start + block_cost(p));
	ck_assert_uint_eq(charged(), MiB);
	ck_assert_uint_eq(atomic_load(&m.meta), 0);
	meta_free(p);
	ck_assert_uint_eq(charged(), MiB);
	ck_assert_uint_eq(meta_bytes(), start);
	mem_unreserve(&m, MiB);
}
END_TEST

/* Set the limit so that exactly room bytes of metadata fit (slack included). */
static void meta_room(uint64_t room)
{
	mem_set_limit(&m, BASE + charged() + room - MEM_META_SLACK);
}

START_TEST(meta_alloc_that_does_not_fit_fails_and_charges_nothing)
{
	uint64_t start = meta_bytes(), c, meta;
	size_t size = 200; /* a small block: estimated exactly */
	char long_string[256];
	void *p;

	memset(long_string, 'x', sizeof(long_string) - 1);
	long_string[sizeof(long_string) - 1] = '\0';

	meta_bind(&m);
	ck_assert_int_eq(mem_reserve(&m, 3 * MiB), 0);
	c = charged();
	meta = atomic_load(&m.meta);
	/* Far over: the whole limit. */
	errno = 0;
	ck_assert_ptr_null(meta_alloc(LIMIT));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(meta_calloc(LIMIT));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(meta_alloc(SIZE_MAX));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(meta_alloc(SIZE_MAX - 16));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(charged(), c);
	ck_assert_uint_eq(atomic_load(&m.meta), meta);
	ck_assert_uint_eq(meta_bytes(), start);
	/* One byte short of the block's cost: refused. */
	meta_room(meta_cost(size) - 1);
	errno = 0;
	ck_assert_ptr_null(meta_alloc(size));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(meta_strdup(long_string));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(charged(), c);
	ck_assert_uint_eq(atomic_load(&m.meta), meta);
	ck_assert_uint_eq(meta_bytes(), start);
	/* Plain reservations get no slack: nothing fits for them now. */
	ck_assert_int_eq(mem_reserve(&m, 1), -ENOSPC);
	/* Exactly the room: it fits (metadata may use MEM_META_SLACK past the limit). */
	meta_room(meta_cost(size));
	p = meta_alloc(size);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(charged(), c + block_cost(p));
	ck_assert_uint_gt(mem_rss(&m), atomic_load(&m.limit));
	ck_assert_ptr_null(meta_alloc(1));
	ck_assert_uint_eq(charged(), c + block_cost(p));
	meta_free(p);
	ck_assert_uint_eq(charged(), c);
	ck_assert_uint_eq(meta_bytes(), start);
	mem_unreserve(&m, 3 * MiB);
}
END_TEST

struct thread_alloc {
	size_t size;
	void *p;
	uint64_t cost;
	uint64_t charged_before, charged_after;
};

static void *alloc_thread(void *arg)
{
	struct thread_alloc *ta = arg;

	ta->charged_before = charged();
	ta->p = meta_alloc(ta->size);
	ta->cost = ta->p ? block_cost(ta->p) : 0;
	ta->charged_after = charged();
	return NULL;
}

START_TEST(meta_credit_pays_first_and_returns_the_rest)
{
	uint64_t c0, left, start = meta_bytes();
	const uint64_t credit = 8192;
	void *p, *q;

	meta_bind(&m);
	c0 = charged();
	/* As a page fill does: reserve, then hand it to the thread as credit. */
	ck_assert_int_eq(mem_reserve(&m, credit), 0);
	meta_credit_begin(credit);
	p = meta_alloc(1000);
	ck_assert_ptr_nonnull(p);
	/* Paid from the credit: charged did not move, but it is metadata now. */
	ck_assert_uint_eq(charged(), c0 + credit);
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(p));
	ck_assert_uint_eq(meta_bytes(), start + block_cost(p));
	left = meta_credit_end();
	ck_assert_uint_eq(left, credit - block_cost(p));
	mem_unreserve(&m, left);
	ck_assert_uint_eq(charged(), c0 + block_cost(p));
	/* The credit is gone: the next block is charged anew. */
	q = meta_alloc(1000);
	ck_assert_uint_eq(charged(), c0 + block_cost(p) + block_cost(q));
	ck_assert_uint_eq(meta_credit_end(), 0);
	meta_free(q);
	meta_free(p);
	ck_assert_uint_eq(charged(), c0);
	ck_assert_uint_eq(atomic_load(&m.meta), 0);

	/* A block bigger than the credit: in all, exactly its cost is charged. */
	ck_assert_int_eq(mem_reserve(&m, 64), 0);
	meta_credit_begin(64);
	p = meta_alloc(3000);
	ck_assert_ptr_nonnull(p);
	left = meta_credit_end();
	ck_assert_uint_le(left, 64);
	mem_unreserve(&m, left);
	ck_assert_uint_eq(charged(), c0 + block_cost(p));
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(p));
	meta_free(p);
	ck_assert_uint_eq(charged(), c0);

	/* Nothing allocated: all of it comes back. */
	meta_credit_begin(12345);
	ck_assert_uint_eq(meta_credit_end(), 12345);
	ck_assert_uint_eq(meta_credit_end(), 0);
	ck_assert_uint_eq(charged(), c0);
	ck_assert_uint_eq(meta_bytes(), start);
}
END_TEST

START_TEST(meta_credit_is_the_threads_own)
{
	struct thread_alloc ta = { .size = 1000 };
	pthread_t t;
	uint64_t c0;

	meta_bind(&m);
	ck_assert_int_eq(mem_reserve(&m, 4096), 0);
	c0 = charged();
	meta_credit_begin(4096);
	ck_assert_int_eq(pthread_create(&t, NULL, alloc_thread, &ta), 0);
	pthread_join(t, NULL);
	ck_assert_ptr_nonnull(ta.p);
	/* The other thread paid for its block; our credit is untouched. */
	ck_assert_uint_eq(ta.charged_after - ta.charged_before, ta.cost);
	ck_assert_uint_eq(charged(), c0 + ta.cost);
	ck_assert_uint_eq(meta_credit_end(), 4096);
	mem_unreserve(&m, 4096);
	meta_free(ta.p);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

START_TEST(meta_credit_lets_reserved_metadata_through_at_the_limit)
{
	uint64_t c0;
	void *p;

	meta_bind(&m);
	ck_assert_int_eq(mem_reserve(&m, 4096), 0);
	c0 = charged();
	meta_room(0); /* no room at all, slack included */
	ck_assert_ptr_null(meta_alloc(1000));
	ck_assert_uint_eq(charged(), c0);
	meta_credit_begin(4096);
	p = meta_alloc(1000); /* reserved already: cannot be refused */
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(charged(), c0);
	mem_unreserve(&m, meta_credit_end());
	ck_assert_uint_eq(charged(), block_cost(p));
	meta_free(p);
	ck_assert_uint_eq(charged(), 0);
}
END_TEST

START_TEST(meta_unlimited_passes_the_limit_on_this_thread_only)
{
	struct thread_alloc ta = { .size = 500 };
	uint64_t c0;
	pthread_t t;
	void *p, *q;

	meta_bind(&m);
	ck_assert_int_eq(mem_reserve(&m, MiB), 0);
	c0 = charged();
	meta_room(0);
	errno = 0;
	ck_assert_ptr_null(meta_alloc(500));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert(!meta_unlimited(true));
	p = meta_alloc(500);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(charged(), c0 + block_cost(p)); /* charged, past the limit */
	ck_assert_uint_eq(atomic_load(&m.meta), block_cost(p));
	/* Another thread is still held to the limit. */
	ck_assert_int_eq(pthread_create(&t, NULL, alloc_thread, &ta), 0);
	pthread_join(t, NULL);
	ck_assert_ptr_null(ta.p);
	ck_assert_uint_eq(charged(), c0 + block_cost(p));
	/* Nested use: meta_unlimited returns the previous setting. */
	ck_assert(meta_unlimited(true));
	ck_assert(meta_unlimited(false));
	/* Back to the limit. */
	errno = 0;
	q = meta_alloc(500);
	ck_assert_ptr_null(q);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(charged(), c0 + block_cost(p));
	ck_assert(!meta_unlimited(false));
	meta_free(p);
	ck_assert_uint_eq(charged(), c0);
	ck_assert_uint_eq(atomic_load(&m.meta), 0);
	mem_unreserve(&m, MiB);
}
END_TEST

/* ---- trim ---- */

START_TEST(trim_waits_for_enough_freed_metadata)
{
	enum { N = 3000 };
	void **p = calloc(N, sizeof(*p));
	uint64_t freed = 0;
	unsigned i = 0;

	meta_bind(&m);
	ck_assert(!mem_trim(&m, false));
	for (unsigned j = 0; j < N; j++) {
		p[j] = meta_alloc(1000);
		ck_assert_ptr_nonnull(p[j]);
	}
	/* Allocating frees nothing: still no trim. */
	ck_assert(!mem_trim(&m, false));
	/* Free up to just under MEM_TRIM_BYTES. */
	while (freed + block_cost(p[i]) < MEM_TRIM_BYTES) {
		freed += block_cost(p[i]);
		meta_free(p[i++]);
	}
	ck_assert_uint_lt(freed, MEM_TRIM_BYTES);
	ck_assert_uint_gt(freed, MEM_TRIM_BYTES - 2048);
	ck_assert(!mem_trim(&m, false));
	ck_assert(!mem_trim(&m, false)); /* asking again frees nothing */
	/* The block that reaches it. */
	meta_free(p[i++]);
	ck_assert(mem_trim(&m, false));
	/* The count starts again from zero. */
	ck_assert(!mem_trim(&m, false));
	meta_free(p[i++]);
	ck_assert(!mem_trim(&m, false));
	/* Forced: always. */
	ck_assert(mem_trim(&m, true));
	ck_assert(mem_trim(&m, true));
	/* A forced trim also restarts the count: what was freed before it is not counted again. */
	freed = 0;
	while (freed + block_cost(p[i]) < MEM_TRIM_BYTES) {
		freed += block_cost(p[i]);
		meta_free(p[i++]);
	}
	ck_assert(!mem_trim(&m, false));
	meta_free(p[i++]);
	ck_assert(mem_trim(&m, false));
	while (i < N)
		meta_free(p[i++]);
	free(p);
	ck_assert_uint_eq(charged(), 0);
	ck_assert_uint_eq(atomic_load(&m.meta), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mem");
	TCase *tc = utest_tcase(s, "reserve", setup, teardown, 30);
	TCase *tm = utest_tcase(s, "meta", setup, teardown, 0);

	tcase_add_test(tc, reserve_up_to_the_limit_exactly);
	tcase_add_test(tc, reserve_is_a_reservation_not_a_check);
	tcase_add_test(tc, reserve_zero_always_succeeds);
	tcase_add_test(tc, reserve_of_huge_sizes_does_not_overflow);
	tcase_add_test(tc, reserve_against_the_kernels_figure);
	tcase_add_test(tc, meta_charge_against_the_kernels_figure);
	tcase_add_test(tc, concurrent_reservations_never_pass_the_limit);

	tcase_add_test(tm, meta_counts_what_the_allocator_spends_unbound);
	tcase_add_test(tm, meta_calloc_and_strdup);
	tcase_add_test(tm, meta_bound_charges_the_accounting);
	tcase_add_test(tm, meta_alloc_that_does_not_fit_fails_and_charges_nothing);
	tcase_add_test(tm, meta_credit_pays_first_and_returns_the_rest);
	tcase_add_test(tm, meta_credit_is_the_threads_own);
	tcase_add_test(tm, meta_credit_lets_reserved_metadata_through_at_the_limit);
	tcase_add_test(tm, meta_unlimited_passes_the_limit_on_this_thread_only);
	tcase_add_test(tm, trim_waits_for_enough_freed_metadata);
	return utest_run(s);
}
