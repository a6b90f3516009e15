/* Unit tests for the per-file page map (src/daemon/pagemap.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>

#include "meta.h"
#include "pagemap.h"
#include "utest.h"

/* Fake page addresses: 4096-aligned, never dereferenced by the map. */
#define PAGE(i) ((uintptr_t)((i) + 1) << 12)

static unsigned released;
static void count_release(void *page, void *ctx)
{
	(void)page; (void)ctx;
	released++;
}

START_TEST(pagemap_get_of_hole_is_zero)
{
	struct pagemap pm;

	pagemap_init(&pm);
	ck_assert_uint_eq(pagemap_get(&pm, 0), 0);
	ck_assert_uint_eq(pagemap_get(&pm, 123456789), 0);
}
END_TEST

START_TEST(pagemap_set_get_sparse_indices)
{
	struct pagemap pm;
	uint64_t idx[] = { 0, 1, 63, 64, 4095, 4096, 1u << 20, PM_MAX_INDEX };

	pagemap_init(&pm);
	for (unsigned i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
		ck_assert_int_eq(pagemap_set(&pm, idx[i], PAGE(i), NULL), 0);
	for (unsigned i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
		ck_assert_uint_eq(pagemap_get(&pm, idx[i]), PAGE(i));
	ck_assert_uint_eq(pagemap_get(&pm, 2), 0);
	ck_assert_uint_eq(pm.npages, 8);
	pagemap_destroy(&pm, NULL, NULL);
	ck_assert_uint_eq(pm.nnodes, 0);
}
END_TEST

START_TEST(pagemap_set_beyond_max_index_is_einval)
{
	struct pagemap pm;

	pagemap_init(&pm);
	ck_assert_int_eq(pagemap_set(&pm, PM_MAX_INDEX + 1, PAGE(0), NULL), -EINVAL);
	ck_assert_uint_eq(pm.nentries, 0);
}
END_TEST

START_TEST(pagemap_tags_survive_without_page)
{
	struct pagemap pm;
	uintptr_t old;

	pagemap_init(&pm);
	ck_assert_int_eq(pagemap_set(&pm, 5, PAGE(5) | 1, NULL), 0);
	ck_assert_uint_eq(PM_TAGS(pagemap_get(&pm, 5)), 1);
	/* Drop the page, keep the tag (what a purge does). */
	ck_assert_int_eq(pagemap_set(&pm, 5, 1, &old), 0);
	ck_assert_ptr_eq(PM_PAGE(old), (void *)PAGE(5));
	ck_assert_uint_eq(pm.npages, 0);
	ck_assert_uint_eq(pm.nentries, 1);
	ck_assert_ptr_null(PM_PAGE(pagemap_get(&pm, 5)));
	pagemap_destroy(&pm, NULL, NULL);
}
END_TEST

START_TEST(pagemap_clear_prunes_empty_nodes)
{
	struct pagemap pm;

	pagemap_init(&pm);
	ck_assert_int_eq(pagemap_set(&pm, 1u << 30, PAGE(1), NULL), 0);
	ck_assert_uint_gt(pm.nnodes, 1);
	ck_assert_uint_eq(pagemap_clear(&pm, 1u << 30), PAGE(1));
	ck_assert_uint_eq(pm.nnodes, 0);
	ck_assert_ptr_null(pm.root);
	ck_assert_uint_eq(pagemap_clear(&pm, 7), 0);
}
END_TEST

START_TEST(pagemap_next_finds_pages_in_order)
{
	struct pagemap pm;
	uint64_t idx;
	uintptr_t e;

	pagemap_init(&pm);
	ck_assert_int_eq(pagemap_set(&pm, 10, PAGE(10), NULL), 0);
	ck_assert_int_eq(pagemap_set(&pm, 5000, 2, NULL), 0); /* tag only */
	ck_assert_int_eq(pagemap_set(&pm, 1u << 24, PAGE(3), NULL), 0);
	ck_assert(pagemap_next(&pm, 0, true, &idx, &e));
	ck_assert_uint_eq(idx, 10);
	ck_assert(pagemap_next(&pm, 11, false, &idx, &e));
	ck_assert_uint_eq(idx, 5000);
	ck_assert(pagemap_next(&pm, 11, true, &idx, &e));
	ck_assert_uint_eq(idx, 1u << 24);
	ck_assert(!pagemap_next(&pm, (1u << 24) + 1, false, &idx, &e));
	pagemap_destroy(&pm, NULL, NULL);
}
END_TEST

START_TEST(pagemap_remove_range_releases_only_the_range)
{
	struct pagemap pm;

	pagemap_init(&pm);
	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_int_eq(pagemap_set(&pm, i, PAGE(i), NULL), 0);
	released = 0;
	ck_assert_uint_eq(pagemap_remove_range(&pm, 100, 199, count_release, NULL), 100);
	ck_assert_uint_eq(released, 100);
	ck_assert_uint_eq(pagemap_get(&pm, 99), PAGE(99));
	ck_assert_uint_eq(pagemap_get(&pm, 100), 0);
	ck_assert_uint_eq(pagemap_get(&pm, 199), 0);
	ck_assert_uint_eq(pagemap_get(&pm, 200), PAGE(200));
	ck_assert_uint_eq(pm.npages, 900);
	released = 0;
	pagemap_destroy(&pm, count_release, NULL);
	ck_assert_uint_eq(released, 900);
}
END_TEST

START_TEST(pagemap_metadata_is_small_for_dense_files)
{
	struct pagemap pm;
	uint64_t n = 1u << 16; /* 256 MiB of pages */

	pagemap_init(&pm);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_int_eq(pagemap_set(&pm, i, PAGE(i), NULL), 0);
	/* under 1% of the data it maps */
	ck_assert_uint_lt(pagemap_meta_bytes(&pm), n * 4096 / 100);
	pagemap_destroy(&pm, NULL, NULL);
}
END_TEST

/* ---- pagemap_count and pagemap_fill_bound, against a reference ---- */

/* A map with the set of its indices kept beside it, for brute force. */
#define REF_MAX 512

struct ref {
	uint64_t idx[REF_MAX];
	bool page[REF_MAX]; /* false: an entry with tags and no page */
	unsigned n;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure can be replayed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static int ref_find(const struct ref *r, uint64_t i)
{
	for (unsigned k = 0; k < r->n; k++)
		if (r->idx[k] == i)
			return (int)k;
	return -1;
}

static void ref_set(struct pagemap *pm, struct ref *r, uint64_t i, bool page)
{
	int k = ref_find(r, i);

	ck_assert_int_eq(pagemap_set(pm, i, page ? PAGE(i & 0xffff) : 3, NULL), 0);
	if (k < 0) {
		ck_assert_uint_lt(r->n, REF_MAX);
		k = (int)r->n++;
		r->idx[k] = i;
	}
	r->page[k] = page;
}

static void ref_clear(struct pagemap *pm, struct ref *r, uint64_t i)
{
	int k = ref_find(r, i);

	pagemap_clear(pm, i);
	if (k >= 0) {
		r->idx[k] = r->idx[r->n - 1];
		r->page[k] = r->page[r->n - 1];
		r->n--;
	}
}

static uint64_t ref_count(const struct ref *r, uint64_t first, uint64_t last)
{
	uint64_t c = 0;

	for (unsigned k = 0; k < r->n; k++)
		if (r->page[k] && r->idx[k] >= first && r->idx[k] <= last)
			c++;
	return c;
}

/* Indices where something is likely to go wrong: ends of nodes at every level. */
static uint64_t interesting(unsigned k)
{
	static const uint64_t fixed[] = { 0, 1, 62, 63, 64, 65, 127, 128, 4095, 4096, 4097,
					  (1ull << 18) - 1, 1ull << 18, 1ull << 24,
					  (1ull << 30) - 1, (1ull << 36) + 5, (1ull << 40) - 1,
					  1ull << 40, (1ull << 40) + 1, 1ull << 48,
					  (1ull << 51) + 3, PM_MAX_INDEX - 64, PM_MAX_INDEX - 1,
					  PM_MAX_INDEX, PM_MAX_INDEX + 1, 1ull << 53,
					  1ull << 62, UINT64_MAX - 1, UINT64_MAX };
	unsigned nf = sizeof(fixed) / sizeof(fixed[0]);

	return fixed[k % nf];
}
#define N_INTERESTING 29

/* A random index: near a node boundary, in a cluster, or anywhere. */
static uint64_t random_index(void)
{
	uint64_t i;

	switch (rnd() % 4) {
	case 0: /* near a boundary of some level */
		i = (1ull << (6 * (rnd() % 9))) * (rnd() % 3) + rnd() % 3 - 1;
		break;
	case 1: /* a cluster low down */
		i = rnd() % 300;
		break;
	case 2: /* a cluster high up */
		i = PM_MAX_INDEX - rnd() % 300;
		break;
	default:
		i = rnd() & PM_MAX_INDEX;
		break;
	}
	return i > PM_MAX_INDEX ? PM_MAX_INDEX : i;
}

static void check_counts(const struct pagemap *pm, const struct ref *r)
{
	uint64_t pts[N_INTERESTING + 2 * REF_MAX + 40];
	unsigned np = 0;

	for (unsigned k = 0; k < N_INTERESTING; k++)
		pts[np++] = interesting(k);
	/* Each held index and its neighbours. */
	for (unsigned k = 0; k < r->n && np + 3 < sizeof(pts) / sizeof(pts[0]); k += 1 + r->n / 12) {
		pts[np++] = r->idx[k];
		pts[np++] = r->idx[k] - 1;
		pts[np++] = r->idx[k] + 1;
	}
	for (unsigned k = 0; k < 12; k++)
		pts[np++] = random_index();
	for (unsigned a = 0; a < np; a++)
		for (unsigned b = 0; b < np; b++) {
			uint64_t got = pagemap_count(pm, pts[a], pts[b]);
			uint64_t want = ref_count(r, pts[a], pts[b]);

			ck_assert_msg(got == want,
				      "pagemap_count(%#llx, %#llx) = %llu, want %llu (%u entries)",
				      (unsigned long long)pts[a], (unsigned long long)pts[b],
				      (unsigned long long)got, (unsigned long long)want, r->n);
		}
}

START_TEST(pagemap_count_of_an_empty_map_is_zero)
{
	struct pagemap pm;

	pagemap_init(&pm);
	ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), 0);
	ck_assert_uint_eq(pagemap_count(&pm, 0, 0), 0);
	ck_assert_uint_eq(pagemap_count(&pm, 5, 4), 0);
	/* and again once it was used and emptied */
	ck_assert_int_eq(pagemap_set(&pm, 1ull << 40, PAGE(1), NULL), 0);
	ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), 1);
	pagemap_clear(&pm, 1ull << 40);
	ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), 0);
}
END_TEST

