/*
 * Unit tests for file data and memory accounting (src/daemon/file.c,
 * mem.c) through the fs layer, without a mount.
 */
#include <check.h>
#include <sys/mman.h>
#include <errno.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evict.h"
#include "file.h"
#include "fs.h"
#include "meta.h"
#include "pagemap.h"
#include "vol.h"
#include "utest.h"

static struct fs fs;
static struct inode *f;

static void setup(void)
{
	const struct fs_cred cred = { 0, 0 };
	struct stat st;

	utest_fs_init(&fs, 0755, true);
	ck_assert_int_eq(fs_mknod(&fs, fs.root, "f", S_IFREG | 0600, 0, NULL, &cred, &f, &st), 0);
}

static void teardown(void)
{
	utest_fs_destroy(&fs);
}

static void fill_pattern(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)((i * 31 + seed) & 0xff);
}

static int all_zero(const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i])
			return 0;
	return 1;
}

static struct stat st_of(void)
{
	struct stat st;

	fs_getattr(&fs, f, &st);
	return st;
}

START_TEST(write_read_unaligned_across_pages)
{
	size_t n = 3 * 4096 + 123;
	char *in = malloc(n), *out = malloc(n + 10);

	fill_pattern(in, n, 7);
	ck_assert_int_eq(fs_write(&fs, f, 4000, in, n), (ssize_t)n);
	ck_assert_uint_eq(st_of().st_size, 4000 + n);
	ck_assert_int_eq(fs_read(&fs, f, 4000, n + 10, out), (ssize_t)n);
	ck_assert_int_eq(memcmp(in, out, n), 0);
	ck_assert_int_eq(fs_read(&fs, f, 0, 4000, out), 4000);
	ck_assert(all_zero(out, 4000));
	ck_assert_int_eq(fs_read(&fs, f, 4000 + n, 10, out), 0);
	free(in);
	free(out);
}
END_TEST

START_TEST(sparse_file_holds_only_written_pages)
{
	char buf[4096];

	ck_assert_int_eq(fs_write(&fs, f, 1ull << 40, "x", 1), 1);
	ck_assert_uint_eq(st_of().st_size, (1ull << 40) + 1);
	ck_assert_uint_eq(st_of().st_blocks, 8);
	ck_assert_uint_eq(arena_pages(&fs.arena), 1);
	ck_assert_int_eq(fs_read(&fs, f, 1ull << 30, sizeof(buf), buf), sizeof(buf));
	ck_assert(all_zero(buf, sizeof(buf)));
}
END_TEST

