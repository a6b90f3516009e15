/*
 * reporters.c - a reported purge is never followed by a read of
 * the discarded bytes, however long the kernel takes to drop its pages.
 *
 * The notifier is made slow on purpose: a 1.5 GiB file cached in the page
 * cache and mapped, and a 16 MiB dirty MAP_SHARED mapping, are purged just
 * before one-page files.  Many threads then read user.volatile.purged of
 * the small files and, when it reports the purge, read the file: with
 * purged_read=zero every such read must return zeros.
 *
 * Run through with-mount.sh (VFS_TEST_DIR); needs memory_limit >= 3G.
 * VFS_REPORTERS_BIG_MIB makes the slow file smaller (default 1536).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mtest.h"

#define PG 4096
/* The slow file: 1.5 GiB, or VFS_REPORTERS_BIG_MIB (the ThreadSanitizer run uses less). */
static uint64_t big_size(void)
{
	const char *e = getenv("VFS_REPORTERS_BIG_MIB");
	uint64_t mib = e ? strtoull(e, NULL, 10) : 0;

	return (mib ? mib : 1536) << 20;
}

#define BIG_SIZE big_size()
#define DIRTY_SIZE (16ull << 20)
#define CHUNK (4ull << 20)

static char root_dir[PATH_MAX];

struct big {
	int fd, dfd;
	void *map, *dmap;
};

static void set_all(const char *path, const char *name)
{
	CHECK(setxattr(path, name, "all", 3, 0));
}

/* A 1.5 GiB file, in the page cache and mapped; a 16 MiB file with a dirty shared mapping. */
static void make_slow(struct big *b)
{
	char *buf = xmalloc(CHUNK);
	volatile char sink = 0;

	memset(buf, 0xa5, CHUNK);
	b->fd = CHECK(open("big", O_RDWR | O_CREAT | O_TRUNC, 0644));
	for (uint64_t off = 0; off < BIG_SIZE; off += CHUNK)
		pwrite_all(b->fd, buf, CHUNK, (off_t)off);
	for (uint64_t off = 0; off < BIG_SIZE; off += CHUNK)
		pread_all(b->fd, buf, CHUNK, (off_t)off);
	b->map = mmap(NULL, BIG_SIZE, PROT_READ, MAP_SHARED, b->fd, 0);
	ck_assert_msg(b->map != MAP_FAILED, "mmap big: %s", errname(errno));
	for (uint64_t off = 0; off < BIG_SIZE; off += PG)
		sink += ((char *)b->map)[off];
	(void)sink;

	b->dfd = CHECK(open("dirty", O_RDWR | O_CREAT | O_TRUNC, 0644));
	for (uint64_t off = 0; off < DIRTY_SIZE; off += CHUNK)
		pwrite_all(b->dfd, buf, CHUNK, (off_t)off);
	b->dmap = mmap(NULL, DIRTY_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, b->dfd, 0);
	ck_assert_msg(b->dmap != MAP_FAILED, "mmap dirty: %s", errname(errno));
	set_all("big", "user.volatile.mark");
	set_all("dirty", "user.volatile.mark");
	for (uint64_t off = 0; off < DIRTY_SIZE; off += PG)
		((char *)b->dmap)[off] = 0x5a;
	free(buf);
}

static void drop_slow(struct big *b)
{
	munmap(b->map, BIG_SIZE);
	munmap(b->dmap, DIRTY_SIZE);
	close(b->fd);
	close(b->dfd);
}

static void *purge_thread(void *arg)
{
	setxattr((const char *)arg, "user.volatile.purge", "all", 3, 0);
	return NULL;
}

struct reporter {
	pthread_t thread;
	const char *path;
	bool reported, stale;
	int err;
};

/* The start signal: reporters sleep on it (spinning starved the purgers on a loaded machine). */
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static bool go;

static void set_go(bool v)
{
	pthread_mutex_lock(&go_lock);
	go = v;
	pthread_cond_broadcast(&go_cond);
	pthread_mutex_unlock(&go_lock);
}