START_TEST(pagemap_count_sparse_fixed_indices)
{
	struct pagemap pm;
	struct ref r = { .n = 0 };
	const uint64_t idx[] = { 0, 63, 64, 1ull << 40, PM_MAX_INDEX };

	pagemap_init(&pm);
	for (unsigned i = 0; i < 5; i++)
		ref_set(&pm, &r, idx[i], true);
	/* A tag-only entry is not a page and is not counted. */
	ref_set(&pm, &r, 65, false);
	ref_set(&pm, &r, (1ull << 40) + 1, false);
	ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), 5);
	ck_assert_uint_eq(pagemap_count(&pm, 0, PM_MAX_INDEX), 5);
	ck_assert_uint_eq(pagemap_count(&pm, 0, 63), 2);
	ck_assert_uint_eq(pagemap_count(&pm, 63, 64), 2);
	ck_assert_uint_eq(pagemap_count(&pm, 64, 64), 1);
	ck_assert_uint_eq(pagemap_count(&pm, 65, (1ull << 40) - 1), 0);
	ck_assert_uint_eq(pagemap_count(&pm, 1, 62), 0);
	ck_assert_uint_eq(pagemap_count(&pm, PM_MAX_INDEX, PM_MAX_INDEX), 1);
	ck_assert_uint_eq(pagemap_count(&pm, PM_MAX_INDEX, UINT64_MAX), 1);
	ck_assert_uint_eq(pagemap_count(&pm, PM_MAX_INDEX + 1, UINT64_MAX), 0);
	ck_assert_uint_eq(pagemap_count(&pm, UINT64_MAX, UINT64_MAX), 0);
	/* first > last: nothing, however wide */
	ck_assert_uint_eq(pagemap_count(&pm, 64, 63), 0);
	ck_assert_uint_eq(pagemap_count(&pm, UINT64_MAX, 0), 0);
	ck_assert_uint_eq(pagemap_count(&pm, PM_MAX_INDEX, 0), 0);
	check_counts(&pm, &r);
	/* Removing entries: the count follows. */
	ref_clear(&pm, &r, 63);
	ref_clear(&pm, &r, PM_MAX_INDEX);
	ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), 3);
	check_counts(&pm, &r);
	pagemap_destroy(&pm, NULL, NULL);
}
END_TEST

