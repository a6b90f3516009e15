/*
 * smallfiles - small-file and lookup benchmarks (bench/, run by contrib/bench.sh).
 *
 *   smallfiles phases DIR N
 *       In DIR/sf (created, must not exist): N times create+write 4 KiB+close,
 *       then N stats, N stats again, N open+read 4 KiB+close, N unlinks, in
 *       creation order.  Prints "create OPS/S", "stat OPS/S", "restat OPS/S",
 *       "read OPS/S", "unlink OPS/S".
 *       The kernel's caches stay as the previous phase left them (warm),
 *       as a program that works on its own files would see them.
 *
 *   smallfiles mktree DIR NFILES NDIRS
 *       Make NDIRS directories DIR/dNN and NFILES empty files spread over
 *       them round-robin (file i is DIR/d<i % NDIRS>/f<i>), with mknod:
 *       one request per file on FUSE.  Prints "mktree OPS/S".
 *
 *   smallfiles stattree DIR NFILES NDIRS COUNT SEED
 *       stat() COUNT distinct names of such a tree, chosen at random
 *       (SEED), each by its full path.  Prints "stattree OPS/S".  The caller
 *       drops the kernel's caches first for a cold lookup.
 */
#include <sys/stat.h>

#include "bench.h"

#define FSIZE 4096

static char buf[FSIZE];

static void name_of(char *out, size_t n, unsigned i)
{
	snprintf(out, n, "f%07u", i);
}

static int phases(const char *dir, unsigned n)
{
	char path[4096], name[32];
	double t0, t;
	struct stat st;
	int dfd, fd;

	snprintf(path, sizeof(path), "%s/sf", dir);
	if (mkdir(path, 0755) != 0)
		die("mkdir %s:", path);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		die("open %s:", path);
	fill_pattern(buf, sizeof(buf), 42);

	t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			die("create %s/%s:", path, name);
		if (write(fd, buf, FSIZE) != FSIZE)
			die("write %s/%s:", path, name);
		if (close(fd) != 0)
			die("close %s/%s:", path, name);
	}
	t = now_s() - t0;
	printf("create %.1f\n", n / t);

	t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		if (fstatat(dfd, name, &st, 0) != 0)
			die("stat %s/%s:", path, name);
		if (st.st_size != FSIZE)
			die("stat %s/%s: size %lld", path, name, (long long)st.st_size);
	}
	t = now_s() - t0;
	printf("stat %.1f\n", n / t);

	/* Again: now every attribute is in the kernel's cache, if it keeps them. */
	t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		if (fstatat(dfd, name, &st, 0) != 0)
			die("stat %s/%s:", path, name);
	}
	t = now_s() - t0;
	printf("restat %.1f\n", n / t);

	t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		char rb[FSIZE];

		name_of(name, sizeof(name), i);
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("open %s/%s:", path, name);
		if (read(fd, rb, FSIZE) != FSIZE)
			die("read %s/%s:", path, name);
		if (memcmp(rb, buf, FSIZE) != 0)
			die("read %s/%s: wrong data", path, name);
		close(fd);
	}
	t = now_s() - t0;
	printf("read %.1f\n", n / t);

	t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		if (unlinkat(dfd, name, 0) != 0)
			die("unlink %s/%s:", path, name);
	}
	t = now_s() - t0;
	printf("unlink %.1f\n", n / t);
	close(dfd);
	if (rmdir(path) != 0)
		die("rmdir %s:", path);
	return 0;
}

static int mktree(const char *dir, unsigned nfiles, unsigned ndirs)
{
	char path[4096];
	int *dfd = calloc(ndirs, sizeof(*dfd));
	double t0, t;

	if (!dfd)
		die("out of memory");
	for (unsigned d = 0; d < ndirs; d++) {
		snprintf(path, sizeof(path), "%s/d%02u", dir, d);
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			die("mkdir %s:", path);
		dfd[d] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd[d] < 0)
			die("open %s:", path);
	}
	t0 = now_s();
	for (unsigned i = 0; i < nfiles; i++) {
		char name[32];

		name_of(name, sizeof(name), i);
		if (mknodat(dfd[i % ndirs], name, S_IFREG | 0644, 0) != 0)
			die("mknod d%02u/%s:", i % ndirs, name);
	}
	t = now_s() - t0;
	printf("mktree %.1f\n", nfiles / t);
	for (unsigned d = 0; d < ndirs; d++)
		close(dfd[d]);
	free(dfd);
	return 0;
}

static int stattree(const char *dir, unsigned nfiles, unsigned ndirs, unsigned count,
		    uint64_t seed)
{
	unsigned *idx = malloc(sizeof(*idx) * nfiles);
	char path[4096];
	struct stat st;
	double t0, t;

	if (!idx)
		die("out of memory");
	if (count > nfiles)
		count = nfiles;
	for (unsigned i = 0; i < nfiles; i++)
		idx[i] = i;
	seed = seed * 2654435761u + 1;
	for (unsigned i = 0; i < count; i++) { /* partial Fisher-Yates */
		unsigned j = i + (unsigned)(rnd_next(&seed) % (nfiles - i)), tmp = idx[i];

		idx[i] = idx[j];
		idx[j] = tmp;
	}
	t0 = now_s();
	for (unsigned i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/d%02u/f%07u", dir, idx[i] % ndirs, idx[i]);
		if (stat(path, &st) != 0)
			die("stat %s:", path);
	}
	t = now_s() - t0;
	printf("stattree %.1f\n", count / t);
	free(idx);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "phases") == 0)
		return phases(argv[2], (unsigned)strtoul(argv[3], NULL, 0));
	if (argc == 5 && strcmp(argv[1], "mktree") == 0)
		return mktree(argv[2], (unsigned)strtoul(argv[3], NULL, 0),
			      (unsigned)strtoul(argv[4], NULL, 0));
	if (argc == 7 && strcmp(argv[1], "stattree") == 0)
		return stattree(argv[2], (unsigned)strtoul(argv[3], NULL, 0),
				(unsigned)strtoul(argv[4], NULL, 0),
				(unsigned)strtoul(argv[5], NULL, 0), strtoull(argv[6], NULL, 0));
	fprintf(stderr, "usage: smallfiles phases DIR N\n"
			"       smallfiles mktree DIR NFILES NDIRS\n"
			"       smallfiles stattree DIR NFILES NDIRS COUNT SEED\n");
	return 2;
}
