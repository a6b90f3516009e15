/*
 * fsops: the file operations a tmpfs user relies on, checked with real system calls.
 *
 * volatilefs must behave exactly like tmpfs for ordinary file operations (DESIGN section 3), so
 * this suite is written against tmpfs first: every test passes on a fresh tmpfs, and what it
 * asserts is what tmpfs does. Run it against a volatilefs mount the same way:
 *
 *	# mkdir -p /tmp/fsops-tmpfs && mount -t tmpfs none /tmp/fsops-tmpfs
 *	# VFS_TEST_DIR=/tmp/fsops-tmpfs ./fsops
 *	100%: Checks: ..., Failures: 0, Errors: 0
 *	# umount /tmp/fsops-tmpfs
 *
 *	# VFS_TEST_DIR=/tmp/volatilefs ./fsops               (a mounted volatilefs)
 *	# CK_RUN_CASE=rename VFS_TEST_DIR=/tmp/volatilefs ./fsops      (one test case)
 *
 * Layout: main() makes one run directory VFS_TEST_DIR/fsops.XXXXXX and removes it at the end,
 * whatever happened. Each test is forked (CK_FORK), gets its own fresh directory inside the run
 * directory as its working directory (the checked fixture), and uses relative names, so tests
 * are independent and UNIX socket paths stay short. The ownership and permission tests need
 * root: they fork a child that drops to uid/gid 65534 (nobody) and report the child's errno
 * through its exit status; without root they are left out, with a notice on stderr.
 *
 * Timestamps: kernels stamp files from a coarse clock, which may lag CLOCK_REALTIME by a tick,
 * so "recent" allows one second of slack, and "changed" is tested by first setting a time far
 * in the past (utimensat) or by sleeping past a clock tick before the change.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"

#define KIB 1024L
#define MIB (1024L * KIB)
#define GIB (1024L * MIB)
#define TIB (1024L * GIB)
#define PAGE 4096L

#define TIMEOUT_SECONDS 60

/* A child's exit status that is an errno: 0 for success. */
#define ASSERT_CHILD_ERRNO(got, err)                                                \
	do {                                                                        \
		int g_ = (got);                                                     \
		ck_assert_msg(g_ == (err), "as uid %d: expected %s, got %s", NOBODY, \
			      errname(err), errname(g_));                           \
	} while (0)

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                  */

/* Asserts path holds exactly these contents. */
static void assert_contents(const char *path, const void *want, size_t len)
{
	int fd = CHECK(open(path, O_RDONLY));
	uint8_t *got = xmalloc(len + 1);
	size_t n = pread_all(fd, got, len + 1, 0);

	ck_assert_msg(n == len, "%s holds %zu bytes, expected %zu", path, n, len);
	ck_assert_msg(memcmp(got, want, len) == 0, "%s: contents differ", path);
	free(got);
	CHECK(close(fd));
}

static struct stat xstat(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st));
	return st;
}

static struct stat xlstat(const char *path)
{
	struct stat st;

	CHECK(lstat(path, &st));
	return st;
}

static struct stat xfstat(int fd)
{
	struct stat st;

	CHECK(fstat(fd, &st));
	return st;
}

static struct timespec now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t;
}

static int ts_cmp(struct timespec a, struct timespec b)
{
	if (a.tv_sec != b.tv_sec)
		return a.tv_sec < b.tv_sec ? -1 : 1;
	if (a.tv_nsec != b.tv_nsec)
		return a.tv_nsec < b.tv_nsec ? -1 : 1;
	return 0;
}

/* t lies in [before - 1 s, now + 1 s]: the slack covers coarse file system clocks. */
static void assert_recent(struct timespec t, struct timespec before, const char *what)
{
	struct timespec lo = { before.tv_sec - 1, before.tv_nsec };
	struct timespec hi = now();

	hi.tv_sec += 1;
	ck_assert_msg(ts_cmp(t, lo) >= 0 && ts_cmp(t, hi) <= 0,
		      "%s is %lld.%09ld, not within a second of the change at %lld.%09ld", what,
		      (long long)t.tv_sec, t.tv_nsec, (long long)before.tv_sec, before.tv_nsec);
}

/* Long enough for any coarse file system clock to tick. */
static void nap(void)
{
	struct timespec t = { 0, 30 * 1000 * 1000 };

	nanosleep(&t, NULL);
}

/* Times far in the past, so that any later stamp is visibly different. */
static const struct timespec past_atime = { 1000000000, 111111111 };
static const struct timespec past_mtime = { 1000000100, 222222222 };

static void set_past_times(const char *path)
{
	struct timespec ts[2] = { past_atime, past_mtime };

	CHECK(utimensat(AT_FDCWD, path, ts, 0));
}

struct dent {
	char name[NAME_MAX + 1];
	unsigned char type;
	ino_t ino;
};

/* Lists a directory, "." and ".." included; fails if it holds more than max entries. */
static size_t list_dir(const char *path, struct dent *out, size_t max)
{
	DIR *d = opendir(path);
	struct dirent *e;
	size_t n = 0;

	ck_assert_msg(d != NULL, "opendir(%s): %s", path, errname(errno));
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		ck_assert_msg(n < max, "%s lists more than %zu entries", path, max);
		ck_assert_msg(strlen(e->d_name) <= NAME_MAX, "entry name too long");
		strcpy(out[n].name, e->d_name);
		out[n].type = e->d_type;
		out[n].ino = e->d_ino;
		n++;
	}
	ck_assert_msg(errno == 0, "readdir(%s): %s", path, errname(errno));
	closedir(d);
	return n;
}

/* The one entry of that name; fails if it is missing or listed twice. */
static const struct dent *find_dent(const struct dent *ents, size_t n, const char *name)
{
	const struct dent *found = NULL;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(ents[i].name, name) != 0)
			continue;
		ck_assert_msg(found == NULL, "readdir lists \"%s\" twice", name);
		found = &ents[i];
	}
	ck_assert_msg(found != NULL, "readdir does not list \"%s\"", name);
	return found;
}

/* What the permission tests have a child running as nobody do. */
enum nobody_op {
	NB_OPEN_READ,   /* open(a, O_RDONLY) */
	NB_WRITE_BYTE,  /* open(a, O_WRONLY), write one byte at offset 0 */
	NB_CREATE,      /* open(a, O_WRONLY | O_CREAT | O_EXCL, 0644) */
	NB_UNLINK,      /* unlink(a) */
	NB_RENAME,      /* rename(a, b) */
};

struct nobody_call {
	enum nobody_op op;
	const char *a, *b;
};

/* The child's part: returns 0 or the errno it got. */
static int nobody_do(const void *arg)
{
	const struct nobody_call *c = arg;
	int fd, r = 0;

	switch (c->op) {
	case NB_OPEN_READ:
		fd = open(c->a, O_RDONLY);
		r = fd < 0 ? -1 : close(fd);
		break;
	case NB_WRITE_BYTE:
		fd = open(c->a, O_WRONLY);
		r = fd < 0 ? -1 : pwrite(fd, "x", 1, 0) == 1 ? close(fd) : -1;
		break;
	case NB_CREATE:
		fd = open(c->a, O_WRONLY | O_CREAT | O_EXCL, 0644);
		r = fd < 0 ? -1 : close(fd);
		break;
	case NB_UNLINK:
		r = unlink(c->a);
		break;
	case NB_RENAME:
		r = rename(c->a, c->b);
		break;
	}
	return r == 0 ? 0 : errno & 0xff;
}

/*
 * Runs op in a child with uid, gid 65534 and no supplementary groups, in this test's
 * directory; returns 0 or the errno the child got.
 */
static int as_nobody(enum nobody_op op, const char *a, const char *b)
{
	const struct nobody_call c = { op, a, b };
	int status = mtest_as_user(NOBODY, NOBODY, nobody_do, &c);

	ck_assert_msg(status != -1, "fork or waitpid: %s", errname(errno));
	ck_assert_msg(WIFEXITED(status), "child killed by signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status) != MTEST_NO_USER, "child could not drop to uid %d",
		      NOBODY);
	return WEXITSTATUS(status);
}

/* ---------------------------------------------------------------------------------------- */
/* Reading and writing                                                                      */

START_TEST(write_then_read_returns_same_bytes)
{
	uint8_t out[10000], in[sizeof(out) + 1];
	int fd;

	pattern_fill(out, sizeof(out), 0, 1);
	fd = CHECK(open("f", O_RDWR | O_CREAT | O_EXCL, 0644));
	ck_assert_int_eq(CHECK(write(fd, out, sizeof(out))), sizeof(out));
	CHECK(close(fd));

	fd = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(pread_all(fd, in, sizeof(in), 0), sizeof(out));
	pattern_assert(in, sizeof(out), 0, 1);
	CHECK(close(fd));
}
END_TEST

START_TEST(open_missing_file_fails_enoent)
{
	ASSERT_ERRNO(open("missing", O_RDONLY), ENOENT);
	ASSERT_ERRNO(open("missing", O_RDWR), ENOENT);
}
END_TEST

START_TEST(o_excl_on_existing_file_fails_eexist)
{
	make_file_with("f", "x", 1);
	ASSERT_ERRNO(open("f", O_RDWR | O_CREAT | O_EXCL, 0644), EEXIST);
	assert_contents("f", "x", 1);
}
END_TEST

START_TEST(o_append_writes_at_end_of_file)
{
	int fd;

	make_file_with("f", "hello", 5);
	fd = CHECK(open("f", O_WRONLY | O_APPEND));
	CHECK(lseek(fd, 0, SEEK_SET));
	ck_assert_int_eq(CHECK(write(fd, " world", 6)), 6);
	ck_assert_int_eq(CHECK(lseek(fd, 0, SEEK_CUR)), 11);
	CHECK(close(fd));
	assert_contents("f", "hello world", 11);
}
END_TEST

START_TEST(o_append_from_two_fds_never_overwrites)
{
	int a = CHECK(open("f", O_WRONLY | O_CREAT | O_APPEND, 0644));
	int b = CHECK(open("f", O_WRONLY | O_APPEND));

	ck_assert_int_eq(CHECK(write(a, "one ", 4)), 4);
	ck_assert_int_eq(CHECK(write(b, "two ", 4)), 4);
	ck_assert_int_eq(CHECK(write(a, "three", 5)), 5);
	CHECK(close(a));
	CHECK(close(b));
	assert_contents("f", "one two three", 13);
}
END_TEST

START_TEST(o_trunc_empties_file)
{
	uint8_t buf[3 * PAGE];
	int fd;

	pattern_fill(buf, sizeof(buf), 0, 2);
	make_file_with("f", buf, sizeof(buf));
	fd = CHECK(open("f", O_RDWR | O_TRUNC));
	ck_assert_int_eq(xfstat(fd).st_size, 0);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 0);
	ck_assert_int_eq(xfstat(fd).st_blocks, 0);
	CHECK(close(fd));
}
END_TEST

START_TEST(o_trunc_updates_mtime)
{
	struct timespec before;
	int fd;

	make_file_with("f", "data", 4);
	set_past_times("f");
	before = now();
	fd = CHECK(open("f", O_WRONLY | O_TRUNC));
	CHECK(close(fd));
	assert_recent(xstat("f").st_mtim, before, "mtime");
	assert_recent(xstat("f").st_ctim, before, "ctime");
}
END_TEST

START_TEST(read_past_eof_returns_zero)
{
	char buf[100];
	int fd;

	make_file_with("f", "0123456789", 10);
	fd = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(CHECK(pread(fd, buf, sizeof(buf), 5)), 5);
	ck_assert_mem_eq(buf, "56789", 5);
	ck_assert_int_eq(CHECK(pread(fd, buf, sizeof(buf), 10)), 0);
	ck_assert_int_eq(CHECK(pread(fd, buf, sizeof(buf), 1 * MIB)), 0);
	CHECK(lseek(fd, 0, SEEK_END));
	ck_assert_int_eq(CHECK(read(fd, buf, sizeof(buf))), 0);
	CHECK(close(fd));
}
END_TEST

START_TEST(unaligned_write_spanning_pages_keeps_surrounding_bytes)
{
	const size_t size = 4 * PAGE, off = PAGE - 6, len = 2 * PAGE + 17;
	uint8_t *buf = xmalloc(size + 1);
	int fd;

	pattern_fill(buf, size, 0, 3);
	make_file_with("f", buf, size);
	fd = CHECK(open("f", O_RDWR));
	pattern_fill(buf, len, off, 4);
	pwrite_all(fd, buf, len, (off_t)off);
	CHECK(close(fd));

	fd = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(pread_all(fd, buf, size + 1, 0), size);
	pattern_assert(buf, off, 0, 3);
	pattern_assert(buf + off, len, off, 4);
	pattern_assert(buf + off + len, size - off - len, off + len, 3);
	CHECK(close(fd));
	free(buf);
}
END_TEST

START_TEST(unaligned_write_past_eof_zero_fills_gap)
{
	uint8_t buf[3 * PAGE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	CHECK(pwrite(fd, "ab", 1, 3));
	ck_assert_int_eq(CHECK(pwrite(fd, "XY", 2, PAGE - 1)), 2);
	ck_assert_int_eq(xfstat(fd).st_size, PAGE + 1);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), PAGE + 1);
	assert_zeros(buf, 3, 0);
	ck_assert_int_eq(buf[3], 'a');
	assert_zeros(buf + 4, PAGE - 5, 4);
	ck_assert_mem_eq(buf + PAGE - 1, "XY", 2);
	CHECK(close(fd));
}
END_TEST

START_TEST(large_single_write_and_read_move_every_byte)
{
	const size_t len = 8 * MIB + 123;
	uint8_t *buf = xmalloc(len);
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	pattern_fill(buf, len, 77, 5);
	ck_assert_int_eq(CHECK(pwrite(fd, buf, len, 77)), len);
	CHECK(close(fd));

	memset(buf, 0, len);
	fd = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(CHECK(pread(fd, buf, len, 77)), len);
	pattern_assert(buf, len, 77, 5);
	ck_assert_int_eq(xfstat(fd).st_size, len + 77);
	CHECK(close(fd));
	free(buf);
}
END_TEST