/* Trees of every height, with the range reaching past what they can hold. */
START_TEST(pagemap_count_ranges_wider_than_the_tree)
{
	for (unsigned h = 0; h < 9; h++) {
		struct pagemap pm;
		struct ref r = { .n = 0 };
		uint64_t top = h * 6 >= 52 ? PM_MAX_INDEX : (1ull << (h * 6)) - 1;

		pagemap_init(&pm);
		ref_set(&pm, &r, top, true);
		ref_set(&pm, &r, top / 2, true);
		ref_set(&pm, &r, 0, true);
		ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), r.n);
		ck_assert_uint_eq(pagemap_count(&pm, top + 1, UINT64_MAX), 0);
		ck_assert_uint_eq(pagemap_count(&pm, top, UINT64_MAX), 1);
		ck_assert_uint_eq(pagemap_count(&pm, top + 1, top + 1), 0);
		ck_assert_uint_eq(pagemap_count(&pm, (top + 1) * 64, UINT64_MAX), 0);
		check_counts(&pm, &r);
		pagemap_destroy(&pm, NULL, NULL);
	}
}
END_TEST

START_TEST(pagemap_count_matches_brute_force_on_random_maps)
{
	for (unsigned round = 0; round < 16; round++) {
		struct pagemap pm;
		struct ref r = { .n = 0 };
		unsigned n = 1 + (unsigned)(rnd() % 120);

		pagemap_init(&pm);
		for (unsigned k = 0; k < n; k++)
			ref_set(&pm, &r, random_index(), rnd() % 8 != 0);
		ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), pm.npages);
		check_counts(&pm, &r);
		/* Take some away (single entries and a range), check again. */
		for (unsigned k = 0; k < n / 3 && r.n; k++)
			ref_clear(&pm, &r, r.idx[rnd() % r.n]);
		if (r.n) {
			uint64_t a = r.idx[rnd() % r.n], b = r.idx[rnd() % r.n];
			uint64_t lo = a < b ? a : b, hi = a < b ? b : a;

			pagemap_remove_range(&pm, lo, hi, NULL, NULL);
			for (unsigned k = 0; k < r.n;) {
				if (r.idx[k] >= lo && r.idx[k] <= hi)
					ref_clear(&pm, &r, r.idx[k]);
				else
					k++;
			}
		}
		ck_assert_uint_eq(pagemap_count(&pm, 0, UINT64_MAX), pm.npages);
		check_counts(&pm, &r);
		pagemap_destroy(&pm, NULL, NULL);
	}
}
END_TEST

