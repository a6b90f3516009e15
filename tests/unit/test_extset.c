/* Unit tests for the extent set behind each file's purged set (src/daemon/extset.c). */
#include <check.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "extset.h"
#include "utest.h"

/*
 * Walk the set and check its invariants: every extent non-empty, in
 * order, no two touching, and the count and bytes fields equal to what
 * the walk finds.  The loop tests with plain ifs: every passing
 * ck_assert costs a write to the parent process, which the randomized
 * test would pay millions of times.
 */
static void assert_canonical(const struct extset *s)
{
	const struct extent *e, *prev = NULL;
	uint64_t count = 0, bytes = 0;

	for (e = extset_first_from(s, 0); e; e = extset_next(s, e)) {
		if (e->start >= e->end)
			ck_abort_msg("empty extent [%" PRIu64 ", %" PRIu64 ")", e->start, e->end);
		if (prev && prev->end >= e->start)
			ck_abort_msg("[%" PRIu64 ", %" PRIu64 ") then [%" PRIu64 ", %" PRIu64 ")",
				     prev->start, prev->end, e->start, e->end);
		count++;
		bytes += e->end - e->start;
		prev = e;
	}
	ck_assert_uint_eq(s->count, count);
	ck_assert_uint_eq(s->bytes, bytes);
	ck_assert(extset_empty(s) == (count == 0));
}

/* Assert that the set is exactly the n extents in want[] ({start, end} pairs). */
static void assert_extents(const struct extset *s, const uint64_t want[][2], unsigned n)
{
	const struct extent *e = extset_first_from(s, 0);

	assert_canonical(s);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->start, want[i][0]);
		ck_assert_uint_eq(e->end, want[i][1]);
		e = extset_next(s, e);
	}
	ck_assert_ptr_null(e);
	ck_assert_uint_eq(s->count, n);
}

#define ASSERT_EXTENTS(s, ...)                                                                  \
	do {                                                                                    \
		const uint64_t want_[][2] = { __VA_ARGS__ };                                    \
		assert_extents((s), want_, sizeof(want_) / sizeof(want_[0]));                   \
	} while (0)

START_TEST(extset_starts_empty)
{
	struct extset s;

	extset_init(&s);
	ck_assert(extset_empty(&s));
	ck_assert_uint_eq(s.count, 0);
	ck_assert_uint_eq(s.bytes, 0);
	ck_assert_ptr_null(extset_first_from(&s, 0));
	ck_assert(!extset_intersects(&s, 0, UINT64_MAX));
	ck_assert_uint_eq(extset_count_in(&s, 0, UINT64_MAX), 0);
	ck_assert_uint_eq(extset_bytes_in(&s, 0, UINT64_MAX), 0);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_add_empty_range_is_noop)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 10, 10), 0);
	ck_assert_int_eq(extset_add(&s, 20, 10), 0);
	ck_assert_int_eq(extset_add(&s, UINT64_MAX, UINT64_MAX), 0);
	ck_assert(extset_empty(&s));
	ck_assert_int_eq(extset_add(&s, 0, 100), 0);
	ck_assert_int_eq(extset_add(&s, 200, 150), 0);
	ASSERT_EXTENTS(&s, { 0, 100 });
	extset_clear(&s);
}
END_TEST