/* The arena store as the filesystem sees it through its table (store.h). */
START_TEST(arena_store_reports_fill_and_frees_a_range)
{
	char buf[4096];

	memset(buf, 'x', sizeof(buf));
	ck_assert_ptr_eq(fs.store, &arena_store);
	ck_assert_int_eq(fs_write(&fs, f, 0, buf, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(fs_write(&fs, f, 2 * 4096, buf, sizeof(buf)), sizeof(buf));
	pthread_rwlock_wrlock(&f->lock);
	ck_assert_uint_eq(fs.store->pages_held(f, 0, 2), 2);
	ck_assert_uint_eq(fs.store->pages_held(f, 1, 1), 0);
	ck_assert_uint_eq(fs.store->bytes_held(f), 2 * 4096);
	fs.store->free_range(&fs, f, 0, 0);
	ck_assert_uint_eq(fs.store->pages_held(f, 0, 2), 1);
	ck_assert_uint_eq(fs.store->bytes_held(f), 4096);
	pthread_rwlock_unlock(&f->lock);
	ck_assert_uint_eq(arena_pages(&fs.arena), 1);
	ck_assert_int_eq(fs_read(&fs, f, 0, sizeof(buf), buf), sizeof(buf));
	ck_assert(all_zero(buf, sizeof(buf)));
}
END_TEST

START_TEST(truncate_down_then_up_reads_zeros)
{
	char in[8192], out[8192];
	struct fs_setattr sa = { .valid = FS_SET_SIZE };
	struct stat st;

	fill_pattern(in, sizeof(in), 1);
	ck_assert_int_eq(fs_write(&fs, f, 0, in, sizeof(in)), 8192);
	sa.size = 100;
	ck_assert_int_eq(fs_setattr(&fs, f, &sa, &st), 0);
	ck_assert_uint_eq(st.st_blocks, 8);
	ck_assert_uint_eq(arena_pages(&fs.arena), 1);
	sa.size = 8192;
	ck_assert_int_eq(fs_setattr(&fs, f, &sa, &st), 0);
	ck_assert_int_eq(fs_read(&fs, f, 0, sizeof(out), out), 8192);
	ck_assert_int_eq(memcmp(in, out, 100), 0);
	ck_assert(all_zero(out + 100, 8192 - 100));
}
END_TEST

START_TEST(fallocate_modes)
{
	char out[4096];

	ck_assert_int_eq(fs_fallocate(&fs, f, 0, 0, 3 * 4096), 0);
	ck_assert_uint_eq(st_of().st_size, 3 * 4096);
	ck_assert_uint_eq(st_of().st_blocks, 24);
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_KEEP_SIZE, 3 * 4096, 4096), 0);
	ck_assert_uint_eq(st_of().st_size, 3 * 4096);
	ck_assert_uint_eq(st_of().st_blocks, 32);
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE, 0, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_ZERO_RANGE, 0, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(fs_fallocate(&fs, f, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(fs_read(&fs, f, 0, sizeof(out), out), 4096);
	ck_assert(all_zero(out, sizeof(out)));
}
END_TEST

START_TEST(punch_hole_zeroes_range_and_frees_whole_pages)
{
	size_t n = 4 * 4096;
	char *in = malloc(n), *out = malloc(n);

	fill_pattern(in, n, 3);
	ck_assert_int_eq(fs_write(&fs, f, 0, in, n), (ssize_t)n);
	/* from the middle of page 0 to the middle of page 3 */
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2048,
				      3 * 4096), 0);
	ck_assert_uint_eq(st_of().st_size, n);
	ck_assert_uint_eq(st_of().st_blocks, 16); /* pages 1 and 2 gone */
	ck_assert_int_eq(fs_read(&fs, f, 0, n, out), (ssize_t)n);
	ck_assert_int_eq(memcmp(in, out, 2048), 0);
	ck_assert(all_zero(out + 2048, 3 * 4096));
	ck_assert_int_eq(memcmp(in + 2048 + 3 * 4096, out + 2048 + 3 * 4096, 2048), 0);
	free(in);
	free(out);
}
END_TEST

START_TEST(seek_data_and_hole)
{
	ck_assert_int_eq(fs_write(&fs, f, 0, "a", 1), 1);
	ck_assert_int_eq(fs_write(&fs, f, 1 << 20, "b", 1), 1);
	ck_assert_int_eq(fs_lseek(&fs, f, 0, SEEK_DATA), 0);
	ck_assert_int_eq(fs_lseek(&fs, f, 0, SEEK_HOLE), 4096);
	ck_assert_int_eq(fs_lseek(&fs, f, 4096, SEEK_DATA), 1 << 20);
	ck_assert_int_eq(fs_lseek(&fs, f, 1, SEEK_DATA), 1);
	ck_assert_int_eq(fs_lseek(&fs, f, (1 << 20), SEEK_HOLE), (1 << 20) + 1);
	ck_assert_int_eq(fs_lseek(&fs, f, (1 << 20) + 1, SEEK_HOLE), -ENXIO);
	ck_assert_int_eq(fs_lseek(&fs, f, 1 << 30, SEEK_DATA), -ENXIO);
}
END_TEST