START_TEST(pwrite_beyond_4gib_reads_back_at_same_offset)
{
	const off_t off = 5 * GIB + 12345;
	uint8_t buf[3000];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	pattern_fill(buf, sizeof(buf), (uint64_t)off, 6);
	pwrite_all(fd, buf, sizeof(buf), off);
	ck_assert_int_eq(xfstat(fd).st_size, off + (off_t)sizeof(buf));
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), off), sizeof(buf));
	pattern_assert(buf, sizeof(buf), (uint64_t)off, 6);
	/* The same offset modulo 4 GiB is a hole. */
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), off - 4 * GIB), sizeof(buf));
	assert_zeros(buf, sizeof(buf), (uint64_t)(off - 4 * GIB));
	CHECK(close(fd));
}
END_TEST

START_TEST(pwrite_at_1tib_makes_sparse_file)
{
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));
	struct stat st;

	ck_assert_int_eq(CHECK(pwrite(fd, "end", 3, TIB)), 3);
	st = xfstat(fd);
	ck_assert_int_eq(st.st_size, TIB + 3);
	ck_assert_int_gt(st.st_blocks, 0);
	ck_assert_int_le(st.st_blocks, 64);
	CHECK(close(fd));
}
END_TEST

START_TEST(hole_in_sparse_file_reads_as_zeros)
{
	uint8_t buf[3 * PAGE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(pwrite(fd, "head", 4, 0)), 4);
	ck_assert_int_eq(CHECK(pwrite(fd, "tail", 4, 1 * GIB)), 4);
	memset(buf, 0xaa, sizeof(buf));
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 512 * MIB - 100), sizeof(buf));
	assert_zeros(buf, sizeof(buf), 512 * MIB - 100);
	/* Reading across the end of a hole into data. */
	ck_assert_int_eq(pread_all(fd, buf, 10, 1 * GIB - 6), 10);
	assert_zeros(buf, 6, 1 * GIB - 6);
	ck_assert_mem_eq(buf + 6, "tail", 4);
	CHECK(close(fd));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Attributes                                                                               */

START_TEST(new_file_stat_fields)
{
	int fd = CHECK(open("f", O_RDWR | O_CREAT | O_EXCL, 0666));
	struct stat st = xfstat(fd), dir = xstat(".");

	ck_assert_uint_eq(st.st_mode, S_IFREG | 0644); /* umask 022 applied */
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_uint_eq(st.st_gid, getegid());
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(st.st_blocks, 0);
	ck_assert_int_eq(st.st_blksize, 4096);
	ck_assert_uint_eq(st.st_dev, dir.st_dev);
	ck_assert_uint_ne(st.st_ino, 0);
	ck_assert_uint_ne(st.st_ino, dir.st_ino);
	CHECK(close(fd));
}
END_TEST

START_TEST(stat_and_fstat_agree)
{
	uint8_t buf[5000];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0640));
	struct stat a, b;

	pattern_fill(buf, sizeof(buf), 0, 7);
	pwrite_all(fd, buf, sizeof(buf), 0);
	a = xfstat(fd);
	b = xstat("f");
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_dev, b.st_dev);
	ck_assert_uint_eq(a.st_mode, b.st_mode);
	ck_assert_int_eq(a.st_size, 5000);
	ck_assert_int_eq(b.st_size, 5000);
	ck_assert_int_eq(a.st_blocks, b.st_blocks);
	ck_assert_int_eq(ts_cmp(a.st_mtim, b.st_mtim), 0);
	CHECK(close(fd));
}
END_TEST

START_TEST(new_files_have_distinct_inode_numbers)
{
	make_file_with("a", "", 0);
	make_file_with("b", "", 0);
	CHECK(mkdir("c", 0755));
	ck_assert_uint_ne(xstat("a").st_ino, xstat("b").st_ino);
	ck_assert_uint_ne(xstat("a").st_ino, xstat("c").st_ino);
	ck_assert_uint_ne(xstat("b").st_ino, xstat("c").st_ino);
}
END_TEST

START_TEST(st_blocks_counts_fully_written_mebibyte)
{
	uint8_t *buf = xmalloc(MIB);
	struct stat st;

	pattern_fill(buf, MIB, 0, 8);
	make_file_with("f", buf, MIB);
	st = xstat("f");
	ck_assert_int_eq(st.st_size, MIB);
	ck_assert_int_ge(st.st_blocks, 2048);
	ck_assert_int_le(st.st_blocks, 2048 + 256);
	free(buf);
}
END_TEST

START_TEST(ftruncate_to_1gib_holds_no_blocks)
{
	uint8_t buf[PAGE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));
	struct stat st;

	CHECK(ftruncate(fd, GIB));
	st = xfstat(fd);
	ck_assert_int_eq(st.st_size, GIB);
	ck_assert_int_eq(st.st_blocks, 0);
	memset(buf, 0xaa, sizeof(buf));
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), GIB / 2), sizeof(buf));
	assert_zeros(buf, sizeof(buf), GIB / 2);
	ck_assert_int_eq(xfstat(fd).st_blocks, 0); /* reading a hole allocates nothing */
	CHECK(close(fd));
}
END_TEST

START_TEST(chmod_sets_permission_bits)
{
	make_file_with("f", "", 0);
	CHECK(chmod("f", 0640));
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG | 0640);
	CHECK(chmod("f", 04751));
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG | 04751);
	CHECK(chmod("f", 0));
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG);
}
END_TEST

START_TEST(fchmod_on_directory_sets_mode)
{
	int fd;

	CHECK(mkdir("d", 0755));
	fd = CHECK(open("d", O_RDONLY | O_DIRECTORY));
	CHECK(fchmod(fd, 01777));
	ck_assert_uint_eq(xstat("d").st_mode, S_IFDIR | 01777);
	CHECK(close(fd));
}
END_TEST

START_TEST(chmod_updates_ctime)
{
	struct timespec c0, before;

	make_file_with("f", "", 0);
	c0 = xstat("f").st_ctim;
	nap();
	before = now();
	CHECK(chmod("f", 0600));
	ck_assert_int_gt(ts_cmp(xstat("f").st_ctim, c0), 0);
	assert_recent(xstat("f").st_ctim, before, "ctime");
}
END_TEST

START_TEST(truncate_shrink_then_grow_reads_zeros_in_gap)
{
	uint8_t buf[2 * PAGE + 1];
	int fd;

	memset(buf, 'A', 2 * PAGE);
	make_file_with("f", buf, 2 * PAGE);
	fd = CHECK(open("f", O_RDWR));
	CHECK(ftruncate(fd, 100));
	ck_assert_int_eq(xfstat(fd).st_size, 100);
	CHECK(ftruncate(fd, 2 * PAGE));
	ck_assert_int_eq(xfstat(fd).st_size, 2 * PAGE);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 2 * PAGE);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(buf[i], 'A');
	assert_zeros(buf + 100, 2 * PAGE - 100, 100);
	CHECK(close(fd));
}
END_TEST

START_TEST(truncate_by_path_grows_with_zeros)
{
	uint8_t buf[10001];
	int fd;

	make_file_with("f", "hello", 5);
	CHECK(truncate("f", 10000));
	ck_assert_int_eq(xstat("f").st_size, 10000);
	fd = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 10000);
	ck_assert_mem_eq(buf, "hello", 5);
	assert_zeros(buf + 5, 10000 - 5, 5);
	CHECK(close(fd));
}
END_TEST

START_TEST(truncate_shrink_frees_blocks)
{
	uint8_t *buf = xmalloc(MIB);
	blkcnt_t before;

	pattern_fill(buf, MIB, 0, 9);
	make_file_with("f", buf, MIB);
	before = xstat("f").st_blocks;
	CHECK(truncate("f", 10 * PAGE));
	ck_assert_int_le(xstat("f").st_blocks, before - (MIB - 10 * PAGE) / 512);
	ck_assert_int_ge(xstat("f").st_blocks, 10 * PAGE / 512);
	free(buf);
}
END_TEST

START_TEST(ftruncate_updates_mtime_and_ctime)
{
	struct timespec before;
	int fd;

	make_file_with("f", "0123456789", 10);
	set_past_times("f");
	fd = CHECK(open("f", O_RDWR));
	before = now();
	CHECK(ftruncate(fd, 3));
	assert_recent(xfstat(fd).st_mtim, before, "mtime");
	assert_recent(xfstat(fd).st_ctim, before, "ctime");
	CHECK(close(fd));
}
END_TEST

START_TEST(utimensat_sets_explicit_times_to_the_nanosecond)
{
	struct timespec ts[2] = { { 1234567890, 123456789 }, { 987654321, 987654321 } };
	struct stat st;

	make_file_with("f", "", 0);
	CHECK(utimensat(AT_FDCWD, "f", ts, 0));
	st = xstat("f");
	ck_assert_int_eq(st.st_atim.tv_sec, 1234567890);
	ck_assert_int_eq(st.st_atim.tv_nsec, 123456789);
	ck_assert_int_eq(st.st_mtim.tv_sec, 987654321);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 987654321);
}
END_TEST

START_TEST(utimensat_utime_now_sets_current_time)
{
	struct timespec ts[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } }, before;
	struct stat st;

	make_file_with("f", "", 0);
	set_past_times("f");
	before = now();
	CHECK(utimensat(AT_FDCWD, "f", ts, 0));
	st = xstat("f");
	assert_recent(st.st_atim, before, "atime");
	assert_recent(st.st_mtim, before, "mtime");
}
END_TEST

START_TEST(utimensat_utime_omit_keeps_that_time)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1500000000, 5 } };
	struct stat st;

	make_file_with("f", "", 0);
	set_past_times("f");
	CHECK(utimensat(AT_FDCWD, "f", ts, 0));
	st = xstat("f");
	ck_assert_int_eq(ts_cmp(st.st_atim, past_atime), 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1500000000);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 5);

	ts[0] = (struct timespec){ 1600000000, 6 };
	ts[1] = (struct timespec){ 0, UTIME_OMIT };
	CHECK(utimensat(AT_FDCWD, "f", ts, 0));
	st = xstat("f");
	ck_assert_int_eq(st.st_atim.tv_sec, 1600000000);
	ck_assert_int_eq(st.st_atim.tv_nsec, 6);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1500000000);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 5);
}
END_TEST

START_TEST(utimensat_updates_ctime)
{
	struct timespec c0, before;

	make_file_with("f", "", 0);
	c0 = xstat("f").st_ctim;
	nap();
	before = now();
	set_past_times("f");
	ck_assert_int_gt(ts_cmp(xstat("f").st_ctim, c0), 0);
	assert_recent(xstat("f").st_ctim, before, "ctime");
}
END_TEST

START_TEST(write_updates_mtime_and_ctime)
{
	struct timespec c0, before;
	struct stat st;
	int fd;

	make_file_with("f", "", 0);
	set_past_times("f");
	fd = CHECK(open("f", O_WRONLY));
	c0 = xfstat(fd).st_ctim;
	nap();
	before = now();
	ck_assert_int_eq(CHECK(write(fd, "x", 1)), 1);
	st = xfstat(fd);
	assert_recent(st.st_mtim, before, "mtime");
	ck_assert_int_gt(ts_cmp(st.st_ctim, c0), 0);
	ck_assert_int_eq(ts_cmp(st.st_atim, past_atime), 0);
	CHECK(close(fd));
	/* And it is what a fresh lookup sees once the file is closed. */
	assert_recent(xstat("f").st_mtim, before, "mtime after close");
}
END_TEST

START_TEST(read_updates_atime_older_than_mtime)
{
	struct timespec before;
	char c;
	int fd;

	make_file_with("f", "abc", 3);
	set_past_times("f"); /* atime older than mtime: relatime updates it */
	fd = CHECK(open("f", O_RDONLY));
	before = now();
	ck_assert_int_eq(CHECK(read(fd, &c, 1)), 1);
	CHECK(close(fd));
	assert_recent(xstat("f").st_atim, before, "atime");
	ck_assert_int_eq(ts_cmp(xstat("f").st_mtim, past_mtime), 0);
}
END_TEST

START_TEST(create_updates_parent_mtime_and_ctime)
{
	struct timespec before;

	CHECK(mkdir("d", 0755));
	set_past_times("d");
	before = now();
	make_file_with("d/f", "", 0);
	assert_recent(xstat("d").st_mtim, before, "directory mtime");
	assert_recent(xstat("d").st_ctim, before, "directory ctime");
}
END_TEST

START_TEST(unlink_updates_parent_mtime)
{
	struct timespec before;

	CHECK(mkdir("d", 0755));
	make_file_with("d/f", "", 0);
	set_past_times("d");
	before = now();
	CHECK(unlink("d/f"));
	assert_recent(xstat("d").st_mtim, before, "directory mtime");
}
END_TEST

START_TEST(rename_updates_both_parent_mtimes)
{
	struct timespec before;

	CHECK(mkdir("a", 0755));
	CHECK(mkdir("b", 0755));
	make_file_with("a/f", "", 0);
	set_past_times("a");
	set_past_times("b");
	before = now();
	CHECK(rename("a/f", "b/f"));
	assert_recent(xstat("a").st_mtim, before, "source directory mtime");
	assert_recent(xstat("b").st_mtim, before, "target directory mtime");
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Ownership and permissions (root only)                                                    */

START_TEST(chown_sets_owner_and_group)
{
	struct stat st;

	make_file_with("f", "", 0);
	CHECK(chown("f", 1234, 5678));
	st = xstat("f");
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 5678);
	CHECK(chown("f", (uid_t)-1, 4321)); /* -1 keeps the owner */
	st = xstat("f");
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 4321);
}
END_TEST

START_TEST(chown_clears_setuid_bit)
{
	make_file_with("f", "", 0);
	CHECK(chmod("f", 04755));
	CHECK(chown("f", 1000, 1000));
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG | 0755);
}
END_TEST

START_TEST(file_created_by_user_is_owned_by_that_user)
{
	struct stat st;

	CHECK(mkdir("d", 0777));
	CHECK(chmod("d", 0777));
	ASSERT_CHILD_ERRNO(as_nobody(NB_CREATE, "d/f", NULL), 0);
	st = xstat("d/f");
	ck_assert_uint_eq(st.st_uid, NOBODY);
	ck_assert_uint_eq(st.st_gid, NOBODY);
}
END_TEST

