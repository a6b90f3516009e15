/*
 * exact.c - the purged set is exact where users rely on it, and no read returns
 * discarded bytes after a report (DESIGN sections 4, 5, 6 and 11), on both data paths.
 *
 *	$ tests/mount/with-mount.sh build/src/daemon/volatilefs \
 *		-o memory_limit=256M,pressure=off,passthrough=on -- build/tests/mount/exact
 *	$ ... -o memory_limit=256M,pressure=off,passthrough=off -- build/tests/mount/exact
 *	$ CK_RUN_CASE=unmark ...                                          (one case)
 *	$ VFS_EXACT_ROUNDS=200 ...               (the loss cases' rounds, default LOSS_ROUNDS)
 *
 * What it proves (each a Check test of its own, run the same way on both paths):
 *
 *   loss: "no loss without a report" (section 4) for a writer the kernel serves itself.
 *	A writer appends whole pages (page k filled with one non-zero byte that depends on k)
 *	through a descriptor opened while the file held no mark (on the passthrough path the
 *	kernel then writes the backing file itself, man page PASSTHROUGH), to a file marked
 *	volatile, while another thread purges ("user.volatile.purge" = "all" on the mount root;
 *	on the file in every tenth round), until the purger's last purge returned.  Then every
 *	page reads back its pattern or lies wholly in user.volatile.purged; checked with the
 *	writer's descriptor open, and after its close.  Many short rounds (LOSS_ROUNDS).
 *	    loss_unbounded_unit: the file marked "0:0";
 *	    loss_bounded_unit:   the file marked "0:64M".
 *   stale: after a report, every way of reading returns what purged_read says (zeros here),
 *	section 4 "Every way of reading counts".  From a descriptor opened O_RDWR after the
 *	mark, sendfile, splice (through a pipe) and copy_file_range (into another file on the
 *	mount) return what pread returns, zeros:
 *	    stale_splice_family_after_purge: the descriptor opened after the purge;
 *	    stale_splice_family_cached_before_purge: the same descriptor read by splice and
 *		sendfile before the purge (which fills whatever cache they use), then purged.
 *   withdrawn: a store through a mapping into a purged page leaves the page in the purged set
 *	(section 4: "it does not remove the page from the purged set"; section 11).
 *	    withdrawn_store_into_purged_page: a byte stored into a page through a MAP_SHARED
 *		mapping, a purge that takes the page (purged again until it is listed: on the
 *		classic path the first purge writes the dirty page back and keeps it, as section
 *		4 allows), another byte stored into it: every byte of the page but the one just
 *		stored stays listed, checked at once, after munmap and close, and after a stat
 *		from another process;
 *	    withdrawn_memcpy_straddling_purges: a 32 MiB region (starting and ending inside a
 *		page) copied through the mapping while another thread purges the file, until a
 *		whole copy began after the last purge: afterwards, and after munmap and close,
 *		every byte that does not hold what was written (the copy's data, the file's own
 *		outside it) lies in the purged set.
 *   unmark: after a purge and one store through a mapping into a purged page, an unmark of
 *	that page (volatilefs_unmark) answers purged = 1 (section 4):
 *	    unmark_after_mapped_store: at once;
 *	    unmark_after_mapped_store_and_msync: after msync(MS_SYNC) of the page (on the
 *		classic path the page is then written back through the daemon).
 *   attrs: section 11 "Once a writer has closed, every process sees the file's true size,
 *	blocks and times": stores through a MAP_SHARED mapping into a sparse 16 MiB file,
 *	munmap, close; another process (no readdir between) sees the size, st_blocks covering
 *	the stored pages and an mtime later than before the stores: first through a statx that
 *	asks for size, blocks and mtime only (as `stat -c "%s %b %Y"` and `ls -l` ask: no
 *	atime, which reads make stale and so refresh the rest), then through stat.  The first
 *	may take up to ATTR_WAIT_MS (FUSE's RELEASE is answered after close returns).
 *	    attrs_after_mapped_stores.
 *
 * Run through with-mount.sh (VFS_TEST_DIR) on a fresh mount: main() opens the loss cases'
 * descriptors before any test runs, while their files hold no mark, so that the kernel
 * writes through them on the passthrough path.  Expects purged_read=zero, write_policy=keep and
 * pressure=off (no purge but the tests' own), and a memory limit far above what it stores
 * (a few tens of MiB): meson.build mounts with memory_limit=256M,pressure=off.
 */
#include <check.h>
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
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"
#include "volatilefs.h"

#define PG ((uint64_t)4096)
#define MIB ((uint64_t)1 << 20)

