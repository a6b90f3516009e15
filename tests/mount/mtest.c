/*
 * mtest: what the mount-test programs share; see mtest.h.
 */
#include "mtest.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

char run_dir[PATH_MAX];
char test_dir[PATH_MAX];

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                   */

const char *errname(int e)
{
	const char *s = e ? strerrorname_np(e) : "no error";

	return s ? s : "unknown errno";
}

/* ---------------------------------------------------------------------------------------- */
/* I/O                                                                                      */

void *xmalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	return p;
}

void pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		ck_assert_msg(n > 0, "pwrite(%zu bytes at %lld): %s", len, (long long)off,
			      n < 0 ? errname(errno) : "wrote 0");
		p += n;
		len -= (size_t)n;
		off += n;
	}
}

size_t pread_all(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, off + (off_t)done);

		ck_assert_msg(n >= 0, "pread(%zu bytes at %lld): %s", len - done,
			      (long long)(off + (off_t)done), errname(errno));
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return done;
}

char *xattr_get(const char *path, const char *name)
{
	for (int tries = 0; tries < 10; tries++) {
		ssize_t size = getxattr(path, name, NULL, 0), got;
		size_t cap;
		char *buf;

		ck_assert_msg(size >= 0, "getxattr(%s, %s) size: %s", path, name, errname(errno));
		/*
		 * Room to spare: a buffer of size 0 would make the second call a size query
		 * too, which returns the new size, copies nothing and left buf[got] past the
		 * end of an uninitialised buffer when the value grew from empty meanwhile (a
		 * purge between the two calls: garbage read as user.volatile.purged).
		 */
		cap = (size_t)size + 256;
		buf = xmalloc(cap + 1);
		got = getxattr(path, name, buf, cap);
		if (got < 0 && errno == ERANGE) { /* it grew meanwhile */
			free(buf);
			continue;
		}
		ck_assert_msg(got >= 0, "getxattr(%s, %s): %s", path, name, errname(errno));
		buf[got] = '\0';
		return buf;
	}
	ck_abort_msg("getxattr(%s, %s) kept changing size (ERANGE ten times in a row)", path,
		     name);
	return NULL;
}

uint64_t stats_key(const char *stats, const char *key)
{
	size_t klen = strlen(key);

	for (const char *l = stats; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, klen) == 0 && l[klen] == '=')
			return strtoull(l + klen + 1, NULL, 10);
	ck_abort_msg("user.volatile.stats has no %s line:\n%s", key, stats);
	return 0;
}

uint64_t mount_stat(const char *path, const char *key)
{
	char *stats = xattr_get(path, "user.volatile.stats");
	uint64_t v = stats_key(stats, key);

	free(stats);
	return v;
}

/* ---------------------------------------------------------------------------------------- */
/* Data                                                                                     */

/* Big files are written this much at a time. */
#define WRITE_CHUNK (4u << 20)

uint8_t pattern_byte(uint64_t off, unsigned seed)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;

	x ^= x >> 29;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 32;
	return (uint8_t)(x % 255 + 1);
}

void pattern_fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern_byte(off + i, seed);
}

void pattern_write(int fd, uint64_t off, size_t len, unsigned seed)
{
	size_t cap = len < WRITE_CHUNK ? len : WRITE_CHUNK;
	uint8_t *buf = xmalloc(cap);

	for (size_t done = 0; done < len; done += cap) {
		size_t n = len - done < cap ? len - done : cap;

		pattern_fill(buf, n, off + done, seed);
		pwrite_all(fd, buf, n, (off_t)(off + done));
	}
	free(buf);
}

void pattern_assert(const uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	size_t i = 0;

	while (i < len && buf[i] == pattern_byte(off + i, seed))
		i++;
	ck_assert_msg(i == len, "byte at file offset %" PRIu64 " is 0x%02x, expected 0x%02x",
		      off + i, buf[i], pattern_byte(off + i, seed));
}

void assert_zeros(const uint8_t *buf, size_t len, uint64_t off)
{
	size_t i = 0;

	while (i < len && buf[i] == 0)
		i++;
	ck_assert_msg(i == len, "byte at file offset %" PRIu64 " is 0x%02x, expected 0", off + i,
		      buf[i]);
}