START_TEST(write_over_limit_is_enospc_and_keeps_data)
{
	size_t chunk = 1 << 20;
	char *in = malloc(chunk), *out = malloc(chunk);
	uint64_t off = 0, pages_before;
	ssize_t r;

	/* a limit 16 MiB above what this process holds now */
	mem_set_limit(&fs.mem, mem_rss_kernel(&fs.mem) + (16u << 20));
	for (;;) {
		fill_pattern(in, chunk, (unsigned)(off >> 20));
		r = fs_write(&fs, f, off, in, chunk);
		if (r < 0)
			break;
		ck_assert_int_eq(r, (ssize_t)chunk);
		off += chunk;
		ck_assert_uint_le(off, 16u << 20);
	}
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_uint_ge(off, 8u << 20);
	ck_assert_uint_eq(st_of().st_size, off);
	ck_assert_uint_ge(atomic_load(&fs.mem.enospc_total), 1);
	pages_before = arena_pages(&fs.arena);
	ck_assert_int_eq(fs_write(&fs, f, off, in, chunk), -ENOSPC);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages_before); /* nothing allocated */
	for (uint64_t o = 0; o < off; o += chunk) {
		fill_pattern(in, chunk, (unsigned)(o >> 20));
		ck_assert_int_eq(fs_read(&fs, f, o, chunk, out), (ssize_t)chunk);
		ck_assert_int_eq(memcmp(in, out, chunk), 0);
	}
	/* Overwriting data already held needs no new memory. */
	ck_assert_int_eq(fs_write(&fs, f, 0, in, chunk), (ssize_t)chunk);
	free(in);
	free(out);
}
END_TEST

START_TEST(memory_low_follows_limit_unless_explicit)
{
	mem_set_limit(&fs.mem, 100ull << 20);
	ck_assert_uint_eq(atomic_load(&fs.mem.low), 90ull << 20);
	/* as -o memory_low=80M does */
	atomic_store(&fs.mem.low_explicit, true);
	atomic_store(&fs.mem.low_asked, 80ull << 20);
	mem_set_limit(&fs.mem, 200ull << 20);
	ck_assert_uint_eq(atomic_load(&fs.mem.low), 80ull << 20);
	mem_set_limit(&fs.mem, 50ull << 20);
	ck_assert_uint_eq(atomic_load(&fs.mem.low), 50ull << 20); /* capped */
	mem_set_limit(&fs.mem, 1ull << 30);
	ck_assert_uint_eq(atomic_load(&fs.mem.low), 80ull << 20); /* and back */
}
END_TEST

/* ---- memory accounting of writes and fallocate ---- */

#define PG 4096ull

static uint64_t charged(void)
{
	return atomic_load(&fs.mem.charged);
}

/*
 * With no request in flight, charged is exactly the pages handed out and
 * the metadata held: nothing reserved is left over.
 */
