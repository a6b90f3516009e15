/*
 * Unit tests for file data and memory accounting (src/daemon/file.c,
 * mem.c) through the fs layer, without a mount.
 */
#include <check.h>
#include <errno.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

static struct fs fs;
static struct inode *f;

static void setup(void)
{
	struct fs_config cfg = { .memory_limit = 1ull << 30, .root_mode = 0755 };
	const struct fs_cred cred = { 0, 0 };
	struct stat st;

	ck_assert_int_eq(fs_init(&fs, &cfg), 0);
	ck_assert_int_eq(fs_mknod(&fs, fs.root, "f", S_IFREG | 0600, 0, NULL, &cred, &f, &st), 0);
}

static void teardown(void)
{
	fs_destroy(&fs);
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

int main(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, write_read_unaligned_across_pages);
	tcase_add_test(tc, sparse_file_holds_only_written_pages);
	tcase_add_test(tc, truncate_down_then_up_reads_zeros);
	tcase_add_test(tc, fallocate_modes);
	tcase_add_test(tc, punch_hole_zeroes_range_and_frees_whole_pages);
	tcase_add_test(tc, seek_data_and_hole);
	tcase_add_test(tc, write_over_limit_is_enospc_and_keeps_data);
	tcase_add_test(tc, memory_low_follows_limit_unless_explicit);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