/* The heights a map can have: enough 6-bit levels for 52 bits of index. */
#define PM_LEVELS ((52 + PM_SHIFT - 1) / PM_SHIFT)

static uint64_t node_cost(void)
{
	return meta_cost(pagemap_node_size());
}

/* Store `count` new entries in [first, last] at random: bound vs what was allocated. */
static void check_fill(struct pagemap *pm, struct ref *r, uint64_t first, uint64_t last,
		       uint64_t count, bool dense)
{
	uint64_t c = node_cost();
	uint64_t bound = pagemap_fill_bound(first, last, count, c);
	uint64_t before = pm->nnodes, stored = 0;

	if (dense) {
		/* every missing index, as a fallocate does */
		for (uint64_t i = first; i <= last && stored < count; i++)
			if (!PM_PAGE(pagemap_get(pm, i))) {
				ck_assert_int_eq(pagemap_set(pm, i, PAGE(i & 0xffff), NULL), 0);
				stored++;
			}
	} else {
		for (unsigned tries = 0; stored < count; tries++) {
			uint64_t i = first + rnd() % (last - first + 1);

			ck_assert_msg(tries < 1000000, "cannot find %llu free indices in [%#llx, %#llx]",
				      (unsigned long long)count, (unsigned long long)first,
				      (unsigned long long)last);
			if (pagemap_get(pm, i))
				continue;
			ref_set(pm, r, i, true);
			stored++;
		}
	}
	ck_assert_msg((pm->nnodes - before) * c <= bound,
		      "storing %llu in [%#llx, %#llx] made %llu nodes, bound %llu bytes = %llu nodes",
		      (unsigned long long)count, (unsigned long long)first,
		      (unsigned long long)last, (unsigned long long)(pm->nnodes - before),
		      (unsigned long long)bound, (unsigned long long)(bound / c));
}

