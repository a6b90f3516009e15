/*
 * nohang.c - a mount never hangs, and the memory limit has no side door
 * (DESIGN sections 3, 8 and 9).  Run by with-mount.sh on a mount with
 * -o allow_other,auto=unlink (the root is a cache directory; "plain"
 * directories set auto=off) and a small memory_limit.
 *
 * Every call that could block goes through a watchdog: the workers write
 * what they are doing and since when into a shared page, and the test
 * process checks it every 100 ms.  A call older than WATCHDOG_S fails the
 * test: it prints the call, the daemon's thread stacks
 * (/proc/PID/task/ * /stack) and the caller's, aborts the FUSE connection
 * so that nothing is left hanging, and kills the workers.
 *
 * Cases:
 *   user_unmark_under_pressure  as uid 65534, unmark (setxattr) files of its own
 *                               auto=unlink directory while a plain writer's data
 *                               makes the daemon purge them (the reply parked behind
 *                               the name deletion, which needs the file's i_rwsem
 *                               that the SETXATTR holds, hung 4 runs of 4);
 *   root_purge_auto_unlink_root user.volatile.purge all on the root (whose i_rwsem
 *                               the SETXATTR holds) with files directly in it;
 *   file_purge_unlinks          a per-file purge removes the name (setfattr, and an
 *                               open descriptor reading on);
 *   sparse_unit_purge_bounded   units that hold no memory, marked until ENOSPC, then
 *                               purged: RSS never over limit + max(1%, 4 MiB);
 *   rename_longer_bounded       a full mount's files renamed to 255-byte names: the
 *                               same bound, and ENOSPC once it would be passed;
 *   random_mix                  every kind of request from several processes on
 *                               auto=unlink and plain directories, with pressure and
 *                               root purges running.
 * VFS_NOHANG_SECONDS sets the length of the timed cases (default 6);
 * VFS_NOHANG_CASES="name ..." runs only those cases (by hand).
 */
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mtest.h"
#include "volatilefs.h"

#define WATCHDOG_S 10.0
#define MAXW 8

static char mnt[PATH_MAX];
static pid_t daemon_pid;
static double run_s = 6;

/* ---- the watchdog ---- */

struct slot {
	_Atomic double since; /* 0: idle */
	pid_t pid;
	char what[96];
};

static struct slot *slots; /* MAXW of them, shared with the workers */
static int my_slot = -1;

static void op_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void op_begin(const char *fmt, ...)
{
	va_list ap;
	struct slot *s = &slots[my_slot];

	va_start(ap, fmt);
	vsnprintf(s->what, sizeof(s->what), fmt, ap);
	va_end(ap);
	atomic_store(&s->since, now_s());
}

static void op_end(void)
{
	atomic_store(&slots[my_slot].since, 0);
}

static void dump_file(const char *path)
{
	char buf[4096];
	ssize_t got;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)got, stderr);
	close(fd);
}

static void dump_stacks(pid_t pid)
{
	char pat[64];
	glob_t g;

	snprintf(pat, sizeof(pat), "/proc/%d/task/*", (int)pid);
	if (glob(pat, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char p[PATH_MAX];

		fprintf(stderr, "--- %s ", g.gl_pathv[i]);
		snprintf(p, sizeof(p), "%s/comm", g.gl_pathv[i]);
		dump_file(p);
		snprintf(p, sizeof(p), "%s/stack", g.gl_pathv[i]);
		dump_file(p);
	}
	globfree(&g);
}

/*
 * Abort the connection of the mount: every waiter gets ENOTCONN.  Through
 * fusectl (mounted here if it is not), else umount -f, which aborts a
 * FUSE connection too.
 */
static void abort_mount(void)
{
	struct stat st;
	char p[64];
	int fd;

	if (stat(mnt, &st) != 0)
		return;
	snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%u/abort", minor(st.st_dev));
	fd = open(p, O_WRONLY);
	if (fd < 0 && mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL) == 0)
		fd = open(p, O_WRONLY);
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		close(fd);
	} else {
		(void)umount2(mnt, MNT_FORCE);
	}
}

