/* Unit tests for the page arena (src/daemon/arena.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

START_TEST(arena_alloc_gives_aligned_zeroed_pages)
{
	struct arena a;
	char *p;

	ck_assert_int_eq(arena_init(&a), 0);
	p = arena_alloc(&a);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % ARENA_PAGE_SIZE, 0);
	for (unsigned i = 0; i < ARENA_PAGE_SIZE; i++)
		ck_assert_int_eq(p[i], 0);
	ck_assert_uint_eq(arena_pages(&a), 1);
	arena_destroy(&a);
}
END_TEST

START_TEST(arena_freed_page_reads_zero_when_reused)
{
	struct arena a;
	char *p, *q;

	ck_assert_int_eq(arena_init(&a), 0);
	p = arena_alloc(&a);
	memset(p, 0xab, ARENA_PAGE_SIZE);
	arena_free(&a, p);
	ck_assert_uint_eq(arena_pages(&a), 0);
	q = arena_alloc(&a);
	ck_assert_ptr_eq(p, q); /* the free stack is reused first */
	for (unsigned i = 0; i < ARENA_PAGE_SIZE; i++)
		ck_assert_int_eq(q[i], 0);
	arena_destroy(&a);
}
END_TEST

START_TEST(arena_grows_past_one_chunk)
{
	struct arena a;
	size_t n = ARENA_CHUNK_BYTES / ARENA_PAGE_SIZE + 10;
	void **v = calloc(n, sizeof(*v));

	ck_assert_int_eq(arena_init(&a), 0);
	for (size_t i = 0; i < n; i++) {
		v[i] = arena_alloc(&a);
		ck_assert_ptr_nonnull(v[i]);
	}
	ck_assert_uint_eq(a.nchunks, 2);
	ck_assert_uint_eq(arena_pages(&a), n);
	arena_free_batch(&a, v, n);
	ck_assert_uint_eq(arena_pages(&a), 0);
	ck_assert_uint_eq(a.nfree, n);
	free(v);
	arena_destroy(&a);
}
END_TEST

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size, res = -1;

	if (f && fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	if (f)
		fclose(f);
	return res * 4;
}

START_TEST(arena_free_returns_memory_to_the_kernel)
{
	struct arena a;
	size_t n = (32u << 20) / ARENA_PAGE_SIZE;
	void **v = calloc(n, sizeof(*v));
	long before, full, after;

	ck_assert_int_eq(arena_init(&a), 0);
	before = rss_kb();
	for (size_t i = 0; i < n; i++) {
		v[i] = arena_alloc(&a);
		memset(v[i], 1, ARENA_PAGE_SIZE);
	}
	full = rss_kb();
	ck_assert_int_ge(full - before, 30 * 1024);
	arena_free_batch(&a, v, n);
	after = rss_kb();
	ck_assert_int_le(after - before, 2 * 1024);
	free(v);
	arena_destroy(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arena");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, arena_alloc_gives_aligned_zeroed_pages);
	tcase_add_test(tc, arena_freed_page_reads_zero_when_reused);
	tcase_add_test(tc, arena_grows_past_one_chunk);
	tcase_add_test(tc, arena_free_returns_memory_to_the_kernel);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
