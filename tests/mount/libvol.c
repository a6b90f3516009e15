/*
 * libvol: the C interface of volatilefs (DESIGN sections 4 and 6), driven through libvolatilefs
 * on a mounted volatilefs and checked against what the daemon shows through its extended
 * attributes and through ordinary reads, mappings and poll.
 *
 *	$ tests/mount/with-mount.sh build/src/daemon/volatilefs -o memory_limit=256M \
 *		-- build/tests/mount/libvol
 *	100%: Checks: ..., Failures: 0, Errors: 0
 *
 *	$ VFS_TEST_DIR=/tmp/volatilefs build/tests/mount/libvol          (a mounted volatilefs)
 *	$ CK_RUN_CASE=poll VFS_TEST_DIR=/tmp/volatilefs build/tests/mount/libvol   (one case)
 *
 *	$ VFS_PURGED_READ=eio tests/mount/with-mount.sh build/src/daemon/volatilefs \
 *		-o memory_limit=256M,purged_read=eio -- build/tests/mount/libvol
 *
 * The suite expects the default options (purged_read=zero, write_policy=keep) and a memory
 * limit far above what it stores (it stores a few MiB), so that nothing is purged unless a
 * test asks for it: purges are forced with the user.volatile.purge attribute, "all" on a
 * file, or a size on the mount root for the purge-order test. With VFS_PURGED_READ=eio it
 * runs only the test case "eio" instead, which needs a mount with -o purged_read=eio.
 *
 * What a purge may leave in the kernel's caches is only guaranteed gone once the purge has
 * been reported (DESIGN section 4: through user.volatile.purged or .ranges, an unmark or the
 * ioctls), so the tests that read purged data first ask volatilefs_purged() about it.
 *
 * Layout as fsops.c: main() makes one run directory VFS_TEST_DIR/libvol.XXXXXX and removes it
 * at the end; each test is forked (CK_FORK), and runs in its own fresh directory inside it,
 * using relative names. Ranges are read back with getxattr("user.volatile.ranges") and
 * compared as text, "OFFSET:LENGTH STATE priority=N[ age]\n" per unit, sorted by offset.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"
#include "volatilefs.h"

#define KIB 1024ull
#define PAGE 4096ull
#define TIMEOUT_SECONDS 60

/*
 * How long a sleeping poll waits for a purge before the test calls it a hang (how soon it
 * wakes is a matter of speed, not asserted: a loaded machine or valgrind can take seconds),
 * and how long the purger waits, once the poller is asleep, before it purges.
 */
#define WAKE_DEADLINE_MS 60000
#define PURGE_DELAY_MS 300

/* VFS_TEST_DIR, resolved: the mount root. */
static char mount_dir[PATH_MAX];

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                  */

/* Reads [off, off + len) and asserts it holds the pattern / zeros. */
static void assert_file_pat(int fd, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *buf = xmalloc(len);

	ck_assert_uint_eq(pread_all(fd, buf, len, (off_t)off), len);
	pattern_assert(buf, len, off, seed);
	free(buf);
}

static void assert_file_zero(int fd, uint64_t off, size_t len)
{
	uint8_t *buf = xmalloc(len);

	ck_assert_uint_eq(pread_all(fd, buf, len, (off_t)off), len);
	assert_zeros(buf, len, off);
	free(buf);
}

static void assert_xattr(const char *path, const char *name, const char *want)
{
	char *got = xattr_get(path, name);

	ck_assert_msg(strcmp(got, want) == 0, "%s of %s:\n got \"%s\"\nwant \"%s\"", name, path,
		      got, want);
	free(got);
}

/* The units of path, as "OFFSET:LENGTH STATE priority=N[ age]\n" lines. */
static void assert_ranges(const char *path, const char *want)
{
	assert_xattr(path, "user.volatile.ranges", want);
}

/* The purged set of path, as "OFFSET:LENGTH\n" lines. */
static void assert_purged_xattr(const char *path, const char *want)
{
	assert_xattr(path, "user.volatile.purged", want);
}

/* Purges every unit of path now, as another program could. */
static void purge_file(const char *path)
{
	CHECK(setxattr(path, "user.volatile.purge", "all", 3, 0));
}

/* The number of purged extents of fd, which also reports (so completes) every purge. */
static size_t purged_count(int fd)
{
	size_t n = SIZE_MAX;

	CHECK(volatilefs_purged(fd, 0, 0, NULL, 0, &n));
	ck_assert_uint_ne(n, SIZE_MAX);
	return n;
}

/* Asserts the purged extents in [off, off + len) are exactly want[0..nwant). */
static void assert_extents(int fd, uint64_t off, uint64_t len,
			   const struct volatilefs_extent *want, size_t nwant)
{
	struct volatilefs_extent got[16];
	size_t n = SIZE_MAX;

	ck_assert_uint_le(nwant, 16);
	CHECK(volatilefs_purged(fd, off, len, got, 16, &n));
	ck_assert_msg(n == nwant, "purged(%" PRIu64 ", %" PRIu64 "): %zu extents, want %zu", off,
		      len, n, nwant);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(got[i].offset == want[i].offset && got[i].length == want[i].length,
			      "purged extent %zu is %" PRIu64 ":%" PRIu64 ", want %" PRIu64
			      ":%" PRIu64, i, got[i].offset, got[i].length, want[i].offset,
			      want[i].length);
}

static void unmark_expect(int fd, uint64_t off, uint64_t len, uint64_t want_bytes,
			  int want_purged)
{
	uint64_t bytes = UINT64_MAX;
	int purged = -1;

	CHECK(volatilefs_unmark(fd, off, len, &bytes, &purged));
	ck_assert_msg(bytes == want_bytes && purged == want_purged,
		      "unmark(%" PRIu64 ", %" PRIu64 "): bytes=%" PRIu64 " purged=%d, want bytes=%"
		      PRIu64 " purged=%d", off, len, bytes, purged, want_bytes, want_purged);
}

static int64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Whether poll() sees POLLPRI on fd within timeout_ms. */
static bool pollpri(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLPRI };
	int n = CHECK(poll(&p, 1, timeout_ms));

	ck_assert_msg(!(p.revents & (POLLERR | POLLNVAL)), "poll revents 0x%x", p.revents);
	return n == 1 && (p.revents & POLLPRI);
}

/*
 * Waits until thread tid of process pid is asleep in poll or epoll_wait, as its
 * /proc/PID/task/TID/syscall says (the number of the call it is blocked in; "running"
 * while it runs), for WAKE_DEADLINE_MS at most.  A fixed nap could end before a loaded
 * machine got the poller there, and the purge would then test no wake-up at all.  Where
 * the file cannot be read, naps PURGE_DELAY_MS instead.  Asserts nothing (children use it).
 */
static void wait_asleep_in_poll(pid_t pid, pid_t tid)
{
	char path[64], buf[64];
	double end = now_s() + WAKE_DEADLINE_MS / 1000.0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	while (now_s() < end) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;
		long nr;

		if (fd < 0) {
			nap_ms(PURGE_DELAY_MS);
			return;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0) {
			nap_ms(PURGE_DELAY_MS);
			return;
		}
		buf[n] = '\0';
		if (sscanf(buf, "%ld", &nr) == 1 &&
		    (nr == SYS_poll || nr == SYS_ppoll || nr == SYS_epoll_wait || nr == SYS_epoll_pwait))
			return;
		nap_ms(5);
	}
}

/*
 * A child process that waits until this process's thread tid is asleep in poll (tid 0: does
 * not wait), sleeps delay_ms more, then purges path; returns its pid.
 */
static pid_t purge_later_tid(const char *path, long delay_ms, pid_t tid)
{
	pid_t parent = getpid(), pid = CHECK(fork());

	if (pid == 0) {
		if (tid)
			wait_asleep_in_poll(parent, tid);
		nap_ms(delay_ms);
		_exit(setxattr(path, "user.volatile.purge", "all", 3, 0) == 0 ? 0 : 1);
	}
	return pid;
}

/* The same, waiting for this (the calling) thread to be asleep in poll. */
static pid_t purge_later(const char *path, long delay_ms)
{
	return purge_later_tid(path, delay_ms, delay_ms ? (pid_t)syscall(SYS_gettid) : 0);
}

static void reap(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child failed (status 0x%x)", status);
}

/* A file on a mount with one purged unit: f, 16 KiB, unit 0:16K purged. */
static int purged_file(void)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	purge_file("f");
	return fd;
}

/* ---------------------------------------------------------------------------------------- */
/* mark                                                                                     */

