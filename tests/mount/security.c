/*
 * security: what another user may and may not do on a volatilefs mounted with allow_other
 * (DESIGN sections 2, 5, 6 and 9), checked with real system calls as root and as uid 65534.
 *
 *	# tests/mount/with-mount.sh build/src/daemon/volatilefs -o allow_other,memory_limit=256M \
 *		-- build/tests/mount/security
 *	100%: Checks: ..., Failures: 0, Errors: 0
 *
 * Everything that tmpfs also does is asserted exactly as tmpfs does it, and the program runs
 * against a tmpfs unchanged (the volatilefs-only tests are then left out, with a notice):
 *
 *	# mkdir -p /tmp/sec-tmpfs && mount -t tmpfs none /tmp/sec-tmpfs
 *	# VFS_TEST_DIR=/tmp/sec-tmpfs build/tests/mount/security
 *	# umount /tmp/sec-tmpfs
 *
 * VFS_TEST_DIR is told apart by user.volatile.stats on its root: volatilefs answers it; tmpfs
 * says ENODATA (or EOPNOTSUPP).  It must be the root of a mount made by root with no mode=,
 * uid= or gid= option (the root is then 1777 root:root on both file systems).
 *
 * Test cases (CK_RUN_CASE=NAME runs one):
 *   perm      read, write, mark, unmark, purge and the range attributes of a file, as another
 *             user, with and without the permission bits; read-only descriptors;
 *   rootattr  user.volatile.memory_limit and .purge on the mount root: root or the mounting
 *             user only (EPERM from the daemon, nothing changed);
 *   setid     set-user-ID and set-group-ID bits cleared on write, truncate and chown, as
 *             tmpfs does (Linux 6.x rules: setattr_should_drop_sgid);
 *   sticky    sticky and non-sticky directories;
 *   mount     the root's uid=, gid=, mode= options; a mount without allow_other; the
 *             mounting user; a mount through /dev/fd/N (as mount.fuse3 -o drop_privileges
 *             does).  These start a second file system of the same kind on a directory of
 *             their own under /tmp: the daemon is VFS_DAEMON, else the executable of
 *             VFS_DAEMON_PID (with-mount.sh exports it).
 *
 * Layout as fsops.c: main() makes VFS_TEST_DIR/security.XXXXXX and removes it at the end; each
 * test is forked (CK_FORK) and runs in a fresh directory inside it (mode 0755) with relative
 * names.  What another user does runs in a child that calls setgroups(0), setgid and setuid,
 * performs one operation and sends its errno (and what it read) back through a pipe.
 *
 * No mount is left behind: each second mount has a guardian process, outside the test's
 * process group, that unmounts it (lazily) and stops its daemon if the test dies or times out
 * before unmounting it itself; main() sweeps for leftovers at the end.  The mount root's mode,
 * changed by the rootattr tests, is put back by each test's setup and by main().
 *
 * Needs root; without it the program says so and exits 77 (skipped).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"
#include "volatilefs.h"

#define OTHER 65533 /* a second unprivileged user */
#define PAGE 4096
#define TIMEOUT_SECONDS 60
#define TMPFS_MAGIC_ 0x01021994

/* Set in main() before any test is forked; children inherit them. */
static char base_dir[PATH_MAX]; /* VFS_TEST_DIR, resolved: the mount root */
static bool on_vfs;               /* VFS_TEST_DIR is a volatilefs */
static char daemon_path[PATH_MAX]; /* for the second mounts; empty if unknown */
static char mount_prefix[64];     /* /tmp/vfs-security.PID. */
static struct stat base_st;       /* the mount root as main() found it */

/* ---------------------------------------------------------------------------------------- */
/* Another user's operations                                                                */

enum op_kind {
	OP_OPEN,        /* open(a, flags) */
	OP_READ,        /* open(a, O_RDONLY), read into text */
	OP_WRITE,       /* open(a, O_WRONLY), pwrite(value) at n1 */
	OP_TRUNCATE,    /* truncate(a, n1) */
	OP_CREATE,      /* open(a, O_WRONLY | O_CREAT | O_EXCL, 0644) */
	OP_MKDIR,       /* mkdir(a, 0755) */
	OP_UNLINK,      /* unlink(a) */
	OP_RMDIR,       /* rmdir(a) */
	OP_RENAME,      /* rename(a, b) */
	OP_CHOWN,       /* chown(a, n1, n2) */
	OP_CHMOD,       /* chmod(a, n1) */
	OP_STAT,        /* stat(a): v[0] mode, v[1] uid, v[2] gid */
	OP_SETXATTR,    /* setxattr(a, b, value, strlen(value), 0) */
	OP_GETXATTR,    /* getxattr(a, b) into text */
	OP_REMOVEXATTR, /* removexattr(a, b) */
	OP_MARK,        /* open(a, flags), volatilefs_mark(n1, n2, 0) */
	OP_UNMARK,      /* open(a, flags), volatilefs_unmark(n1, n2): v[0] bytes, v[1] purged */
	OP_PURGED,      /* open(a, flags), volatilefs_purged(0, 0): v[0] count */
};

struct op {
	enum op_kind kind;
	const char *a, *b, *value;
	int flags;
	long long n1, n2;
};

struct res {
	int err;            /* 0, or the errno of the step that failed */
	char where[16];     /* that step: "open", "ioctl", ... */
	uint64_t v[3];
	char text[4096];
	size_t len;
};

static void fail_at(struct res *r, const char *where)
{
	r->err = errno ? errno : EIO;
	snprintf(r->where, sizeof(r->where), "%s", where);
}

static int open_for(const struct op *o, struct res *r, int flags)
{
	int fd = open(o->a, flags);

	if (fd < 0)
		fail_at(r, "open");
	return fd;
}