static void assert_no_reservation_left(void)
{
	uint64_t pages = arena_pages(&fs.arena), meta = atomic_load(&fs.mem.meta);

	ck_assert_msg(charged() == pages * PG + meta,
		      "charged %llu != %llu pages * 4096 + %llu metadata (%lld left over)",
		      (unsigned long long)charged(), (unsigned long long)pages,
		      (unsigned long long)meta, (long long)(charged() - pages * PG - meta));
	ck_assert_uint_eq(meta, meta_bytes());
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct inode *new_file(const char *name)
{
	const struct fs_cred cred = { 0, 0 };
	struct inode *n;
	struct stat st;

	ck_assert_int_eq(fs_mknod(&fs, fs.root, name, S_IFREG | 0600, 0, NULL, &cred, &n, &st), 0);
	return n;
}

/* A file of npages pages of pattern, all of it marked volatile. */
static struct inode *volatile_file(const char *name, size_t npages)
{
	struct inode *v = new_file(name);
	size_t n = npages * PG;
	char *buf = malloc(n);
	struct vrange r = { 0, n };

	fill_pattern(buf, n, 99);
	ck_assert_int_eq(fs_write(&fs, v, 0, buf, n), (ssize_t)n);
	ck_assert_int_eq(vol_mark(&fs, v, &r, 1, 3, false), 0);
	free(buf);
	return v;
}

static void assert_volatile_file_intact(struct inode *v, size_t npages)
{
	size_t n = npages * PG;
	char *in = malloc(n), *out = malloc(n);

	fill_pattern(in, n, 99);
	ck_assert_int_eq(fs_read(&fs, v, 0, n, out), (ssize_t)n);
	ck_assert_int_eq(memcmp(in, out, n), 0);
	ck_assert(!vol_has_purged(&fs, v));
	free(in);
	free(out);
}

START_TEST(fallocate_of_a_petabyte_fails_at_once_and_changes_nothing)
{
	struct inode *v = volatile_file("v", 8);
	const struct {
		int mode;
		uint64_t off, len;
		int want;
	} cases[] = {
		{ 0, 0, 1ull << 50, -ENOSPC },                  /* fallocate -l 1P */
		{ FALLOC_FL_KEEP_SIZE, 0, 1ull << 50, -ENOSPC },
		{ 0, 1ull << 40, 1ull << 50, -ENOSPC },
		{ 0, 0, (uint64_t)INT64_MAX, -ENOSPC },         /* -l 8E - 1 */
		{ 0, 4096, (uint64_t)INT64_MAX - 4096, -ENOSPC },
		/* just over what the limit could ever hold */
		{ 0, 0, (1ull << 30) + PG, -ENOSPC },
		{ 0, 1ull << 62, 1ull << 62, -EFBIG },          /* past what off_t says */
		{ 0, 0, UINT64_MAX, -EFBIG },
		{ 0, UINT64_MAX - PG, PG, -EFBIG },
	};
	uint64_t c0, pages0, meta0;

	/* the volatile file's pages, and an unrelated page of f */
	ck_assert_int_eq(fs_write(&fs, f, 0, "x", 1), 1);
	c0 = charged();
	pages0 = arena_pages(&fs.arena);
	meta0 = atomic_load(&fs.mem.meta);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double t0 = now_s();
		int ret = fs_fallocate(&fs, f, cases[i].mode, cases[i].off, cases[i].len);
		double dt = now_s() - t0;

		ck_assert_msg(ret == cases[i].want, "case %u: fallocate(%#llx, %#llx) = %d, want %d", i,
			      (unsigned long long)cases[i].off, (unsigned long long)cases[i].len, ret,
			      cases[i].want);
		/* Linear in the range would be minutes (1 TiB took 2.5 s). */
		ck_assert_msg(dt < 1.0, "case %u took %.3f s", i, dt);
		ck_assert_uint_eq(charged(), c0);
		ck_assert_uint_eq(arena_pages(&fs.arena), pages0);
		ck_assert_uint_eq(atomic_load(&fs.mem.meta), meta0);
		ck_assert_uint_eq(st_of().st_size, 1);
		ck_assert_uint_eq(st_of().st_blocks, 8);
	}
	/*
	 * Under the limit, but more than purging every volatile page could
	 * free, by more than the RSS swings (mem_allowance): refused too,
	 * without a purge.
	 */
	mem_reconcile(&fs.mem);
	{
		uint64_t limit = atomic_load(&fs.mem.limit), len;
		/* memory the daemon uses besides data (threads, buffers): more
		 * than the RSS swings, so that a miss can exceed the swing */
		size_t other = 64u << 20;
		char *busy = mmap(NULL, other, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);

		ck_assert(busy != MAP_FAILED);
		memset(busy, 1, other);
		mem_reconcile(&fs.mem);
		len = (limit - mem_rss(&fs.mem)) / PG * PG + mem_allowance(limit) + (1u << 20);
		ck_assert_uint_lt(len, limit);
		ck_assert_int_eq(fs_fallocate(&fs, f, 0, 0, len), -ENOSPC);
		munmap(busy, other);
		mem_reconcile(&fs.mem);
	}
	ck_assert_uint_eq(charged(), c0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0);
	ck_assert_uint_eq(st_of().st_size, 1);
	/* Nothing was purged to make room that could never suffice. */
	ck_assert_uint_eq(atomic_load(&fs.purges_total), 0);
	ck_assert_uint_eq(atomic_load(&fs.purged_bytes_total), 0);
	assert_volatile_file_intact(v, 8);
	assert_no_reservation_left();
}
END_TEST

