/* Unit tests for the per-file page map (src/daemon/pagemap.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pagemap.h"

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

int main(void)
{
	Suite *s = suite_create("pagemap");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, pagemap_get_of_hole_is_zero);
	tcase_add_test(tc, pagemap_set_get_sparse_indices);
	tcase_add_test(tc, pagemap_set_beyond_max_index_is_einval);
	tcase_add_test(tc, pagemap_tags_survive_without_page);
	tcase_add_test(tc, pagemap_clear_prunes_empty_nodes);
	tcase_add_test(tc, pagemap_next_finds_pages_in_order);
	tcase_add_test(tc, pagemap_remove_range_releases_only_the_range);
	tcase_add_test(tc, pagemap_metadata_is_small_for_dense_files);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
