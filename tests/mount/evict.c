/*
 * evict: the guarantees of DESIGN section 4 under memory pressure, on a mounted volatilefs.
 *
 * Run it on a mount with memory_limit=64M (the limit is read back from user.volatile.stats,
 * so another limit works too, as long as it is large enough for the test sizes below):
 *
 *	$ tests/mount/with-mount.sh build/src/daemon/volatilefs -o memory_limit=64M -- ./evict
 *	$ CK_RUN_CASE=order tests/mount/with-mount.sh ... -- ./evict      (one test case)
 *
 * What is checked:
 *   - "report":  a purge reported through user.volatile.purged is final for every read path:
 *                pread on a descriptor opened before the purge (whose pages sat in the page
 *                cache), a new open, and an existing MAP_SHARED mapping all return zeros for
 *                the purged bytes, never the old data; the purged list is exactly [0, size).
 *   - "flood":   400 MiB of 1 MiB volatile files written through a 64 MiB limit: every write
 *                succeeds, the daemon's VmRSS (sampled every 2 ms) never goes over the limit
 *                plus max(1%, 4 MiB), purges happen, the oldest files go first (the purged
 *                files are a prefix of the write order), the newest files are intact, and
 *                every file is either intact or purged whole and reads zeros.
 *   - "enospc":  with volatile files present, non-volatile writes fail with ENOSPC only once
 *                nothing volatile is left (volatile_bytes 0); what was stored reads back
 *                intact; deleting a non-volatile file makes room again.
 *   - "order":   under pressure from non-volatile writes, units go lowest priority first,
 *                then aged ones, then least recently used, one unit at a time; the same
 *                order through "purge SIZE" on the root.
 *   - "limit":   lowering user.volatile.memory_limit purges at once (before the call returns),
 *                RSS comes under the new limit plus max(1%, 4 MiB), memory_low follows at 90%,
 *                and the files read their data or zeros.  How fast RSS falls is measured
 *                by bench/purgebench.c, not asserted here.
 *
 * Layout as in fsops.c: main() makes VFS_TEST_DIR/evict.XXXXXX; each test is forked and runs
 * in its own fresh directory inside it.  Tests share one daemon, so the fixture also purges
 * whatever earlier tests left volatile, waits until their data is freed, and puts the memory
 * limit back to what it was at start.
 *
 * VFS_DAEMON_PID (exported by with-mount.sh) lets the tests sample the daemon's VmRSS from
 * /proc; without it they fall back to the rss line of user.volatile.stats.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"

#define KIB 1024L
#define MIB (1024L * KIB)
#define PAGE 4096L

/* Per case, for a hang: the flood takes about 100 s under valgrind, twice that when loaded. */
#define TIMEOUT_SECONDS 300

/* The mount root, and the memory limit it had when we started. */
static char root_dir[PATH_MAX];
static uint64_t start_limit;
static pid_t daemon_pid;

/* ---------------------------------------------------------------------------------------- */
/* Data                                                                                     */

/* Bytes that depend on their offset and a seed, without short periods. */
static uint8_t pat(uint64_t off, unsigned seed)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;

	x ^= x >> 29;
	x *= 0x94D049BB133111EBull;
	return (uint8_t)(x ^ (x >> 32));
}

/* Fast 8 bytes at a time: splitmix64 of (seed, word index).  len a multiple of 8. */
static void rnd_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t *w = (uint64_t *)buf;

	for (size_t i = 0; i < len / 8; i++) {
		uint64_t z = seed * 0xD1B54A32D192ED03ull + (i + 1) * 0x9E3779B97F4A7C15ull;

		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		w[i] = z ^ (z >> 31);
	}
}

static void pat_fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(off + i, seed);
}

/* One assertion, on the first byte that differs (each Check assertion writes to a pipe). */
static void pat_assert(const uint8_t *buf, size_t len, uint64_t off, unsigned seed,
		       const char *what)
{
	size_t i = 0;

	while (i < len && buf[i] == pat(off + i, seed))
		i++;
	ck_assert_msg(i == len, "%s: byte at offset %llu is 0x%02x, expected 0x%02x", what,
		      (unsigned long long)(off + i), buf[i], pat(off + i, seed));
}

/* The offset of the first non-zero byte, or -1. */
static long first_nonzero(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return (long)i;
	return -1;
}

static void zero_assert(const uint8_t *buf, size_t len, const char *what)
{
	long i = first_nonzero(buf, len);

	ck_assert_msg(i < 0, "%s: byte at offset %ld is 0x%02x, expected 0 (purged)", what, i,
		      i < 0 ? 0 : buf[i]);
}

/* pwrite_all(), with what it writes named in the message when it fails. */
static void pwrite_named(int fd, const void *buf, size_t len, off_t off, const char *what)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		ck_assert_msg(n > 0, "%s: pwrite(%zu bytes at %lld): %s", what, len,
			      (long long)off, n < 0 ? errname(errno) : "wrote 0");
		p += n;
		len -= (size_t)n;
		off += n;
	}
}

/*
 * Writes as much as fits: returns the bytes written, and in *err the errno that stopped it
 * (0 when everything was written).
 */