START_TEST(mark_makes_one_unit_with_default_priority)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	assert_ranges("f", "");
	CHECK(volatilefs_mark(fd, 0, 64 * KIB, 0));
	assert_ranges("f", "0:65536 volatile priority=3\n");
	CHECK(volatilefs_mark(fd, 128 * KIB, 8 * KIB, 0));
	assert_ranges("f", "0:65536 volatile priority=3\n131072:8192 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(mark_rounds_length_up_to_a_page)
{
	int fd = make_file_pattern("f", 0, 1);

	CHECK(volatilefs_mark(fd, 4096, 1, 0));
	CHECK(volatilefs_mark(fd, 16384, 4097, 0));
	assert_ranges("f", "4096:4096 volatile priority=3\n16384:8192 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(mark_length_zero_is_unbounded_and_follows_growth)
{
	int fd = make_file_pattern("f", 4 * KIB, 1);

	CHECK(volatilefs_mark(fd, 4096, 0, 0));
	assert_ranges("f", "4096:0 volatile priority=3\n");
	pattern_write(fd, 4 * KIB, 8 * KIB, 1);
	/* Grown to 12 KiB: the unit now covers 4K..12K, and a purge takes all of it. */
	purge_file("f");
	assert_purged_xattr("f", "4096:8192\n");
	assert_ranges("f", "4096:0 purged priority=3\n");
	close(fd);
}
END_TEST

START_TEST(mark_priority_zero_differs_from_no_priority)
{
	int fd = make_file_pattern("f", 0, 1);

	ck_assert_uint_ne(VOLATILEFS_PRIORITY(0), 0);
	CHECK(volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(0)));
	CHECK(volatilefs_mark(fd, 8192, 4096, 0));
	CHECK(volatilefs_mark(fd, 16384, 4096, VOLATILEFS_AGE));
	CHECK(volatilefs_mark(fd, 24576, 4096, VOLATILEFS_PRIORITY(7)));
	CHECK(volatilefs_mark(fd, 32768, 4096, VOLATILEFS_PRIORITY(1) | VOLATILEFS_AGE));
	CHECK(volatilefs_mark(fd, 40960, 4096, VOLATILEFS_PRIORITY(3)));
	assert_ranges("f", "0:4096 volatile priority=0\n"
			   "8192:4096 volatile priority=3\n"
			   "16384:4096 volatile priority=3 age\n"
			   "24576:4096 volatile priority=7\n"
			   "32768:4096 volatile priority=1 age\n"
			   "40960:4096 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(mark_overlapping_units_are_absorbed_into_one)
{
	int fd = make_file_pattern("f", 0, 1);

	CHECK(volatilefs_mark(fd, 0, 8 * KIB, VOLATILEFS_PRIORITY(1) | VOLATILEFS_AGE));
	CHECK(volatilefs_mark(fd, 16 * KIB, 8 * KIB, VOLATILEFS_PRIORITY(2)));
	CHECK(volatilefs_mark(fd, 40 * KIB, 4 * KIB, 0));
	/* Overlaps the first two (not the third): their union, with this call's flags. */
	CHECK(volatilefs_mark(fd, 4 * KIB, 16 * KIB, VOLATILEFS_PRIORITY(5)));
	assert_ranges("f", "0:24576 volatile priority=5\n40960:4096 volatile priority=3\n");
	/* A range inside a unit: the unit keeps its extent, takes the new flags. */
	CHECK(volatilefs_mark(fd, 8 * KIB, 4 * KIB, VOLATILEFS_AGE));
	assert_ranges("f", "0:24576 volatile priority=3 age\n40960:4096 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(mark_touching_units_stay_separate)
{
	int fd = make_file_pattern("f", 0, 1);

	CHECK(volatilefs_mark(fd, 4096, 4096, 0));
	CHECK(volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(1)));
	CHECK(volatilefs_mark(fd, 8192, 4096, VOLATILEFS_PRIORITY(2)));
	assert_ranges("f", "0:4096 volatile priority=1\n"
			   "4096:4096 volatile priority=3\n"
			   "8192:4096 volatile priority=2\n");
	close(fd);
}
END_TEST

START_TEST(mark_unbounded_absorbs_units_after_it)
{
	int fd = make_file_pattern("f", 0, 1);

	CHECK(volatilefs_mark(fd, 0, 4096, 0));
	CHECK(volatilefs_mark(fd, 8192, 4096, 0));
	CHECK(volatilefs_mark(fd, 1 << 20, 4096, 0));
	CHECK(volatilefs_mark(fd, 8192, 0, VOLATILEFS_PRIORITY(6)));
	assert_ranges("f", "0:4096 volatile priority=3\n8192:0 volatile priority=6\n");
	/* A bounded range overlapping an unbounded unit: the union is unbounded. */
	CHECK(volatilefs_mark(fd, 4096, 8192, 0));
	assert_ranges("f", "0:4096 volatile priority=3\n4096:0 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(mark_works_on_write_only_descriptor)
{
	int fd = make_file_pattern("f", 4096, 1);
	int wfd = CHECK(open("f", O_WRONLY));

	CHECK(volatilefs_mark(wfd, 0, 4096, 0));
	assert_ranges("f", "0:4096 volatile priority=3\n");
	unmark_expect(wfd, 0, 4096, 4096, 0);
	close(wfd);
	close(fd);
}
END_TEST

START_TEST(mark_on_read_only_descriptor_fails_ebadf)
{
	int fd = make_file_pattern("f", 8192, 1);
	int rfd = CHECK(open("f", O_RDONLY));

	ASSERT_ERRNO(volatilefs_mark(rfd, 0, 4096, 0), EBADF);
	assert_ranges("f", "");
	CHECK(volatilefs_mark(fd, 0, 8192, 0));
	ASSERT_ERRNO(volatilefs_unmark(rfd, 0, 4096, NULL, NULL), EBADF);
	assert_ranges("f", "0:8192 volatile priority=3\n");
	close(rfd);
	close(fd);
}
END_TEST

START_TEST(mark_unaligned_offset_fails_einval)
{
	int fd = make_file_pattern("f", 16384, 1);

	ASSERT_ERRNO(volatilefs_mark(fd, 1, 4096, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, 4095, 4096, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, 4097, 0, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, 2048, 8192, VOLATILEFS_AGE), EINVAL);
	assert_ranges("f", "");
	close(fd);
}
END_TEST

START_TEST(mark_past_int64_max_fails_einval)
{
	const uint64_t top = (uint64_t)INT64_MAX + 1; /* 2^63, a multiple of 4096 */
	int fd = make_file_pattern("f", 0, 1);
	char want[128];

	ASSERT_ERRNO(volatilefs_mark(fd, top - 4096, 4096, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, top - 8192, 4097, 0), EINVAL); /* after rounding */
	ASSERT_ERRNO(volatilefs_mark(fd, top, 0, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, top, 4096, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, 4096, UINT64_MAX, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, 4096, (uint64_t)INT64_MAX, 0), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, UINT64_MAX - 4095, 4096, 0), EINVAL);
	assert_ranges("f", "");
	/* The last page below 2^63 can still be named. */
	CHECK(volatilefs_mark(fd, top - 8192, 4096, 0));
	snprintf(want, sizeof(want), "%" PRIu64 ":4096 volatile priority=3\n", top - 8192);
	assert_ranges("f", want);
	unmark_expect(fd, top - 8192, 4096, 4096, 0);
	assert_ranges("f", "");
	close(fd);
}
END_TEST

START_TEST(mark_priority_8_to_15_fails_einval)
{
	int fd = make_file_pattern("f", 0, 1);

	for (unsigned p = 8; p < 16; p++)
		ASSERT_ERRNO(volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(p)), EINVAL);
	ASSERT_ERRNO(volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(9) | VOLATILEFS_AGE),
		     EINVAL);
	assert_ranges("f", "");
	close(fd);
}
END_TEST

START_TEST(mark_unknown_flag_bits_fail_einval)
{
	static const unsigned bad[] = { 0x2, 0x4, 0x8, 0x200, 0x400, 0x10000, 0x80000000u };
	int fd = make_file_pattern("f", 0, 1);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_ERRNO(volatilefs_mark(fd, 0, 4096, bad[i]), EINVAL);
		ASSERT_ERRNO(volatilefs_mark(fd, 0, 4096, bad[i] | VOLATILEFS_PRIORITY(1)),
			     EINVAL);
	}
	assert_ranges("f", "");
	close(fd);
}
END_TEST

/* Priority bits without VOLATILEFS_PRIORITY's "a priority is present" bit are malformed, not
 * a silent priority 3: a caller who wrote (1 << 4) for priority 1 learns of it. */
START_TEST(mark_priority_bits_without_priority_flag_fail_einval)
{
	int fd = make_file_pattern("f", 0, 1);

	for (unsigned p = 1; p < 16; p++)
		ASSERT_ERRNO(volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(p) & ~0x100u),
			     EINVAL);
	assert_ranges("f", "");
	close(fd);
}
END_TEST

START_TEST(mark_on_directory_fails_eisdir)
{
	int dfd;

	CHECK(mkdir("d", 0755));
	dfd = CHECK(open("d", O_RDONLY | O_DIRECTORY));
	ASSERT_ERRNO(volatilefs_mark(dfd, 0, 4096, 0), EISDIR);
	ASSERT_ERRNO(volatilefs_unmark(dfd, 0, 4096, NULL, NULL), EISDIR);
	ASSERT_ERRNO(volatilefs_purged(dfd, 0, 0, NULL, 0, NULL), EISDIR);
	close(dfd);
}
END_TEST

START_TEST(calls_off_volatilefs_fail_enotty)
{
	char path[] = "/tmp/libvol.XXXXXX";
	struct volatilefs_extent ext[4];
	struct statfs sfs;
	size_t n = 7;
	uint64_t bytes = 7;
	int purged = 7, fd = CHECK(mkstemp(path)), nullfd;

	CHECK(unlink(path));
	CHECK(fstatfs(fd, &sfs));
	ck_assert_msg(sfs.f_type != FUSE_SUPER_MAGIC, "/tmp is a FUSE mount here");
	CHECK(ftruncate(fd, 8192));
	ASSERT_ERRNO(volatilefs_mark(fd, 0, 4096, 0), ENOTTY);
	ASSERT_ERRNO(volatilefs_unmark(fd, 0, 4096, &bytes, &purged), ENOTTY);
	ASSERT_ERRNO(volatilefs_purged(fd, 0, 0, ext, 4, &n), ENOTTY);
	ASSERT_ERRNO(volatilefs_purged(fd, 0, 0, NULL, 0, &n), ENOTTY);
	/* Whatever the arguments: the kernel refuses the command before anyone looks. */
	ASSERT_ERRNO(volatilefs_mark(fd, 1, 4096, 0x8000), ENOTTY);
	ck_assert(bytes == 7 && purged == 7 && n == 7);
	close(fd);

	nullfd = CHECK(open("/dev/null", O_RDWR));
	ASSERT_ERRNO(volatilefs_mark(nullfd, 0, 4096, 0), ENOTTY);
	ASSERT_ERRNO(volatilefs_unmark(nullfd, 0, 4096, NULL, NULL), ENOTTY);
	close(nullfd);
}
END_TEST

START_TEST(calls_on_bad_descriptor_fail_ebadf)
{
	ASSERT_ERRNO(volatilefs_mark(-1, 0, 4096, 0), EBADF);
	ASSERT_ERRNO(volatilefs_unmark(-1, 0, 4096, NULL, NULL), EBADF);
	ASSERT_ERRNO(volatilefs_purged(-1, 0, 0, NULL, 0, NULL), EBADF);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* unmark                                                                                   */

START_TEST(unmark_whole_unit_reports_its_bytes)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 64 * KIB, 0));
	unmark_expect(fd, 0, 64 * KIB, 64 * KIB, 0);
	assert_ranges("f", "");
	/* Nothing volatile is left: a second unmark reports nothing. */
	unmark_expect(fd, 0, 64 * KIB, 0, 0);
	close(fd);
}
END_TEST