static pid_t kids[MAXW];
static int nkids;

static void kill_kids(void)
{
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	nkids = 0;
}

/* Fork a worker on its own slot, as uid (0: stay root). */
static void spawn(uid_t uid, void (*fn)(int), int arg)
{
	int k = nkids;
	pid_t pid;

	ck_assert_int_lt(k, MAXW);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		my_slot = k;
		slots[k].pid = getpid();
		if (uid && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
			_exit(MTEST_NO_USER);
		fn(arg);
		_exit(0);
	}
	kids[nkids++] = pid;
}

/* Wait for every worker, watching them; fail on a stuck call or a failed worker. */
static void watch(void)
{
	int left = nkids, status[MAXW];
	bool done[MAXW] = { false };

	while (left > 0) {
		for (int i = 0; i < nkids; i++) {
			double since = atomic_load(&slots[i].since);

			if (!done[i] && since > 0 && now_s() - since > WATCHDOG_S) {
				fprintf(stderr, "nohang: worker %d stuck for %.0f s in: %s\n", i,
					now_s() - since, slots[i].what);
				fprintf(stderr, "nohang: the worker's stack:\n");
				dump_stacks(slots[i].pid);
				fprintf(stderr, "nohang: the daemon's threads:\n");
				dump_stacks(daemon_pid);
				abort_mount();
				kill_kids();
				ck_abort_msg("a request took more than %.0f s: %s", WATCHDOG_S,
					     slots[i].what);
			}
			if (!done[i] && waitpid(kids[i], &status[i], WNOHANG) == kids[i]) {
				done[i] = true;
				left--;
			}
		}
		nap_ms(100);
	}
	for (int i = 0; i < nkids; i++)
		ck_assert_msg(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0,
			      "worker %d failed (status 0x%x)", i, status[i]);
	nkids = 0;
}

static void setup(void)
{
	mtest_setup();
	memset(slots, 0, MAXW * sizeof(*slots));
	nkids = 0;
}

static void teardown(void)
{
	kill_kids();
	mtest_teardown();
}

/* A worker's failure: print it and exit non-zero (the test fails in watch()). */
#define WFAIL(...) do { fprintf(stderr, "nohang: " __VA_ARGS__); fputc('\n', stderr); \
			_exit(1); } while (0)

