/*
 * markbench - the cost of marking and unmarking (bench/, run by contrib/bench.sh).
 *
 *   markbench pairs FILE SECONDS
 *       On volatilefs: mark+unmark pairs of one 4 KiB page per second,
 *       through the ioctls (libvolatilefs) and through fsetxattr of
 *       user.volatile.mark / user.volatile.unmark, and the rate of a no-op
 *       FUSE round trip on the same file (see noop).  Each runs SECONDS.
 *       Also the rate of an ioctl that the daemon refuses at once (a mark
 *       with its reserved field set: EINVAL), the floor for one ioctl.
 *       Prints "ioctl_pairs_per_s", "xattr_pairs_per_s", "noop_per_s",
 *       "ioctl_noop_per_s",
 *       "ioctl_pair_in_noops" and "xattr_pair_in_noops" (a pair's time in
 *       no-op round trips: 2 would mean each call costs no more than a
 *       round trip that does nothing).
 *
 *   markbench noop FILE SECONDS
 *       Only the no-op: fgetxattr of a user.* name that no file has
 *       ("user.bench.noop") on an open file.  The kernel caches no xattrs,
 *       so on FUSE every call reaches the daemon, which answers ENODATA
 *       (volatilefs without taking a lock).  On tmpfs it is an in-kernel
 *       lookup.  Prints "noop_per_s".
 *
 *   markbench scale FILE MOUNTROOT NUNITS SAMPLE DAEMON_PID
 *       NUNITS units of one 4 KiB page each, with a one-page gap between
 *       them, in FILE (sparse: the cost of the bookkeeping, not of moving
 *       data), built with batched fsetxattr(user.volatile.mark).  Then, at
 *       that size, SAMPLE units at random are each unmarked and marked again
 *       with the ioctls (timed separately), and finally every unit is purged
 *       with user.volatile.purge=all on MOUNTROOT.  Prints "build_ns",
 *       "unmark_ns", "mark_ns" (per call), "purge_ns" (per unit) and
 *       "bytes_per_unit" (growth of the daemon's VmRSS while building).
 */
#include <sys/stat.h>
#include <sys/xattr.h>

#include "bench.h"
#include "volatilefs.h"

#define PG 4096u

static int open_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	char buf[PG];

	if (fd < 0)
		die("open %s:", path);
	fill_pattern(buf, sizeof(buf), 1);
	for (int i = 0; i < 16; i++)
		if (write_all(fd, buf, sizeof(buf), (off_t)i * PG) != 0)
			die("write %s:", path);
	return fd;
}

/* Calls per second of op(fd) over about secs seconds. */
static double rate(int fd, double secs, void (*op)(int, const char *), const char *path)
{
	double t0 = now_s(), t;
	unsigned long n = 0;

	op(fd, path); /* warm up */
	do {
		for (int i = 0; i < 64; i++)
			op(fd, path);
		n += 64;
		t = now_s() - t0;
	} while (t < secs);
	return n / t;
}

static void op_ioctl_pair(int fd, const char *path)
{
	uint64_t bytes;
	int purged;

	if (volatilefs_mark(fd, 0, PG, 0) != 0)
		die("volatilefs_mark %s:", path);
	if (volatilefs_unmark(fd, 0, PG, &bytes, &purged) != 0)
		die("volatilefs_unmark %s:", path);
	if (bytes != PG)
		die("volatilefs_unmark %s: %llu bytes, expected %u", path,
		    (unsigned long long)bytes, PG);
}

static void op_xattr_pair(int fd, const char *path)
{
	if (fsetxattr(fd, "user.volatile.mark", "0:4096", 6, 0) != 0)
		die("setxattr user.volatile.mark %s:", path);
	if (fsetxattr(fd, "user.volatile.unmark", "0:4096", 6, 0) != 0)
		die("setxattr user.volatile.unmark %s:", path);
}

static void op_noop(int fd, const char *path)
{
	char buf[64];

	if (fgetxattr(fd, "user.bench.noop", buf, sizeof(buf)) >= 0 || errno != ENODATA)
		die("getxattr user.bench.noop %s: expected ENODATA:", path);
}

/* An ioctl the daemon refuses at once (reserved field set: EINVAL), the
 * floor for one ioctl round trip. */
static void op_ioctl_noop(int fd, const char *path)
{
	struct volatilefs_mark_arg a = { .offset = 0, .length = PG, .flags = 0, .reserved = 1 };

	if (ioctl(fd, VOLATILEFS_IOC_MARK, &a) == 0 || errno != EINVAL)
		die("ioctl MARK with reserved=1 %s: expected EINVAL:", path);
}

