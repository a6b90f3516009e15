/*
 * glyphbench - a glyph-cache-like workload (bench/, run by contrib/bench.sh).
 *
 *   glyphbench FILE FRAMES [plain|volatile|each|noop] [SEED]
 *
 * One atlas file of 64 MiB holds entries of 4 to 64 KiB (whole pages,
 * sizes at random), written once and then read through a shared mmap, as
 * a compositor reads its glyph atlas.  Each frame uses 48 entries: 80% of
 * the picks come from a hot set (10% of the entries), the rest from all of
 * them.  Every use reads the whole entry through the mapping and checks its
 * first word.
 *
 * volatile (default; needs volatilefs): every entry is marked volatile, one
 * unit each, before it is written (so that on a mount whose memory_limit is
 * below the atlas the writes purge older entries rather than fail).  A
 * frame knows the entries it needs before it draws, as a compositor does,
 * and batches as one would:
 *   1. one fsetxattr(user.volatile.unmark) naming every volatile entry the
 *      frame needs (DESIGN section 5: several ranges in one value);
 *   2. one fgetxattr(user.volatile.purged): the file's purged set; the
 *      entries of step 1 that it touches are regenerated (pwrite of the
 *      whole entry, which takes its bytes out of the purged set).  Only
 *      after step 1, so that nothing it reports can be purged again;
 *   3. the reads;
 *   4. one fsetxattr(user.volatile.mark) naming every entry that has now
 *      gone unused for 4 frames (each range becomes a unit of its own).
 * A step with nothing to name makes no call.
 *
 * batch: as volatile, in ONE round trip per frame: volatilefs_batch (an
 * ioctl) unmarks the entries the frame needs, says for each whether it
 * was purged, and marks those that went idle at the end of the previous
 * frame (marking is one frame later than in volatile; an idle entry the
 * frame needs again is not marked at all).
 *
 * each: the same frames with one libvolatilefs call per entry (an ioctl
 * each: volatilefs_unmark before use, its purged bit deciding the
 * regeneration, volatilefs_mark when idle): the cost of not batching.
 *
 * noop: the frames of volatile with every volatilefs call of steps 1, 2 and
 * 4 replaced by a no-op FUSE round trip (fgetxattr of a user.* name no file
 * has: ENODATA), timed the same way.  Nothing is marked.  Its ns_per_call is
 * what an empty round trip costs at those points of a frame (after the
 * client has been reading for a while): the floor for a volatilefs call
 * there.
 *
 * plain: the same frames without marking or unmarking (any filesystem).
 *
 * Prints "frames_per_s", "entries_per_s", and in the other modes "marks",
 * "unmarks" (entries named), "calls" (round trips made for them),
 * "calls_per_frame", "regenerated", "ns_per_regen" (the mean time of one
 * regeneration's pwrite), "vol_calls_per_s", "ns_per_call" (the mean time
 * of one such call, timed around each) and the same by kind,
 * "ns_per_unmark_call", "ns_per_purged_call", "ns_per_mark_call"; always
 * "errors" (entries whose data was wrong: must be 0).
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "bench.h"
#include "volatilefs.h"

#define ATLAS (64u << 20)
#define PAGE 4096u
#define USES 48
#define IDLE 4
#define HOT_PERMILLE 800
/* One xattr value of ranges: under the 64 KiB limit (DESIGN section 5). */
#define VALUE_MAX 60000u
#define PURGED_MAX (64u << 10)

enum mode { PLAIN, VOLATILE, BATCH, EACH, NOOP };

struct entry {
	uint64_t off, len;
	uint64_t gen;
	long last_use;
	long wanted;    /* frame that last put it in the unmark list */
	long picked;    /* frame that last picked it */
	int vol;
};

struct calls {
	uint64_t n;
	double t;
};

static const char *path;
static int fd;
static char *stage; /* one entry, built before its pwrite */

static uint64_t expected_first(unsigned i, uint64_t gen)
{
	uint64_t w;

	fill_pattern(&w, sizeof(w), (uint64_t)i * 1000003u + gen);
	return w;
}

static void write_entry(const struct entry *e, unsigned i)
{
	fill_pattern(stage, e->len, (uint64_t)i * 1000003u + e->gen);
	if (write_all(fd, stage, e->len, (off_t)e->off) != 0)
		die("write %s:", path);
}