START_TEST(unmark_non_volatile_range_reports_zero)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	unmark_expect(fd, 0, 64 * KIB, 0, 0);
	unmark_expect(fd, 0, 0, 0, 0);
	CHECK(volatilefs_mark(fd, 0, 8 * KIB, 0));
	unmark_expect(fd, 16 * KIB, 16 * KIB, 0, 0);
	assert_ranges("f", "0:8192 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(unmark_middle_of_unit_splits_it)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 64 * KIB, VOLATILEFS_PRIORITY(2) | VOLATILEFS_AGE));
	unmark_expect(fd, 16 * KIB, 16 * KIB, 16 * KIB, 0);
	assert_ranges("f", "0:16384 volatile priority=2 age\n"
			   "32768:32768 volatile priority=2 age\n");
	/* Front and back of the remaining units. */
	unmark_expect(fd, 0, 4 * KIB, 4 * KIB, 0);
	unmark_expect(fd, 60 * KIB, 4 * KIB, 4 * KIB, 0);
	assert_ranges("f", "4096:12288 volatile priority=2 age\n"
			   "32768:28672 volatile priority=2 age\n");
	/* The pieces are separate units now: a purge of the file takes both, whole. */
	purge_file("f");
	assert_purged_xattr("f", "4096:12288\n32768:28672\n");
	close(fd);
}
END_TEST

