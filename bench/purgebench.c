/*
 * purgebench - purging and the memory limit (bench/, run by contrib/bench.sh).
 *
 *   purgebench fill DIR SIZE NFILES UNIT
 *       Write SIZE bytes of data into NFILES files DIR/pNNN (1 MiB writes),
 *       and mark each file volatile in units of UNIT bytes (libvolatilefs,
 *       one call per unit).  Prints "filled BYTES" and "fill_mib_per_s".
 *
 *   purgebench purge MOUNTROOT DAEMON_PID BYTES
 *       Time setxattr(MOUNTROOT, user.volatile.purge, "all"), and read the
 *       daemon's VmRSS before and just after.  Prints "purge_s",
 *       "gib_per_s" (BYTES, the volatile data marked, over the time),
 *       "rss_before", "rss_after" (bytes) and "rss_fell 1|0" (whether RSS
 *       fell by at least half of BYTES).
 *
 *   purgebench limit MOUNTROOT DAEMON_PID NEWLIMIT
 *       Set user.volatile.memory_limit to NEWLIMIT while a thread polls the
 *       daemon's VmRSS every millisecond; report the time from the start
 *       of the setxattr until VmRSS is at or under NEWLIMIT.  Prints
 *       "under_ms", "setxattr_ms", "rss_before", "rss_after".
 *
 *   purgebench flood DIR TOTAL FILESIZE
 *       Create TOTAL/FILESIZE files, each marked volatile whole ("all",
 *       one unbounded unit, before it is written) and then written
 *       FILESIZE bytes in 1 MiB writes.  Prints "flood_mib_per_s" and
 *       "write_errors" (writes that failed, e.g. ENOSPC: should be 0).
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/xattr.h>

#include "bench.h"
#include "volatilefs.h"

#define CHUNK (1u << 20)

static int fill(const char *dir, uint64_t size, unsigned nfiles, uint64_t unit)
{
	uint64_t per = size / nfiles, done = 0;
	char *buf = malloc(CHUNK), path[4096];
	double t0 = now_s(), t;

	if (!buf)
		die("out of memory");
	fill_pattern(buf, CHUNK, 7);
	for (unsigned f = 0; f < nfiles; f++) {
		int fd;

		snprintf(path, sizeof(path), "%s/p%03u", dir, f);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("open %s:", path);
		for (uint64_t off = 0; off < per; off += CHUNK) {
			size_t len = per - off < CHUNK ? (size_t)(per - off) : CHUNK;

			buf[0] = (char)off; /* not all chunks the same */
			if (write_all(fd, buf, len, (off_t)off) != 0)
				die("write %s:", path);
			done += len;
		}
		for (uint64_t off = 0; off < per; off += unit)
			if (volatilefs_mark(fd, off, unit, 0) != 0)
				die("volatilefs_mark %s:", path);
		close(fd);
	}
	t = now_s() - t0;
	printf("filled %llu\nfill_mib_per_s %.1f\n", (unsigned long long)done,
	       done / 1048576.0 / t);
	free(buf);
	return 0;
}

static int purge(const char *root, pid_t pid, uint64_t bytes)
{
	uint64_t before = vmrss_of(pid), after;
	double t0 = now_s(), t;

	if (setxattr(root, "user.volatile.purge", "all", 3, 0) != 0)
		die("setxattr user.volatile.purge %s:", root);
	t = now_s() - t0;
	after = vmrss_of(pid);
	printf("purge_s %.6f\ngib_per_s %.3f\n", t, bytes / 1073741824.0 / t);
	printf("rss_before %llu\nrss_after %llu\n", (unsigned long long)before,
	       (unsigned long long)after);
	printf("rss_fell %d\n", after + bytes / 2 <= before);
	return 0;
}

static struct {
	pid_t pid;
	uint64_t limit;
	double t0;
	_Atomic int stop;
	double under; /* seconds after t0, or -1 */
} lim;