static size_t pwrite_some(int fd, const void *buf, size_t len, off_t off, int *err)
{
	const uint8_t *p = buf;
	size_t done = 0;

	*err = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, off + (off_t)done);

		if (n < 0) {
			*err = errno;
			break;
		}
		if (n == 0) {
			*err = EIO;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

/* Reads path whole into a new buffer of exactly len bytes (fails if its size differs). */
static uint8_t *read_file(const char *path, size_t len)
{
	int fd = CHECK(open(path, O_RDONLY));
	uint8_t *buf = xmalloc(len + 1);
	size_t n = pread_all(fd, buf, len + 1, 0);

	ck_assert_msg(n == len, "%s holds %zu bytes, expected %zu", path, n, len);
	CHECK(close(fd));
	return buf;
}

/* ---------------------------------------------------------------------------------------- */
/* The xattr interface                                                                      */

static void vset(const char *path, const char *name, const char *value)
{
	ck_assert_msg(setxattr(path, name, value, strlen(value), 0) == 0,
		      "setxattr(%s, %s, \"%s\"): %s", path, name, value, errname(errno));
}

static void mark(const char *path, const char *ranges)
{
	vset(path, "user.volatile.mark", ranges);
}

/* user.volatile.purged equals want (e.g. "0:4096\n", or "" for nothing purged). */
static void assert_purged(const char *path, const char *want)
{
	char *got = xattr_get(path, "user.volatile.purged");

	ck_assert_msg(strcmp(got, want) == 0, "%s: user.volatile.purged is \"%s\", expected \"%s\"",
		      path, got, want);
	free(got);
}

/* The one unit of a file is purged (true) or still volatile (false); fails otherwise. */
static bool unit_purged(const char *path)
{
	char *r = xattr_get(path, "user.volatile.ranges");
	char *sp = strchr(r, ' ');
	bool purged;

	ck_assert_msg(sp && strchr(r, '\n') == r + strlen(r) - 1,
		      "%s: user.volatile.ranges \"%s\" is not one unit", path, r);
	if (strncmp(sp + 1, "purged ", 7) == 0)
		purged = true;
	else if (strncmp(sp + 1, "volatile ", 9) == 0)
		purged = false;
	else
		ck_abort_msg("%s: user.volatile.ranges \"%s\": unknown STATE", path, r);
	free(r);
	return purged;
}

static void root_set(const char *name, const char *value)
{
	vset(root_dir, name, value);
}

/*
 * The memory the limit bounds (DESIGN sections 3 and 11): the daemon's RSS
 * and, on the passthrough path, the shared memory of its backing files
 * (shared_bytes, 0 on the classic path).
 */
static uint64_t held(void)
{
	return mount_stat(root_dir, "rss") + mount_stat(root_dir, "shared_bytes");
}

/* Does the mount run on the passthrough path (stats: passthrough=on)? */
static bool passthrough(void)
{
	char *s = xattr_get(root_dir, "user.volatile.stats");
	bool on = strstr(s, "\npassthrough=on\n") != NULL || strncmp(s, "passthrough=on\n", 15) == 0;

	free(s);
	return on;
}

/* The daemon's VmRSS in bytes: /proc when we know its pid, else the stats line. */
static uint64_t daemon_rss(void)
{
	char path[64], line[256];
	uint64_t kib = 0;
	FILE *f;

	if (daemon_pid <= 0)
		return mount_stat(root_dir, "rss");
	snprintf(path, sizeof(path), "/proc/%d/status", (int)daemon_pid);
	f = fopen(path, "r");
	if (!f)
		return 0; /* gone: the caller's later checks say so */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %" SCNu64, &kib) == 1)
			break;
	fclose(f);
	return kib * KIB;
}

/* The allowance over the limit for a sampled RSS: max(1%, 4 MiB). */
static uint64_t rss_margin(uint64_t limit)
{
	return limit / 100 > (uint64_t)(4 * MIB) ? limit / 100 : (uint64_t)(4 * MIB);
}

/*
 * Judges one file of size bytes, written with rnd_fill(seed) and marked volatile whole (one
 * unit), while purges may still run: under valgrind or a sanitizer the daemon's RSS creeps
 * over the limit while a test verifies, and the monitor thread then legally purges the
 * coldest units, which are the files not yet checked (reading a file makes it the most
 * recently used).  So the file is judged by its purged list read both before and after its
 * data, never by one list against a read that a purge may come between:
 *   - each list is empty or the whole unit "0:SIZE", and what was purged stays purged;
 *   - listed purged before the read: every byte reads 0 (DESIGN section 4: after a purge was
 *     reported, no read returns the discarded data; these mounts use purged_read=zero);
 *   - not listed purged after the read either: every byte is what was written;
 *   - purged between the two lists: each 4 KiB page is either exactly what was written
 *     (read before the purge) or all zeros (after it), nothing else.
 * Returns whether the file is listed purged after the read.
 */
static bool judge_file(const char *name, size_t size, uint64_t seed)
{
	char whole[32], *before, *after;
	uint8_t *got, *want = xmalloc(size);
	bool purged_before, purged_after;

	snprintf(whole, sizeof(whole), "0:%zu\n", size);
	before = xattr_get(name, "user.volatile.purged");
	got = read_file(name, size);
	after = xattr_get(name, "user.volatile.purged");
	ck_assert_msg(*before == '\0' || strcmp(before, whole) == 0,
		      "%s: purged list \"%s\", expected \"\" or the whole unit \"%s\"", name, before,
		      whole);
	ck_assert_msg(*after == '\0' || strcmp(after, whole) == 0,
		      "%s: purged list \"%s\" after reading it, expected \"\" or the whole unit \"%s\"",
		      name, after, whole);
	purged_before = *before != '\0';
	purged_after = *after != '\0';
	ck_assert_msg(!purged_before || purged_after,
		      "%s: listed purged, then not, with no write in between", name);
	rnd_fill(want, size, seed);
	if (purged_before) {
		ck_assert_msg(first_nonzero(got, size) < 0,
			      "%s is listed purged but byte %ld reads 0x%02x, not 0", name,
			      first_nonzero(got, size), got[first_nonzero(got, size)]);
	} else if (!purged_after) {
		ck_assert_msg(memcmp(got, want, size) == 0,
			      "%s is not listed purged (before or after reading it) but its contents "
			      "differ from what was written", name);
	} else {
		for (size_t off = 0; off < size; off += PAGE) {
			size_t len = size - off < (size_t)PAGE ? size - off : (size_t)PAGE;

			ck_assert_msg(memcmp(got + off, want + off, len) == 0 ||
				      first_nonzero(got + off, len) < 0,
				      "%s, purged while it was read: the page at %zu is neither what "
				      "was written nor zeros", name, off);
		}
	}
	free(before);
	free(after);
	free(got);
	free(want);
	return purged_after;
}

/* ---------------------------------------------------------------------------------------- */
/* Fixture                                                                                  */

/* Removes everything under dir, keeping dir. */
static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			rm_tree_at(dirfd(d), e->d_name);
	closedir(d);
}