START_TEST(extset_add_keeps_separate_extents_apart)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 50, 60), 0);
	ck_assert_int_eq(extset_add(&s, 10, 20), 0);
	ck_assert_int_eq(extset_add(&s, 21, 30), 0); /* a one-byte gap at 20 */
	ASSERT_EXTENTS(&s, { 10, 20 }, { 21, 30 }, { 50, 60 });
	ck_assert_uint_eq(s.bytes, 10 + 9 + 10);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_add_merges_overlapping)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 10, 20), 0);
	ck_assert_int_eq(extset_add(&s, 15, 30), 0); /* overlaps the tail */
	ASSERT_EXTENTS(&s, { 10, 30 });
	ck_assert_int_eq(extset_add(&s, 5, 12), 0); /* overlaps the head */
	ASSERT_EXTENTS(&s, { 5, 30 });
	ck_assert_int_eq(extset_add(&s, 0, 40), 0); /* covers it */
	ASSERT_EXTENTS(&s, { 0, 40 });
	ck_assert_uint_eq(s.bytes, 40);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_add_merges_touching)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 10, 20), 0);
	ck_assert_int_eq(extset_add(&s, 20, 30), 0); /* touches the end */
	ASSERT_EXTENTS(&s, { 10, 30 });
	ck_assert_int_eq(extset_add(&s, 0, 10), 0); /* touches the start */
	ASSERT_EXTENTS(&s, { 0, 30 });
	ck_assert_int_eq(extset_add(&s, 40, 50), 0);
	ck_assert_int_eq(extset_add(&s, 30, 40), 0); /* fills the gap exactly */
	ASSERT_EXTENTS(&s, { 0, 50 });
	ck_assert_uint_eq(s.bytes, 50);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_add_bridges_several_extents)
{
	struct extset s;

	extset_init(&s);
	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(extset_add(&s, i * 100, i * 100 + 10), 0);
	ck_assert_uint_eq(s.count, 10);
	/* From inside the second extent to inside the eighth. */
	ck_assert_int_eq(extset_add(&s, 105, 705), 0);
	ASSERT_EXTENTS(&s, { 0, 10 }, { 100, 710 }, { 800, 810 }, { 900, 910 });
	ck_assert_uint_eq(s.bytes, 10 + 610 + 10 + 10);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_add_inside_extent_is_noop)
{
	struct extset s;
	const struct extent *before;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 100, 200), 0);
	before = extset_first_from(&s, 0);
	ck_assert_int_eq(extset_add(&s, 120, 180), 0);
	ck_assert_int_eq(extset_add(&s, 100, 200), 0);
	ck_assert_int_eq(extset_add(&s, 100, 101), 0);
	ck_assert_int_eq(extset_add(&s, 199, 200), 0);
	ASSERT_EXTENTS(&s, { 100, 200 });
	ck_assert_ptr_eq(extset_first_from(&s, 0), before);
	ck_assert_uint_eq(s.bytes, 100);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_remove_splits_extent)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 0, 100), 0);
	ck_assert_int_eq(extset_remove(&s, 40, 60), 0);
	ASSERT_EXTENTS(&s, { 0, 40 }, { 60, 100 });
	ck_assert_uint_eq(s.bytes, 80);
	ck_assert_int_eq(extset_remove(&s, 70, 71), 0);
	ASSERT_EXTENTS(&s, { 0, 40 }, { 60, 70 }, { 71, 100 });
	ck_assert_uint_eq(s.bytes, 79);
	extset_clear(&s);
}
END_TEST

/* Only bytes that are not zero leave the set, run by run, and only where the set has them. */
START_TEST(extset_remove_nonzero_takes_out_exactly_the_nonzero_bytes)
{
	uint8_t buf[4096] = { 0 };
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 1000, 5096), 0);
	memset(buf + 10, 0xab, 10);  /* [1010, 1020) */
	buf[100] = 1;                /* [1100, 1101) */
	memset(buf + 4090, 7, 6);    /* [5090, 5096): the set's last bytes */
	ck_assert_int_eq(extset_remove_nonzero(&s, 1000, buf, sizeof(buf)), 0);
	ASSERT_EXTENTS(&s, { 1000, 1010 }, { 1020, 1100 }, { 1101, 5090 });
	/* Outside the set, nothing changes. */
	ck_assert_int_eq(extset_remove_nonzero(&s, 9000, buf, sizeof(buf)), 0);
	ASSERT_EXTENTS(&s, { 1000, 1010 }, { 1020, 1100 }, { 1101, 5090 });
	extset_clear(&s);
}
END_TEST