START_TEST(unmark_counts_only_volatile_bytes_of_the_range)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	CHECK(volatilefs_mark(fd, 8 * KIB, 8 * KIB, 0));
	CHECK(volatilefs_mark(fd, 24 * KIB, 4 * KIB, 0));
	CHECK(volatilefs_mark(fd, 48 * KIB, 16 * KIB, 0));
	/* 12K..52K: all of the second unit, the back 4K of the first, the front 4K of the third. */
	unmark_expect(fd, 12 * KIB, 40 * KIB, 4 * KIB + 4 * KIB + 4 * KIB, 0);
	assert_ranges("f", "8192:4096 volatile priority=3\n53248:12288 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(unmark_rounds_length_up_to_a_page)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	unmark_expect(fd, 0, 1, 4096, 0);
	unmark_expect(fd, 8192, 4097, 8192, 0);
	assert_ranges("f", "4096:4096 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(unmark_unbounded_unit_counts_to_file_size_rounded_up)
{
	int fd = make_file_pattern("f", 10000, 1); /* 3 pages, the last partial */

	CHECK(volatilefs_mark(fd, 0, 0, 0));
	unmark_expect(fd, 0, 0, 12288, 0);
	assert_ranges("f", "");

	CHECK(volatilefs_mark(fd, 0, 0, 0));
	unmark_expect(fd, 4096, 0, 8192, 0);
	assert_ranges("f", "0:4096 volatile priority=3\n");

	/* Beyond the end of the file, an unbounded unit holds no bytes. */
	CHECK(volatilefs_mark(fd, 64 * KIB, 0, 0));
	unmark_expect(fd, 64 * KIB, 4096, 0, 0);
	assert_ranges("f", "0:4096 volatile priority=3\n69632:0 volatile priority=3\n");

	/* A bounded range cut from an unbounded unit: the part within the file's pages. */
	CHECK(volatilefs_mark(fd, 0, 0, 0));
	unmark_expect(fd, 8192, 8192, 4096, 0);
	assert_ranges("f", "0:8192 volatile priority=3\n16384:0 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(unmark_unbounded_unit_of_empty_file_reports_zero)
{
	int fd = make_file_pattern("f", 0, 1);

	CHECK(volatilefs_mark(fd, 0, 0, 0));
	unmark_expect(fd, 0, 0, 0, 0);
	assert_ranges("f", "");
	close(fd);
}
END_TEST

START_TEST(unmark_bounded_unit_beyond_end_of_file_counts_its_pages)
{
	int fd = make_file_pattern("f", 0, 1);

	/* Bounded units do not depend on the file's size: their pages are volatile. */
	CHECK(volatilefs_mark(fd, 0, 64 * KIB, 0));
	unmark_expect(fd, 0, 0, 64 * KIB, 0);
	close(fd);
}
END_TEST

START_TEST(unmark_accepts_null_pointers)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	uint64_t bytes = 1;
	int purged = 1;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	CHECK(volatilefs_unmark(fd, 0, 4096, NULL, NULL));
	CHECK(volatilefs_unmark(fd, 4096, 4096, &bytes, NULL));
	ck_assert_uint_eq(bytes, 4096);
	CHECK(volatilefs_unmark(fd, 8192, 4096, NULL, &purged));
	ck_assert_int_eq(purged, 0);
	assert_ranges("f", "12288:4096 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(unmark_reports_purged_only_for_ranges_touching_the_purged_set)
{
	int fd = make_file_pattern("f", 32 * KIB, 1);

	CHECK(volatilefs_mark(fd, 8 * KIB, 8 * KIB, 0));
	CHECK(volatilefs_mark(fd, 24 * KIB, 8 * KIB, 0));
	purge_file("f");
	assert_ranges("f", "8192:8192 purged priority=3\n24576:8192 purged priority=3\n");
	unmark_expect(fd, 0, 8 * KIB, 0, 0);      /* before the purged bytes */
	unmark_expect(fd, 16 * KIB, 8 * KIB, 0, 0); /* between them */
	unmark_expect(fd, 4 * KIB, 8 * KIB, 4 * KIB, 1);
	/* The purged set outlives the unmark: asking again still says purged. */
	unmark_expect(fd, 8 * KIB, 8 * KIB, 4 * KIB, 1);
	unmark_expect(fd, 8 * KIB, 8 * KIB, 0, 1);
	unmark_expect(fd, 0, 0, 8 * KIB, 1);
	assert_ranges("f", "");
	close(fd);
}
END_TEST

START_TEST(unmark_purged_counts_only_bytes_within_file_size)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	purge_file("f");
	/* Truncating removes purged bytes at and beyond the new size. */
	CHECK(ftruncate(fd, 4096));
	assert_purged_xattr("f", "0:4096\n");
	assert_ranges("f", "0:4096 purged priority=3\n");
	unmark_expect(fd, 4096, 0, 0, 0);
	unmark_expect(fd, 0, 4096, 4096, 1);
	close(fd);
}
END_TEST

START_TEST(unmark_unaligned_or_overflowing_range_fails_einval)
{
	const uint64_t top = (uint64_t)INT64_MAX + 1;
	int fd = make_file_pattern("f", 16 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	ASSERT_ERRNO(volatilefs_unmark(fd, 1, 4096, NULL, NULL), EINVAL);
	ASSERT_ERRNO(volatilefs_unmark(fd, 6144, 4096, NULL, NULL), EINVAL);
	ASSERT_ERRNO(volatilefs_unmark(fd, 0, UINT64_MAX, NULL, NULL), EINVAL);
	ASSERT_ERRNO(volatilefs_unmark(fd, top - 4096, 4096, NULL, NULL), EINVAL);
	ASSERT_ERRNO(volatilefs_unmark(fd, top, 0, NULL, NULL), EINVAL);
	assert_ranges("f", "0:16384 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(unmark_failure_leaves_outputs_alone)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	uint64_t bytes = 42;
	int purged = 42;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	ASSERT_ERRNO(volatilefs_unmark(fd, 1, 4096, &bytes, &purged), EINVAL);
	ck_assert_uint_eq(bytes, 42);
	ck_assert_int_eq(purged, 42);
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* batch: a frame's unmarks, purged bits and marks in one call                                */

START_TEST(batch_unmarks_reports_each_range_and_marks)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	struct volatilefs_extent un[3] = { { 0, 8 * KIB }, { 16 * KIB, 8 * KIB }, { 32 * KIB, 4 * KIB } };
	struct volatilefs_extent mk[2] = { { 48 * KIB, 4 * KIB }, { 56 * KIB, 8 * KIB } };
	unsigned char purged[3] = { 9, 9, 9 };
	uint64_t bytes = 0;
	int merr = -1;

	CHECK(volatilefs_mark(fd, 0, 8 * KIB, 0));
	CHECK(volatilefs_mark(fd, 16 * KIB, 8 * KIB, 0));
	purge_file("f");
	/* 0:8K purged and rewritten in part; 16K:8K purged; 32K:4K never volatile. */
	pattern_write(fd, 0, 4 * KIB, 1);
	CHECK(volatilefs_batch(fd, un, 3, mk, 2, VOLATILEFS_PRIORITY(5), &bytes, purged, &merr));
	ck_assert_uint_eq(bytes, 16 * KIB);
	ck_assert_int_eq(purged[0], 1); /* 4K:4K is still purged */
	ck_assert_int_eq(purged[1], 1);
	ck_assert_int_eq(purged[2], 0);
	ck_assert_int_eq(merr, 0);
	/* Each mark range is a unit of its own, with the flags given. */
	assert_ranges("f", "49152:4096 volatile priority=5\n57344:8192 volatile priority=5\n");
	/* Rewritten, the first range reports clean. */
	pattern_write(fd, 4 * KIB, 4 * KIB, 1);
	CHECK(volatilefs_batch(fd, un, 1, NULL, 0, 0, NULL, purged, NULL));
	ck_assert_int_eq(purged[0], 0);
	/* Nothing to do is a valid call. */
	CHECK(volatilefs_batch(fd, NULL, 0, NULL, 0, 0, NULL, NULL, NULL));
	close(fd);
}
END_TEST

START_TEST(batch_bad_input_changes_nothing)
{
	int fd = make_file_pattern("f", 64 * KIB, 1), ro;
	struct volatilefs_extent un[1] = { { 0, 16 * KIB } };
	struct volatilefs_extent bad[1] = { { 100, 4 * KIB } };
	struct volatilefs_extent many[VOLATILEFS_BATCH_MAX + 1];
	unsigned char purged[1];

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	/* A bad mark range, or bad flags, fail the call before the unmark. */
	ASSERT_ERRNO(volatilefs_batch(fd, un, 1, bad, 1, 0, NULL, purged, NULL), EINVAL);
	ASSERT_ERRNO(volatilefs_batch(fd, un, 1, un, 1, VOLATILEFS_PRIORITY(9), NULL, purged, NULL),
		     EINVAL);
	ASSERT_ERRNO(volatilefs_batch(fd, un, 1, un, 1, 0x80, NULL, purged, NULL), EINVAL);
	assert_ranges("f", "0:16384 volatile priority=3\n");
	for (size_t i = 0; i <= VOLATILEFS_BATCH_MAX; i++)
		many[i] = (struct volatilefs_extent){ i * PAGE, PAGE };
	ASSERT_ERRNO(volatilefs_batch(fd, many, VOLATILEFS_BATCH_MAX + 1, NULL, 0, 0, NULL, NULL,
				      NULL), E2BIG);
	ASSERT_ERRNO(volatilefs_batch(fd, many, 100, many, VOLATILEFS_BATCH_MAX - 99, 0, NULL, NULL,
				      NULL), E2BIG);
	assert_ranges("f", "0:16384 volatile priority=3\n");
	/* As mark and unmark: a descriptor open for writing. */
	ro = open("f", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ro, 0);
	ASSERT_ERRNO(volatilefs_batch(ro, un, 1, NULL, 0, 0, NULL, NULL, NULL), EBADF);
	close(ro);
	/* The most ranges there is room for, all in one call. */
	CHECK(volatilefs_batch(fd, many, 16, many + 16, VOLATILEFS_BATCH_MAX - 16, 0, NULL, NULL,
			       NULL));
	close(fd);
}
END_TEST

/*
 * The marks fail (more than VOL_UNITS_PAST_EOF units would start past the
 * end: ENOSPC): the call still succeeds, the unmarks are done and
 * reported, mark_error says why the marks were not.
 */
START_TEST(batch_mark_failure_keeps_the_unmarks)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct volatilefs_extent un[1] = { { 0, 16 * KIB } };
	struct volatilefs_extent mk[1] = { { 1ull << 40, 4 * KIB } };
	unsigned char purged[1] = { 9 };
	uint64_t bytes = 0;
	int merr = 0;
	char *val = malloc(64 * KIB);

	ck_assert_ptr_nonnull(val);
	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	purge_file("f");
	/* 4096 units past the end, the most a file may have (vol.h). */
	for (int call = 0; call < 2; call++) {
		size_t len = 0;

		for (int i = 0; i < 2048; i++)
			len += (size_t)snprintf(val + len, 64 * KIB - len, "%llu:4096 ",
						(unsigned long long)(1u << 20) + (call * 2048ull + i) * 8192);
		CHECK(setxattr("f", "user.volatile.mark", val, len, 0));
	}
	CHECK(volatilefs_batch(fd, un, 1, mk, 1, 0, &bytes, purged, &merr));
	ck_assert_int_eq(merr, ENOSPC);
	ck_assert_uint_eq(bytes, 16 * KIB);
	ck_assert_int_eq(purged[0], 1);
	/* Unmarked, and the mark range not volatile. */
	ck_assert_int_eq(volatilefs_unmark(fd, 0, 16 * KIB, &bytes, NULL), 0);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_int_eq(volatilefs_unmark(fd, 1ull << 40, 4 * KIB, &bytes, NULL), 0);
	ck_assert_uint_eq(bytes, 0);
	free(val);
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* purge: what a purge does to the file, seen through the library                          */

START_TEST(purge_discards_whole_unit_and_keeps_it_volatile)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	CHECK(volatilefs_mark(fd, 16 * KIB, 32 * KIB, VOLATILEFS_PRIORITY(4)));
	purge_file("f");
	assert_ranges("f", "16384:32768 purged priority=4\n");
	assert_purged_xattr("f", "16384:32768\n");
	{
		const struct volatilefs_extent want[] = { { 16384, 32768 } };

		assert_extents(fd, 0, 0, want, 1);
	}
	/* Non-volatile data is never purged. */
	assert_file_pat(fd, 0, 16 * KIB, 1);
	assert_file_zero(fd, 16 * KIB, 32 * KIB);
	assert_file_pat(fd, 48 * KIB, 16 * KIB, 1);
	ck_assert_int_eq(lseek(fd, 0, SEEK_END), 64 * KIB);
	close(fd);
}
END_TEST

START_TEST(purge_adds_only_bytes_within_file_size)
{
	int fd = make_file_pattern("f", 10000, 1);

	CHECK(volatilefs_mark(fd, 0, 64 * KIB, 0));
	purge_file("f");
	assert_purged_xattr("f", "0:10000\n");
	{
		const struct volatilefs_extent want[] = { { 0, 10000 } };

		assert_extents(fd, 0, 0, want, 1);
	}
	unmark_expect(fd, 0, 0, 64 * KIB, 1);
	close(fd);
}
END_TEST

START_TEST(purge_frees_the_unit_memory)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	struct stat st;

	CHECK(fstat(fd, &st));
	ck_assert_int_eq(st.st_blocks, 128);
	CHECK(volatilefs_mark(fd, 0, 32 * KIB, 0));
	purge_file("f");
	ck_assert_uint_eq(purged_count(fd), 1);
	CHECK(stat("f", &st));
	ck_assert_int_eq(st.st_blocks, 64);
	ck_assert_int_eq(st.st_size, 64 * KIB);
	close(fd);
}
END_TEST

START_TEST(purged_data_reads_back_as_zeros_after_caching)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	int rfd = CHECK(open("f", O_RDONLY));

	CHECK(volatilefs_mark(fd, 0, 32 * KIB, 0));
	/* Into the page cache through both descriptors. */
	assert_file_pat(fd, 0, 64 * KIB, 1);
	assert_file_pat(rfd, 0, 64 * KIB, 1);
	purge_file("f");
	ck_assert_uint_eq(purged_count(fd), 1);
	assert_file_zero(fd, 0, 32 * KIB);
	assert_file_zero(rfd, 0, 32 * KIB);
	assert_file_pat(rfd, 32 * KIB, 32 * KIB, 1);
	close(rfd);
	close(fd);
}
END_TEST

START_TEST(purged_data_reads_as_zeros_through_existing_shared_mapping)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	uint8_t *map = mmap(NULL, 64 * KIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	ck_assert_msg(map != MAP_FAILED, "mmap: %s", errname(errno));
	pattern_assert(map, 64 * KIB, 0, 1);
	CHECK(volatilefs_mark(fd, 16 * KIB, 16 * KIB, 0));
	purge_file("f");
	ck_assert_uint_eq(purged_count(fd), 1);
	pattern_assert(map, 16 * KIB, 0, 1);
	assert_zeros(map + 16 * KIB, 16 * KIB, 16 * KIB);
	pattern_assert(map + 32 * KIB, 32 * KIB, 32 * KIB, 1);
	/* A new mapping agrees. */
	{
		uint8_t *m2 = mmap(NULL, 64 * KIB, PROT_READ, MAP_SHARED, fd, 0);

		ck_assert_msg(m2 != MAP_FAILED, "mmap: %s", errname(errno));
		assert_zeros(m2 + 16 * KIB, 16 * KIB, 16 * KIB);
		munmap(m2, 64 * KIB);
	}
	munmap(map, 64 * KIB);
	close(fd);
}
END_TEST

/* Does the mount run on the passthrough path (stats: passthrough=on)? */
static bool on_passthrough(void)
{
	char *st = xattr_get(mount_dir, "user.volatile.stats");
	bool on = strstr(st, "passthrough=on\n") != NULL;

	free(st);
	return on;
}

START_TEST(write_into_purged_range_removes_exactly_those_bytes)
{
	int fd = purged_file();

	/* On the passthrough path write(2)s reach the daemon, which keeps the
	 * purged set exact to the byte, through opens made while the mount
	 * holds volatile data or the file purged bytes; f's open came before
	 * its mark, in a mount that may have held none (volatilefs(8),
	 * PASSTHROUGH): open it again. */
	if (on_passthrough()) {
		close(fd);
		fd = CHECK(open("f", O_RDWR));
	}

	pattern_write(fd, 5000, 100, 2);
	assert_purged_xattr("f", "0:5000\n5100:11284\n");
	{
		const struct volatilefs_extent want[] = { { 0, 5000 }, { 5100, 11284 } };

		assert_extents(fd, 0, 0, want, 2);
	}
	assert_file_zero(fd, 0, 5000);
	assert_file_pat(fd, 5000, 100, 2);
	assert_file_zero(fd, 5100, 16 * KIB - 5100);
	/* Write policy keep: the unit stays volatile. */
	assert_ranges("f", "0:16384 purged priority=3\n");
	pattern_write(fd, 0, 5000, 3);
	pattern_write(fd, 5100, 16 * KIB - 5100, 3);
	assert_purged_xattr("f", "");
	assert_ranges("f", "0:16384 volatile priority=3\n");
	unmark_expect(fd, 0, 0, 16 * KIB, 0);
	close(fd);
}
END_TEST

/*
 * A store through a mapping does not say which bytes of its page it wrote: what was purged
 * reads as zeros, so only the bytes that are not zero leave the purged set, after the
 * write-back too, the lost ones stay reported and the unmark says purged; a write(2) over the
 * page, or the report cleared (removexattr), takes the rest out.
 */
START_TEST(store_through_mapping_into_purged_page_keeps_lost_bytes_reported)
{
	int fd = purged_file();
	uint8_t *map, buf[4096];

	ck_assert_uint_eq(purged_count(fd), 1);
	map = mmap(NULL, 16 * KIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_msg(map != MAP_FAILED, "mmap: %s", errname(errno));
	map[4096 + 17] = 0xab;
	CHECK(msync(map, 16 * KIB, MS_SYNC));
	assert_purged_xattr("f", "0:4113\n4114:12270\n");
	unmark_expect(fd, 4096, 4096, 4096, 1);
	map[4096 + 18] = 0xcd; /* a second store: the lost bytes around the first stay reported */
	CHECK(msync(map, 16 * KIB, MS_SYNC));
	/* On the classic path the write-back carries it; on the passthrough path the page holds
	 * memory already and nothing tells the daemon: it stays reported (allowed). */
	{
		char *got = xattr_get("f", "user.volatile.purged");

		ck_assert_msg(strcmp(got, "0:4113\n4115:12269\n") == 0 ||
				      strcmp(got, "0:4113\n4114:12270\n") == 0,
			      "user.volatile.purged after the second store: %s", got);
		free(got);
	}
	unmark_expect(fd, 4096, 4096, 0, 1);
	munmap(map, 16 * KIB);
	memset(buf, 0xee, sizeof(buf));
	pwrite_all(fd, buf, 4096, 4096);
	assert_purged_xattr("f", "0:4096\n8192:8192\n");
	CHECK(fremovexattr(fd, "user.volatile.purged"));
	assert_purged_xattr("f", "");
	close(fd);
}
END_TEST

START_TEST(truncate_cuts_bounded_units_and_drops_those_beyond)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 8 * KIB, 0));
	CHECK(volatilefs_mark(fd, 16 * KIB, 16 * KIB, 0));
	CHECK(volatilefs_mark(fd, 48 * KIB, 8 * KIB, 0));
	CHECK(volatilefs_mark(fd, 56 * KIB, 0, 0));
	/* 20000 rounded up to a page is 20480: the second unit is cut to 16K..20K. */
	CHECK(ftruncate(fd, 20000));
	assert_ranges("f", "0:8192 volatile priority=3\n"
			   "16384:4096 volatile priority=3\n"
			   "57344:0 volatile priority=3\n");
	close(fd);
}
END_TEST

START_TEST(punch_hole_removes_punched_bytes_from_purged_set)
{
	int fd = purged_file();

	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 3000));
	assert_purged_xattr("f", "0:1000\n4000:12384\n");
	close(fd);
}
END_TEST