static void write_file(const char *path, size_t size, bool must)
{
	static char buf[1 << 16];
	int fd;

	memset(buf, 0x6b, sizeof(buf));
	op_begin("create %s", path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	op_end();
	if (fd < 0) {
		if (must)
			WFAIL("create %s: %s", path, errname(errno));
		return;
	}
	for (size_t off = 0; off < size; off += sizeof(buf)) {
		size_t len = size - off < sizeof(buf) ? size - off : sizeof(buf);

		op_begin("write %s at %zu", path, off);
		if (pwrite(fd, buf, len, (off_t)off) < 0 && must)
			WFAIL("write %s: %s", path, errname(errno));
		op_end();
	}
	op_begin("close %s", path);
	close(fd);
	op_end();
}

/* ---- case 1 ---- */

#define UFILES 16
#define USIZE (1u << 20)

static void cache_files(int set)
{
	char path[64];

	for (int i = 0; i < UFILES; i++) {
		snprintf(path, sizeof(path), "cache/s%d-f%d", set, i);
		write_file(path, USIZE, true);
	}
}

static void unmarker(int set)
{
	char path[64];

	for (double end = now_s() + 2 * run_s; now_s() < end;) {
		for (int i = 0; i < UFILES; i++) {
			int r;

			snprintf(path, sizeof(path), "cache/s%d-f%d", set, i);
			op_begin("setxattr %s user.volatile.unmark all", path);
			r = setxattr(path, "user.volatile.unmark", "all", 3, 0);
			op_end();
			/* ENOSPC: the writer filled the mount, and there was
			 * no room for the units an unmark may split. */
			if (r != 0 && errno != ENOENT && errno != ENOSPC && errno != ENOMEM)
				WFAIL("unmark %s: %s", path, errname(errno));
			if (r != 0) {
				if (errno == ENOENT) /* purged and gone: again */
					write_file(path, USIZE, false);
				continue;
			}
			op_begin("setxattr %s user.volatile.mark all", path);
			r = setxattr(path, "user.volatile.mark", "all", 3, 0);
			op_end();
			if (r != 0 && errno != ENOENT && errno != ENOSPC && errno != ENOMEM)
				WFAIL("mark %s: %s", path, errname(errno));
		}
	}
}

/* Non-volatile data written and deleted in turn: the daemon must purge. */
static void pressure_writer(int mib)
{
	for (double end = now_s() + 2 * run_s; now_s() < end;) {
		write_file("plain/big", (size_t)mib << 20, false);
		op_begin("unlink plain/big");
		unlink("plain/big");
		op_end();
	}
}

/* num/den of the memory limit, in MiB: what a pressure writer writes. */
static int writer_mib(int num, int den)
{
	return (int)(mount_stat(mnt, "memory_limit") / (uint64_t)den * (uint64_t)num >> 20);
}

static void make_dirs(uid_t owner)
{
	CHECK(mkdir("cache", 0755));
	CHECK(mkdir("plain", 0755));
	CHECK(setxattr("plain", "user.volatile.auto", "off", 3, 0));
	CHECK(chown("cache", owner, owner));
	CHECK(chown("plain", owner, owner));
	CHECK(chmod(".", 0777));
}

START_TEST(user_unmark_under_pressure)
{
	uint64_t purges = mount_stat(mnt, "purges_total");

	make_dirs(NOBODY);
	for (int set = 0; set < 3; set++)
		spawn(NOBODY, cache_files, set);
	watch();
	/* Three of them, twice as long as the other cases: with one for
	 * 6 s, 2 runs of 4 hung before the fix. */
	for (int set = 0; set < 3; set++)
		spawn(NOBODY, unmarker, set);
	spawn(NOBODY, pressure_writer, writer_mib(1, 1));
	watch();
	/* The case is only a case if purges happened while it ran. */
	ck_assert_uint_gt(mount_stat(mnt, "purges_total"), purges);
	rm_tree("cache");
}
END_TEST

/* ---- case 2 ---- */

static void root_purger(int rounds)
{
	char path[PATH_MAX + 32];

	for (int r = 0; r < rounds; r++) {
		snprintf(path, sizeof(path), "%s/nohang-root-%d", mnt, r);
		write_file(path, 64 << 10, true);
		op_begin("setxattr %s user.volatile.purge all", mnt);
		if (setxattr(mnt, "user.volatile.purge", "all", 3, 0) != 0)
			WFAIL("purge all: %s", errname(errno));
		op_end();
		/* Gone at once for every opener, unless it was skipped: the
		 * kernel's RELEASE of our close may come after the purge,
		 * and an open file keeps its data and name (DESIGN 8). */
		op_begin("open %s after the purge", path);
		int fd = open(path, O_RDONLY);
		if (fd < 0 && errno != ENOENT)
			WFAIL("open %s after the purge: %s", path, errname(errno));
		if (fd >= 0) {
			char ranges[256];
			ssize_t len = fgetxattr(fd, "user.volatile.ranges", ranges,
						sizeof(ranges) - 1);

			ranges[len > 0 ? len : 0] = 0;
			if (strstr(ranges, "purged"))
				WFAIL("%s was purged and still opens: %s", path, ranges);
			close(fd);
			unlink(path);
		}
		op_end();
		op_begin("readdir %s", mnt);
		DIR *d = opendir(mnt);
		if (!d)
			WFAIL("opendir %s: %s", mnt, errname(errno));
		while (readdir(d))
			;
		closedir(d);
		op_end();
	}
}

START_TEST(root_purge_auto_unlink_root)
{
	spawn(0, root_purger, 20);
	watch();
}
END_TEST

/* ---- case 3 ---- */

START_TEST(file_purge_unlinks)
{
	uint64_t unlinked;
	char buf[16];
	int fd, st;

	CHECK(mkdir("cache", 0755));
	my_slot = 0;
	write_file("cache/a", 12, true);
	write_file("cache/b", 12, true);
	unlinked = mount_stat(mnt, "files_unlinked_total");
	st = system("setfattr -n user.volatile.purge -v all cache/a");
	ck_assert_msg(st == 0, "setfattr purge failed (status %d)", st);
	ASSERT_ERRNO(open("cache/a", O_RDONLY), ENOENT);
	ck_assert_uint_eq(mount_stat(mnt, "files_unlinked_total"), unlinked + 1);
	/* Open while purged by name: the name goes, the descriptor reads purged data. */
	fd = CHECK(open("cache/b", O_RDONLY));
	CHECK(setxattr("cache/b", "user.volatile.purge", "all", 3, 0));
	ASSERT_ERRNO(open("cache/b", O_RDONLY), ENOENT);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 12);
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(buf[i], 0);
	close(fd);
	ck_assert_uint_eq(mount_stat(mnt, "files_unlinked_total"), unlinked + 2);
}
END_TEST