static void child_do(const struct op *o, struct res *r)
{
	struct volatilefs_extent ext[16];
	struct stat st;
	uint64_t bytes;
	size_t count;
	ssize_t n;
	int fd, purged;

	switch (o->kind) {
	case OP_OPEN:
		if ((fd = open_for(o, r, o->flags)) >= 0)
			close(fd);
		break;
	case OP_READ:
		if ((fd = open_for(o, r, O_RDONLY)) < 0)
			break;
		n = read(fd, r->text, sizeof(r->text) - 1);
		if (n < 0)
			fail_at(r, "read");
		else
			r->len = (size_t)n;
		close(fd);
		break;
	case OP_WRITE:
		if ((fd = open_for(o, r, O_WRONLY)) < 0)
			break;
		if (pwrite(fd, o->value, strlen(o->value), o->n1) != (ssize_t)strlen(o->value))
			fail_at(r, "pwrite");
		else if (close(fd) != 0)
			fail_at(r, "close");
		break;
	case OP_TRUNCATE:
		if (truncate(o->a, o->n1) != 0)
			fail_at(r, "truncate");
		break;
	case OP_CREATE:
		if ((fd = open(o->a, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0)
			fail_at(r, "create");
		else
			close(fd);
		break;
	case OP_MKDIR:
		if (mkdir(o->a, 0755) != 0)
			fail_at(r, "mkdir");
		break;
	case OP_UNLINK:
		if (unlink(o->a) != 0)
			fail_at(r, "unlink");
		break;
	case OP_RMDIR:
		if (rmdir(o->a) != 0)
			fail_at(r, "rmdir");
		break;
	case OP_RENAME:
		if (rename(o->a, o->b) != 0)
			fail_at(r, "rename");
		break;
	case OP_CHOWN:
		if (chown(o->a, (uid_t)o->n1, (gid_t)o->n2) != 0)
			fail_at(r, "chown");
		break;
	case OP_CHMOD:
		if (chmod(o->a, (mode_t)o->n1) != 0)
			fail_at(r, "chmod");
		break;
	case OP_STAT:
		if (stat(o->a, &st) != 0) {
			fail_at(r, "stat");
			break;
		}
		r->v[0] = st.st_mode;
		r->v[1] = st.st_uid;
		r->v[2] = st.st_gid;
		break;
	case OP_SETXATTR:
		if (setxattr(o->a, o->b, o->value, strlen(o->value), 0) != 0)
			fail_at(r, "setxattr");
		break;
	case OP_GETXATTR:
		n = getxattr(o->a, o->b, r->text, sizeof(r->text) - 1);
		if (n < 0)
			fail_at(r, "getxattr");
		else
			r->len = (size_t)n;
		break;
	case OP_REMOVEXATTR:
		if (removexattr(o->a, o->b) != 0)
			fail_at(r, "removexattr");
		break;
	case OP_MARK:
		if ((fd = open_for(o, r, o->flags)) < 0)
			break;
		if (volatilefs_mark(fd, (uint64_t)o->n1, (uint64_t)o->n2, 0) != 0)
			fail_at(r, "ioctl");
		close(fd);
		break;
	case OP_UNMARK:
		if ((fd = open_for(o, r, o->flags)) < 0)
			break;
		if (volatilefs_unmark(fd, (uint64_t)o->n1, (uint64_t)o->n2, &bytes, &purged) != 0) {
			fail_at(r, "ioctl");
		} else {
			r->v[0] = bytes;
			r->v[1] = (uint64_t)purged;
		}
		close(fd);
		break;
	case OP_PURGED:
		if ((fd = open_for(o, r, o->flags)) < 0)
			break;
		if (volatilefs_purged(fd, 0, 0, ext, 16, &count) != 0)
			fail_at(r, "ioctl");
		else
			r->v[0] = count;
		close(fd);
		break;
	}
}

/*
 * Runs o in a child with this uid and gid and no supplementary groups, in the current
 * directory; the child reports through a pipe.  Never asserts: a child that could not drop
 * its privileges, died or hung has err -1 and says so in where, so that the mount tests can
 * clean up before they assert.
 */
static struct res run_as_raw(uid_t uid, gid_t gid, const struct op *o)
{
	struct res r = { 0 };
	int p[2], status;
	size_t got = 0;
	pid_t pid;

	if (pipe(p) != 0) {
		r.err = -1;
		snprintf(r.where, sizeof(r.where), "pipe");
		return r;
	}
	pid = fork();
	if (pid < 0) {
		r.err = -1;
		snprintf(r.where, sizeof(r.where), "fork");
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		struct res c = { 0 };
		const char *s = (const char *)&c;
		size_t left = sizeof(c);

		close(p[0]);
		alarm(30);
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 ||
		    getuid() != uid || geteuid() != uid || getegid() != gid)
			_exit(250);
		child_do(o, &c);
		while (left > 0) {
			ssize_t n = write(p[1], s, left);

			if (n <= 0)
				_exit(251);
			s += n;
			left -= (size_t)n;
		}
		_exit(0);
	}
	close(p[1]);
	while (got < sizeof(r)) {
		ssize_t n = read(p[0], (char *)&r + got, sizeof(r) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got != sizeof(r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		memset(&r, 0, sizeof(r));
		r.err = -1;
		if (WIFSIGNALED(status))
			snprintf(r.where, sizeof(r.where), "signal %d", WTERMSIG(status));
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 250)
			snprintf(r.where, sizeof(r.where), "setuid");
		else
			snprintf(r.where, sizeof(r.where), "child");
	}
	return r;
}

static struct res run_as(uid_t uid, const struct op *o)
{
	struct res r = run_as_raw(uid, uid, o);

	ck_assert_msg(r.err != -1, "child as uid %u failed before its operation (%s)", uid,
		      r.where);
	return r;
}

static const char *op_name(enum op_kind k)
{
	static const char *names[] = { "open", "read", "write", "truncate", "create",
				       "mkdir", "unlink", "rmdir", "rename", "chown",
				       "chmod", "stat", "setxattr", "getxattr",
				       "removexattr", "mark", "unmark", "purged" };

	return names[k];
}

/* The child as uid must get exactly err (0: success) at step where (NULL: any step). */
#define EXPECT_AS(uid_, want_, where_, ...)                                                   \
	({                                                                                \
		const struct op o_ = { __VA_ARGS__ };                                     \
		struct res r_ = run_as((uid_), &o_);                                       \
		const char *w_ = (where_);                                                 \
		ck_assert_msg(r_.err == (want_) && (r_.err == 0 || w_ == NULL ||            \
						  strcmp(r_.where, w_) == 0),             \
			      "as uid %u: %s(%s%s%s%s%s): expected %s%s%s, got %s%s%s", (uid_), \
			      op_name(o_.kind), o_.a ? o_.a : "", o_.b ? ", " : "",       \
			      o_.b ? o_.b : "", o_.value ? ", " : "",                     \
			      o_.value ? o_.value : "", errname(want_), w_ ? " at " : "",   \
			      w_ ? w_ : "", errname(r_.err), r_.err ? " at " : "",        \
			      r_.err ? r_.where : "");                                    \
		r_;                                                                       \
	})

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                  */

/* A file holding text, then given this mode (set after the write, which would clear the
 * set-user-ID and set-group-ID bits). */
static void make_file_mode(const char *path, const char *text, mode_t mode)
{
	make_file_with(path, text, strlen(text));
	CHECK(chmod(path, mode));
}

/* A file of n pages, page i filled with the byte 'a' + i. */
static void make_pages(const char *path, int n, mode_t mode)
{
	char buf[PAGE];
	int fd = CHECK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600));

	for (int i = 0; i < n; i++) {
		memset(buf, 'a' + i, sizeof(buf));
		ck_assert_int_eq(CHECK(pwrite(fd, buf, sizeof(buf), (off_t)i * PAGE)), PAGE);
	}
	CHECK(fchmod(fd, mode));
	CHECK(close(fd));
}

static void assert_pages(const char *path, int n)
{
	char buf[PAGE];
	int fd = CHECK(open(path, O_RDONLY));

	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(CHECK(pread(fd, buf, sizeof(buf), (off_t)i * PAGE)), PAGE);
		for (int j = 0; j < PAGE; j++)
			ck_assert_msg(buf[j] == 'a' + i,
				      "%s: byte %d of page %d is 0x%02x, want '%c'", path, j, i,
				      (unsigned char)buf[j], 'a' + i);
	}
	ck_assert_int_eq(CHECK(pread(fd, buf, 1, (off_t)n * PAGE)), 0);
	CHECK(close(fd));
}

static void assert_contents(const char *path, const char *want)
{
	char buf[4096];
	int fd = CHECK(open(path, O_RDONLY));
	ssize_t n = CHECK(read(fd, buf, sizeof(buf) - 1));

	buf[n] = '\0';
	ck_assert_msg(strcmp(buf, want) == 0, "%s holds \"%s\", want \"%s\"", path, buf, want);
	CHECK(close(fd));
}

/* The value of an attribute, read as root, as a string. */
static char *xattr_str(const char *path, const char *name, char *buf, size_t size)
{
	ssize_t n = getxattr(path, name, buf, size - 1);

	ck_assert_msg(n >= 0, "getxattr(%s, %s): %s", path, name, errname(errno));
	buf[n] = '\0';
	return buf;
}

#define ASSERT_XATTR(path, name, want)                                                    \
	do {                                                                              \
		char b_[4096];                                                            \
		xattr_str((path), (name), b_, sizeof(b_));                                \
		ck_assert_msg(strcmp(b_, (want)) == 0, "%s of %s is \"%s\", want \"%s\"", \
			      (name), (path), b_, (want));                                \
	} while (0)

static mode_t mode_of(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st));
	return st.st_mode;
}

static void root_mark(const char *path, uint64_t off, uint64_t len)
{
	int fd = CHECK(open(path, O_RDWR));

	CHECK(volatilefs_mark(fd, off, len, 0));
	CHECK(close(fd));
}

/* Makes the mount root 0777 (not sticky), so that the kernel lets another user's setxattr
 * through to the daemon (a sticky directory refuses user.* attributes to all but its owner
 * with EPERM, a non-writable one with EACCES).  main() puts the mode back in any case. */
static void open_mount_root(void)
{
	CHECK(chmod(base_dir, 0777));
	ck_assert_uint_eq(mode_of(base_dir), S_IFDIR | 0777);
}

static void close_mount_root(void)
{
	CHECK(chmod(base_dir, base_st.st_mode & 07777));
}

/* ---------------------------------------------------------------------------------------- */
/* Fixture                                                                                  */

static void setup(void)
{
	/* A test that failed with the mount root opened up (open_mount_root) left it so. */
	CHECK(chmod(base_dir, base_st.st_mode & 07777));
	mtest_setup();
}

/* ---------------------------------------------------------------------------------------- */
/* perm: a file's data and volatile state, as another user                                  */

/* tmpfs: yes.  A 0600 root file: no read, no write; 0666: both. */
START_TEST(other_user_cannot_read_or_write_0600_file)
{
	make_file_mode("f", "secret", 0600);
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_READ, .a = "f");
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_WRITE, .a = "f", .value = "X");
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_OPEN, .a = "f", .flags = O_RDWR);
	EXPECT_AS(NOBODY, EACCES, "truncate", .kind = OP_TRUNCATE, .a = "f", .n1 = 0);
	assert_contents("f", "secret");

	CHECK(chmod("f", 0644));
	struct res r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_READ, .a = "f");
	ck_assert_msg(r.len == 6 && memcmp(r.text, "secret", 6) == 0, "read back \"%.*s\"",
		      (int)r.len, r.text);
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_WRITE, .a = "f", .value = "X");

	CHECK(chmod("f", 0666));
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "f", .value = "X");
	assert_contents("f", "Xecret");
}
END_TEST

/* A file another user may not open for writing: it cannot reach the ioctls at all. */
START_TEST(other_user_cannot_mark_or_unmark_unwritable_file)
{
	make_pages("f", 4, 0600);
	root_mark("f", 0, 2 * PAGE);
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_MARK, .a = "f", .flags = O_RDWR,
		  .n1 = 2 * PAGE, .n2 = 2 * PAGE);
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_UNMARK, .a = "f", .flags = O_WRONLY,
		  .n1 = 0, .n2 = 0);
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_MARK, .a = "f", .flags = O_RDONLY,
		  .n1 = 2 * PAGE, .n2 = 2 * PAGE);

	/* Readable but not writable: it can open it read-only, and then gets EBADF. */
	CHECK(chmod("f", 0644));
	EXPECT_AS(NOBODY, EBADF, "ioctl", .kind = OP_MARK, .a = "f", .flags = O_RDONLY,
		  .n1 = 2 * PAGE, .n2 = 2 * PAGE);
	EXPECT_AS(NOBODY, EBADF, "ioctl", .kind = OP_UNMARK, .a = "f", .flags = O_RDONLY,
		  .n1 = 0, .n2 = 0);
	EXPECT_AS(NOBODY, EACCES, "open", .kind = OP_UNMARK, .a = "f", .flags = O_RDWR,
		  .n1 = 0, .n2 = 0);
	/* Listing purged extents only reads: allowed on a read-only descriptor. */
	struct res r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_PURGED, .a = "f",
				 .flags = O_RDONLY);
	ck_assert_uint_eq(r.v[0], 0);

	ASSERT_XATTR("f", "user.volatile.ranges", "0:8192 volatile priority=3\n");
	ASSERT_XATTR("f", "user.volatile.purged", "");
	assert_pages("f", 4);
}
END_TEST