START_TEST(forgetting_purged_set_empties_it)
{
	int fd = purged_file();

	ck_assert_uint_eq(purged_count(fd), 1);
	CHECK(removexattr("f", "user.volatile.purged"));
	ck_assert_uint_eq(purged_count(fd), 0);
	assert_purged_xattr("f", "");
	assert_ranges("f", "0:16384 volatile priority=3\n");
	unmark_expect(fd, 0, 0, 16 * KIB, 0);
	close(fd);
}
END_TEST

/* Purge order: lowest priority first; in a priority, aged units, then least recently used. */
START_TEST(purge_by_size_takes_units_in_purge_order)
{
	static const char *const want[] = {
		"24576:4096\n",
		"16384:4096\n24576:4096\n",
		"16384:4096\n24576:4096\n32768:4096\n",
		"8192:4096\n16384:4096\n24576:4096\n32768:4096\n",
		"0:4096\n8192:4096\n16384:4096\n24576:4096\n32768:4096\n",
	};
	int fd;

	/* Units left by earlier tests (unlinked, maybe not forgotten yet) hold no memory after
	 * this, so they are not candidates any more. */
	CHECK(setxattr(mount_dir, "user.volatile.purge", "all", 3, 0));
	fd = make_file_pattern("f", 40 * KIB, 1);
	CHECK(volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(4)));                        /* A */
	CHECK(volatilefs_mark(fd, 8192, 4096, VOLATILEFS_PRIORITY(1)));                     /* B */
	CHECK(volatilefs_mark(fd, 16384, 4096, VOLATILEFS_PRIORITY(1) | VOLATILEFS_AGE));   /* C */
	CHECK(volatilefs_mark(fd, 24576, 4096, VOLATILEFS_PRIORITY(0)));                    /* D */
	CHECK(volatilefs_mark(fd, 32768, 4096, VOLATILEFS_PRIORITY(1)));                    /* E */
	if (on_passthrough()) { /* the write must reach the daemon: see above */
		close(fd);
		fd = CHECK(open("f", O_RDWR));
	}
	pattern_write(fd, 8192, 100, 2); /* B becomes more recently used than E */
	/* Expected order: D (priority 0), C (aged), E (least recently used), B, A. */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK(setxattr(mount_dir, "user.volatile.purge", "4096", 4, 0));
		assert_purged_xattr("f", want[i]);
	}
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* purged: listing the purged set                                                           */

START_TEST(purged_lists_extents_clipped_to_the_range)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	const struct volatilefs_extent all[] = { { 8192, 8192 }, { 32768, 16384 } };
	const struct volatilefs_extent mid[] = { { 12000, 4384 }, { 32768, 7232 } };
	const struct volatilefs_extent tail[] = { { 40000, 9152 } };
	const struct volatilefs_extent inside[] = { { 33000, 100 } };

	CHECK(volatilefs_mark(fd, 8192, 8192, 0));
	CHECK(volatilefs_mark(fd, 32768, 16384, 0));
	purge_file("f");
	assert_extents(fd, 0, 0, all, 2);
	assert_extents(fd, 0, 64 * KIB, all, 2);
	assert_extents(fd, 0, UINT64_MAX, all, 2); /* an end past 2^64: to the end */
	assert_extents(fd, 12000, 28000, mid, 2);
	assert_extents(fd, 40000, 0, tail, 1);
	assert_extents(fd, 33000, 100, inside, 1);
	assert_extents(fd, 16384, 16384, NULL, 0); /* the gap, touching both */
	assert_extents(fd, 64 * KIB, 0, NULL, 0);
	assert_extents(fd, UINT64_MAX, 1, NULL, 0);
	close(fd);
}
END_TEST