void make_file_with(const char *path, const void *buf, size_t len)
{
	int fd = CHECK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));

	pwrite_all(fd, buf, len, 0);
	CHECK(close(fd));
}

int make_file_pattern(const char *path, size_t size, unsigned seed)
{
	int fd = CHECK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));

	pattern_write(fd, 0, size, seed);
	return fd;
}

int make_file_filled(const char *path, size_t size, int byte)
{
	size_t cap = size < WRITE_CHUNK ? size : WRITE_CHUNK;
	uint8_t *buf = xmalloc(cap);
	int fd = CHECK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));

	memset(buf, byte, cap);
	for (size_t done = 0; done < size; done += cap)
		pwrite_all(fd, buf, size - done < cap ? size - done : cap, (off_t)done);
	free(buf);
	return fd;
}

/* ---------------------------------------------------------------------------------------- */
/* Time                                                                                     */

void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------------------------------- */
/* The run directory and each test's directory                                              */

void rm_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	/* Another pass when entries came or showed up late (a readdir racing a creation). */
	for (int pass = 0; pass < 3; pass++) {
		rewinddir(d);
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
				rm_tree_at(dirfd(d), e->d_name);
			else
				unlinkat(dirfd(d), e->d_name, 0);
		}
		if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY)
			break;
	}
	closedir(d);
}

void rm_tree(const char *path)
{
	rm_tree_at(AT_FDCWD, path);
}

void mtest_setup(void)
{
	int n = snprintf(test_dir, sizeof(test_dir), "%s/t.XXXXXX", run_dir);

	ck_assert(n > 0 && (size_t)n < sizeof(test_dir));
	ck_assert_msg(mkdtemp(test_dir) != NULL, "mkdtemp(%s): %s", test_dir, errname(errno));
	CHECK(chmod(test_dir, 0755));
	CHECK(chdir(test_dir));
	umask(022);
}

void mtest_teardown(void)
{
	if (chdir(run_dir) == 0)
		rm_tree(test_dir);
}

/* ---------------------------------------------------------------------------------------- */
/* Another user                                                                             */

int mtest_as_user(uid_t uid, gid_t gid, int (*fn)(const void *arg), const void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
			_exit(MTEST_NO_USER);
		_exit(fn(arg));
	}
	while (waitpid(pid, &status, 0) != pid)
		if (errno != EINTR)
			return -1;
	return status;
}

/* ---------------------------------------------------------------------------------------- */
/* main()                                                                                   */

bool mtest_find_mount(const char *prog, char *mount_dir)
{
	const char *base = getenv("VFS_TEST_DIR");
	struct statfs sfs;

	if (base == NULL || *base == '\0') {
		fprintf(stderr, "%s: VFS_TEST_DIR is not set; set it to a mounted volatilefs, "
				"e.g. VFS_TEST_DIR=/tmp/volatilefs\n", prog);
		return false;
	}
	if (statfs(base, &sfs) != 0 || sfs.f_type != FUSE_SUPER_MAGIC) {
		fprintf(stderr, "%s: VFS_TEST_DIR=%s is not a FUSE mount\n", prog, base);
		return false;
	}
	if (!realpath(base, mount_dir)) {
		fprintf(stderr, "%s: %s: %s\n", prog, base, strerror(errno));
		return false;
	}
	return true;
}

bool mtest_make_run_dir(const char *prog, const char *dir)
{
	int n = snprintf(run_dir, sizeof(run_dir), "%s/%s.XXXXXX", dir, prog);

	/* Room for the tests' own names below it. */
	if (n < 0 || (size_t)n >= sizeof(run_dir) - 64 || mkdtemp(run_dir) == NULL ||
	    chmod(run_dir, 0755) != 0) {
		fprintf(stderr, "%s: cannot make a directory in %s: %s\n", prog, dir,
			strerror(errno));
		return false;
	}
	return true;
}

TCase *mtest_tcase(Suite *s, const char *name, SFun setup, SFun teardown, double timeout)
{
	TCase *tc = tcase_create(name);

	if (setup || teardown)
		tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

int mtest_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	rm_tree(run_dir);
	return failed == 0 ? 0 : 1;
}

uint64_t mtest_vmrss_kib(pid_t pid)
{
	char path[64], line[256];
	uint64_t kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %" SCNu64, &kib) == 1)
			break;
	fclose(f);
	return kib;
}