static void *reporter_main(void *arg)
{
	struct reporter *r = arg;
	char v[256], page[PG];
	double end;
	int fd;

	pthread_mutex_lock(&go_lock);
	while (!go)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
	end = now_s() + 20;
	while (now_s() < end) {
		ssize_t n = getxattr(r->path, "user.volatile.purged", v, sizeof(v));

		if (n < 0) {
			r->err = errno;
			return NULL;
		}
		if (n > 0)
			break;
	}
	if (now_s() >= end)
		return NULL;
	r->reported = true;
	fd = open(r->path, O_RDONLY);
	if (fd < 0) {
		r->err = errno;
		return NULL;
	}
	if (pread(fd, page, PG, 0) != PG)
		r->err = errno ? errno : EIO;
	for (int i = 0; i < PG; i++)
		if (page[i] != 0) {
			r->stale = true;
			break;
		}
	close(fd);
	return NULL;
}

/* nfiles one-page files, cached, marked; the slow files purged, then these, while
 * nthreads reporters (spread over the files) wait for the report and read. */
static void run_case(int nfiles, int nthreads)
{
	struct big b;
	char (*names)[32] = xmalloc((size_t)nfiles * 32);
	struct reporter *r = xmalloc((size_t)nthreads * sizeof(*r));
	pthread_t *pt = xmalloc((size_t)(nfiles + 2) * sizeof(*pt));
	char page[PG];
	int reported = 0, stale = 0;

	memset(r, 0, (size_t)nthreads * sizeof(*r));
	make_slow(&b);
	memset(page, 0x3c, PG);
	for (int i = 0; i < nfiles; i++) {
		int fd;

		snprintf(names[i], 32, "small%d", i);
		fd = CHECK(open(names[i], O_RDWR | O_CREAT | O_TRUNC, 0644));
		pwrite_all(fd, page, PG, 0);
		pread_all(fd, page, PG, 0); /* in the page cache */
		close(fd);
		set_all(names[i], "user.volatile.mark");
	}
	set_go(false);
	for (int i = 0; i < nthreads; i++) {
		r[i].path = names[i % nfiles];
		ck_assert_int_eq(pthread_create(&r[i].thread, NULL, reporter_main, &r[i]), 0);
	}
	ck_assert_int_eq(pthread_create(&pt[0], NULL, purge_thread, "big"), 0);
	ck_assert_int_eq(pthread_create(&pt[1], NULL, purge_thread, "dirty"), 0);
	nap_ms(50);
	for (int i = 0; i < nfiles; i++)
		ck_assert_int_eq(pthread_create(&pt[2 + i], NULL, purge_thread, names[i]), 0);
	set_go(true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(r[i].thread, NULL);
	for (int i = 0; i < nfiles + 2; i++)
		pthread_join(pt[i], NULL);
	for (int i = 0; i < nthreads; i++) {
		ck_assert_msg(r[i].err == 0, "reporter %d on %s: %s", i, r[i].path,
			      errname(r[i].err));
		reported += r[i].reported;
		stale += r[i].stale;
	}
	drop_slow(&b);
	free(pt);
	free(r);
	free(names);
	ck_assert_msg(reported > 0, "no reporter saw a purge");
	ck_assert_msg(stale == 0, "%d of %d reporters saw the purge reported and then read "
		      "the old bytes", stale, reported);
}

START_TEST(test_24_reporters_one_file)
{
	run_case(1, 24);
}
END_TEST

START_TEST(test_200_reporters_50_files)
{
	run_case(50, 200);
}
END_TEST

/*
 * POLLPRI is up only once the kernel dropped the purged pages: a file of
 * 256 MiB, cached and mapped (its invalidation takes a while), is purged
 * while a thread polls it; as soon as POLLPRI shows, every page of the
 * mapping must read as zeros.
 */
#define POLLED_SIZE (256ull << 20)

struct poller {
	int fd;
	const unsigned char *map;
	bool seen;
	uint64_t stale_pages;
};

static void *poller_main(void *arg)
{
	struct poller *p = arg;
	double end = now_s() + 20;

	while (now_s() < end) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLPRI };

		/* Without waiting: a poll that lands between the purge and
		 * the invalidation must not see POLLPRI. */
		if (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLPRI)) {
			p->seen = true;
			break;
		}
	}
	if (!p->seen)
		return NULL;
	/* From the end: the kernel drops pages from the start. */
	for (uint64_t off = POLLED_SIZE; off > 0; off -= PG)
		if (p->map[off - PG] != 0)
			p->stale_pages++;
	return NULL;
}