/* At most EXTSET_NONZERO_RUNS runs in each page: the rest stays in the set. */
START_TEST(extset_remove_nonzero_caps_runs_per_page)
{
	static uint8_t buf[8192];
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 0, 8192), 0);
	for (unsigned i = 0; i < 8192; i += 2)
		buf[i] = 1; /* a run of one byte at every even offset */
	ck_assert_int_eq(extset_remove_nonzero(&s, 0, buf, sizeof(buf)), 0);
	assert_canonical(&s);
	ck_assert_uint_eq(s.bytes, 8192 - 2 * EXTSET_NONZERO_RUNS);
	ck_assert(!extset_intersects(&s, 0, 1) && !extset_intersects(&s, 4096, 4097));
	ck_assert(extset_intersects(&s, 2 * EXTSET_NONZERO_RUNS, 2 * EXTSET_NONZERO_RUNS + 1));
	extset_clear(&s);
}
END_TEST

START_TEST(extset_remove_across_several_extents)
{
	struct extset s;

	extset_init(&s);
	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(extset_add(&s, i * 100, i * 100 + 50), 0);
	/* Cuts the tail of the second, frees the third to seventh, cuts
	 * the head of the eighth. */
	ck_assert_int_eq(extset_remove(&s, 120, 720), 0);
	ASSERT_EXTENTS(&s, { 0, 50 }, { 100, 120 }, { 720, 750 }, { 800, 850 }, { 900, 950 });
	ck_assert_uint_eq(s.bytes, 50 + 20 + 30 + 50 + 50);
	/* Exactly the gaps' span: frees whole extents only. */
	ck_assert_int_eq(extset_remove(&s, 750, 1000), 0);
	ASSERT_EXTENTS(&s, { 0, 50 }, { 100, 120 }, { 720, 750 });
	extset_clear(&s);
}
END_TEST

START_TEST(extset_remove_at_edges)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 100, 200), 0);
	ck_assert_int_eq(extset_remove(&s, 90, 100), 0); /* touches the start only */
	ck_assert_int_eq(extset_remove(&s, 200, 210), 0); /* touches the end only */
	ASSERT_EXTENTS(&s, { 100, 200 });
	ck_assert_int_eq(extset_remove(&s, 100, 110), 0); /* the first bytes */
	ASSERT_EXTENTS(&s, { 110, 200 });
	ck_assert_int_eq(extset_remove(&s, 190, 200), 0); /* the last bytes */
	ASSERT_EXTENTS(&s, { 110, 190 });
	ck_assert_int_eq(extset_remove(&s, 50, 120), 0); /* across the start */
	ASSERT_EXTENTS(&s, { 120, 190 });
	ck_assert_int_eq(extset_remove(&s, 180, 500), 0); /* across the end */
	ASSERT_EXTENTS(&s, { 120, 180 });
	ck_assert_int_eq(extset_remove(&s, 120, 180), 0); /* exactly it */
	ck_assert(extset_empty(&s));
	ck_assert_uint_eq(s.bytes, 0);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_remove_outside_set_is_noop)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_remove(&s, 0, UINT64_MAX), 0); /* empty set */
	ck_assert_int_eq(extset_add(&s, 10, 20), 0);
	ck_assert_int_eq(extset_add(&s, 30, 40), 0);
	ck_assert_int_eq(extset_remove(&s, 20, 30), 0); /* the gap */
	ck_assert_int_eq(extset_remove(&s, 40, UINT64_MAX), 0);
	ck_assert_int_eq(extset_remove(&s, 0, 10), 0);
	ck_assert_int_eq(extset_remove(&s, 15, 15), 0);
	ck_assert_int_eq(extset_remove(&s, 18, 12), 0);
	ASSERT_EXTENTS(&s, { 10, 20 }, { 30, 40 });
	extset_clear(&s);
}
END_TEST