static void *poller(void *arg)
{
	(void)arg;
	lim.under = -1;
	while (!atomic_load(&lim.stop)) {
		uint64_t rss = vmrss_of(lim.pid);
		double t = now_s();

		if (rss && rss <= lim.limit) {
			lim.under = t - lim.t0;
			break;
		}
		if (t - lim.t0 > 30)
			break;
		usleep(1000);
	}
	return NULL;
}

static int limit(const char *root, pid_t pid, const char *newlimit)
{
	uint64_t before = vmrss_of(pid);
	pthread_t th;
	double t1;

	lim.pid = pid;
	lim.limit = parse_size(newlimit);
	if (before <= lim.limit)
		fprintf(stderr, "purgebench limit: RSS %llu already under %llu\n",
			(unsigned long long)before, (unsigned long long)lim.limit);
	lim.t0 = now_s();
	if (pthread_create(&th, NULL, poller, NULL) != 0)
		die("pthread_create");
	if (setxattr(root, "user.volatile.memory_limit", newlimit, strlen(newlimit), 0) != 0)
		die("setxattr user.volatile.memory_limit %s:", root);
	t1 = now_s() - lim.t0;
	pthread_join(th, NULL);
	if (lim.under < 0)
		die("purgebench limit: VmRSS %llu still over %llu after 30 s",
		    (unsigned long long)vmrss_of(pid), (unsigned long long)lim.limit);
	printf("under_ms %.2f\nsetxattr_ms %.2f\n", lim.under * 1e3, t1 * 1e3);
	printf("rss_before %llu\nrss_after %llu\n", (unsigned long long)before,
	       (unsigned long long)vmrss_of(pid));
	return 0;
}

static int flood(const char *dir, uint64_t total, uint64_t fsize)
{
	char *buf = malloc(CHUNK), path[4096];
	unsigned long errors = 0;
	uint64_t done = 0;
	double t0 = now_s(), t;

	if (!buf)
		die("out of memory");
	fill_pattern(buf, CHUNK, 9);
	for (unsigned f = 0; (uint64_t)f * fsize < total; f++) {
		int fd;

		snprintf(path, sizeof(path), "%s/flood%04u", dir, f);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("open %s:", path);
		if (volatilefs_mark(fd, 0, 0, 0) != 0)
			die("volatilefs_mark %s:", path);
		for (uint64_t off = 0; off < fsize; off += CHUNK) {
			buf[0] = (char)(f + off);
			if (write_all(fd, buf, CHUNK, (off_t)off) != 0) {
				if (errors++ < 5)
					fprintf(stderr, "purgebench flood: write %s at %llu: %s\n",
						path, (unsigned long long)off, strerror(errno));
			} else {
				done += CHUNK;
			}
		}
		close(fd);
	}
	t = now_s() - t0;
	printf("flood_mib_per_s %.1f\nwrite_errors %lu\n", done / 1048576.0 / t, errors);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "fill") == 0)
		return fill(argv[2], parse_size(argv[3]), (unsigned)atoi(argv[4]),
			    parse_size(argv[5]));
	if (argc == 5 && strcmp(argv[1], "purge") == 0)
		return purge(argv[2], (pid_t)atoi(argv[3]), parse_size(argv[4]));
	if (argc == 5 && strcmp(argv[1], "limit") == 0)
		return limit(argv[2], (pid_t)atoi(argv[3]), argv[4]);
	if (argc == 5 && strcmp(argv[1], "flood") == 0)
		return flood(argv[2], parse_size(argv[3]), parse_size(argv[4]));
	fprintf(stderr, "usage: purgebench fill DIR SIZE NFILES UNIT\n"
			"       purgebench purge MOUNTROOT DAEMON_PID BYTES\n"
			"       purgebench limit MOUNTROOT DAEMON_PID NEWLIMIT\n"
			"       purgebench flood DIR TOTAL FILESIZE\n");
	return 2;
}