START_TEST(fallocate_in_batches_gives_exactly_the_pages)
{
	uint64_t n = 3ull * FILE_FALLOC_BATCH, pages0 = arena_pages(&fs.arena);

	ck_assert_int_eq(fs_fallocate(&fs, f, 0, 0, n * PG), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + n);
	ck_assert_uint_eq(f->pages.npages, n);
	ck_assert_uint_eq(st_of().st_size, n * PG);
	ck_assert_uint_eq(st_of().st_blocks, n * 8);
	assert_no_reservation_left();
	/* Again over the same range: nothing is missing, nothing changes. */
	ck_assert_int_eq(fs_fallocate(&fs, f, 0, 0, n * PG), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + n);
	assert_no_reservation_left();
	/* Unaligned, one page past a whole number of batches, over a file with holes. */
	{
		struct inode *g = new_file("g");
		uint64_t before = arena_pages(&fs.arena);
		char buf[PG];

		ck_assert_int_eq(fs_write(&fs, g, 5 * PG, "y", 1), 1);
		ck_assert_int_eq(fs_write(&fs, g, FILE_FALLOC_BATCH * PG, "z", 1), 1);
		ck_assert_int_eq(fs_fallocate(&fs, g, 0, 100, FILE_FALLOC_BATCH * PG + 1), 0);
		/* pages 0 .. FILE_FALLOC_BATCH: two were there */
		ck_assert_uint_eq(arena_pages(&fs.arena), before + FILE_FALLOC_BATCH + 1);
		ck_assert_uint_eq(g->pages.npages, FILE_FALLOC_BATCH + 1);
		fs_getattr(&fs, g, &(struct stat){ 0 });
		{
			struct stat st;

			fs_getattr(&fs, g, &st);
			ck_assert_uint_eq(st.st_size, 100 + FILE_FALLOC_BATCH * PG + 1);
		}
		/* the data written before is still there */
		ck_assert_int_eq(fs_read(&fs, g, 5 * PG, 1, buf), 1);
		ck_assert_int_eq(buf[0], 'y');
		ck_assert_int_eq(fs_read(&fs, g, FILE_FALLOC_BATCH * PG, 1, buf), 1);
		ck_assert_int_eq(buf[0], 'z');
		assert_no_reservation_left();
	}
}
END_TEST

START_TEST(fallocate_keep_size_allocates_but_keeps_the_size)
{
	uint64_t n = FILE_FALLOC_BATCH + 3, pages0;

	ck_assert_int_eq(fs_write(&fs, f, 0, "abc", 3), 3);
	pages0 = arena_pages(&fs.arena);
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_KEEP_SIZE, 0, n * PG), 0);
	ck_assert_uint_eq(st_of().st_size, 3);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + n - 1);
	ck_assert_uint_eq(st_of().st_blocks, n * 8);
	assert_no_reservation_left();
	/* Past the end: still the size of before. */
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_KEEP_SIZE, 1ull << 40, PG), 0);
	ck_assert_uint_eq(st_of().st_size, 3);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + n);
	assert_no_reservation_left();
}
END_TEST

START_TEST(fallocate_of_one_page_far_away_costs_one_page)
{
	uint64_t pages0 = arena_pages(&fs.arena), meta0 = atomic_load(&fs.mem.meta);
	uint64_t c0 = charged();
	double t0 = now_s();

	ck_assert_int_eq(fs_fallocate(&fs, f, 0, 1ull << 62, PG), 0);
	ck_assert(now_s() - t0 < 1.0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + 1);
	ck_assert_uint_eq(st_of().st_size, (1ull << 62) + PG);
	ck_assert_uint_eq(st_of().st_blocks, 8);
	/*
	 * One page and the page-map nodes of its path: a few KiB, not more
	 * (the exact count of nodes is test_pagemap's business).
	 */
	ck_assert_uint_gt(atomic_load(&fs.mem.meta), meta0);
	ck_assert_uint_le(atomic_load(&fs.mem.meta) - meta0, 2 * 9 * meta_cost(pagemap_node_size()));
	ck_assert_uint_eq(charged() - c0, PG + atomic_load(&fs.mem.meta) - meta0);
	assert_no_reservation_left();
	/* The same on the last page a file can have. */
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_KEEP_SIZE, FILE_MAX_SIZE / PG * PG,
				      FILE_MAX_SIZE % PG), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + 2);
	ck_assert_uint_eq(st_of().st_size, (1ull << 62) + PG);
	assert_no_reservation_left();
	/* Both go with a truncate, quickly. */
	{
		struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 0 };
		struct stat st;

		t0 = now_s();
		ck_assert_int_eq(fs_setattr(&fs, f, &sa, &st), 0);
		ck_assert(now_s() - t0 < 1.0);
		ck_assert_uint_eq(arena_pages(&fs.arena), pages0);
		ck_assert_uint_eq(atomic_load(&fs.mem.meta), meta0);
		ck_assert_uint_eq(charged(), c0);
	}
}
END_TEST