START_TEST(extset_remove_everything_empties)
{
	struct extset s;

	extset_init(&s);
	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_int_eq(extset_add(&s, i * 3, i * 3 + 2), 0);
	ck_assert_int_eq(extset_add(&s, UINT64_MAX - 5, UINT64_MAX), 0);
	ck_assert_uint_eq(s.count, 1001);
	ck_assert_int_eq(extset_remove(&s, 0, UINT64_MAX), 0);
	ck_assert(extset_empty(&s));
	ck_assert_uint_eq(s.bytes, 0);
	ck_assert_ptr_null(extset_first_from(&s, 0));
	extset_clear(&s);
}
END_TEST

START_TEST(extset_intersects_is_half_open)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 0, 10), 0);
	ck_assert_int_eq(extset_add(&s, 30, 40), 0);
	ck_assert(!extset_intersects(&s, 10, 20)); /* [0,10) ends where it starts */
	ck_assert(!extset_intersects(&s, 10, 30)); /* the whole gap */
	ck_assert(!extset_intersects(&s, 40, UINT64_MAX));
	ck_assert(extset_intersects(&s, 9, 10));
	ck_assert(extset_intersects(&s, 29, 31));
	ck_assert(extset_intersects(&s, 39, 40));
	ck_assert(extset_intersects(&s, 5, 35));
	ck_assert(extset_intersects(&s, 0, UINT64_MAX));
	ck_assert(!extset_intersects(&s, 5, 5)); /* empty ranges meet nothing */
	ck_assert(!extset_intersects(&s, 35, 32));
	extset_clear(&s);
}
END_TEST

START_TEST(extset_first_from_and_next_iterate_in_order)
{
	struct extset s;
	const struct extent *e;
	uint64_t n = 0;

	extset_init(&s);
	/* Added out of order, so the tree is not built by appending. */
	for (uint64_t i = 0; i < 100; i++)
		ck_assert_int_eq(extset_add(&s, (i * 37 % 100) * 10, (i * 37 % 100) * 10 + 5), 0);
	for (e = extset_first_from(&s, 0); e; e = extset_next(&s, e)) {
		ck_assert_uint_eq(e->start, n * 10);
		ck_assert_uint_eq(e->end, n * 10 + 5);
		n++;
	}
	ck_assert_uint_eq(n, 100);
	e = extset_first_from(&s, 502); /* inside [500, 505) */
	ck_assert_uint_eq(e->start, 500);
	e = extset_first_from(&s, 504); /* its last byte */
	ck_assert_uint_eq(e->start, 500);
	e = extset_first_from(&s, 505); /* its end: the next one */
	ck_assert_uint_eq(e->start, 510);
	e = extset_first_from(&s, 507); /* in a gap */
	ck_assert_uint_eq(e->start, 510);
	ck_assert_ptr_null(extset_first_from(&s, 995));
	ck_assert_ptr_null(extset_first_from(&s, UINT64_MAX));
	e = extset_first_from(&s, 990);
	ck_assert_ptr_null(extset_next(&s, e));
	extset_clear(&s);
}
END_TEST

START_TEST(extset_count_in_clips_both_ends)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 10, 20), 0);
	ck_assert_int_eq(extset_add(&s, 30, 40), 0);
	ck_assert_int_eq(extset_add(&s, 50, 60), 0);
	ck_assert_uint_eq(extset_count_in(&s, 0, UINT64_MAX), 3);
	ck_assert_uint_eq(extset_count_in(&s, 15, 55), 3); /* partly in, at both ends */
	ck_assert_uint_eq(extset_count_in(&s, 20, 50), 1); /* half-open at both ends */
	ck_assert_uint_eq(extset_count_in(&s, 19, 51), 3);
	ck_assert_uint_eq(extset_count_in(&s, 32, 38), 1);
	ck_assert_uint_eq(extset_count_in(&s, 20, 30), 0);
	ck_assert_uint_eq(extset_count_in(&s, 60, UINT64_MAX), 0);
	ck_assert_uint_eq(extset_count_in(&s, 40, 10), 0);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_bytes_in_clips_both_ends)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 10, 20), 0);
	ck_assert_int_eq(extset_add(&s, 30, 40), 0);
	ck_assert_int_eq(extset_add(&s, 50, 60), 0);
	ck_assert_uint_eq(extset_bytes_in(&s, 0, UINT64_MAX), 30);
	ck_assert_uint_eq(extset_bytes_in(&s, 15, 55), 5 + 10 + 5);
	ck_assert_uint_eq(extset_bytes_in(&s, 32, 38), 6); /* inside one extent */
	ck_assert_uint_eq(extset_bytes_in(&s, 19, 51), 1 + 10 + 1);
	ck_assert_uint_eq(extset_bytes_in(&s, 20, 30), 0);
	ck_assert_uint_eq(extset_bytes_in(&s, 40, 10), 0);
	extset_clear(&s);
}
END_TEST