/* tmpfs: yes (any user.* name is refused by the kernel without write permission). */
START_TEST(other_user_cannot_set_volatile_xattrs_without_write_permission)
{
	static const char *names[] = { "user.volatile.mark", "user.volatile.unmark",
				       "user.volatile.purge" };

	make_pages("f", 4, 0644);
	if (on_vfs)
		root_mark("f", 0, 2 * PAGE);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		EXPECT_AS(NOBODY, EACCES, "setxattr", .kind = OP_SETXATTR, .a = "f",
			  .b = names[i], .value = "all");
	EXPECT_AS(NOBODY, EACCES, "removexattr", .kind = OP_REMOVEXATTR, .a = "f",
		  .b = "user.volatile.purged");
	CHECK(chmod("f", 0600));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		EXPECT_AS(NOBODY, EACCES, "setxattr", .kind = OP_SETXATTR, .a = "f",
			  .b = names[i], .value = "all");
	if (on_vfs) {
		ASSERT_XATTR("f", "user.volatile.ranges", "0:8192 volatile priority=3\n");
		ASSERT_XATTR("f", "user.volatile.purged", "");
	}
	assert_pages("f", 4);
}
END_TEST

/* With the bits (a 0666 root file) another user may do all of it. */
START_TEST(other_user_may_mark_unmark_and_purge_0666_file)
{
	struct res r;

	make_pages("f", 4, 0666);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_MARK, .a = "f", .flags = O_RDWR, .n1 = 0,
		  .n2 = 2 * PAGE);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_MARK, .a = "f", .flags = O_WRONLY,
		  .n1 = 3 * PAGE, .n2 = PAGE);
	ASSERT_XATTR("f", "user.volatile.ranges",
		     "0:8192 volatile priority=3\n12288:4096 volatile priority=3\n");
	r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNMARK, .a = "f", .flags = O_RDWR,
		      .n1 = 3 * PAGE, .n2 = PAGE);
	ck_assert_uint_eq(r.v[0], PAGE);
	ck_assert_uint_eq(r.v[1], 0);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_SETXATTR, .a = "f", .b = "user.volatile.unmark",
		  .value = "4096:4096");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_SETXATTR, .a = "f", .b = "user.volatile.mark",
		  .value = "8192:4096 priority=1");
	ASSERT_XATTR("f", "user.volatile.ranges",
		     "0:4096 volatile priority=3\n8192:4096 volatile priority=1\n");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_SETXATTR, .a = "f", .b = "user.volatile.purge",
		  .value = "all");
	r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_GETXATTR, .a = "f",
		      .b = "user.volatile.purged");
	ck_assert_msg(r.len == strlen("0:4096\n8192:4096\n") &&
			      memcmp(r.text, "0:4096\n8192:4096\n", r.len) == 0,
		      "purged as seen by uid %u: \"%.*s\"", NOBODY, (int)r.len, r.text);
	r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNMARK, .a = "f", .flags = O_RDWR, .n1 = 0,
		      .n2 = 0);
	ck_assert_uint_eq(r.v[0], 2 * PAGE);
	ck_assert_uint_eq(r.v[1], 1);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_REMOVEXATTR, .a = "f",
		  .b = "user.volatile.purged");
	ASSERT_XATTR("f", "user.volatile.purged", "");
}
END_TEST

/* tmpfs: yes (getxattr of any user.* name needs read permission).  0600: EACCES. */
START_TEST(getting_ranges_and_purged_needs_read_permission)
{
	static const char *names[] = { "user.volatile.ranges", "user.volatile.purged" };
	struct res r;

	make_pages("f", 2, 0600);
	if (on_vfs) {
		root_mark("f", 0, PAGE);
		CHECK(setxattr("f", "user.volatile.purge", "all", 3, 0));
	}
	for (size_t i = 0; i < 2; i++)
		EXPECT_AS(NOBODY, EACCES, "getxattr", .kind = OP_GETXATTR, .a = "f",
			  .b = names[i]);
	/* Write permission alone is not enough either. */
	CHECK(chmod("f", 0602));
	for (size_t i = 0; i < 2; i++)
		EXPECT_AS(NOBODY, EACCES, "getxattr", .kind = OP_GETXATTR, .a = "f",
			  .b = names[i]);
	if (!on_vfs)
		return;
	CHECK(chmod("f", 0604));
	r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_GETXATTR, .a = "f",
		      .b = "user.volatile.ranges");
	ck_assert_msg(r.len == strlen("0:4096 purged priority=3\n") &&
			      memcmp(r.text, "0:4096 purged priority=3\n", r.len) == 0,
		      "ranges as seen by uid %u: \"%.*s\"", NOBODY, (int)r.len, r.text);
	r = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_GETXATTR, .a = "f",
		      .b = "user.volatile.purged");
	ck_assert_msg(r.len == 7 && memcmp(r.text, "0:4096\n", 7) == 0,
		      "purged as seen by uid %u: \"%.*s\"", NOBODY, (int)r.len, r.text);
}
END_TEST

/* mark/unmark need a descriptor open for writing, whoever holds it. */
START_TEST(read_only_descriptor_cannot_mark_or_unmark_even_for_owner)
{
	uint64_t bytes = 77;
	int purged = 77, fd;
	size_t count = 77;
	struct volatilefs_extent ext[4];

	make_pages("f", 4, 0644);
	root_mark("f", 0, PAGE);
	fd = CHECK(open("f", O_RDONLY));
	ASSERT_ERRNO(volatilefs_mark(fd, PAGE, PAGE, 0), EBADF);
	ASSERT_ERRNO(volatilefs_mark(fd, 0, 0, VOLATILEFS_PRIORITY(0)), EBADF);
	ASSERT_ERRNO(volatilefs_unmark(fd, 0, 0, &bytes, &purged), EBADF);
	ck_assert_uint_eq(bytes, 77);
	ck_assert_int_eq(purged, 77);
	CHECK(volatilefs_purged(fd, 0, 0, ext, 4, &count));
	ck_assert_uint_eq(count, 0);
	CHECK(close(fd));
	ASSERT_XATTR("f", "user.volatile.ranges", "0:4096 volatile priority=3\n");

	/* The same for an ordinary user on its own file. */
	CHECK(chown("f", NOBODY, NOBODY));
	EXPECT_AS(NOBODY, EBADF, "ioctl", .kind = OP_MARK, .a = "f", .flags = O_RDONLY,
		  .n1 = PAGE, .n2 = PAGE);
	EXPECT_AS(NOBODY, EBADF, "ioctl", .kind = OP_UNMARK, .a = "f", .flags = O_RDONLY,
		  .n1 = 0, .n2 = 0);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNMARK, .a = "f", .flags = O_WRONLY, .n1 = 0,
		  .n2 = 0);
	ASSERT_XATTR("f", "user.volatile.ranges", "");
	assert_pages("f", 4);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* rootattr: user.volatile.memory_limit and .purge on the mount root                        */

START_TEST(other_user_cannot_set_memory_limit_eperm)
{
	static const struct {
		uid_t uid;
		const char *value;
	} tries[] = { { NOBODY, "1M" }, { NOBODY, "1T" }, { OTHER, "4096" } };
	char before[64], after[64], stats_limit[64];
	struct res r[3];

	xattr_str(base_dir, "user.volatile.memory_limit", before, sizeof(before));
	snprintf(stats_limit, sizeof(stats_limit), "%" PRIu64, mount_stat(base_dir, "memory_limit"));
	ck_assert_str_eq(before, stats_limit);
	uint64_t low = mount_stat(base_dir, "memory_low");

	open_mount_root();
	/* The kernel lets this user's user.* attributes on the root through now ... */
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_SETXATTR, .a = base_dir, .b = "user.sec.probe",
		  .value = "x");
	CHECK(removexattr(base_dir, "user.sec.probe"));
	/* ... so a refusal below is the daemon's.  Should one get through, the limit is put
	 * back before anything is asserted, so that the tests after this one still have room. */
	for (int i = 0; i < 3; i++)
		r[i] = run_as_raw(tries[i].uid, tries[i].uid,
				  &(struct op){ .kind = OP_SETXATTR, .a = base_dir,
						.b = "user.volatile.memory_limit",
						.value = tries[i].value });
	xattr_str(base_dir, "user.volatile.memory_limit", after, sizeof(after));
	if (strcmp(after, before) != 0)
		CHECK(setxattr(base_dir, "user.volatile.memory_limit", before, strlen(before), 0));
	for (int i = 0; i < 3; i++)
		ck_assert_msg(r[i].err == EPERM,
			      "as uid %u: setxattr(%s, user.volatile.memory_limit, %s): expected "
			      "EPERM, got %s", tries[i].uid, base_dir, tries[i].value,
			      r[i].err == -1 ? r[i].where : errname(r[i].err));
	ck_assert_msg(strcmp(after, before) == 0, "memory_limit changed from %s to %s", before,
		      after);

	/* Reading it needs only read permission. */
	struct res g = EXPECT_AS(NOBODY, 0, NULL, .kind = OP_GETXATTR, .a = base_dir,
				 .b = "user.volatile.memory_limit");
	ck_assert_msg(g.len == strlen(before) && memcmp(g.text, before, g.len) == 0,
		      "memory_limit as seen by uid %u: \"%.*s\", want \"%s\"", NOBODY,
		      (int)g.len, g.text, before);
	close_mount_root();
	ck_assert_uint_eq(mount_stat(base_dir, "memory_limit"), strtoull(before, NULL, 10));
	ck_assert_uint_eq(mount_stat(base_dir, "memory_low"), low);
}
END_TEST