START_TEST(fallocate_punch_hole_keep_size_still_punches)
{
	size_t n = 6 * PG;
	char *in = malloc(n), *out = malloc(n);
	uint64_t pages0;
	double t0;

	fill_pattern(in, n, 5);
	ck_assert_int_eq(fs_write(&fs, f, 0, in, n), (ssize_t)n);
	pages0 = arena_pages(&fs.arena);
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PG,
				      2 * PG), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 - 2);
	ck_assert_uint_eq(st_of().st_size, n);
	ck_assert_uint_eq(st_of().st_blocks, 4 * 8);
	ck_assert_int_eq(fs_read(&fs, f, 0, n, out), (ssize_t)n);
	ck_assert_int_eq(memcmp(in, out, PG), 0);
	ck_assert(all_zero(out + PG, 2 * PG));
	ck_assert_int_eq(memcmp(in + 3 * PG, out + 3 * PG, 3 * PG), 0);
	assert_no_reservation_left();
	/* A punch of everything a file can hold: quick, and it frees the rest. */
	t0 = now_s();
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				      FILE_MAX_SIZE), 0);
	ck_assert(now_s() - t0 < 1.0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 - 6);
	ck_assert_uint_eq(st_of().st_size, n);
	ck_assert_uint_eq(st_of().st_blocks, 0);
	ck_assert_int_eq(fs_read(&fs, f, 0, n, out), (ssize_t)n);
	ck_assert(all_zero(out, n));
	assert_no_reservation_left();
	free(in);
	free(out);
}
END_TEST

/* The steps one by one, under the file's lock as fs_fallocate takes it. */
START_TEST(fallocate_steps_fill_one_batch_each_and_set_the_size_last)
{
	struct file_falloc fa;
	uint64_t n = 2ull * FILE_FALLOC_BATCH + 10, pages0 = arena_pages(&fs.arena), c0 = charged();

	pthread_rwlock_wrlock(&f->lock);
	ck_assert_int_eq(file_fallocate_begin_locked(&fs, f, 0, 0, n * PG, &fa), 0);
	/* Everything is reserved up front, nothing is allocated yet. */
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0);
	ck_assert_uint_ge(charged(), c0 + n * PG);
	ck_assert_int_eq(file_fallocate_step_locked(&fs, f, &fa), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + FILE_FALLOC_BATCH);
	ck_assert_uint_eq(f->size, 0);
	ck_assert_int_eq(file_fallocate_step_locked(&fs, f, &fa), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + 2 * FILE_FALLOC_BATCH);
	ck_assert_uint_eq(f->size, 0);
	/* What is still reserved covers what is still to come. */
	ck_assert_uint_ge(charged(), arena_pages(&fs.arena) * PG + atomic_load(&fs.mem.meta) + 10 * PG);
	ck_assert_int_eq(file_fallocate_step_locked(&fs, f, &fa), 1);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + n);
	ck_assert_uint_eq(f->size, n * PG);
	file_resv_release(&fs, &fa.resv);
	pthread_rwlock_unlock(&f->lock);
	assert_no_reservation_left();
}
END_TEST

/*
 * Between steps the lock is dropped: pages that were there when the
 * range was reserved may go (a punch, a truncate).  The step must find
 * the memory for them (reserving again) and leave nothing reserved.
 */