START_TEST(purged_with_max_zero_only_counts)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	struct volatilefs_extent guard = { 77, 77 };
	size_t n = 0;

	CHECK(volatilefs_mark(fd, 0, 4096, 0));
	CHECK(volatilefs_mark(fd, 8192, 4096, 0));
	CHECK(volatilefs_mark(fd, 16384, 4096, 0));
	purge_file("f");
	CHECK(volatilefs_purged(fd, 0, 0, NULL, 0, &n));
	ck_assert_uint_eq(n, 3);
	CHECK(volatilefs_purged(fd, 0, 0, &guard, 0, &n));
	ck_assert_uint_eq(n, 3);
	ck_assert(guard.offset == 77 && guard.length == 77);
	CHECK(volatilefs_purged(fd, 4096, 8192, NULL, 0, &n));
	ck_assert_uint_eq(n, 1);
	CHECK(volatilefs_purged(fd, 0, 0, NULL, 0, NULL));
	close(fd);
}
END_TEST

START_TEST(purged_with_small_max_stores_max_and_counts_all)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	struct volatilefs_extent out[3] = { { 0, 0 }, { 0, 0 }, { 77, 77 } };
	size_t n = 0;

	for (uint64_t off = 0; off < 40 * KIB; off += 8 * KIB)
		CHECK(volatilefs_mark(fd, off, 4096, 0));
	purge_file("f");
	CHECK(volatilefs_purged(fd, 0, 0, out, 2, &n));
	ck_assert_uint_eq(n, 5);
	ck_assert(out[0].offset == 0 && out[0].length == 4096);
	ck_assert(out[1].offset == 8192 && out[1].length == 4096);
	ck_assert(out[2].offset == 77 && out[2].length == 77);
	close(fd);
}
END_TEST

START_TEST(purged_with_null_buffer_and_max_fails)
{
	int fd = purged_file();
	size_t n = 42;

	ASSERT_ERRNO(volatilefs_purged(fd, 0, 0, NULL, 1, &n), EFAULT);
	ck_assert_uint_eq(n, 42);
	close(fd);
}
END_TEST

START_TEST(purged_works_on_read_only_descriptor)
{
	int fd = purged_file();
	int rfd = CHECK(open("f", O_RDONLY));
	const struct volatilefs_extent want[] = { { 0, 16384 } };

	assert_extents(rfd, 0, 0, want, 1);
	close(rfd);
	close(fd);
}
END_TEST

START_TEST(purged_of_clean_file_is_empty)
{
	int fd = make_file_pattern("f", 64 * KIB, 1);
	struct volatilefs_extent out[2] = { { 77, 77 }, { 77, 77 } };
	size_t n = 42;

	CHECK(volatilefs_purged(fd, 0, 0, out, 2, &n));
	ck_assert_uint_eq(n, 0);
	ck_assert(out[0].offset == 77 && out[0].length == 77);
	CHECK(volatilefs_mark(fd, 0, 0, 0));
	CHECK(volatilefs_purged(fd, 0, 0, out, 2, &n));
	ck_assert_uint_eq(n, 0);
	close(fd);
}
END_TEST

/*
 * More extents than one ioctl answer holds (VOLATILEFS_PURGED_BATCH): NUNITS separate 4 KiB
 * units with 4 KiB gaps, all purged.  Extent i is [i * 8192, i * 8192 + 4096).
 */
#define NUNITS 300

static int many_purged_extents(void)
{
	int fd = make_file_pattern("f", NUNITS * 8 * KIB, 1);

	for (uint64_t i = 0; i < NUNITS; i++)
		CHECK(volatilefs_mark(fd, i * 8192, 4096, 0));
	purge_file("f");
	return fd;
}

/* Asserts out[0..n) are the extents of many_purged_extents() from first, clipped to
 * [lo, hi). */
static void assert_many(const struct volatilefs_extent *out, size_t n, uint64_t first,
			uint64_t lo, uint64_t hi)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t s = (first + k) * 8192, e = s + 4096;

		s = s < lo ? lo : s;
		e = e > hi ? hi : e;
		ck_assert_msg(out[k].offset == s && out[k].length == e - s,
			      "extent %zu is %" PRIu64 ":%" PRIu64 ", want %" PRIu64 ":%" PRIu64,
			      k, out[k].offset, out[k].length, s, e - s);
	}
}

START_TEST(purged_pages_through_more_than_one_batch)
{
	static const size_t maxes[] = { 1, 127, 128, 129, 200, 255, 256, 257, 299, 300, 301, 1000 };
	struct volatilefs_extent *out = xmalloc(1001 * sizeof(*out));
	int fd = many_purged_extents();
	char *text = xattr_get("f", "user.volatile.purged");
	size_t lines = 0;

	ck_assert_int_gt(NUNITS, 2 * VOLATILEFS_PURGED_BATCH);
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	ck_assert_uint_eq(lines, NUNITS);
	free(text);

	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		size_t max = maxes[m], n = 0, want = max < NUNITS ? max : NUNITS;

		for (size_t k = 0; k <= max; k++)
			out[k] = (struct volatilefs_extent){ 77, 77 };
		CHECK(volatilefs_purged(fd, 0, 0, out, max, &n));
		ck_assert_uint_eq(n, NUNITS);
		assert_many(out, want, 0, 0, UINT64_MAX);
		/* Nothing stored past what was asked or what exists. */
		ck_assert_msg(out[want].offset == 77 && out[want].length == 77,
			      "max %zu: out[%zu] was written", max, want);
	}
	free(out);
	close(fd);
}
END_TEST

START_TEST(purged_pages_through_a_bounded_range_with_clipped_ends)
{
	struct volatilefs_extent *out = xmalloc(NUNITS * sizeof(*out));
	int fd = many_purged_extents();
	/* From inside extent 10 to inside extent 250: 241 extents, both ends clipped. */
	uint64_t lo = 10 * 8192 + 100, hi = 250 * 8192 + 1000;
	size_t n = 0;

	CHECK(volatilefs_purged(fd, lo, hi - lo, out, NUNITS, &n));
	ck_assert_uint_eq(n, 241);
	assert_many(out, 241, 10, lo, hi);

	/* The same through an unbounded range from lo: 290 extents. */
	CHECK(volatilefs_purged(fd, lo, 0, out, NUNITS, &n));
	ck_assert_uint_eq(n, 290);
	assert_many(out, 290, 10, lo, UINT64_MAX);

	/* A range that starts in a gap and ends in a gap. */
	lo = 5 * 8192 + 5000;
	hi = 200 * 8192 + 6000;
	CHECK(volatilefs_purged(fd, lo, hi - lo, out, 150, &n));
	ck_assert_uint_eq(n, 195);
	assert_many(out, 150, 6, lo, hi);
	free(out);
	close(fd);
}
END_TEST

START_TEST(purged_pages_after_writes_split_extents)
{
	struct volatilefs_extent *out = xmalloc(2 * NUNITS * sizeof(*out));
	int fd = many_purged_extents();
	size_t n = 0;

	/* One byte written in the middle of every extent splits it in two. */
	for (uint64_t i = 0; i < NUNITS; i++)
		CHECK(pwrite(fd, "x", 1, (off_t)(i * 8192 + 2048)));
	CHECK(volatilefs_purged(fd, 0, 0, out, 2 * NUNITS, &n));
	ck_assert_uint_eq(n, 2 * NUNITS);
	for (size_t k = 0; k < 2 * NUNITS; k++) {
		uint64_t base = (k / 2) * 8192;
		uint64_t s = k % 2 ? base + 2049 : base, len = k % 2 ? 2047 : 2048;

		ck_assert_msg(out[k].offset == s && out[k].length == len,
			      "extent %zu is %" PRIu64 ":%" PRIu64 ", want %" PRIu64 ":%" PRIu64,
			      k, out[k].offset, out[k].length, s, len);
	}
	free(out);
	close(fd);
}
END_TEST

/*
 * Batches are separate requests: while another process keeps rewriting and purging, every
 * listing must still be one the set could have held (sorted, disjoint, whole units; the
 * writes and purges here only ever remove or add whole 4 KiB units), with min(count, max)
 * entries stored, or fail with EAGAIN when the set kept changing.
 */