static void timed_noop(struct calls *c)
{
	char buf[64];
	double t0 = now_s();

	if (fgetxattr(fd, "user.bench.noop", buf, sizeof(buf)) >= 0 || errno != ENODATA)
		die("getxattr user.bench.noop %s: expected ENODATA:", path);
	c->t += now_s() - t0;
	c->n++;
}

/*
 * fsetxattr(name) with the ranges of entries idx[0..n), as few calls as the
 * value limit allows (one for any frame).
 */
static void set_ranges(const char *name, const struct entry *e, const unsigned *idx, unsigned n,
		       struct calls *c)
{
	static char val[VALUE_MAX + 64];
	size_t len = 0;

	for (unsigned k = 0; k < n; k++) {
		len += (size_t)snprintf(val + len, sizeof(val) - len, "%llu:%llu ",
					(unsigned long long)e[idx[k]].off,
					(unsigned long long)e[idx[k]].len);
		if (len > VALUE_MAX || k == n - 1) {
			double t0 = now_s();

			if (fsetxattr(fd, name, val, len, 0) != 0)
				die("setxattr %s %s (%zu bytes):", name, path, len);
			if (c) {
				c->t += now_s() - t0;
				c->n++;
			}
			len = 0;
		}
	}
}

static int cmp_off(const void *a, const void *b, void *arg)
{
	const struct entry *e = arg;
	uint64_t x = e[*(const unsigned *)a].off, y = e[*(const unsigned *)b].off;

	return (x > y) - (x < y);
}

/*
 * Which of the entries idx[0..n) (sorted here by offset) the file's purged
 * set touches: purged[k] for idx[k].  One fgetxattr of user.volatile.purged
 * ("OFFSET:LENGTH" lines, sorted, coalesced); a set too large for one value
 * (ERANGE) is listed with volatilefs_purged instead.
 */
static void find_purged(struct entry *e, unsigned *idx, unsigned n, int *purged,
			struct calls *c)
{
	static char buf[PURGED_MAX + 1];
	static struct volatilefs_extent ext[ATLAS / PAGE / 2 + 1];
	size_t next = 0, count = 0;
	double t0 = now_s();
	ssize_t len = fgetxattr(fd, "user.volatile.purged", buf, PURGED_MAX);

	if (len >= 0) {
		char *p = buf, *end = buf + len;

		buf[len] = '\0';
		while (p < end && count < sizeof(ext) / sizeof(ext[0])) {
			unsigned long long o, l;
			int used;

			if (sscanf(p, "%llu:%llu\n%n", &o, &l, &used) != 2)
				die("user.volatile.purged of %s: cannot parse '%.40s'", path, p);
			ext[count].offset = o;
			ext[count++].length = l;
			p += used;
		}
	} else if (errno == ERANGE) {
		if (volatilefs_purged(fd, 0, 0, ext, sizeof(ext) / sizeof(ext[0]), &count) != 0)
			die("volatilefs_purged %s:", path);
	} else {
		die("getxattr user.volatile.purged %s:", path);
	}
	c->t += now_s() - t0;
	c->n++;
	qsort_r(idx, n, sizeof(*idx), cmp_off, e);
	for (unsigned k = 0; k < n; k++) {
		const struct entry *x = &e[idx[k]];

		while (next < count && ext[next].offset + ext[next].length <= x->off)
			next++;
		purged[k] = next < count && ext[next].offset < x->off + x->len;
	}
}