/*
 * The loss cases' rounds (see loss_round).  Issue 38 saw the unbounded unit lose pages
 * without a report in 33 to 86 of 200 rounds on the passthrough path: p = 0.165 to 0.43 per
 * round.  Taking p = 0.15, N rounds all miss the bug with probability 0.85^N: 100 rounds
 * miss it with probability 9e-8.  This program's rounds end with the purger's last purge
 * beside the writes (a page lost by an earlier purge is listed by the next one, which covers
 * the whole size again: only the last purge's loss stays), and lost pages in 33-88% of them
 * on the daemon of 190abf1 (8 runs of 1000 rounds, a 2-CPU machine under load), none on the
 * classic path nor on 379d65b.  With a rate that depends on how the writer and the daemon
 * share the CPUs, and rounds of one run that are not independent, LOSS_ROUNDS is 1000 all
 * the same: 1-2.5 s per case on either path here.
 *
 * The bounded unit ("0:64M") lost pages in 1 of 200 of the rounds: proving that rate
 * would take thousands of rounds (0.995^N < 0.01 needs N > 900), which this suite does not
 * try.  These rounds lose pages with it about as often as with the unbounded unit (33-88%,
 * the same cause: a purge punches the backing file past the size the daemon learned just
 * before), so the same count serves; should a daemon lose pages with a bounded unit only
 * at the rate, 1000 rounds would catch it with probability 0.99 (1 - 0.995^1000).
 */
#define LOSS_ROUNDS 1000
/* Descriptors opened before their files' first mark, per case; each serves every LOSS_FDS-th round
 * (the kernel keeps writing for an open made then until it is closed, DESIGN 11 and the man
 * page), and is closed after its last round. */
#define LOSS_FDS 8
/* Each round: LOSS_WARM_PAGES pages before the purger starts; then 1 to LOSS_PURGES purges
 * (it varies by round), the writer appending until the last one returned; at most
 * LOSS_MAX_PAGES pages (16 MiB). */
#define LOSS_WARM_PAGES 16
#define LOSS_PURGES 4
#define LOSS_MAX_PAGES 4096

/* The memcpy case's file. */
#define STRADDLE_SIZE (32 * MIB)
#define STRADDLE_ROUNDS 4

/* How long the attrs case waits for a stat from another process to show the stores. */
#define ATTR_WAIT_MS 2000

/* VFS_TEST_DIR, resolved: the mount root. */
static char mount_dir[PATH_MAX];
/* "on" or "off": the mount's data path, from user.volatile.stats (messages only). */
static char path_name[8] = "?";

/* The loss cases' descriptors and paths, made by main() before any test marks anything. */
struct premark {
	int fd;
	char path[PATH_MAX];
};
static struct premark pre_unbounded[LOSS_FDS], pre_bounded[LOSS_FDS];
/* LOSS_ROUNDS, or VFS_EXACT_ROUNDS (1 to 1000000) to measure a rate by hand. */
static int loss_rounds = LOSS_ROUNDS;

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                  */

static void set_attr(const char *path, const char *name, const char *value)
{
	ck_assert_msg(setxattr(path, name, value, strlen(value), 0) == 0,
		      "setxattr(%s, %s, \"%s\"): %s", path, name, value, errname(errno));
}

static void purge_file(const char *path)
{
	set_attr(path, "user.volatile.purge", "all");
}

/* A purged set, sorted by offset and coalesced (as section 5 lists it). */
struct extents {
	struct volatilefs_extent *e;
	size_t n, cap;
};

static void ext_add(struct extents *x, uint64_t off, uint64_t len)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->e = realloc(x->e, x->cap * sizeof(x->e[0]));
		ck_assert_ptr_nonnull(x->e);
	}
	x->e[x->n].offset = off;
	x->e[x->n].length = len;
	x->n++;
}

/* user.volatile.purged of path, parsed ("OFFSET:LENGTH\n" per extent). */
static struct extents purged_xattr(const char *path)
{
	struct extents x = { 0 };
	char *v = xattr_get(path, "user.volatile.purged"), *p = v;

	while (*p) {
		char *end;
		uint64_t off = strtoull(p, &end, 10), len;

		ck_assert_msg(*end == ':', "user.volatile.purged of %s: bad line at \"%.40s\"", path,
			      p);
		len = strtoull(end + 1, &end, 10);
		ck_assert_msg(*end == '\n', "user.volatile.purged of %s: bad line at \"%.40s\"",
			      path, p);
		ext_add(&x, off, len);
		p = end + 1;
	}
	free(v);
	return x;
}

/* The purged set of path through volatilefs_purged() on a new read-only descriptor, paged
 * through (a large set does not fit the 64 KiB of an xattr value). */
static struct extents purged_ioctl(const char *path)
{
	struct extents x = { 0 };
	struct volatilefs_extent e[VOLATILEFS_PURGED_BATCH];
	int fd = CHECK(open(path, O_RDONLY));
	uint64_t off = 0;

	for (;;) {
		size_t count = 0, got;

		CHECK(volatilefs_purged(fd, off, 0, e, VOLATILEFS_PURGED_BATCH, &count));
		got = count < VOLATILEFS_PURGED_BATCH ? count : VOLATILEFS_PURGED_BATCH;
		for (size_t i = 0; i < got; i++)
			ext_add(&x, e[i].offset, e[i].length);
		if (count <= VOLATILEFS_PURGED_BATCH)
			break;
		off = e[got - 1].offset + e[got - 1].length;
	}
	close(fd);
	return x;
}

/* Is [lo, hi) wholly in the set?  (Touching extents count as one, should they come apart.) */
static bool ext_covers(const struct extents *x, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < x->n && lo < hi; i++) {
		uint64_t a = x->e[i].offset, b = a + x->e[i].length;

		if (b <= lo)
			continue;
		if (a > lo)
			return false;
		lo = b;
	}
	return lo >= hi;
}