START_TEST(setgid_directory_gives_new_file_its_group)
{
	CHECK(mkdir("d", 0755));
	CHECK(chown("d", 0, 4321));
	CHECK(chmod("d", 02775));
	make_file_with("d/f", "", 0);
	ck_assert_uint_eq(xstat("d/f").st_gid, 4321);
	ck_assert_uint_eq(xstat("d/f").st_mode, S_IFREG | 0644);
}
END_TEST

START_TEST(setgid_directory_gives_new_subdirectory_group_and_setgid)
{
	struct stat st;

	CHECK(mkdir("d", 0755));
	CHECK(chown("d", 0, 4321));
	CHECK(chmod("d", 02775));
	CHECK(mkdir("d/sub", 0755));
	st = xstat("d/sub");
	ck_assert_uint_eq(st.st_gid, 4321);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 02755);
}
END_TEST

START_TEST(mode_0600_root_file_denies_other_user_eacces)
{
	make_file_with("f", "secret", 6);
	CHECK(chmod("f", 0600));
	ASSERT_CHILD_ERRNO(as_nobody(NB_OPEN_READ, "f", NULL), EACCES);
	ASSERT_CHILD_ERRNO(as_nobody(NB_WRITE_BYTE, "f", NULL), EACCES);
	CHECK(chmod("f", 0644));
	ASSERT_CHILD_ERRNO(as_nobody(NB_OPEN_READ, "f", NULL), 0);
}
END_TEST

START_TEST(create_in_unwritable_directory_fails_eacces)
{
	CHECK(mkdir("d", 0755));
	ASSERT_CHILD_ERRNO(as_nobody(NB_CREATE, "d/f", NULL), EACCES);
	ASSERT_ERRNO(access("d/f", F_OK), ENOENT);
}
END_TEST

START_TEST(sticky_directory_other_user_cannot_unlink_eperm)
{
	CHECK(mkdir("s", 0755));
	CHECK(chmod("s", 01777));
	make_file_with("s/root", "r", 1);
	CHECK(chmod("s/root", 0666));
	ASSERT_CHILD_ERRNO(as_nobody(NB_UNLINK, "s/root", NULL), EPERM);
	assert_contents("s/root", "r", 1);
}
END_TEST

START_TEST(sticky_directory_other_user_cannot_rename_eperm)
{
	CHECK(mkdir("s", 0755));
	CHECK(chmod("s", 01777));
	make_file_with("s/root", "r", 1);
	CHECK(chmod("s/root", 0666));
	ASSERT_CHILD_ERRNO(as_nobody(NB_RENAME, "s/root", "s/mine"), EPERM);
	assert_contents("s/root", "r", 1);
	ASSERT_ERRNO(access("s/mine", F_OK), ENOENT);
}
END_TEST

START_TEST(sticky_directory_user_can_unlink_and_rename_own_file)
{
	CHECK(mkdir("s", 0755));
	CHECK(chmod("s", 01777));
	ASSERT_CHILD_ERRNO(as_nobody(NB_CREATE, "s/a", NULL), 0);
	ASSERT_CHILD_ERRNO(as_nobody(NB_RENAME, "s/a", "s/b"), 0);
	ck_assert_uint_eq(xstat("s/b").st_uid, NOBODY);
	ASSERT_CHILD_ERRNO(as_nobody(NB_UNLINK, "s/b", NULL), 0);
	ASSERT_ERRNO(access("s/b", F_OK), ENOENT);
}
END_TEST

START_TEST(write_by_other_user_clears_setuid)
{
	make_file_with("f", "old", 3);
	CHECK(chown("f", 1000, 1000));
	CHECK(chmod("f", 04777));
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG | 04777);
	ASSERT_CHILD_ERRNO(as_nobody(NB_WRITE_BYTE, "f", NULL), 0);
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG | 0777);
	assert_contents("f", "xld", 3);
}
END_TEST

START_TEST(write_by_other_user_clears_setgid_with_group_exec)
{
	make_file_with("f", "old", 3);
	CHECK(chown("f", 1000, 1000));
	CHECK(chmod("f", 02777));
	ASSERT_CHILD_ERRNO(as_nobody(NB_WRITE_BYTE, "f", NULL), 0);
	ck_assert_uint_eq(xstat("f").st_mode, S_IFREG | 0777);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* FIFOs and sockets                                                                        */

START_TEST(mknod_fifo_makes_fifo)
{
	struct stat st;

	CHECK(mknod("p", S_IFIFO | 0640, 0));
	st = xlstat("p");
	ck_assert_uint_eq(st.st_mode, S_IFIFO | 0640);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_uint_eq(st.st_nlink, 1);
}
END_TEST

START_TEST(mknod_socket_makes_socket)
{
	CHECK(mknod("s", S_IFSOCK | 0600, 0));
	ck_assert_uint_eq(xlstat("s").st_mode, S_IFSOCK | 0600);
}
END_TEST

START_TEST(mkfifo_passes_bytes_through)
{
	char buf[16];
	int fd;

	CHECK(mkfifo("p", 0600));
	fd = CHECK(open("p", O_RDWR | O_NONBLOCK));
	ck_assert_int_eq(CHECK(write(fd, "through", 7)), 7);
	ck_assert_int_eq(CHECK(read(fd, buf, sizeof(buf))), 7);
	ck_assert_mem_eq(buf, "through", 7);
	ASSERT_ERRNO(read(fd, buf, sizeof(buf)), EAGAIN);
	ck_assert_int_eq(xfstat(fd).st_size, 0);
	CHECK(close(fd));
}
END_TEST

START_TEST(unix_socket_bound_in_directory_accepts_connection)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX, .sun_path = "sock" };
	int srv = CHECK(socket(AF_UNIX, SOCK_STREAM, 0));
	int cli = CHECK(socket(AF_UNIX, SOCK_STREAM, 0));
	int conn;
	char buf[8];

	CHECK(bind(srv, (struct sockaddr *)&addr, sizeof(addr)));
	CHECK(listen(srv, 1));
	ck_assert(S_ISSOCK(xlstat("sock").st_mode));
	CHECK(connect(cli, (struct sockaddr *)&addr, sizeof(addr)));
	conn = CHECK(accept(srv, NULL, NULL));
	ck_assert_int_eq(CHECK(write(cli, "ping", 4)), 4);
	ck_assert_int_eq(CHECK(read(conn, buf, sizeof(buf))), 4);
	ck_assert_mem_eq(buf, "ping", 4);
	CHECK(close(conn));
	CHECK(close(cli));
	CHECK(close(srv));
	CHECK(unlink("sock"));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Directories, links, symlinks                                                             */

START_TEST(mkdir_makes_directory_with_mode)
{
	struct stat st;

	CHECK(mkdir("d", 0750));
	st = xstat("d");
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 0750);
	ck_assert_uint_eq(st.st_nlink, 2);
	ck_assert_uint_eq(st.st_uid, geteuid());
}
END_TEST

START_TEST(mkdir_over_existing_name_fails_eexist)
{
	CHECK(mkdir("d", 0755));
	make_file_with("f", "", 0);
	ASSERT_ERRNO(mkdir("d", 0755), EEXIST);
	ASSERT_ERRNO(mkdir("f", 0755), EEXIST);
}
END_TEST

START_TEST(rmdir_removes_empty_directory)
{
	CHECK(mkdir("d", 0755));
	CHECK(rmdir("d"));
	ASSERT_ERRNO(stat("d", &(struct stat){ 0 }), ENOENT);
}
END_TEST

START_TEST(rmdir_non_empty_fails_enotempty)
{
	CHECK(mkdir("d", 0755));
	make_file_with("d/f", "", 0);
	ASSERT_ERRNO(rmdir("d"), ENOTEMPTY);
	CHECK(unlink("d/f"));
	CHECK(mkdir("d/sub", 0755));
	ASSERT_ERRNO(rmdir("d"), ENOTEMPTY);
	ck_assert(S_ISDIR(xstat("d/sub").st_mode));
}
END_TEST

START_TEST(rmdir_on_file_fails_enotdir)
{
	make_file_with("f", "", 0);
	ASSERT_ERRNO(rmdir("f"), ENOTDIR);
	CHECK(symlink(".", "l"));
	ASSERT_ERRNO(rmdir("l"), ENOTDIR);
}
END_TEST

START_TEST(directory_nlink_is_two_plus_subdirectories)
{
	CHECK(mkdir("d", 0755));
	ck_assert_uint_eq(xstat("d").st_nlink, 2);
	CHECK(mkdir("d/a", 0755));
	CHECK(mkdir("d/b", 0755));
	CHECK(mkdir("d/c", 0755));
	make_file_with("d/file", "", 0);
	CHECK(symlink("a", "d/link"));
	ck_assert_uint_eq(xstat("d").st_nlink, 5);
	CHECK(rmdir("d/b"));
	ck_assert_uint_eq(xstat("d").st_nlink, 4);
}
END_TEST

START_TEST(unlink_removes_name)
{
	make_file_with("f", "x", 1);
	CHECK(unlink("f"));
	ASSERT_ERRNO(open("f", O_RDONLY), ENOENT);
	ASSERT_ERRNO(unlink("f"), ENOENT);
}
END_TEST

START_TEST(unlink_directory_fails_eisdir)
{
	CHECK(mkdir("d", 0755));
	ASSERT_ERRNO(unlink("d"), EISDIR);
	ck_assert(S_ISDIR(xstat("d").st_mode));
}
END_TEST

START_TEST(symlink_readlink_returns_exact_target)
{
	const char *target = "../some dir/./x\xc3\xa9\x01y//z";
	char buf[PATH_MAX];

	memset(buf, '#', sizeof(buf));
	CHECK(symlink(target, "l"));
	ck_assert_int_eq(CHECK(readlink("l", buf, sizeof(buf))), strlen(target));
	ck_assert_mem_eq(buf, target, strlen(target));
	ck_assert_int_eq(buf[strlen(target)], '#'); /* readlink adds no NUL */
}
END_TEST

START_TEST(symlink_lstat_size_is_target_length)
{
	struct stat st;

	CHECK(symlink("a/target/of/length/21", "l"));
	st = xlstat("l");
	ck_assert_uint_eq(st.st_mode, S_IFLNK | 0777);
	ck_assert_int_eq(st.st_size, 21);
	ck_assert_uint_eq(st.st_nlink, 1);
}
END_TEST

START_TEST(symlink_of_4095_bytes_round_trips)
{
	char target[PAGE], buf[PAGE + 1];

	for (size_t i = 0; i < PAGE - 1; i++)
		target[i] = (i % 64 == 63) ? '/' : (char)('a' + i % 26);
	target[PAGE - 1] = '\0';
	CHECK(symlink(target, "l"));
	ck_assert_int_eq(xlstat("l").st_size, PAGE - 1);
	ck_assert_int_eq(CHECK(readlink("l", buf, sizeof(buf))), PAGE - 1);
	ck_assert_mem_eq(buf, target, PAGE - 1);
}
END_TEST

START_TEST(symlink_is_followed_by_open_and_stat)
{
	CHECK(mkdir("d", 0755));
	make_file_with("d/f", "via target", 10);
	CHECK(symlink("d/f", "l"));
	assert_contents("l", "via target", 10);
	ck_assert_uint_eq(xstat("l").st_ino, xstat("d/f").st_ino);
	ck_assert_uint_ne(xlstat("l").st_ino, xstat("d/f").st_ino);
}
END_TEST

START_TEST(dangling_symlink_stat_fails_enoent)
{
	CHECK(symlink("nowhere", "l"));
	ASSERT_ERRNO(stat("l", &(struct stat){ 0 }), ENOENT);
	ck_assert(S_ISLNK(xlstat("l").st_mode));
	/* Creating through it creates the target. */
	make_file_with("l", "made", 4);
	assert_contents("nowhere", "made", 4);
}
END_TEST

START_TEST(link_raises_and_unlink_lowers_nlink)
{
	make_file_with("a", "shared", 6);
	ck_assert_uint_eq(xstat("a").st_nlink, 1);
	CHECK(link("a", "b"));
	ck_assert_uint_eq(xstat("a").st_nlink, 2);
	ck_assert_uint_eq(xstat("b").st_nlink, 2);
	CHECK(unlink("a"));
	ck_assert_uint_eq(xstat("b").st_nlink, 1);
	assert_contents("b", "shared", 6);
}
END_TEST

START_TEST(link_shares_inode_and_data)
{
	int fd;

	make_file_with("a", "before", 6);
	CHECK(mkdir("d", 0755));
	CHECK(link("a", "d/b"));
	ck_assert_uint_eq(xstat("a").st_ino, xstat("d/b").st_ino);
	fd = CHECK(open("d/b", O_WRONLY | O_TRUNC));
	ck_assert_int_eq(CHECK(write(fd, "after!!", 7)), 7);
	CHECK(close(fd));
	assert_contents("a", "after!!", 7);
}
END_TEST

START_TEST(link_directory_fails_eperm)
{
	CHECK(mkdir("d", 0755));
	ASSERT_ERRNO(link("d", "e"), EPERM);
	ck_assert_uint_eq(xstat("d").st_nlink, 2);
}
END_TEST