START_TEST(other_user_cannot_purge_mount_eperm)
{
	static const char *values[] = { "all", "1M", "4096" };
	uint64_t purges = mount_stat(base_dir, "purges_total"), purged_bytes;
	struct res r[2][3];

	purged_bytes = mount_stat(base_dir, "purged_bytes_total");
	make_pages("f", 4, 0666);
	root_mark("f", 0, 0);
	open_mount_root();
	for (int i = 0; i < 3; i++)
		for (int u = 0; u < 2; u++)
			r[u][i] = run_as_raw(u ? OTHER : NOBODY, u ? OTHER : NOBODY,
					     &(struct op){ .kind = OP_SETXATTR, .a = base_dir,
							   .b = "user.volatile.purge",
							   .value = values[i] });
	close_mount_root();
	for (int i = 0; i < 3; i++)
		for (int u = 0; u < 2; u++)
			ck_assert_msg(r[u][i].err == EPERM,
				      "as uid %u: setxattr(%s, user.volatile.purge, %s): expected "
				      "EPERM, got %s", u ? OTHER : NOBODY, base_dir, values[i],
				      r[u][i].err == -1 ? r[u][i].where : errname(r[u][i].err));
	ck_assert_uint_eq(mount_stat(base_dir, "purges_total"), purges);
	ck_assert_uint_eq(mount_stat(base_dir, "purged_bytes_total"), purged_bytes);
	ASSERT_XATTR("f", "user.volatile.ranges", "0:0 volatile priority=3\n");
	ASSERT_XATTR("f", "user.volatile.purged", "");
	assert_pages("f", 4);
}
END_TEST

/* The sticky (default 1777) root: the kernel refuses before the daemon sees anything. */
START_TEST(other_user_on_sticky_root_gets_kernel_eperm)
{
	char before[64];

	ck_assert_uint_eq(mode_of(base_dir) & 07777, base_st.st_mode & 07777);
	if ((base_st.st_mode & 07777) != 01777)
		return;
	xattr_str(base_dir, "user.volatile.memory_limit", before, sizeof(before));
	EXPECT_AS(NOBODY, EPERM, "setxattr", .kind = OP_SETXATTR, .a = base_dir,
		  .b = "user.sec.probe", .value = "x");
	EXPECT_AS(NOBODY, EPERM, "setxattr", .kind = OP_SETXATTR, .a = base_dir,
		  .b = "user.volatile.memory_limit", .value = "1M");
	ASSERT_XATTR(base_dir, "user.volatile.memory_limit", before);
}
END_TEST

/* Root (who mounted it here) may; put the limit back afterwards. */
START_TEST(root_may_set_memory_limit_and_purge)
{
	char before[64], want[64];
	uint64_t purges = mount_stat(base_dir, "purges_total");

	xattr_str(base_dir, "user.volatile.memory_limit", before, sizeof(before));
	uint64_t lim = strtoull(before, NULL, 10);

	snprintf(want, sizeof(want), "%" PRIu64, lim + 1024 * 1024);
	CHECK(setxattr(base_dir, "user.volatile.memory_limit", want, strlen(want), 0));
	ASSERT_XATTR(base_dir, "user.volatile.memory_limit", want);
	CHECK(setxattr(base_dir, "user.volatile.memory_limit", before, strlen(before), 0));
	ASSERT_XATTR(base_dir, "user.volatile.memory_limit", before);

	make_pages("f", 2, 0644);
	root_mark("f", 0, PAGE);
	CHECK(setxattr(base_dir, "user.volatile.purge", "all", 3, 0));
	ASSERT_XATTR("f", "user.volatile.purged", "0:4096\n");
	ck_assert_uint_gt(mount_stat(base_dir, "purges_total"), purges);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* setid: set-user-ID and set-group-ID bits                                                 */

/* tmpfs: a write by a user without CAP_FSETID clears S_ISUID ... */
START_TEST(write_by_other_user_clears_setuid)
{
	make_file_mode("f", "old", 04777);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 04777);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "f", .value = "X");
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0777);
	assert_contents("f", "Xld");
}
END_TEST

/* ... and S_ISGID when the group may execute; S_ISUID and S_ISGID together go together. */
START_TEST(write_by_other_user_clears_setgid_with_group_exec)
{
	make_file_mode("f", "old", 02777);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "f", .value = "X");
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0777);

	make_file_mode("g", "old", 06777);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "g", .value = "X", .n1 = 3);
	ck_assert_uint_eq(mode_of("g"), S_IFREG | 0777);
	assert_contents("g", "oldX");
}
END_TEST

/*
 * tmpfs (Linux 6.x, setattr_should_drop_sgid): S_ISGID without group execute goes when the
 * writer is neither in the file's group nor privileged, and stays for a member of the group.
 */
START_TEST(write_by_other_user_outside_group_clears_setgid_without_group_exec)
{
	make_file_mode("f", "old", 02767);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 02767);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "f", .value = "X");
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0767);
}
END_TEST

START_TEST(truncate_by_other_user_outside_group_clears_setgid_without_group_exec)
{
	make_file_mode("f", "old", 02767);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_TRUNCATE, .a = "f", .n1 = 1);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0767);
	assert_contents("f", "o");
}
END_TEST

START_TEST(write_by_group_member_keeps_setgid_without_group_exec)
{
	make_file_mode("f", "old", 0600);
	CHECK(chown("f", 0, NOBODY));
	CHECK(chmod("f", 02760));
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 02760);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "f", .value = "X");
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 02760);
	assert_contents("f", "Xld");
}
END_TEST

/* tmpfs: root (CAP_FSETID) writing keeps both bits. */
START_TEST(write_by_root_keeps_setuid_and_setgid)
{
	int fd;

	make_file_mode("f", "old", 06777);
	fd = CHECK(open("f", O_WRONLY));
	ck_assert_int_eq(CHECK(pwrite(fd, "X", 1, 0)), 1);
	CHECK(close(fd));
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 06777);
	assert_contents("f", "Xld");
}
END_TEST

/* tmpfs: truncate by a user without CAP_FSETID clears them as a write does. */
START_TEST(truncate_by_other_user_clears_setuid_and_setgid)
{
	make_file_mode("f", "old", 06777);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_TRUNCATE, .a = "f", .n1 = 1);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0777);
	assert_contents("f", "o");
}
END_TEST

/* tmpfs: so does an open with O_TRUNC (do_truncate asks to kill them, as a truncate does). */
START_TEST(open_trunc_by_other_user_clears_setuid_and_setgid)
{
	make_file_mode("f", "old", 06777);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_OPEN, .a = "f", .flags = O_WRONLY | O_TRUNC);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0777);
	assert_contents("f", "");
}
END_TEST

/*
 * tmpfs: a write clears S_ISUID set after the writer opened the file.  On the passthrough
 * path that open may be one the kernel writes through itself; the kernel then asks the
 * daemon to clear the bits (with FUSE_HANDLE_KILLPRIV_V2, by a SETATTR that names nothing).
 */
START_TEST(write_through_open_made_before_chmod_clears_setuid)
{
	int ready[2], go[2], status;
	char c = 0;
	pid_t pid;

	make_file_mode("f", "old", 0666);
	CHECK(pipe(ready));
	CHECK(pipe(go));
	pid = CHECK(fork());
	if (pid == 0) {
		int fd;

		alarm(30);
		if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(250);
		fd = open("f", O_WRONLY);
		if (fd < 0 || write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(251);
		_exit(pwrite(fd, "X", 1, 0) == 1 ? 0 : 252);
	}
	ck_assert_int_eq(CHECK(read(ready[0], &c, 1)), 1);
	CHECK(chmod("f", 04777));
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 04777);
	ck_assert_int_eq(CHECK(write(go[1], "g", 1)), 1);
	CHECK(waitpid(pid, &status, 0));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: status %#x", status);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0777);
	assert_contents("f", "Xld");
}
END_TEST

/* tmpfs: the owner's write clears them too (only CAP_FSETID keeps them). */
START_TEST(write_by_owner_clears_setuid)
{
	make_file_mode("f", "old", 0666);
	CHECK(chown("f", NOBODY, NOBODY));
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_CHMOD, .a = "f", .n1 = 06755);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 06755);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_WRITE, .a = "f", .value = "X");
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0755);
}
END_TEST

/* tmpfs: chown by root clears S_ISUID and S_ISGID (with group exec) of a regular file. */
START_TEST(chown_by_root_clears_setuid_and_setgid)
{
	make_file_mode("f", "", 06755);
	CHECK(chown("f", 1000, 1000));
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0755);

	make_file_mode("g", "", 04755);
	CHECK(chown("g", (uid_t)-1, 1000)); /* the group alone */
	ck_assert_uint_eq(mode_of("g"), S_IFREG | 0755);
}
END_TEST

/* tmpfs: chgrp by the owner (to a group it is in) clears them as well. */
START_TEST(chown_by_owner_clears_setuid_and_setgid)
{
	make_file_mode("f", "", 0644);
	CHECK(chown("f", NOBODY, 0));
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_CHMOD, .a = "f", .n1 = 04755);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_CHOWN, .a = "f", .n1 = -1, .n2 = NOBODY);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0755);
}
END_TEST

/*
 * What a successful chown leaves of the set-id bits, as the VFS has it (fs/open.c
 * chown_common, fs/attr.c setattr_should_drop_sgid and notify_change): a directory keeps
 * both; a non-directory loses S_ISUID, and S_ISGID when the group may execute (S_ISGID
 * without group execute marks mandatory locking and stays for a caller in the file's group
 * or privileged).  Whoever asks, root included, and even for chown(-1, -1).
 */