/*
 * A fresh start for every test: whatever an earlier (maybe failed) test left is removed,
 * the limit is what it was, nothing volatile holds memory, and the files' memory is back.
 */
static void setup(void)
{
	char lim[32];

	empty_dir(run_dir);
	snprintf(lim, sizeof(lim), "%" PRIu64, start_limit);
	root_set("user.volatile.memory_limit", lim);
	root_set("user.volatile.purge", "all");
	for (int i = 0; i < 100 && mount_stat(root_dir, "data_bytes") > (uint64_t)MIB; i++)
		nap_ms(100);
	ck_assert_msg(mount_stat(root_dir, "data_bytes") <= (uint64_t)MIB,
		      "%" PRIu64 " bytes of data still held 10 s after the earlier tests' files "
		      "were deleted", mount_stat(root_dir, "data_bytes"));
	mtest_setup();
}

/* ---------------------------------------------------------------------------------------- */
/* report: a reported purge is final for read, the page cache and mmap                      */

struct report_case {
	const char *name;
	size_t sizes[6];  /* 0 ends the list */
	bool bounded;     /* mark "0:SIZE" instead of the unbounded "0:0" */
};

static const struct report_case report_cases[] = {
	{ "one page", { PAGE }, false },
	{ "1 MiB + 123 bytes", { MIB + 123 }, false },
	{ "1 MiB + 123 bytes, bounded mark", { MIB + 123 }, true },
	{ "several files", { PAGE, MIB + 123, 3 * MIB, 5000, 3 * 64 * KIB + 1, 1 }, false },
	{ "several files, bounded marks", { PAGE, MIB + 123, 3 * MIB, 5000, 1 }, true },
};

START_TEST(purge_report_is_final_for_read_cache_and_mmap)
{
	const struct report_case *c = &report_cases[_i];
	enum { MAX = sizeof(c->sizes) / sizeof(c->sizes[0]) };
	int fds[MAX];
	uint8_t *maps[MAX];
	size_t nf = 0;
	char name[32], want[64], what[128];

	while (nf < MAX && c->sizes[nf])
		nf++;
	for (size_t i = 0; i < nf; i++) {
		size_t size = c->sizes[i], maplen = (size + PAGE - 1) / PAGE * PAGE;
		uint8_t *buf = xmalloc(size);
		unsigned seed = (unsigned)(i + 1);
		unsigned sum = 0;
		int fd;

		snprintf(name, sizeof(name), "f%zu", i);
		pat_fill(buf, size, 0, seed);
		fd = CHECK(open(name, O_RDWR | O_CREAT | O_EXCL, 0644));
		pwrite_named(fd, buf, size, 0, name);
		snprintf(want, sizeof(want), "0:%zu", c->bounded ? size : 0);
		mark(name, want);
		/* Read it all: the kernel's page cache now holds every page. */
		memset(buf, 0, size);
		ck_assert_uint_eq(pread_all(fd, buf, size, 0), size);
		snprintf(what, sizeof(what), "%s (%s) before the purge", name, c->name);
		pat_assert(buf, size, 0, seed, what);
		maps[i] = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, 0);
		ck_assert_msg(maps[i] != MAP_FAILED, "mmap(%s): %s", name, errname(errno));
		for (size_t off = 0; off < size; off += PAGE) /* fault every page in */
			sum += maps[i][off];
		(void)sum;
		pat_assert(maps[i], size, 0, seed, what);
		fds[i] = fd;
		free(buf);
	}

	root_set("user.volatile.purge", "all");

	for (size_t i = 0; i < nf; i++) {
		size_t size = c->sizes[i], maplen = (size + PAGE - 1) / PAGE * PAGE;
		uint8_t *buf = xmalloc(size);
		int fd;

		snprintf(name, sizeof(name), "f%zu", i);
		/* The report: exactly the bytes within the size, whole unit. */
		snprintf(want, sizeof(want), "0:%zu\n", size);
		assert_purged(name, want);
		ck_assert_msg(unit_purged(name), "%s: ranges does not say purged", name);

		snprintf(what, sizeof(what), "%s (%s): pread on the fd opened before the purge",
			 name, c->name);
		ck_assert_uint_eq(pread_all(fds[i], buf, size, 0), size);
		zero_assert(buf, size, what);

		snprintf(what, sizeof(what), "%s (%s): the mapping made before the purge", name,
			 c->name);
		zero_assert(maps[i], size, what);

		fd = CHECK(open(name, O_RDONLY));
		snprintf(what, sizeof(what), "%s (%s): pread on a new fd", name, c->name);
		memset(buf, 0xff, size);
		ck_assert_uint_eq(pread_all(fd, buf, size + 0, 0), size);
		zero_assert(buf, size, what);
		CHECK(close(fd));
		ck_assert_int_eq(lseek(fds[i], 0, SEEK_END), (off_t)size);

		CHECK(munmap(maps[i], maplen));
		CHECK(close(fds[i]));
		free(buf);
	}
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* flood: volatile writes far past the limit                                                */

#define FLOOD_FILES 400
#define FLOOD_SIZE MIB
#define FLOOD_NEWEST 8

struct sampler {
	pthread_t thread;
	atomic_bool stop;
	uint64_t max, samples;
};

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;

	while (!atomic_load(&s->stop)) {
		uint64_t rss = daemon_rss();

		if (rss > s->max)
			s->max = rss;
		s->samples++;
		nap_ms(2);
	}
	return NULL;
}

static void sampler_start(struct sampler *s)
{
	memset(s, 0, sizeof(*s));
	atomic_init(&s->stop, false);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, sampler_main, s), 0);
}

static void sampler_stop(struct sampler *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
}