START_TEST(link_over_existing_name_fails_eexist)
{
	make_file_with("a", "a", 1);
	make_file_with("b", "b", 1);
	ASSERT_ERRNO(link("a", "b"), EEXIST);
	assert_contents("b", "b", 1);
	ck_assert_uint_eq(xstat("a").st_nlink, 1);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Rename                                                                                   */

static int xrenameat2(const char *from, const char *to, unsigned int flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
}

START_TEST(rename_moves_file_keeping_inode_and_data)
{
	ino_t ino;

	make_file_with("a", "payload", 7);
	ino = xstat("a").st_ino;
	CHECK(mkdir("d", 0755));
	CHECK(rename("a", "d/b"));
	ASSERT_ERRNO(access("a", F_OK), ENOENT);
	ck_assert_uint_eq(xstat("d/b").st_ino, ino);
	ck_assert_uint_eq(xstat("d/b").st_nlink, 1);
	assert_contents("d/b", "payload", 7);
}
END_TEST

START_TEST(rename_over_file_replaces_it_and_old_data_stays_readable_via_fd)
{
	char buf[16];
	int old;

	make_file_with("target", "old data", 8);
	make_file_with("source", "new", 3);
	old = CHECK(open("target", O_RDWR));
	CHECK(rename("source", "target"));
	ASSERT_ERRNO(access("source", F_OK), ENOENT);
	assert_contents("target", "new", 3);
	ck_assert_int_eq(pread_all(old, buf, sizeof(buf), 0), 8);
	ck_assert_mem_eq(buf, "old data", 8);
	ck_assert_uint_eq(xfstat(old).st_nlink, 0);
	ck_assert_int_eq(CHECK(pwrite(old, "OLD", 3, 0)), 3);
	assert_contents("target", "new", 3);
	CHECK(close(old));
}
END_TEST

START_TEST(rename_noreplace_over_existing_fails_eexist)
{
	make_file_with("a", "a", 1);
	make_file_with("b", "b", 1);
	ASSERT_ERRNO(xrenameat2("a", "b", RENAME_NOREPLACE), EEXIST);
	assert_contents("a", "a", 1);
	assert_contents("b", "b", 1);
}
END_TEST

START_TEST(rename_noreplace_to_free_name_moves)
{
	make_file_with("a", "a", 1);
	CHECK(xrenameat2("a", "b", RENAME_NOREPLACE));
	ASSERT_ERRNO(access("a", F_OK), ENOENT);
	assert_contents("b", "a", 1);
}
END_TEST

START_TEST(rename_exchange_swaps_files)
{
	ino_t ia, ib;

	make_file_with("a", "contents of a", 13);
	make_file_with("b", "b", 1);
	ia = xstat("a").st_ino;
	ib = xstat("b").st_ino;
	CHECK(xrenameat2("a", "b", RENAME_EXCHANGE));
	assert_contents("a", "b", 1);
	assert_contents("b", "contents of a", 13);
	ck_assert_uint_eq(xstat("a").st_ino, ib);
	ck_assert_uint_eq(xstat("b").st_ino, ia);
}
END_TEST

START_TEST(rename_exchange_swaps_file_and_directory)
{
	make_file_with("f", "file", 4);
	CHECK(mkdir("d", 0755));
	make_file_with("d/inside", "in", 2);
	CHECK(xrenameat2("f", "d", RENAME_EXCHANGE));
	ck_assert(S_ISDIR(xstat("f").st_mode));
	ck_assert(S_ISREG(xstat("d").st_mode));
	assert_contents("f/inside", "in", 2);
	assert_contents("d", "file", 4);
	ck_assert_uint_eq(xstat(".").st_nlink, 3);
}
END_TEST

START_TEST(rename_exchange_across_parents_moves_link_counts)
{
	CHECK(mkdir("p1", 0755));
	CHECK(mkdir("p2", 0755));
	CHECK(mkdir("p1/dir", 0755));
	make_file_with("p2/file", "", 0);
	ck_assert_uint_eq(xstat("p1").st_nlink, 3);
	ck_assert_uint_eq(xstat("p2").st_nlink, 2);
	CHECK(xrenameat2("p1/dir", "p2/file", RENAME_EXCHANGE));
	ck_assert(S_ISREG(xstat("p1/dir").st_mode));
	ck_assert(S_ISDIR(xstat("p2/file").st_mode));
	ck_assert_uint_eq(xstat("p1").st_nlink, 2);
	ck_assert_uint_eq(xstat("p2").st_nlink, 3);
}
END_TEST

START_TEST(rename_exchange_dirs_across_parents_updates_dotdot)
{
	struct dent ents[8];
	size_t n;

	CHECK(mkdir("p1", 0755));
	CHECK(mkdir("p2", 0755));
	CHECK(mkdir("p1/x", 0755));
	CHECK(mkdir("p2/y", 0755));
	make_file_with("p1/x/was_x", "", 0);
	make_file_with("p2/y/was_y", "", 0);
	CHECK(xrenameat2("p1/x", "p2/y", RENAME_EXCHANGE));
	/* The names stay; the directories behind them swap, and each ".." follows. */
	ck_assert(S_ISREG(xstat("p1/x/was_y").st_mode));
	ck_assert(S_ISREG(xstat("p2/y/was_x").st_mode));
	n = list_dir("p1/x", ents, 8);
	ck_assert_uint_eq(find_dent(ents, n, "..")->ino, xstat("p1").st_ino);
	n = list_dir("p2/y", ents, 8);
	ck_assert_uint_eq(find_dent(ents, n, "..")->ino, xstat("p2").st_ino);
	ck_assert_uint_eq(xstat("p1/x/..").st_ino, xstat("p1").st_ino);
}
END_TEST

START_TEST(rename_dir_over_non_empty_dir_fails_enotempty)
{
	CHECK(mkdir("a", 0755));
	CHECK(mkdir("b", 0755));
	make_file_with("b/f", "", 0);
	ASSERT_ERRNO(rename("a", "b"), ENOTEMPTY);
	ck_assert(S_ISDIR(xstat("a").st_mode));
	ck_assert(S_ISREG(xstat("b/f").st_mode));
}
END_TEST

START_TEST(rename_dir_over_empty_dir_replaces_it)
{
	ino_t ia;

	CHECK(mkdir("a", 0755));
	make_file_with("a/f", "f", 1);
	CHECK(mkdir("b", 0755));
	ia = xstat("a").st_ino;
	CHECK(rename("a", "b"));
	ASSERT_ERRNO(access("a", F_OK), ENOENT);
	ck_assert_uint_eq(xstat("b").st_ino, ia);
	assert_contents("b/f", "f", 1);
	ck_assert_uint_eq(xstat(".").st_nlink, 3);
}
END_TEST

START_TEST(rename_file_over_dir_fails_eisdir)
{
	make_file_with("f", "", 0);
	CHECK(mkdir("d", 0755));
	ASSERT_ERRNO(rename("f", "d"), EISDIR);
	ck_assert(S_ISDIR(xstat("d").st_mode));
}
END_TEST

START_TEST(rename_dir_over_file_fails_enotdir)
{
	make_file_with("f", "", 0);
	CHECK(mkdir("d", 0755));
	ASSERT_ERRNO(rename("d", "f"), ENOTDIR);
	ck_assert(S_ISREG(xstat("f").st_mode));
}
END_TEST

START_TEST(rename_dir_into_own_subdirectory_fails_einval)
{
	CHECK(mkdir("a", 0755));
	CHECK(mkdir("a/b", 0755));
	ASSERT_ERRNO(rename("a", "a/b/c"), EINVAL);
	ASSERT_ERRNO(rename("a", "a/c"), EINVAL);
	ck_assert(S_ISDIR(xstat("a/b").st_mode));
}
END_TEST

START_TEST(rename_dir_dotdot_points_at_new_parent)
{
	struct dent ents[8];
	size_t n;

	CHECK(mkdir("p1", 0755));
	CHECK(mkdir("p2", 0755));
	CHECK(mkdir("p1/d", 0755));
	CHECK(rename("p1/d", "p2/d"));
	ck_assert_uint_eq(xstat("p2/d/..").st_ino, xstat("p2").st_ino);
	n = list_dir("p2/d", ents, 8);
	ck_assert_uint_eq(find_dent(ents, n, "..")->ino, xstat("p2").st_ino);
}
END_TEST

START_TEST(rename_dir_across_parents_moves_link_count)
{
	CHECK(mkdir("p1", 0755));
	CHECK(mkdir("p2", 0755));
	CHECK(mkdir("p1/d", 0755));
	ck_assert_uint_eq(xstat("p1").st_nlink, 3);
	CHECK(rename("p1/d", "p2/d"));
	ck_assert_uint_eq(xstat("p1").st_nlink, 2);
	ck_assert_uint_eq(xstat("p2").st_nlink, 3);
	ck_assert_uint_eq(xstat("p2/d").st_nlink, 2);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Unlinked but open                                                                        */

START_TEST(unlinked_open_file_stays_readable_and_writable)
{
	char buf[32];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(write(fd, "still here", 10)), 10);
	CHECK(unlink("f"));
	ASSERT_ERRNO(access("f", F_OK), ENOENT);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 10);
	ck_assert_mem_eq(buf, "still here", 10);
	ck_assert_int_eq(CHECK(pwrite(fd, "!", 1, 100)), 1);
	ck_assert_int_eq(xfstat(fd).st_size, 101);
	ck_assert_int_eq(pread_all(fd, buf, 1, 100), 1);
	ck_assert_int_eq(buf[0], '!');
	CHECK(ftruncate(fd, 4));
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 4);
	CHECK(close(fd));
}
END_TEST

START_TEST(unlinked_open_file_has_nlink_zero)
{
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(write(fd, "x", 1)), 1);
	CHECK(unlink("f"));
	ck_assert_uint_eq(xfstat(fd).st_nlink, 0);
	ck_assert_int_eq(xfstat(fd).st_size, 1);
	CHECK(close(fd));
}
END_TEST

START_TEST(unlinked_open_file_does_not_block_new_file_of_same_name)
{
	char buf[8];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(write(fd, "first", 5)), 5);
	CHECK(unlink("f"));
	make_file_with("f", "second", 6);
	ck_assert_uint_ne(xstat("f").st_ino, xfstat(fd).st_ino);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 5);
	ck_assert_mem_eq(buf, "first", 5);
	assert_contents("f", "second", 6);
	CHECK(close(fd));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Readdir                                                                                  */

START_TEST(readdir_lists_exactly_created_entries_with_d_type)
{
	struct dent ents[16];
	size_t n;

	CHECK(mkdir("d", 0755));
	make_file_with("d/file", "", 0);
	CHECK(mkdir("d/sub", 0755));
	CHECK(symlink("file", "d/link"));
	CHECK(mknod("d/fifo", S_IFIFO | 0644, 0));
	CHECK(mknod("d/sock", S_IFSOCK | 0644, 0));
	n = list_dir("d", ents, 16);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(find_dent(ents, n, ".")->type, DT_DIR);
	ck_assert_uint_eq(find_dent(ents, n, "..")->type, DT_DIR);
	ck_assert_uint_eq(find_dent(ents, n, "file")->type, DT_REG);
	ck_assert_uint_eq(find_dent(ents, n, "sub")->type, DT_DIR);
	ck_assert_uint_eq(find_dent(ents, n, "link")->type, DT_LNK);
	ck_assert_uint_eq(find_dent(ents, n, "fifo")->type, DT_FIFO);
	ck_assert_uint_eq(find_dent(ents, n, "sock")->type, DT_SOCK);
}
END_TEST

START_TEST(readdir_empty_directory_lists_dot_and_dotdot)
{
	struct dent ents[4];
	size_t n;

	CHECK(mkdir("d", 0755));
	make_file_with("d/f", "", 0);
	CHECK(unlink("d/f"));
	n = list_dir("d", ents, 4);
	ck_assert_uint_eq(n, 2);
	find_dent(ents, n, ".");
	find_dent(ents, n, "..");
}
END_TEST

START_TEST(readdir_d_ino_matches_stat)
{
	struct dent ents[8];
	size_t n;

	CHECK(mkdir("d", 0755));
	make_file_with("d/f", "", 0);
	CHECK(mkdir("d/s", 0755));
	n = list_dir("d", ents, 8);
	ck_assert_uint_eq(find_dent(ents, n, ".")->ino, xstat("d").st_ino);
	ck_assert_uint_eq(find_dent(ents, n, "..")->ino, xstat(".").st_ino);
	ck_assert_uint_eq(find_dent(ents, n, "f")->ino, xstat("d/f").st_ino);
	ck_assert_uint_eq(find_dent(ents, n, "s")->ino, xstat("d/s").st_ino);
}
END_TEST

/* Index of a name "eNNNN" below count, or -1. */
static int entry_index(const char *name, int count)
{
	char *end;
	long i;

	if (name[0] != 'e' || strlen(name) != 5)
		return -1;
	i = strtol(name + 1, &end, 10);
	return (*end == '\0' && i >= 0 && i < count) ? (int)i : -1;
}

static void make_entries(const char *dir, int count)
{
	char name[64];

	CHECK(mkdir(dir, 0755));
	for (int i = 0; i < count; i++) {
		snprintf(name, sizeof(name), "%s/e%04d", dir, i);
		make_file_with(name, "", 0);
	}
}

/*
 * The tests that change a directory while reading it run twice (Check loop tests, the
 * iteration is the number after the test name in a failure): _i 0 reads with glibc's readdir,
 * which asks for 32 KiB a call, as programs do; _i 1 reads with getdents64 and a 512-byte
 * buffer, about 16 entries a call, so the file system resumes from its directory offsets
 * again and again (on tmpfs, 500 entries fit in one glibc call and would hide that).
 * glibc's readdir takes ENOENT from getdents for the end of the directory, so a file system
 * that fails a READDIRPLUS because an entry vanished meanwhile silently loses the rest of the
 * listing: libfuse's passthrough_ll does, and fails _i 0 of the "unlinking other" test.
 */
struct dir_reader {
	bool raw;
	DIR *dir;
	int fd;
	long len, pos;
	uint64_t buf[64];
};

struct raw_dirent {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void reader_open(struct dir_reader *rd, const char *path, bool raw)
{
	rd->raw = raw;
	rd->len = rd->pos = 0;
	if (raw) {
		rd->dir = NULL;
		rd->fd = CHECK(open(path, O_RDONLY | O_DIRECTORY));
	} else {
		rd->dir = opendir(path);
		ck_assert_msg(rd->dir != NULL, "opendir(%s): %s", path, errname(errno));
		rd->fd = dirfd(rd->dir);
	}
}

static const char *reader_next_any(struct dir_reader *rd)
{
	struct raw_dirent *e;
	struct dirent *de;

	if (!rd->raw) {
		errno = 0;
		de = readdir(rd->dir);
		ck_assert_msg(de != NULL || errno == 0, "readdir: %s", errname(errno));
		return de ? de->d_name : NULL;
	}
	if (rd->pos >= rd->len) {
		rd->len = syscall(SYS_getdents64, rd->fd, rd->buf, sizeof(rd->buf));
		ck_assert_msg(rd->len >= 0, "getdents64: %s", errname(errno));
		rd->pos = 0;
		if (rd->len == 0)
			return NULL;
	}
	e = (struct raw_dirent *)((char *)rd->buf + rd->pos);
	ck_assert_uint_gt(e->d_reclen, 0);
	rd->pos += e->d_reclen;
	return e->d_name;
}

/* The next name other than "." and "..", or NULL at the end. */
static const char *reader_next(struct dir_reader *rd)
{
	const char *name;

	do
		name = reader_next_any(rd);
	while (name && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0));
	return name;
}

