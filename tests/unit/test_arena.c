/* Unit tests for the page arena (src/daemon/arena.c). */
#include <check.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include "arena.h"
#include "utest.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() RUNNING_ON_VALGRIND
#else
#define UNDER_VALGRIND() 0
#endif

/* Root on Linux 5.11+ outside valgrind: the arena must have its
 * userfaultfd (UFFDIO_COPY), not fall back to faulting pages in. */
static bool uffd_expected(void)
{
	return geteuid() == 0 && !UNDER_VALGRIND();
}

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
	/*
	 * Count the freed pages that are still resident, with mincore(), not
	 * the process's RSS: a sanitizer's shadow of the range (an eighth of it
	 * under ASan) stays resident and is not the arena's.
	 */
	after = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char in = 0;

		ck_assert_int_eq(mincore(v[i], ARENA_PAGE_SIZE, &in), 0);
		after += in & 1;
	}
	ck_assert_int_le(after, (2 * 1024) / 4);
	free(v);
	arena_destroy(&a);
}
END_TEST

/*
 * A batch: sorted, distinct, zeroed and resident (mincore) at once,
 * counted; freed pages come back in it, and a batch may span chunks.
 */
START_TEST(arena_alloc_many_gives_resident_sorted_pages)
{
	struct arena a;
	size_t per_chunk = ARENA_CHUNK_BYTES / ARENA_PAGE_SIZE;
	void *v[300], *w[300];
	unsigned char inc;

	ck_assert_int_eq(arena_init(&a), 0);
	ck_assert_uint_eq(arena_alloc_many(&a, v, 300), 300);
	ck_assert_uint_eq(arena_pages(&a), 300);
	for (size_t i = 0; i < 300; i++) {
		ck_assert_uint_eq((uintptr_t)v[i] % ARENA_PAGE_SIZE, 0);
		if (i)
			ck_assert((char *)v[i - 1] < (char *)v[i]);
		ck_assert_int_eq(mincore(v[i], ARENA_PAGE_SIZE, &inc), 0);
		ck_assert_msg(inc & 1, "page %zu not resident", i);
		ck_assert_int_eq(((char *)v[i])[0], 0);
		ck_assert_int_eq(((char *)v[i])[ARENA_PAGE_SIZE - 1], 0);
		memset(v[i], 0x5a, ARENA_PAGE_SIZE);
	}
	/* Freed pages are handed out again, zeroed and resident. */
	memcpy(w, v, sizeof(v));
	arena_free_batch(&a, w, 100);
	ck_assert_uint_eq(arena_pages(&a), 200);
	ck_assert_uint_eq(arena_alloc_many(&a, w, 100), 100);
	for (size_t i = 0; i < 100; i++) {
		ck_assert_ptr_eq(w[i], v[i]);
		ck_assert_int_eq(mincore(w[i], ARENA_PAGE_SIZE, &inc), 0);
		ck_assert(inc & 1);
		ck_assert_int_eq(((char *)w[i])[17], 0);
	}
	/* Across the end of the first chunk. */
	for (size_t left = per_chunk - 300; left > 0;) {
		size_t n = left < 300 ? left - 1 : 300;

		if (n == 0)
			break;
		ck_assert_uint_eq(arena_alloc_many(&a, w, n), n);
		left -= n;
	}
	ck_assert_uint_eq(a.nchunks, 1);
	ck_assert_uint_eq(arena_alloc_many(&a, w, 10), 10);
	ck_assert_uint_eq(a.nchunks, 2);
	ck_assert_uint_eq(arena_pages(&a), per_chunk + 9);
	arena_destroy(&a);
}
END_TEST

/*
 * Scattered pages freed in one batch (one process_madvise call for many
 * runs where the kernel has it): the freed ones leave memory and read
 * zeros when handed out again, the others keep their bytes.
 */
START_TEST(arena_free_scattered_batch)
{
	struct arena a;
	void *v[400], *freed[200], *again[200];

	ck_assert_int_eq(arena_init(&a), 0);
	ck_assert_uint_eq(arena_alloc_many(&a, v, 400), 400);
	for (size_t i = 0; i < 400; i++)
		memset(v[i], 0x40 + (int)(i % 7), ARENA_PAGE_SIZE);
	for (size_t i = 0; i < 200; i++)
		freed[i] = v[2 * i + 1];
	arena_free_batch(&a, freed, 200);
	for (size_t i = 0; i < 400; i++) {
		unsigned char in = 0;

		ck_assert_int_eq(mincore(v[i], ARENA_PAGE_SIZE, &in), 0);
		if (i % 2) {
			ck_assert_msg(!(in & 1), "freed page %zu is still resident", i);
		} else {
			ck_assert_msg(in & 1, "kept page %zu left memory", i);
			ck_assert_int_eq(((unsigned char *)v[i])[100], 0x40 + (int)(i % 7));
		}
	}
	ck_assert_uint_eq(arena_alloc_many(&a, again, 200), 200);
	for (size_t i = 0; i < 200; i++)
		ck_assert_int_eq(((char *)again[i])[ARENA_PAGE_SIZE / 2], 0);
	arena_destroy(&a);
}
END_TEST