START_TEST(write_flood_stays_under_limit_and_purges_oldest_first)
{
	uint64_t limit = mount_stat(root_dir, "memory_limit"), margin = rss_margin(limit);
	uint64_t purges0 = mount_stat(root_dir, "purges_total");
	uint64_t enospc0 = mount_stat(root_dir, "enospc_total");
	uint8_t *buf = xmalloc(FLOOD_SIZE);
	char name[32], range[32];
	struct sampler s;
	int newest_purged = -1, npurged = 0;

	ck_assert_msg(daemon_pid > 0, "VFS_DAEMON_PID is not set: cannot sample VmRSS");
	sampler_start(&s);
	for (int i = 0; i < FLOOD_FILES; i++) {
		int fd, err;
		size_t done;

		snprintf(name, sizeof(name), "v%03d", i);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			sampler_stop(&s);
			ck_abort_msg("file %d of %d: open(%s, O_CREAT) failed with %s, with %" PRIu64
				     " volatile bytes held", i, FLOOD_FILES, name, errname(errno),
				     mount_stat(root_dir, "volatile_bytes"));
		}
		mark(name, "0:0");
		rnd_fill(buf, FLOOD_SIZE, (uint64_t)i + 1);
		done = pwrite_some(fd, buf, FLOOD_SIZE, 0, &err);
		if (err) {
			sampler_stop(&s);
			ck_abort_msg("file %d of %d: write failed after %zu bytes with %s while %" PRIu64
				     " volatile bytes were held (spec: ENOSPC only when nothing "
				     "volatile is left)", i, FLOOD_FILES, done, errname(err),
				     mount_stat(root_dir, "volatile_bytes"));
		}
		CHECK(close(fd));
	}
	sampler_stop(&s);
	fprintf(stderr, "evict: flood: %d x 1 MiB volatile, VmRSS max %" PRIu64 " KiB over %" PRIu64
		" samples (limit %" PRIu64 " KiB + margin %" PRIu64 " KiB), purges %" PRIu64 "\n",
		FLOOD_FILES, s.max / KIB, s.samples, limit / KIB, margin / KIB,
		mount_stat(root_dir, "purges_total") - purges0);
	ck_assert_msg(s.samples > 10, "only %" PRIu64 " VmRSS samples", s.samples);
	ck_assert_msg(s.max <= limit + margin,
		      "daemon VmRSS reached %" PRIu64 " KiB, over the limit %" PRIu64
		      " KiB + %" PRIu64 " KiB", s.max / KIB, limit / KIB, margin / KIB);
	ck_assert_msg(mount_stat(root_dir, "purges_total") > purges0, "400 MiB through a %" PRIu64
		      " MiB limit and purges_total did not move", limit / MIB);
	ck_assert_uint_eq(mount_stat(root_dir, "enospc_total"), enospc0);

	/*
	 * The purged ones come first: judged on the purged lists alone, read newest first and
	 * before any data is read (a read makes a file the most recently used).  Purges may
	 * still run meanwhile, but a file once purged stays purged, and the oldest files go
	 * first: so a file found intact after a newer one was found purged was intact then
	 * too, and that pair is a purge out of order, whenever the lists were read.
	 */
	snprintf(range, sizeof(range), "0:%ld\n", FLOOD_SIZE);
	for (int i = FLOOD_FILES - 1; i >= 0; i--) {
		char *p;

		snprintf(name, sizeof(name), "v%03d", i);
		p = xattr_get(name, "user.volatile.purged");
		ck_assert_msg(*p == '\0' || strcmp(p, range) == 0,
			      "%s: purged list \"%s\", expected the whole unit \"%s\"", name, p, range);
		if (*p) {
			npurged++;
			if (newest_purged < 0)
				newest_purged = i;
		} else {
			ck_assert_msg(newest_purged < 0,
				      "v%03d (file %d) was purged but the older file %s is intact: "
				      "least recently used must go first", newest_purged,
				      newest_purged, name);
		}
		free(p);
	}
	/* Every file is intact, or purged whole and reads zeros. */
	for (int i = 0; i < FLOOD_FILES; i++) {
		snprintf(name, sizeof(name), "v%03d", i);
		judge_file(name, FLOOD_SIZE, (uint64_t)i + 1);
	}
	fprintf(stderr, "evict: flood: %d files purged, the %d newest intact\n", npurged,
		FLOOD_FILES - npurged);
	ck_assert_msg(npurged >= FLOOD_FILES - (int)(limit / FLOOD_SIZE),
		      "only %d of %d files purged, yet at most %" PRIu64 " fit under the limit",
		      npurged, FLOOD_FILES, limit / FLOOD_SIZE);
	ck_assert_msg(FLOOD_FILES - npurged >= FLOOD_NEWEST,
		      "only the newest %d files are intact: a purge down to memory_low should "
		      "keep at least %d", FLOOD_FILES - npurged, FLOOD_NEWEST);
	free(buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* enospc: only when nothing volatile is left                                               */

#define ENOSPC_VOLATILE 8

START_TEST(enospc_only_when_nothing_volatile_is_left)
{
	uint64_t limit = mount_stat(root_dir, "memory_limit");
	uint64_t enospc0 = mount_stat(root_dir, "enospc_total");
	int max_files = (int)(limit / MIB) + 16, nfiles = 0, err = 0, fail_at = -1, ndel;
	size_t *written = xmalloc(sizeof(size_t) * (size_t)max_files);
	uint8_t *buf = xmalloc(MIB), *got;
	uint64_t total = 0, rss, extra;
	char name[32];
	int fd;

	/* Volatile files first, 1 MiB each, whole-file units. */
	for (int i = 0; i < ENOSPC_VOLATILE; i++) {
		snprintf(name, sizeof(name), "vol%d", i);
		rnd_fill(buf, MIB, 1000 + (uint64_t)i);
		fd = CHECK(open(name, O_WRONLY | O_CREAT | O_EXCL, 0644));
		pwrite_named(fd, buf, MIB, 0, name);
		CHECK(close(fd));
		mark(name, "0:0");
	}
	ck_assert_uint_ge(mount_stat(root_dir, "volatile_bytes"), ENOSPC_VOLATILE * MIB);

	/* Non-volatile 1 MiB files until a write fails. */
	for (nfiles = 0; nfiles < max_files; nfiles++) {
		snprintf(name, sizeof(name), "nv%03d", nfiles);
		written[nfiles] = 0;
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			err = errno;
			fail_at = nfiles;
			break;
		}
		rnd_fill(buf, MIB, (uint64_t)nfiles + 1);
		written[nfiles] = pwrite_some(fd, buf, MIB, 0, &err);
		total += written[nfiles];
		CHECK(close(fd));
		if (err) {
			fail_at = nfiles++;
			break;
		}
	}
	ck_assert_msg(fail_at >= 0, "%d MiB of non-volatile data written under a %" PRIu64
		      " MiB limit without ENOSPC", max_files, limit / MIB);
	ck_assert_msg(err == ENOSPC, "non-volatile file %d failed with %s, expected ENOSPC",
		      fail_at, errname(err));
	fprintf(stderr, "evict: enospc: ENOSPC after %" PRIu64 " KiB of non-volatile data (%s)\n",
		total / KIB, written[fail_at] || nfiles > fail_at ? "in write" : "in create");
	ck_assert_msg(mount_stat(root_dir, "volatile_bytes") == 0,
		      "ENOSPC while %" PRIu64 " volatile bytes were still held: they must be "
		      "purged first", mount_stat(root_dir, "volatile_bytes"));
	/* enospc_total counts the ENOSPCs the daemon answers.  On the passthrough path the
	 * kernel wrote these files itself (they hold no volatile range), and the ENOSPC it
	 * returned is not counted: a fallocate always reaches the daemon. */
	fd = CHECK(open("nv000", O_WRONLY));
	err = fallocate(fd, 0, MIB, (off_t)limit) < 0 ? errno : 0;
	ck_assert_msg(err == ENOSPC, "a fallocate of the whole limit on the full mount: %s, "
		      "expected ENOSPC", err ? errname(err) : "success");
	CHECK(close(fd));
	ck_assert_uint_gt(mount_stat(root_dir, "enospc_total"), enospc0);
	/*
	 * The daemon was full: the refused 1 MiB did not fit under the limit (the daemon's
	 * own memory, buffers and metadata, counts too).  The RSS read now is lower than the
	 * one the daemon refused at, by more than the refused write: at the refusal it held
	 * the write's own 1 MiB in libfuse's receive buffer, often the buffer of the write
	 * before it too (ops.c hands a buffer's pages back just after the reply, and the next
	 * write may be counted first), and under a sanitizer what its allocator returns to
	 * the kernel now and then; all of that is gone when the test reads.  Measured: the
	 * RSS read here 0.5-3.9 MiB under the limit, in normal and ASan builds alike (the
	 * old bound, 2 MiB, failed 5 of 20 normal runs).  So "full" is judged to DESIGN
	 * section 3's precision, max(1%, 4 MiB), beyond the refused write: it still catches
	 * a refusal while several megabytes were free.  A sanitizer build's daemon carries
	 * its runtime's freed memory on top (ASan's quarantine, up to 8 MiB with
	 * contrib/test.sh's options, handed back as it pleases): VFS_EVICT_EXTRA_MB, set by
	 * meson for those builds, widens the judgement by that much.  Seen once without it
	 * (ASan, stress-ng --cpu 2 beside): read 256048 KiB under a 262144 KiB limit, a
	 * refusal at least 5 MiB above what the test read.
	 */
	extra = getenv("VFS_EVICT_EXTRA_MB") ? (uint64_t)atoi(getenv("VFS_EVICT_EXTRA_MB")) * MIB : 0;
	rss = held();
	fprintf(stderr, "evict: enospc: at ENOSPC rss %" PRIu64 " KiB, data_bytes %" PRIu64
		" KiB, limit %" PRIu64 " KiB\n", rss / KIB, mount_stat(root_dir, "data_bytes") / KIB,
		limit / KIB);
	ck_assert_msg(rss + MIB + rss_margin(limit) + extra >= limit,
		      "ENOSPC with rss %" PRIu64 " KiB, more than %" PRIu64 " KiB under the limit %"
		      PRIu64 " KiB beyond the 1 MiB write refused", rss / KIB,
		      (rss_margin(limit) + extra) / KIB, limit / KIB);
	ck_assert_msg(total >= limit / 2, "ENOSPC after only %" PRIu64 " KiB of non-volatile "
		      "data under a %" PRIu64 " KiB limit", total / KIB, limit / KIB);

	for (int i = 0; i < ENOSPC_VOLATILE; i++) {
		char want[32];

		snprintf(name, sizeof(name), "vol%d", i);
		snprintf(want, sizeof(want), "0:%ld\n", MIB);
		assert_purged(name, want);
		got = read_file(name, MIB);
		zero_assert(got, MIB, name);
		free(got);
	}
	/* Nothing stored was changed or lost, the failed file included (a prefix of it). */
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "nv%03d", i);
		got = read_file(name, written[i]);
		rnd_fill(buf, MIB, (uint64_t)i + 1);
		ck_assert_msg(memcmp(got, buf, written[i]) == 0, "%s: contents changed", name);
		assert_purged(name, "");
		free(got);
	}

	/*
	 * Deleting files makes room again (once the kernel forgets them): as many as the
	 * 1 MiB write, its 1 MiB receive buffer and DESIGN section 3's max(1%, 4 MiB) need.
	 * Two were once not enough under ASan for 10 s (data_bytes had fallen by them): the
	 * daemon's own memory may grow by that much meanwhile, e.g. ASan's quarantine of freed
	 * blocks (up to 8 MiB with contrib/test.sh's options).
	 */
	ndel = 2 + (int)(rss_margin(limit) / MIB);
	ck_assert_msg(ndel < nfiles, "only %d non-volatile files to delete", nfiles);
	for (int i = 0; i < ndel; i++) {
		snprintf(name, sizeof(name), "nv%03d", i);
		CHECK(unlink(name));
	}
	rnd_fill(buf, MIB, 7777);
	for (double t0 = now_s();;) {
		size_t done;

		fd = open("again", O_WRONLY | O_CREAT, 0644);
		if (fd >= 0) {
			done = pwrite_some(fd, buf, MIB, 0, &err);
			CHECK(close(fd));
			if (!err)
				break;
			ck_assert_msg(done == 0 || err == ENOSPC, "write after delete: %s",
				      errname(err));
		} else {
			err = errno;
		}
		ck_assert_msg(err == ENOSPC, "after deleting %d MiB: %s", ndel, errname(err));
		/* A deadline for a hang, not a speed: 10 s was once too short under ASan. */
		ck_assert_msg(now_s() - t0 < 30, "writes still fail with ENOSPC 30 s after %d MiB of "
			      "files were deleted (data_bytes %" PRIu64 " KiB, rss %" PRIu64 " KiB, limit %"
			      PRIu64 " KiB)", ndel, mount_stat(root_dir, "data_bytes") / KIB, held() / KIB,
			      limit / KIB);
		nap_ms(100);
	}
	got = read_file("again", MIB);
	ck_assert_msg(memcmp(got, buf, MIB) == 0, "again: contents differ");
	free(got);
	for (int i = ndel; i < nfiles; i++) {
		snprintf(name, sizeof(name), "nv%03d", i);
		got = read_file(name, written[i]);
		rnd_fill(buf, MIB, (uint64_t)i + 1);
		ck_assert_msg(memcmp(got, buf, written[i]) == 0, "%s: contents changed", name);
		free(got);
	}
	free(buf);
	free(written);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* order: priority, then age, then least recently used                                     */