static void reader_close(struct dir_reader *rd)
{
	if (rd->raw)
		CHECK(close(rd->fd));
	else
		CHECK(closedir(rd->dir));
}

START_TEST(getdents_with_small_buffer_lists_each_entry_once)
{
	enum { N = 1000 };
	int seen[N] = { 0 }, total = 0;
	struct dir_reader rd;
	const char *name;

	make_entries("d", N);
	reader_open(&rd, "d", true);
	while ((name = reader_next(&rd)) != NULL) {
		int k = entry_index(name, N);

		ck_assert_msg(k >= 0, "unexpected entry \"%s\"", name);
		ck_assert_msg(seen[k] == 0, "entry \"%s\" listed twice", name);
		seen[k]++;
		total++;
	}
	ck_assert_int_eq(total, N);
	reader_close(&rd);
}
END_TEST

START_TEST(readdir_lists_1000_entries_exactly_once)
{
	enum { N = 1000 };
	static struct dent ents[N + 10];
	int seen[N] = { 0 };
	size_t n;

	make_entries("d", N);
	n = list_dir("d", ents, N + 10);
	for (size_t i = 0; i < n; i++) {
		int k = entry_index(ents[i].name, N);

		if (strcmp(ents[i].name, ".") == 0 || strcmp(ents[i].name, "..") == 0)
			continue;
		ck_assert_msg(k >= 0, "unexpected entry \"%s\"", ents[i].name);
		ck_assert_msg(seen[k] == 0, "entry \"%s\" listed twice", ents[i].name);
		seen[k]++;
	}
	ck_assert_uint_eq(n, N + 2);
}
END_TEST

START_TEST(readdir_while_unlinking_each_entry_lists_each_once)
{
	enum { N = 500 };
	int seen[N] = { 0 }, total = 0;
	struct dir_reader rd;
	const char *name;

	make_entries("d", N);
	reader_open(&rd, "d", _i == 1);
	while ((name = reader_next(&rd)) != NULL) {
		int k = entry_index(name, N);

		ck_assert_msg(k >= 0, "unexpected entry \"%s\"", name);
		ck_assert_msg(seen[k] == 0, "entry \"%s\" returned twice", name);
		seen[k]++;
		total++;
		CHECK(unlinkat(rd.fd, name, 0));
	}
	reader_close(&rd);
	ck_assert_int_eq(total, N);
	CHECK(rmdir("d"));
}
END_TEST

START_TEST(readdir_while_unlinking_other_entries_returns_none_twice)
{
	enum { N = 500 };
	int seen[N] = { 0 };
	bool gone[N] = { false };
	char victim[16];
	struct dir_reader rd;
	const char *name;
	int step = 0;

	make_entries("d", N);
	reader_open(&rd, "d", _i == 1);
	while ((name = reader_next(&rd)) != NULL) {
		int k = entry_index(name, N);

		ck_assert_msg(k >= 0, "unexpected entry \"%s\"", name);
		ck_assert_msg(seen[k] == 0, "entry \"%s\" returned twice", name);
		seen[k]++;
		/* Delete some other entry, ahead or behind in whatever order readdir uses. */
		for (int tries = 0; tries < N; tries++) {
			int v = (k * 7 + 13 + step++ * 31) % N;

			if (gone[v] || v == k)
				continue;
			snprintf(victim, sizeof(victim), "e%04d", v);
			CHECK(unlinkat(rd.fd, victim, 0));
			gone[v] = true;
			break;
		}
	}
	reader_close(&rd);
	/* POSIX leaves open only whether entries removed or added meanwhile are returned. */
	for (int i = 0; i < N; i++)
		ck_assert_msg(seen[i] == 1 || gone[i], "entry e%04d, never unlinked, not returned", i);
}
END_TEST

START_TEST(readdir_while_creating_entries_returns_none_twice)
{
	enum { N = 300 };
	int seen[N] = { 0 }, seen_new[N] = { 0 }, created = 0;
	char fresh[16];
	struct dir_reader rd;
	const char *name;

	make_entries("d", N);
	reader_open(&rd, "d", _i == 1);
	while ((name = reader_next(&rd)) != NULL) {
		int k = entry_index(name, N);

		if (k < 0) {
			char *end;
			long j = strtol(name + 3, &end, 10);

			ck_assert_msg(strncmp(name, "new", 3) == 0 && *end == '\0' && j >= 0 &&
					      j < created,
				      "unexpected entry \"%s\"", name);
			ck_assert_msg(seen_new[j] == 0, "entry \"%s\" returned twice", name);
			seen_new[j]++;
			continue;
		}
		ck_assert_msg(seen[k] == 0, "entry \"%s\" returned twice", name);
		seen[k]++;
		if (created < N) {
			int fd;

			snprintf(fresh, sizeof(fresh), "new%04d", created++);
			fd = CHECK(openat(rd.fd, fresh, O_WRONLY | O_CREAT | O_EXCL, 0644));
			CHECK(close(fd));
		}
	}
	reader_close(&rd);
	for (int i = 0; i < N; i++)
		ck_assert_msg(seen[i] == 1, "entry e%04d not returned", i);
}
END_TEST

/*
 * A listing that renames each entry it returns, within the directory (what xfstests'
 * generic/736 does with 5000 entries): it ends, and returns each file once, under its old
 * name or its new one.  A renamed entry keeps its place in the listing, as on tmpfs; given a
 * new place after the reader's, it would be returned again, and renamed again, without end.
 */
START_TEST(readdir_while_renaming_each_entry_ends_and_returns_each_once)
{
	enum { N = 1000 };
	int seen[N] = { 0 }, total = 0;
	char fresh[16];
	struct dir_reader rd;
	const char *name;

	make_entries("d", N);
	reader_open(&rd, "d", _i == 1);
	while ((name = reader_next(&rd)) != NULL) {
		bool renamed = name[0] == 'r';
		int k;

		snprintf(fresh, sizeof(fresh), "e%.8s", name + 1); /* eNNNN or rNNNN: file NNNN */
		k = entry_index(fresh, N);
		ck_assert_msg(k >= 0 && (renamed || name[0] == 'e'), "unexpected entry \"%s\"", name);
		ck_assert_msg(seen[k] == 0, "file %d returned twice (now as \"%s\")", k, name);
		ck_assert_msg(++total <= N, "the listing goes on past the %d files", N);
		seen[k]++;
		snprintf(fresh, sizeof(fresh), "r%04d", k);
		if (!renamed)
			CHECK(renameat(rd.fd, name, rd.fd, fresh));
	}
	reader_close(&rd);
	for (int i = 0; i < N; i++)
		ck_assert_msg(seen[i] == 1, "file %d not returned", i);
}
END_TEST

/* A handle of path, as name_to_handle_at gives it (malloc'd). */
static struct file_handle *handle_of(const char *path)
{
	struct file_handle *h = xmalloc(sizeof(*h) + MAX_HANDLE_SZ);
	int mount_id;

	h->handle_bytes = MAX_HANDLE_SZ;
	CHECK(name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0));
	return h;
}

/* Has the kernel drop the dentries and inodes it holds unused (root only). */
static void drop_inode_cache(void)
{
	int fd = CHECK(open("/proc/sys/vm/drop_caches", O_WRONLY));

	sync();
	ck_assert_int_eq(write(fd, "2", 1), 1);
	CHECK(close(fd));
}

/*
 * open_by_handle_at works for a live file and directory after the kernel dropped its
 * inode cache (the kernel then asks the daemon for the node of the handle), and fails with
 * ESTALE for a file whose last name went, as on tmpfs (xfstests generic/467, generic/756).
 */
START_TEST(open_by_handle_outlives_the_inode_cache)
{
	struct file_handle *hf, *hd, *hgone;
	char buf[16] = { 0 };
	int mfd, fd;

	CHECK(mkdir("hd", 0755));
	make_file_with("hd/f", "handled", 7);
	make_file_with("gone", "x", 1);
	hf = handle_of("hd/f");
	hd = handle_of("hd");
	hgone = handle_of("gone");
	CHECK(unlink("gone"));
	mfd = CHECK(open(".", O_RDONLY | O_DIRECTORY));
	drop_inode_cache();
	fd = open_by_handle_at(mfd, hf, O_RDONLY);
	ck_assert_msg(fd >= 0, "open_by_handle_at(file) after the cache was dropped: %s",
		      errname(errno));
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 7);
	ck_assert_str_eq(buf, "handled");
	CHECK(close(fd));
	drop_inode_cache();
	fd = open_by_handle_at(mfd, hd, O_RDONLY | O_DIRECTORY);
	ck_assert_msg(fd >= 0, "open_by_handle_at(directory) after the cache was dropped: %s",
		      errname(errno));
	CHECK(faccessat(fd, "f", R_OK, 0));
	CHECK(close(fd));
	ck_assert_int_eq(open_by_handle_at(mfd, hgone, O_RDONLY), -1);
	ck_assert_msg(errno == ESTALE, "open_by_handle_at(unlinked file): %s, want ESTALE",
		      errname(errno));
	/* A forged handle: FUSE's holds the node id in its first two 32-bit words.  An id
	 * that names no node is refused, and the daemon lives on. */
	if (hf->handle_bytes >= 12) {
		uint32_t w[3];

		memcpy(w, hf->f_handle, sizeof(w));
		w[0] ^= 0x5a5a5a5a;
		w[1] ^= 0x00100008;
		memcpy(hf->f_handle, w, sizeof(w));
		drop_inode_cache();
		ck_assert_int_eq(open_by_handle_at(mfd, hf, O_RDONLY), -1);
		ck_assert_msg(errno == ESTALE, "open_by_handle_at(forged handle): %s, want ESTALE",
			      errname(errno));
		CHECK(faccessat(mfd, "hd/f", R_OK, 0));
	}
	CHECK(close(mfd));
	free(hf);
	free(hd);
	free(hgone);
}
END_TEST

/*
 * renameat2 with RENAME_WHITEOUT (what overlayfs needs of an upper directory; root only,
 * for CAP_MKNOD): the file moves and its old name names a character device 0:0, as on tmpfs.
 */
START_TEST(rename_whiteout_leaves_a_whiteout_at_the_old_name)
{
	struct stat st;

	make_file_with("wa", "whiteout", 8);
	CHECK(renameat2(AT_FDCWD, "wa", AT_FDCWD, "wb", RENAME_WHITEOUT));
	CHECK(lstat("wa", &st));
	ck_assert_msg(S_ISCHR(st.st_mode) && st.st_rdev == 0,
		      "the old name: mode 0%o rdev %lu, want a character device 0:0",
		      (unsigned)st.st_mode, (unsigned long)st.st_rdev);
	assert_contents("wb", "whiteout", 8);
	make_file_with("wc", "x", 1);
	ck_assert_int_eq(renameat2(AT_FDCWD, "wc", AT_FDCWD, "wb",
				   RENAME_WHITEOUT | RENAME_NOREPLACE), -1);
	ck_assert_int_eq(errno, EEXIST);
	CHECK(lstat("wc", &st));
	ck_assert(S_ISREG(st.st_mode));
}
END_TEST

/*
 * O_TMPFILE (xfstests generic/004, generic/531): an unnamed file in the directory, nlink 0,
 * that linkat gives a name with its data; with O_EXCL it can never get one.  As on tmpfs.
 */
START_TEST(o_tmpfile_makes_an_unnamed_file_that_linkat_can_name)
{
	char path[64], buf[16] = { 0 };
	int fd = open(".", O_TMPFILE | O_RDWR, 0640), ex;
	struct stat st;

	ck_assert_msg(fd >= 0, "open(\".\", O_TMPFILE): %s", errname(errno));
	pwrite_all(fd, "tmpdata", 7, 0);
	CHECK(fstat(fd, &st));
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0640);
	ck_assert_int_eq(access("named", F_OK), -1);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	CHECK(linkat(AT_FDCWD, path, AT_FDCWD, "named", AT_SYMLINK_FOLLOW));
	CHECK(close(fd));
	ck_assert_uint_eq(xstat("named").st_nlink, 1);
	fd = CHECK(open("named", O_RDONLY));
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 7);
	ck_assert_str_eq(buf, "tmpdata");
	CHECK(close(fd));
	ex = CHECK(open(".", O_TMPFILE | O_RDWR | O_EXCL, 0600));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ex);
	ck_assert_int_eq(linkat(AT_FDCWD, path, AT_FDCWD, "never", AT_SYMLINK_FOLLOW), -1);
	ck_assert_int_eq(errno, ENOENT);
	CHECK(close(ex));
}
END_TEST

START_TEST(seekdir_returns_to_telldir_position)
{
	enum { N = 100 };
	char first[10][NAME_MAX + 1];
	struct dirent *e;
	long pos;
	DIR *d;

	make_entries("d", N);
	d = opendir("d");
	ck_assert_ptr_nonnull(d);
	for (int i = 0; i < 30; i++)
		ck_assert_ptr_nonnull(readdir(d));
	pos = telldir(d);
	ck_assert_int_ne(pos, -1);
	for (int i = 0; i < 10; i++) {
		e = readdir(d);
		ck_assert_ptr_nonnull(e);
		strcpy(first[i], e->d_name);
	}
	/* Read on, so that glibc's buffer no longer covers pos. */
	while (readdir(d) != NULL)
		;
	seekdir(d, pos);
	for (int i = 0; i < 10; i++) {
		e = readdir(d);
		ck_assert_ptr_nonnull(e);
		ck_assert_str_eq(e->d_name, first[i]);
	}
	closedir(d);
}
END_TEST

