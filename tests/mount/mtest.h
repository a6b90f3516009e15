/*
 * mtest: what the mount-test programs share, linked into each as a static library.
 *
 *   errors      errname(), and the assertions CHECK() (a call that must not return -1) and
 *               ASSERT_ERRNO() (a call that must fail with exactly this errno);
 *   I/O         xmalloc(), pwrite_all() and pread_all(), which fail the test on an error;
 *               xattr_get(), an attribute's value as a new string; stats_key() and
 *               mount_stat(), one figure of user.volatile.stats;
 *   data        the pattern (pattern_byte(), pattern_fill(), pattern_write(),
 *               pattern_assert()) and assert_zeros(); a new file by what it holds:
 *               make_file_with() (these bytes), make_file_pattern() (the pattern),
 *               make_file_filled() (one byte repeated);
 *   time        nap_ms(), now_s();
 *   fixture     run_dir (one per program run, made by mtest_make_run_dir() in main()) and
 *               test_dir (one per test inside it, made and entered by mtest_setup(), removed
 *               by mtest_teardown()); rm_tree_at() and rm_tree();
 *   other user  mtest_as_user(): a function run in a forked child as another uid and gid;
 *   main()      mtest_find_mount() (VFS_TEST_DIR must be a FUSE mount), mtest_tcase(), and
 *               mtest_run(), which runs the suite with every test forked (CK_FORK) and
 *               removes run_dir.
 *
 * The assertions are Check's (ck_assert_msg): they belong in a test, or in a fixture, not in
 * main().
 */
#ifndef MTEST_H
#define MTEST_H

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The user the tests drop to as "another user" (nobody). */
#define NOBODY 65534

/* statfs()'s f_type of a FUSE mount. */
#define FUSE_SUPER_MAGIC 0x65735546

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                   */

/* The errno's symbolic name ("ENOENT"), "no error" for 0. */
const char *errname(int e);