struct vfile {
	const char *name;
	const char *flags; /* appended to the mark call */
};

/*
 * Creates name marked whole ("0:0 FLAGS"), then writes size bytes of its pattern: through
 * the daemon on both paths, which purges only once the limit is reached (a write the kernel
 * serves itself, into a file with no mark, has the daemon purge ahead of it, from further
 * below the limit: volatilefs(8), PASSTHROUGH).
 */
static void make_volatile(const char *name, size_t size, unsigned seed, const char *flags)
{
	uint8_t *buf = xmalloc(size);
	char value[64];
	int fd;

	rnd_fill(buf, size, seed);
	/* Made by a read-only open: a writable one of a file with no mark
	 * would be one the kernel writes, and the monitor, woken by it,
	 * purges further ahead while it exists. */
	fd = CHECK(open(name, O_RDONLY | O_CREAT | O_EXCL, 0644));
	CHECK(close(fd));
	snprintf(value, sizeof(value), "0:0 %s", flags);
	mark(name, value);
	fd = CHECK(open(name, O_WRONLY));
	pwrite_named(fd, buf, size, 0, name);
	CHECK(close(fd));
	free(buf);
}

/*
 * Which of the files are purged, as "p0 p3age ..." (static buffer).  Read last to first (f
 * in purge order): a purge that runs meanwhile takes the first unpurged file, and a file
 * once purged stays purged, so a file found unpurged after a later one was found purged was
 * unpurged then too: that is a real purge out of order, and nothing else looks like one.
 */