START_TEST(rewinddir_shows_entries_created_since_opendir)
{
	DIR *d;
	struct dirent *e;
	bool found = false;

	CHECK(mkdir("d", 0755));
	d = opendir("d");
	ck_assert_ptr_nonnull(d);
	while (readdir(d) != NULL)
		;
	make_file_with("d/late", "", 0);
	rewinddir(d);
	while ((e = readdir(d)) != NULL)
		found |= strcmp(e->d_name, "late") == 0;
	closedir(d);
	ck_assert(found);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Sync, locks, statfs, copy                                                                */

START_TEST(fsync_succeeds)
{
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));
	int dfd = CHECK(open(".", O_RDONLY | O_DIRECTORY));

	ck_assert_int_eq(CHECK(write(fd, "data", 4)), 4);
	CHECK(fsync(fd));
	CHECK(fsync(dfd));
	CHECK(close(dfd));
	CHECK(close(fd));
	assert_contents("f", "data", 4);
}
END_TEST

START_TEST(fdatasync_succeeds)
{
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(write(fd, "data", 4)), 4);
	CHECK(fdatasync(fd));
	CHECK(close(fd));
	assert_contents("f", "data", 4);
}
END_TEST

START_TEST(statfs_reports_4096_byte_blocks_and_255_byte_names)
{
	struct statvfs sv;
	int fd;

	CHECK(statvfs(".", &sv));
	ck_assert_uint_eq(sv.f_bsize, 4096);
	ck_assert_uint_ge(sv.f_namemax, 255);
	make_file_with("f", "", 0);
	fd = CHECK(open("f", O_RDONLY));
	CHECK(fstatvfs(fd, &sv));
	ck_assert_uint_eq(sv.f_bsize, 4096);
	CHECK(close(fd));
}
END_TEST

START_TEST(flock_exclusive_conflicts_between_open_files)
{
	int a, b;

	make_file_with("f", "", 0);
	a = CHECK(open("f", O_RDWR));
	b = CHECK(open("f", O_RDWR));
	CHECK(flock(a, LOCK_EX | LOCK_NB));
	ASSERT_ERRNO(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	ASSERT_ERRNO(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	CHECK(flock(a, LOCK_UN));
	CHECK(flock(b, LOCK_EX | LOCK_NB));
	CHECK(close(a));
	CHECK(close(b));
}
END_TEST

/* Forks a child that tries a write lock on [50, 60) of f; returns its errno (0 = got it). */
static int child_setlk(struct flock *seen)
{
	int pipefd[2];
	pid_t pid;
	int status;

	CHECK(pipe(pipefd));
	pid = CHECK(fork());
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 10 };
		struct flock probe = fl;
		int fd = open("f", O_RDWR), r;

		if (fd < 0)
			_exit(251);
		if (fcntl(fd, F_GETLK, &probe) != 0 ||
		    write(pipefd[1], &probe, sizeof(probe)) != sizeof(probe))
			_exit(252);
		r = fcntl(fd, F_SETLK, &fl);
		_exit(r == 0 ? 0 : errno & 0xff);
	}
	close(pipefd[1]);
	ck_assert_int_eq(read(pipefd[0], seen, sizeof(*seen)), sizeof(*seen));
	close(pipefd[0]);
	CHECK(waitpid(pid, &status, 0));
	ck_assert(WIFEXITED(status));
	ck_assert_int_lt(WEXITSTATUS(status), 250);
	return WEXITSTATUS(status);
}

START_TEST(posix_lock_conflicts_across_processes)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	struct flock seen;
	int fd;

	make_file_with("f", "", 0);
	fd = CHECK(open("f", O_RDWR));
	CHECK(fcntl(fd, F_SETLK, &fl));
	ASSERT_CHILD_ERRNO(child_setlk(&seen), EAGAIN);
	fl.l_type = F_UNLCK;
	CHECK(fcntl(fd, F_SETLK, &fl));
	ASSERT_CHILD_ERRNO(child_setlk(&seen), 0);
	CHECK(close(fd));
}
END_TEST

START_TEST(posix_getlk_reports_lock_holder)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	struct flock seen;
	int fd;

	make_file_with("f", "", 0);
	fd = CHECK(open("f", O_RDWR));
	CHECK(fcntl(fd, F_SETLK, &fl));
	child_setlk(&seen);
	ck_assert_int_eq(seen.l_type, F_WRLCK);
	ck_assert_int_eq(seen.l_pid, getpid());
	ck_assert_int_eq(seen.l_start, 0);
	ck_assert_int_eq(seen.l_len, 100);
	CHECK(close(fd));
}
END_TEST

START_TEST(copy_file_range_copies_bytes)
{
	const size_t size = 100 * KIB, len = 50000;
	uint8_t *buf = xmalloc(size);
	int in, out;
	off_t off_in = 1000, off_out = 0;
	size_t done = 0;

	pattern_fill(buf, size, 0, 10);
	make_file_with("src", buf, size);
	in = CHECK(open("src", O_RDONLY));
	out = CHECK(open("dst", O_RDWR | O_CREAT, 0644));
	while (done < len) {
		ssize_t n = copy_file_range(in, &off_in, out, &off_out, len - done, 0);

		ck_assert_msg(n > 0, "copy_file_range: %s", n < 0 ? errname(errno) : "copied 0");
		done += (size_t)n;
	}
	ck_assert_int_eq(xfstat(out).st_size, len);
	memset(buf, 0, size);
	ck_assert_int_eq(pread_all(out, buf, size, 0), len);
	pattern_assert(buf, len, 1000, 10);
	CHECK(close(in));
	CHECK(close(out));
	free(buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Extended attributes                                                                      */

static const char bin_value[] = { 0, 1, 2, (char)0xff, 0, 'x', '\n', (char)0x80 };

START_TEST(xattr_binary_value_round_trips_on_file)
{
	char buf[64];

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.bin", bin_value, sizeof(bin_value), 0));
	ck_assert_int_eq(CHECK(getxattr("f", "user.bin", buf, sizeof(buf))), sizeof(bin_value));
	ck_assert_mem_eq(buf, bin_value, sizeof(bin_value));
}
END_TEST

START_TEST(xattr_binary_value_round_trips_on_directory)
{
	char buf[64];

	CHECK(mkdir("d", 0755));
	CHECK(setxattr("d", "user.bin", bin_value, sizeof(bin_value), 0));
	ck_assert_int_eq(CHECK(getxattr("d", "user.bin", buf, sizeof(buf))), sizeof(bin_value));
	ck_assert_mem_eq(buf, bin_value, sizeof(bin_value));
}
END_TEST

START_TEST(xattr_empty_value_round_trips)
{
	char buf[8];

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.empty", "", 0, 0));
	ck_assert_int_eq(CHECK(getxattr("f", "user.empty", buf, sizeof(buf))), 0);
	ck_assert_int_eq(CHECK(getxattr("f", "user.empty", NULL, 0)), 0);
	ASSERT_ERRNO(setxattr("f", "user.empty", "x", 1, XATTR_CREATE), EEXIST);
}
END_TEST

START_TEST(xattr_set_and_get_through_fd)
{
	char buf[16];
	int fd;

	make_file_with("f", "", 0);
	fd = CHECK(open("f", O_RDONLY));
	CHECK(fsetxattr(fd, "user.fd", "via fd", 6, 0));
	ck_assert_int_eq(CHECK(getxattr("f", "user.fd", buf, sizeof(buf))), 6);
	ck_assert_mem_eq(buf, "via fd", 6);
	ck_assert_int_eq(CHECK(fgetxattr(fd, "user.fd", buf, sizeof(buf))), 6);
	CHECK(close(fd));
}
END_TEST

START_TEST(xattr_size_probe_returns_value_length)
{
	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.v", "twelve bytes", 12, 0));
	ck_assert_int_eq(CHECK(getxattr("f", "user.v", NULL, 0)), 12);
}
END_TEST

START_TEST(xattr_get_with_small_buffer_fails_erange)
{
	char buf[16];

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.v", "twelve bytes", 12, 0));
	ASSERT_ERRNO(getxattr("f", "user.v", buf, 11), ERANGE);
	ASSERT_ERRNO(getxattr("f", "user.v", buf, 1), ERANGE);
	ck_assert_int_eq(CHECK(getxattr("f", "user.v", buf, 12)), 12);
}
END_TEST

START_TEST(xattr_create_on_existing_fails_eexist)
{
	char buf[8];

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.v", "one", 3, XATTR_CREATE));
	ASSERT_ERRNO(setxattr("f", "user.v", "two", 3, XATTR_CREATE), EEXIST);
	ck_assert_int_eq(CHECK(getxattr("f", "user.v", buf, sizeof(buf))), 3);
	ck_assert_mem_eq(buf, "one", 3);
}
END_TEST

START_TEST(xattr_replace_on_missing_fails_enodata)
{
	make_file_with("f", "", 0);
	ASSERT_ERRNO(setxattr("f", "user.v", "x", 1, XATTR_REPLACE), ENODATA);
	ASSERT_ERRNO(getxattr("f", "user.v", NULL, 0), ENODATA);
}
END_TEST

START_TEST(xattr_replace_with_shorter_value_shrinks_it)
{
	char buf[32];

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.v", "a long first value", 18, 0));
	CHECK(setxattr("f", "user.v", "short", 5, XATTR_REPLACE));
	ck_assert_int_eq(CHECK(getxattr("f", "user.v", buf, sizeof(buf))), 5);
	ck_assert_mem_eq(buf, "short", 5);
}
END_TEST

START_TEST(xattr_get_missing_fails_enodata)
{
	char buf[8];

	make_file_with("f", "", 0);
	ASSERT_ERRNO(getxattr("f", "user.missing", buf, sizeof(buf)), ENODATA);
	CHECK(mkdir("d", 0755));
	ASSERT_ERRNO(getxattr("d", "user.missing", NULL, 0), ENODATA);
}
END_TEST

/* Sets *n to the user.* names of a listxattr buffer; returns the buffer's length. */
static ssize_t list_user_xattrs(const char *path, char names[][64], int *n, int max)
{
	char buf[4096];
	ssize_t len = CHECK(listxattr(path, buf, sizeof(buf)));

	*n = 0;
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(buf + i) + 1) {
		if (strncmp(buf + i, "user.", 5) != 0)
			continue;
		ck_assert_int_lt(*n, max);
		ck_assert_uint_lt(strlen(buf + i), 64);
		strcpy(names[(*n)++], buf + i);
	}
	ck_assert_msg(len == 0 || buf[len - 1] == '\0', "listxattr list not NUL-terminated");
	return len;
}

static bool has_name(char names[][64], int n, const char *name)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		count += strcmp(names[i], name) == 0;
	ck_assert_msg(count <= 1, "listxattr lists %s twice", name);
	return count == 1;
}

START_TEST(listxattr_lists_exactly_the_user_names_set)
{
	char names[16][64];
	int n;
	ssize_t len;

	make_file_with("f", "", 0);
	list_user_xattrs("f", names, &n, 16);
	ck_assert_int_eq(n, 0);
	CHECK(setxattr("f", "user.a", "1", 1, 0));
	CHECK(setxattr("f", "user.bb", "", 0, 0));
	CHECK(setxattr("f", "user.ccc", bin_value, sizeof(bin_value), 0));
	len = list_user_xattrs("f", names, &n, 16);
	ck_assert_int_eq(n, 3);
	ck_assert(has_name(names, n, "user.a"));
	ck_assert(has_name(names, n, "user.bb"));
	ck_assert(has_name(names, n, "user.ccc"));
	ck_assert_int_eq(CHECK(listxattr("f", NULL, 0)), len);
}
END_TEST

START_TEST(listxattr_on_directory_lists_its_names)
{
	char names[16][64];
	int n;

	CHECK(mkdir("d", 0755));
	CHECK(setxattr("d", "user.dir", "v", 1, 0));
	list_user_xattrs("d", names, &n, 16);
	ck_assert_int_eq(n, 1);
	ck_assert(has_name(names, n, "user.dir"));
}
END_TEST

START_TEST(listxattr_with_small_buffer_fails_erange)
{
	char buf[8];

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.longer_name", "1", 1, 0));
	ASSERT_ERRNO(listxattr("f", buf, sizeof(buf)), ERANGE);
}
END_TEST

START_TEST(removexattr_then_get_fails_enodata)
{
	char names[16][64];
	int n;

	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.keep", "k", 1, 0));
	CHECK(setxattr("f", "user.gone", "g", 1, 0));
	CHECK(removexattr("f", "user.gone"));
	ASSERT_ERRNO(getxattr("f", "user.gone", NULL, 0), ENODATA);
	list_user_xattrs("f", names, &n, 16);
	ck_assert_int_eq(n, 1);
	ck_assert(has_name(names, n, "user.keep"));
	ASSERT_ERRNO(removexattr("f", "user.gone"), ENODATA);
}
END_TEST

START_TEST(xattr_64kib_value_round_trips)
{
	const size_t len = 65536;
	uint8_t *out = xmalloc(len), *in = xmalloc(len);

	pattern_fill(out, len, 0, 11);
	make_file_with("f", "", 0);
	CHECK(setxattr("f", "user.big", out, len, 0));
	ck_assert_int_eq(CHECK(getxattr("f", "user.big", NULL, 0)), len);
	ck_assert_int_eq(CHECK(getxattr("f", "user.big", in, len)), len);
	pattern_assert(in, len, 0, 11);
	free(out);
	free(in);
}
END_TEST

START_TEST(xattr_name_of_255_bytes_round_trips)
{
	char name[256], buf[8];

	memcpy(name, "user.", 5);
	memset(name + 5, 'n', 250);
	name[255] = '\0';
	make_file_with("f", "", 0);
	CHECK(setxattr("f", name, "ok", 2, 0));
	ck_assert_int_eq(CHECK(getxattr("f", name, buf, sizeof(buf))), 2);
	ck_assert_mem_eq(buf, "ok", 2);
}
END_TEST