static int pairs(const char *path, double secs, int only_noop)
{
	int fd = open_file(path);
	double noop, inoop, ip, xp;

	if (only_noop) {
		printf("noop_per_s %.1f\n", rate(fd, secs, op_noop, path));
		close(fd);
		unlink(path);
		return 0;
	}
	noop = rate(fd, secs, op_noop, path);
	inoop = rate(fd, secs, op_ioctl_noop, path);
	ip = rate(fd, secs, op_ioctl_pair, path);
	xp = rate(fd, secs, op_xattr_pair, path);
	printf("ioctl_pairs_per_s %.1f\nxattr_pairs_per_s %.1f\nnoop_per_s %.1f\n", ip, xp, noop);
	printf("ioctl_noop_per_s %.1f\n", inoop);
	printf("ioctl_pair_in_noops %.2f\nxattr_pair_in_noops %.2f\n", noop / ip, noop / xp);
	close(fd);
	unlink(path);
	return 0;
}

/* The value of key in the mount's user.volatile.stats, or -1. */
static long long stat_of(const char *root, const char *key)
{
	char buf[4096], *p;
	ssize_t n = getxattr(root, "user.volatile.stats", buf, sizeof(buf) - 1);
	size_t kl = strlen(key);

	if (n < 0)
		die("getxattr user.volatile.stats %s:", root);
	buf[n] = '\0';
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == '=')
			return atoll(p + kl + 1);
	return -1;
}

static int scale(const char *path, const char *root, unsigned long n, unsigned long sample,
		 pid_t pid)
{
	static char val[60000];
	unsigned long *idx;
	double t0, tb, tu = 0, tm = 0, tp;
	uint64_t rss0, rss1, seed = 12345;
	long long units0, purges0;
	size_t len = 0;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("open %s:", path);
	if (ftruncate(fd, (off_t)(2 * n * PG)) != 0)
		die("ftruncate %s:", path);
	units0 = stat_of(root, "volatile_units");
	purges0 = stat_of(root, "purges_total");
	rss0 = vmrss_of(pid);

	t0 = now_s();
	for (unsigned long i = 0; i < n; i++) {
		len += (size_t)snprintf(val + len, sizeof(val) - len, "%lu:4096 ", 2 * i * PG);
		if (len > sizeof(val) - 64 || i == n - 1) {
			if (fsetxattr(fd, "user.volatile.mark", val, len, 0) != 0)
				die("setxattr user.volatile.mark %s (%zu bytes):", path, len);
			len = 0;
		}
	}
	tb = now_s() - t0;
	if (stat_of(root, "volatile_units") - units0 != (long long)n)
		die("scale: %lld units after marking %lu", stat_of(root, "volatile_units") - units0,
		    n);
	rss1 = vmrss_of(pid);

	if (sample > n)
		sample = n;
	idx = malloc(sizeof(*idx) * n);
	if (!idx)
		die("out of memory");
	for (unsigned long i = 0; i < n; i++)
		idx[i] = i;
	for (unsigned long i = 0; i < sample; i++) {
		unsigned long j = i + rnd_next(&seed) % (n - i), tmp = idx[i];

		idx[i] = idx[j];
		idx[j] = tmp;
	}
	for (unsigned long i = 0; i < sample; i++) {
		uint64_t off = 2 * idx[i] * PG, bytes;
		double a, b, c;
		int purged;

		a = now_s();
		if (volatilefs_unmark(fd, off, PG, &bytes, &purged) != 0)
			die("volatilefs_unmark %s:", path);
		b = now_s();
		if (volatilefs_mark(fd, off, PG, 0) != 0)
			die("volatilefs_mark %s:", path);
		c = now_s();
		if (bytes != PG)
			die("volatilefs_unmark %s: %llu bytes at %llu", path,
			    (unsigned long long)bytes, (unsigned long long)off);
		tu += b - a;
		tm += c - b;
	}

	t0 = now_s();
	if (setxattr(root, "user.volatile.purge", "all", 3, 0) != 0)
		die("setxattr user.volatile.purge %s:", root);
	tp = now_s() - t0;
	if (stat_of(root, "purges_total") - purges0 < (long long)n)
		die("scale: %lld purges for %lu units", stat_of(root, "purges_total") - purges0, n);

	printf("build_ns %.1f\n", tb * 1e9 / n);
	printf("unmark_ns %.1f\n", tu * 1e9 / sample);
	printf("mark_ns %.1f\n", tm * 1e9 / sample);
	printf("purge_ns %.1f\n", tp * 1e9 / n);
	printf("bytes_per_unit %.1f\n", rss1 > rss0 ? (double)(rss1 - rss0) / n : 0.0);
	free(idx);
	close(fd);
	if (unlink(path) != 0)
		die("unlink %s:", path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "pairs") == 0)
		return pairs(argv[2], atof(argv[3]), 0);
	if (argc == 4 && strcmp(argv[1], "noop") == 0)
		return pairs(argv[2], atof(argv[3]), 1);
	if (argc == 7 && strcmp(argv[1], "scale") == 0)
		return scale(argv[2], argv[3], strtoul(argv[4], NULL, 0),
			     strtoul(argv[5], NULL, 0), (pid_t)atoi(argv[6]));
	fprintf(stderr, "usage: markbench pairs FILE SECONDS\n"
			"       markbench noop FILE SECONDS\n"
			"       markbench scale FILE MOUNTROOT NUNITS SAMPLE DAEMON_PID\n");
	return 2;
}
