/*
 * recency.c - DESIGN section 4: "reads that the kernel
 * serves from its page cache or through mmap count too: a unit that is
 * being read is not the coldest, however the read reaches it".
 *
 * Three files of 1 MiB are written and marked whole in the order A, M, B,
 * so that A is the coldest by marking.  A is then read only through the
 * page cache (pread of an open file whose pages the kernel holds), M only
 * through a shared mapping, and B not at all.  The daemon sees none of
 * those reads until its probe (evict_probe) drops the kernel's copy of a
 * cold unit; the next read then reaches it.  The test reads until it has
 * seen each of A and M dropped from the page cache once (mincore) and
 * read it again after that, then purges 4096 bytes on the root: the
 * coldest unit is B's, and A and M must keep their data.
 *
 * Run through with-mount.sh (VFS_TEST_DIR), with a limit no purge of its
 * own reaches.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mtest.h"

#define PG 4096
#define FSIZE (1u << 20)

static char root_dir[PATH_MAX];

/* A file of FSIZE bytes that are all byte, read back so that its pages are in the page
 * cache; returns an O_RDWR descriptor. */
static int make_cached_file(const char *name, int byte)
{
	char *buf = xmalloc(FSIZE);
	int fd = make_file_filled(name, FSIZE, byte);

	pread_all(fd, buf, FSIZE, 0);
	free(buf);
	return fd;
}

/* Is any page of the mapping out of the page cache? */
static bool some_page_dropped(void *map)
{
	unsigned char vec[FSIZE / PG];

	CHECK(mincore(map, FSIZE, vec));
	for (size_t i = 0; i < sizeof(vec); i++)
		if (!(vec[i] & 1))
			return true;
	return false;
}

/* Every page of M through its mapping, which checks what it reads. */
static void read_m(const unsigned char *map)
{
	unsigned sum = 0;

	for (size_t off = 0; off < FSIZE; off += PG)
		sum += map[off];
	ck_assert_uint_eq(sum, (FSIZE / PG) * 0xb2u);
}

static void expect_purged(const char *name, bool purged)
{
	char v[256];
	ssize_t n = CHECK(getxattr(name, "user.volatile.purged", v, sizeof(v)));

	ck_assert_msg((n > 0) == purged, "%s: user.volatile.purged is \"%.*s\", expected %s",
		      name, (int)n, v, purged ? "a range" : "nothing");
}

START_TEST(test_kernel_reads_count)
{
	int fa = make_cached_file("A", 0xa1), fm = make_cached_file("M", 0xb2);
	int fb = make_cached_file("B", 0xc3);
	unsigned char *mapa, *mapm;
	bool a_done = false, m_done = false;
	char *buf = xmalloc(FSIZE);
	double end;

	CHECK(setxattr("A", "user.volatile.mark", "all", 3, 0));
	CHECK(setxattr("M", "user.volatile.mark", "all", 3, 0));
	CHECK(setxattr("B", "user.volatile.mark", "all", 3, 0));
	/* A's mapping is only looked at with mincore, never read. */
	mapa = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, fa, 0);
	mapm = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, fm, 0);
	ck_assert(mapa != MAP_FAILED && mapm != MAP_FAILED);

	/*
	 * A drop is looked for right before and right after each read
	 * pass: one that lands inside a pass leaves the pages read before
	 * it out of the cache, so the check after the pass sees it (a
	 * single check before the pass missed such drops; the unit then
	 * became the warmest unseen, B took the probe's window of one unit
	 * and no drop came again).  One more pass after the loop reads each
	 * file after its last drop.
	 */
	end = now_s() + 60;
	while (!(a_done && m_done)) {
		ck_assert_msg(now_s() < end, "in 60 s the daemon never dropped the kernel's copy "
			      "of %s", a_done ? "M" : "A");
		a_done |= some_page_dropped(mapa);
		pread_all(fa, buf, FSIZE, 0);
		a_done |= some_page_dropped(mapa);
		m_done |= some_page_dropped(mapm);
		read_m(mapm);
		m_done |= some_page_dropped(mapm);
		nap_ms(20);
	}
	pread_all(fa, buf, FSIZE, 0);
	read_m(mapm);
	CHECK(setxattr(root_dir, "user.volatile.purge", "4096", 4, 0));
	expect_purged("B", true);
	expect_purged("A", false);
	expect_purged("M", false);
	pread_all(fa, buf, FSIZE, 0);
	for (size_t i = 0; i < FSIZE; i++)
		ck_assert_uint_eq((unsigned char)buf[i], 0xa1);
	munmap(mapa, FSIZE);
	munmap(mapm, FSIZE);
	close(fa);
	close(fm);
	close(fb);
	free(buf);
}
END_TEST

static Suite *recency_suite(void)
{
	Suite *s = suite_create("recency");
	TCase *tc = mtest_tcase(s, "recency", mtest_setup, mtest_teardown, 90);

	tcase_add_test(tc, test_kernel_reads_count);
	return s;
}

int main(void)
{
	if (!mtest_find_mount("recency", root_dir))
		return 1;
	if (!mtest_make_run_dir("recency", root_dir))
		return 1;
	return mtest_run(recency_suite());
}