START_TEST(extset_handles_uint64_max_ends)
{
	struct extset s;
	const struct extent *e;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 4096, UINT64_MAX), 0); /* "to the end" */
	ck_assert_uint_eq(s.bytes, UINT64_MAX - 4096);
	ck_assert(extset_intersects(&s, UINT64_MAX - 1, UINT64_MAX));
	e = extset_first_from(&s, UINT64_MAX - 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->end, UINT64_MAX);
	ck_assert_ptr_null(extset_first_from(&s, UINT64_MAX));
	ck_assert_uint_eq(extset_bytes_in(&s, UINT64_MAX - 10, UINT64_MAX), 10);
	ck_assert_uint_eq(extset_count_in(&s, UINT64_MAX - 10, UINT64_MAX), 1);

	/* A split near the top, then a cut of the top. */
	ck_assert_int_eq(extset_remove(&s, UINT64_MAX - 100, UINT64_MAX - 50), 0);
	ASSERT_EXTENTS(&s, { 4096, UINT64_MAX - 100 }, { UINT64_MAX - 50, UINT64_MAX });
	ck_assert_int_eq(extset_remove(&s, UINT64_MAX - 1, UINT64_MAX), 0);
	ASSERT_EXTENTS(&s, { 4096, UINT64_MAX - 100 }, { UINT64_MAX - 50, UINT64_MAX - 1 });

	/* Everything that can be named: the largest set there is. */
	ck_assert_int_eq(extset_add(&s, 0, UINT64_MAX), 0);
	ASSERT_EXTENTS(&s, { 0, UINT64_MAX });
	ck_assert_uint_eq(s.bytes, UINT64_MAX);
	ck_assert_uint_eq(extset_bytes_in(&s, 0, UINT64_MAX), UINT64_MAX);
	ck_assert_int_eq(extset_remove(&s, 0, UINT64_MAX), 0);
	ck_assert(extset_empty(&s));
	extset_clear(&s);
}
END_TEST

START_TEST(extset_count_and_bytes_stay_right)
{
	struct extset s;

	extset_init(&s);
	ck_assert_int_eq(extset_add(&s, 0, 10), 0);
	ck_assert_uint_eq(s.count, 1);
	ck_assert_uint_eq(s.bytes, 10);
	ck_assert_int_eq(extset_add(&s, 20, 30), 0);
	ck_assert_uint_eq(s.count, 2);
	ck_assert_uint_eq(s.bytes, 20);
	ck_assert_int_eq(extset_add(&s, 5, 25), 0); /* bridges them */
	ck_assert_uint_eq(s.count, 1);
	ck_assert_uint_eq(s.bytes, 30);
	ck_assert_int_eq(extset_remove(&s, 10, 20), 0); /* splits */
	ck_assert_uint_eq(s.count, 2);
	ck_assert_uint_eq(s.bytes, 20);
	ck_assert_int_eq(extset_remove(&s, 0, 5), 0); /* trims */
	ck_assert_uint_eq(s.count, 2);
	ck_assert_uint_eq(s.bytes, 15);
	ck_assert_int_eq(extset_remove(&s, 0, 10), 0); /* frees */
	ck_assert_uint_eq(s.count, 1);
	ck_assert_uint_eq(s.bytes, 10);
	assert_canonical(&s);
	extset_clear(&s);
	ck_assert_uint_eq(s.count, 0);
	ck_assert_uint_eq(s.bytes, 0);
}
END_TEST