START_TEST(purged_paging_stays_consistent_under_concurrent_purges)
{
	enum { MAXMAX = 2 * VOLATILEFS_PURGED_BATCH + 50 };
	struct volatilefs_extent *out = xmalloc((MAXMAX + 1) * sizeof(*out));
	int fd = many_purged_extents();
	struct timespec t0;
	unsigned listings = 0, eagain = 0;
	pid_t pid = CHECK(fork());

	if (pid == 0) {
		struct timespec c0;
		uint8_t page[4096];
		unsigned i = 0;

		memset(page, 0x5a, sizeof(page));
		clock_gettime(CLOCK_MONOTONIC, &c0);
		while (ms_since(&c0) < 1500) {
			/* Regenerate some units, purge them all again now and then. */
			if (pwrite(fd, page, sizeof(page), (off_t)((i * 37 % NUNITS) * 8192)) != 4096)
				_exit(1);
			if (++i % 50 == 0 &&
			    setxattr("f", "user.volatile.purge", "all", 3, 0) != 0)
				_exit(2);
		}
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < 1500) {
		size_t max = VOLATILEFS_PURGED_BATCH + 1 + listings % (MAXMAX - VOLATILEFS_PURGED_BATCH),
		       n = 0, want;

		out[max].offset = 77;
		if (volatilefs_purged(fd, 0, 0, out, max, &n) != 0) {
			ck_assert_msg(errno == EAGAIN, "volatilefs_purged: %s", errname(errno));
			eagain++;
			continue;
		}
		listings++;
		ck_assert_uint_le(n, NUNITS);
		want = n < max ? n : max;
		for (size_t k = 0; k < want; k++) {
			ck_assert_msg(out[k].offset % 8192 == 0 && out[k].length == 4096,
				      "extent %zu is %" PRIu64 ":%" PRIu64 ", not a whole unit", k,
				      out[k].offset, out[k].length);
			ck_assert_msg(k == 0 || out[k].offset > out[k - 1].offset,
				      "extent %zu out of order", k);
		}
		ck_assert_uint_eq(out[max].offset, 77);
	}
	reap(pid);
	ck_assert_uint_gt(listings, 0);
	free(out);
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* poll and epoll: POLLPRI while the purged set is not empty                                */

START_TEST(poll_reports_no_pollpri_before_a_purge)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT | POLLPRI };

	ck_assert(!pollpri(fd, 0));
	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	ck_assert(!pollpri(fd, 0));
	ck_assert(!pollpri(fd, 100));
	/* The file is readable and writable as ever. */
	ck_assert_int_eq(CHECK(poll(&p, 1, 0)), 1);
	ck_assert_int_eq(p.revents & (POLLIN | POLLOUT | POLLPRI), POLLIN | POLLOUT);
	close(fd);
}
END_TEST

START_TEST(poll_reports_pollpri_right_after_a_purge_by_another_process)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	ck_assert(!pollpri(fd, 0));
	reap(purge_later("f", 0));
	ck_assert(pollpri(fd, 0));
	/* Level-triggered: it stays until the purged set is emptied. */
	ck_assert(pollpri(fd, 0));
	close(fd);
}
END_TEST

START_TEST(sleeping_poll_wakes_on_a_purge_by_another_process)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct timespec t0;
	pid_t pid;
	bool pri;
	int64_t ms;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = purge_later("f", PURGE_DELAY_MS);
	pri = pollpri(fd, WAKE_DEADLINE_MS);
	ms = ms_since(&t0);
	reap(pid);
	ck_assert_msg(pri, "no POLLPRI after %lld ms", (long long)ms);
	/* The purge comes PURGE_DELAY_MS after this poll was seen asleep: not sooner. */
	ck_assert_msg(ms >= PURGE_DELAY_MS - 50, "woke after %lld ms, before the purge",
		      (long long)ms);
	close(fd);
}
END_TEST

/* The tid of the thread whose poll purge_thread waits for. */
static pid_t poller_tid;

static void *purge_thread(void *arg)
{
	wait_asleep_in_poll(getpid(), poller_tid);
	nap_ms(PURGE_DELAY_MS);
	return (void *)(intptr_t)setxattr(arg, "user.volatile.purge", "all", 3, 0);
}

START_TEST(sleeping_poll_wakes_on_a_purge_by_another_thread)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct timespec t0;
	pthread_t th;
	void *ret;
	bool pri;
	int64_t ms;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, VOLATILEFS_PRIORITY(0)));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	poller_tid = (pid_t)syscall(SYS_gettid);
	ck_assert_int_eq(pthread_create(&th, NULL, purge_thread, "f"), 0);
	pri = pollpri(fd, WAKE_DEADLINE_MS);
	ms = ms_since(&t0);
	ck_assert_int_eq(pthread_join(th, &ret), 0);
	ck_assert_ptr_null(ret);
	ck_assert_msg(pri, "POLLPRI %d after %lld ms", pri, (long long)ms);
	close(fd);
}
END_TEST

START_TEST(sleeping_poll_wakes_on_a_purge_of_the_whole_mount)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct timespec t0;
	pid_t pid;
	bool pri;
	int64_t ms;

	/* A purge of the whole mount (the root's user.volatile.purge), not of this file. */
	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = purge_later(mount_dir, PURGE_DELAY_MS);
	pri = pollpri(fd, WAKE_DEADLINE_MS);
	ms = ms_since(&t0);
	reap(pid);
	ck_assert_msg(pri, "POLLPRI %d after %lld ms", pri, (long long)ms);
	assert_purged_xattr("f", "0:16384\n");
	close(fd);
}
END_TEST

struct poller {
	int fd;
	bool pri;
	int64_t ms;
	struct timespec t0;
	_Atomic pid_t tid;
};

static void *poll_thread(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLPRI };

	atomic_store(&p->tid, (pid_t)syscall(SYS_gettid));
	p->pri = poll(&pfd, 1, WAKE_DEADLINE_MS) == 1 && (pfd.revents & POLLPRI);
	p->ms = ms_since(&p->t0);
	return NULL;
}

START_TEST(sleeping_polls_on_two_descriptors_both_wake)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct poller p[2] = { { .fd = fd }, { .fd = CHECK(open("f", O_RDONLY)) } };
	pthread_t th[2];
	pid_t pid;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	/* Both asleep in poll() before the purge. */
	for (int i = 0; i < 2; i++) {
		clock_gettime(CLOCK_MONOTONIC, &p[i].t0);
		ck_assert_int_eq(pthread_create(&th[i], NULL, poll_thread, &p[i]), 0);
		while (atomic_load(&p[i].tid) == 0)
			nap_ms(1);
		wait_asleep_in_poll(getpid(), atomic_load(&p[i].tid));
	}
	pid = purge_later("f", 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	reap(pid);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(p[i].pri, "descriptor %d: POLLPRI %d after %lld ms", i, p[i].pri,
			      (long long)p[i].ms);
	close(p[1].fd);
	close(fd);
}
END_TEST