START_TEST(xattr_user_on_symlink_fails_eperm)
{
	CHECK(symlink("target", "l"));
	ASSERT_ERRNO(lsetxattr("l", "user.v", "x", 1, 0), EPERM);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* fallocate                                                                                */

START_TEST(fallocate_extends_size_with_zeros)
{
	uint8_t buf[10001];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(write(fd, "head", 4)), 4);
	CHECK(fallocate(fd, 0, 0, 10000));
	ck_assert_int_eq(xfstat(fd).st_size, 10000);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 10000);
	ck_assert_mem_eq(buf, "head", 4);
	assert_zeros(buf + 4, 10000 - 4, 4);
	CHECK(close(fd));
}
END_TEST

START_TEST(fallocate_reserves_blocks)
{
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	CHECK(fallocate(fd, 0, 0, 64 * KIB));
	ck_assert_int_ge(xfstat(fd).st_blocks, 64 * KIB / 512);
	CHECK(close(fd));
}
END_TEST

START_TEST(fallocate_keep_size_keeps_size)
{
	uint8_t buf[16];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	ck_assert_int_eq(CHECK(write(fd, "0123456789", 10)), 10);
	CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, MIB));
	ck_assert_int_eq(xfstat(fd).st_size, 10);
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 0), 10);
	ck_assert_mem_eq(buf, "0123456789", 10);
	/* Growing later shows zeros where the allocation was. */
	CHECK(ftruncate(fd, 100));
	ck_assert_int_eq(pread_all(fd, buf, sizeof(buf), 50), 16);
	assert_zeros(buf, 16, 50);
	CHECK(close(fd));
}
END_TEST

START_TEST(fallocate_punch_hole_zeroes_range_and_frees_blocks)
{
	const size_t size = 16 * PAGE;
	uint8_t *buf = xmalloc(size);
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));
	blkcnt_t before;

	pattern_fill(buf, size, 0, 12);
	pwrite_all(fd, buf, size, 0);
	before = xfstat(fd).st_blocks;
	ck_assert_int_ge(before, (blkcnt_t)(size / 512));
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * PAGE, 8 * PAGE));
	ck_assert_int_eq(xfstat(fd).st_size, size);
	ck_assert_int_le(xfstat(fd).st_blocks, before - 8 * PAGE / 512);
	ck_assert_int_eq(pread_all(fd, buf, size, 0), size);
	pattern_assert(buf, 4 * PAGE, 0, 12);
	assert_zeros(buf + 4 * PAGE, 8 * PAGE, 4 * PAGE);
	pattern_assert(buf + 12 * PAGE, 4 * PAGE, 12 * PAGE, 12);
	CHECK(close(fd));
	free(buf);
}
END_TEST

START_TEST(fallocate_unaligned_punch_hole_zeroes_exact_bytes)
{
	const size_t size = 4 * PAGE, off = 1000, len = 2 * PAGE + 123;
	uint8_t *buf = xmalloc(size);
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	pattern_fill(buf, size, 0, 13);
	pwrite_all(fd, buf, size, 0);
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len));
	ck_assert_int_eq(pread_all(fd, buf, size, 0), size);
	pattern_assert(buf, off, 0, 13);
	assert_zeros(buf + off, len, off);
	pattern_assert(buf + off + len, size - off - len, off + len, 13);
	CHECK(close(fd));
	free(buf);
}
END_TEST

START_TEST(fallocate_punch_hole_is_found_by_seek_hole)
{
	uint8_t buf[4 * PAGE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	memset(buf, 'x', sizeof(buf));
	pwrite_all(fd, buf, sizeof(buf), 0);
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PAGE, 2 * PAGE));
	ck_assert_int_eq(CHECK(lseek(fd, 0, SEEK_HOLE)), PAGE);
	ck_assert_int_eq(CHECK(lseek(fd, PAGE, SEEK_DATA)), 3 * PAGE);
	CHECK(close(fd));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* SEEK_DATA / SEEK_HOLE                                                                    */

/* Data at [0, 4K) and [1M, 1M + 4K), a hole between; size 1M + 4K. */
static int make_two_extent_file(void)
{
	uint8_t buf[PAGE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));

	pattern_fill(buf, PAGE, 0, 14);
	pwrite_all(fd, buf, PAGE, 0);
	pwrite_all(fd, buf, PAGE, MIB);
	ck_assert_int_eq(xfstat(fd).st_size, MIB + PAGE);
	return fd;
}

START_TEST(seek_data_in_data_returns_same_offset)
{
	int fd = make_two_extent_file();

	ck_assert_int_eq(CHECK(lseek(fd, 0, SEEK_DATA)), 0);
	ck_assert_int_eq(CHECK(lseek(fd, 100, SEEK_DATA)), 100);
	ck_assert_int_eq(CHECK(lseek(fd, MIB + 5, SEEK_DATA)), MIB + 5);
	CHECK(close(fd));
}
END_TEST

START_TEST(seek_hole_finds_end_of_first_extent)
{
	int fd = make_two_extent_file();

	ck_assert_int_eq(CHECK(lseek(fd, 0, SEEK_HOLE)), PAGE);
	ck_assert_int_eq(CHECK(lseek(fd, 100, SEEK_HOLE)), PAGE);
	ck_assert_int_eq(CHECK(lseek(fd, PAGE + 10, SEEK_HOLE)), PAGE + 10);
	CHECK(close(fd));
}
END_TEST

START_TEST(seek_data_in_hole_finds_next_extent)
{
	int fd = make_two_extent_file();

	ck_assert_int_eq(CHECK(lseek(fd, PAGE, SEEK_DATA)), MIB);
	ck_assert_int_eq(CHECK(lseek(fd, 500000, SEEK_DATA)), MIB);
	CHECK(close(fd));
}
END_TEST

START_TEST(seek_data_past_last_data_fails_enxio)
{
	int fd = make_two_extent_file();

	ASSERT_ERRNO(lseek(fd, MIB + PAGE, SEEK_DATA), ENXIO);
	ASSERT_ERRNO(lseek(fd, 10 * MIB, SEEK_DATA), ENXIO);
	/* A trailing hole has no data either. */
	CHECK(ftruncate(fd, 2 * MIB));
	ASSERT_ERRNO(lseek(fd, MIB + PAGE, SEEK_DATA), ENXIO);
	CHECK(close(fd));
}
END_TEST

START_TEST(seek_hole_in_last_extent_returns_size)
{
	int fd = make_two_extent_file();

	ck_assert_int_eq(CHECK(lseek(fd, MIB, SEEK_HOLE)), MIB + PAGE);
	ASSERT_ERRNO(lseek(fd, MIB + PAGE, SEEK_HOLE), ENXIO);
	CHECK(ftruncate(fd, 2 * MIB));
	ck_assert_int_eq(CHECK(lseek(fd, MIB, SEEK_HOLE)), MIB + PAGE);
	ck_assert_int_eq(CHECK(lseek(fd, MIB + 2 * PAGE, SEEK_HOLE)), MIB + 2 * PAGE);
	CHECK(close(fd));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Shared mmap                                                                              */

START_TEST(mmap_shared_write_is_seen_by_pread_on_other_fd)
{
	const size_t len = 3 * PAGE;
	uint8_t buf[3 * PAGE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644)), other;
	uint8_t *map;

	CHECK(ftruncate(fd, (off_t)len));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	pattern_fill(map + 100, len - 200, 100, 15);
	CHECK(msync(map, len, MS_SYNC));
	other = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(pread_all(other, buf, len, 0), len);
	assert_zeros(buf, 100, 0);
	pattern_assert(buf + 100, len - 200, 100, 15);
	assert_zeros(buf + len - 100, 100, len - 100);
	CHECK(munmap(map, len));
	CHECK(close(other));
	CHECK(close(fd));
}
END_TEST

START_TEST(pwrite_is_seen_through_existing_mapping)
{
	const size_t len = 2 * PAGE;
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644)), other;
	uint8_t *map;

	CHECK(ftruncate(fd, (off_t)len));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(map[PAGE - 1], 0); /* fault the pages in first */
	ck_assert_int_eq(map[PAGE], 0);
	other = CHECK(open("f", O_RDWR));
	ck_assert_int_eq(CHECK(pwrite(other, "across", 6, PAGE - 3)), 6);
	ck_assert_mem_eq(map + PAGE - 3, "across", 6);
	CHECK(munmap(map, len));
	CHECK(close(other));
	CHECK(close(fd));
}
END_TEST

/*
 * tmpfs: a store through a shared mapping moves mtime and ctime (the write fault stamps the
 * file, fault_dirty_shared_page).  What every path shows is the stamp once the writer has
 * unmapped and closed, right away, whoever looked at the file before the store: what a
 * program that stats after another's mapped write sees (xfstests generic/215).
 */
/* path, two pages long with times in the past (set_past_times), open and mapped shared. */
static uint8_t *map_file_with_past_times(const char *path, int *fd)
{
	uint8_t *map;

	make_file_with(path, "", 0);
	*fd = CHECK(open(path, O_RDWR));
	CHECK(ftruncate(*fd, 2 * PAGE));
	CHECK(close(*fd));
	set_past_times(path);
	*fd = CHECK(open(path, O_RDWR));
	map = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	return map;
}