static mode_t mode_after_chown(mode_t mode)
{
	if (S_ISDIR(mode))
		return mode;
	mode &= ~(mode_t)S_ISUID;
	if (mode & S_IXGRP)
		mode &= ~(mode_t)S_ISGID;
	return mode;
}

/*
 * tmpfs: chown by root and by the owner (to ids it may give), of directories and regular
 * files with each combination of set-id bits, the ids changed or both -1: the bits follow
 * mode_after_chown and the ctime moves.  Every case is tried, and every mismatch reported.
 */
START_TEST(chown_keeps_or_clears_setid_as_the_vfs)
{
	static const mode_t modes[] = { 04755, 02755, 06755, 02745, 06745, 04745 };
	static const struct {
		uid_t by;
		long long uid, gid;
	} calls[] = {
		{ 0, OTHER, OTHER },
		{ 0, 0, -1 },
		{ 0, -1, -1 },
		{ NOBODY, NOBODY, NOBODY },
		{ NOBODY, -1, NOBODY },
		{ NOBODY, -1, -1 },
	};
	char bad[4096] = "";
	size_t len = 0;
	int n = 0;

	for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
		for (int dir = 0; dir < 2; dir++) {
			for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
				const mode_t type = dir ? S_IFDIR : S_IFREG;
				struct timespec nap = { 0, 20 * 1000 * 1000 };
				struct stat before, after;
				char name[32];
				mode_t want;

				snprintf(name, sizeof(name), "n%d", n++);
				if (dir)
					CHECK(mkdir(name, 0700));
				else
					make_file_mode(name, "", 0600);
				CHECK(chown(name, NOBODY, NOBODY));
				CHECK(chmod(name, modes[m]));
				CHECK(stat(name, &before));
				ck_assert_uint_eq(before.st_mode, type | modes[m]);
				nanosleep(&nap, NULL); /* past tmpfs's coarse clock */
				if (calls[c].by == 0)
					CHECK(chown(name, (uid_t)calls[c].uid, (gid_t)calls[c].gid));
				else
					EXPECT_AS(calls[c].by, 0, NULL, .kind = OP_CHOWN, .a = name,
						  .n1 = calls[c].uid, .n2 = calls[c].gid);
				CHECK(stat(name, &after));
				want = mode_after_chown(type | modes[m]);
				if (after.st_mode == want &&
				    (after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
				     after.st_ctim.tv_nsec != before.st_ctim.tv_nsec))
					continue;
				if (len < sizeof(bad))
					len += (size_t)snprintf(bad + len, sizeof(bad) - len,
						"\n  %s %04o, chown(%lld, %lld) by uid %u: %04o, want "
						"%04o%s", dir ? "dir" : "file", (unsigned)modes[m],
						calls[c].uid, calls[c].gid, (unsigned)calls[c].by,
						(unsigned)(after.st_mode & 07777),
						(unsigned)(want & 07777),
						after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
						after.st_ctim.tv_nsec == before.st_ctim.tv_nsec ?
						"; ctime unchanged" : "");
			}
		}
	}
	ck_assert_msg(len == 0, "chown:%s", bad);
}
END_TEST

/* tmpfs: a user cannot chown a file it does not own, nor give its own away; it cannot
 * chmod another user's file.  EPERM from the kernel in each case. */
START_TEST(other_user_cannot_chown_or_chmod_eperm)
{
	struct stat st;

	make_file_mode("f", "", 0666);
	EXPECT_AS(NOBODY, EPERM, "chown", .kind = OP_CHOWN, .a = "f", .n1 = NOBODY, .n2 = -1);
	EXPECT_AS(NOBODY, EPERM, "chmod", .kind = OP_CHMOD, .a = "f", .n1 = 04777);
	CHECK(chown("f", NOBODY, NOBODY));
	EXPECT_AS(NOBODY, EPERM, "chown", .kind = OP_CHOWN, .a = "f", .n1 = 0, .n2 = -1);
	EXPECT_AS(NOBODY, EPERM, "chown", .kind = OP_CHOWN, .a = "f", .n1 = -1, .n2 = 0);
	CHECK(stat("f", &st));
	ck_assert_uint_eq(st.st_uid, NOBODY);
	ck_assert_uint_eq(st.st_gid, NOBODY);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0666);
}
END_TEST

/* tmpfs: a user that is not in the file's group cannot set S_ISGID: chmod clears it. */
START_TEST(chmod_by_owner_outside_group_drops_setgid)
{
	make_file_mode("f", "", 0644);
	CHECK(chown("f", NOBODY, 0));
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_CHMOD, .a = "f", .n1 = 02755);
	ck_assert_uint_eq(mode_of("f"), S_IFREG | 0755);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* sticky directories                                                                       */

START_TEST(sticky_dir_other_user_cannot_unlink_or_rename_roots_file)
{
	CHECK(mkdir("s", 0755));
	CHECK(chmod("s", 01777));
	make_file_mode("s/root", "r", 0666);
	make_file_mode("s/root2", "q", 0666);
	EXPECT_AS(NOBODY, EPERM, "unlink", .kind = OP_UNLINK, .a = "s/root");
	EXPECT_AS(NOBODY, EPERM, "rename", .kind = OP_RENAME, .a = "s/root", .b = "s/mine");
	/* Nor replace it by renaming its own file over it. */
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_CREATE, .a = "s/own");
	EXPECT_AS(NOBODY, EPERM, "rename", .kind = OP_RENAME, .a = "s/own", .b = "s/root2");
	/* Nor remove root's directory in it. */
	CHECK(mkdir("s/rootdir", 0777));
	EXPECT_AS(NOBODY, EPERM, "rmdir", .kind = OP_RMDIR, .a = "s/rootdir");
	assert_contents("s/root", "r");
	assert_contents("s/root2", "q");
	ASSERT_ERRNO(access("s/mine", F_OK), ENOENT);
	CHECK(access("s/own", F_OK));
	CHECK(access("s/rootdir", F_OK));
}
END_TEST

START_TEST(sticky_dir_other_user_may_unlink_and_rename_own_file)
{
	CHECK(mkdir("s", 0755));
	CHECK(chmod("s", 01777));
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_CREATE, .a = "s/a");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_RENAME, .a = "s/a", .b = "s/b");
	ck_assert_uint_eq(({ struct stat s_; CHECK(stat("s/b", &s_)); s_.st_uid; }), NOBODY);
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_MKDIR, .a = "s/d");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_RMDIR, .a = "s/d");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNLINK, .a = "s/b");
	ASSERT_ERRNO(access("s/b", F_OK), ENOENT);
}
END_TEST

/* tmpfs: the owner of a sticky directory may remove anyone's files in it. */
START_TEST(sticky_dir_owner_may_unlink_other_users_file)
{
	CHECK(mkdir("s", 0755));
	CHECK(chmod("s", 01777));
	CHECK(chown("s", NOBODY, NOBODY));
	make_file_mode("s/theirs", "t", 0644);
	CHECK(chown("s/theirs", OTHER, OTHER));
	EXPECT_AS(OTHER, 0, NULL, .kind = OP_CREATE, .a = "s/theirs2");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNLINK, .a = "s/theirs");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_RENAME, .a = "s/theirs2", .b = "s/x");
	ASSERT_ERRNO(access("s/theirs", F_OK), ENOENT);
	/* A third user may not. */
	make_file_mode("s/root", "r", 0666);
	EXPECT_AS(OTHER, EPERM, "unlink", .kind = OP_UNLINK, .a = "s/root");
}
END_TEST

START_TEST(non_sticky_0777_dir_lets_other_user_unlink_and_rename_roots_file)
{
	CHECK(mkdir("d", 0755));
	CHECK(chmod("d", 0777));
	make_file_mode("d/root", "r", 0600);
	make_file_mode("d/root2", "q", 0600);
	CHECK(mkdir("d/rootdir", 0755));
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_RENAME, .a = "d/root", .b = "d/mine");
	assert_contents("d/mine", "r");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNLINK, .a = "d/mine");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_UNLINK, .a = "d/root2");
	EXPECT_AS(NOBODY, 0, NULL, .kind = OP_RMDIR, .a = "d/rootdir");
	ASSERT_ERRNO(access("d/mine", F_OK), ENOENT);
	ASSERT_ERRNO(access("d/root2", F_OK), ENOENT);
	ASSERT_ERRNO(access("d/rootdir", F_OK), ENOENT);
}
END_TEST

/* A non-writable directory: EACCES for everything that changes it. */
START_TEST(non_writable_dir_refuses_other_user_eacces)
{
	CHECK(mkdir("d", 0755));
	make_file_mode("d/root", "r", 0666);
	EXPECT_AS(NOBODY, EACCES, "unlink", .kind = OP_UNLINK, .a = "d/root");
	EXPECT_AS(NOBODY, EACCES, "rename", .kind = OP_RENAME, .a = "d/root", .b = "d/x");
	EXPECT_AS(NOBODY, EACCES, "create", .kind = OP_CREATE, .a = "d/new");
	EXPECT_AS(NOBODY, EACCES, "mkdir", .kind = OP_MKDIR, .a = "d/sub");
	assert_contents("d/root", "r");
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* mount: second mounts                                                                     */

struct second {
	char mnt[PATH_MAX];
	char log[PATH_MAX + 8];
	pid_t daemon;   /* 0 for tmpfs */
	int guard;      /* write end of the guardian's pipe */
};

static bool is_mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], mp[PATH_MAX];
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && strcmp(mp, path) == 0)
			found = true;
	fclose(f);
	return found;
}