START_TEST(pagemap_fill_bound_is_zero_when_nothing_is_missing)
{
	ck_assert_uint_eq(pagemap_fill_bound(0, 0, 0, node_cost()), 0);
	ck_assert_uint_eq(pagemap_fill_bound(0, PM_MAX_INDEX, 0, node_cost()), 0);
	ck_assert_uint_eq(pagemap_fill_bound(1ull << 40, (1ull << 40) + 100, 0, node_cost()), 0);
	ck_assert_uint_eq(pagemap_fill_bound(5, 4, 0, node_cost()), 0);
}
END_TEST

START_TEST(pagemap_fill_bound_worst_cases)
{
	uint64_t far[] = { PM_MAX_INDEX, 1ull << 51, 1ull << 40, 1ull << 30, 4096, 64, 63, 0 };

	/* One entry into an empty map, and into a map whose root is low and short. */
	for (unsigned k = 0; k < sizeof(far) / sizeof(far[0]); k++) {
		struct pagemap pm;
		struct ref r = { .n = 0 };

		pagemap_init(&pm);
		check_fill(&pm, &r, far[k], far[k], 1, false);
		pagemap_destroy(&pm, NULL, NULL);
		pagemap_init(&pm);
		ref_set(&pm, &r, 0, true);
		check_fill(&pm, &r, far[k], far[k], far[k] == 0 ? 0 : 1, false);
		pagemap_destroy(&pm, NULL, NULL);
		r.n = 0;
		/* one entry somewhere in a range that reaches it */
		pagemap_init(&pm);
		ref_set(&pm, &r, 7, true);
		check_fill(&pm, &r, far[k] / 2, far[k], 1, false);
		pagemap_destroy(&pm, NULL, NULL);
	}
	/*
	 * Two entries on either side of a boundary of level j: they share no
	 * node below it, so each needs a path of its own, and the map may have
	 * to grow to reach them.  (The span of a level is the nodes that the
	 * range touches there, counted from both ends, not its width.)
	 */
	for (unsigned j = 1; j < PM_LEVELS; j++) {
		uint64_t b = 1ull << (6 * j);
		struct pagemap pm;
		struct ref r = { .n = 0 };

		pagemap_init(&pm);
		check_fill(&pm, &r, b - 1, b, 2, true);
		pagemap_destroy(&pm, NULL, NULL);
		pagemap_init(&pm);
		ref_set(&pm, &r, 0, true);
		check_fill(&pm, &r, b - 1, b, 2, true);
		pagemap_destroy(&pm, NULL, NULL);
		r.n = 0;
		pagemap_init(&pm);
		ref_set(&pm, &r, PM_MAX_INDEX, true);
		check_fill(&pm, &r, b - 2, b + 1, 4, true);
		pagemap_destroy(&pm, NULL, NULL);
	}
}
END_TEST

START_TEST(pagemap_fill_bound_holds_for_random_fills)
{
	for (unsigned round = 0; round < 300; round++) {
		struct pagemap pm;
		struct ref r = { .n = 0 };
		unsigned n = (unsigned)(rnd() % 100);
		uint64_t first, last, width, room;

		pagemap_init(&pm);
		for (unsigned k = 0; k < n; k++)
			ref_set(&pm, &r, random_index(), true);
		first = random_index();
		switch (rnd() % 3) {
		case 0:
			width = rnd() % 200;
			break;
		case 1:
			width = rnd() % (1ull << (rnd() % 52));
			break;
		default:
			width = PM_MAX_INDEX;
			break;
		}
		last = width > PM_MAX_INDEX - first ? PM_MAX_INDEX : first + width;
		room = last - first + 1 - pagemap_count(&pm, first, last);
		if (room == 0) {
			pagemap_destroy(&pm, NULL, NULL);
			continue;
		}
		if (room <= 300 && rnd() % 2)
			check_fill(&pm, &r, first, last, room, true); /* all that is missing */
		else
			check_fill(&pm, &r, first, last, 1 + rnd() % (room < 150 ? room : 150),
				   false);
		pagemap_destroy(&pm, NULL, NULL);
	}
}
END_TEST

