/*
 * test_tbuf.c - the per-thread scratch buffer (tbuf.h): it grows and
 * keeps its bytes, shrinks past a size on request, and each thread has
 * its own.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tbuf.h"
#include "utest.h"

START_TEST(grows_and_keeps_its_bytes)
{
	char *a = tbuf_get(100), *b;

	ck_assert_ptr_nonnull(a);
	memset(a, 'x', 100);
	b = tbuf_get(50); /* smaller: the same buffer */
	ck_assert_ptr_eq(a, b);
	b = tbuf_get(1 << 20); /* larger: room, the old bytes kept */
	ck_assert_ptr_nonnull(b);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(b[i], 'x');
	memset(b, 'y', 1 << 20);
	tbuf_release();
}
END_TEST

START_TEST(shrink_gives_back_only_past_keep)
{
	char *a = tbuf_get(1000);

	memset(a, 'z', 1000);
	tbuf_shrink(1 << 20); /* under keep: kept */
	ck_assert_ptr_eq(tbuf_get(1000), a);
	ck_assert_int_eq(a[999], 'z');
	tbuf_get(1 << 20);
	tbuf_shrink(16 << 10); /* past keep: given back, a fresh one next */
	ck_assert_ptr_nonnull(tbuf_get(10));
	tbuf_release();
	tbuf_release(); /* twice: nothing left to free */
}
END_TEST

static void *other(void *arg)
{
	char *mine = tbuf_get(64);

	(void)arg;
	memset(mine, 'o', 64);
	return mine; /* freed when this thread ends (ASan sees a leak if not) */
}

START_TEST(each_thread_has_its_own)
{
	char *a = tbuf_get(64), *theirs;
	pthread_t t;

	memset(a, 'm', 64);
	ck_assert_int_eq(pthread_create(&t, NULL, other, NULL), 0);
	ck_assert_int_eq(pthread_join(t, (void **)&theirs), 0);
	ck_assert_ptr_ne(theirs, a);
	ck_assert_int_eq(a[63], 'm');
	tbuf_release();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tbuf");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 0);

	tcase_add_test(tc, grows_and_keeps_its_bytes);
	tcase_add_test(tc, shrink_gives_back_only_past_keep);
	tcase_add_test(tc, each_thread_has_its_own);
	return utest_run(s);
}