/* ---- cases 4a and 4b: sampled RSS against the bound ---- */

static uint64_t daemon_rss_kib(void)
{
	return mtest_vmrss_kib(daemon_pid);
}

static _Atomic uint64_t peak_kib;
static _Atomic bool sampling;

static void *sampler(void *arg)
{
	(void)arg;
	while (atomic_load(&sampling)) {
		uint64_t k = daemon_rss_kib();

		if (k > atomic_load(&peak_kib))
			atomic_store(&peak_kib, k);
		nap_ms(2);
	}
	return NULL;
}

static pthread_t sampler_thread;

static void sample_start(void)
{
	atomic_store(&peak_kib, daemon_rss_kib());
	atomic_store(&sampling, true);
	ck_assert_int_eq(pthread_create(&sampler_thread, NULL, sampler, NULL), 0);
}

/*
 * Stop sampling; fail when the peak passed limit + max(1%, 4 MiB).  A
 * sanitizer build's daemon carries its runtime's memory on top (freed
 * blocks held in ASan's quarantine, shadow memory): VFS_NOHANG_EXTRA_MB,
 * set by meson for those builds, adds that allowance.
 */
static void sample_check(const char *what)
{
	uint64_t limit = mount_stat(mnt, "memory_limit"), slack = limit / 100;
	const char *extra = getenv("VFS_NOHANG_EXTRA_MB");

	atomic_store(&sampling, false);
	pthread_join(sampler_thread, NULL);
	if (slack < (4u << 20))
		slack = 4u << 20;
	if (extra)
		slack += (uint64_t)atoi(extra) << 20;
	printf("nohang: %s: peak RSS %" PRIu64 " KiB, limit %" PRIu64 " KiB, allowed %" PRIu64
	       " KiB over\n", what, atomic_load(&peak_kib), limit >> 10, slack >> 10);
	ck_assert_msg(atomic_load(&peak_kib) * 1024 <= limit + slack,
		      "%s: the daemon's RSS reached %" PRIu64 " KiB, over the limit %" PRIu64
		      " KiB + %" PRIu64 " KiB", what, atomic_load(&peak_kib), limit >> 10,
		      slack >> 10);
}

/*
 * Fill the mount with non-volatile data until `room` bytes are left under
 * the limit.  Says whether it made plain/filler: a daemon whose RSS is
 * already within `room` of the limit (the heap an earlier case freed, not
 * yet handed back) needs none.
 */
static bool fill_leaving(uint64_t room)
{
	uint64_t limit = mount_stat(mnt, "memory_limit"), rss = mount_stat(mnt, "rss");

	if (rss + room >= limit)
		return false;
	write_file("plain/filler", (size_t)(limit - rss - room), true);
	return true;
}