START_TEST(test_pollpri_then_mmap)
{
	char *buf = xmalloc(CHUNK);
	struct poller p = { 0 };
	pthread_t t;
	void *map;
	int fd;

	memset(buf, 0x7e, CHUNK);
	fd = CHECK(open("polled", O_RDWR | O_CREAT | O_TRUNC, 0644));
	for (uint64_t off = 0; off < POLLED_SIZE; off += CHUNK)
		pwrite_all(fd, buf, CHUNK, (off_t)off);
	map = mmap(NULL, POLLED_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_msg(map != MAP_FAILED, "mmap: %s", errname(errno));
	for (uint64_t off = 0; off < POLLED_SIZE; off += PG)
		ck_assert_int_eq(((unsigned char *)map)[off], 0x7e);
	set_all("polled", "user.volatile.mark");
	p.fd = fd;
	p.map = map;
	ck_assert_int_eq(pthread_create(&t, NULL, poller_main, &p), 0);
	nap_ms(100); /* the poller is waiting */
	set_all("polled", "user.volatile.purge");
	pthread_join(t, NULL);
	ck_assert_msg(p.seen, "no POLLPRI after the purge");
	ck_assert_msg(p.stale_pages == 0, "POLLPRI was up while %" PRIu64 " mapped pages still "
		      "showed the purged bytes", p.stale_pages);
	munmap(map, POLLED_SIZE);
	close(fd);
	free(buf);
}
END_TEST

static uint64_t files_unlinked(void)
{
	char *stats = xattr_get(root_dir, "user.volatile.stats");
	uint64_t n = stats_key(stats, "files_unlinked_total");

	free(stats);
	return n;
}

/*
 * auto=unlink: once a purge of the whole mount has returned, the old name
 * of a purged file opens no more (ENOENT), even through the dentry the
 * kernel cached, and O_CREAT makes a new file whose bytes read back.  The
 * notifier is slow (a mapped 1.5 GiB file is purged in the same call).
 * close(2) returns before the kernel's RELEASE reaches the daemon, and an
 * open file keeps its name (DESIGN section 8): purge again until a purge
 * took the file (files_unlinked_total), then open it at once (once
 * under stress-ng, ASan: the first purge came before the RELEASE).
 */
START_TEST(test_auto_unlink_open_after_purge)
{
	struct big b;
	char got[16] = { 0 };
	uint64_t unlinked;
	struct stat st;
	int fd;

	make_slow(&b);
	CHECK(mkdir("cache", 0755));
	CHECK(setxattr("cache", "user.volatile.auto", "unlink", 6, 0));
	fd = CHECK(open("cache/entry", O_RDWR | O_CREAT | O_TRUNC, 0644));
	pwrite_all(fd, "old", 3, 0);
	close(fd);
	CHECK(stat("cache/entry", &st)); /* the kernel caches the dentry */
	unlinked = files_unlinked();
	for (double t0 = now_s(); files_unlinked() == unlinked; nap_ms(10)) {
		ck_assert_msg(now_s() - t0 < 30, "30 s after its close, a purge still kept the file");
		CHECK(setxattr(root_dir, "user.volatile.purge", "all", 3, 0));
	}
	ASSERT_ERRNO(open("cache/entry", O_RDONLY), ENOENT);
	fd = CHECK(open("cache/entry", O_WRONLY | O_CREAT, 0644));
	pwrite_all(fd, "new", 3, 0);
	close(fd);
	fd = CHECK(open("cache/entry", O_RDONLY));
	ck_assert_int_eq(pread(fd, got, sizeof(got), 0), 3);
	ck_assert_str_eq(got, "new");
	close(fd);
	drop_slow(&b);
}
END_TEST

static Suite *reporters_suite(void)
{
	Suite *s = suite_create("reporters");
	TCase *tc = mtest_tcase(s, "reporters", mtest_setup, mtest_teardown, 60);

	tcase_add_test(tc, test_24_reporters_one_file);
	tcase_add_test(tc, test_200_reporters_50_files);
	tcase_add_test(tc, test_pollpri_then_mmap);
	tcase_add_test(tc, test_auto_unlink_open_after_purge);
	return s;
}

int main(void)
{
	if (!mtest_find_mount("reporters", root_dir))
		return 1;
	if (!mtest_make_run_dir("reporters", root_dir))
		return 1;
	return mtest_run(reporters_suite());
}