/* The set as text for a message: at most 6 extents, "a:b c:d ... (N extents)". */
static const char *ext_str(const struct extents *x)
{
	static char s[512];
	size_t o = 0;

	s[0] = '\0';
	for (size_t i = 0; i < x->n && i < 6; i++)
		o += (size_t)snprintf(s + o, sizeof(s) - o, "%s%" PRIu64 ":%" PRIu64, i ? " " : "",
				      x->e[i].offset, x->e[i].length);
	snprintf(s + o, sizeof(s) - o, "%s(%zu extent%s)", x->n ? " " : "", x->n,
		 x->n == 1 ? "" : "s");
	return s;
}

/* The file's bytes through a new read-only descriptor: exactly len of them, or the test fails. */
static uint8_t *read_file(const char *path, size_t len)
{
	int fd = CHECK(open(path, O_RDONLY));
	uint8_t *buf = xmalloc(len + 1);
	size_t got = pread_all(fd, buf, len + 1, 0);

	close(fd);
	ck_assert_msg(got == len, "%s reads %zu bytes, %zu were written", path, got, len);
	return buf;
}

/*
 * Section 4, "No loss without a report": asks for the purged set (a report: the daemon looks
 * at the file), then reads the file; every byte that does not hold want[] must lie in the
 * purged set.  when: what just happened, for the message.
 */
static void assert_no_unreported_loss(const char *path, const uint8_t *want, size_t len,
				      const char *when)
{
	struct extents x = purged_ioctl(path);
	uint8_t *got = read_file(path, len);
	size_t bad = 0, first = 0, k = 0;

	for (size_t i = 0; i < len; i++) {
		if (got[i] == want[i])
			continue;
		while (k < x.n && x.e[k].offset + x.e[k].length <= i)
			k++;
		if (k < x.n && x.e[k].offset <= i)
			continue;
		if (bad++ == 0)
			first = i;
	}
	ck_assert_msg(bad == 0,
		      "%s: %zu byte(s) lost without a report: byte %zu (page %zu) reads 0x%02x, "
		      "0x%02x was written there, and is not in the purged set [%s] (passthrough=%s)",
		      when, bad, first, first / PG, got[first], want[first], ext_str(&x), path_name);
	free(got);
	free(x.e);
}

/* Asserts [lo, hi) of path is wholly in user.volatile.purged. */
static void assert_listed(const char *path, uint64_t lo, uint64_t hi, const char *when)
{
	struct extents x = purged_xattr(path);

	ck_assert_msg(ext_covers(&x, lo, hi),
		      "%s: bytes %" PRIu64 "-%" PRIu64 " are not all in user.volatile.purged [%s] "
		      "(passthrough=%s)", when, lo, hi - 1, ext_str(&x), path_name);
	free(x.e);
}

/* Runs stat(path) in a child process (another process asks the daemon about the file). */
static struct stat stat_elsewhere(const char *path)
{
	int pfd[2];
	struct stat st;
	pid_t pid;
	int status;

	CHECK(pipe(pfd));
	pid = CHECK(fork());
	if (pid == 0) {
		struct stat cst;
		int ok = stat(path, &cst) == 0;

		if (!ok)
			cst.st_size = -errno;
		_exit(write(pfd[1], &cst, sizeof(cst)) == (ssize_t)sizeof(cst) && ok ? 0 : 1);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &st, sizeof(st)), (ssize_t)sizeof(st));
	close(pfd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "stat(%s) in another process failed: %s", path,
		      errname((int)-st.st_size));
	return st;
}

static void *map_file(int fd, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	ck_assert_msg(m != MAP_FAILED, "mmap(%zu bytes): %s", len, errname(errno));
	return m;
}

/* ---------------------------------------------------------------------------------------- */
/* loss: pages appended through an open made before the file's first mark                  */

/* Page k's byte in this round: never 0, and not what the round before wrote there. */
static uint8_t page_fill(uint64_t k, int round)
{
	return (uint8_t)((k + (uint64_t)round) % 255 + 1);
}

struct purger {
	const char *target;       /* the file, or the mount root */
	unsigned count;           /* purges to make */
	atomic_bool finished;     /* all made (or one failed) */
	atomic_int err;           /* errno of a failed purge, else 0 */
};

static void *purger_main(void *arg)
{
	struct purger *p = arg;

	for (unsigned i = 0; i < p->count; i++)
		if (setxattr(p->target, "user.volatile.purge", "all", 3, 0) != 0) {
			atomic_store(&p->err, errno);
			break;
		}
	atomic_store(&p->finished, true);
	return NULL;
}

/* Pages of path (npages written in round) that read neither their pattern nor lie wholly in
 * the purged set; the first one's description in first. */