int main(int argc, char **argv)
{
	struct entry *e;
	unsigned n = 0, nhot, *hot, *ring[IDLE + 1], nring[IDLE + 1];
	unsigned use[USES], list[USES], nlist, pending[USES], npending = 0;
	int purged[USES];
	uint64_t seed, off = 0, marks = 0, unmarks = 0, regen = 0, errors = 0, sink = 0;
	/* Round trips by kind: unmark, purged listing, mark (noop: in their places). */
	struct calls cu = { 0 }, cp = { 0 }, cm = { 0 };
	enum mode mode = VOLATILE;
	long frames;
	char *map;
	double t0, t, tregen = 0;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: glyphbench FILE FRAMES [plain|volatile|batch|each|noop] [SEED]\n");
		return 2;
	}
	path = argv[1];
	frames = strtol(argv[2], NULL, 0);
	if (argc >= 4) {
		if (strcmp(argv[3], "plain") == 0)
			mode = PLAIN;
		else if (strcmp(argv[3], "volatile") == 0)
			mode = VOLATILE;
		else if (strcmp(argv[3], "batch") == 0)
			mode = BATCH;
		else if (strcmp(argv[3], "each") == 0)
			mode = EACH;
		else if (strcmp(argv[3], "noop") == 0)
			mode = NOOP;
		else
			die("unknown mode %s (plain, volatile, batch, each or noop)", argv[3]);
	}
	seed = argc >= 5 ? strtoull(argv[4], NULL, 0) : 1;
	seed = seed * 0x9E3779B97F4A7C15ULL + 7;

	e = calloc(ATLAS / PAGE, sizeof(*e));
	stage = malloc(64 * 1024);
	if (!e || !stage)
		die("out of memory");
	while (off < ATLAS) {
		uint64_t len = (1 + rnd_next(&seed) % 16) * PAGE;

		if (off + len > ATLAS)
			len = ATLAS - off;
		e[n].off = off;
		e[n].len = len;
		e[n].last_use = -1000;
		e[n].wanted = -1;
		e[n].picked = -1;
		off += len;
		n++;
	}
	nhot = n / 10;
	hot = malloc(sizeof(*hot) * n);
	for (unsigned i = 0; i < IDLE + 1; i++) {
		ring[i] = malloc(sizeof(unsigned) * USES);
		nring[i] = 0;
	}
	if (!hot || !ring[IDLE])
		die("out of memory");
	for (unsigned i = 0; i < n; i++)
		hot[i] = i;
	for (unsigned i = 0; i < nhot; i++) {
		unsigned j = i + (unsigned)(rnd_next(&seed) % (n - i)), tmp = hot[i];

		hot[i] = hot[j];
		hot[j] = tmp;
	}

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("open %s:", path);
	if (ftruncate(fd, ATLAS) != 0)
		die("ftruncate %s:", path);
	if (mode == VOLATILE || mode == BATCH || mode == EACH) {
		unsigned *all = malloc(sizeof(*all) * n);

		if (!all)
			die("out of memory");
		for (unsigned i = 0; i < n; i++)
			all[i] = i;
		set_ranges("user.volatile.mark", e, all, n, NULL);
		free(all);
	}
	for (unsigned i = 0; i < n; i++) {
		write_entry(&e[i], i);
		e[i].vol = mode != PLAIN;
	}
	map = mmap(NULL, ATLAS, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap %s:", path);

	t0 = now_s();
	for (long f = 0; f < frames; f++) {
		unsigned *slot = ring[f % (IDLE + 1)];

		nring[f % (IDLE + 1)] = 0;
		nlist = 0;
		/* The frame's entries, and the volatile ones among them. */
		for (int u = 0; u < USES; u++) {
			unsigned i = rnd_next(&seed) % 1000 < HOT_PERMILLE ?
					     hot[rnd_next(&seed) % nhot] :
					     (unsigned)(rnd_next(&seed) % n);

			use[u] = i;
			e[i].picked = f;
			if (e[i].vol && e[i].wanted != f) {
				e[i].wanted = f;
				list[nlist++] = i;
			}
		}
		if (mode == BATCH) {
			struct volatilefs_extent ext[2 * USES];
			unsigned char each[USES];
			unsigned nmark = 0;
			int merr = 0;

			for (unsigned k = 0; k < nlist; k++) {
				ext[k].offset = e[list[k]].off;
				ext[k].length = e[list[k]].len;
			}
			/* Went idle last frame and not picked again: mark now. */
			for (unsigned k = 0; k < npending; k++) {
				struct entry *x = &e[pending[k]];

				if (x->picked == f)
					continue;
				ext[nlist + nmark].offset = x->off;
				ext[nlist + nmark].length = x->len;
				pending[nmark++] = pending[k];
			}
			npending = 0;
			if (nlist || nmark) {
				double c0 = now_s();

				if (volatilefs_batch(fd, ext, nlist, ext + nlist, nmark, 0, NULL, each,
						     &merr) != 0)
					die("volatilefs_batch %s:", path);
				cu.t += now_s() - c0;
				cu.n++;
				if (merr)
					die("volatilefs_batch %s: marks: %s", path, strerror(merr));
			}
			for (unsigned k = 0; k < nlist; k++)
				purged[k] = each[k];
			for (unsigned k = 0; k < nmark; k++)
				e[pending[k]].vol = 1;
			marks += nmark;
		}
		if (nlist) {
			unmarks += nlist;
			if (mode != BATCH)
				memset(purged, 0, sizeof(purged));
			if (mode == VOLATILE) {
				set_ranges("user.volatile.unmark", e, list, nlist, &cu);
				find_purged(e, list, nlist, purged, &cp);
			} else if (mode == EACH) {
				for (unsigned k = 0; k < nlist; k++) {
					const struct entry *x = &e[list[k]];
					uint64_t bytes;
					double c0 = now_s();

					if (volatilefs_unmark(fd, x->off, x->len, &bytes, &purged[k]) != 0)
						die("volatilefs_unmark %s:", path);
					cu.t += now_s() - c0;
					cu.n++;
				}
			} else if (mode == NOOP) {
				timed_noop(&cu);
				timed_noop(&cp);
			}
			for (unsigned k = 0; k < nlist; k++) {
				struct entry *x = &e[list[k]];

				x->vol = 0;
				if (purged[k]) {
					double r0 = now_s();

					x->gen++;
					write_entry(x, list[k]);
					tregen += now_s() - r0;
					regen++;
				}
			}
		}
		for (int u = 0; u < USES; u++) {
			unsigned i = use[u];
			const uint64_t *w = (const uint64_t *)(map + e[i].off);
			uint64_t s = 0;

			for (uint64_t k = 0; k < e[i].len / 8; k++)
				s += w[k];
			sink += s;
			if (w[0] != expected_first(i, e[i].gen))
				errors++;
			if (e[i].last_use != f) {
				e[i].last_use = f;
				slot[nring[f % (IDLE + 1)]++] = i;
			}
		}
		/* Entries last used IDLE frames ago go idle: mark them. */
		if (mode != PLAIN && f >= IDLE) {
			unsigned r = (unsigned)((f - IDLE) % (IDLE + 1));

			nlist = 0;
			for (unsigned k = 0; k < nring[r]; k++) {
				unsigned i = ring[r][k];

				if (e[i].last_use == f - IDLE && !e[i].vol) {
					if (mode == BATCH) { /* with the next frame's call */
						pending[npending++] = i;
						continue;
					}
					e[i].vol = 1;
					list[nlist++] = i;
				}
			}
			marks += nlist;
			if (nlist && mode == VOLATILE) {
				set_ranges("user.volatile.mark", e, list, nlist, &cm);
			} else if (nlist && mode == EACH) {
				for (unsigned k = 0; k < nlist; k++) {
					double c0 = now_s();

					if (volatilefs_mark(fd, e[list[k]].off, e[list[k]].len, 0) != 0)
						die("volatilefs_mark %s:", path);
					cm.t += now_s() - c0;
					cm.n++;
				}
			} else if (nlist) {
				timed_noop(&cm);
			}
		}
	}
	t = now_s() - t0;
	printf("frames_per_s %.1f\n", frames / t);
	printf("entries_per_s %.1f\n", frames * USES / t);
	if (mode != PLAIN) {
		struct calls calls = { cu.n + cp.n + cm.n, cu.t + cp.t + cm.t };

		printf("marks %llu\nunmarks %llu\nregenerated %llu\n", (unsigned long long)marks,
		       (unsigned long long)unmarks, (unsigned long long)regen);
		printf("ns_per_regen %.1f\n", regen ? tregen * 1e9 / regen : 0);
		printf("calls %llu\ncalls_per_frame %.2f\n", (unsigned long long)calls.n,
		       frames ? (double)calls.n / frames : 0);
		printf("vol_calls_per_s %.1f\n", calls.n / t);
		printf("ns_per_call %.1f\n", calls.n ? calls.t * 1e9 / calls.n : 0);
		printf("ns_per_unmark_call %.1f\n", cu.n ? cu.t * 1e9 / cu.n : 0);
		printf("ns_per_purged_call %.1f\n", cp.n ? cp.t * 1e9 / cp.n : 0);
		printf("ns_per_mark_call %.1f\n", cm.n ? cm.t * 1e9 / cm.n : 0);
	}
	printf("errors %llu\n", (unsigned long long)errors);
	fprintf(stderr, "glyphbench: %u entries, checksum %llx\n", n, (unsigned long long)sink);
	munmap(map, ATLAS);
	close(fd);
	return errors ? 1 : 0;
}