/*
 * The guardian: outside the test's process group (Check kills that group when the test
 * ends), it waits for its pipe to close.  The test tells it the daemon's pid ("p<pid>\n")
 * once there is one, and "d" when it has cleaned up itself; if the pipe closes without "d"
 * (the test failed or timed out halfway), the guardian unmounts lazily and stops the daemon.
 * The pipe's write end is close-on-exec, so that a daemon does not keep it open.
 */
static int start_guardian(const char *mnt)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char log[PATH_MAX + 8];
		pid_t daemon = 0;
		char c;
		ssize_t n;

		setpgid(0, 0);
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		if (dup2(p[0], 3) != 3)
			_exit(1);
		close_range(4, ~0u, 0); /* Check's pipes and files, the write end */
		if (fork() > 0) /* the grandchild does the work; the test reaps the child */
			_exit(0);
		for (;;) {
			n = read(3, &c, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (c == 'd')
				_exit(0);
			if (c == 'p')
				daemon = 0;
			else if (c >= '0' && c <= '9')
				daemon = daemon * 10 + (c - '0');
		}
		for (int i = 0; i < 3 && is_mounted(mnt); i++)
			umount2(mnt, MNT_DETACH);
		if (daemon > 0) {
			for (int i = 0; i < 50 && kill(daemon, 0) == 0; i++)
				usleep(100000);
			kill(daemon, SIGTERM);
			for (int i = 0; i < 30 && kill(daemon, 0) == 0; i++)
				usleep(100000);
			kill(daemon, SIGKILL);
		}
		rmdir(mnt);
		if (snprintf(log, sizeof(log), "%s.log", mnt) < (int)sizeof(log))
			unlink(log);
		_exit(0);
	}
	close(p[0]);
	waitpid(pid, NULL, 0);
	return p[1];
}

static void guardian_set_daemon(int guard, pid_t daemon)
{
	char msg[32];
	int len = snprintf(msg, sizeof(msg), "p%d\n", (int)daemon);

	if (guard >= 0 && write(guard, msg, (size_t)len) != len)
		fprintf(stderr, "security: cannot tell the guardian pid %d\n", (int)daemon);
}

static int make_mountpoint(struct second *m, char *err, size_t errlen)
{
	int fd;

	memset(m, 0, sizeof(*m));
	m->guard = -1;
	snprintf(m->mnt, sizeof(m->mnt), "%sXXXXXX", mount_prefix);
	if (mkdtemp(m->mnt) == NULL) {
		snprintf(err, errlen, "mkdtemp(%.200s): %s", m->mnt, errname(errno));
		return -1;
	}
	snprintf(m->log, sizeof(m->log), "%s.log", m->mnt);
	fd = open(m->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %.200s: %s", m->log, errname(errno));
		rmdir(m->mnt);
		return -1;
	}
	close(fd);
	return 0;
}