static unsigned lost_pages(const char *path, uint64_t npages, int round, char *first,
			   size_t firstlen)
{
	struct extents x = purged_xattr(path); /* a report: the daemon looks at the file */
	uint8_t *got = read_file(path, npages * PG);
	unsigned lost = 0;

	for (uint64_t k = 0; k < npages; k++) {
		const uint8_t *p = got + k * PG;
		size_t wrong = 0, zero = 0;

		for (size_t i = 0; i < PG; i++) {
			wrong += p[i] != page_fill(k, round);
			zero += p[i] == 0;
		}
		if (wrong == 0 || ext_covers(&x, k * PG, (k + 1) * PG))
			continue;
		if (lost++ == 0)
			snprintf(first, firstlen,
				 "page %" PRIu64 " (bytes %" PRIu64 "-%" PRIu64 ") has %zu wrong "
				 "byte(s), %zu of them zeros, and is not wholly in the purged set "
				 "[%s]", k, k * PG, (k + 1) * PG - 1, wrong, zero, ext_str(&x));
	}
	free(got);
	free(x.e);
	return lost;
}

/*
 * One round on pre (its descriptor opened before the file's first mark): mark the empty file
 * with unit, append LOSS_WARM_PAGES pages, start the purger (on the mount root; on the file
 * in every tenth round: a purge of the file holds the kernel's lock of its inode, which a
 * passthrough write(2) takes too, so those never overlap a write), append until its last
 * purge returned, then check.  With close, the descriptor is closed and the file checked
 * again.  Then the file is unmarked and truncated to 0 for the next round on pre.  Returns
 * the pages lost without a report; the first one's description in first.
 */