START_TEST(fallocate_step_after_pages_went_reserves_again)
{
	struct file_falloc fa;
	uint64_t n = 2ull * FILE_FALLOC_BATCH, pages0 = arena_pages(&fs.arena);
	size_t held = 64 * PG;
	char *buf = calloc(1, held);

	/* 64 pages held in the second batch: the range needs 64 fewer. */
	ck_assert_int_eq(fs_write(&fs, f, FILE_FALLOC_BATCH * PG, buf, held), (ssize_t)held);
	pthread_rwlock_wrlock(&f->lock);
	ck_assert_int_eq(file_fallocate_begin_locked(&fs, f, 0, 0, n * PG, &fa), 0);
	ck_assert_int_eq(file_fallocate_step_locked(&fs, f, &fa), 0);
	pthread_rwlock_unlock(&f->lock);
	/* Meanwhile they are punched away. */
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      FILE_FALLOC_BATCH * PG, held), 0);
	pthread_rwlock_wrlock(&f->lock);
	ck_assert_int_eq(file_fallocate_step_locked(&fs, f, &fa), 1);
	file_resv_release(&fs, &fa.resv);
	pthread_rwlock_unlock(&f->lock);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + n);
	ck_assert_uint_eq(f->pages.npages, n);
	ck_assert_uint_eq(st_of().st_size, n * PG);
	assert_no_reservation_left();
	free(buf);
}
END_TEST

struct truncator {
	_Atomic bool stop;
	_Atomic unsigned rounds, errors;
};

static void *truncate_loop(void *arg)
{
	struct truncator *t = arg;
	struct fs_setattr sa = { .valid = FS_SET_SIZE };
	struct stat st;

	while (!atomic_load(&t->stop)) {
		sa.size = (atomic_load(&t->rounds) % 3) * FILE_FALLOC_BATCH * PG / 2;
		if (fs_setattr(&fs, f, &sa, &st) != 0)
			atomic_fetch_add(&t->errors, 1);
		atomic_fetch_add(&t->rounds, 1);
		usleep(1000);
	}
	return NULL;
}

START_TEST(fallocate_with_concurrent_truncates_keeps_the_accounting)
{
	struct truncator t = { .rounds = 0 };
	pthread_t th;
	uint64_t n = 4ull * FILE_FALLOC_BATCH;

	ck_assert_int_eq(pthread_create(&th, NULL, truncate_loop, &t), 0);
	while (atomic_load(&t.rounds) == 0)
		usleep(100);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fs_fallocate(&fs, f, 0, 0, n * PG), 0);
	atomic_store(&t.stop, true);
	pthread_join(th, NULL);
	ck_assert_uint_eq(atomic_load(&t.errors), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), f->pages.npages);
	ck_assert_uint_eq(st_of().st_blocks, f->pages.npages * 8);
	ck_assert_uint_le(f->pages.npages, n);
	assert_no_reservation_left();
}
END_TEST

START_TEST(write_refused_for_room_leaves_nothing_reserved)
{
	size_t chunk = 1 << 20;
	char *in = malloc(chunk);
	uint64_t c0, pages0, meta0;

	fill_pattern(in, chunk, 1);
	ck_assert_int_eq(fs_write(&fs, f, 0, in, 8192), 8192);
	/* A limit 256 KiB above what is held now: 1 MiB cannot fit. */
	mem_reconcile(&fs.mem);
	mem_set_limit(&fs.mem, mem_rss(&fs.mem) + (256u << 10));
	c0 = charged();
	pages0 = arena_pages(&fs.arena);
	meta0 = atomic_load(&fs.mem.meta);
	for (int i = 0; i < 3; i++) {
		/* new pages only; over held pages and new ones; far away */
		ck_assert_int_eq(fs_write(&fs, f, 1 << 20, in, chunk), -ENOSPC);
		ck_assert_int_eq(fs_write(&fs, f, 4096, in, chunk), -ENOSPC);
		ck_assert_int_eq(fs_write(&fs, f, 1ull << 50, in, chunk), -ENOSPC);
		ck_assert_uint_eq(charged(), c0);
		ck_assert_uint_eq(arena_pages(&fs.arena), pages0);
		ck_assert_uint_eq(atomic_load(&fs.mem.meta), meta0);
	}
	ck_assert_uint_eq(st_of().st_size, 8192);
	/* Overwriting held pages needs no room. */
	ck_assert_int_eq(fs_write(&fs, f, 0, in, 8192), 8192);
	ck_assert_uint_eq(charged(), c0);
	assert_no_reservation_left();
	free(in);
}
END_TEST