START_TEST(pagemap_fill_bound_follows_entries_not_width)
{
	uint64_t c = node_cost();

	/* One entry needs at most a path of nodes, wherever it lands. */
	ck_assert_uint_le(pagemap_fill_bound(0, PM_MAX_INDEX, 1, c), 2 * PM_LEVELS * c);
	ck_assert_uint_le(pagemap_fill_bound(0, UINT64_MAX, 1, c), 2 * PM_LEVELS * c);
	ck_assert_uint_ge(pagemap_fill_bound(0, PM_MAX_INDEX, 1, c), PM_LEVELS * c);
	/* k entries: at most a path each. */
	for (uint64_t k = 1; k < 100000; k = k * 3 + 1)
		ck_assert_uint_le(pagemap_fill_bound(0, PM_MAX_INDEX, k, c),
				  PM_LEVELS * (k + 1) * c);
	/* A dense fill costs about a node per 64 entries, not a path per entry. */
	for (uint64_t k = 64; k <= (1ull << 24); k *= 8) {
		ck_assert_uint_le(pagemap_fill_bound(0, k - 1, k, c), (k / 32 + 3 * PM_LEVELS) * c);
		ck_assert_uint_le(pagemap_fill_bound(1ull << 40, (1ull << 40) + k - 1, k, c),
				  (k / 32 + 3 * PM_LEVELS) * c);
	}
	/* It scales with node_cost. */
	ck_assert_uint_eq(pagemap_fill_bound(3, 1000, 50, 2 * c), 2 * pagemap_fill_bound(3, 1000, 50, c));
	ck_assert_uint_eq(pagemap_fill_bound(5, 4, 1, c), 0);
}
END_TEST

/* The levels a map needs to hold index i: the nodes on its path. */
static unsigned levels_for(uint64_t i)
{
	unsigned h = 1;

	while (h * PM_SHIFT < 64 && (i >> (h * PM_SHIFT)) != 0)
		h++;
	return h;
}

/*
 * A sparse file costs nothing for its holes: a map holding one entry
 * holds the nodes of its path and no more (fallocate of one page at
 * 2^62 bytes should cost one page and those nodes).
 */
START_TEST(pagemap_lone_entry_holds_only_its_path)
{
	const uint64_t idx[] = { 0, 63, 64, 4095, 4096, 1ull << 30, 1ull << 40, 1ull << 50,
				 PM_MAX_INDEX };

	for (unsigned k = 0; k < sizeof(idx) / sizeof(idx[0]); k++) {
		struct pagemap pm;

		pagemap_init(&pm);
		ck_assert_int_eq(pagemap_set(&pm, idx[k], PAGE(1), NULL), 0);
		ck_assert_msg(pm.nnodes == levels_for(idx[k]),
			      "a map holding only index %#llx has %llu nodes, its path is %u",
			      (unsigned long long)idx[k], (unsigned long long)pm.nnodes,
			      levels_for(idx[k]));
		ck_assert_uint_eq(pm.height, levels_for(idx[k]));
		ck_assert_uint_eq(pagemap_get(&pm, idx[k]), PAGE(1));
		pagemap_clear(&pm, idx[k]);
		ck_assert_uint_eq(pm.nnodes, 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pagemap");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 30);

	tcase_add_test(tc, pagemap_get_of_hole_is_zero);
	tcase_add_test(tc, pagemap_set_get_sparse_indices);
	tcase_add_test(tc, pagemap_set_beyond_max_index_is_einval);
	tcase_add_test(tc, pagemap_tags_survive_without_page);
	tcase_add_test(tc, pagemap_clear_prunes_empty_nodes);
	tcase_add_test(tc, pagemap_next_finds_pages_in_order);
	tcase_add_test(tc, pagemap_remove_range_releases_only_the_range);
	tcase_add_test(tc, pagemap_metadata_is_small_for_dense_files);
	tcase_add_test(tc, pagemap_count_of_an_empty_map_is_zero);
	tcase_add_test(tc, pagemap_count_sparse_fixed_indices);
	tcase_add_test(tc, pagemap_count_ranges_wider_than_the_tree);
	tcase_add_test(tc, pagemap_count_matches_brute_force_on_random_maps);
	tcase_add_test(tc, pagemap_fill_bound_is_zero_when_nothing_is_missing);
	tcase_add_test(tc, pagemap_fill_bound_worst_cases);
	tcase_add_test(tc, pagemap_fill_bound_holds_for_random_fills);
	tcase_add_test(tc, pagemap_fill_bound_follows_entries_not_width);
	tcase_add_test(tc, pagemap_lone_entry_holds_only_its_path);
	return utest_run(s);
}