static const char *purged_names(const struct vfile *f, int n, bool *out)
{
	static char s[256];

	s[0] = '\0';
	for (int i = n - 1; i >= 0; i--)
		out[i] = unit_purged(f[i].name);
	for (int i = 0; i < n; i++) {
		if (out[i]) {
			strcat(s, " ");
			strcat(s, f[i].name);
		}
	}
	return s[0] ? s + 1 : "(none)";
}

/* The purged set is the first k files of the expected order; returns k. */
static int assert_prefix(const struct vfile *f, int n, const char *when)
{
	bool p[8];
	const char *names = purged_names(f, n, p);
	int k = 0;

	while (k < n && p[k])
		k++;
	for (int i = k; i < n; i++)
		ck_assert_msg(!p[i], "%s: purged: %s; but %s went before %s (expected order: "
			      "priority, then age, then least recently used)", when, names,
			      f[i].name, f[k].name);
	return k;
}

#define ORDER_UNIT (12 * MIB) /* at least */

START_TEST(pressure_purges_lowest_priority_then_aged_then_lru)
{
	/* Expected purge order.  They are marked in the opposite order, so the least
	 * recently used one is the last to go: priority and age must win over recency. */
	static const struct vfile f[] = {
		{ "p0", "priority=0" },
		{ "p3age", "priority=3 age" },
		{ "p3", "priority=3" },
		{ "p7", "priority=7" },
	};
	enum { N = sizeof(f) / sizeof(f[0]) };
	uint64_t limit = mount_stat(root_dir, "memory_limit");
	uint64_t low = mount_stat(root_dir, "memory_low");
	/* One unit more than covers what a purge must free (down from the limit to
	 * memory_low less the 1 MiB write): then each purge takes exactly one. */
	uint64_t unit = (limit - low + MIB - 1) / MIB * MIB + 4 * MIB;
	uint8_t *buf = xmalloc(MIB);
	bool seen[N + 1] = { false };
	uint8_t *maps[2];
	unsigned touched = 0;
	int k = 0, files = 0;
	char name[32], when[96];

	if (unit < ORDER_UNIT)
		unit = ORDER_UNIT;
	ck_assert_msg(limit >= N * unit + 12 * MIB, "the limit is too small for this test");
	for (int i = N - 1; i >= 0; i--)
		make_volatile(f[i].name, unit, (uint64_t)i + 1, f[i].flags);
	/* Map the first and the last to go, every page faulted in: purges under pressure
	 * must reach existing mappings too. */
	for (int j = 0; j < 2; j++) {
		int i = j ? N - 1 : 0, fd = CHECK(open(f[i].name, O_RDONLY));

		maps[j] = mmap(NULL, unit, PROT_READ, MAP_SHARED, fd, 0);
		ck_assert_msg(maps[j] != MAP_FAILED, "mmap(%s): %s", f[i].name, errname(errno));
		CHECK(close(fd));
		rnd_fill(buf, MIB, (uint64_t)i + 1);
		ck_assert_msg(memcmp(maps[j], buf, MIB) == 0, "%s: mapping differs", f[i].name);
		for (size_t off = 0; off < unit; off += PAGE)
			touched += maps[j][off];
	}
	k = assert_prefix(f, N, "before any pressure");
	ck_assert_msg(k == 0, "purged before any pressure");
	seen[0] = true;

	/* Non-volatile data until everything volatile is gone. */
	while (k < N) {
		int fd, err;

		ck_assert_msg(files < (int)(limit / MIB) + 8,
			      "%d MiB of non-volatile data written and %s still not purged", files,
			      f[k].name);
		snprintf(name, sizeof(name), "nv%03d", files);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s (with %s still volatile)", name,
			      errname(errno), f[k].name);
		rnd_fill(buf, MIB, 500 + (uint64_t)files);
		pwrite_some(fd, buf, MIB, 0, &err);
		CHECK(close(fd));
		ck_assert_msg(err == 0, "write %s: %s, with %s still volatile", name, errname(err),
			      f[k].name);
		files++;
		snprintf(when, sizeof(when), "after %d MiB of non-volatile data", files);
		k = assert_prefix(f, N, when);
		seen[k] = true;
	}
	/* Each purge needed one unit only.  Not on the passthrough path: there the
	 * kernel writes these files itself, and the monitor purges further ahead of
	 * such writers than memory_low (volatilefs(8), PASSTHROUGH), so one purge may
	 * take two units; the order, checked after every MiB above, holds all the same. */
	for (int i = 1; i <= N && !passthrough(); i++)
		ck_assert_msg(seen[i], "no moment with exactly the first %d unit(s) purged: a purge "
			      "took more units than it needed to get under memory_low", i);
	for (int j = 0; j < 2; j++) {
		char what[64];

		snprintf(what, sizeof(what), "the mapping of %s made before it was purged",
			 f[j ? N - 1 : 0].name);
		if (passthrough()) {
			/* A load of a purged page needs a page of the full
			 * private tmpfs (DESIGN 3's allowance, then SIGBUS:
			 * volatilefs(8), BUGS): its first and last pages. */
			zero_assert(maps[j], PAGE, what);
			zero_assert(maps[j] + unit - PAGE, PAGE, what);
		} else {
			zero_assert(maps[j], unit, what);
		}
		CHECK(munmap(maps[j], unit));
	}
	(void)touched;
	free(buf);
}
END_TEST