START_TEST(extset_clear_frees_all_and_leaves_set_usable)
{
	struct extset s;

	extset_init(&s);
	for (uint64_t i = 0; i < 10000; i++)
		ck_assert_int_eq(extset_add(&s, i * 2, i * 2 + 1), 0);
	ck_assert_uint_eq(s.count, 10000);
	extset_clear(&s); /* LeakSanitizer checks that every node went */
	ck_assert(extset_empty(&s));
	ck_assert_uint_eq(s.bytes, 0);
	ck_assert_ptr_null(extset_first_from(&s, 0));
	ck_assert_int_eq(extset_add(&s, 7, 9), 0);
	ASSERT_EXTENTS(&s, { 7, 9 });
	extset_clear(&s);
	extset_clear(&s); /* clearing an empty set is fine */
}
END_TEST

START_TEST(extset_one_add_swallows_many_extents)
{
	struct extset s;
	uint64_t n = 100000;

	extset_init(&s);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_int_eq(extset_add(&s, i * 4 + 1, i * 4 + 3), 0);
	ck_assert_uint_eq(s.count, n);
	ck_assert_uint_eq(extset_count_in(&s, 0, UINT64_MAX), n);
	ck_assert_uint_eq(extset_bytes_in(&s, 0, UINT64_MAX), 2 * n);
	ck_assert_uint_eq(extset_count_in(&s, 4001, 8001), 1000);
	ck_assert_int_eq(extset_add(&s, 0, 4 * n), 0);
	ASSERT_EXTENTS(&s, { 0, 4 * n });
	extset_clear(&s);
}
END_TEST

/*
 * The model: one bool per byte of a 4096-byte universe.  Every random
 * add or remove (fixed seed) is applied to both, and everything the set
 * can report is compared with the model after each one.
 */
#define UNIVERSE 4096
#define RANDOM_OPS 20000

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seed, same sequence on every libc. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

/* A random range in [0, UNIVERSE], mostly short, sometimes empty or reversed. */
static void random_range(uint64_t *start, uint64_t *end)
{
	static const uint64_t spans[] = { 1, 4, 16, 64 };
	uint64_t span = spans[rng() % (sizeof(spans) / sizeof(spans[0]))];

	/* Short ranges fragment the set; now and then a long one merges or
	 * empties much of it at once. */
	if (rng() % 64 == 0)
		span = rng() % 4 ? 512 : UNIVERSE;

	*start = rng() % (UNIVERSE + 1);
	*end = *start + rng() % (span + 1);
	if (*end > UNIVERSE)
		*end = UNIVERSE;
	if (rng() % 64 == 0)
		*end = rng() % (UNIVERSE + 1); /* may be <= start */
}

static uint64_t model_runs_in(const bool *m, uint64_t start, uint64_t end)
{
	uint64_t runs = 0;

	for (uint64_t i = start; i < end; i++)
		if (m[i] && (i == start || !m[i - 1]))
			runs++;
	return runs;
}

static uint64_t model_bytes_in(const bool *m, uint64_t start, uint64_t end)
{
	uint64_t bytes = 0;

	for (uint64_t i = start; i < end; i++)
		bytes += m[i];
	return bytes;
}