static unsigned loss_round(struct premark *pre, const char *unit, int round, bool close_it,
			   char *first, size_t firstlen)
{
	bool root = round % 10 != 9;
	struct purger p = { .target = root ? mount_dir : pre->path,
			    .count = 1 + (unsigned)round % LOSS_PURGES };
	pthread_t th;
	uint8_t page[PG];
	uint64_t k;
	unsigned lost;
	char msg[1024] = "";

	set_attr(pre->path, "user.volatile.mark", unit);
	for (k = 0; k < LOSS_MAX_PAGES; k++) {
		if (k == LOSS_WARM_PAGES)
			ck_assert_int_eq(pthread_create(&th, NULL, purger_main, &p), 0);
		else if (k > LOSS_WARM_PAGES && atomic_load(&p.finished))
			break;
		memset(page, page_fill(k, round), PG);
		ck_assert_msg(pwrite(pre->fd, page, PG, (off_t)(k * PG)) == (ssize_t)PG,
			      "round %d: appending page %" PRIu64 ": %s", round, k, errname(errno));
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(atomic_load(&p.err) == 0, "round %d: purging %s: %s", round, p.target,
		      errname(atomic_load(&p.err)));

	lost = lost_pages(pre->path, k, round, msg, sizeof(msg));
	if (lost)
		snprintf(first, firstlen, "round %d (%s, %u purge(s) of %s, %" PRIu64 " pages, "
			 "the writer's descriptor open): %s", round, unit, p.count,
			 root ? "the mount root" : "the file", k, msg);
	if (close_it) {
		CHECK(close(pre->fd));
		pre->fd = -1;
		if (!lost) {
			lost = lost_pages(pre->path, k, round, msg, sizeof(msg));
			if (lost)
				snprintf(first, firstlen, "round %d (%s, %u purge(s) of %s, %" PRIu64
					 " pages, after the writer's close): %s", round, unit,
					 p.count, root ? "the mount root" : "the file", k, msg);
		}
	}
	/* Out of the next rounds' way: no unit (a purge of the mount root visits every file
	 * with units), no data, no purged bytes. */
	set_attr(pre->path, "user.volatile.unmark", "0:0");
	CHECK(truncate(pre->path, 0));
	return lost;
}

static void loss_case(struct premark *pre, const char *unit)
{
	unsigned bad_rounds = 0, pages = 0;
	char first[2048] = "";
	double t0 = now_s();

	for (int i = 0; i < LOSS_FDS; i++)
		ck_assert_msg(pre[i].fd >= 0, "main() did not open %s", pre[i].path);
	for (int r = 0; r < loss_rounds; r++) {
		char msg[2048] = "";
		unsigned lost = loss_round(&pre[r % LOSS_FDS], unit, r, r + LOSS_FDS >= loss_rounds,
					   msg, sizeof(msg));

		if (lost && bad_rounds++ == 0)
			snprintf(first, sizeof(first), "%s", msg);
		pages += lost;
	}
	fprintf(stderr, "exact: loss %s: %d rounds in %.1f s, %u with pages lost without a "
		"report (passthrough=%s)\n", unit, loss_rounds, now_s() - t0, bad_rounds,
		path_name);
	ck_assert_msg(bad_rounds == 0,
		      "mark %s: %u of %d rounds lost %u page(s) without a report; first: %s", unit,
		      bad_rounds, loss_rounds, pages, first);
}

START_TEST(loss_unbounded_unit)
{
	loss_case(pre_unbounded, "0:0");
}
END_TEST

START_TEST(loss_bounded_unit)
{
	loss_case(pre_bounded, "0:64M");
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* stale: sendfile, splice and copy_file_range after a report                               */

#define STALE_SIZE (64 * 1024)

/* The first byte where got differs from want, or len. */
static size_t first_diff(const uint8_t *got, const uint8_t *want, size_t len)
{
	size_t i = 0;

	while (i < len && got[i] == want[i])
		i++;
	return i;
}

/* Adds "WAY returns 0xGG at byte N where pread returns 0xWW; " to msg when they differ. */
static void note_diff(char *msg, size_t cap, const char *way, const uint8_t *got,
		      const uint8_t *want)
{
	size_t i = first_diff(got, want, STALE_SIZE), o = strlen(msg);

	if (i < STALE_SIZE)
		snprintf(msg + o, cap - o, "%s returns 0x%02x at byte %zu where pread returns "
			 "0x%02x; ", way, got[i], i, want[i]);
}

/* Reads fd's [0, STALE_SIZE) with pread, sendfile, splice and copy_file_range; asserts that
 * pread returns want (zeros) and every other way what pread returns. */
static void assert_every_read(int fd, const uint8_t *want, const char *when)
{
	uint8_t *pr = xmalloc(STALE_SIZE), *buf = xmalloc(STALE_SIZE);
	char msg[1024] = "";
	int mfd, pfd[2], dst;
	off_t off;
	size_t done, i;

	/* pread itself. */
	ck_assert_uint_eq(pread_all(fd, pr, STALE_SIZE, 0), STALE_SIZE);
	i = first_diff(pr, want, STALE_SIZE);
	ck_assert_msg(i == STALE_SIZE, "%s: pread returns 0x%02x at byte %zu, want 0x%02x "
		      "(passthrough=%s)", when, pr[i], i, want[i], path_name);

	/* sendfile into a memfd. */
	mfd = CHECK(memfd_create("exact-sendfile", 0));
	off = 0;
	for (done = 0; done < STALE_SIZE;) {
		ssize_t n = sendfile(mfd, fd, &off, STALE_SIZE - done);

		ck_assert_msg(n > 0, "%s: sendfile: %s", when, n < 0 ? errname(errno) : "0 bytes");
		done += (size_t)n;
	}
	ck_assert_uint_eq(pread_all(mfd, buf, STALE_SIZE, 0), STALE_SIZE);
	close(mfd);
	note_diff(msg, sizeof(msg), "sendfile", buf, pr);

	/* splice through a pipe. */
	CHECK(pipe(pfd));
	off = 0;
	for (done = 0; done < STALE_SIZE;) {
		ssize_t n = splice(fd, &off, pfd[1], NULL, STALE_SIZE - done, 0), m;

		ck_assert_msg(n > 0, "%s: splice: %s", when, n < 0 ? errname(errno) : "0 bytes");
		for (ssize_t got = 0; got < n; got += m) {
			m = read(pfd[0], buf + done + got, (size_t)(n - got));
			ck_assert_msg(m > 0, "%s: read from the pipe: %s", when, errname(errno));
		}
		done += (size_t)n;
	}
	close(pfd[0]);
	close(pfd[1]);
	note_diff(msg, sizeof(msg), "splice", buf, pr);

	/* copy_file_range into another file on the mount. */
	dst = CHECK(open("copy", O_RDWR | O_CREAT | O_TRUNC, 0644));
	{
		loff_t in = 0, out = 0;

		for (done = 0; done < STALE_SIZE;) {
			ssize_t n = copy_file_range(fd, &in, dst, &out, STALE_SIZE - done, 0);

			ck_assert_msg(n > 0, "%s: copy_file_range: %s", when,
				      n < 0 ? errname(errno) : "0 bytes");
			done += (size_t)n;
		}
	}
	ck_assert_uint_eq(pread_all(dst, buf, STALE_SIZE, 0), STALE_SIZE);
	close(dst);
	note_diff(msg, sizeof(msg), "copy_file_range", buf, pr);

	ck_assert_msg(msg[0] == '\0', "%s: discarded data after the report: %s(passthrough=%s)",
		      when, msg, path_name);
	free(buf);
	free(pr);
}

START_TEST(stale_splice_family_after_purge)
{
	uint8_t *zeros = calloc(1, STALE_SIZE);
	int fd = make_file_pattern("f", STALE_SIZE, 1);

	CHECK(close(fd));
	set_attr("f", "user.volatile.mark", "0:0");
	purge_file("f"); /* its return is a report */
	fd = CHECK(open("f", O_RDWR));
	assert_every_read(fd, zeros, "opened O_RDWR after the purge");
	close(fd);
	free(zeros);
}
END_TEST

START_TEST(stale_splice_family_cached_before_purge)
{
	uint8_t *zeros = calloc(1, STALE_SIZE), *data = xmalloc(STALE_SIZE), *buf;
	int fd = make_file_pattern("f", STALE_SIZE, 1), pfd[2], mfd;
	off_t off = 0;
	ssize_t n;

	CHECK(close(fd));
	set_attr("f", "user.volatile.mark", "0:0");
	fd = CHECK(open("f", O_RDWR));
	/* Read it through splice and sendfile first: the data, and whatever they cache. */
	pattern_fill(data, STALE_SIZE, 0, 1);
	buf = xmalloc(STALE_SIZE);
	CHECK(pipe(pfd));
	n = CHECK(splice(fd, &off, pfd[1], NULL, STALE_SIZE, 0));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(read(pfd[0], buf, (size_t)n), n);
	ck_assert_msg(memcmp(buf, data, (size_t)n) == 0, "splice before the purge: not the data");
	close(pfd[0]);
	close(pfd[1]);
	mfd = CHECK(memfd_create("exact-sendfile", 0));
	off = 0;
	ck_assert_int_gt(CHECK(sendfile(mfd, fd, &off, STALE_SIZE)), 0);
	close(mfd);

	purge_file("f"); /* its return is a report */
	assert_every_read(fd, zeros, "read by splice and sendfile, then purged");
	close(fd);
	free(buf);
	free(data);
	free(zeros);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* withdrawn: stores through a mapping into purged pages                                    */

#define W_PAGES 4

START_TEST(withdrawn_store_into_purged_page)
{
	const size_t size = W_PAGES * PG;
	const uint64_t lo = PG, hi = 2 * PG; /* the page stored into */
	uint8_t *want = xmalloc(size);
	int fd = make_file_pattern("f", size, 1), purges = 0;
	volatile uint8_t *m;
	struct stat st;
	bool listed = false;

	pattern_fill(want, size, 0, 1);
	CHECK(close(fd));
	set_attr("f", "user.volatile.mark", "0:0");
	fd = CHECK(open("f", O_RDWR));
	m = map_file(fd, size);

	/* The first store, then purges until one takes the page (the classic path may write
	 * the dirty page back during the first and keep it: it then holds data, section 4). */
	m[lo + 100] = 0xAB;
	want[lo + 100] = 0xAB;
	while (!listed && purges < 4) {
		struct extents x;

		purge_file("f");
		purges++;
		assert_no_unreported_loss("f", want, size, "first store, then a purge");
		x = purged_xattr("f");
		listed = ext_covers(&x, lo, hi);
		free(x.e);
	}
	ck_assert_msg(listed, "page %" PRIu64 " still not in the purged set after %d purges",
		      lo / PG, purges);
	fprintf(stderr, "exact: withdrawn_store: the page was listed after purge %d "
		"(passthrough=%s)\n", purges, path_name);

	/* The second store, into the purged page: the page stays purged, but for that byte. */
	m[lo + 200] = 0xCD;
	want[lo + 200] = 0xCD;
	assert_listed("f", lo, lo + 200, "a second store into the purged page");
	assert_listed("f", lo + 201, hi, "a second store into the purged page");
	assert_no_unreported_loss("f", want, size, "a second store into the purged page");

	CHECK(munmap((void *)m, size));
	CHECK(close(fd));
	assert_listed("f", lo, lo + 200, "the second store, munmap and close");
	assert_listed("f", lo + 201, hi, "the second store, munmap and close");
	assert_no_unreported_loss("f", want, size, "the second store, munmap and close");

	st = stat_elsewhere("f");
	ck_assert_int_eq(st.st_size, (off_t)size);
	assert_listed("f", lo, lo + 200, "the second store, close, stat by another process");
	assert_listed("f", lo + 201, hi, "the second store, close, stat by another process");
	assert_no_unreported_loss("f", want, size,
				  "the second store, close, stat by another process");
	free(want);
}
END_TEST

/*
 * Rounds of: a purger makes 1 to 4 purges of the file (struct purger, as the loss cases'),
 * while this thread copies the region through the mapping again and again, in 64 KiB
 * memcpys, until a whole pass began after the purger's last purge returned (a loss that a
 * later purge would list again stays: the pages written after it, the region's partial
 * first and last pages among them, and the page being copied when it came).  After each
 * round, and after munmap and close, every byte that does not hold what was written lies in
 * the purged set.
 */
START_TEST(withdrawn_memcpy_straddling_purges)
{
	/* The region copied starts and ends inside a page. */
	const size_t size = STRADDLE_SIZE, rlo = 1000, rhi = STRADDLE_SIZE - 1000;
	const size_t chunk = 64 * 1024;
	uint8_t *want = xmalloc(size), *src = xmalloc(size);
	int fd = make_file_pattern("f", size, 1);
	unsigned passes = 0;
	uint8_t *m;

	pattern_fill(want, size, 0, 1);
	CHECK(close(fd));
	set_attr("f", "user.volatile.mark", "0:0");
	fd = CHECK(open("f", O_RDWR));
	m = map_file(fd, size);

	for (int r = 0; r < STRADDLE_ROUNDS; r++) {
		struct purger p = { .target = "f", .count = 1 + (unsigned)r % 4 };
		pthread_t th;
		bool last;
		char when[128];

		pattern_fill(src, size, 0, 10 + (unsigned)r);
		memcpy(want + rlo, src + rlo, rhi - rlo);
		ck_assert_int_eq(pthread_create(&th, NULL, purger_main, &p), 0);
		do {
			last = atomic_load(&p.finished);
			for (size_t off = rlo; off < rhi; off += chunk)
				memcpy(m + off, src + off, off + chunk < rhi ? chunk : rhi - off);
			passes++;
		} while (!last);
		ck_assert_int_eq(pthread_join(th, NULL), 0);
		ck_assert_msg(atomic_load(&p.err) == 0, "purge: %s", errname(atomic_load(&p.err)));
		snprintf(when, sizeof(when), "round %d: memcpys through the mapping beside %u "
			 "purge(s)", r, p.count);
		assert_no_unreported_loss("f", want, size, when);
	}
	fprintf(stderr, "exact: withdrawn_memcpy: %u passes of %zu MiB in %d rounds "
		"(passthrough=%s)\n", passes, (rhi - rlo) >> 20, STRADDLE_ROUNDS, path_name);

	CHECK(munmap(m, size));
	CHECK(close(fd));
	assert_no_unreported_loss("f", want, size, "memcpys beside purges, munmap and close");
	(void)stat_elsewhere("f");
	assert_no_unreported_loss("f", want, size,
				  "memcpys beside purges, close, stat by another process");
	free(src);
	free(want);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* unmark: purged = 1 after a store through a mapping into a purged page                     */

static void unmark_case(bool sync)
{
	const size_t size = W_PAGES * PG;
	const uint64_t lo = PG; /* the page stored into */
	int fd = make_file_pattern("f", size, 1), purged = -1;
	volatile uint8_t *m;
	uint8_t sink = 0;
	uint64_t bytes = UINT64_MAX;

	CHECK(close(fd));
	fd = CHECK(open("f", O_RDWR));
	CHECK(volatilefs_mark(fd, 0, 0, 0));
	m = map_file(fd, size);
	for (size_t off = 0; off < size; off += PG) /* the mapping holds the pages */
		sink ^= m[off];
	(void)sink;
	purge_file("f");
	assert_listed("f", 0, size, "the purge");

	m[lo + 10] = 0x5A; /* one store into the purged page */
	if (sync)
		CHECK(msync((void *)m, size, MS_SYNC));
	CHECK(volatilefs_unmark(fd, lo, PG, &bytes, &purged));
	ck_assert_msg(purged == 1,
		      "unmark of the page stored into after the purge%s answers purged=%d, want 1 "
		      "(bytes=%" PRIu64 "; passthrough=%s)", sync ? " (and msync)" : "", purged,
		      bytes, path_name);
	ck_assert_uint_eq(bytes, PG);
	CHECK(munmap((void *)m, size));
	CHECK(close(fd));
}

START_TEST(unmark_after_mapped_store)
{
	unmark_case(false);
}
END_TEST

START_TEST(unmark_after_mapped_store_and_msync)
{
	unmark_case(true);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* attrs: size, blocks and times after stores through a mapping                              */

static bool ts_after(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

/* What statx with STATX_SIZE | STATX_BLOCKS | STATX_MTIME (what `stat -c "%s %b %Y"` asks
 * for; `ls -l` asks for no atime either) returns in a child process, as a struct stat. */
static struct stat statx_elsewhere(const char *path)
{
	int pfd[2], status;
	struct stat st = { 0 };
	pid_t pid;

	CHECK(pipe(pfd));
	pid = CHECK(fork());
	if (pid == 0) {
		struct statx x;
		struct stat cst = { 0 };
		int ok = statx(AT_FDCWD, path, AT_STATX_SYNC_AS_STAT,
			       STATX_SIZE | STATX_BLOCKS | STATX_MTIME, &x) == 0;

		if (ok) {
			cst.st_size = (off_t)x.stx_size;
			cst.st_blocks = (blkcnt_t)x.stx_blocks;
			cst.st_mtim.tv_sec = x.stx_mtime.tv_sec;
			cst.st_mtim.tv_nsec = x.stx_mtime.tv_nsec;
		} else {
			cst.st_size = -errno;
		}
		_exit(write(pfd[1], &cst, sizeof(cst)) == (ssize_t)sizeof(cst) && ok ? 0 : 1);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &st, sizeof(st)), (ssize_t)sizeof(st));
	close(pfd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "statx(%s) in another process failed: %s", path, errname((int)-st.st_size));
	return st;
}

/* Size, blocks and mtime of st as what the attrs case wants; the message in msg. */
static bool attrs_ok(const struct stat *st, const struct stat *before, off_t size,
		     blkcnt_t need, const char *how, double after, char *msg, size_t cap)
{
	snprintf(msg, cap, "%s from another process %.1f s after the writer's munmap and close: "
		 "size %lld (want %lld), st_blocks %lld (want >= %lld for the pages stored), "
		 "mtime %lld.%09ld (before the stores: %lld.%09ld, want later; st_blocks was "
		 "%lld) (passthrough=%s)", how, after, (long long)st->st_size, (long long)size,
		 (long long)st->st_blocks, (long long)need, (long long)st->st_mtim.tv_sec,
		 st->st_mtim.tv_nsec, (long long)before->st_mtim.tv_sec, before->st_mtim.tv_nsec,
		 (long long)before->st_blocks, path_name);
	return st->st_size == size && st->st_blocks >= need &&
	       ts_after(st->st_mtim, before->st_mtim);
}

START_TEST(attrs_after_mapped_stores)
{
	const size_t size = 16 * MIB;
	static const uint64_t pages[] = { 0, 1000, 2001, 4095 };
	const blkcnt_t need = (blkcnt_t)(sizeof(pages) / sizeof(pages[0]) * PG / 512);
	int fd = CHECK(open("sparse", O_RDWR | O_CREAT | O_TRUNC, 0644));
	struct stat before, st;
	char msg[1024];
	uint8_t *m;
	double t0;
	bool ok;

	CHECK(ftruncate(fd, (off_t)size));
	CHECK(fstat(fd, &before)); /* what the kernel may keep of the file's attributes */
	nap_ms(1100); /* a later mtime shows, whatever the clock's granularity */
	m = map_file(fd, size);
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++)
		memset(m + pages[i] * PG, 0x77, PG);
	CHECK(munmap(m, size));
	CHECK(close(fd));

	/* First a statx that asks for no atime (a full stat may refresh what the kernel keeps
	 * because a read made the atime stale, and so hide stale blocks and times from the
	 * asks that follow); then a plain stat. */
	t0 = now_s();
	for (;;) {
		st = statx_elsewhere("sparse");
		ok = attrs_ok(&st, &before, (off_t)size, need,
			      "statx(STATX_SIZE | STATX_BLOCKS | STATX_MTIME)", now_s() - t0, msg,
			      sizeof(msg));
		if (ok || now_s() - t0 > ATTR_WAIT_MS / 1000.0)
			break;
		nap_ms(50);
	}
	ck_assert_msg(ok, "%s", msg);
	if (now_s() - t0 > 0.2)
		fprintf(stderr, "exact: attrs: another process saw the stores after %.2f s "
			"(passthrough=%s)\n", now_s() - t0, path_name);
	st = stat_elsewhere("sparse");
	ck_assert_msg(attrs_ok(&st, &before, (off_t)size, need, "stat", now_s() - t0, msg,
			       sizeof(msg)), "%s", msg);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static Suite *exact_suite(void)
{
	Suite *s = suite_create("exact");
	TCase *tc;

	/* 1000 rounds take about 2 s here; the timeouts are hang detectors. */
	tc = mtest_tcase(s, "loss", mtest_setup, mtest_teardown, 120);
	tcase_add_test(tc, loss_unbounded_unit);
	tcase_add_test(tc, loss_bounded_unit);

	tc = mtest_tcase(s, "stale", mtest_setup, mtest_teardown, 30);
	tcase_add_test(tc, stale_splice_family_after_purge);
	tcase_add_test(tc, stale_splice_family_cached_before_purge);

	tc = mtest_tcase(s, "withdrawn", mtest_setup, mtest_teardown, 60);
	tcase_add_test(tc, withdrawn_store_into_purged_page);
	tcase_add_test(tc, withdrawn_memcpy_straddling_purges);

	tc = mtest_tcase(s, "unmark", mtest_setup, mtest_teardown, 30);
	tcase_add_test(tc, unmark_after_mapped_store);
	tcase_add_test(tc, unmark_after_mapped_store_and_msync);

	tc = mtest_tcase(s, "attrs", mtest_setup, mtest_teardown, 30);
	tcase_add_test(tc, attrs_after_mapped_stores);
	return s;
}

/* Opens the loss cases' files before any test can mark anything on the mount. */
static bool open_premark(struct premark *pre, const char *dir, const char *prefix)
{
	for (int i = 0; i < LOSS_FDS; i++) {
		snprintf(pre[i].path, sizeof(pre[i].path), "%s/%s%d", dir, prefix, i);
		pre[i].fd = open(pre[i].path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (pre[i].fd < 0) {
			fprintf(stderr, "exact: %s: %s\n", pre[i].path, strerror(errno));
			return false;
		}
	}
	return true;
}

int main(void)
{
	char dir[PATH_MAX + 16], stats[4096];
	ssize_t n;
	const char *pt;

	if (!mtest_find_mount("exact", mount_dir))
		return 1;
	n = getxattr(mount_dir, "user.volatile.stats", stats, sizeof(stats) - 1);
	if (n < 0) {
		fprintf(stderr, "exact: user.volatile.stats of %s: %s\n", mount_dir,
			strerror(errno));
		return 1;
	}
	stats[n] = '\0';
	pt = strstr(stats, "passthrough=");
	if (pt)
		snprintf(path_name, sizeof(path_name), "%.*s", (int)strcspn(pt + 12, "\n"), pt + 12);
	if (!mtest_make_run_dir("exact", mount_dir))
		return 1;
	snprintf(dir, sizeof(dir), "%s/premark", run_dir);
	if (mkdir(dir, 0755) != 0) {
		fprintf(stderr, "exact: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	/* Before any mark: on the passthrough path the kernel writes through these itself. */
	if (getenv("VFS_EXACT_ROUNDS")) {
		loss_rounds = atoi(getenv("VFS_EXACT_ROUNDS"));
		if (loss_rounds < 1 || loss_rounds > 1000000) {
			fprintf(stderr, "exact: VFS_EXACT_ROUNDS=%s: want 1 to 1000000\n",
				getenv("VFS_EXACT_ROUNDS"));
			return 1;
		}
	}
	if (!open_premark(pre_unbounded, dir, "u") || !open_premark(pre_bounded, dir, "b"))
		return 1;
	fprintf(stderr, "exact: passthrough=%s\n", path_name);
	return mtest_run(exact_suite());
}