START_TEST(mapped_store_moves_mtime_and_ctime_by_close)
{
	struct timespec c0, before;
	struct stat st;
	uint8_t *map;
	int fd;

	map = map_file_with_past_times("f", &fd);
	nap();
	c0 = xstat("f").st_ctim; /* the times as they stand before the store */
	ck_assert_int_eq(ts_cmp(xstat("f").st_mtim, past_mtime), 0);
	before = now();
	map[PAGE + 1] = 'x';
	CHECK(munmap(map, 2 * PAGE));
	CHECK(close(fd));
	st = xstat("f");
	assert_recent(st.st_mtim, before, "mtime");
	ck_assert_msg(ts_cmp(st.st_ctim, c0) > 0, "ctime %lld.%09ld did not move",
		      (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}
END_TEST

/*
 * While the writer still holds the file open and mapped, stat shows a store's mtime once it
 * is msync'ed (xfstests generic/215; tmpfs shows it at once; the classic path learns of the
 * store from the write-back that msync starts; the passthrough path from the backing file's
 * mtime at its next look at files open for writing, every 100 ms, when it has the kernel
 * drop the times it caches).  Waits up to 5 s: a liveness check, not a measurement.
 */
START_TEST(mapped_store_moves_mtime_while_the_file_is_open)
{
	struct timespec before;
	struct stat st;
	uint8_t *map;
	int fd, tries = 0;

	map = map_file_with_past_times("f", &fd);
	ck_assert_int_eq(ts_cmp(xstat("f").st_mtim, past_mtime), 0);
	before = now();
	map[1] = 'x';
	CHECK(msync(map, 2 * PAGE, MS_SYNC));
	while (st = xstat("f"), ts_cmp(st.st_mtim, past_mtime) == 0 && tries++ < 166)
		nap();
	ck_assert_msg(ts_cmp(st.st_mtim, past_mtime) != 0,
		      "5 s after a store through a mapping and msync, stat shows the old mtime");
	assert_recent(st.st_mtim, before, "mtime");
	CHECK(munmap(map, 2 * PAGE));
	CHECK(close(fd));
}
END_TEST

START_TEST(mmap_data_persists_after_munmap_and_close)
{
	const size_t len = 4 * PAGE;
	uint8_t *buf = xmalloc(len);
	int fd = CHECK(open("f", O_RDWR | O_CREAT, 0644));
	uint8_t *map;

	CHECK(ftruncate(fd, (off_t)len));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	pattern_fill(map, len, 0, 16);
	CHECK(munmap(map, len));
	CHECK(close(fd));

	fd = CHECK(open("f", O_RDONLY));
	ck_assert_int_eq(pread_all(fd, buf, len, 0), len);
	pattern_assert(buf, len, 0, 16);
	CHECK(close(fd));
	free(buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Names and depth                                                                          */

static void fill_name(char *name, size_t len, char c)
{
	memset(name, c, len);
	name[len] = '\0';
}

START_TEST(name_of_255_bytes_works)
{
	char name[256], dname[256];
	struct dent ents[8];
	size_t n;

	fill_name(name, 255, 'f');
	fill_name(dname, 255, 'd');
	make_file_with(name, "long", 4);
	assert_contents(name, "long", 4);
	CHECK(mkdir(dname, 0755));
	n = list_dir(".", ents, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(find_dent(ents, n, name)->type, DT_REG);
	ck_assert_uint_eq(find_dent(ents, n, dname)->type, DT_DIR);
	CHECK(unlink(name));
	CHECK(rmdir(dname));
}
END_TEST

START_TEST(name_of_256_bytes_create_fails_enametoolong)
{
	char name[257];
	struct dent ents[4];

	fill_name(name, 256, 'f');
	ASSERT_ERRNO(open(name, O_RDWR | O_CREAT, 0644), ENAMETOOLONG);
	ASSERT_ERRNO(mkdir(name, 0755), ENAMETOOLONG);
	ASSERT_ERRNO(symlink("x", name), ENAMETOOLONG);
	ASSERT_ERRNO(mknod(name, S_IFIFO | 0644, 0), ENAMETOOLONG);
	ck_assert_uint_eq(list_dir(".", ents, 4), 2);
}
END_TEST

START_TEST(name_of_256_bytes_lookup_fails_enametoolong)
{
	char name[257];

	fill_name(name, 256, 'f');
	ASSERT_ERRNO(stat(name, &(struct stat){ 0 }), ENAMETOOLONG);
	ASSERT_ERRNO(open(name, O_RDONLY), ENAMETOOLONG);
	ASSERT_ERRNO(unlink(name), ENAMETOOLONG);
}
END_TEST

START_TEST(rename_or_link_to_256_byte_name_fails_enametoolong)
{
	char name[257];

	fill_name(name, 256, 'f');
	make_file_with("f", "", 0);
	ASSERT_ERRNO(rename("f", name), ENAMETOOLONG);
	ASSERT_ERRNO(link("f", name), ENAMETOOLONG);
	ck_assert_uint_eq(xstat("f").st_nlink, 1);
}
END_TEST

START_TEST(path_50_directories_deep_works)
{
	char path[PATH_MAX] = ".";
	size_t len = 1;

	for (int i = 0; i < 50; i++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/level%02d", i);
		CHECK(mkdir(path, 0755));
	}
	ck_assert_uint_lt(len + 6, sizeof(path));
	strcat(path, "/leaf");
	make_file_with(path, "deep", 4);
	assert_contents(path, "deep", 4);
	ck_assert(S_ISREG(xstat(path).st_mode));
	CHECK(unlink(path));
}
END_TEST

START_TEST(tree_deeper_than_path_max_works)
{
	enum { DEPTH = 300 };
	const char *name = "a_directory_name_19";
	int fd = CHECK(open(".", O_RDONLY | O_DIRECTORY)), leaf;
	struct stat st;

	ck_assert_int_gt(DEPTH * (strlen(name) + 1), PATH_MAX);
	for (int i = 0; i < DEPTH; i++) {
		int next;

		CHECK(mkdirat(fd, name, 0755));
		next = CHECK(openat(fd, name, O_RDONLY | O_DIRECTORY));
		CHECK(close(fd));
		fd = next;
	}
	leaf = CHECK(openat(fd, "leaf", O_RDWR | O_CREAT, 0644));
	ck_assert_int_eq(CHECK(write(leaf, "bottom", 6)), 6);
	CHECK(close(leaf));
	CHECK(fstatat(fd, "leaf", &st, 0));
	ck_assert_int_eq(st.st_size, 6);
	CHECK(close(fd));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name)
{
	return mtest_tcase(s, name, mtest_setup, mtest_teardown, TIMEOUT_SECONDS);
}

static Suite *fsops_suite(bool root)
{
	Suite *s = suite_create("fsops");
	TCase *tc;

	tc = tcase(s, "io");
	tcase_add_test(tc, write_then_read_returns_same_bytes);
	tcase_add_test(tc, open_missing_file_fails_enoent);
	tcase_add_test(tc, o_excl_on_existing_file_fails_eexist);
	tcase_add_test(tc, o_append_writes_at_end_of_file);
	tcase_add_test(tc, o_append_from_two_fds_never_overwrites);
	tcase_add_test(tc, o_trunc_empties_file);
	tcase_add_test(tc, o_trunc_updates_mtime);
	tcase_add_test(tc, read_past_eof_returns_zero);
	tcase_add_test(tc, unaligned_write_spanning_pages_keeps_surrounding_bytes);
	tcase_add_test(tc, unaligned_write_past_eof_zero_fills_gap);
	tcase_add_test(tc, large_single_write_and_read_move_every_byte);
	tcase_add_test(tc, pwrite_beyond_4gib_reads_back_at_same_offset);
	tcase_add_test(tc, pwrite_at_1tib_makes_sparse_file);
	tcase_add_test(tc, hole_in_sparse_file_reads_as_zeros);

	tc = tcase(s, "attr");
	tcase_add_test(tc, new_file_stat_fields);
	tcase_add_test(tc, stat_and_fstat_agree);
	tcase_add_test(tc, new_files_have_distinct_inode_numbers);
	tcase_add_test(tc, st_blocks_counts_fully_written_mebibyte);
	tcase_add_test(tc, ftruncate_to_1gib_holds_no_blocks);
	tcase_add_test(tc, chmod_sets_permission_bits);
	tcase_add_test(tc, fchmod_on_directory_sets_mode);
	tcase_add_test(tc, chmod_updates_ctime);
	tcase_add_test(tc, truncate_shrink_then_grow_reads_zeros_in_gap);
	tcase_add_test(tc, truncate_by_path_grows_with_zeros);
	tcase_add_test(tc, truncate_shrink_frees_blocks);
	tcase_add_test(tc, ftruncate_updates_mtime_and_ctime);
	tcase_add_test(tc, utimensat_sets_explicit_times_to_the_nanosecond);
	tcase_add_test(tc, utimensat_utime_now_sets_current_time);
	tcase_add_test(tc, utimensat_utime_omit_keeps_that_time);
	tcase_add_test(tc, utimensat_updates_ctime);
	tcase_add_test(tc, write_updates_mtime_and_ctime);
	tcase_add_test(tc, read_updates_atime_older_than_mtime);
	tcase_add_test(tc, create_updates_parent_mtime_and_ctime);
	tcase_add_test(tc, unlink_updates_parent_mtime);
	tcase_add_test(tc, rename_updates_both_parent_mtimes);

	if (root) {
		tc = tcase(s, "owner");
		tcase_add_test(tc, chown_sets_owner_and_group);
		tcase_add_test(tc, chown_clears_setuid_bit);
		tcase_add_test(tc, file_created_by_user_is_owned_by_that_user);
		tcase_add_test(tc, setgid_directory_gives_new_file_its_group);
		tcase_add_test(tc, setgid_directory_gives_new_subdirectory_group_and_setgid);
		tcase_add_test(tc, mode_0600_root_file_denies_other_user_eacces);
		tcase_add_test(tc, create_in_unwritable_directory_fails_eacces);
		tcase_add_test(tc, sticky_directory_other_user_cannot_unlink_eperm);
		tcase_add_test(tc, sticky_directory_other_user_cannot_rename_eperm);
		tcase_add_test(tc, sticky_directory_user_can_unlink_and_rename_own_file);
		tcase_add_test(tc, write_by_other_user_clears_setuid);
		tcase_add_test(tc, write_by_other_user_clears_setgid_with_group_exec);
		tcase_add_test(tc, open_by_handle_outlives_the_inode_cache);
		tcase_add_test(tc, rename_whiteout_leaves_a_whiteout_at_the_old_name);
	}

	tc = tcase(s, "special");
	tcase_add_test(tc, mknod_fifo_makes_fifo);
	tcase_add_test(tc, mknod_socket_makes_socket);
	tcase_add_test(tc, mkfifo_passes_bytes_through);
	tcase_add_test(tc, unix_socket_bound_in_directory_accepts_connection);

	tc = tcase(s, "namespace");
	tcase_add_test(tc, mkdir_makes_directory_with_mode);
	tcase_add_test(tc, mkdir_over_existing_name_fails_eexist);
	tcase_add_test(tc, rmdir_removes_empty_directory);
	tcase_add_test(tc, rmdir_non_empty_fails_enotempty);
	tcase_add_test(tc, rmdir_on_file_fails_enotdir);
	tcase_add_test(tc, directory_nlink_is_two_plus_subdirectories);
	tcase_add_test(tc, unlink_removes_name);
	tcase_add_test(tc, unlink_directory_fails_eisdir);
	tcase_add_test(tc, symlink_readlink_returns_exact_target);
	tcase_add_test(tc, symlink_lstat_size_is_target_length);
	tcase_add_test(tc, symlink_of_4095_bytes_round_trips);
	tcase_add_test(tc, symlink_is_followed_by_open_and_stat);
	tcase_add_test(tc, dangling_symlink_stat_fails_enoent);
	tcase_add_test(tc, link_raises_and_unlink_lowers_nlink);
	tcase_add_test(tc, link_shares_inode_and_data);
	tcase_add_test(tc, link_directory_fails_eperm);
	tcase_add_test(tc, link_over_existing_name_fails_eexist);
	tcase_add_test(tc, unlinked_open_file_stays_readable_and_writable);
	tcase_add_test(tc, unlinked_open_file_has_nlink_zero);
	tcase_add_test(tc, unlinked_open_file_does_not_block_new_file_of_same_name);

	tc = tcase(s, "rename");
	tcase_add_test(tc, rename_moves_file_keeping_inode_and_data);
	tcase_add_test(tc, rename_over_file_replaces_it_and_old_data_stays_readable_via_fd);
	tcase_add_test(tc, rename_noreplace_over_existing_fails_eexist);
	tcase_add_test(tc, rename_noreplace_to_free_name_moves);
	tcase_add_test(tc, rename_exchange_swaps_files);
	tcase_add_test(tc, rename_exchange_swaps_file_and_directory);
	tcase_add_test(tc, rename_exchange_across_parents_moves_link_counts);
	tcase_add_test(tc, rename_exchange_dirs_across_parents_updates_dotdot);
	tcase_add_test(tc, rename_dir_over_non_empty_dir_fails_enotempty);
	tcase_add_test(tc, rename_dir_over_empty_dir_replaces_it);
	tcase_add_test(tc, rename_file_over_dir_fails_eisdir);
	tcase_add_test(tc, rename_dir_over_file_fails_enotdir);
	tcase_add_test(tc, rename_dir_into_own_subdirectory_fails_einval);
	tcase_add_test(tc, rename_dir_dotdot_points_at_new_parent);
	tcase_add_test(tc, rename_dir_across_parents_moves_link_count);

	tc = tcase(s, "readdir");
	tcase_add_test(tc, readdir_lists_exactly_created_entries_with_d_type);
	tcase_add_test(tc, readdir_empty_directory_lists_dot_and_dotdot);
	tcase_add_test(tc, readdir_d_ino_matches_stat);
	tcase_add_test(tc, readdir_lists_1000_entries_exactly_once);
	tcase_add_test(tc, getdents_with_small_buffer_lists_each_entry_once);
	tcase_add_loop_test(tc, readdir_while_unlinking_each_entry_lists_each_once, 0, 2);
	tcase_add_loop_test(tc, readdir_while_unlinking_other_entries_returns_none_twice, 0, 2);
	tcase_add_loop_test(tc, readdir_while_creating_entries_returns_none_twice, 0, 2);
	tcase_add_loop_test(tc, readdir_while_renaming_each_entry_ends_and_returns_each_once, 0, 2);
	tcase_add_test(tc, o_tmpfile_makes_an_unnamed_file_that_linkat_can_name);
	tcase_add_test(tc, seekdir_returns_to_telldir_position);
	tcase_add_test(tc, rewinddir_shows_entries_created_since_opendir);

	tc = tcase(s, "misc");
	tcase_add_test(tc, fsync_succeeds);
	tcase_add_test(tc, fdatasync_succeeds);
	tcase_add_test(tc, statfs_reports_4096_byte_blocks_and_255_byte_names);
	tcase_add_test(tc, flock_exclusive_conflicts_between_open_files);
	tcase_add_test(tc, posix_lock_conflicts_across_processes);
	tcase_add_test(tc, posix_getlk_reports_lock_holder);
	tcase_add_test(tc, copy_file_range_copies_bytes);

	tc = tcase(s, "xattr");
	tcase_add_test(tc, xattr_binary_value_round_trips_on_file);
	tcase_add_test(tc, xattr_binary_value_round_trips_on_directory);
	tcase_add_test(tc, xattr_empty_value_round_trips);
	tcase_add_test(tc, xattr_set_and_get_through_fd);
	tcase_add_test(tc, xattr_size_probe_returns_value_length);
	tcase_add_test(tc, xattr_get_with_small_buffer_fails_erange);
	tcase_add_test(tc, xattr_create_on_existing_fails_eexist);
	tcase_add_test(tc, xattr_replace_on_missing_fails_enodata);
	tcase_add_test(tc, xattr_replace_with_shorter_value_shrinks_it);
	tcase_add_test(tc, xattr_get_missing_fails_enodata);
	tcase_add_test(tc, listxattr_lists_exactly_the_user_names_set);
	tcase_add_test(tc, listxattr_on_directory_lists_its_names);
	tcase_add_test(tc, listxattr_with_small_buffer_fails_erange);
	tcase_add_test(tc, removexattr_then_get_fails_enodata);
	tcase_add_test(tc, xattr_64kib_value_round_trips);
	tcase_add_test(tc, xattr_name_of_255_bytes_round_trips);
	tcase_add_test(tc, xattr_user_on_symlink_fails_eperm);

	tc = tcase(s, "fallocate");
	tcase_add_test(tc, fallocate_extends_size_with_zeros);
	tcase_add_test(tc, fallocate_reserves_blocks);
	tcase_add_test(tc, fallocate_keep_size_keeps_size);
	tcase_add_test(tc, fallocate_punch_hole_zeroes_range_and_frees_blocks);
	tcase_add_test(tc, fallocate_unaligned_punch_hole_zeroes_exact_bytes);
	tcase_add_test(tc, fallocate_punch_hole_is_found_by_seek_hole);

	tc = tcase(s, "seek");
	tcase_add_test(tc, seek_data_in_data_returns_same_offset);
	tcase_add_test(tc, seek_hole_finds_end_of_first_extent);
	tcase_add_test(tc, seek_data_in_hole_finds_next_extent);
	tcase_add_test(tc, seek_data_past_last_data_fails_enxio);
	tcase_add_test(tc, seek_hole_in_last_extent_returns_size);

	tc = tcase(s, "mmap");
	tcase_add_test(tc, mmap_shared_write_is_seen_by_pread_on_other_fd);
	tcase_add_test(tc, pwrite_is_seen_through_existing_mapping);
	tcase_add_test(tc, mmap_data_persists_after_munmap_and_close);
	tcase_add_test(tc, mapped_store_moves_mtime_and_ctime_by_close);
	tcase_add_test(tc, mapped_store_moves_mtime_while_the_file_is_open);

	tc = tcase(s, "names");
	tcase_add_test(tc, name_of_255_bytes_works);
	tcase_add_test(tc, name_of_256_bytes_create_fails_enametoolong);
	tcase_add_test(tc, name_of_256_bytes_lookup_fails_enametoolong);
	tcase_add_test(tc, rename_or_link_to_256_byte_name_fails_enametoolong);
	tcase_add_test(tc, path_50_directories_deep_works);
	tcase_add_test(tc, tree_deeper_than_path_max_works);

	return s;
}

int main(void)
{
	const char *base = getenv("VFS_TEST_DIR");
	bool root = geteuid() == 0;
	struct stat st;

	if (base == NULL || *base == '\0') {
		fprintf(stderr, "fsops: VFS_TEST_DIR is not set; set it to a directory on the "
				"file system to test, e.g. VFS_TEST_DIR=/tmp/volatilefs\n");
		return 1;
	}
	if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fsops: VFS_TEST_DIR=%s is not a directory\n", base);
		return 1;
	}
	if (!mtest_make_run_dir("fsops", base))
		return 1;
	if (!root)
		fprintf(stderr, "fsops: not running as root: ownership and permission tests "
				"(test case \"owner\") left out\n");

	return mtest_run(fsops_suite(root));
}