START_TEST(sparse_unit_purge_bounded)
{
	static char val[60000];
	uint64_t units = 0, off = 0;
	int fd, r = 0;
	bool filled;

	my_slot = 0;
	make_dirs(0);
	filled = fill_leaving(24u << 20);
	fd = CHECK(open("plain/sparse", O_RDWR | O_CREAT, 0644));
	CHECK(ftruncate(fd, (off_t)1 << 40));
	sample_start();
	/* Separated 4 KiB units, thousands a call, until the limit refuses them. */
	while (r == 0 && units < 4000000) {
		size_t len = 0;

		while (len + 40 < sizeof(val)) {
			len += (size_t)snprintf(val + len, sizeof(val) - len, "%" PRIu64 ":4K ", off);
			off += 8192;
			units++;
		}
		r = fsetxattr(fd, "user.volatile.mark", val, len, 0);
	}
	ck_assert_msg(r != 0 && (errno == ENOSPC || errno == ENOMEM),
		      "marks never ran out of room (%" PRIu64 " units): %s", units, errname(errno));
	/* Each purged unit would add an extent to the purged set. */
	r = fsetxattr(fd, "user.volatile.purge", "all", 3, 0);
	ck_assert_msg(r == 0 || errno == ENOMEM || errno == ENOSPC, "purge all: %s",
		      errname(errno));
	nap_ms(300); /* the monitor's next look at the kernel's figure */
	sample_check("marks then a purge of units that hold no memory");
	close(fd);
	CHECK(unlink("plain/sparse"));
	if (filled)
		CHECK(unlink("plain/filler"));
}
END_TEST

START_TEST(rename_longer_bounded)
{
	char name[300], longname[300];
	int n = 0, failed = 0;
	bool filled;

	my_slot = 0;
	make_dirs(0);
	filled = fill_leaving(40u << 20);
	CHECK(mkdir("plain/many", 0755));
	sample_start();
	for (;; n++) {
		int fd;

		snprintf(name, sizeof(name), "plain/many/%d", n);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			ck_assert_msg(errno == ENOSPC || errno == ENOMEM, "create %s: %s", name,
				      errname(errno));
			break;
		}
		close(fd);
	}
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "plain/many/%d", i);
		snprintf(longname, sizeof(longname), "plain/many/%0255d", i);
		if (rename(name, longname) != 0) {
			ck_assert_msg(errno == ENOSPC, "rename %s: %s", name, errname(errno));
			failed++;
		}
	}
	sample_check("renames to 255-byte names on a full mount");
	/* So many names cost more than the allowance: some must have failed. */
	if ((uint64_t)n * 250 > (8u << 20))
		ck_assert_msg(failed > 0, "all %d renames to longer names succeeded on a full mount",
			      n);
	rm_tree("plain/many");
	if (filled)
		CHECK(unlink("plain/filler"));
}
END_TEST

/* ---- the random mix ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Another worker may truncate a file under our mapping: SIGBUS is fair. */
static sigjmp_buf bus_jump;

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jump, 1);
}