START_TEST(purge_size_takes_units_in_priority_age_lru_order)
{
	/* Expected order of "purge SIZE" on the root, one unit per call. */
	static const struct vfile f[] = {
		{ "d_p1", "priority=1" },
		{ "c_p3age", "priority=3 age" },
		{ "b_p3", "priority=3" },
		{ "a_p3", "priority=3" },   /* marked before b_p3, but read since */
		{ "e_p6", "priority=6" },
	};
	enum { N = sizeof(f) / sizeof(f[0]) };
	const size_t size = 64 * KIB;
	uint8_t *buf = xmalloc(size);
	char when[64];
	int fd;

	make_volatile("a_p3", size, 1, "priority=3");
	make_volatile("e_p6", size, 5, "priority=6");
	make_volatile("b_p3", size, 2, "priority=3");
	make_volatile("d_p1", size, 4, "priority=1");
	make_volatile("c_p3age", size, 3, "priority=3 age");
	/* Reading a_p3 makes it the most recently used of priority 3.  Its pages are in the
	 * page cache since it was written; drop them so that the read reaches the daemon. */
	fd = CHECK(open("a_p3", O_RDONLY));
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	ck_assert_uint_eq(pread_all(fd, buf, size, 0), size);
	CHECK(close(fd));

	ck_assert_int_eq(assert_prefix(f, N, "before purging"), 0);
	for (int i = 1; i <= N; i++) {
		root_set("user.volatile.purge", "1");
		snprintf(when, sizeof(when), "after %d \"purge 1\" call(s)", i);
		ck_assert_msg(assert_prefix(f, N, when) == i,
			      "%s: %d unit(s) purged, expected %d: purge SIZE stops as soon as SIZE "
			      "bytes are freed", when, assert_prefix(f, N, when), i);
	}
	free(buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* limit: lowering it purges at once                                                        */

#define LIMIT_FILES 40
/* How long RSS may take to come under the new limit: only a hang takes this long.  How fast
 * it really comes is a figure of bench/purgebench.c ("limit": under_ms), not a test. */
#define LIMIT_DEADLINE_S 60

START_TEST(lowering_memory_limit_purges_at_once)
{
	uint64_t rss0, vol0, vol1, rss1 = 0, vmrss = 0, low, margin;
	uint64_t purges0, purges1, new_limit;
	char name[32], *v;
	double t0, secs;

	for (int i = 0; i < LIMIT_FILES; i++) {
		snprintf(name, sizeof(name), "v%02d", i);
		make_volatile(name, MIB, (uint64_t)i + 1, "");
	}
	vol0 = mount_stat(root_dir, "volatile_bytes");
	ck_assert_msg(vol0 >= LIMIT_FILES * MIB, "volatile_bytes %" PRIu64 " after marking %d MiB",
		      vol0, LIMIT_FILES);
	/*
	 * The new limit: half of the volatile data below the RSS it holds now, so that purging
	 * must free at least 20 MiB and can.  Measured after the files were made, not before:
	 * the daemon's own memory grows as it works, and under valgrind by more than 8 MiB for
	 * these 40 files (its translations and bookkeeping), which no purge gives back.
	 */
	rss0 = held();
	new_limit = (rss0 - vol0 / 2) / MIB * MIB;
	margin = rss_margin(new_limit);
	ck_assert_msg(new_limit >= 16 * MIB && rss0 > new_limit + 16 * MIB,
		      "rss %" PRIu64 " KiB with %" PRIu64 " KiB volatile: cannot test", rss0 / KIB,
		      vol0 / KIB);
	purges0 = mount_stat(root_dir, "purges_total");

	t0 = now_s();
	snprintf(name, sizeof(name), "%" PRIu64, new_limit);
	root_set("user.volatile.memory_limit", name);
	/* At once: the call that lowers the limit purges before it returns. */
	purges1 = mount_stat(root_dir, "purges_total");
	vol1 = mount_stat(root_dir, "volatile_bytes");
	ck_assert_msg(purges1 > purges0 && vol1 < vol0,
		      "setting memory_limit %" PRIu64 " KiB under rss %" PRIu64 " KiB returned "
		      "with nothing purged (purges_total %" PRIu64 " -> %" PRIu64 ", volatile_bytes "
		      "%" PRIu64 " -> %" PRIu64 " KiB)", new_limit / KIB, rss0 / KIB, purges0, purges1,
		      vol0 / KIB, vol1 / KIB);
	/* And RSS comes under the new limit, within DESIGN section 3's allowance. */
	for (;;) {
		rss1 = held();
		secs = now_s() - t0;
		if (rss1 <= new_limit + margin || secs > LIMIT_DEADLINE_S)
			break;
		nap_ms(50);
	}
	vol1 = mount_stat(root_dir, "volatile_bytes");
	vmrss = daemon_rss();
	fprintf(stderr, "evict: limit: %" PRIu64 " MiB -> %" PRIu64 " MiB: rss %" PRIu64 " -> %"
		PRIu64 " KiB (after %.3f s), VmRSS %" PRIu64 " KiB, volatile_bytes %" PRIu64 " -> %"
		PRIu64 " KiB\n", start_limit / MIB, new_limit / MIB, rss0 / KIB, rss1 / KIB, secs,
		vmrss / KIB, vol0 / KIB, vol1 / KIB);
	ck_assert_msg(rss1 <= new_limit + margin,
		      "stats rss %" PRIu64 " KiB is still over the new limit %" PRIu64 " KiB + %"
		      PRIu64 " KiB %d s later (volatile_bytes %" PRIu64 " KiB)", rss1 / KIB,
		      new_limit / KIB, margin / KIB, LIMIT_DEADLINE_S, vol1 / KIB);
	ck_assert_msg(vol0 - vol1 + new_limit + margin >= rss0,
		      "rss fell from %" PRIu64 " to %" PRIu64 " KiB but volatile_bytes only from %"
		      PRIu64 " to %" PRIu64 " KiB", rss0 / KIB, rss1 / KIB, vol0 / KIB, vol1 / KIB);

	v = xattr_get(root_dir, "user.volatile.memory_limit");
	ck_assert_uint_eq(strtoull(v, NULL, 10), new_limit);
	free(v);
	low = mount_stat(root_dir, "memory_low");
	ck_assert_msg(low == new_limit / 10 * 9 + new_limit % 10 * 9 / 10 || low == new_limit * 9 / 10,
		      "memory_low %" PRIu64 " is not 90%% of the new limit %" PRIu64, low,
		      new_limit);
	/* Purged files read zeros; the ones left read their data. */
	for (int i = 0; i < LIMIT_FILES; i++) {
		snprintf(name, sizeof(name), "v%02d", i);
		judge_file(name, MIB, (uint64_t)i + 1);
	}
	/* The fixture puts the limit back for the next test; do it now too. */
	snprintf(name, sizeof(name), "%" PRIu64, start_limit);
	root_set("user.volatile.memory_limit", name);
	ck_assert_uint_eq(mount_stat(root_dir, "memory_limit"), start_limit);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name)
{
	return mtest_tcase(s, name, setup, mtest_teardown, TIMEOUT_SECONDS);
}

static Suite *evict_suite(void)
{
	Suite *s = suite_create("evict");
	TCase *tc;

	tc = tcase(s, "report");
	tcase_add_loop_test(tc, purge_report_is_final_for_read_cache_and_mmap, 0,
			    (int)(sizeof(report_cases) / sizeof(report_cases[0])));
	tc = tcase(s, "flood");
	tcase_add_test(tc, write_flood_stays_under_limit_and_purges_oldest_first);
	tc = tcase(s, "enospc");
	tcase_add_test(tc, enospc_only_when_nothing_volatile_is_left);
	tc = tcase(s, "order");
	tcase_add_test(tc, pressure_purges_lowest_priority_then_aged_then_lru);
	tcase_add_test(tc, purge_size_takes_units_in_priority_age_lru_order);
	tc = tcase(s, "limit");
	tcase_add_test(tc, lowering_memory_limit_purges_at_once);
	return s;
}

int main(void)
{
	const char *base = getenv("VFS_TEST_DIR"), *pid = getenv("VFS_DAEMON_PID");
	char *v;
	struct stat st;
	int status, n;

	if (base == NULL || *base == '\0') {
		fprintf(stderr, "evict: VFS_TEST_DIR is not set; run me through with-mount.sh\n");
		return 1;
	}
	if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "evict: VFS_TEST_DIR=%s is not a directory\n", base);
		return 1;
	}
	if (realpath(base, root_dir) == NULL) {
		fprintf(stderr, "evict: %s: %s\n", base, strerror(errno));
		return 1;
	}
	if (pid && *pid)
		daemon_pid = (pid_t)atoi(pid);
	else
		fprintf(stderr, "evict: VFS_DAEMON_PID is not set: RSS is read from "
				"user.volatile.stats and the flood test fails\n");
	n = getxattr(root_dir, "user.volatile.memory_limit", NULL, 0);
	v = n > 0 ? calloc(1, (size_t)n + 1) : NULL;
	if (!v || getxattr(root_dir, "user.volatile.memory_limit", v, (size_t)n) != n) {
		fprintf(stderr, "evict: %s: cannot read user.volatile.memory_limit: %s "
				"(not a volatilefs mount?)\n", root_dir, strerror(errno));
		return 1;
	}
	start_limit = strtoull(v, NULL, 10);
	free(v);

	if (!mtest_make_run_dir("evict", root_dir))
		return 1;

	status = mtest_run(evict_suite());
	v = NULL;
	if (asprintf(&v, "%" PRIu64, start_limit) > 0)
		setxattr(root_dir, "user.volatile.memory_limit", v, strlen(v), 0);
	free(v);
	return status;
}