/*
 * The daemon sets its arena up and then forks (fuse_daemonize): a batch
 * freed in the child must never advise the parent's memory.
 */
START_TEST(arena_free_after_fork_spares_the_parent)
{
	struct arena a;
	void *v[96], *odd[32], *first[16];
	pid_t pid;
	int status;

	ck_assert_int_eq(arena_init(&a), 0);
	ck_assert_uint_eq(arena_alloc_many(&a, v, 96), 96);
	for (size_t i = 0; i < 96; i++)
		memset(v[i], 0x77, ARENA_PAGE_SIZE);
	for (size_t i = 0; i < 32; i++)
		odd[i] = v[2 * i + 1];
	/* A batch freed before the fork opens the parent's pidfd. */
	for (size_t i = 0; i < 16; i++)
		first[i] = v[64 + 2 * i];
	arena_free_batch(&a, first, 16);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		bool batched = !a.no_batch_advice; /* the kernel took the parent's batch */

		arena_free_batch(&a, odd, 32);
		if (((char *)odd[5])[9] != 0)
			_exit(1);
		/* ... and the child's, through a pidfd of its own */
		_exit(batched && a.no_batch_advice ? 2 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	for (size_t i = 0; i < 64; i++)
		ck_assert_int_eq(((unsigned char *)v[i])[9], 0x77);
	arena_destroy(&a);
}
END_TEST

/*
 * arena_fill: taken pages made resident holding the data given, a run of
 * them in one call, or zeros; reused (freed) pages likewise.  Run both
 * with the userfaultfd (UFFDIO_COPY) and with it refused (faulting).
 */
static void check_fill(bool refuse)
{
	struct arena a;
	void *v[64], *w[8];
	char *src = malloc(64 * ARENA_PAGE_SIZE);
	unsigned char inc;

	ck_assert_ptr_nonnull(src);
	for (size_t i = 0; i < 64 * ARENA_PAGE_SIZE; i++)
		src[i] = (char)(i * 7 + i / ARENA_PAGE_SIZE);
	ck_assert_int_eq(arena_init(&a), 0);
	a.uffd_refused = refuse;
	ck_assert_uint_eq(arena_take_many(&a, v, 64), 64);
	ck_assert_uint_eq(arena_pages(&a), 64);
	if (refuse)
		ck_assert_int_lt(a.uffd, 0);
	else if (uffd_expected())
		ck_assert_int_ge(a.uffd, 0);
	/* A fresh chunk: the pages are one run. */
	ck_assert_ptr_eq((char *)v[63], (char *)v[0] + 63 * ARENA_PAGE_SIZE);
	ck_assert_int_eq(arena_fill(&a, v[0], src, 48 * ARENA_PAGE_SIZE), 0);
	ck_assert_int_eq(arena_fill(&a, v[48], NULL, 16 * ARENA_PAGE_SIZE), 0);
	for (size_t i = 0; i < 64; i++) {
		ck_assert_int_eq(mincore(v[i], ARENA_PAGE_SIZE, &inc), 0);
		ck_assert_msg(inc & 1, "filled page %zu not resident", i);
	}
	ck_assert_int_eq(memcmp(v[0], src, 48 * ARENA_PAGE_SIZE), 0);
	for (size_t i = 48 * ARENA_PAGE_SIZE; i < 64 * ARENA_PAGE_SIZE; i++)
		ck_assert_int_eq(((char *)v[0])[i], 0);
	/* Freed pages, taken again, filled page by page. */
	memcpy(w, v + 8, sizeof(w));
	arena_free_batch(&a, w, 8);
	ck_assert_uint_eq(arena_take_many(&a, w, 8), 8);
	for (size_t i = 0; i < 8; i++) {
		ck_assert_ptr_eq(w[i], v[8 + i]);
		ck_assert_int_eq(arena_fill(&a, w[i], i % 2 ? NULL : src + 50 * ARENA_PAGE_SIZE,
					    ARENA_PAGE_SIZE), 0);
	}
	for (size_t i = 0; i < 8; i++)
		ck_assert_int_eq(((char *)w[i])[100], i % 2 ? 0 : src[50 * ARENA_PAGE_SIZE + 100]);
	ck_assert_uint_eq(arena_stray_faults(&a), 0);
	arena_destroy(&a);
	free(src);
}

START_TEST(arena_fill_with_userfaultfd)
{
	check_fill(false);
}
END_TEST

START_TEST(arena_fill_by_faulting)
{
	check_fill(true);
}
END_TEST

/*
 * A page touched while not handed out (a bug elsewhere) reads zeros and
 * never hangs: the fault thread answers it, and counts it.  Handed out
 * again, the page (resident now) is filled all the same.
 */
START_TEST(arena_stray_fault_reads_zeros)
{
	struct arena a;
	void *v[4], *w;
	char buf[ARENA_PAGE_SIZE];

	ck_assert_int_eq(arena_init(&a), 0);
	ck_assert_uint_eq(arena_alloc_many(&a, v, 4), 4);
	memset(v[2], 0x33, ARENA_PAGE_SIZE);
	w = v[2];
	arena_free(&a, w);
	ck_assert_int_eq(((volatile char *)v[2])[10], 0);
	if (a.uffd >= 0)
		ck_assert_uint_eq(arena_stray_faults(&a), 1);
	else
		ck_assert(!uffd_expected());
	memset(buf, 0x44, sizeof(buf));
	ck_assert_uint_eq(arena_take_many(&a, &w, 1), 1);
	ck_assert_ptr_eq(w, v[2]);
	ck_assert_int_eq(arena_fill(&a, w, buf, ARENA_PAGE_SIZE), 0);
	ck_assert_int_eq(memcmp(w, buf, ARENA_PAGE_SIZE), 0);
	arena_free(&a, w);
	ck_assert_uint_eq(arena_take_many(&a, &w, 1), 1);
	ck_assert_int_eq(arena_fill(&a, w, NULL, ARENA_PAGE_SIZE), 0);
	ck_assert_int_eq(((char *)w)[4000], 0);
	arena_destroy(&a);
}
END_TEST

/*
 * After a fork the child's chunks are no longer registered (the
 * userfaultfd is the parent's): the child fills by faulting, then sets up
 * its own userfaultfd at its next chunk and registers every chunk again.
 */
START_TEST(arena_fill_after_fork)
{
	struct arena a;
	void *v[8];
	pid_t pid;
	int status;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* GCC 12's AddressSanitizer does not hand its allocator over a fork
	 * cleanly while another thread (the fault thread) runs: the child's
	 * first allocation in a new thread blocked on an allocator lock in 3
	 * of 15 runs; ThreadSanitizer refuses new threads after such a fork.
	 * The normal build runs this test. */
	return;
#endif
	ck_assert_int_eq(arena_init(&a), 0);
	ck_assert_uint_eq(arena_alloc_many(&a, v, 8), 8);
	memset(v[0], 0x11, ARENA_PAGE_SIZE);
	arena_free_batch(&a, v + 4, 4);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		size_t per_chunk = ARENA_CHUNK_BYTES / ARENA_PAGE_SIZE;
		char data[ARENA_PAGE_SIZE];
		void *w[4], *x;

		memset(data, 0x22, sizeof(data));
		/* Freed pages of the parent's chunk, filled by faulting. */
		if (arena_take_many(&a, w, 4) != 4 || arena_fill(&a, w[0], data, sizeof(data)) ||
		    arena_fill(&a, w[1], NULL, 3 * ARENA_PAGE_SIZE) || memcmp(w[0], data, sizeof(data)) ||
		    ((char *)w[3])[5] != 0)
			_exit(1);
		/* A new chunk: a userfaultfd of the child's own. */
		for (size_t left = per_chunk - 8; left > 0; left--)
			if (!arena_alloc(&a))
				_exit(2);
		if (!(x = arena_alloc(&a)) || a.nchunks != 2)
			_exit(3);
		if (uffd_expected() && (a.uffd < 0 || a.uffd_pid != getpid()))
			_exit(4);
		/* Both chunks answer: data in, and a stray touch reads zeros. */
		arena_free(&a, w[0]);
		if (((volatile char *)w[0])[1] != 0 || ((char *)x)[77] != 0)
			_exit(5);
		if (uffd_expected() && arena_stray_faults(&a) != 1)
			_exit(6);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	ck_assert_int_eq(((unsigned char *)v[0])[9], 0x11);
	arena_destroy(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arena");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 0);

	tcase_add_test(tc, arena_alloc_gives_aligned_zeroed_pages);
	tcase_add_test(tc, arena_freed_page_reads_zero_when_reused);
	tcase_add_test(tc, arena_grows_past_one_chunk);
	tcase_add_test(tc, arena_free_returns_memory_to_the_kernel);
	tcase_add_test(tc, arena_free_scattered_batch);
	tcase_add_test(tc, arena_free_after_fork_spares_the_parent);
	tcase_add_test(tc, arena_alloc_many_gives_resident_sorted_pages);
	tcase_add_test(tc, arena_fill_with_userfaultfd);
	tcase_add_test(tc, arena_fill_by_faulting);
	tcase_add_test(tc, arena_stray_fault_reads_zeros);
	tcase_add_test(tc, arena_fill_after_fork);
	return utest_run(s);
}