static void read_log(const struct second *m, char *buf, size_t size)
{
	int fd = open(m->log, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, size - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * Seconds from the environment variable name (with-mount.sh's VFS_MOUNT_TIMEOUT and
 * VFS_EXIT_TIMEOUT, which the valgrind runs raise to 60 and 120: a second daemon under
 * valgrind on a loaded machine takes more than 10 s to mount or to exit), else dflt.
 */
static int env_seconds(const char *name, int dflt)
{
	const char *v = getenv(name);
	int n = v ? atoi(v) : 0;

	return n > 0 ? n : dflt;
}

/* Stops everything started by one of the second_* functions; never asserts.  Reports in
 * err what went wrong on the way (a daemon that did not exit 0, or printed something). */
static void second_stop(struct second *m, char *err, size_t errlen)
{
	int status = 0, exit_s = env_seconds("VFS_EXIT_TIMEOUT", 10);
	pid_t w = 0;

	if (err)
		err[0] = '\0';
	for (int i = 0; i < 50 && is_mounted(m->mnt); i++) {
		if (umount2(m->mnt, 0) == 0 || errno != EBUSY)
			break;
		usleep(100000);
	}
	if (is_mounted(m->mnt)) {
		umount2(m->mnt, MNT_DETACH);
		if (err)
			snprintf(err, errlen, "%.200s was busy: unmounted lazily", m->mnt);
	}
	if (m->daemon > 0) {
		for (int i = 0; i < exit_s * 10; i++) {
			w = waitpid(m->daemon, &status, WNOHANG);
			if (w != 0)
				break;
			usleep(100000);
		}
		if (w == 0) {
			kill(m->daemon, SIGKILL);
			waitpid(m->daemon, &status, 0);
			if (err && !err[0])
				snprintf(err, errlen, "daemon %d still running %d s after umount",
					 (int)m->daemon, exit_s);
		} else if (err && !err[0] && (!WIFEXITED(status) || WEXITSTATUS(status))) {
			snprintf(err, errlen, "daemon exited with status 0x%x after umount",
				 status);
		}
		if (err && !err[0]) {
			char log[1024];

			read_log(m, log, sizeof(log));
			if (log[0])
				snprintf(err, errlen, "daemon printed: %.900s", log);
		}
		m->daemon = 0;
	}
	rmdir(m->mnt);
	unlink(m->log);
	if (m->guard >= 0) {
		ssize_t n = write(m->guard, "d", 1);

		(void)n;
		close(m->guard);
		m->guard = -1;
	}
}

/* Waits up to VFS_MOUNT_TIMEOUT (default 10) s for m->mnt to appear (or, for a /dev/fd mount,
 * for the daemon to answer). */
static int wait_mounted(struct second *m, char *err, size_t errlen)
{
	int mount_s = env_seconds("VFS_MOUNT_TIMEOUT", 10);

	for (int i = 0; i < mount_s * 20; i++) {
		int status;

		if (is_mounted(m->mnt)) {
			struct stat st;

			if (stat(m->mnt, &st) == 0)
				return 0;
		}
		if (m->daemon > 0 && waitpid(m->daemon, &status, WNOHANG) == m->daemon) {
			char log[1024];

			read_log(m, log, sizeof(log));
			snprintf(err, errlen, "daemon exited (status 0x%x) before mounting: %.900s",
				 status, log);
			m->daemon = 0;
			return -1;
		}
		usleep(50000);
	}
	snprintf(err, errlen, "%.200s not mounted after %d s", m->mnt, mount_s);
	return -1;
}

static void redirect_to_log(const struct second *m)
{
	int fd = open(m->log, O_WRONLY | O_APPEND);
	int nul = open("/dev/null", O_RDONLY);

	if (fd < 0 || nul < 0)
		_exit(126);
	dup2(nul, 0);
	dup2(fd, 1);
	dup2(fd, 2);
}

/* A second mount of the kind VFS_TEST_DIR is: tmpfs with opts, or the daemon run by root with
 * -o opts (opts may be empty). */
static int second_start(struct second *m, const char *opts, char *err, size_t errlen)
{
	if (make_mountpoint(m, err, errlen))
		return -1;
	if (!on_vfs) {
		m->guard = start_guardian(m->mnt);
		if (mount("tmpfs", m->mnt, "tmpfs", 0, opts) != 0) {
			snprintf(err, errlen, "mount -t tmpfs -o %s: %s", opts, errname(errno));
			second_stop(m, NULL, 0);
			return -1;
		}
		return 0;
	}
	if (!daemon_path[0]) {
		snprintf(err, errlen, "no daemon to start: set VFS_DAEMON or VFS_DAEMON_PID");
		second_stop(m, NULL, 0);
		return -1;
	}
	m->guard = start_guardian(m->mnt);
	m->daemon = fork();
	if (m->daemon < 0) {
		snprintf(err, errlen, "fork: %s", errname(errno));
		m->daemon = 0;
		second_stop(m, NULL, 0);
		return -1;
	}
	if (m->daemon == 0) {
		setpgid(0, 0);
		redirect_to_log(m);
		if (opts[0])
			execl(daemon_path, daemon_path, "-f", "-o", opts, m->mnt, (char *)NULL);
		else
			execl(daemon_path, daemon_path, "-f", m->mnt, (char *)NULL);
		_exit(127);
	}
	guardian_set_daemon(m->guard, m->daemon);
	if (wait_mounted(m, err, errlen)) {
		second_stop(m, NULL, 0);
		return -1;
	}
	return 0;
}

/*
 * The way mount.fuse3 -o drop_privileges and other privileged helpers mount: root opens
 * /dev/fuse and mounts it with kopts (fd=, rootmode=, user_id=, group_id= are added), then
 * starts the daemon as uid/gid with -o dopts on /dev/fd/N.
 */
static int second_start_fd(struct second *m, uid_t uid, gid_t gid, const char *kopts,
			   const char *dopts, char *err, size_t errlen)
{
	char data[512], fdpath[32];
	int fd;

	if (!daemon_path[0]) {
		snprintf(err, errlen, "no daemon to start: set VFS_DAEMON or VFS_DAEMON_PID");
		return -1;
	}
	if (make_mountpoint(m, err, errlen))
		return -1;
	/* The guardian first, so that it does not hold the connection open. */
	m->guard = start_guardian(m->mnt);
	fd = open("/dev/fuse", O_RDWR); /* not O_CLOEXEC: the daemon inherits it */
	if (fd < 0) {
		snprintf(err, errlen, "open /dev/fuse: %s", errname(errno));
		second_stop(m, NULL, 0);
		return -1;
	}
	snprintf(data, sizeof(data), "fd=%d,rootmode=40000,user_id=%u,group_id=%u%s%s", fd, uid,
		 gid, kopts[0] ? "," : "", kopts);
	if (mount("volatilefs", m->mnt, "fuse.volatilefs", MS_NOSUID | MS_NODEV, data) != 0) {
		snprintf(err, errlen, "mount(fuse.volatilefs, %s): %s", data, errname(errno));
		close(fd);
		second_stop(m, NULL, 0);
		return -1;
	}
	snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", fd);
	m->daemon = fork();
	if (m->daemon < 0) {
		snprintf(err, errlen, "fork: %s", errname(errno));
		m->daemon = 0;
		close(fd);
		second_stop(m, NULL, 0);
		return -1;
	}
	if (m->daemon == 0) {
		setpgid(0, 0);
		redirect_to_log(m);
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
			_exit(125);
		if (dopts[0])
			execl(daemon_path, daemon_path, "-f", "-o", dopts, fdpath, (char *)NULL);
		else
			execl(daemon_path, daemon_path, "-f", fdpath, (char *)NULL);
		_exit(127);
	}
	/* Only the daemon holds the connection now: if it dies, the mount fails at once
	 * (ENOTCONN) instead of hanging. */
	close(fd);
	guardian_set_daemon(m->guard, m->daemon);
	if (wait_mounted(m, err, errlen)) {
		second_stop(m, NULL, 0);
		return -1;
	}
	return 0;
}

struct root_case {
	const char *opts;
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

static const struct root_case root_cases[] = {
	{ "", S_IFDIR | 01777, 0, 0 },
	{ "uid=1234,gid=4321,mode=0750", S_IFDIR | 0750, 1234, 4321 },
	{ "mode=700", S_IFDIR | 0700, 0, 0 },
	{ "uid=65534", S_IFDIR | 01777, 65534, 0 },
	{ "gid=65534,mode=2775", S_IFDIR | 02775, 0, 65534 },
	{ "mode=0", S_IFDIR | 0, 0, 0 },
};

/* tmpfs: yes.  mode=, uid=, gid= give the root those attributes; defaults 1777 root:root. */
START_TEST(mount_options_set_root_owner_group_and_mode)
{
	const struct root_case *c = &root_cases[_i];
	struct second m;
	struct stat st;
	char err[1024], stop_err[1024];
	int r;

	ck_assert_msg(second_start(&m, c->opts, err, sizeof(err)) == 0, "-o %s: %s", c->opts,
		      err);
	r = stat(m.mnt, &st);
	int e = errno;
	second_stop(&m, stop_err, sizeof(stop_err));
	ck_assert_msg(r == 0, "stat(%s): %s", m.mnt, errname(e));
	ck_assert_msg(st.st_mode == c->mode && st.st_uid == c->uid && st.st_gid == c->gid,
		      "-o %s: root is %o %u:%u, want %o %u:%u", c->opts, st.st_mode, st.st_uid,
		      st.st_gid, c->mode, c->uid, c->gid);
	ck_assert_msg(!stop_err[0], "-o %s: %s", c->opts, stop_err);
}
END_TEST

/* This mount (VFS_TEST_DIR): made by root without mode=, uid=, gid=. */
START_TEST(test_mount_root_is_1777_root_root)
{
	ck_assert_msg(base_st.st_mode == (S_IFDIR | 01777) && base_st.st_uid == 0 &&
			      base_st.st_gid == 0,
		      "%s: root is %o %u:%u, want 41777 0:0 (mounted by root, no mode=/uid=/gid=)",
		      base_dir, base_st.st_mode, base_st.st_uid, base_st.st_gid);
}
END_TEST

/* Without allow_other only the mounting user gets in: another user gets EACCES. */
START_TEST(mount_without_allow_other_is_closed_to_other_users)
{
	struct second m;
	char err[1024], stop_err[1024], path[PATH_MAX + 8];
	struct res r1, r2, r3;

	ck_assert_msg(second_start(&m, "mode=0777", err, sizeof(err)) == 0, "%s", err);
	snprintf(path, sizeof(path), "%s/f", m.mnt);
	int fd = open(path, O_WRONLY | O_CREAT, 0666);
	if (fd >= 0)
		close(fd);
	r1 = run_as_raw(NOBODY, NOBODY, &(struct op){ .kind = OP_STAT, .a = m.mnt });
	r2 = run_as_raw(NOBODY, NOBODY, &(struct op){ .kind = OP_READ, .a = path });
	r3 = run_as_raw(NOBODY, NOBODY,
			&(struct op){ .kind = OP_GETXATTR, .a = m.mnt,
				      .b = "user.volatile.stats" });
	second_stop(&m, stop_err, sizeof(stop_err));
	ck_assert_msg(fd >= 0, "root could not create %s", path);
	ck_assert_msg(r1.err == EACCES, "as uid %u: stat(mount root): expected EACCES, got %s (%s)",
		      NOBODY, errname(r1.err), r1.where);
	ck_assert_msg(r2.err == EACCES, "as uid %u: read(%s): expected EACCES, got %s (%s)",
		      NOBODY, path, errname(r2.err), r2.where);
	ck_assert_msg(r3.err == EACCES,
		      "as uid %u: getxattr(root, stats): expected EACCES, got %s (%s)", NOBODY,
		      errname(r3.err), r3.where);
	ck_assert_msg(!stop_err[0], "%s", stop_err);
}
END_TEST

/* uid= makes a user the owner of the root, not the mounting user: the root-only names stay
 * refused (EPERM from the daemon: the kernel lets the root's owner through).  The limit
 * leaves room for a daemon under valgrind (some 65 MiB of RSS before any file). */
START_TEST(uid_option_does_not_grant_root_only_attributes)
{
	struct second m;
	char err[1024], stop_err[1024], before[64] = "", after[64] = "";
	struct res probe, lim, purge;
	ssize_t n;

	ck_assert_msg(second_start(&m, "allow_other,uid=65534,gid=65534,mode=0755,memory_limit=256M",
				   err, sizeof(err)) == 0, "%s", err);
	n = getxattr(m.mnt, "user.volatile.memory_limit", before, sizeof(before) - 1);
	before[n > 0 ? n : 0] = '\0';
	probe = run_as_raw(NOBODY, NOBODY, &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
							  .b = "user.sec.probe", .value = "x" });
	lim = run_as_raw(NOBODY, NOBODY,
			 &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
				       .b = "user.volatile.memory_limit", .value = "1M" });
	purge = run_as_raw(NOBODY, NOBODY,
			   &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
					 .b = "user.volatile.purge", .value = "all" });
	n = getxattr(m.mnt, "user.volatile.memory_limit", after, sizeof(after) - 1);
	after[n > 0 ? n : 0] = '\0';
	second_stop(&m, stop_err, sizeof(stop_err));
	ck_assert_str_eq(before, "268435456");
	ck_assert_msg(probe.err == 0, "as uid %u (owner of the root): setxattr(user.sec.probe): %s",
		      NOBODY, errname(probe.err));
	ck_assert_msg(lim.err == EPERM,
		      "as uid %u (owner of the root by uid=, not the mounting user): "
		      "setxattr(user.volatile.memory_limit, 1M): expected EPERM, got %s",
		      NOBODY, errname(lim.err));
	ck_assert_msg(purge.err == EPERM,
		      "as uid %u (owner of the root by uid=): setxattr(user.volatile.purge, all): "
		      "expected EPERM, got %s", NOBODY, errname(purge.err));
	ck_assert_str_eq(after, "268435456");
	ck_assert_msg(!stop_err[0], "%s", stop_err);
}
END_TEST

/* The user who mounted (here 65534, through /dev/fd/N) may set the root-only names; another
 * user may not (EPERM); root may. */
START_TEST(mounting_user_may_set_root_only_attributes)
{
	struct second m;
	char err[1024], stop_err[1024], got[64] = "", path[PATH_MAX + 8];
	struct res st, lim, mk, purge, other, other_purge;
	int root_lim;
	ssize_t n;

	ck_assert_msg(second_start_fd(&m, NOBODY, NOBODY, "default_permissions,allow_other",
				      "default_permissions,mode=0777,memory_limit=256M", err,
				      sizeof(err)) == 0,
		      "%s", err);
	snprintf(path, sizeof(path), "%s/f", m.mnt);
	st = run_as_raw(NOBODY, NOBODY, &(struct op){ .kind = OP_STAT, .a = m.mnt });
	lim = run_as_raw(NOBODY, NOBODY,
			 &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
				       .b = "user.volatile.memory_limit", .value = "100M" });
	n = getxattr(m.mnt, "user.volatile.memory_limit", got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	other = run_as_raw(OTHER, OTHER,
			   &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
					 .b = "user.volatile.memory_limit", .value = "1M" });
	other_purge = run_as_raw(OTHER, OTHER,
				 &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
					       .b = "user.volatile.purge", .value = "all" });
	mk = run_as_raw(NOBODY, NOBODY, &(struct op){ .kind = OP_CREATE, .a = path });
	purge = run_as_raw(NOBODY, NOBODY,
			   &(struct op){ .kind = OP_SETXATTR, .a = m.mnt,
					 .b = "user.volatile.purge", .value = "all" });
	root_lim = setxattr(m.mnt, "user.volatile.memory_limit", "96M", 3, 0) == 0 ? 0 : errno;
	char final[64] = "";
	n = getxattr(m.mnt, "user.volatile.memory_limit", final, sizeof(final) - 1);
	final[n > 0 ? n : 0] = '\0';
	second_stop(&m, stop_err, sizeof(stop_err));

	ck_assert_msg(st.err == 0, "as uid %u: stat(own mount): %s", NOBODY, errname(st.err));
	ck_assert_msg(st.v[0] == (S_IFDIR | 0777) && st.v[1] == NOBODY && st.v[2] == NOBODY,
		      "root of a mount by uid %u is %o %u:%u, want 40777 %u:%u", NOBODY,
		      (unsigned)st.v[0], (unsigned)st.v[1], (unsigned)st.v[2], NOBODY, NOBODY);
	ck_assert_msg(lim.err == 0, "as the mounting uid %u: setxattr(memory_limit, 100M): %s",
		      NOBODY, errname(lim.err));
	ck_assert_str_eq(got, "104857600");
	ck_assert_msg(other.err == EPERM,
		      "as uid %u (not the mounting user): setxattr(memory_limit): expected EPERM, "
		      "got %s", OTHER, errname(other.err));
	ck_assert_msg(other_purge.err == EPERM,
		      "as uid %u (not the mounting user): setxattr(purge, all): expected EPERM, "
		      "got %s", OTHER, errname(other_purge.err));
	ck_assert_msg(mk.err == 0, "as uid %u: create: %s", NOBODY, errname(mk.err));
	ck_assert_msg(purge.err == 0, "as the mounting uid %u: setxattr(purge, all): %s", NOBODY,
		      errname(purge.err));
	ck_assert_msg(root_lim == 0, "as root: setxattr(memory_limit, 96M): %s",
		      errname(root_lim));
	ck_assert_str_eq(final, "100663296");
	ck_assert_msg(!stop_err[0], "%s", stop_err);
}
END_TEST