static void mixer(int w)
{
	static const char *dirs[] = { "cache", "plain" };
	char path[64], path2[64], buf[8192];

	signal(SIGBUS, on_bus);
	rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(w + 1);
	memset(buf, 0x33, sizeof(buf));
	for (double end = now_s() + run_s; now_s() < end;) {
		const char *d = dirs[rnd() % 2];
		int op = (int)(rnd() % 14), fd;
		uint64_t bytes;
		int purged;
		void *m;

		snprintf(path, sizeof(path), "%s/m%d", d, (int)(rnd() % 12));
		snprintf(path2, sizeof(path2), "%s/m%d", dirs[rnd() % 2], (int)(rnd() % 12));
		switch (op) {
		case 0:
			write_file(path, 1 + rnd() % (256 << 10), false);
			break;
		case 1:
			op_begin("setxattr %s mark", path);
			(void)setxattr(path, "user.volatile.mark", "0:0 priority=2", 14, 0);
			break;
		case 2:
			op_begin("setxattr %s unmark", path);
			(void)setxattr(path, "user.volatile.unmark", "all", 3, 0);
			break;
		case 3:
			op_begin("getxattr %s purged", path);
			(void)getxattr(path, "user.volatile.purged", buf, sizeof(buf));
			break;
		case 4:
			op_begin("getxattr %s ranges", path);
			(void)getxattr(path, "user.volatile.ranges", buf, sizeof(buf));
			break;
		case 5:
			op_begin("removexattr %s purged", path);
			(void)removexattr(path, "user.volatile.purged");
			break;
		case 6:
			op_begin("setxattr %s purge all", path);
			(void)setxattr(path, "user.volatile.purge", "all", 3, 0);
			break;
		case 7:
			op_begin("rename %s %s", path, path2);
			(void)renameat2(AT_FDCWD, path, AT_FDCWD, path2,
					rnd() % 2 ? RENAME_EXCHANGE : 0);
			break;
		case 8:
			op_begin("unlink %s", path);
			(void)unlink(path);
			break;
		case 9:
			op_begin("truncate %s", path);
			(void)truncate(path, (off_t)(rnd() % (128 << 10)));
			break;
		case 10:
		case 11:
			op_begin("open %s for ioctls", path);
			fd = open(path, O_RDWR);
			if (fd < 0)
				break;
			op_begin("ioctls on %s", path);
			(void)volatilefs_mark(fd, 0, 0, VOLATILEFS_PRIORITY(1));
			(void)volatilefs_unmark(fd, 0, 0, &bytes, &purged);
			op_begin("read %s", path);
			(void)pread(fd, buf, sizeof(buf), (off_t)(rnd() % (64 << 10)));
			op_begin("mmap %s", path);
			m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m != MAP_FAILED) {
				struct stat st;

				if (fstat(fd, &st) == 0 && st.st_size >= 4096 &&
				    sigsetjmp(bus_jump, 1) == 0) {
					volatile char c = ((char *)m)[0];

					(void)c;
					if (op == 11)
						((char *)m)[1] = 'w';
				}
				munmap(m, 1 << 16);
			}
			op_begin("close %s", path);
			close(fd);
			break;
		case 12:
			op_begin("stat %s", path);
			(void)access(path, F_OK);
			break;
		default:
			op_begin("readdir %s", d);
			DIR *dp = opendir(d);
			if (dp) {
				while (readdir(dp))
					;
				closedir(dp);
			}
			break;
		}
		op_end();
	}
}

static void root_purges(int ms)
{
	for (double end = now_s() + run_s; now_s() < end;) {
		op_begin("setxattr %s user.volatile.purge all", mnt);
		(void)setxattr(mnt, "user.volatile.purge", "all", 3, 0);
		op_end();
		nap_ms(ms);
	}
}

START_TEST(random_mix)
{
	make_dirs(NOBODY);
	for (int w = 0; w < 4; w++)
		spawn(w % 2 ? NOBODY : 0, mixer, w);
	spawn(NOBODY, pressure_writer, writer_mib(7, 8));
	spawn(0, root_purges, 150);
	watch();
	rm_tree("cache");
	rm_tree("plain");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nohang");
	const char *e = getenv("VFS_NOHANG_SECONDS");
	const char *pid = getenv("VFS_DAEMON_PID");
	const char *only = getenv("VFS_NOHANG_CASES"); /* names, for runs by hand */
	const struct { const char *name; const TTest *fn; } cases[] = {
		{ "root_purge_auto_unlink_root", root_purge_auto_unlink_root },
		{ "file_purge_unlinks", file_purge_unlinks },
		{ "user_unmark_under_pressure", user_unmark_under_pressure },
		{ "random_mix", random_mix },
		{ "sparse_unit_purge_bounded", sparse_unit_purge_bounded },
		{ "rename_longer_bounded", rename_longer_bounded },
	};
	TCase *tc;

	if (!mtest_find_mount("nohang", mnt) || !mtest_make_run_dir("nohang", mnt))
		return 1;
	if (!pid) {
		fprintf(stderr, "nohang: VFS_DAEMON_PID is not set (run under with-mount.sh)\n");
		return 1;
	}
	daemon_pid = (pid_t)atoi(pid);
	if (e && atof(e) > 0)
		run_s = atof(e);
	slots = mmap(NULL, MAXW * sizeof(*slots), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return 1;
	tc = mtest_tcase(s, "nohang", setup, teardown, 300);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!only || strstr(only, cases[i].name))
			tcase_add_test(tc, cases[i].fn);
	return mtest_run(s);
}