static void assert_matches_model(const struct extset *s, const bool *m)
{
	static bool seen[UNIVERSE];
	const struct extent *e;
	uint64_t a, b, i;

	assert_canonical(s);
	memset(seen, 0, sizeof(seen));
	for (e = extset_first_from(s, 0); e; e = extset_next(s, e)) {
		if (e->end > UNIVERSE)
			ck_abort_msg("extent [%" PRIu64 ", %" PRIu64 ") outside the universe",
				     e->start, e->end);
		for (i = e->start; i < e->end; i++)
			seen[i] = true;
	}
	ck_assert_mem_eq(seen, m, sizeof(seen));
	ck_assert_uint_eq(s->count, model_runs_in(m, 0, UNIVERSE));
	ck_assert_uint_eq(s->bytes, model_bytes_in(m, 0, UNIVERSE));

	/* One random query of each kind against the model. */
	random_range(&a, &b);
	ck_assert_uint_eq(extset_count_in(s, a, b), a < b ? model_runs_in(m, a, b) : 0);
	ck_assert_uint_eq(extset_bytes_in(s, a, b), a < b ? model_bytes_in(m, a, b) : 0);
	ck_assert(extset_intersects(s, a, b) == (a < b && model_bytes_in(m, a, b) > 0));
	e = extset_first_from(s, a);
	for (i = a; i < UNIVERSE && !m[i]; i++)
		;
	if (i == UNIVERSE) {
		ck_assert_ptr_null(e);
	} else {
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_le(e->start, i);
		ck_assert_uint_gt(e->end, i);
	}
}

START_TEST(extset_matches_byte_model_randomized)
{
	static bool model[UNIVERSE];
	struct extset s;
	uint64_t start, end;
	uint64_t peak = 0, bridges = 0, splits = 0, sweeps = 0;

	rng_state = 0x9E3779B97F4A7C15ULL;
	memset(model, 0, sizeof(model));
	extset_init(&s);
	for (unsigned op = 0; op < RANDOM_OPS; op++) {
		bool add = rng() % 2;
		uint64_t before = s.count;

		random_range(&start, &end);
		if (add)
			ck_assert_int_eq(extset_add(&s, start, end), 0);
		else
			ck_assert_int_eq(extset_remove(&s, start, end), 0);
		for (uint64_t i = start; i < end; i++)
			model[i] = add;
		assert_matches_model(&s, model);
		if (s.count > peak)
			peak = s.count;
		if (add && s.count + 1 < before)
			bridges++; /* one add swallowed two or more extents */
		if (!add && s.count == before + 1)
			splits++;
		if (!add && s.count + 1 < before)
			sweeps++; /* one remove freed two or more extents */
	}
	/* The run exercised what it is meant to: fragmented sets, and adds,
	 * splits and removes that each touch several extents at once. */
	ck_assert_uint_gt(peak, 100);
	ck_assert_uint_gt(bridges, 100);
	ck_assert_uint_gt(splits, 1000);
	ck_assert_uint_gt(sweeps, 100);
	extset_clear(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("extset");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 0);

	tcase_add_test(tc, extset_starts_empty);
	tcase_add_test(tc, extset_add_empty_range_is_noop);
	tcase_add_test(tc, extset_add_keeps_separate_extents_apart);
	tcase_add_test(tc, extset_add_merges_overlapping);
	tcase_add_test(tc, extset_add_merges_touching);
	tcase_add_test(tc, extset_add_bridges_several_extents);
	tcase_add_test(tc, extset_add_inside_extent_is_noop);
	tcase_add_test(tc, extset_remove_splits_extent);
	tcase_add_test(tc, extset_remove_nonzero_takes_out_exactly_the_nonzero_bytes);
	tcase_add_test(tc, extset_remove_nonzero_caps_runs_per_page);
	tcase_add_test(tc, extset_remove_across_several_extents);
	tcase_add_test(tc, extset_remove_at_edges);
	tcase_add_test(tc, extset_remove_outside_set_is_noop);
	tcase_add_test(tc, extset_remove_everything_empties);
	tcase_add_test(tc, extset_intersects_is_half_open);
	tcase_add_test(tc, extset_first_from_and_next_iterate_in_order);
	tcase_add_test(tc, extset_count_in_clips_both_ends);
	tcase_add_test(tc, extset_bytes_in_clips_both_ends);
	tcase_add_test(tc, extset_handles_uint64_max_ends);
	tcase_add_test(tc, extset_count_and_bytes_stay_right);
	tcase_add_test(tc, extset_clear_frees_all_and_leaves_set_usable);
	tcase_add_test(tc, extset_one_add_swallows_many_extents);
	tcase_add_test(tc, extset_matches_byte_model_randomized);
	return utest_run(s);
}
