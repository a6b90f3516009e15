/*
 * badinput: every kind of bad input through every interface of volatilefs (DESIGN section 9:
 * "no input crashes the daemon, leaks memory, or changes state before failing: each bad
 * call gets an errno"), table-driven.
 *
 * Each row of a table is one bad call and the errno that DESIGN.md, volatilefs(8), volatilefs(3)
 * or the kernel's own rules give for it. A row runs in a fresh directory holding a file with
 * volatile ranges and a partly purged unit ("f"), a directory, a FIFO and a symlink; the test
 * takes a snapshot of everything the call could have changed (units, purged set, contents,
 * size, plain attributes, the directory's names, the mount's counters), makes the call,
 * checks its errno, checks that the snapshot is unchanged, and checks that the daemon is
 * alive and the mount answers (stat of the root).
 *
 * Tables (each a loop test; the row's index is the "_i" Check prints, and its name is in
 * every message):
 *	xattr     values: grammar garbage, embedded NULs, 64 KiB + 1 (E2BIG from the kernel),
 *	          over-long results (E2BIG), small buffers (ERANGE), overflowing and misaligned
 *	          ranges, priorities out of range, unknown user.volatile names, names on nodes
 *	          they do not apply to, names of 256 bytes;
 *	ioctl     the ioctls with bad fields, reserved fields set, other _IOC sizes and
 *	          directions (ENOTTY), on descriptors of the wrong kind;
 *	call      the library's argument checks, offsets (negative, 2^63 - 1, past the end),
 *	          fallocate modes, names of 256 bytes for every call that makes a name; and
 *	          the controls: names of 255 bytes and a byte at 2^63 - 2 work;
 *	deep      a directory chain 200 levels deep, reached with openat (the full path is
 *	          longer than PATH_MAX);
 *	nobody    the root-only attributes as another user (EPERM), when run as root on a
 *	          mount with allow_other;
 *	options   bad options to the daemon binary ($VOLATILEFS) on a temporary mountpoint:
 *	          exit status 1, a message, nothing mounted;
 *	sizes     hostile sizes (DESIGN section 9), last: offsets and lengths at 2^63 - 1, the
 *	          last page, 2^62, and where a 32-bit count or page index would go wrong,
 *	          through fallocate, punch, truncate, pwrite, pread, lseek, the ioctls and the
 *	          attributes, each on an open, unlinked file of its own, each with the errno
 *	          or the result (return value, size, st_blocks, units, purged set) it must
 *	          give, and within 10 seconds: a call still running then fails its row as a
 *	          hang (the call is left behind; the mount then cannot be unmounted cleanly,
 *	          and with-mount.sh kills the daemon).
 *
 *	$ VOLATILEFS=build/src/daemon/volatilefs tests/mount/with-mount.sh \
 *		build/src/daemon/volatilefs -o allow_other -- build/tests/mount/badinput
 *	100%: Checks: ..., Failures: 0, Errors: 0
 *	$ CK_RUN_CASE=xattr VFS_TEST_DIR=/tmp/volatilefs build/tests/mount/badinput   (one table)
 *
 * Without VOLATILEFS the options table is left out; without root (or allow_other) the
 * "nobody" table is, with a notice on stderr. The mount must not be under memory pressure
 * (the snapshots would see purges): run it with the default or a generous memory_limit.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"
#include "volatilefs.h"

#define KIB 1024L
#define PAGE 4096L
#define FSIZE (64 * KIB)
#define DEPTH 200

static char mount_dir[PATH_MAX];
static pid_t daemon_pid;
static const char *daemon_bin;

/* ---------------------------------------------------------------------------------------- */
/* Fixture                                                                                  */

/*
 * f: 64 KiB of pattern; unit 0:16K priority 1 purged, then bytes 0..99 rewritten (purged
 * set 100:16284); unit 32K:16K priority 3 age; user.foo = "bar".  d: a directory.  p: a
 * FIFO.  l: a symlink to f.
 */
static void make_fixture(void)
{
	uint8_t buf[FSIZE];
	int fd = CHECK(open("f", O_RDWR | O_CREAT | O_TRUNC, 0644));

	pattern_fill(buf, FSIZE, 0, 0);
	ck_assert_int_eq(pwrite(fd, buf, FSIZE, 0), FSIZE);
	CHECK(volatilefs_mark(fd, 0, 16 * KIB, VOLATILEFS_PRIORITY(1)));
	CHECK(setxattr("f", "user.volatile.purge", "all", 3, 0));
	ck_assert_int_eq(pwrite(fd, buf, 100, 0), 100);
	CHECK(volatilefs_mark(fd, 32 * KIB, 16 * KIB, VOLATILEFS_AGE));
	CHECK(setxattr("f", "user.foo", "bar", 3, 0));
	close(fd);
	CHECK(mkdir("d", 0755));
	CHECK(mkfifo("p", 0644));
	CHECK(symlink("f", "l"));
}

static void setup(void)
{
	mtest_setup();
	make_fixture();
}

/* ---------------------------------------------------------------------------------------- */
/* Snapshots: what a bad call must not change                                               */

struct snap {
	char ranges[4096], purged[4096], stats[4096], limit[64], list[4096], foo[64],
	     names[4096], dlist[4096];
	uint64_t sum;
	off_t size;
	blkcnt_t blocks;
};

static void get_text(const char *path, const char *name, char *buf, size_t cap)
{
	ssize_t n = lgetxattr(path, name, buf, cap - 1);

	if (n < 0)
		snprintf(buf, cap, "<%s>", errname(errno));
	else
		buf[n] = '\0';
}