START_TEST(sleeping_poll_wakes_again_on_a_later_purge)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	struct timespec t0;
	pid_t pid;
	bool pri;
	int64_t ms;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	purge_file("f");
	ck_assert(pollpri(fd, 0));
	/* Regenerate: rewrite the unit, which empties the purged set. */
	pattern_write(fd, 0, 16 * KIB, 2);
	ck_assert_uint_eq(purged_count(fd), 0);
	ck_assert(!pollpri(fd, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = purge_later("f", PURGE_DELAY_MS);
	pri = pollpri(fd, WAKE_DEADLINE_MS);
	ms = ms_since(&t0);
	reap(pid);
	ck_assert_msg(pri, "POLLPRI %d after %lld ms", pri, (long long)ms);
	close(fd);
}
END_TEST

START_TEST(epoll_reports_pollpri_and_wakes_on_a_purge)
{
	int fd = make_file_pattern("f", 16 * KIB, 1);
	int ep = CHECK(epoll_create1(EPOLL_CLOEXEC));
	struct epoll_event ev = { .events = EPOLLPRI, .data.u64 = 42 }, got;
	struct timespec t0;
	pid_t pid;
	int n;
	int64_t ms;

	CHECK(volatilefs_mark(fd, 0, 16 * KIB, 0));
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	ck_assert_int_eq(CHECK(epoll_wait(ep, &got, 1, 0)), 0);
	ck_assert_int_eq(CHECK(epoll_wait(ep, &got, 1, 100)), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = purge_later("f", PURGE_DELAY_MS);
	n = CHECK(epoll_wait(ep, &got, 1, WAKE_DEADLINE_MS));
	ms = ms_since(&t0);
	reap(pid);
	ck_assert_msg(n == 1, "epoll_wait: nothing after %lld ms", (long long)ms);
	ck_assert_uint_eq(got.data.u64, 42);
	ck_assert(got.events & EPOLLPRI);
	/* Level-triggered: reported again, until the purged set is emptied. */
	ck_assert_int_eq(CHECK(epoll_wait(ep, &got, 1, 0)), 1);
	CHECK(removexattr("f", "user.volatile.purged"));
	ck_assert_int_eq(CHECK(epoll_wait(ep, &got, 1, 0)), 0);
	ck_assert_int_eq(CHECK(epoll_wait(ep, &got, 1, 100)), 0);
	close(ep);
	close(fd);
}
END_TEST

START_TEST(epoll_added_after_a_purge_reports_pollpri_at_once)
{
	int fd = purged_file();
	int ep = CHECK(epoll_create1(EPOLL_CLOEXEC));
	struct epoll_event ev = { .events = EPOLLPRI }, got;

	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	ck_assert_int_eq(CHECK(epoll_wait(ep, &got, 1, 0)), 1);
	ck_assert(got.events & EPOLLPRI);
	close(ep);
	close(fd);
}
END_TEST

START_TEST(forgetting_purged_set_drops_pollpri)
{
	int fd = purged_file();

	ck_assert(pollpri(fd, 0));
	CHECK(removexattr("f", "user.volatile.purged"));
	ck_assert(!pollpri(fd, 0));
	ck_assert(!pollpri(fd, 100));
	close(fd);
}
END_TEST

START_TEST(rewriting_purged_bytes_drops_pollpri)
{
	int fd = purged_file();

	ck_assert(pollpri(fd, 0));
	pattern_write(fd, 0, 8 * KIB, 2);
	ck_assert(pollpri(fd, 0)); /* 8K..16K still purged */
	pattern_write(fd, 8 * KIB, 8 * KIB, 2);
	ck_assert(!pollpri(fd, 0));
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* purged_read=eio (run with VFS_PURGED_READ=eio on a mount with -o purged_read=eio)        */

START_TEST(purged_read_eio_fails_reads_and_faults_mappings)
{
	int fd = make_file_pattern("f", 12 * KIB, 1);
	uint8_t buf[4096];
	uint8_t *map = mmap(NULL, 12 * KIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	pid_t pid;
	int status;

	ck_assert_msg(map != MAP_FAILED, "mmap: %s", errname(errno));
	pattern_assert(map, 12 * KIB, 0, 1); /* mapped and cached */
	assert_file_pat(fd, 0, 12 * KIB, 1);
	CHECK(volatilefs_mark(fd, 0, 8 * KIB, 0));
	purge_file("f");
	ck_assert_uint_eq(purged_count(fd), 1);

	ASSERT_ERRNO(pread(fd, buf, sizeof(buf), 0), EIO);
	ASSERT_ERRNO(pread(fd, buf, 100, 5000), EIO);
	assert_file_pat(fd, 8 * KIB, 4 * KIB, 1); /* not purged */
	pattern_assert(map + 8 * KIB, 4 * KIB, 8 * KIB, 1);

	/* Touching a purged page of the existing mapping: SIGBUS. */
	pid = CHECK(fork());
	if (pid == 0) {
		volatile uint8_t c;

		signal(SIGBUS, SIG_DFL); /* sanitizers catch it otherwise */
		c = map[4096 + 10];

		(void)c;
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
		      "reading a purged page through the mapping: status 0x%x, want SIGBUS",
		      status);

	/* Rewritten bytes read back; the rest of the page stays purged. */
	pattern_write(fd, 0, 4096, 2);
	assert_file_pat(fd, 0, 4096, 2);
	pattern_assert(map, 4096, 0, 2);
	ASSERT_ERRNO(pread(fd, buf, 1, 4096), EIO);
	munmap(map, 12 * KIB);
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name)
{
	return mtest_tcase(s, name, mtest_setup, mtest_teardown, TIMEOUT_SECONDS);
}

static Suite *libvol_suite(bool eio)
{
	Suite *s = suite_create("libvol");
	TCase *tc;

	if (eio) {
		tc = tcase(s, "eio");
		tcase_add_test(tc, purged_read_eio_fails_reads_and_faults_mappings);
		return s;
	}

	tc = tcase(s, "mark");
	tcase_add_test(tc, mark_makes_one_unit_with_default_priority);
	tcase_add_test(tc, mark_rounds_length_up_to_a_page);
	tcase_add_test(tc, mark_length_zero_is_unbounded_and_follows_growth);
	tcase_add_test(tc, mark_priority_zero_differs_from_no_priority);
	tcase_add_test(tc, mark_overlapping_units_are_absorbed_into_one);
	tcase_add_test(tc, mark_touching_units_stay_separate);
	tcase_add_test(tc, mark_unbounded_absorbs_units_after_it);
	tcase_add_test(tc, mark_works_on_write_only_descriptor);
	tcase_add_test(tc, mark_on_read_only_descriptor_fails_ebadf);
	tcase_add_test(tc, mark_unaligned_offset_fails_einval);
	tcase_add_test(tc, mark_past_int64_max_fails_einval);
	tcase_add_test(tc, mark_priority_8_to_15_fails_einval);
	tcase_add_test(tc, mark_unknown_flag_bits_fail_einval);
	tcase_add_test(tc, mark_priority_bits_without_priority_flag_fail_einval);
	tcase_add_test(tc, mark_on_directory_fails_eisdir);
	tcase_add_test(tc, calls_off_volatilefs_fail_enotty);
	tcase_add_test(tc, calls_on_bad_descriptor_fail_ebadf);

	tc = tcase(s, "unmark");
	tcase_add_test(tc, unmark_whole_unit_reports_its_bytes);
	tcase_add_test(tc, unmark_non_volatile_range_reports_zero);
	tcase_add_test(tc, unmark_middle_of_unit_splits_it);
	tcase_add_test(tc, unmark_counts_only_volatile_bytes_of_the_range);
	tcase_add_test(tc, unmark_rounds_length_up_to_a_page);
	tcase_add_test(tc, unmark_unbounded_unit_counts_to_file_size_rounded_up);
	tcase_add_test(tc, unmark_unbounded_unit_of_empty_file_reports_zero);
	tcase_add_test(tc, unmark_bounded_unit_beyond_end_of_file_counts_its_pages);
	tcase_add_test(tc, unmark_accepts_null_pointers);
	tcase_add_test(tc, unmark_reports_purged_only_for_ranges_touching_the_purged_set);
	tcase_add_test(tc, unmark_purged_counts_only_bytes_within_file_size);
	tcase_add_test(tc, unmark_unaligned_or_overflowing_range_fails_einval);
	tcase_add_test(tc, unmark_failure_leaves_outputs_alone);
	tcase_add_test(tc, batch_unmarks_reports_each_range_and_marks);
	tcase_add_test(tc, batch_bad_input_changes_nothing);
	tcase_add_test(tc, batch_mark_failure_keeps_the_unmarks);

	tc = tcase(s, "purge");
	tcase_add_test(tc, purge_discards_whole_unit_and_keeps_it_volatile);
	tcase_add_test(tc, purge_adds_only_bytes_within_file_size);
	tcase_add_test(tc, purge_frees_the_unit_memory);
	tcase_add_test(tc, purged_data_reads_back_as_zeros_after_caching);
	tcase_add_test(tc, purged_data_reads_as_zeros_through_existing_shared_mapping);
	tcase_add_test(tc, write_into_purged_range_removes_exactly_those_bytes);
	tcase_add_test(tc, store_through_mapping_into_purged_page_keeps_lost_bytes_reported);
	tcase_add_test(tc, truncate_cuts_bounded_units_and_drops_those_beyond);
	tcase_add_test(tc, punch_hole_removes_punched_bytes_from_purged_set);
	tcase_add_test(tc, forgetting_purged_set_empties_it);
	tcase_add_test(tc, purge_by_size_takes_units_in_purge_order);

	tc = tcase(s, "purged");
	tcase_add_test(tc, purged_lists_extents_clipped_to_the_range);
	tcase_add_test(tc, purged_with_max_zero_only_counts);
	tcase_add_test(tc, purged_with_small_max_stores_max_and_counts_all);
	tcase_add_test(tc, purged_with_null_buffer_and_max_fails);
	tcase_add_test(tc, purged_works_on_read_only_descriptor);
	tcase_add_test(tc, purged_of_clean_file_is_empty);
	tcase_add_test(tc, purged_pages_through_more_than_one_batch);
	tcase_add_test(tc, purged_pages_through_a_bounded_range_with_clipped_ends);
	tcase_add_test(tc, purged_pages_after_writes_split_extents);
	tcase_add_test(tc, purged_paging_stays_consistent_under_concurrent_purges);

	tc = tcase(s, "poll");
	tcase_add_test(tc, poll_reports_no_pollpri_before_a_purge);
	tcase_add_test(tc, poll_reports_pollpri_right_after_a_purge_by_another_process);
	tcase_add_test(tc, sleeping_poll_wakes_on_a_purge_by_another_process);
	tcase_add_test(tc, sleeping_poll_wakes_on_a_purge_by_another_thread);
	tcase_add_test(tc, sleeping_poll_wakes_on_a_purge_of_the_whole_mount);
	tcase_add_test(tc, sleeping_polls_on_two_descriptors_both_wake);
	tcase_add_test(tc, sleeping_poll_wakes_again_on_a_later_purge);
	tcase_add_test(tc, epoll_reports_pollpri_and_wakes_on_a_purge);
	tcase_add_test(tc, epoll_added_after_a_purge_reports_pollpri_at_once);
	tcase_add_test(tc, forgetting_purged_set_drops_pollpri);
	tcase_add_test(tc, rewriting_purged_bytes_drops_pollpri);

	return s;
}

int main(void)
{
	const char *mode = getenv("VFS_PURGED_READ");
	bool eio = mode && strcmp(mode, "eio") == 0;

	if (!mtest_find_mount("libvol", mount_dir))
		return 1;
	if (mode && *mode && strcmp(mode, "zero") != 0 && !eio) {
		fprintf(stderr, "libvol: VFS_PURGED_READ=%s: want zero or eio\n", mode);
		return 1;
	}
	if (!mtest_make_run_dir("libvol", mount_dir))
		return 1;
	if (eio)
		fprintf(stderr, "libvol: VFS_PURGED_READ=eio: running only test case \"eio\"\n");
	else
		fprintf(stderr, "libvol: test case \"eio\" left out (it needs VFS_PURGED_READ=eio "
				"and a mount with -o purged_read=eio)\n");

	return mtest_run(libvol_suite(eio));
}