/*
 * A write into a purged extent may split it, which costs an extent: when
 * the pages could be reserved but the extent could not, the pages'
 * reservation must go back too.  The kernel's figure is frozen so that
 * the limit can be set to the byte.
 */
START_TEST(write_refused_for_its_extent_gives_back_the_pages_reservation)
{
	struct vrange r = { 0, 4 * PG };
	uint64_t base, room, c0, pages0, meta0;
	char buf[PG];

	memset(buf, 7, sizeof(buf));
	ck_assert_int_eq(fs_write(&fs, f, 0, buf, sizeof(buf)), PG);
	ck_assert_int_eq(fs_write(&fs, f, PG, buf, sizeof(buf)), PG);
	ck_assert_int_eq(fs_write(&fs, f, 2 * PG, buf, sizeof(buf)), PG);
	ck_assert_int_eq(fs_write(&fs, f, 3 * PG, buf, sizeof(buf)), PG);
	ck_assert_int_eq(vol_mark(&fs, f, &r, 1, 3, false), 0);
	ck_assert_uint_eq(evict_all(&fs), 4 * PG);
	ck_assert(vol_has_purged(&fs, f));
	base = (uint64_t)atomic_load(&fs.mem.base);
	utest_mem_freeze(&fs.mem, base);
	c0 = charged();
	pages0 = arena_pages(&fs.arena);
	meta0 = atomic_load(&fs.mem.meta);
	/* Room for page 1 and its nodes, as file_reserve_locked counts them, and no more. */
	room = PG + pagemap_fill_bound(1, 1, 1, meta_cost(pagemap_node_size()));
	mem_set_limit(&fs.mem, base + c0 + room);
	ck_assert_int_eq(fs_write(&fs, f, PG + 100, "abc", 3), -ENOSPC);
	ck_assert_uint_eq(charged(), c0);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0);
	ck_assert_uint_eq(atomic_load(&fs.mem.meta), meta0);
	ck_assert_uint_eq(st_of().st_size, 4 * PG);
	/* With room for an extent too, it goes through. */
	mem_set_limit(&fs.mem, base + c0 + room + 4096);
	ck_assert_int_eq(fs_write(&fs, f, PG + 100, "abc", 3), 3);
	ck_assert_uint_eq(arena_pages(&fs.arena), pages0 + 1);
	ck_assert_int_eq(fs_read(&fs, f, PG + 100, 3, buf), 3);
	ck_assert_int_eq(memcmp(buf, "abc", 3), 0);
	assert_no_reservation_left();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("file");
	TCase *tc = utest_tcase(s, "core", setup, teardown, 30);

	tcase_add_test(tc, write_read_unaligned_across_pages);
	tcase_add_test(tc, sparse_file_holds_only_written_pages);
	tcase_add_test(tc, truncate_down_then_up_reads_zeros);
	tcase_add_test(tc, fallocate_modes);
	tcase_add_test(tc, punch_hole_zeroes_range_and_frees_whole_pages);
	tcase_add_test(tc, seek_data_and_hole);
	tcase_add_test(tc, write_over_limit_is_enospc_and_keeps_data);
	tcase_add_test(tc, memory_low_follows_limit_unless_explicit);
	tcase_add_test(tc, fallocate_of_a_petabyte_fails_at_once_and_changes_nothing);
	tcase_add_test(tc, fallocate_in_batches_gives_exactly_the_pages);
	tcase_add_test(tc, fallocate_keep_size_allocates_but_keeps_the_size);
	tcase_add_test(tc, fallocate_of_one_page_far_away_costs_one_page);
	tcase_add_test(tc, fallocate_punch_hole_keep_size_still_punches);
	tcase_add_test(tc, fallocate_steps_fill_one_batch_each_and_set_the_size_last);
	tcase_add_test(tc, fallocate_step_after_pages_went_reserves_again);
	tcase_add_test(tc, fallocate_with_concurrent_truncates_keeps_the_accounting);
	tcase_add_test(tc, write_refused_for_room_leaves_nothing_reserved);
	tcase_add_test(tc, write_refused_for_its_extent_gives_back_the_pages_reservation);
	tcase_add_test(tc, arena_store_reports_fill_and_frees_a_range);
	return utest_run(s);
}