/* Mounted through /dev/fd/N by a helper that did not pass default_permissions (as
 * `mount -t fuse.volatilefs -o drop_privileges,allow_other` does): DESIGN section 2 says
 * default_permissions is always on, but the kernel mount is the caller's, so the daemon
 * refuses to serve it (exit status 1, a message naming the option) rather than serve every
 * file to every user. */
START_TEST(fd_mount_without_default_permissions_is_refused)
{
	struct second m;
	char err[1024];

	ck_assert_msg(second_start_fd(&m, 0, 0, "allow_other", "", err, sizeof(err)) != 0,
		      "the daemon served a /dev/fd mount made without default_permissions");
	ck_assert_msg(strstr(err, "status 0x100") != NULL, "daemon did not exit 1: %s", err);
	ck_assert_msg(strstr(err, "default_permissions") != NULL,
		      "the message does not name default_permissions: %s", err);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name)
{
	return mtest_tcase(s, name, setup, mtest_teardown, TIMEOUT_SECONDS);
}

static Suite *security_suite(void)
{
	Suite *s = suite_create("security");
	TCase *tc;

	tc = tcase(s, "perm");
	tcase_add_test(tc, other_user_cannot_read_or_write_0600_file);
	tcase_add_test(tc, other_user_cannot_set_volatile_xattrs_without_write_permission);
	tcase_add_test(tc, getting_ranges_and_purged_needs_read_permission);
	if (on_vfs) {
		tcase_add_test(tc, other_user_cannot_mark_or_unmark_unwritable_file);
		tcase_add_test(tc, other_user_may_mark_unmark_and_purge_0666_file);
		tcase_add_test(tc, read_only_descriptor_cannot_mark_or_unmark_even_for_owner);
	}

	if (on_vfs) {
		tc = tcase(s, "rootattr");
		tcase_add_test(tc, other_user_cannot_set_memory_limit_eperm);
		tcase_add_test(tc, other_user_cannot_purge_mount_eperm);
		tcase_add_test(tc, other_user_on_sticky_root_gets_kernel_eperm);
		tcase_add_test(tc, root_may_set_memory_limit_and_purge);
	}

	tc = tcase(s, "setid");
	tcase_add_test(tc, write_by_other_user_clears_setuid);
	tcase_add_test(tc, write_by_other_user_clears_setgid_with_group_exec);
	tcase_add_test(tc, write_by_other_user_outside_group_clears_setgid_without_group_exec);
	tcase_add_test(tc, truncate_by_other_user_outside_group_clears_setgid_without_group_exec);
	tcase_add_test(tc, write_by_group_member_keeps_setgid_without_group_exec);
	tcase_add_test(tc, write_by_root_keeps_setuid_and_setgid);
	tcase_add_test(tc, truncate_by_other_user_clears_setuid_and_setgid);
	tcase_add_test(tc, write_by_owner_clears_setuid);
	tcase_add_test(tc, open_trunc_by_other_user_clears_setuid_and_setgid);
	tcase_add_test(tc, write_through_open_made_before_chmod_clears_setuid);
	tcase_add_test(tc, chown_by_root_clears_setuid_and_setgid);
	tcase_add_test(tc, chown_by_owner_clears_setuid_and_setgid);
	tcase_add_test(tc, chown_keeps_or_clears_setid_as_the_vfs);
	tcase_add_test(tc, other_user_cannot_chown_or_chmod_eperm);
	tcase_add_test(tc, chmod_by_owner_outside_group_drops_setgid);

	tc = tcase(s, "sticky");
	tcase_add_test(tc, sticky_dir_other_user_cannot_unlink_or_rename_roots_file);
	tcase_add_test(tc, sticky_dir_other_user_may_unlink_and_rename_own_file);
	tcase_add_test(tc, sticky_dir_owner_may_unlink_other_users_file);
	tcase_add_test(tc, non_sticky_0777_dir_lets_other_user_unlink_and_rename_roots_file);
	tcase_add_test(tc, non_writable_dir_refuses_other_user_eacces);

	tc = tcase(s, "mount");
	tcase_add_test(tc, test_mount_root_is_1777_root_root);
	tcase_add_loop_test(tc, mount_options_set_root_owner_group_and_mode, 0,
			    (int)(sizeof(root_cases) / sizeof(root_cases[0])));
	if (on_vfs) {
		tcase_add_test(tc, mount_without_allow_other_is_closed_to_other_users);
		tcase_add_test(tc, uid_option_does_not_grant_root_only_attributes);
		tcase_add_test(tc, mounting_user_may_set_root_only_attributes);
		tcase_add_test(tc, fd_mount_without_default_permissions_is_refused);
	}
	return s;
}

/* Unmounts whatever second mount a test left (it should not), and removes its mountpoint
 * and log: belt and braces. */
static void sweep_mounts(void)
{
	const char *prefix = strrchr(mount_prefix, '/') + 1;
	DIR *d;
	struct dirent *e;

	for (int pass = 0; pass < 3; pass++) {
		FILE *f = fopen("/proc/self/mountinfo", "r");
		char line[4096], mp[PATH_MAX];
		bool any = false;

		if (f == NULL)
			return;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
			    strncmp(mp, mount_prefix, strlen(mount_prefix)) == 0) {
				fprintf(stderr, "security: %s left mounted: unmounting it\n", mp);
				umount2(mp, MNT_DETACH);
				rmdir(mp);
				any = true;
			}
		fclose(f);
		if (!any)
			break;
		usleep(200000);
	}
	d = opendir("/tmp");
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) != 0)
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int main(void)
{
	const char *base = getenv("VFS_TEST_DIR");
	const char *dpath = getenv("VFS_DAEMON");
	const char *dpid = getenv("VFS_DAEMON_PID");
	struct statfs sfs;
	char probe[16];
	int status;

	if (base == NULL || *base == '\0') {
		fprintf(stderr, "security: VFS_TEST_DIR is not set; set it to the root of a "
				"volatilefs (or tmpfs) mount, e.g. VFS_TEST_DIR=/tmp/volatilefs\n");
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "security: needs root (it runs checks as uid %d): skipped\n",
			NOBODY);
		return 77;
	}
	if (realpath(base, base_dir) == NULL || stat(base_dir, &base_st) != 0 ||
	    !S_ISDIR(base_st.st_mode)) {
		fprintf(stderr, "security: VFS_TEST_DIR=%s is not a directory\n", base);
		return 1;
	}
	if (statfs(base_dir, &sfs) != 0) {
		fprintf(stderr, "security: statfs(%s): %s\n", base_dir, strerror(errno));
		return 1;
	}
	if (getxattr(base_dir, "user.volatile.stats", probe, 0) > 0) {
		on_vfs = true;
	} else if (errno == ENODATA || errno == EOPNOTSUPP) {
		on_vfs = false;
		if (sfs.f_type != TMPFS_MAGIC_)
			fprintf(stderr, "security: %s is neither volatilefs nor tmpfs: the "
					"expectations are tmpfs's\n", base_dir);
		fprintf(stderr, "security: %s is not volatilefs: volatilefs-only tests left "
				"out\n", base_dir);
	} else {
		fprintf(stderr, "security: getxattr(%s, user.volatile.stats): %s\n", base_dir,
			strerror(errno));
		return 1;
	}
	if (dpath && *dpath) {
		snprintf(daemon_path, sizeof(daemon_path), "%s", dpath);
	} else if (dpid && *dpid) {
		char exe[64];
		ssize_t len;

		snprintf(exe, sizeof(exe), "/proc/%s/exe", dpid);
		len = readlink(exe, daemon_path, sizeof(daemon_path) - 1);
		daemon_path[len > 0 ? len : 0] = '\0';
	}
	if (on_vfs && !daemon_path[0])
		fprintf(stderr, "security: neither VFS_DAEMON nor VFS_DAEMON_PID is set: the "
				"tests that start a second mount will fail\n");
	snprintf(mount_prefix, sizeof(mount_prefix), "/tmp/vfs-security.%d.", (int)getpid());

	if (!mtest_make_run_dir("security", base_dir))
		return 1;

	status = mtest_run(security_suite());
	if (chmod(base_dir, base_st.st_mode & 07777) != 0)
		fprintf(stderr, "security: cannot restore the mode of %s: %s\n", base_dir,
			strerror(errno));
	sweep_mounts();
	return status;
}