/* The counters that a failed call must leave alone (rss moves by itself). */
static void stats_text(char *buf, size_t cap)
{
	static const char *const keys[] = { "memory_limit=", "memory_low=", "data_bytes=",
					    "volatile_bytes=", "purged_bytes_total=",
					    "purges_total=", "volatile_units=", "enospc_total=" };
	char all[4096], *line, *save;
	size_t pos = 0;

	get_text(mount_dir, "user.volatile.stats", all, sizeof(all));
	buf[0] = '\0';
	for (line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (strncmp(line, keys[k], strlen(keys[k])) == 0 && pos < cap)
				pos += (size_t)snprintf(buf + pos, cap - pos, "%s\n", line);
}

static void names_of(const char *dir, char *buf, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t pos = 0;

	buf[0] = '\0';
	if (!d) {
		snprintf(buf, cap, "<%s>", errname(errno));
		return;
	}
	/* readdir order is stable for an unchanged directory on volatilefs. */
	while ((e = readdir(d)) != NULL && pos < cap)
		pos += (size_t)snprintf(buf + pos, cap - pos, "%s ", e->d_name);
	closedir(d);
}

static void snap_take(struct snap *s)
{
	uint8_t buf[FSIZE + 1];
	struct stat st;
	ssize_t n;
	int fd;

	memset(s, 0, sizeof(*s));
	get_text("f", "user.volatile.ranges", s->ranges, sizeof(s->ranges));
	get_text("f", "user.volatile.purged", s->purged, sizeof(s->purged));
	get_text("f", "user.foo", s->foo, sizeof(s->foo));
	n = listxattr("f", s->list, sizeof(s->list) - 1);
	if (n < 0)
		snprintf(s->list, sizeof(s->list), "<%s>", errname(errno));
	else
		for (ssize_t i = 0; i < n; i++)
			if (s->list[i] == '\0')
				s->list[i] = ' ';
	get_text(mount_dir, "user.volatile.memory_limit", s->limit, sizeof(s->limit));
	stats_text(s->stats, sizeof(s->stats));
	names_of(".", s->names, sizeof(s->names));
	names_of("d", s->dlist, sizeof(s->dlist));
	fd = open("f", O_RDONLY);
	if (fd >= 0) {
		n = pread(fd, buf, sizeof(buf), 0);
		for (ssize_t i = 0; i < n; i++)
			s->sum = s->sum * 1099511628211ull + buf[i] + 1;
		if (fstat(fd, &st) == 0) {
			s->size = st.st_size;
			s->blocks = st.st_blocks;
		}
		close(fd);
	}
}

static void snap_assert_same(const struct snap *a, const struct snap *b, const char *what)
{
#define SAME_STR(f) \
	ck_assert_msg(strcmp(a->f, b->f) == 0, "%s: changed " #f ":\nbefore:\n%s\nafter:\n%s", \
		      what, a->f, b->f)
	SAME_STR(ranges);
	SAME_STR(purged);
	SAME_STR(foo);
	SAME_STR(list);
	SAME_STR(limit);
	SAME_STR(stats);
	SAME_STR(names);
	SAME_STR(dlist);
#undef SAME_STR
	ck_assert_msg(a->sum == b->sum && a->size == b->size, "%s: changed the content of f "
		      "(size %lld -> %lld)", what, (long long)a->size, (long long)b->size);
	ck_assert_msg(a->blocks == b->blocks, "%s: changed st_blocks of f: %lld -> %lld", what,
		      (long long)a->blocks, (long long)b->blocks);
}

/* The daemon is alive and answers: stat of the root, within 10 seconds. */
static void assert_alive(const char *what)
{
	pid_t pid = fork();
	int status;
	struct timespec t0, t;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct stat st;

		_exit(stat(mount_dir, &st) == 0 ? 0 : 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			ck_abort_msg("%s: stat of the mount root hangs", what);
		}
		usleep(1000);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: stat of the mount root failed afterwards", what);
	if (daemon_pid > 0)
		ck_assert_msg(kill(daemon_pid, 0) == 0, "%s: daemon %d is gone", what, (int)daemon_pid);
}

/* Run one bad call: errno, nothing changed, daemon alive. */
#define BAD_CALL(what, err, expr)                                                     \
	do {                                                                          \
		struct snap before_, after_;                                          \
		long r_;                                                              \
		int e_;                                                               \
		snap_take(&before_);                                                  \
		errno = 0;                                                            \
		r_ = (long)(expr);                                                    \
		e_ = errno;                                                           \
		ck_assert_msg(r_ == -1 && e_ == (err), "%s: %s: expected -1 (%s), got %ld (%s)", \
			      (what), #expr, errname(err), r_,                         \
			      r_ == -1 ? errname(e_) : "success");                     \
		snap_take(&after_);                                                   \
		snap_assert_same(&before_, &after_, (what));                          \
		assert_alive(what);                                                   \
	} while (0)

/* ---------------------------------------------------------------------------------------- */
/* Extended attributes                                                                      */

enum target { T_FILE, T_DIR, T_ROOT, T_LINK };
enum xop { X_SET, X_GET, X_REMOVE };
enum gen {
	G_NONE,
	G_SEPARATORS_64K, /* 65536 bytes of separators: no range */
	G_TOO_BIG,        /* 65537 bytes: the kernel says E2BIG */
	G_LONG_NAME,      /* a name of 256 bytes: the kernel says ERANGE */
	G_GARBAGE_TAIL,   /* 65536 bytes: valid ranges, then garbage at the very end */
	G_MANY_UNITS,     /* f gets 4000 more units: its ranges list passes 64 KiB */
};

struct xcase {
	const char *what;
	enum target t;
	enum xop op;
	const char *name;
	const char *value;
	int len; /* -1: strlen(value) */
	enum gen gen;
	size_t bufsize; /* get: 0 = a 64 KiB + 1 buffer */
	int err;
};

#define SET(w, t, n, v, e) { w, t, X_SET, n, v, -1, G_NONE, 0, e }
#define SETN(w, t, n, v, l, e) { w, t, X_SET, n, v, l, G_NONE, 0, e }
#define GET(w, t, n, e) { w, t, X_GET, n, NULL, 0, G_NONE, 0, e }
#define REMOVE(w, t, n, e) { w, t, X_REMOVE, n, NULL, 0, G_NONE, 0, e }
#define MARK "user.volatile.mark"
#define UNMARK "user.volatile.unmark"

static const struct xcase xcases[] = {
	/* grammar garbage in a range list */
	SET("mark: empty value", T_FILE, MARK, "", EINVAL),
	SET("mark: only separators", T_FILE, MARK, " ,\t\n, ", EINVAL),
	SETN("mark: only a NUL", T_FILE, MARK, "", 1, EINVAL),
	SET("mark: a word", T_FILE, MARK, "garbage", EINVAL),
	SET("mark: a number without colon", T_FILE, MARK, "4096", EINVAL),
	SET("mark: empty offset", T_FILE, MARK, ":4096", EINVAL),
	SET("mark: empty length", T_FILE, MARK, "0:", EINVAL),
	SET("mark: two colons", T_FILE, MARK, "0:4096:8192", EINVAL),
	SET("mark: hex prefix without digits", T_FILE, MARK, "0x:4096", EINVAL),
	SET("mark: unknown suffix", T_FILE, MARK, "0:1Q", EINVAL),
	SET("mark: exabyte suffix", T_FILE, MARK, "0:1E", EINVAL),
	SET("mark: double suffix", T_FILE, MARK, "0:1KK", EINVAL),
	SET("mark: negative offset", T_FILE, MARK, "-4096:4096", EINVAL),
	SET("mark: negative length", T_FILE, MARK, "0:-1", EINVAL),
	SET("mark: plus sign", T_FILE, MARK, "+4096:4096", EINVAL),
	SET("mark: inner space in a size", T_FILE, MARK, "0:4 096", EINVAL),
	SET("mark: decimal point", T_FILE, MARK, "0:1.5K", EINVAL),
	SET("mark: upper-case word", T_FILE, MARK, "ALL", EINVAL),
	SET("mark: upper-case flag", T_FILE, MARK, "AGE 0:4096", EINVAL),
	SET("mark: semicolon separator", T_FILE, MARK, "0:4096;8192:4096", EINVAL),
	SET("mark: valid range then garbage", T_FILE, MARK, "0:4096 junk", EINVAL),
	SET("mark: garbage then valid range", T_FILE, MARK, "junk 0:4096", EINVAL),
	SET("mark: valid ranges, one misaligned", T_FILE, MARK, "0:4096 8192:4096 12289:1", EINVAL),
	SET("mark: non-ASCII bytes", T_FILE, MARK, "\xff\xfe:\x01\x80", EINVAL),
	SETN("mark: embedded NUL", T_FILE, MARK, "0:4096\0" "8192:4096", 15, EINVAL),
	SETN("mark: NUL first", T_FILE, MARK, "\0" "0:4096", 7, EINVAL),
	SETN("mark: two trailing NULs", T_FILE, MARK, "0:4096\0", 8, EINVAL),
	/* misaligned, overflowing */
	SET("mark: offset 1", T_FILE, MARK, "1:4096", EINVAL),
	SET("mark: offset 4095", T_FILE, MARK, "4095:1", EINVAL),
	SET("mark: offset 1K (not a page)", T_FILE, MARK, "1K:4K", EINVAL),
	SET("mark: offset INT64_MAX", T_FILE, MARK, "9223372036854775807:4096", EINVAL),
	SET("mark: last page + 2 pages", T_FILE, MARK, "0x7ffffffffffff000:8192", EINVAL),
	SET("mark: offset 2^63", T_FILE, MARK, "0x8000000000000000:0", EINVAL),
	SET("mark: length that rounds past 2^64", T_FILE, MARK, "0:18446744073709551615", EINVAL),
	SET("mark: offset + length past 2^63", T_FILE, MARK, "4096:0x7ffffffffffff000", EINVAL),
	SET("mark: length 2^64 - 4096", T_FILE, MARK, "4096:0xfffffffffffff000", EINVAL),
	SET("mark: offset does not fit 64 bits", T_FILE, MARK, "18446744073709551616:0", EINVAL),
	SET("mark: length does not fit 64 bits", T_FILE, MARK, "0:99999999999999999999", EINVAL),
	SET("mark: suffix overflows", T_FILE, MARK, "0:16777216T", EINVAL),
	SET("mark: hex overflows", T_FILE, MARK, "0:0x10000000000000000", EINVAL),
	/* flags */
	SET("mark: priority 8", T_FILE, MARK, "priority=8 0:4096", EINVAL),
	SET("mark: priority 9", T_FILE, MARK, "0:4096 priority=9", EINVAL),
	SET("mark: priority -1", T_FILE, MARK, "priority=-1 0:4096", EINVAL),
	SET("mark: priority 10", T_FILE, MARK, "priority=10 0:4096", EINVAL),
	SET("mark: priority 03", T_FILE, MARK, "priority=03 0:4096", EINVAL),
	SET("mark: priority empty", T_FILE, MARK, "priority= 0:4096", EINVAL),
	SET("mark: priority letter", T_FILE, MARK, "priority=x 0:4096", EINVAL),
	SET("mark: priority with spaces", T_FILE, MARK, "priority = 1 0:4096", EINVAL),
	SET("mark: only flags", T_FILE, MARK, "priority=1 age", EINVAL),
	SET("mark: unknown flag", T_FILE, MARK, "0:4096 young", EINVAL),
	SET("mark: flag with value", T_FILE, MARK, "0:4096 age=1", EINVAL),
	/* unmark: the same grammar, and no flags */
	SET("unmark: a word", T_FILE, UNMARK, "garbage", EINVAL),
	SET("unmark: empty value", T_FILE, UNMARK, "", EINVAL),
	SET("unmark: offset 1", T_FILE, UNMARK, "1:4096", EINVAL),
	SET("unmark: past 2^63", T_FILE, UNMARK, "0x7ffffffffffff000:8192", EINVAL),
	SET("unmark: age flag", T_FILE, UNMARK, "age 0:4096", EINVAL),
	SET("unmark: priority flag", T_FILE, UNMARK, "0:0 priority=1", EINVAL),
	SET("unmark: valid then garbage", T_FILE, UNMARK, "0:16K 32K:16K x", EINVAL),
	SETN("unmark: embedded NUL", T_FILE, UNMARK, "0:16K\0" "32K:16K", 13, EINVAL),
	/* big values */
	{ "mark: 64 KiB of separators", T_FILE, X_SET, MARK, NULL, 0, G_SEPARATORS_64K, 0, EINVAL },
	{ "mark: 64 KiB of ranges ending in garbage", T_FILE, X_SET, MARK, NULL, 0, G_GARBAGE_TAIL, 0,
	  EINVAL },
	{ "mark: 64 KiB + 1 value", T_FILE, X_SET, MARK, NULL, 0, G_TOO_BIG, 0, E2BIG },
	{ "unmark: 64 KiB + 1 value", T_FILE, X_SET, UNMARK, NULL, 0, G_TOO_BIG, 0, E2BIG },
	{ "purge: 64 KiB + 1 value", T_FILE, X_SET, "user.volatile.purge", NULL, 0, G_TOO_BIG, 0,
	  E2BIG },
	{ "plain user.* attribute: 64 KiB + 1 value", T_FILE, X_SET, "user.big", NULL, 0, G_TOO_BIG,
	  0, E2BIG },
	{ "name of 256 bytes", T_FILE, X_SET, NULL, "1", -1, G_LONG_NAME, 0, ERANGE },
	{ "get a name of 256 bytes", T_FILE, X_GET, NULL, NULL, 0, G_LONG_NAME, 0, ERANGE },
	{ "ranges list longer than 64 KiB", T_FILE, X_GET, "user.volatile.ranges", NULL, 0,
	  G_MANY_UNITS, 0, E2BIG },
	{ "ranges into a 1-byte buffer", T_FILE, X_GET, "user.volatile.ranges", NULL, 0, G_NONE, 1,
	  ERANGE },
	{ "purged into a 1-byte buffer", T_FILE, X_GET, "user.volatile.purged", NULL, 0, G_NONE, 1,
	  ERANGE },
	{ "stats into a 1-byte buffer", T_ROOT, X_GET, "user.volatile.stats", NULL, 0, G_NONE, 1,
	  ERANGE },
	/* per-file purge */
	SET("purge on a file: a size", T_FILE, "user.volatile.purge", "1M", EINVAL),
	SET("purge on a file: garbage", T_FILE, "user.volatile.purge", "some", EINVAL),
	SET("purge on a file: empty", T_FILE, "user.volatile.purge", "", EINVAL),
	SET("purge on a file: ALL", T_FILE, "user.volatile.purge", "ALL", EINVAL),
	SET("purge on a file: all twice", T_FILE, "user.volatile.purge", "all all", EINVAL),
	SETN("purge on a file: all, NUL, x", T_FILE, "user.volatile.purge", "all\0x", 5, EINVAL),
	SET("purge on a directory", T_DIR, "user.volatile.purge", "all", EINVAL),
	/* root-only names */
	SET("purge on the root: garbage", T_ROOT, "user.volatile.purge", "lots", EINVAL),
	SET("purge on the root: empty", T_ROOT, "user.volatile.purge", "", EINVAL),
	SET("purge on the root: negative", T_ROOT, "user.volatile.purge", "-1", EINVAL),
	SET("purge on the root: too large", T_ROOT, "user.volatile.purge", "99999999999999999999",
	    EINVAL),
	SET("purge on the root: two words", T_ROOT, "user.volatile.purge", "1M 2M", EINVAL),
	SET("memory_limit: 0", T_ROOT, "user.volatile.memory_limit", "0", EINVAL),
	SET("memory_limit: garbage", T_ROOT, "user.volatile.memory_limit", "lots", EINVAL),
	SET("memory_limit: empty", T_ROOT, "user.volatile.memory_limit", "", EINVAL),
	SET("memory_limit: negative", T_ROOT, "user.volatile.memory_limit", "-64M", EINVAL),
	SET("memory_limit: unknown suffix", T_ROOT, "user.volatile.memory_limit", "64Q", EINVAL),
	SET("memory_limit: too large", T_ROOT, "user.volatile.memory_limit",
	    "18446744073709551616", EINVAL),
	SET("memory_limit: inner space", T_ROOT, "user.volatile.memory_limit", "64 M", EINVAL),
	SETN("memory_limit: embedded NUL", T_ROOT, "user.volatile.memory_limit", "64M\0" "1", 5,
	     EINVAL),
	SET("memory_limit on a file", T_FILE, "user.volatile.memory_limit", "64M", EINVAL),
	SET("memory_limit on a directory", T_DIR, "user.volatile.memory_limit", "64M", EINVAL),
	GET("memory_limit of a file", T_FILE, "user.volatile.memory_limit", ENODATA),
	SET("stats: set", T_ROOT, "user.volatile.stats", "x", EINVAL),
	GET("stats of a file", T_FILE, "user.volatile.stats", ENODATA),
	SET("stats on a file: set", T_FILE, "user.volatile.stats", "x", EINVAL),
	/* read-only and write-only names */
	SET("ranges: set", T_FILE, "user.volatile.ranges", "0:4096", EINVAL),
	SET("purged: set", T_FILE, "user.volatile.purged", "0:4096", EINVAL),
	GET("mark: get", T_FILE, MARK, ENODATA),
	GET("unmark: get", T_FILE, UNMARK, ENODATA),
	GET("purge: get", T_FILE, "user.volatile.purge", ENODATA),
	GET("purge on the root: get", T_ROOT, "user.volatile.purge", ENODATA),
	/* names on nodes they do not apply to */
	SET("mark on a directory", T_DIR, MARK, "0:4096", EISDIR),
	SET("unmark on a directory", T_DIR, UNMARK, "0:4096", EISDIR),
	SET("mark on the root", T_ROOT, MARK, "all", EISDIR),
	GET("ranges of a directory", T_DIR, "user.volatile.ranges", ENODATA),
	GET("purged of a directory", T_DIR, "user.volatile.purged", ENODATA),
	SET("auto on a file", T_FILE, "user.volatile.auto", "mark", EINVAL),
	GET("auto of a file", T_FILE, "user.volatile.auto", ENODATA),
	SET("auto: garbage", T_DIR, "user.volatile.auto", "sometimes", EINVAL),
	SET("auto: empty", T_DIR, "user.volatile.auto", "", EINVAL),
	SET("auto: upper case", T_DIR, "user.volatile.auto", "MARK", EINVAL),
	SET("mark on a symlink (the VFS refuses user.*)", T_LINK, MARK, "0:4096", EPERM),
	SET("plain user.* on a symlink", T_LINK, "user.foo", "x", EPERM),
	/* unknown names */
	SET("unknown name: set", T_FILE, "user.volatile.bogus", "all", EINVAL),
	GET("unknown name: get", T_FILE, "user.volatile.bogus", ENODATA),
	REMOVE("unknown name: remove", T_FILE, "user.volatile.bogus", ENODATA),
	SET("empty suffix: set", T_FILE, "user.volatile.", "all", EINVAL),
	GET("empty suffix: get", T_FILE, "user.volatile.", ENODATA),
	SET("upper-case MARK", T_FILE, "user.volatile.MARK", "0:4096", EINVAL),
	SET("mark with a tail", T_FILE, "user.volatile.mark.x", "0:4096", EINVAL),
	SET("mark with a trailing space", T_FILE, "user.volatile.mark ", "0:4096", EINVAL),
	SET("unknown name on the root", T_ROOT, "user.volatile.nothing", "1", EINVAL),
	GET("unknown name on the root", T_ROOT, "user.volatile.nothing", ENODATA),
	REMOVE("remove ranges", T_FILE, "user.volatile.ranges", ENODATA),
	REMOVE("remove mark", T_FILE, MARK, ENODATA),
	REMOVE("remove purged of a directory", T_DIR, "user.volatile.purged", ENODATA),
	REMOVE("remove a plain attribute that is not there", T_FILE, "user.nothere", ENODATA),
	SET("namespace the mount does not store", T_FILE, "bogus.name", "1", EOPNOTSUPP),
	SET("plain attribute, XATTR_CREATE over an existing one", T_FILE, "user.foo", "baz", EEXIST),
};

static char *long_value(size_t len, enum gen g)
{
	char *v = malloc(len + 1);
	size_t pos = 0;

	ck_assert_ptr_nonnull(v);
	if (g == G_SEPARATORS_64K) {
		for (size_t i = 0; i < len; i++)
			v[i] = " ,\t\n"[i % 4];
		return v;
	}
	/* valid ranges "0:4096 " ... */
	while (pos + 16 < len)
		pos += (size_t)sprintf(v + pos, "%zu:4096 ", (pos % 1000) * 4096);
	while (pos < len)
		v[pos++] = ' ';
	if (g == G_GARBAGE_TAIL)
		v[len - 1] = 'x';
	return v;
}

START_TEST(xattr)
{
	const struct xcase *c = &xcases[_i];
	const char *path = c->t == T_FILE ? "f" : c->t == T_DIR ? "d" : c->t == T_LINK ? "l" :
			   mount_dir;
	char name[300], *value = (char *)c->value, *buf;
	size_t len = c->len < 0 ? strlen(c->value ? c->value : "") : (size_t)c->len;
	size_t bufsize = c->bufsize ? c->bufsize : 64 * KIB + 1;
	int xflags = c->err == EEXIST ? XATTR_CREATE : 0;

	snprintf(name, sizeof(name), "%s", c->name ? c->name : "");
	switch (c->gen) {
	case G_SEPARATORS_64K:
	case G_GARBAGE_TAIL:
		len = 64 * KIB;
		value = long_value(len, c->gen);
		break;
	case G_TOO_BIG:
		len = 64 * KIB + 1;
		value = long_value(len, c->gen);
		break;
	case G_LONG_NAME:
		memset(name, 'n', 256);
		memcpy(name, "user.", 5);
		name[256] = '\0';
		break;
	case G_MANY_UNITS: {
		/* 4000 units of one page, apart: about 120 KiB of list */
		int fd = CHECK(open("f", O_WRONLY));

		for (int i = 0; i < 4000; i++)
			CHECK(volatilefs_mark(fd, (uint64_t)(100 + 2 * i) * PAGE, PAGE, 0));
		close(fd);
		break;
	}
	default:
		break;
	}
	buf = malloc(bufsize);
	ck_assert_ptr_nonnull(buf);
	switch (c->op) {
	case X_SET:
		BAD_CALL(c->what, c->err, lsetxattr(path, name, value, len, xflags));
		break;
	case X_GET:
		BAD_CALL(c->what, c->err, lgetxattr(path, name, buf, bufsize));
		break;
	case X_REMOVE:
		BAD_CALL(c->what, c->err, lremovexattr(path, name));
		break;
	}
	if (value != c->value)
		free(value);
	free(buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* ioctls                                                                                   */

enum fdkind { FD_RDWR, FD_RDONLY, FD_DIR, FD_FIFO, FD_PATH, FD_NULLARG };

struct icase {
	const char *what;
	unsigned long cmd;
	enum fdkind fd;
	uint64_t offset, length;
	uint32_t flags, reserved;
	int err;
};

#define IOC_MAGIC VOLATILEFS_IOC_MAGIC
#define MARK_SZ sizeof(struct volatilefs_mark_arg)
#define UNMARK_SZ sizeof(struct volatilefs_unmark_arg)
#define PURGED_SZ sizeof(struct volatilefs_purged_arg)
#define RW (_IOC_READ | _IOC_WRITE)
#define I(w, cmd, fd, off, len, fl, res, e) { w, cmd, fd, off, len, fl, res, e }

static const struct icase icases[] = {
	/* fields */
	I("mark: offset 1", VOLATILEFS_IOC_MARK, FD_RDWR, 1, 4096, 0, 0, EINVAL),
	I("mark: offset 4095", VOLATILEFS_IOC_MARK, FD_RDWR, 4095, 0, 0, 0, EINVAL),
	I("mark: offset INT64_MAX", VOLATILEFS_IOC_MARK, FD_RDWR, INT64_MAX, 0, 0, 0, EINVAL),
	I("mark: offset 2^63", VOLATILEFS_IOC_MARK, FD_RDWR, 1ull << 63, 4096, 0, 0, EINVAL),
	I("mark: offset 2^64 - 4096", VOLATILEFS_IOC_MARK, FD_RDWR, UINT64_MAX - 4095, 0, 0, 0,
	  EINVAL),
	I("mark: last page + 2 pages", VOLATILEFS_IOC_MARK, FD_RDWR, INT64_MAX - 4095, 8192, 0, 0,
	  EINVAL),
	I("mark: length 2^64 - 1", VOLATILEFS_IOC_MARK, FD_RDWR, 0, UINT64_MAX, 0, 0, EINVAL),
	I("mark: length rounding past 2^63", VOLATILEFS_IOC_MARK, FD_RDWR, 4096, INT64_MAX - 4096,
	  0, 0, EINVAL),
	I("mark: length 2^63", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 1ull << 63, 0, 0, EINVAL),
	I("mark: priority 8", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, VOLATILEFS_PRIORITY(8), 0,
	  EINVAL),
	I("mark: priority 15", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, VOLATILEFS_PRIORITY(15), 0,
	  EINVAL),
	I("mark: priority bits without the priority flag", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096,
	  0x20, 0, EINVAL),
	I("mark: unknown flag bit 1", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, 0x2, 0, EINVAL),
	I("mark: unknown flag bit 31", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, 0x80000000u, 0,
	  EINVAL),
	I("mark: all flag bits", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, 0xffffffffu, 0, EINVAL),
	I("mark: reserved 1", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, 0, 1, EINVAL),
	I("mark: reserved 2^31", VOLATILEFS_IOC_MARK, FD_RDWR, 0, 4096, 0, 0x80000000u, EINVAL),
	I("unmark: offset 1", VOLATILEFS_IOC_UNMARK, FD_RDWR, 1, 4096, 0, 0, EINVAL),
	I("unmark: past 2^63", VOLATILEFS_IOC_UNMARK, FD_RDWR, INT64_MAX - 4095, 8192, 0, 0, EINVAL),
	I("unmark: length 2^64 - 1", VOLATILEFS_IOC_UNMARK, FD_RDWR, 0, UINT64_MAX, 0, 0, EINVAL),
	I("unmark: offset 2^64 - 4096", VOLATILEFS_IOC_UNMARK, FD_RDWR, UINT64_MAX - 4095, 0, 0, 0,
	  EINVAL),
	I("unmark: reserved 1", VOLATILEFS_IOC_UNMARK, FD_RDWR, 0, 0, 0, 1, EINVAL),
	I("purged: reserved 1", VOLATILEFS_IOC_PURGED, FD_RDWR, 0, 0, 0, 1, EINVAL),
	I("purged: reserved on a read-only descriptor", VOLATILEFS_IOC_PURGED, FD_RDONLY, 0, 0, 0,
	  7, EINVAL),
	/* descriptors */
	I("mark: read-only descriptor", VOLATILEFS_IOC_MARK, FD_RDONLY, 0, 4096, 0, 0, EBADF),
	I("unmark: read-only descriptor", VOLATILEFS_IOC_UNMARK, FD_RDONLY, 0, 0, 0, 0, EBADF),
	I("mark: directory", VOLATILEFS_IOC_MARK, FD_DIR, 0, 4096, 0, 0, EISDIR),
	I("unmark: directory", VOLATILEFS_IOC_UNMARK, FD_DIR, 0, 0, 0, 0, EISDIR),
	I("purged: directory", VOLATILEFS_IOC_PURGED, FD_DIR, 0, 0, 0, 0, EISDIR),
	I("mark: FIFO (the pipe code answers)", VOLATILEFS_IOC_MARK, FD_FIFO, 0, 4096, 0, 0, ENOTTY),
	I("mark: O_PATH descriptor", VOLATILEFS_IOC_MARK, FD_PATH, 0, 4096, 0, 0, EBADF),
	I("mark: NULL argument", VOLATILEFS_IOC_MARK, FD_NULLARG, 0, 4096, 0, 0, EFAULT),
	I("purged: NULL argument", VOLATILEFS_IOC_PURGED, FD_NULLARG, 0, 0, 0, 0, EFAULT),
	/* other sizes */
	I("mark, size - 8", _IOC(RW, IOC_MAGIC, 1, MARK_SZ - 8), FD_RDWR, 0, 4096, 0, 0, ENOTTY),
	I("mark, size + 8", _IOC(RW, IOC_MAGIC, 1, MARK_SZ + 8), FD_RDWR, 0, 4096, 0, 0, ENOTTY),
	I("mark, size 1", _IOC(RW, IOC_MAGIC, 1, 1), FD_RDWR, 0, 4096, 0, 0, ENOTTY),
	I("mark, size of unmark", _IOC(RW, IOC_MAGIC, 1, UNMARK_SZ), FD_RDWR, 0, 4096, 0, 0, ENOTTY),
	I("mark, size 16383", _IOC(RW, IOC_MAGIC, 1, 16383), FD_RDWR, 0, 4096, 0, 0, ENOTTY),
	I("unmark, size of mark", _IOC(RW, IOC_MAGIC, 2, MARK_SZ), FD_RDWR, 0, 0, 0, 0, ENOTTY),
	I("unmark, size 0", _IOC(RW, IOC_MAGIC, 2, 0), FD_RDWR, 0, 0, 0, 0, ENOTTY),
	I("purged, size - 16", _IOC(RW, IOC_MAGIC, 3, PURGED_SZ - 16), FD_RDWR, 0, 0, 0, 0, ENOTTY),
	I("purged, size of mark", _IOC(RW, IOC_MAGIC, 3, MARK_SZ), FD_RDWR, 0, 0, 0, 0, ENOTTY),
	/* other directions */
	I("mark as _IOW", _IOW(IOC_MAGIC, 1, struct volatilefs_mark_arg), FD_RDWR, 0, 4096, 0, 0,
	  ENOTTY),
	I("mark as _IOR", _IOR(IOC_MAGIC, 1, struct volatilefs_mark_arg), FD_RDWR, 0, 4096, 0, 0,
	  ENOTTY),
	I("mark as _IO", _IO(IOC_MAGIC, 1), FD_RDWR, 0, 4096, 0, 0, ENOTTY),
	I("unmark as _IOW", _IOW(IOC_MAGIC, 2, struct volatilefs_unmark_arg), FD_RDWR, 0, 0, 0, 0,
	  ENOTTY),
	I("purged as _IOR", _IOR(IOC_MAGIC, 3, struct volatilefs_purged_arg), FD_RDWR, 0, 0, 0, 0,
	  ENOTTY),
	/* other numbers */
	I("command number 0", _IOWR(IOC_MAGIC, 0, struct volatilefs_mark_arg), FD_RDWR, 0, 4096, 0,
	  0, ENOTTY),
	I("command number 4", _IOWR(IOC_MAGIC, 4, struct volatilefs_mark_arg), FD_RDWR, 0, 4096, 0,
	  0, ENOTTY),
	I("command number 255", _IOWR(IOC_MAGIC, 255, struct volatilefs_mark_arg), FD_RDWR, 0, 4096,
	  0, 0, ENOTTY),
	I("another magic", _IOWR(IOC_MAGIC + 1, 1, struct volatilefs_mark_arg), FD_RDWR, 0, 4096, 0,
	  0, ENOTTY),
	I("FS_IOC_GETFLAGS-like command", _IOR('f', 1, long), FD_RDWR, 0, 0, 0, 0, ENOTTY),
};

START_TEST(ioctl_bad)
{
	const struct icase *c = &icases[_i];
	static union {
		struct volatilefs_mark_arg mark;
		struct volatilefs_unmark_arg unmark;
		struct volatilefs_purged_arg purged;
		uint8_t raw[16384];
	} a;
	void *arg = &a;
	int fd;

	memset(&a, 0, sizeof(a));
	switch (_IOC_NR(c->cmd) == 3 && _IOC_TYPE(c->cmd) == IOC_MAGIC ? 3 :
		_IOC_NR(c->cmd) == 2 && _IOC_TYPE(c->cmd) == IOC_MAGIC ? 2 : 1) {
	case 2:
		a.unmark.offset = c->offset;
		a.unmark.length = c->length;
		a.unmark.reserved = c->reserved;
		break;
	case 3:
		a.purged.offset = c->offset;
		a.purged.length = c->length;
		a.purged.reserved = c->reserved;
		break;
	default:
		a.mark.offset = c->offset;
		a.mark.length = c->length;
		a.mark.flags = c->flags;
		a.mark.reserved = c->reserved;
		break;
	}
	switch (c->fd) {
	case FD_RDONLY:
		fd = CHECK(open("f", O_RDONLY));
		break;
	case FD_DIR:
		fd = CHECK(open("d", O_RDONLY | O_DIRECTORY));
		break;
	case FD_FIFO:
		fd = CHECK(open("p", O_RDWR));
		break;
	case FD_PATH:
		fd = CHECK(open("f", O_PATH));
		break;
	case FD_NULLARG:
		arg = NULL;
		/* fall through */
	default:
		fd = CHECK(open("f", O_RDWR));
		break;
	}
	BAD_CALL(c->what, c->err, ioctl(fd, c->cmd, arg));
	close(fd);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Calls: the library, offsets, names                                                       */

static char name256[257], name255[256], name1025[1026];

static void make_names(void)
{
	memset(name256, 'a', 256);
	name256[256] = '\0';
	memset(name255, 'b', 255);
	name255[255] = '\0';
	memset(name1025, 'c', 1025);
	name1025[1025] = '\0';
}

static int fd_rw(void)
{
	return CHECK(open("f", O_RDWR));
}

/* The library leaves its outputs alone when it fails. */
static int lib_unmark_outputs(uint64_t off, uint64_t len)
{
	int fd = fd_rw(), purged = 42, r, e;
	uint64_t bytes = 4242;

	r = volatilefs_unmark(fd, off, len, &bytes, &purged);
	e = errno;
	close(fd);
	ck_assert_msg(bytes == 4242 && purged == 42, "a failed unmark wrote its outputs: bytes=%"
		      PRIu64 " purged=%d", bytes, purged);
	errno = e;
	return r;
}

static int c_lib_unmark_misaligned(void) { return lib_unmark_outputs(100, 4096); }
static int c_lib_unmark_overflow(void) { return lib_unmark_outputs(INT64_MAX - 4095, 4097); }

static int c_lib_mark_priority16(void)
{
	int fd = fd_rw(), r = volatilefs_mark(fd, 0, 4096, VOLATILEFS_PRIORITY(16) | 0x1000);
	int e = errno;

	close(fd);
	errno = e;
	return r;
}

static int c_lib_mark_rdonly(void)
{
	int fd = CHECK(open("f", O_RDONLY)), r = volatilefs_mark(fd, 0, 0, 0), e = errno;

	close(fd);
	errno = e;
	return r;
}

static int c_lib_mark_closed_fd(void)
{
	int fd = fd_rw();

	close(fd);
	return volatilefs_mark(fd, 0, 4096, 0);
}

static int c_lib_mark_fd_minus_1(void) { return volatilefs_mark(-1, 0, 4096, 0); }

static int c_lib_purged_null_out(void)
{
	int fd = fd_rw(), r, e;
	size_t count = 4242;

	r = volatilefs_purged(fd, 0, 0, NULL, 3, &count);
	e = errno;
	close(fd);
	ck_assert_msg(count == 4242, "a failed volatilefs_purged wrote *count (%zu)", count);
	errno = e;
	return r;
}

static int c_lib_mark_off_volatilefs(void)
{
	int fd = CHECK(open("/dev/null", O_RDWR)), r = volatilefs_mark(fd, 0, 4096, 0), e = errno;

	close(fd);
	errno = e;
	return r;
}

static int c_pwrite_minus_1(void)
{
	int fd = fd_rw(), e;
	ssize_t r = pwrite(fd, "x", 1, -1);

	e = errno;
	close(fd);
	errno = e;
	return (int)r;
}

static int c_pwrite_int64_max(void)
{
	int fd = fd_rw(), e;
	ssize_t r = pwrite(fd, "x", 1, INT64_MAX);

	e = errno;
	close(fd);
	errno = e;
	return (int)r;
}

static int c_pwrite_2_at_int64_max_minus_1(void)
{
	int fd = fd_rw(), e;
	ssize_t r = pwrite(fd, "xy", 2, INT64_MAX - 1);

	e = errno;
	close(fd);
	errno = e;
	return (int)r;
}

static int c_pread_minus_1(void)
{
	char b[4];
	int fd = fd_rw(), e;
	ssize_t r = pread(fd, b, 1, -1);

	e = errno;
	close(fd);
	errno = e;
	return (int)r;
}

static int c_ftruncate_minus_1(void)
{
	int fd = fd_rw(), r = ftruncate(fd, -1), e = errno;

	close(fd);
	errno = e;
	return r;
}

static int seek(off_t off, int whence)
{
	int fd = fd_rw(), e;
	off_t r = lseek(fd, off, whence);

	e = errno;
	close(fd);
	errno = e;
	return r < 0 ? -1 : 0;
}

static int c_seek_data_at_size(void) { return seek(FSIZE, SEEK_DATA); }
static int c_seek_data_beyond(void) { return seek(1L << 40, SEEK_DATA); }
static int c_seek_data_int64_max(void) { return seek(INT64_MAX, SEEK_DATA); }
static int c_seek_hole_beyond(void) { return seek(FSIZE + 1, SEEK_HOLE); }
static int c_seek_data_negative(void) { return seek(-1, SEEK_DATA); }
static int c_seek_set_negative(void) { return seek(-1, SEEK_SET); }
static int c_seek_bad_whence(void) { return seek(0, 42); }

static int falloc(int mode, off_t off, off_t len)
{
	int fd = fd_rw(), r = fallocate(fd, mode, off, len), e = errno;

	close(fd);
	errno = e;
	return r;
}

static int c_falloc_len0(void) { return falloc(0, 0, 0); }
static int c_falloc_len_negative(void) { return falloc(0, 0, -1); }
static int c_falloc_off_negative(void) { return falloc(0, -4096, 4096); }
static int c_falloc_overflow(void) { return falloc(0, INT64_MAX - 10, 4096); }
static int c_punch_overflow(void)
{
	return falloc(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, INT64_MAX - 10, 4096);
}
static int c_punch_without_keep_size(void) { return falloc(FALLOC_FL_PUNCH_HOLE, 0, 4096); }
static int c_punch_len0(void) { return falloc(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 0); }
static int c_falloc_zero_range(void) { return falloc(FALLOC_FL_ZERO_RANGE, 0, 4096); }
static int c_falloc_collapse(void) { return falloc(FALLOC_FL_COLLAPSE_RANGE, 0, 4096); }
static int c_falloc_insert(void) { return falloc(FALLOC_FL_INSERT_RANGE, 0, 4096); }
static int c_falloc_unknown_bit(void) { return falloc(0x4000, 0, 4096); }

static int c_create_256(void) { return open(name256, O_RDWR | O_CREAT | O_EXCL, 0644); }
static int c_create_1025(void) { return open(name1025, O_RDWR | O_CREAT | O_EXCL, 0644); }
static int c_mkdir_256(void) { return mkdir(name256, 0755); }
static int c_mkfifo_256(void) { return mkfifo(name256, 0644); }
static int c_mknod_sock_256(void) { return mknod(name256, S_IFSOCK | 0644, 0); }
static int c_symlink_256(void) { return symlink("f", name256); }
static int c_link_256(void) { return link("f", name256); }
static int c_rename_256(void) { return rename("f", name256); }
static int c_rename_dir_256(void) { return rename("d", name256); }
static int c_renameat2_exchange_256(void)
{
	return renameat2(AT_FDCWD, "f", AT_FDCWD, name256, RENAME_EXCHANGE);
}
static int c_stat_256(void)
{
	struct stat st;

	return stat(name256, &st);
}
static int c_unlink_256(void) { return unlink(name256); }
static int c_create_in_dir_256(void)
{
	char p[300];

	snprintf(p, sizeof(p), "d/%s", name256);
	return open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
}
static int c_symlink_target_4096(void)
{
	static char t[4097];

	memset(t, 't', 4096);
	t[4096] = '\0';
	return symlink(t, "s4096");
}
static int c_rename_dir_into_itself(void) { return rename("d", "d/sub"); }
static int c_rmdir_file(void) { return rmdir("f"); }
static int c_unlink_dir(void) { return unlink("d"); }
static int c_mkdir_exists(void) { return mkdir("f", 0755); }
static int c_link_dir(void) { return link("d", "d2"); }
static int c_rename_noreplace(void)
{
	return renameat2(AT_FDCWD, "d", AT_FDCWD, "f", RENAME_NOREPLACE);
}
static int c_rename_exchange_missing(void)
{
	return renameat2(AT_FDCWD, "f", AT_FDCWD, "missing", RENAME_EXCHANGE);
}
static int c_rename_bad_flags(void) { return renameat2(AT_FDCWD, "f", AT_FDCWD, "g", 0x80); }
static int c_rename_file_over_dir(void) { return rename("f", "d"); }
static int c_rename_dir_over_file(void) { return rename("d", "f"); }
static int c_open_dir_for_writing(void) { return open("d", O_RDWR); }
static int c_open_file_as_dir(void) { return open("f", O_RDONLY | O_DIRECTORY); }
static int c_write_to_dir(void)
{
	int fd = CHECK(open("d", O_RDONLY | O_DIRECTORY)), e;
	ssize_t r = write(fd, "x", 1);

	e = errno;
	close(fd);
	errno = e;
	return (int)r;
}

struct ccase {
	const char *what;
	int (*fn)(void);
	int err;
};

static const struct ccase ccases[] = {
	{ "library: unmark misaligned leaves outputs", c_lib_unmark_misaligned, EINVAL },
	{ "library: unmark past 2^63 leaves outputs", c_lib_unmark_overflow, EINVAL },
	{ "library: mark with priority 16 and junk bits", c_lib_mark_priority16, EINVAL },
	{ "library: mark on a read-only descriptor", c_lib_mark_rdonly, EBADF },
	{ "library: mark on a closed descriptor", c_lib_mark_closed_fd, EBADF },
	{ "library: mark on descriptor -1", c_lib_mark_fd_minus_1, EBADF },
	{ "library: purged with NULL out and max 3", c_lib_purged_null_out, EFAULT },
	{ "library: mark off volatilefs (/dev/null)", c_lib_mark_off_volatilefs, ENOTTY },
	{ "pwrite at -1", c_pwrite_minus_1, EINVAL },
	/* Linux refuses pos + count > 2^63 - 1 in rw_verify_area() with EINVAL, as on tmpfs;
	 * EFBIG (pos at or past s_maxbytes) cannot be reached with a count > 0. */
	{ "pwrite of 1 byte at 2^63 - 1", c_pwrite_int64_max, EINVAL },
	{ "pwrite of 2 bytes at 2^63 - 2", c_pwrite_2_at_int64_max_minus_1, EINVAL },
	{ "pread at -1", c_pread_minus_1, EINVAL },
	{ "ftruncate to -1", c_ftruncate_minus_1, EINVAL },
	{ "lseek SEEK_DATA at the size", c_seek_data_at_size, ENXIO },
	{ "lseek SEEK_DATA at 1 TiB", c_seek_data_beyond, ENXIO },
	{ "lseek SEEK_DATA at 2^63 - 1", c_seek_data_int64_max, ENXIO },
	{ "lseek SEEK_HOLE past the size", c_seek_hole_beyond, ENXIO },
	{ "lseek SEEK_DATA at -1", c_seek_data_negative, ENXIO },
	{ "lseek SEEK_SET to -1", c_seek_set_negative, EINVAL },
	{ "lseek whence 42", c_seek_bad_whence, EINVAL },
	{ "fallocate length 0", c_falloc_len0, EINVAL },
	{ "fallocate length -1", c_falloc_len_negative, EINVAL },
	{ "fallocate offset -4096", c_falloc_off_negative, EINVAL },
	{ "fallocate past 2^63", c_falloc_overflow, EFBIG },
	{ "punch past 2^63", c_punch_overflow, EFBIG },
	{ "punch without KEEP_SIZE", c_punch_without_keep_size, EOPNOTSUPP },
	{ "punch length 0", c_punch_len0, EINVAL },
	{ "fallocate ZERO_RANGE", c_falloc_zero_range, EOPNOTSUPP },
	{ "fallocate COLLAPSE_RANGE", c_falloc_collapse, EOPNOTSUPP },
	{ "fallocate INSERT_RANGE", c_falloc_insert, EOPNOTSUPP },
	{ "fallocate unknown mode bit", c_falloc_unknown_bit, EOPNOTSUPP },
	{ "create a 256-byte name", c_create_256, ENAMETOOLONG },
	{ "create a 1025-byte name", c_create_1025, ENAMETOOLONG },
	{ "create a 256-byte name in a subdirectory", c_create_in_dir_256, ENAMETOOLONG },
	{ "mkdir a 256-byte name", c_mkdir_256, ENAMETOOLONG },
	{ "mkfifo a 256-byte name", c_mkfifo_256, ENAMETOOLONG },
	{ "mknod a socket with a 256-byte name", c_mknod_sock_256, ENAMETOOLONG },
	{ "symlink to a 256-byte name", c_symlink_256, ENAMETOOLONG },
	{ "link to a 256-byte name", c_link_256, ENAMETOOLONG },
	{ "rename a file to a 256-byte name", c_rename_256, ENAMETOOLONG },
	{ "rename a directory to a 256-byte name", c_rename_dir_256, ENAMETOOLONG },
	{ "RENAME_EXCHANGE with a 256-byte name", c_renameat2_exchange_256, ENAMETOOLONG },
	{ "stat a 256-byte name", c_stat_256, ENAMETOOLONG },
	{ "unlink a 256-byte name", c_unlink_256, ENAMETOOLONG },
	{ "symlink with a 4096-byte target", c_symlink_target_4096, ENAMETOOLONG },
	{ "rename a directory into itself", c_rename_dir_into_itself, EINVAL },
	{ "rmdir a file", c_rmdir_file, ENOTDIR },
	{ "unlink a directory", c_unlink_dir, EISDIR },
	{ "mkdir over a file", c_mkdir_exists, EEXIST },
	{ "hard link to a directory", c_link_dir, EPERM },
	{ "RENAME_NOREPLACE over a name", c_rename_noreplace, EEXIST },
	{ "RENAME_EXCHANGE with a missing name", c_rename_exchange_missing, ENOENT },
	{ "renameat2 with an unknown flag", c_rename_bad_flags, EINVAL },
	{ "rename a file over a directory", c_rename_file_over_dir, EISDIR },
	{ "rename a directory over a file", c_rename_dir_over_file, ENOTDIR },
	{ "open a directory for writing", c_open_dir_for_writing, EISDIR },
	{ "O_DIRECTORY on a file", c_open_file_as_dir, ENOTDIR },
	{ "write to a directory descriptor", c_write_to_dir, EBADF },
};

START_TEST(call)
{
	const struct ccase *c = &ccases[_i];

	BAD_CALL(c->what, c->err, c->fn());
}
END_TEST

/*
 * The control for the offset rows: the largest offset a write can reach works, and the
 * volatile ranges there follow the rules at the very end of the range of sizes (the last
 * page can be marked only unbounded: a bounded range would end past 2^63 - 1).
 */
START_TEST(largest_offset_works)
{
	const uint64_t last = (uint64_t)INT64_MAX - 4095; /* the last page */
	int fd = CHECK(open("big", O_RDWR | O_CREAT | O_EXCL, 0644)), purged = -1;
	struct volatilefs_extent ext[2];
	uint64_t bytes = 0;
	size_t n = 9;
	struct stat st;
	char c = 0;

	ck_assert_int_eq(pwrite(fd, "z", 1, INT64_MAX - 1), 1);
	CHECK(fstat(fd, &st));
	ck_assert_int_eq(st.st_size, INT64_MAX);
	ck_assert_int_le(st.st_blocks, 8);
	ck_assert_int_eq(pread(fd, &c, 1, INT64_MAX - 1), 1);
	ck_assert_int_eq(c, 'z');
	ck_assert_int_eq(lseek(fd, 0, SEEK_DATA), (off_t)last);
	ck_assert_int_eq(lseek(fd, 0, SEEK_HOLE), 0);
	errno = 0;
	ck_assert_int_eq(volatilefs_mark(fd, last, 4096, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	CHECK(volatilefs_mark(fd, last - 4096, 4096, VOLATILEFS_PRIORITY(0)));
	CHECK(volatilefs_mark(fd, last, 0, VOLATILEFS_AGE));
	CHECK(setxattr("big", "user.volatile.purge", "all", 3, 0));
	CHECK(volatilefs_purged(fd, 0, 0, ext, 2, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(ext[0].offset, last - 4096);
	ck_assert_uint_eq(ext[0].length, 8191);
	ck_assert_int_eq(pread(fd, &c, 1, INT64_MAX - 1), 1);
	ck_assert_int_eq(c, 0);
	CHECK(volatilefs_unmark(fd, last, 0, &bytes, &purged));
	ck_assert_uint_eq(bytes, 4096);
	ck_assert_int_eq(purged, 1);
	CHECK(ftruncate(fd, 0));
	CHECK(volatilefs_purged(fd, 0, 0, NULL, 0, &n));
	ck_assert_uint_eq(n, 0);
	close(fd);
	CHECK(unlink("big"));
	assert_alive("largest offset");
}
END_TEST

/* A name of 255 bytes is fine everywhere (the control for the 256-byte rows). */
START_TEST(names_of_255_bytes_work)
{
	char p[300];
	struct stat st;
	int fd = CHECK(open(name255, O_RDWR | O_CREAT | O_EXCL, 0644));

	ck_assert_int_eq(write(fd, "x", 1), 1);
	CHECK(volatilefs_mark(fd, 0, 0, 0));
	close(fd);
	CHECK(stat(name255, &st));
	snprintf(p, sizeof(p), "d/%s", name255);
	CHECK(rename(name255, p));
	CHECK(link(p, name255));
	CHECK(unlink(p));
	CHECK(unlink(name255));
	CHECK(mkdir(name255, 0755));
	CHECK(rmdir(name255));
	CHECK(symlink("f", name255));
	CHECK(unlink(name255));
	assert_alive("names of 255 bytes");
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Deep paths                                                                               */

START_TEST(deep_path)
{
	static const char comp[] = "level-directory-name"; /* 20 bytes: 200 levels > PATH_MAX */
	int fds[DEPTH + 1], fd;
	char *path = malloc((DEPTH + 1) * (sizeof(comp) + 1) + 8);
	size_t pos = 0;
	char buf[16];
	struct stat st;
	struct snap before, after;

	ck_assert_ptr_nonnull(path);
	snap_take(&before);
	fds[0] = CHECK(open(".", O_RDONLY | O_DIRECTORY));
	for (int i = 1; i <= DEPTH; i++) {
		CHECK(mkdirat(fds[i - 1], comp, 0755));
		fds[i] = openat(fds[i - 1], comp, O_RDONLY | O_DIRECTORY);
		ck_assert_msg(fds[i] >= 0, "openat level %d: %s", i, errname(errno));
		pos += (size_t)sprintf(path + pos, "%s/", comp);
	}
	fd = openat(fds[DEPTH], "leaf", O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_msg(fd >= 0, "create the leaf at depth %d: %s", DEPTH, errname(errno));
	ck_assert_int_eq(pwrite(fd, "deep", 4, 0), 4);
	CHECK(volatilefs_mark(fd, 0, 0, VOLATILEFS_PRIORITY(0)));
	ck_assert_int_eq(pread(fd, buf, 4, 0), 4);
	ck_assert(memcmp(buf, "deep", 4) == 0);
	close(fd);
	CHECK(fstatat(fds[DEPTH], "leaf", &st, 0));
	ck_assert_int_eq(st.st_size, 4);
	/* The whole path is longer than PATH_MAX: the kernel refuses it, the daemon never sees it. */
	sprintf(path + pos, "leaf");
	ck_assert_uint_gt(strlen(path), PATH_MAX);
	BAD_CALL("stat of a path longer than PATH_MAX", ENAMETOOLONG, stat(path, &st));
	BAD_CALL("open of a path longer than PATH_MAX", ENAMETOOLONG, open(path, O_RDONLY));
	/* Moving the top into the bottom would make a loop. */
	ck_assert_int_eq(renameat(AT_FDCWD, comp, fds[DEPTH], "loop"), -1);
	ck_assert_msg(errno == EINVAL, "rename of the top into the bottom: %s, want EINVAL",
		      errname(errno));
	ck_assert_int_eq(unlinkat(fds[DEPTH - 1], comp, AT_REMOVEDIR), -1);
	ck_assert_msg(errno == ENOTEMPTY, "rmdir of a non-empty level: %s", errname(errno));
	assert_alive("deep path");
	/* Take it all down, from the bottom. */
	CHECK(unlinkat(fds[DEPTH], "leaf", 0));
	for (int i = DEPTH; i >= 1; i--) {
		close(fds[i]);
		CHECK(unlinkat(fds[i - 1], comp, AT_REMOVEDIR));
	}
	close(fds[0]);
	snap_take(&after);
	snap_assert_same(&before, &after, "deep path, after removing it");
	free(path);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Hostile sizes                                                                            */

/*
 * Offsets and lengths at the edges of the range of sizes (2^63 - 1, the last page at
 * 2^63 - 4096, 2^62) and where a count that is cut to 32 bits, or a page index that is,
 * would go wrong (2^31 and 2^32 bytes, pages 2^31, 2^32 and 2^40): through fallocate, punch,
 * truncate, pwrite, pread, lseek, the ioctls and the attributes.  Each row works on a file
 * of its own ("s", one of the kinds below) that is open and already unlinked, so that a call
 * left hanging in the daemon holds no name that a later cleanup would wait for.  The call
 * runs in a child with a deadline: DESIGN section 9 says hostile sizes take time in proportion
 * to the memory they touch, so a call still running after SIZE_DEADLINE seconds is a hang
 * (it is left behind; the row fails at once).  A row that fails must leave the file and the
 * mount's counters as they were (enospc_total may count an ENOSPC); a row that works must
 * give the result DESIGN.md, volatilefs(3) and tmpfs give, and leave what it says.
 */
#define E62 (1ull << 62)
#define MAXSZ ((uint64_t)INT64_MAX) /* 2^63 - 1: the largest size */
#define LASTPG (MAXSZ - 4095)       /* 2^63 - 4096: the last page */
#define PGX32 (1ull << 44)          /* page index 2^32 */
#define PGX40 (1ull << 52)          /* page index 2^40 */
#define ANY UINT64_MAX
#define SIZE_DEADLINE 10

enum sfile {
	SF_EMPTY,  /* size 0 */
	SF_SPARSE, /* size 2^63 - 1, one page held, at 2^62, with a 'z' first; no unit */
	SF_MARKED, /* size 2^62, nothing held, one unit 0:2^62 */
	SF_PURGED, /* SF_SPARSE with the unit 0:0, purged: purged set 0:2^63 - 1, nothing held */
};

enum sop { S_FALLOC, S_KEEP, S_PUNCH, S_TRUNC, S_PWRITE, S_PREAD, S_DATA, S_HOLE, S_MARK,
	   S_UNMARK, S_PURGED, S_XMARK, S_XUNMARK };

struct scase {
	const char *what;
	enum sfile file;
	enum sop op;
	uint64_t off, len;  /* S_TRUNC: off is the size; S_PWRITE, S_PREAD: len <= 8192 */
	const char *value;  /* S_XMARK, S_XUNMARK: the attribute's value */
	int err;            /* the errno it fails with; 0: it works */
	/* When it works (ANY, -1, NULL: not checked): */
	uint64_t ret;       /* lseek's offset, pread's and pwrite's count, unmark's bytes,
			     * purged's count */
	int flag;           /* unmark's purged */
	int64_t size, blocks; /* st_size and st_blocks afterwards */
	int64_t data;       /* SEEK_DATA from 0 afterwards */
	int at62;           /* the byte at 2^62 afterwards */
	const char *ranges, *purged; /* user.volatile.ranges and .purged afterwards */
};

/* Rows: SBAD and SXBAD fail with an errno; the others work, and check what they name. */
#define SBAD(w, f, op, off, len, e) \
	{ w, f, op, off, len, NULL, e, ANY, -1, -1, -1, -1, -1, NULL, NULL }
#define SXBAD(w, f, op, v, e) \
	{ w, f, op, 0, 0, v, e, ANY, -1, -1, -1, -1, -1, NULL, NULL }
#define SOK(w, f, op, off, len, ret, size, blocks) \
	{ w, f, op, off, len, NULL, 0, ret, -1, size, blocks, -1, -1, NULL, NULL }
#define SOK62(w, f, op, off, len, size, blocks, at62) \
	{ w, f, op, off, len, NULL, 0, ANY, -1, size, blocks, -1, at62, NULL, NULL }
#define SOKDATA(w, f, op, off, len, ret, size, blocks, data) \
	{ w, f, op, off, len, NULL, 0, ret, -1, size, blocks, data, -1, NULL, NULL }
#define SOKSET(w, f, op, off, len, ret, flag, ranges, purged) \
	{ w, f, op, off, len, NULL, 0, ret, flag, -1, -1, -1, -1, ranges, purged }
#define SXOK(w, f, op, v, ranges) \
	{ w, f, op, 0, 0, v, 0, ANY, -1, -1, -1, -1, -1, ranges, NULL }

#define VOL3 " volatile priority=3\n"
#define PUR3 " purged priority=3\n"

static const struct scase scases[] = {
	/* fallocate */
	SOK("fallocate the last page, ending at 2^63 - 1", SF_EMPTY, S_FALLOC, LASTPG, 4095, ANY,
	    (int64_t)MAXSZ, 8),
	SOK("fallocate 1 byte at 2^63 - 2", SF_EMPTY, S_FALLOC, MAXSZ - 1, 1, ANY, (int64_t)MAXSZ, 8),
	SBAD("fallocate the whole last page (ends at 2^63)", SF_EMPTY, S_FALLOC, LASTPG, 4096, EFBIG),
	SBAD("fallocate 1 byte at 2^63 - 1", SF_EMPTY, S_FALLOC, MAXSZ, 1, EFBIG),
	SBAD("fallocate 2^63 - 1 bytes at 2^63 - 1 (the end wraps)", SF_EMPTY, S_FALLOC, MAXSZ, MAXSZ,
	     EFBIG),
	SOK("fallocate one page at 2^62", SF_EMPTY, S_FALLOC, E62, 4096, ANY, (int64_t)E62 + 4096, 8),
	SOK("fallocate 2 bytes across 2^62 (two pages)", SF_EMPTY, S_FALLOC, E62 - 1, 2, ANY,
	    (int64_t)E62 + 1, 16),
	SOK("fallocate pages 2^32 - 1 and 2^32", SF_EMPTY, S_FALLOC, PGX32 - 4096, 8192, ANY,
	    (int64_t)PGX32 + 4096, 16),
	SOK("fallocate page 2^40 (at 2^52)", SF_EMPTY, S_FALLOC, PGX40, 4096, ANY,
	    (int64_t)PGX40 + 4096, 8),
	SOK("fallocate 2 pages across 2^31 bytes", SF_EMPTY, S_FALLOC, (1ull << 31) - 4096, 8192, ANY,
	    (1ll << 31) + 4096, 16),
	SOK("fallocate 2 pages across 2^32 bytes", SF_EMPTY, S_FALLOC, (1ull << 32) - 4096, 8192, ANY,
	    (1ll << 32) + 4096, 16),
	SOK("KEEP_SIZE fallocate one page at 2^62", SF_EMPTY, S_KEEP, E62, 4096, ANY, 0, 8),
	SOK("KEEP_SIZE fallocate the last page", SF_EMPTY, S_KEEP, LASTPG, 4095, ANY, 0, 8),
	SBAD("KEEP_SIZE fallocate the whole last page (ends at 2^63)", SF_EMPTY, S_KEEP, LASTPG, 4096,
	     EFBIG),
	SOK("fallocate the page at 2^62 that is held already", SF_SPARSE, S_FALLOC, E62, 4096, ANY,
	    (int64_t)MAXSZ, 8),
	SOK("fallocate the last page of a file of 2^63 - 1 bytes", SF_SPARSE, S_FALLOC, LASTPG, 4095,
	    ANY, (int64_t)MAXSZ, 16),
	/* punch */
	SOK("punch 2^63 - 1 bytes from 0", SF_SPARSE, S_PUNCH, 0, MAXSZ, ANY, (int64_t)MAXSZ, 0),
	SOK62("punch 1 byte at 2^62", SF_SPARSE, S_PUNCH, E62, 1, (int64_t)MAXSZ, 8, 0),
	SOK62("punch from 2^62 + 4096 to 2^63 - 1", SF_SPARSE, S_PUNCH, E62 + 4096,
	      MAXSZ - E62 - 4096, (int64_t)MAXSZ, 8, 'z'),
	SOK("punch from 2^62 - 4096 to 2^63 - 1", SF_SPARSE, S_PUNCH, E62 - 4096, MAXSZ - E62 + 4096,
	    ANY, (int64_t)MAXSZ, 0),
	SBAD("punch the whole last page (ends at 2^63)", SF_SPARSE, S_PUNCH, LASTPG, 4096, EFBIG),
	SOKSET("punch all of a purged file of 2^63 - 1 bytes", SF_PURGED, S_PUNCH, 0, MAXSZ, ANY, -1,
	       "0:0" VOL3, ""),
	SOKSET("punch the page at 2^62 of a purged file", SF_PURGED, S_PUNCH, E62, 4096, ANY, -1,
	       "0:0" PUR3, "0:4611686018427387904\n4611686018427392000:4611686018427383807\n"),
	/* truncate */
	SOK("truncate to 2^63 - 1", SF_EMPTY, S_TRUNC, MAXSZ, 0, ANY, (int64_t)MAXSZ, 0),
	SOK("truncate a file of 2^63 - 1 bytes to 2^62 (its page goes)", SF_SPARSE, S_TRUNC, E62, 0,
	    ANY, (int64_t)E62, 0),
	SOK62("truncate a file of 2^63 - 1 bytes to 2^62 + 1", SF_SPARSE, S_TRUNC, E62 + 1, 0,
	      (int64_t)E62 + 1, 8, 'z'),
	SOK("truncate a file of 2^63 - 1 bytes to 0", SF_SPARSE, S_TRUNC, 0, 0, ANY, 0, 0),
	SOKSET("truncate a purged file of 2^63 - 1 bytes to 2^62", SF_PURGED, S_TRUNC, E62, 0, ANY,
	       -1, "0:0" PUR3, "0:4611686018427387904\n"),
	SOKSET("truncate to 4096 cuts a unit of 2^62 bytes", SF_MARKED, S_TRUNC, 4096, 0, ANY, -1,
	       "0:4096" VOL3, ""),
	SOKSET("truncate to 1 cuts a unit of 2^62 bytes to a page", SF_MARKED, S_TRUNC, 1, 0, ANY, -1,
	       "0:4096" VOL3, ""),
	SOKSET("truncate to 0 removes a unit of 2^62 bytes", SF_MARKED, S_TRUNC, 0, 0, ANY, -1, "",
	       ""),
	SOKSET("truncate up to 2^63 - 1 keeps a unit of 2^62 bytes", SF_MARKED, S_TRUNC, MAXSZ, 0, ANY,
	       -1, "0:4611686018427387904" VOL3, ""),
	/* pwrite, pread */
	SOK("pwrite 4096 bytes ending at 2^63 - 1", SF_EMPTY, S_PWRITE, MAXSZ - 4096, 4096, 4096,
	    (int64_t)MAXSZ, 16),
	SBAD("pwrite 4096 bytes at 2^63 - 4096 (ends at 2^63)", SF_EMPTY, S_PWRITE, LASTPG, 4096,
	     EINVAL),
	SBAD("pwrite 4097 bytes at 2^63 - 4096", SF_EMPTY, S_PWRITE, LASTPG, 4097, EINVAL),
	SOKDATA("pwrite 1 byte at 2^31", SF_EMPTY, S_PWRITE, 1ull << 31, 1, 1, (1ll << 31) + 1, 8,
		1ll << 31),
	SOKDATA("pwrite 1 byte at 2^32", SF_EMPTY, S_PWRITE, 1ull << 32, 1, 1, (1ll << 32) + 1, 8,
		1ll << 32),
	SOKDATA("pwrite 1 byte at page 2^31", SF_EMPTY, S_PWRITE, 1ull << 43, 1, 1, (1ll << 43) + 1,
		8, 1ll << 43),
	SOKDATA("pwrite 1 byte at page 2^32", SF_EMPTY, S_PWRITE, PGX32, 1, 1, (int64_t)PGX32 + 1, 8,
		(int64_t)PGX32),
	SOKDATA("pwrite 1 byte at page 2^40", SF_EMPTY, S_PWRITE, PGX40, 1, 1, (int64_t)PGX40 + 1, 8,
		(int64_t)PGX40),
	SOKDATA("pwrite 1 byte at 2^62", SF_EMPTY, S_PWRITE, E62, 1, 1, (int64_t)E62 + 1, 8,
		(int64_t)E62),
	SOKDATA("pwrite 1 byte at 2^63 - 2 of a file of 2^63 - 1 bytes", SF_SPARSE, S_PWRITE, MAXSZ - 1,
		1, 1, (int64_t)MAXSZ, 16, (int64_t)E62),
	SOK("pread 4095 bytes at 2^63 - 4096", SF_SPARSE, S_PREAD, LASTPG, 4095, 4095, -1, -1),
	SOK("pread 4096 bytes at 2^63 - 4097", SF_SPARSE, S_PREAD, LASTPG - 1, 4096, 4096, -1, -1),
	SBAD("pread 4096 bytes at 2^63 - 4096 (ends at 2^63)", SF_SPARSE, S_PREAD, LASTPG, 4096,
	     EINVAL),
	SOK("pread 8192 bytes at 2^62 - 4096", SF_SPARSE, S_PREAD, E62 - 4096, 8192, 8192, -1, -1),
	/* lseek */
	SOK("SEEK_DATA from 0 finds the page at 2^62", SF_SPARSE, S_DATA, 0, 0, E62, -1, -1),
	SOK("SEEK_DATA from page 2^32 finds the page at 2^62", SF_SPARSE, S_DATA, PGX32, 0, E62, -1,
	    -1),
	SOK("SEEK_DATA at 2^62 + 1", SF_SPARSE, S_DATA, E62 + 1, 0, E62 + 1, -1, -1),
	SBAD("SEEK_DATA after the page at 2^62", SF_SPARSE, S_DATA, E62 + 4096, 0, ENXIO),
	SBAD("SEEK_DATA at 2^63 - 2", SF_SPARSE, S_DATA, MAXSZ - 1, 0, ENXIO),
	SOK("SEEK_HOLE from 0", SF_SPARSE, S_HOLE, 0, 0, 0, -1, -1),
	SOK("SEEK_HOLE from 2^62", SF_SPARSE, S_HOLE, E62, 0, E62 + 4096, -1, -1),
	SOK("SEEK_HOLE at 2^63 - 2", SF_SPARSE, S_HOLE, MAXSZ - 1, 0, MAXSZ - 1, -1, -1),
	SBAD("SEEK_HOLE at 2^63 - 1 (the size)", SF_SPARSE, S_HOLE, MAXSZ, 0, ENXIO),
	/* mark, unmark, purged: the ioctls */
	SOKSET("mark the last page, unbounded", SF_EMPTY, S_MARK, LASTPG, 0, ANY, -1,
	       "9223372036854771712:0" VOL3, NULL),
	SOKSET("mark the page before the last", SF_EMPTY, S_MARK, LASTPG - 4096, 4096, ANY, -1,
	       "9223372036854767616:4096" VOL3, NULL),
	SBAD("mark 1 byte of the last page (rounds to end at 2^63)", SF_EMPTY, S_MARK, LASTPG, 1,
	     EINVAL),
	SOKSET("mark 2^63 - 4096 bytes from 0", SF_EMPTY, S_MARK, 0, LASTPG, ANY, -1,
	       "0:9223372036854771712" VOL3, NULL),
	SBAD("mark 2^63 - 4095 bytes from 0 (rounds to 2^63)", SF_EMPTY, S_MARK, 0, LASTPG + 1,
	     EINVAL),
	SOKSET("mark from 2^62 to the last page", SF_EMPTY, S_MARK, E62, E62 - 4096, ANY, -1,
	       "4611686018427387904:4611686018427383808" VOL3, NULL),
	SBAD("mark 2^62 bytes at 2^62 (ends at 2^63)", SF_EMPTY, S_MARK, E62, E62, EINVAL),
	SOKSET("mark pages 2^32 - 1 and 2^32", SF_EMPTY, S_MARK, PGX32 - 4096, 8192, ANY, -1,
	       "17592186040320:8192" VOL3, NULL),
	SOKSET("mark page 2^40", SF_EMPTY, S_MARK, PGX40, 4096, ANY, -1, "4503599627370496:4096" VOL3,
	       NULL),
	SOKSET("unmark all of a bounded unit of 2^62 bytes: bytes 2^62", SF_MARKED, S_UNMARK, 0, 0, E62,
	       0, "", ""),
	SOKSET("unmark the last page of a unit of 2^62 bytes", SF_MARKED, S_UNMARK, E62 - 4096, 4096,
	       4096, 0, "0:4611686018427383808" VOL3, ""),
	SOKSET("unmark page 2^32 of a unit of 2^62 bytes: it splits", SF_MARKED, S_UNMARK, PGX32, 4096,
	       4096, 0, "0:17592186044416" VOL3 "17592186048512:4611668426241339392" VOL3, ""),
	SBAD("unmark 1 byte of the last page (rounds to end at 2^63)", SF_MARKED, S_UNMARK, LASTPG, 1,
	     EINVAL),
	SOKSET("unmark all of an unbounded unit of a file of 2^63 - 1 bytes: bytes 2^63", SF_PURGED,
	       S_UNMARK, 0, 0, 1ull << 63, 1, "", "0:9223372036854775807\n"),
	SOKSET("unmark the last page of an unbounded unit", SF_PURGED, S_UNMARK, LASTPG, 0, 4096, 1,
	       "0:9223372036854771712" PUR3, "0:9223372036854775807\n"),
	SOKSET("unmark the page at 2^62 of an unbounded unit: it splits", SF_PURGED, S_UNMARK, E62, 4096,
	       4096, 1, "0:4611686018427387904" PUR3 "4611686018427392000:0" PUR3,
	       "0:9223372036854775807\n"),
	SOKSET("unmark all of a file of 2^63 - 1 bytes without units", SF_SPARSE, S_UNMARK, 0, 0, 0, 0,
	       "", ""),
	SOK("purged: all of a file of 2^63 - 1 bytes is one extent", SF_PURGED, S_PURGED, 0, 0, 1, -1,
	    -1),
	SOK("purged: the last byte", SF_PURGED, S_PURGED, MAXSZ - 1, 1, 1, -1, -1),
	SOK("purged: from 2^62 + 1, 1 byte", SF_PURGED, S_PURGED, E62 + 1, 1, 1, -1, -1),
	SOK("purged: from 1 to past 2^64 (to the end)", SF_PURGED, S_PURGED, 1, UINT64_MAX, 1, -1, -1),
	SOK("purged: at the size", SF_PURGED, S_PURGED, MAXSZ, 0, 0, -1, -1),
	SOK("purged: at 2^63", SF_PURGED, S_PURGED, 1ull << 63, 0, 0, -1, -1),
	SOK("purged: at 2^64 - 1, to past 2^64", SF_PURGED, S_PURGED, UINT64_MAX, UINT64_MAX, 0, -1,
	    -1),
	/* mark, unmark: the attributes, with the SIZE suffixes */
	SXOK("mark 9223372036854771712:0 (the last page)", SF_EMPTY, S_XMARK, "9223372036854771712:0",
	     "9223372036854771712:0" VOL3),
	SXOK("mark 8388607T:0 (2^63 - 2^40)", SF_EMPTY, S_XMARK, "8388607T:0",
	     "9223370937343148032:0" VOL3),
	SXBAD("mark 8388608T:0 (2^63)", SF_EMPTY, S_XMARK, "8388608T:0", EINVAL),
	SXOK("mark 0:8388607T", SF_EMPTY, S_XMARK, "0:8388607T", "0:9223370937343148032" VOL3),
	SXBAD("mark 0:8388608T (ends at 2^63)", SF_EMPTY, S_XMARK, "0:8388608T", EINVAL),
	SXOK("mark 4194304T:4194303T", SF_EMPTY, S_XMARK, "4194304T:4194303T",
	     "4611686018427387904:4611684918915760128" VOL3),
	SXOK("mark 0:0x7ffffffffffff000", SF_EMPTY, S_XMARK, "0:0x7ffffffffffff000",
	     "0:9223372036854771712" VOL3),
	SXBAD("mark 0:0x7ffffffffffff001 (rounds to 2^63)", SF_EMPTY, S_XMARK, "0:0x7ffffffffffff001",
	      EINVAL),
	SXOK("mark the last two pages as two units", SF_EMPTY, S_XMARK,
	     "0x7fffffffffffe000:4K 0x7ffffffffffff000:0",
	     "9223372036854767616:4096" VOL3 "9223372036854771712:0" VOL3),
	SXOK("mark 16T:4K 16T:0 (page 2^32; one unit)", SF_EMPTY, S_XMARK, "16T:4K 16T:0",
	     "17592186044416:0" VOL3),
	SXOK("unmark 0:0 of an unbounded purged unit of 2^63 - 1 bytes", SF_PURGED, S_XUNMARK, "0:0",
	     ""),
	SXOK("unmark 16T:4K of a unit of 2^62 bytes", SF_MARKED, S_XUNMARK, "16T:4K",
	     "0:17592186044416" VOL3 "17592186048512:4611668426241339392" VOL3),
	SXBAD("unmark 8388608T:0 (2^63)", SF_MARKED, S_XUNMARK, "8388608T:0", EINVAL),
	/*
	 * Last: the rows whose cost a daemon that walks the range it is given pays in time (it
	 * took 0.6 s per TiB); a hang leaves a daemon thread busy with it.
	 */
	SBAD("fallocate 2^63 - 1 bytes from 0", SF_EMPTY, S_FALLOC, 0, MAXSZ, ENOSPC),
	SBAD("fallocate 1 PiB from 0", SF_EMPTY, S_FALLOC, 0, 1ull << 50, ENOSPC),
	SBAD("fallocate from 2^62 to 2^63 - 1", SF_EMPTY, S_FALLOC, E62, E62 - 1, ENOSPC),
	SBAD("fallocate 2^33 + 1 pages (1 in 32 bits)", SF_EMPTY, S_FALLOC, 0, (1ull << 45) + 4096,
	     ENOSPC),
	SBAD("KEEP_SIZE fallocate 2^63 - 1 bytes from 0", SF_EMPTY, S_KEEP, 0, MAXSZ, ENOSPC),
	SBAD("fallocate 2^63 - 1 bytes over a file that holds a page at 2^62", SF_SPARSE, S_FALLOC, 0,
	     MAXSZ, ENOSPC),
};

static void make_sfile(enum sfile k)
{
	int fd = CHECK(open("s", O_RDWR | O_CREAT | O_EXCL, 0644));

	if (k == SF_MARKED) {
		CHECK(ftruncate(fd, (off_t)E62));
		CHECK(volatilefs_mark(fd, 0, E62, 0));
	} else if (k != SF_EMPTY) {
		CHECK(ftruncate(fd, (off_t)MAXSZ));
		ck_assert_int_eq(pwrite(fd, "z", 1, (off_t)E62), 1);
	}
	if (k == SF_PURGED) {
		CHECK(volatilefs_mark(fd, 0, 0, 0));
		CHECK(fsetxattr(fd, "user.volatile.purge", "all", 3, 0));
	}
	close(fd);
}

struct ssnap {
	char ranges[4096], purged[4096], stats[4096];
	int64_t size, blocks;
	int at0, at62; /* -1: past the end */
};

static void fget_text(int fd, const char *name, char *buf, size_t cap)
{
	ssize_t n = fgetxattr(fd, name, buf, cap - 1);

	if (n < 0)
		snprintf(buf, cap, "<%s>", errname(errno));
	else
		buf[n] = '\0';
}

static int byte_at(int fd, uint64_t off)
{
	unsigned char b;

	return pread(fd, &b, 1, (off_t)off) == 1 ? b : -1;
}

/* Without enospc_total when the call may count an ENOSPC. */
static void ssnap_take(int fd, struct ssnap *s, bool enospc)
{
	struct stat st;
	char *p;

	memset(s, 0, sizeof(*s));
	fget_text(fd, "user.volatile.ranges", s->ranges, sizeof(s->ranges));
	fget_text(fd, "user.volatile.purged", s->purged, sizeof(s->purged));
	stats_text(s->stats, sizeof(s->stats));
	if (enospc && (p = strstr(s->stats, "enospc_total=")) != NULL) {
		char *end = strchr(p, '\n');

		memmove(p, end ? end + 1 : p + strlen(p), strlen(end ? end + 1 : p + strlen(p)) + 1);
	}
	CHECK(fstat(fd, &st));
	s->size = st.st_size;
	s->blocks = st.st_blocks;
	s->at0 = byte_at(fd, 0);
	s->at62 = byte_at(fd, E62);
}

struct sres {
	int r, err;
	uint64_t ret;
	int flag;
};

/* The call itself, in the child: r 0 or -1 with err, and its value in ret. */
static void do_sop(const struct scase *c, int fd, struct sres *x)
{
	static char buf[8192];
	static struct volatilefs_purged_arg pa;
	struct volatilefs_mark_arg ma = { .offset = c->off, .length = c->len };
	struct volatilefs_unmark_arg ua = { .offset = c->off, .length = c->len };
	const char *name = c->op == S_XMARK ? "user.volatile.mark" : "user.volatile.unmark";
	off_t o = (off_t)c->off, l = (off_t)c->len;
	ssize_t n = 0;
	off_t at = 0;

	memset(buf, 'w', sizeof(buf));
	errno = 0;
	switch (c->op) {
	case S_FALLOC:
		x->r = fallocate(fd, 0, o, l);
		break;
	case S_KEEP:
		x->r = fallocate(fd, FALLOC_FL_KEEP_SIZE, o, l);
		break;
	case S_PUNCH:
		x->r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, o, l);
		break;
	case S_TRUNC:
		x->r = ftruncate(fd, o);
		break;
	case S_PWRITE:
		n = pwrite(fd, buf, c->len, o);
		break;
	case S_PREAD:
		n = pread(fd, buf, c->len, o);
		break;
	case S_DATA:
	case S_HOLE:
		at = lseek(fd, o, c->op == S_DATA ? SEEK_DATA : SEEK_HOLE);
		x->r = at < 0 ? -1 : 0;
		x->ret = (uint64_t)at;
		break;
	case S_MARK:
		x->r = ioctl(fd, VOLATILEFS_IOC_MARK, &ma);
		break;
	case S_UNMARK:
		x->r = ioctl(fd, VOLATILEFS_IOC_UNMARK, &ua);
		x->ret = ua.bytes;
		x->flag = (int)ua.purged;
		break;
	case S_PURGED:
		memset(&pa, 0, sizeof(pa));
		pa.offset = c->off;
		pa.length = c->len;
		x->r = ioctl(fd, VOLATILEFS_IOC_PURGED, &pa);
		x->ret = pa.count;
		break;
	case S_XMARK:
	case S_XUNMARK:
		x->r = fsetxattr(fd, name, c->value, strlen(c->value), 0);
		break;
	}
	if (c->op == S_PWRITE || c->op == S_PREAD) {
		x->r = n < 0 ? -1 : 0;
		x->ret = (uint64_t)n;
	}
	x->err = x->r < 0 ? errno : 0;
}

/* The call in a child, waited for SIZE_DEADLINE seconds at most. */
static void run_deadline(const struct scase *c, int fd, struct sres *r)
{
	double t0 = now_s();
	int p[2], status = 0;
	pid_t pid;

	CHECK(pipe(p));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sres x = { 0, 0, 0, -1 };

		close(p[0]);
		do_sop(c, fd, &x);
		_exit(write(p[1], &x, sizeof(x)) == (ssize_t)sizeof(x) ? 0 : 1);
	}
	close(p[1]);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_s() - t0 > SIZE_DEADLINE)
			ck_abort_msg("%s: still running after %d s: its cost follows the range it "
				     "names, not the memory it touches (left behind)", c->what,
				     SIZE_DEADLINE);
		nap_ms(2);
	}
	ck_assert_msg(read(p[0], r, sizeof(*r)) == (ssize_t)sizeof(*r),
		      "%s: the call's child ended with status 0x%x", c->what, status);
	close(p[0]);
}

START_TEST(sizes)
{
	const struct scase *c = &scases[_i];
	struct ssnap before, after;
	struct sres r;
	int fd;

	make_sfile(c->file);
	fd = CHECK(open("s", O_RDWR));
	CHECK(unlink("s"));
	ssnap_take(fd, &before, c->err == ENOSPC);
	run_deadline(c, fd, &r);
	ssnap_take(fd, &after, c->err == ENOSPC);
	if (c->err) {
		ck_assert_msg(r.r == -1 && r.err == c->err, "%s: expected -1 (%s), got %s (%" PRIu64
			      ")", c->what, errname(c->err), r.r == -1 ? errname(r.err) : "success",
			      r.ret);
#define SAME_STR(f) \
	ck_assert_msg(strcmp(before.f, after.f) == 0, "%s: changed " #f ":\nbefore:\n%s\nafter:\n%s", \
		      c->what, before.f, after.f)
		SAME_STR(ranges);
		SAME_STR(purged);
		SAME_STR(stats);
#undef SAME_STR
		ck_assert_msg(before.size == after.size && before.blocks == after.blocks &&
			      before.at0 == after.at0 && before.at62 == after.at62,
			      "%s: changed the file: size %lld -> %lld, st_blocks %lld -> %lld",
			      c->what, (long long)before.size, (long long)after.size,
			      (long long)before.blocks, (long long)after.blocks);
	} else {
		ck_assert_msg(r.r == 0, "%s: failed with %s, want success", c->what, errname(r.err));
		if (c->ret != ANY)
			ck_assert_msg(r.ret == c->ret, "%s: returned %" PRIu64 ", want %" PRIu64,
				      c->what, r.ret, c->ret);
		if (c->flag >= 0)
			ck_assert_msg(r.flag == c->flag, "%s: purged %d, want %d", c->what, r.flag,
				      c->flag);
		if (c->size >= 0)
			ck_assert_msg(after.size == c->size, "%s: size %lld, want %lld", c->what,
				      (long long)after.size, (long long)c->size);
		if (c->blocks >= 0)
			ck_assert_msg(after.blocks == c->blocks, "%s: st_blocks %lld, want %lld",
				      c->what, (long long)after.blocks, (long long)c->blocks);
		if (c->at62 >= 0)
			ck_assert_msg(after.at62 == c->at62, "%s: the byte at 2^62 is %d, want %d",
				      c->what, after.at62, c->at62);
		if (c->ranges)
			ck_assert_msg(strcmp(after.ranges, c->ranges) == 0,
				      "%s: user.volatile.ranges:\n%s\nwant:\n%s", c->what, after.ranges,
				      c->ranges);
		if (c->purged)
			ck_assert_msg(strcmp(after.purged, c->purged) == 0,
				      "%s: user.volatile.purged:\n%s\nwant:\n%s", c->what, after.purged,
				      c->purged);
		if (c->data >= 0) {
			off_t d = lseek(fd, 0, SEEK_DATA);

			ck_assert_msg(d == (off_t)c->data, "%s: SEEK_DATA from 0 gives %lld (%s), "
				      "want %lld", c->what, (long long)d, d < 0 ? errname(errno) : "",
				      (long long)c->data);
		}
	}
	close(fd);
	assert_alive(c->what);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Another user                                                                             */

static int stat_mount(const void *arg)
{
	struct stat st;

	(void)arg;
	return stat(mount_dir, &st) == 0 ? 0 : 1;
}

static bool nobody_can_reach_mount(void)
{
	int status;

	if (getuid() != 0)
		return false;
	status = mtest_as_user(NOBODY, NOBODY, stat_mount, NULL);
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct ncase {
	const char *what;
	const char *name;
	const char *value;
	int err;
};

static const struct ncase ncases[] = {
	{ "purge all on the root as nobody", "user.volatile.purge", "all", EPERM },
	{ "purge a size on the root as nobody", "user.volatile.purge", "1M", EPERM },
	{ "memory_limit on the root as nobody", "user.volatile.memory_limit", "1M", EPERM },
};

/* The child's part of a row: 0 or the errno of its setxattr on the mount root. */
static int nobody_setxattr(const void *arg)
{
	const struct ncase *c = arg;

	return setxattr(mount_dir, c->name, c->value, strlen(c->value), 0) == 0 ? 0 : errno;
}

START_TEST(nobody)
{
	const struct ncase *c = &ncases[_i];
	struct snap before, after;
	int status;

	snap_take(&before);
	status = mtest_as_user(NOBODY, NOBODY, nobody_setxattr, c);
	ck_assert_msg(status != -1, "%s: fork or waitpid: %s", c->what, errname(errno));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == c->err,
		      "%s: got %s, want %s", c->what,
		      WIFEXITED(status) ? errname(WEXITSTATUS(status)) : "a signal", errname(c->err));
	snap_take(&after);
	snap_assert_same(&before, &after, c->what);
	assert_alive(c->what);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Daemon options                                                                           */

struct ocase {
	const char *what;
	const char *args[6]; /* after the daemon, before the mountpoint; NULL-terminated */
	bool no_mountpoint;
};

static const struct ocase ocases[] = {
	{ "memory_limit=0", { "-o", "memory_limit=0" }, false },
	{ "memory_limit=abc", { "-o", "memory_limit=abc" }, false },
	{ "memory_limit=", { "-o", "memory_limit=" }, false },
	{ "memory_limit without a value", { "-o", "memory_limit" }, false },
	{ "memory_limit=1Q", { "-o", "memory_limit=1Q" }, false },
	{ "memory_limit=-1M", { "-o", "memory_limit=-1M" }, false },
	{ "memory_limit=0x", { "-o", "memory_limit=0x" }, false },
	{ "memory_limit=1.5G", { "-o", "memory_limit=1.5G" }, false },
	{ "memory_limit overflowing", { "-o", "memory_limit=99999999999999999999" }, false },
	{ "memory_limit=16777216T (overflows with the suffix)", { "-o", "memory_limit=16777216T" }, false },
	{ "memory_low=0", { "-o", "memory_low=0" }, false },
	{ "memory_low above memory_limit", { "-o", "memory_limit=64M,memory_low=65M" }, false },
	{ "memory_low=junk", { "-o", "memory_low=junk" }, false },
	{ "purged_read=maybe", { "-o", "purged_read=maybe" }, false },
	{ "purged_read=", { "-o", "purged_read=" }, false },
	{ "purged_read=ZERO", { "-o", "purged_read=ZERO" }, false },
	{ "write_policy=sometimes", { "-o", "write_policy=sometimes" }, false },
	{ "auto=yes", { "-o", "auto=yes" }, false },
	{ "pressure=maybe", { "-o", "pressure=maybe" }, false },
	{ "pressure=", { "-o", "pressure=" }, false },
	{ "pressure=ON", { "-o", "pressure=ON" }, false },
	{ "pressure_headroom=0", { "-o", "pressure_headroom=0" }, false },
	{ "pressure_headroom=junk", { "-o", "pressure_headroom=junk" }, false },
	{ "pressure_headroom overflowing", { "-o", "pressure_headroom=16777216T" }, false },
	{ "mode=999", { "-o", "mode=999" }, false },
	{ "mode=17777", { "-o", "mode=17777" }, false },
	{ "mode=-1", { "-o", "mode=-1" }, false },
	{ "mode=rwx", { "-o", "mode=rwx" }, false },
	{ "mode=", { "-o", "mode=" }, false },
	{ "uid=abc", { "-o", "uid=abc" }, false },
	{ "uid=-1", { "-o", "uid=-1" }, false },
	{ "uid=4294967295", { "-o", "uid=4294967295" }, false },
	{ "uid=99999999999", { "-o", "uid=99999999999" }, false },
	{ "gid=", { "-o", "gid=" }, false },
	{ "gid=1x", { "-o", "gid=1x" }, false },
	{ "an unknown option", { "-o", "no_such_option" }, false },
	{ "an unknown option with a value", { "-o", "no_such_option=1" }, false },
	{ "a good option then a bad one", { "-o", "memory_limit=64M,purged_read=no" }, false },
	{ "a bad one in a second -o", { "-o", "memory_limit=64M", "-o", "mode=8" }, false },
	{ "an unknown flag", { "--no-such-flag" }, false },
	{ "-o without options", { "-o" }, false },
	{ "no mountpoint", { "-o", "memory_limit=64M" }, true },
};

static bool mounted_at(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192];
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX];

		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && strcmp(mp, mnt) == 0)
			found = true;
	}
	fclose(f);
	return found;
}

START_TEST(options)
{
	const struct ocase *c = &ocases[_i];
	char mnt[] = "/tmp/badinput-mnt.XXXXXX", errbuf[4096];
	const char *argv[16];
	int argc = 0, pipefd[2], status = -1;
	ssize_t nerr = 0, r;
	pid_t pid;
	bool timed_out = false;
	struct timespec t0, t;

	ck_assert_ptr_nonnull(mkdtemp(mnt));
	argv[argc++] = daemon_bin;
	argv[argc++] = "-f";
	for (int i = 0; c->args[i]; i++)
		argv[argc++] = c->args[i];
	if (!c->no_mountpoint)
		argv[argc++] = mnt;
	argv[argc] = NULL;
	CHECK(pipe2(pipefd, O_CLOEXEC));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execv(daemon_bin, (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		while ((r = read(pipefd[0], errbuf + nerr, sizeof(errbuf) - 1 - (size_t)nerr)) > 0)
			nerr += r;
		if (w == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			timed_out = true;
			break;
		}
		usleep(10000);
	}
	errbuf[nerr] = '\0';
	close(pipefd[0]);
	if (timed_out || mounted_at(mnt)) {
		/* It took the option and mounted: take it down before failing. */
		pid_t u = fork();

		if (u == 0) {
			execlp("fusermount3", "fusermount3", "-uz", mnt, (char *)NULL);
			_exit(127);
		}
		if (u > 0)
			waitpid(u, NULL, 0);
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		rmdir(mnt);
		ck_abort_msg("%s: the daemon %s (output: %s)", c->what,
			     timed_out ? "did not exit within 10 s" : "mounted", errbuf);
	}
	rmdir(mnt);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "%s: daemon exit status 0x%x, want exit 1 (output: %s)", c->what, status,
		      errbuf);
	ck_assert_msg(nerr > 0, "%s: the daemon exited 1 without a message", c->what);
	ck_assert_msg(strstr(errbuf, "AddressSanitizer") == NULL &&
		      strstr(errbuf, "runtime error") == NULL &&
		      strstr(errbuf, "LeakSanitizer") == NULL,
		      "%s: sanitizer output: %s", c->what, errbuf);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name, bool fixture)
{
	return mtest_tcase(s, name, fixture ? setup : NULL, fixture ? mtest_teardown : NULL, 60);
}

#define NROWS(t) ((int)(sizeof(t) / sizeof((t)[0])))

static Suite *badinput_suite(bool as_nobody)
{
	Suite *s = suite_create("badinput");
	TCase *tc;

	tc = tcase(s, "xattr", true);
	tcase_add_loop_test(tc, xattr, 0, NROWS(xcases));
	tc = tcase(s, "ioctl", true);
	tcase_add_loop_test(tc, ioctl_bad, 0, NROWS(icases));
	tc = tcase(s, "call", true);
	tcase_add_loop_test(tc, call, 0, NROWS(ccases));
	tcase_add_test(tc, names_of_255_bytes_work);
	tcase_add_test(tc, largest_offset_works);
	tc = tcase(s, "deep", true);
	tcase_add_test(tc, deep_path);
	if (as_nobody) {
		tc = tcase(s, "nobody", true);
		tcase_add_loop_test(tc, nobody, 0, NROWS(ncases));
	}
	if (daemon_bin) {
		tc = tcase(s, "options", false);
		tcase_add_loop_test(tc, options, 0, NROWS(ocases));
	}
	/* Last: a row that hangs leaves a daemon thread busy. */
	tc = mtest_tcase(s, "sizes", mtest_setup, mtest_teardown, 60);
	tcase_add_loop_test(tc, sizes, 0, NROWS(scases));
	return s;
}

int main(void)
{
	const char *pid = getenv("VFS_DAEMON_PID");
	bool as_nobody;

	if (!mtest_find_mount("badinput", mount_dir))
		return 1;
	daemon_pid = pid && *pid ? (pid_t)atol(pid) : 0;
	daemon_bin = getenv("VOLATILEFS");
	if (daemon_bin && !*daemon_bin)
		daemon_bin = NULL;
	if (daemon_bin && access(daemon_bin, X_OK) != 0) {
		fprintf(stderr, "badinput: VOLATILEFS=%s is not executable\n", daemon_bin);
		return 1;
	}
	if (!daemon_bin)
		fprintf(stderr, "badinput: test case \"options\" left out: set VOLATILEFS to the "
				"daemon binary\n");
	make_names();
	if (!mtest_make_run_dir("badinput", mount_dir))
		return 1;
	as_nobody = nobody_can_reach_mount();
	if (!as_nobody)
		fprintf(stderr, "badinput: test case \"nobody\" left out: it needs root and a mount "
				"with -o allow_other\n");

	return mtest_run(badinput_suite(as_nobody));
}