/* A call that must succeed (not return -1); evaluates to its result. */
#define CHECK(expr)                                                                 \
	({                                                                          \
		__typeof__(expr) r_ = (expr);                                       \
		ck_assert_msg(r_ != -1, "%s failed: %s", #expr, errname(errno));    \
		r_;                                                                 \
	})

/* A call that must fail with exactly this errno. */
#define ASSERT_ERRNO(expr, err)                                                     \
	do {                                                                        \
		errno = 0;                                                          \
		long r_ = (long)(expr);                                             \
		int e_ = errno;                                                     \
		ck_assert_msg(r_ == -1 && e_ == (err), "%s: expected -1 (%s), got %ld (%s)", \
			      #expr, errname(err), r_, r_ == -1 ? errname(e_) : "success"); \
	} while (0)

/* ---------------------------------------------------------------------------------------- */
/* I/O                                                                                      */

/* malloc that fails the test when out of memory; len 0 gives a valid pointer too. */
void *xmalloc(size_t len);

/* Writes all len bytes at off, or fails the test. */
void pwrite_all(int fd, const void *buf, size_t len, off_t off);

/* Reads up to len bytes at off, stopping early only at end of file; returns the count. */
size_t pread_all(int fd, void *buf, size_t len, off_t off);

/* The value of an extended attribute as a NUL-terminated string (free it); fails the test
 * on an error. */
char *xattr_get(const char *path, const char *name);
/* The figure of "key=N" in stats (user.volatile.stats's value); fails the test without it. */
uint64_t stats_key(const char *stats, const char *key);
/* The figure of key in user.volatile.stats read from path (the mount's root, or any path the
 * mount answers it on); fails the test without it. */
uint64_t mount_stat(const char *path, const char *key);

/* ---------------------------------------------------------------------------------------- */
/* Data                                                                                     */

/* The pattern's byte at file offset off: it depends on the offset and the seed without
 * repeating every 256 or 4096 bytes, so a byte that lands at the wrong offset shows, and is
 * never 0, so a purged (zeroed) byte shows. */
uint8_t pattern_byte(uint64_t off, unsigned seed);

/* Fills buf with the pattern of [off, off + len). */
void pattern_fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed);

/* Writes the pattern of [off, off + len) to fd at off, or fails the test. */
void pattern_write(int fd, uint64_t off, size_t len, unsigned seed);

/* Asserts buf holds the pattern of [off, off + len): one assertion, on the first byte that
 * differs, since each Check assertion writes to a pipe. */
void pattern_assert(const uint8_t *buf, size_t len, uint64_t off, unsigned seed);

/* Asserts buf holds only zeros (as a purged or never written range reads); buf is the
 * file's [off, off + len).  One assertion, on the first byte that differs. */
void assert_zeros(const uint8_t *buf, size_t len, uint64_t off);

/* Creates (or truncates) path, mode 0644, holding these len bytes, and closes it. */
void make_file_with(const char *path, const void *buf, size_t len);

/* Creates (or truncates) path, mode 0644, holding size bytes of the pattern; returns an
 * O_RDWR descriptor. */
int make_file_pattern(const char *path, size_t size, unsigned seed);

/* Creates (or truncates) path, mode 0644, holding size bytes that are all byte; returns an
 * O_RDWR descriptor. */
int make_file_filled(const char *path, size_t size, int byte);

/* ---------------------------------------------------------------------------------------- */
/* Time                                                                                     */

/* Sleeps ms milliseconds. */
void nap_ms(long ms);

/* Seconds on the monotonic clock. */
double now_s(void);

/* VmRSS of process pid in KiB, from /proc/PID/status; 0 when it cannot be read. */
uint64_t mtest_vmrss_kib(pid_t pid);

/* ---------------------------------------------------------------------------------------- */
/* The run directory and each test's directory                                              */

/* VFS_TEST_DIR/PROG.XXXXXX: set in main() before any test is forked; children inherit it. */
extern char run_dir[PATH_MAX];
/* This test's own directory inside run_dir, and the working directory while it runs. */
extern char test_dir[PATH_MAX];

/* Removes name under parent, however deep, without building full paths; ignores errors. */
void rm_tree_at(int parent, const char *name);

/* rm_tree_at(AT_FDCWD, path). */
void rm_tree(const char *path);

/* The checked fixture: makes test_dir in run_dir (mode 0755, so that another user can work
 * in it through relative names), makes it the working directory and sets umask 022. */
void mtest_setup(void);

/* Leaves test_dir and removes it. */
void mtest_teardown(void);

/* ---------------------------------------------------------------------------------------- */
/* Another user                                                                             */

/* The exit status of a child that could not drop to the user. */
#define MTEST_NO_USER 250

/*
 * Runs fn(arg) in a child process with this uid and gid and no supplementary groups, in the
 * current directory, and waits for it. The child exits with what fn returns (0 to 249), or
 * MTEST_NO_USER. Returns the child's wait status, or -1 with errno if fork or waitpid
 * failed. Asserts nothing, so main() may use it too.
 */
int mtest_as_user(uid_t uid, gid_t gid, int (*fn)(const void *arg), const void *arg);

/* ---------------------------------------------------------------------------------------- */
/* main()                                                                                   */

/*
 * Resolves VFS_TEST_DIR into mount_dir (PATH_MAX bytes). False, with a message on stderr
 * that starts with prog, when it is not set or not a FUSE mount.
 */
bool mtest_find_mount(const char *prog, char *mount_dir);

/* Makes run_dir, DIR/PROG.XXXXXX with mode 0755. False, with a message on stderr, if not. */
bool mtest_make_run_dir(const char *prog, const char *dir);

/* A test case of s with this timeout in seconds, and this checked fixture unless setup and
 * teardown are both NULL. */
TCase *mtest_tcase(Suite *s, const char *name, SFun setup, SFun teardown, double timeout);

/* Runs every test of s, each forked (CK_FORK), then removes run_dir; returns the exit
 * status for main(): 0 when no test failed, else 1. */
int mtest_run(Suite *s);

#endif
