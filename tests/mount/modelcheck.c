/*
 * modelcheck: a model-checked random tester of volatile ranges (DESIGN section 4) against a
 * mounted volatilefs.
 *
 * A seeded generator produces a sequence of operations over a few files (3 to 5 live at a
 * time, up to a few hundred KiB each): pwrite, pread, ftruncate, fallocate (plain,
 * KEEP_SIZE, PUNCH_HOLE), writes and reads through a shared mapping (msync), mark and unmark
 * through libvolatilefs and through user.volatile.mark/unmark (several ranges per call,
 * flags anywhere), purged-extent queries, per-file purges (user.volatile.purge=all on the
 * file), purges of the whole mount (user.volatile.purge=all on the root), forgetting the
 * purged set (removexattr), create, rename (plain, RENAME_NOREPLACE, RENAME_EXCHANGE), link,
 * unlink (files stay open: unlinked files keep being used) and close/reopen (sometimes with
 * O_TRUNC). Each step runs against the mount and against a
 * model, and after each step the files are compared with the model: sizes, link counts, which
 * name is which inode, every byte of content (pread and the mapping), the purged set
 * (volatilefs_purged, paged, and user.volatile.purged), the units (user.volatile.ranges),
 * unmark's bytes and purged, and POLLPRI.
 *
 * The model follows DESIGN section 4 literally: pages and units, absorption of overlapping
 * units (touching ones stay apart), splitting on unmark, unbounded units that follow the
 * size, a purge discarding whole units and adding the unit's bytes within the size to the
 * purged set (which then read as zeros), writes removing exactly the bytes written (the data
 * is never zero: through a mapping or an open the kernel serves, a byte that is not zero is
 * what the daemon takes as written),
 * truncation and PUNCH_HOLE removing purged bytes, truncation cutting bounded units.
 * Memory pressure may purge any volatile unit at any time: the run uses a generous
 * memory_limit so that only the explicit purges happen, but the model stays honest: when
 * the daemon shows purged bytes the model did not expect, they are accepted if and only if
 * they are exactly whole volatile units of the model (within the size) that a purge could
 * have taken, and the model then takes them too (a note is printed).
 *
 * On a mismatch the test prints the seed, the step and what differed, then shrinks: it
 * replays the sequence cut at the failing step in a fresh directory, then deletes chunks of
 * steps (halves down to single steps) while the same kind of failure persists, and prints
 * the shrunk sequence as it executed (with files resolved) and a command that replays it.
 *
 *	$ tests/mount/with-mount.sh build/src/daemon/volatilefs -o memory_limit=1G \
 *		-- build/tests/mount/modelcheck
 *	100%: Checks: 5, Failures: 0, Errors: 0
 *
 * Longer by hand (seeds 1 to 200, 20000 operations each, no time limit per seed):
 *
 *	$ MODELCHECK_SEEDS=$(seq -s, 1 200) MODELCHECK_OPS=20000 CK_DEFAULT_TIMEOUT=0 \
 *		tests/mount/with-mount.sh build/src/daemon/volatilefs -o memory_limit=1G \
 *		-- build/tests/mount/modelcheck
 *
 * Environment:
 *	VFS_TEST_DIR              the mount (set by with-mount.sh)
 *	MODELCHECK_SEEDS          comma-separated seeds (decimal or 0x hex), or "random";
 *	                          default 1,2,3,4,5
 *	MODELCHECK_OPS            operations per seed, default 2000
 *	MODELCHECK_KEEP           replay only these steps (comma-separated indices) of the
 *	                          sequence that MODELCHECK_SEEDS/MODELCHECK_OPS generate, as
 *	                          printed after a shrink
 *	MODELCHECK_SHRINK_SECONDS time budget for shrinking, default 120
 *	MODELCHECK_TRACE=1        print every step as it runs
 *	VFS_WRITE_POLICY=unmark   the mount has -o write_policy=unmark: the model makes the
 *	                          pages every write touches non-volatile
 *
 * Layout as fsops.c and libvol.c: main() makes VFS_TEST_DIR/modelcheck.XXXXXX and removes it
 * at the end; each seed is one forked Check test (a loop test); every run of a sequence
 * (the first and each shrinking attempt) uses a fresh directory inside it, and closes and
 * removes everything it made before the next run.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <poll.h>
#include <stdarg.h>
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
#include "volatilefs.h"

#define PG ((uint64_t)4096)
#define KIB ((uint64_t)1024)
/* The model's reach and each file's mapping: no operation goes past it. */
#define CAP (512 * KIB)
/* Sizes the generator aims at (writes may go a bit past, never past CAP). */
#define MAXSZ (320 * KIB)
#define NNAMES 8
#define MAXINODES 8
#define MAXUNITS 512
#define UNB UINT64_MAX
/* Every this many steps, every live file gets the full check. */
#define FULL_CHECK_EVERY 50

static char mount_dir[PATH_MAX];
static uint64_t *seeds;
static size_t nseeds;
static long nops = 2000;
static long shrink_seconds = 120;
static bool trace_all;
/* The mount has -o write_policy=unmark (VFS_WRITE_POLICY=unmark). */
static bool write_unmark;
/* The mount runs on the passthrough path (stats: passthrough=on). */
static bool passthrough_path;
static long *keep;
static size_t nkeep;

/* ---------------------------------------------------------------------------------------- */
/* PRNG                                                                                     */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static uint64_t rnd(uint64_t *s, uint64_t n)
{
	return splitmix(s) % n;
}

static bool chance(uint64_t *s, unsigned percent)
{
	return rnd(s, 100) < percent;
}

/* The bytes a write puts down: from its own seed, never 0 (a zero shows a purge). */
static void fill_bytes(uint8_t *buf, size_t len, uint32_t dseed, uint64_t off)
{
	uint64_t s = ((uint64_t)dseed << 32) ^ off;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			s = splitmix(&s);
		buf[i] = (uint8_t)((s >> (8 * (i % 8))) % 255 + 1);
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Operations                                                                               */

enum kind {
	OP_CREATE, OP_WRITE, OP_READ, OP_TRUNC, OP_PUNCH, OP_MWRITE, OP_MREAD, OP_MARK,
	OP_UNMARK, OP_XMARK, OP_XUNMARK, OP_PURGED, OP_FPURGE, OP_RPURGE, OP_FORGET, OP_RENAME,
	OP_LINK, OP_UNLINK, OP_REOPEN, OP_FALLOC, OP_KINDS
};


#define MAXR 3

struct op {
	uint8_t k;
	uint8_t f;     /* which live file: f % (number of live files), in slot order */
	uint8_t a, b;  /* names */
	uint8_t nr;    /* ranges of an xattr mark/unmark */
	uint8_t path;  /* xattr through the path (1) or the descriptor (0) */
	uint32_t flags; /* mark flags; rename flags; purged: max */
	uint32_t dseed; /* data of a write; text form of an xattr value */
	uint64_t off, len;
	uint64_t roff[MAXR], rlen[MAXR];
};

/* ---------------------------------------------------------------------------------------- */
/* The model                                                                                */

struct vunit {
	uint64_t s, e; /* pages [s, e); e UNB: unbounded */
	uint8_t prio;
	bool age;
};

/* A byte of minode.purged that holds data the daemon may still report (model_unseen). */
#define PURGED_HELD 2

struct minode {
	bool live;
	int id;        /* #id in traces: creation order */
	int fd;
	uint8_t *map;
	ino_t ino;
	uint64_t size;
	uint8_t *data;   /* CAP bytes: content, zeros beyond size */
	uint8_t *purged; /* CAP bytes: 1 = in the purged set, PURGED_HELD: maybe (model_unseen) */
	struct vunit u[MAXUNITS];
	int nu;
	bool touched;
	/* Passthrough: fd was opened while the file held no unit and no purged byte, so the
	 * kernel serves its write(2)s without the daemon (volatilefs(8), PASSTHROUGH). */
	bool kernel_writes;
};

enum fail_kind {
	F_NONE, F_ERRNO, F_CONTENT, F_MAP, F_SIZE, F_NAMES, F_PURGED, F_PURGED_XATTR, F_RANGES,
	F_UNMARK, F_QUERY, F_POLL, F_HARNESS, F_KINDS
};

static const char *const fail_name[F_KINDS] = {
	"none", "errno", "content", "mapping content", "size/nlink", "names", "purged extents",
	"user.volatile.purged", "user.volatile.ranges", "unmark result", "purged query", "poll",
	"harness",
};

struct state {
	struct minode in[MAXINODES];
	int name[NNAMES]; /* slot of the inode the name is, or -1 */
	int ncreated;
	/* the real side */
	bool real;
	long trace_from; /* print the steps from this one on (LONG_MAX: none) */
	int dirfd;
	char dir[PATH_MAX];
	long step;
	/* failure */
	enum fail_kind fk;
	char msg[4096];
	long notes; /* pressure purges accepted */
	/*
	 * What this step did, for explaining a purge by memory pressure that happened during
	 * it: the units of its file before it, the bytes it wrote, punched or wrote back
	 * ([ws, we) of slot wslot; wadopt: a write-back through a mapping, whose pages may
	 * carry either the data from before the purge or zeros), and the file a pressure purge
	 * was found in.
	 */
	int pre_slot;
	struct vunit pre_u[MAXUNITS];
	int pre_nu;
	uint64_t pre_size;
	int wslot;
	uint64_t ws, we;
	bool wadopt;
	int pressure_slot;
};

static void name_of(int k, char *buf, size_t n)
{
	snprintf(buf, n, "n%d", k);
}

static void path_of(struct state *S, int k, char *buf, size_t n)
{
	if (snprintf(buf, n, "%s/n%d", S->dir, k) >= (int)n)
		buf[0] = '\0'; /* cannot happen: main() keeps the directory names short */
}

static int nlink_of(const struct state *S, int slot)
{
	int c = 0;

	for (int k = 0; k < NNAMES; k++)
		c += S->name[k] == slot;
	return c;
}

static int first_name(const struct state *S, int slot)
{
	for (int k = 0; k < NNAMES; k++)
		if (S->name[k] == slot)
			return k;
	return -1;
}

static int nlive(const struct state *S)
{
	int c = 0;

	for (int i = 0; i < MAXINODES; i++)
		c += S->in[i].live;
	return c;
}

/* The slot that selector f names, or -1 with no live file. */
static int resolve(const struct state *S, unsigned f)
{
	int n = nlive(S), j;

	if (n == 0)
		return -1;
	j = (int)(f % (unsigned)n);
	for (int i = 0; i < MAXINODES; i++)
		if (S->in[i].live && j-- == 0)
			return i;
	return -1;
}

static void mismatch(struct state *S, enum fail_kind k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void mismatch(struct state *S, enum fail_kind k, const char *fmt, ...)
{
	va_list ap;

	if (S->fk != F_NONE)
		return;
	S->fk = k;
	va_start(ap, fmt);
	vsnprintf(S->msg, sizeof(S->msg), fmt, ap);
	va_end(ap);
}

static uint64_t page_end_bytes(uint64_t e)
{
	return e == UNB ? UINT64_MAX : e * PG;
}

/* Pages of a range given as the library takes it (offset aligned, length rounded up). */
static void range_pages(uint64_t off, uint64_t len, uint64_t *s, uint64_t *e)
{
	*s = off / PG;
	*e = len ? (off + (len + PG - 1) / PG * PG) / PG : UNB;
}

static void unit_insert(struct state *S, struct minode *m, int at, struct vunit v)
{
	if (m->nu == MAXUNITS) {
		mismatch(S, F_HARNESS, "model: more than %d units", MAXUNITS);
		return;
	}
	memmove(&m->u[at + 1], &m->u[at], (size_t)(m->nu - at) * sizeof(m->u[0]));
	m->u[at] = v;
	m->nu++;
}

static void unit_delete(struct minode *m, int at)
{
	memmove(&m->u[at], &m->u[at + 1], (size_t)(m->nu - at - 1) * sizeof(m->u[0]));
	m->nu--;
}

static void model_mark(struct state *S, struct minode *m, uint64_t s, uint64_t e, unsigned prio,
		       bool age)
{
	int i = 0;

	while (i < m->nu) {
		struct vunit *u = &m->u[i];

		if (u->s < e && s < u->e) { /* overlaps: absorbed */
			if (u->s < s)
				s = u->s;
			if (u->e > e)
				e = u->e;
			unit_delete(m, i);
			continue;
		}
		i++;
	}
	for (i = 0; i < m->nu && m->u[i].s < s; i++)
		;
	unit_insert(S, m, i, (struct vunit){ s, e, (uint8_t)prio, age });
}

/* The bytes an unmark of pages [s, e) reports. */
static uint64_t model_unmark_bytes(const struct minode *m, uint64_t s, uint64_t e)
{
	uint64_t limit = (m->size + PG - 1) / PG, pages = 0;

	for (int i = 0; i < m->nu; i++) {
		const struct vunit *u = &m->u[i];
		uint64_t os = u->s > s ? u->s : s, oe = u->e < e ? u->e : e;

		if (os >= oe)
			continue;
		if (u->e == UNB) {
			if (oe > limit)
				oe = limit;
			pages += oe > os ? oe - os : 0;
		} else {
			pages += oe - os;
		}
	}
	return pages * PG;
}

static void model_unmark(struct state *S, struct minode *m, uint64_t s, uint64_t e)
{
	int i = 0;

	while (i < m->nu) {
		struct vunit *u = &m->u[i];

		if (!(u->s < e && s < u->e)) {
			i++;
			continue;
		}
		if (s <= u->s && u->e <= e) {
			unit_delete(m, i);
			continue;
		}
		if (u->s < s && e < u->e) {
			struct vunit right = *u;

			right.s = e;
			u->e = s;
			unit_insert(S, m, i + 1, right);
			i += 2;
			continue;
		}
		if (u->s < s)
			u->e = s;
		else
			u->s = e;
		i++;
	}
}

/* Any byte of [off, end) in the purged set (end UINT64_MAX: to the end). */
static bool model_purged_in(const struct minode *m, uint64_t off, uint64_t end)
{
	if (end > CAP)
		end = CAP;
	for (uint64_t b = off; b < end; b++)
		if (m->purged[b])
			return true;
	return false;
}

/* A purge of unit u: its bytes within the size join the purged set and read as zeros. */
static void model_purge_unit(struct minode *m, const struct vunit *u, uint8_t *purged)
{
	uint64_t s = u->s * PG, e = page_end_bytes(u->e);

	if (e > m->size)
		e = m->size;
	for (uint64_t b = s; b < e; b++)
		purged[b] = 1;
	if (purged == m->purged && s < e)
		memset(m->data + s, 0, e - s);
}

static void model_purge_file(struct minode *m)
{
	for (int i = 0; i < m->nu; i++)
		model_purge_unit(m, &m->u[i], m->purged);
}

static void model_truncate(struct minode *m, uint64_t size)
{
	if (size < m->size) {
		uint64_t keep = (size + PG - 1) / PG;

		memset(m->data + size, 0, m->size - size);
		memset(m->purged + size, 0, CAP - size);
		for (int i = 0; i < m->nu;) {
			struct vunit *u = &m->u[i];

			if (u->e != UNB && u->e > keep) {
				if (u->s >= keep) {
					unit_delete(m, i);
					continue;
				}
				u->e = keep;
			}
			i++;
		}
	}
	m->size = size;
}

struct ext {
	uint64_t off, len;
};

/* The model's purged set, coalesced: at most max extents stored; returns how many exist. */
static size_t model_extents(const uint8_t *purged, struct ext *out, size_t max)
{
	size_t n = 0;
	uint64_t b = 0;

	while (b < CAP) {
		uint64_t s, e;

		while (b < CAP && !purged[b])
			b++;
		if (b == CAP)
			break;
		s = b;
		for (e = s; e < CAP && purged[e]; e++)
			;
		if (n < max)
			out[n] = (struct ext){ s, e - s };
		n++;
		b = e;
	}
	return n;
}

static void format_extents(const struct ext *x, size_t n, char *buf, size_t cap)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && pos < cap; i++)
		pos += (size_t)snprintf(buf + pos, cap - pos, "%" PRIu64 ":%" PRIu64 "\n", x[i].off,
					x[i].len);
}

static void format_ranges(const struct minode *m, char *buf, size_t cap)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (int i = 0; i < m->nu && pos < cap; i++) {
		const struct vunit *u = &m->u[i];
		uint64_t off = u->s * PG, len = u->e == UNB ? 0 : (u->e - u->s) * PG;
		bool p = model_purged_in(m, off, page_end_bytes(u->e));

		pos += (size_t)snprintf(buf + pos, cap - pos, "%" PRIu64 ":%" PRIu64
					" %s priority=%u%s\n", off, len, p ? "purged" : "volatile",
					u->prio, u->age ? " age" : "");
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Describing operations                                                                    */

static void file_desc(const struct state *S, int slot, char *buf, size_t n)
{
	int k;

	if (slot < 0) {
		snprintf(buf, n, "(no file)");
		return;
	}
	k = first_name(S, slot);
	if (k >= 0)
		snprintf(buf, n, "n%d(#%d)", k, S->in[slot].id);
	else
		snprintf(buf, n, "#%d(unlinked)", S->in[slot].id);
}

static void flags_desc(uint32_t flags, char *buf, size_t n)
{
	if (flags & VOLATILEFS_PRIORITY(0))
		snprintf(buf, n, "PRIORITY(%u)%s", (flags >> 4) & 0xf,
			 flags & VOLATILEFS_AGE ? "|AGE" : "");
	else
		snprintf(buf, n, "%s", flags & VOLATILEFS_AGE ? "AGE" : "0");
}

/* The value of an xattr mark/unmark: ranges in assorted SIZE spellings and separators. */
static size_t xattr_value(const struct op *o, bool mark, char *buf, size_t cap)
{
	uint64_t s = o->dseed;
	static const char *const seps[] = { " ", ",", "\t", "\n", " , ", "  " };
	size_t pos = 0;
	bool flags_done = false;

	buf[0] = '\0';
#define PUT(...) (pos += (size_t)snprintf(buf + pos, cap - pos, __VA_ARGS__))
	if (chance(&s, 20))
		PUT("%s", seps[rnd(&s, 6)]);
	for (int i = 0; i < o->nr; i++) {
		uint64_t off = o->roff[i], len = o->rlen[i];

		if (i)
			PUT("%s", seps[rnd(&s, 6)]);
		if (mark && !flags_done && chance(&s, 30)) {
			if (o->flags & VOLATILEFS_PRIORITY(0))
				PUT("priority=%u%s", (o->flags >> 4) & 0xf, seps[rnd(&s, 6)]);
			if (o->flags & VOLATILEFS_AGE)
				PUT("age%s", seps[rnd(&s, 6)]);
			flags_done = true;
		}
		if (off == 0 && len == 0 && chance(&s, 50)) {
			PUT("all");
			continue;
		}
		switch (rnd(&s, 4)) {
		case 0:
			PUT("%" PRIu64, off);
			break;
		case 1:
			PUT("0x%" PRIx64, off);
			break;
		default:
			if (off % (1024 * KIB) == 0 && off)
				PUT("%" PRIu64 "%s", off / (1024 * KIB), chance(&s, 50) ? "M" : "m");
			else
				PUT("%" PRIu64 "%s", off / KIB, chance(&s, 50) ? "K" : "k");
			break;
		}
		if (len % KIB == 0 && len && chance(&s, 50))
			PUT(":%" PRIu64 "K", len / KIB);
		else if (chance(&s, 30))
			PUT(":0x%" PRIX64, len);
		else
			PUT(":%" PRIu64, len);
	}
	if (mark && !flags_done) {
		if (o->flags & VOLATILEFS_PRIORITY(0))
			PUT("%spriority=%u", seps[rnd(&s, 6)], (o->flags >> 4) & 0xf);
		if (o->flags & VOLATILEFS_AGE)
			PUT("%sage", seps[rnd(&s, 6)]);
	}
	if (chance(&s, 20))
		PUT("%s", seps[rnd(&s, 6)]);
#undef PUT
	/* setfattr sends a trailing NUL: sometimes do too. */
	return strlen(buf) + (chance(&s, 50) ? 1 : 0);
}

static void describe(const struct state *S, const struct op *o, char *buf, size_t n)
{
	char f[64], fl[64], a[16], b[16], v[512];
	int slot = resolve(S, o->f);
	/* an xattr call goes through the path when asked and the file has a name */
	const char *x = o->path && slot >= 0 && first_name(S, slot) >= 0 ? "" : "f";

	file_desc(S, slot, f, sizeof(f));
	name_of(o->a, a, sizeof(a));
	name_of(o->b, b, sizeof(b));
	switch (o->k) {
	case OP_CREATE:
		snprintf(buf, n, "create %s (O_CREAT|O_EXCL|O_RDWR)", a);
		break;
	case OP_WRITE:
		snprintf(buf, n, "pwrite %s off=%" PRIu64 " len=%" PRIu64 " (data seed %" PRIu32 ")",
			 f, o->off, o->len, o->dseed);
		break;
	case OP_READ:
		snprintf(buf, n, "pread %s off=%" PRIu64 " len=%" PRIu64, f, o->off, o->len);
		break;
	case OP_TRUNC:
		snprintf(buf, n, "ftruncate %s size=%" PRIu64, f, o->len);
		break;
	case OP_PUNCH:
		snprintf(buf, n, "fallocate %s PUNCH_HOLE|KEEP_SIZE off=%" PRIu64 " len=%" PRIu64, f,
			 o->off, o->len);
		break;
	case OP_MWRITE:
		snprintf(buf, n, "mmap-write %s off=%" PRIu64 " len=%" PRIu64
			 " (clipped to the size; data seed %" PRIu32 "), msync", f, o->off, o->len,
			 o->dseed);
		break;
	case OP_MREAD:
		snprintf(buf, n, "mmap-read %s off=%" PRIu64 " len=%" PRIu64 " (clipped to the size)",
			 f, o->off, o->len);
		break;
	case OP_MARK:
		flags_desc(o->flags, fl, sizeof(fl));
		snprintf(buf, n, "volatilefs_mark(%s, %" PRIu64 ", %" PRIu64 ", %s)", f, o->off,
			 o->len, fl);
		break;
	case OP_UNMARK:
		snprintf(buf, n, "volatilefs_unmark(%s, %" PRIu64 ", %" PRIu64 ")", f, o->off, o->len);
		break;
	case OP_XMARK:
	case OP_XUNMARK: {
		size_t len = xattr_value(o, o->k == OP_XMARK, v, sizeof(v));
		bool nul = len > strlen(v);

		for (char *p = v; *p; p++)
			if (*p == '\n' || *p == '\t')
				*p = *p == '\n' ? '|' : '~';
		snprintf(buf, n, "%ssetxattr %s user.volatile.%s \"%s\"%s (| = newline, ~ = tab)",
			 x, f, o->k == OP_XMARK ? "mark" : "unmark", v,
			 nul ? " + NUL" : "");
		break;
	}
	case OP_PURGED:
		snprintf(buf, n, "volatilefs_purged(%s, %" PRIu64 ", %" PRIu64 ", max=%" PRIu32 ")", f,
			 o->off, o->len, o->flags);
		break;
	case OP_FPURGE:
		snprintf(buf, n, "%ssetxattr %s user.volatile.purge all", x, f);
		break;
	case OP_RPURGE:
		snprintf(buf, n, "setxattr MOUNT-ROOT user.volatile.purge all");
		break;
	case OP_FORGET:
		snprintf(buf, n, "%sremovexattr %s user.volatile.purged", x, f);
		break;
	case OP_RENAME:
		snprintf(buf, n, "renameat2 %s -> %s %s", a, b,
			 o->flags == RENAME_NOREPLACE ? "RENAME_NOREPLACE" :
			 o->flags == RENAME_EXCHANGE ? "RENAME_EXCHANGE" : "0");
		break;
	case OP_LINK:
		snprintf(buf, n, "link %s -> %s", a, b);
		break;
	case OP_UNLINK:
		snprintf(buf, n, "unlink %s", a);
		break;
	case OP_REOPEN:
		snprintf(buf, n, "close %s and reopen it by name (if it has one)%s", f,
			 o->flags ? " with O_TRUNC" : "");
		break;
	case OP_FALLOC:
		snprintf(buf, n, "fallocate %s %s off=%" PRIu64 " len=%" PRIu64, f,
			 o->flags ? "KEEP_SIZE" : "0", o->off, o->len);
		break;
	default:
		snprintf(buf, n, "?");
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Checks against the mount                                                                 */

/* The value of an attribute, through the path (named files) or the descriptor. */
static ssize_t get_attr(struct state *S, int slot, bool by_path, const char *name, char *buf,
			size_t cap)
{
	int k = by_path ? first_name(S, slot) : -1;
	char p[PATH_MAX];

	if (k < 0)
		return fgetxattr(S->in[slot].fd, name, buf, cap);
	path_of(S, k, p, sizeof(p));
	return getxattr(p, name, buf, cap);
}

/* The daemon's purged extents of the whole file, paged through in small batches. */
static bool real_extents(struct state *S, int slot, struct ext *out, size_t max, size_t *n)
{
	struct volatilefs_extent e[7];
	uint64_t pos = 0;
	size_t total = SIZE_MAX, got = 0, cnt;

	for (;;) {
		if (volatilefs_purged(S->in[slot].fd, pos, 0, e, 7, &cnt) != 0) {
			mismatch(S, F_PURGED, "volatilefs_purged(#%d, %" PRIu64 ", 0): %s",
			     S->in[slot].id, pos, errname(errno));
			return false;
		}
		if (total == SIZE_MAX)
			total = cnt;
		for (size_t i = 0; i < cnt && i < 7; i++) {
			if (got < max)
				out[got] = (struct ext){ e[i].offset, e[i].length };
			got++;
		}
		if (cnt <= 7)
			break;
		pos = e[6].offset + e[6].length;
	}
	*n = got;
	return true;
}

/*
 * Could byte b of slot have escaped a purge during this step?  It was written since (in
 * the window this step wrote), or lay beyond the size the file had before the step grew it.
 */
static bool in_window(const struct state *S, int slot, uint64_t b)
{
	return (slot == S->wslot && b >= S->ws && b < S->we) ||
	       (slot == S->pre_slot && b >= S->pre_size);
}

/* Is page p in a unit of slot, now or before this step? */
static bool in_some_unit(const struct state *S, int slot, uint64_t p)
{
	const struct minode *m = &S->in[slot];

	for (int i = 0; i < m->nu; i++)
		if (m->u[i].s <= p && p < m->u[i].e)
			return true;
	if (slot == S->pre_slot)
		for (int i = 0; i < S->pre_nu; i++)
			if (S->pre_u[i].s <= p && p < S->pre_u[i].e)
				return true;
	return false;
}

/*
 * Memory pressure may purge any unit at any time.  When the daemon shows purged bytes the
 * model did not expect, accept them if and only if a purge of whole units explains them:
 * every byte the model has purged is still purged, and every extra byte lies in a unit (as
 * it is now, or as it was before this step) whose bytes within the size are all purged
 * but for bytes this step wrote since.  The model then takes the purge: the extra bytes
 * are purged and read as zeros.
 */
static bool reconcile(struct state *S, int slot, const struct ext *x, size_t n)
{
	struct minode *m = &S->in[slot];
	uint8_t *obs = calloc(CAP, 1), *cover = calloc(CAP, 1);
	bool ok = true;
	char units[512] = "";
	size_t up = 0;

	if (!obs || !cover)
		goto out_fail;
	for (size_t i = 0; i < n; i++) {
		if (x[i].off + x[i].len > m->size || x[i].len == 0)
			goto out_fail;
		memset(obs + x[i].off, 1, x[i].len);
	}
	for (uint64_t b = 0; b < CAP; b++)
		if (m->purged[b] && !obs[b])
			goto out_fail;
	for (int list = 0; list < 2; list++) {
		const struct vunit *us = list ? S->pre_u : m->u;
		int nu = list ? (slot == S->pre_slot ? S->pre_nu : 0) : m->nu;

		for (int i = 0; i < nu; i++) {
			uint64_t s = us[i].s * PG, e = page_end_bytes(us[i].e);
			bool extra = false, whole = true;

			if (e > m->size)
				e = m->size;
			if (list) { /* a unit from before the step that is still there: done */
				bool same = false;

				for (int j = 0; j < m->nu && !same; j++)
					same = m->u[j].s == us[i].s && m->u[j].e == us[i].e;
				if (same)
					continue;
			}
			for (uint64_t b = s; b < e && whole; b++) {
				if (obs[b])
					extra = extra || !m->purged[b];
				else if (!in_window(S, slot, b))
					whole = false;
			}
			if (!extra || !whole)
				continue;
			memset(cover + s, 1, e - s);
			if (up < sizeof(units))
				up += (size_t)snprintf(units + up, sizeof(units) - up, " %" PRIu64 ":%"
						       PRIu64, s, us[i].e == UNB ? 0 : e - s);
		}
	}
	for (uint64_t b = 0; b < CAP; b++)
		if (obs[b] && !m->purged[b] && !cover[b])
			goto out_fail;
	for (uint64_t b = 0; b < CAP; b++) {
		if (obs[b] && !m->purged[b]) {
			m->purged[b] = 1;
			m->data[b] = 0;
		}
	}
	fprintf(stderr, "modelcheck: note: step %ld: #%d: a purge the model did not make "
		"(memory pressure) took unit(s)%s; the model takes it\n", S->step, m->id, units);
	S->notes++;
	S->pressure_slot = slot;
	goto out;
out_fail:
	ok = false;
out:
	free(obs);
	free(cover);
	return ok;
}

#define MAXEXT 4096

/* Bytes reported only because they may be (PURGED_HELD) that the daemon's report x of n
 * extents leaves out: they hold data, and leave the model's purged set too. */
static void settle_held(struct minode *m, const struct ext *x, size_t n)
{
	size_t k = 0;

	if (!memchr(m->purged, PURGED_HELD, CAP) || n > MAXEXT)
		return;
	for (uint64_t b = 0; b < CAP; b++) {
		while (k < n && x[k].off + x[k].len <= b)
			k++;
		if (m->purged[b] == PURGED_HELD && (k == n || b < x[k].off))
			m->purged[b] = 0;
	}
}

/* Reports the purge(s) (so reads cannot see discarded data) and compares the purged set. */
static bool check_purged(struct state *S, int slot)
{
	static struct ext got[MAXEXT], want[MAXEXT];
	static char gs[64 * 1024], ws[64 * 1024];
	struct minode *m = &S->in[slot];
	size_t ng, nw;

	if (!real_extents(S, slot, got, MAXEXT, &ng))
		return false;
	settle_held(m, got, ng);
	nw = model_extents(m->purged, want, MAXEXT);
	if (ng == nw && memcmp(got, want, nw * sizeof(*got)) == 0)
		return true;
	if (ng <= MAXEXT && reconcile(S, slot, got, ng))
		return true;
	format_extents(got, ng < MAXEXT ? ng : MAXEXT, gs, sizeof(gs));
	format_extents(want, nw < MAXEXT ? nw : MAXEXT, ws, sizeof(ws));
	mismatch(S, F_PURGED, "purged extents of #%d (size %" PRIu64 "):\n got (%zu):\n%s want (%zu):\n%s",
	     m->id, m->size, ng, gs, nw, ws);
	return false;
}

static bool cmp_bytes(struct state *S, enum fail_kind k, int slot, const uint8_t *got,
		      uint64_t off, uint64_t len)
{
	struct minode *m = &S->in[slot];
	const uint8_t *want = m->data + off;
	uint64_t i, j;

	if (memcmp(got, want, len) == 0)
		return true;
	for (i = 0; got[i] == want[i]; i++)
		;
	for (j = len; got[j - 1] == want[j - 1]; j--)
		;
	mismatch(S, k, "%s of #%d: bytes %" PRIu64 "..%" PRIu64 " differ (of %" PRIu64 "..%" PRIu64
	     ", size %" PRIu64 "): first at %" PRIu64 ": got 0x%02x want 0x%02x (%s)",
	     k == F_MAP ? "mapping" : "content", m->id, off + i, off + j - 1, off, off + len,
	     m->size, off + i, got[i], want[i], m->purged[off + i] ? "purged" : "not purged");
	return false;
}

/* Every byte that differs reads 0 and lies in a unit (a purge may explain it). */
static bool zeros_in_units(const struct state *S, int slot, uint64_t off, uint64_t len,
			   const uint8_t *got)
{
	const uint8_t *want = S->in[slot].data + off;

	for (uint64_t i = 0; i < len; i++)
		if (got[i] != want[i] && (got[i] != 0 || !in_some_unit(S, slot, (off + i) / PG)))
			return false;
	return true;
}

/*
 * After a pressure purge during a write-back through a mapping, the written-back pages
 * hold the new bytes and, around them, either the data from before the purge or zeros:
 * take what the file holds there.
 */
static bool adopt(struct state *S, int slot, uint64_t off, uint64_t len, const uint8_t *got)
{
	struct minode *m = &S->in[slot];

	if (S->pressure_slot != slot || !S->wadopt)
		return false;
	for (uint64_t i = 0; i < len; i++)
		if (got[i] != m->data[off + i] && !in_window(S, slot, off + i))
			return false;
	for (uint64_t i = 0; i < len; i++)
		if (in_window(S, slot, off + i))
			m->data[off + i] = got[i];
	fprintf(stderr, "modelcheck: note: step %ld: #%d: the pages written back after that purge "
		"hold what the mapping had; the model takes them\n", S->step, m->id);
	return true;
}

/*
 * Compares bytes read with the model; zeros where a unit is may be a purge by memory
 * pressure since the last report: report again, reconcile, compare again.
 */
static bool cmp_read(struct state *S, enum fail_kind k, int slot, const uint8_t *got,
		     uint64_t off, uint64_t len)
{
	struct minode *m = &S->in[slot];

	if (memcmp(got, m->data + off, len) == 0)
		return true;
	if (zeros_in_units(S, slot, off, len, got)) {
		if (!check_purged(S, slot))
			return false;
		if (memcmp(got, m->data + off, len) == 0)
			return true;
	}
	if (adopt(S, slot, off, len, got))
		return true;
	return cmp_bytes(S, k, slot, got, off, len);
}

static bool check_content(struct state *S, int slot)
{
	static uint8_t buf[CAP + PG];
	struct minode *m = &S->in[slot];
	size_t want = m->size, done = 0;

	for (;;) {
		ssize_t r = pread(m->fd, buf + done, sizeof(buf) - done, (off_t)done);

		if (r < 0) {
			mismatch(S, F_CONTENT, "pread #%d at %zu: %s", m->id, done, errname(errno));
			return false;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	if (done != want) {
		mismatch(S, F_CONTENT, "pread #%d of the whole file: %zu bytes, want the size %zu", m->id,
		     done, want);
		return false;
	}
	return cmp_read(S, F_CONTENT, slot, buf, 0, want);
}

static bool check_text(struct state *S, int slot, const char *attr, enum fail_kind k,
		       const char *want)
{
	static char got[64 * 1024 + 1];
	ssize_t n = get_attr(S, slot, S->step % 2, attr, got, sizeof(got) - 1);

	if (n < 0) {
		mismatch(S, k, "getxattr #%d %s: %s", S->in[slot].id, attr, errname(errno));
		return false;
	}
	got[n] = '\0';
	if (strcmp(got, want) == 0)
		return true;
	mismatch(S, k, "%s of #%d (size %" PRIu64 "):\n got:\n%s want:\n%s", attr, S->in[slot].id,
	     S->in[slot].size, got, want);
	return false;
}

/* Formats what the model says attr (0 purged, 1 ranges) of slot holds, and compares. */
static bool check_attr(struct state *S, int slot, int which)
{
	static char want[64 * 1024];
	static struct ext x[MAXEXT];
	struct minode *m = &S->in[slot];

	if (which == 0)
		format_extents(x, model_extents(m->purged, x, MAXEXT), want, sizeof(want));
	else
		format_ranges(m, want, sizeof(want));
	return check_text(S, slot, which ? "user.volatile.ranges" : "user.volatile.purged",
			  which ? F_RANGES : F_PURGED_XATTR, want);
}

static bool check_poll(struct state *S, int slot)
{
	static struct ext x[1];
	struct minode *m = &S->in[slot];
	struct pollfd p = { .fd = m->fd, .events = POLLPRI };
	size_t n = model_extents(m->purged, x, 1);
	int r = poll(&p, 1, 0);

	if (r < 0 || (p.revents & (POLLERR | POLLNVAL)) ||
	    (bool)(p.revents & POLLPRI) != (n > 0)) {
		mismatch(S, F_POLL, "poll #%d: returned %d revents 0x%x, want POLLPRI %s (%zu purged "
			 "extents)", m->id, r, (unsigned)p.revents, n ? "set" : "clear", n);
		return false;
	}
	return true;
}

static bool check_full(struct state *S, int slot)
{
	if (!check_purged(S, slot) || !check_content(S, slot))
		return false;
	for (int which = 0; which < 3; which++) {
		bool ok = which < 2 ? check_attr(S, slot, which) : check_poll(S, slot);

		if (ok)
			continue;
		/* memory pressure may have purged a unit since: report, reconcile, again */
		S->fk = F_NONE;
		if (!check_purged(S, slot))
			return false;
		if (!(which < 2 ? check_attr(S, slot, which) : check_poll(S, slot)))
			return false;
	}
	return true;
}

static bool check_light(struct state *S, int slot)
{
	struct minode *m = &S->in[slot];
	struct stat st;

	if (fstat(m->fd, &st) != 0) {
		mismatch(S, F_SIZE, "fstat #%d: %s", m->id, errname(errno));
		return false;
	}
	if ((uint64_t)st.st_size != m->size || st.st_nlink != (nlink_t)nlink_of(S, slot) ||
	    st.st_ino != m->ino) {
		mismatch(S, F_SIZE, "fstat #%d: size %lld nlink %lu ino %lu, want size %" PRIu64
		     " nlink %d ino %lu", m->id, (long long)st.st_size, (unsigned long)st.st_nlink,
		     (unsigned long)st.st_ino, m->size, nlink_of(S, slot), (unsigned long)m->ino);
		return false;
	}
	return true;
}

static bool check_names(struct state *S)
{
	for (int k = 0; k < NNAMES; k++) {
		struct stat st;
		char nm[16];
		int r;

		name_of(k, nm, sizeof(nm));
		r = fstatat(S->dirfd, nm, &st, AT_SYMLINK_NOFOLLOW);
		if (S->name[k] < 0) {
			if (r == 0 || errno != ENOENT) {
				mismatch(S, F_NAMES, "%s: stat gives %s, want ENOENT", nm,
				     r == 0 ? "success" : errname(errno));
				return false;
			}
			continue;
		}
		if (r != 0 || st.st_ino != S->in[S->name[k]].ino) {
			mismatch(S, F_NAMES, "%s: stat gives %s ino %lu, want #%d ino %lu", nm,
			     r == 0 ? "success" : errname(errno), r == 0 ? (unsigned long)st.st_ino : 0,
			     S->in[S->name[k]].id, (unsigned long)S->in[S->name[k]].ino);
			return false;
		}
	}
	return true;
}

static void check_step(struct state *S, bool full_all)
{
	if (!check_names(S))
		return;
	for (int i = 0; i < MAXINODES; i++) {
		if (!S->in[i].live)
			continue;
		if (!check_light(S, i))
			return;
		if ((full_all || S->in[i].touched) && !check_full(S, i))
			return;
		S->in[i].touched = false;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Executing a step on the model, and on the mount when S->real                            */

static bool expect(struct state *S, const char *what, long ret, int err_want)
{
	int e = ret < 0 ? errno : 0;

	if ((ret < 0) == (err_want != 0) && (err_want == 0 || e == err_want))
		return true;
	mismatch(S, F_ERRNO, "%s: got %s, want %s%s", what, ret < 0 ? errname(e) : "success",
		 err_want ? errname(err_want) : "success",
		 e == ENOSPC ? " (the mount's memory_limit is too tight for the non-volatile data "
			       "here: ENOSPC is right then, but the model does not predict it; use a "
			       "generous limit)" : "");
	return false;
}

static bool inode_open(struct state *S, struct minode *m, int fd)
{
	struct stat st;

	m->fd = fd;
	m->kernel_writes = passthrough_path && m->nu == 0 && !model_purged_in(m, 0, CAP);
	m->map = mmap(NULL, CAP, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->map == MAP_FAILED) {
		m->map = NULL;
		mismatch(S, F_HARNESS, "mmap #%d: %s", m->id, errname(errno));
		return false;
	}
	if (fstat(fd, &st) != 0) {
		mismatch(S, F_HARNESS, "fstat #%d: %s", m->id, errname(errno));
		return false;
	}
	m->ino = st.st_ino;
	return true;
}

static void inode_close(struct minode *m)
{
	if (m->map)
		munmap(m->map, CAP);
	if (m->fd >= 0)
		close(m->fd);
	m->map = NULL;
	m->fd = -1;
}

static void inode_free(struct minode *m)
{
	inode_close(m);
	free(m->data);
	free(m->purged);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}

static int free_slot(const struct state *S)
{
	for (int i = 0; i < MAXINODES; i++)
		if (!S->in[i].live)
			return i;
	return -1;
}

/* The inode in slot loses a name; a file with no name and ... stays while open (it is). */
static void drop_name(struct state *S, int k)
{
	S->name[k] = -1;
}

static void op_create(struct state *S, const struct op *o)
{
	char nm[16];
	int slot = free_slot(S), fd;
	struct minode *m;

	name_of(o->a, nm, sizeof(nm));
	if (S->name[o->a] >= 0) {
		if (S->real)
			expect(S, "create (name exists)",
			       openat(S->dirfd, nm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644), EEXIST);
		return;
	}
	if (slot < 0)
		return; /* the model holds MAXINODES files: skipped */
	m = &S->in[slot];
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->data = calloc(CAP, 1);
	m->purged = calloc(CAP, 1);
	if (!m->data || !m->purged) {
		mismatch(S, F_HARNESS, "out of memory");
		return;
	}
	m->live = true;
	m->id = S->ncreated++;
	S->name[o->a] = slot;
	if (S->real) {
		fd = openat(S->dirfd, nm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (!expect(S, "create", fd, 0))
			return;
		inode_open(S, m, fd);
	}
	m->touched = true;
}

/*
 * A write the daemon did not see (passthrough: a store through a mapping, a write(2) through
 * an open the kernel serves) into a page that already held memory may leave the purged set as
 * it was: the daemon reads such a page for written bytes when it appears, and again once the
 * file's mtime moved (volatilefs(8), "No loss without a report").  The bytes of [off, end)
 * that the daemon still reports are taken as reported, with their new data (PURGED_HELD:
 * reporting bytes that hold data is allowed, and a later report may leave them out:
 * settle_held), and the model still fails on any byte lost without a report.
 */
static void model_unseen(struct state *S, int slot, uint64_t off, uint64_t end)
{
	static struct ext got[MAXEXT];
	struct minode *m = &S->in[slot];
	size_t ng;

	if (!S->real || !passthrough_path || !real_extents(S, slot, got, MAXEXT, &ng) ||
	    ng > MAXEXT)
		return;
	for (size_t k = 0; k < ng; k++) {
		uint64_t a = got[k].off > off ? got[k].off : off;
		uint64_t b = got[k].off + got[k].len < end ? got[k].off + got[k].len : end;

		if (a < b)
			memset(m->purged + a, PURGED_HELD, b - a);
	}
}

static void op_write(struct state *S, struct minode *m, const struct op *o)
{
	uint8_t *buf = malloc(o->len);

	if (!buf) {
		mismatch(S, F_HARNESS, "out of memory");
		return;
	}
	fill_bytes(buf, o->len, o->dseed, o->off);
	if (S->real) {
		ssize_t r = pwrite(m->fd, buf, o->len, (off_t)o->off);

		if (!expect(S, "pwrite", r, 0)) {
			free(buf);
			return;
		}
		if ((uint64_t)r != o->len) {
			mismatch(S, F_ERRNO, "pwrite of %" PRIu64 " bytes wrote %zd (a later part "
				 "failed: ENOSPC? use a generous memory_limit)", o->len, r);
			free(buf);
			return;
		}
	}
	S->wslot = (int)(m - S->in);
	S->ws = o->off;
	S->we = o->off + o->len;
	memcpy(m->data + o->off, buf, o->len);
	memset(m->purged + o->off, 0, o->len);
	if (write_unmark)
		model_unmark(S, m, o->off / PG, (o->off + o->len - 1) / PG + 1);
	if (o->off + o->len > m->size)
		m->size = o->off + o->len;
	if (m->kernel_writes)
		model_unseen(S, (int)(m - S->in), o->off, o->off + o->len);
	free(buf);
}

static void op_read(struct state *S, int slot, const struct op *o)
{
	struct minode *m = &S->in[slot];
	uint64_t want = o->off >= m->size ? 0 :
			(o->len < m->size - o->off ? o->len : m->size - o->off);
	uint8_t *buf;
	ssize_t r;

	if (!S->real)
		return;
	buf = malloc(o->len + 1);
	if (!buf) {
		mismatch(S, F_HARNESS, "out of memory");
		return;
	}
	r = pread(m->fd, buf, o->len, (off_t)o->off);
	if (expect(S, "pread", r, 0)) {
		if ((uint64_t)r != want)
			mismatch(S, F_CONTENT, "pread #%d off=%" PRIu64 " len=%" PRIu64 ": %zd bytes, want %"
			     PRIu64 " (size %" PRIu64 ")", m->id, o->off, o->len, r, want, m->size);
		else
			cmp_read(S, F_CONTENT, slot, buf, o->off, want);
	}
	free(buf);
}

/* [off, end) of an mmap operation: within the size. */
static bool map_range(const struct minode *m, const struct op *o, uint64_t *end)
{
	*end = o->off + o->len < m->size ? o->off + o->len : m->size;
	return o->off < *end;
}

static void op_mwrite(struct state *S, struct minode *m, const struct op *o)
{
	uint64_t end, ps, pe;
	uint8_t *buf;

	if (!map_range(m, o, &end))
		return;
	buf = malloc(end - o->off);
	if (!buf) {
		mismatch(S, F_HARNESS, "out of memory");
		return;
	}
	fill_bytes(buf, end - o->off, o->dseed, o->off);
	ps = o->off / PG * PG;
	pe = (end + PG - 1) / PG * PG;
	if (S->real) {
		memcpy(m->map + o->off, buf, end - o->off);
		if (!expect(S, "msync", msync(m->map + ps, pe - ps, MS_SYNC), 0)) {
			free(buf);
			return;
		}
	}
	S->wslot = (int)(m - S->in);
	S->ws = ps;
	S->we = pe < m->size ? pe : m->size;
	S->wadopt = true;
	memcpy(m->data + o->off, buf, end - o->off);
	/* The stored bytes leave the purged set: the data is never zero, and
	 * a byte that is not zero is known to be written again; the rest of
	 * the pages written back stays (volatilefs(8), "No loss without a
	 * report").  On the passthrough path, maybe not (model_unseen). */
	memset(m->purged + o->off, 0, end - o->off);
	if (write_unmark)
		model_unmark(S, m, ps / PG, pe / PG);
	model_unseen(S, (int)(m - S->in), o->off, end);
	free(buf);
}

static void op_mread(struct state *S, int slot, const struct op *o)
{
	struct minode *m = &S->in[slot];
	uint64_t end;

	if (!S->real || !map_range(m, o, &end))
		return;
	cmp_read(S, F_MAP, slot, m->map + o->off, o->off, end - o->off);
}

static void op_unmark(struct state *S, int slot, const struct op *o)
{
	struct minode *m = &S->in[slot];
	uint64_t s, e, bytes = UINT64_MAX, wbytes;
	int purged = -1, wpurged;

	range_pages(o->off, o->len, &s, &e);
	wbytes = model_unmark_bytes(m, s, e);
	wpurged = model_purged_in(m, o->off, e == UNB ? UINT64_MAX : e * PG);
	if (S->real) {
		if (!expect(S, "volatilefs_unmark",
			    volatilefs_unmark(m->fd, o->off, o->len, &bytes, &purged), 0))
			return;
		if (purged != wpurged) {
			/* a purge by memory pressure before the unmark, or held bytes the
			 * daemon no longer reports? */
			if (check_purged(S, slot))
				wpurged = model_purged_in(m, o->off, e == UNB ? UINT64_MAX : e * PG);
			S->fk = F_NONE;
		}
		if (bytes != wbytes || purged != wpurged) {
			mismatch(S, F_UNMARK, "volatilefs_unmark(#%d, %" PRIu64 ", %" PRIu64 "): bytes=%"
			     PRIu64 " purged=%d, want bytes=%" PRIu64 " purged=%d", m->id, o->off,
			     o->len, bytes, purged, wbytes, wpurged);
			return;
		}
	}
	model_unmark(S, m, s, e);
}

/* The model's answer to volatilefs_purged(off, len, max): the count, and up to 8 extents. */
static size_t model_query(const struct minode *m, uint64_t off, uint64_t len, size_t max,
			  struct ext *w)
{
	static struct ext all[MAXEXT];
	uint64_t end = len && len <= UINT64_MAX - off ? off + len : UINT64_MAX;
	size_t n = model_extents(m->purged, all, MAXEXT), want = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t s = all[i].off, t = all[i].off + all[i].len;

		if (t <= off || s >= end)
			continue;
		if (s < off)
			s = off;
		if (t > end)
			t = end;
		if (want < max && want < 8)
			w[want] = (struct ext){ s, t - s };
		want++;
	}
	return want;
}

static void op_purged(struct state *S, int slot, const struct op *o)
{
	struct minode *m = &S->in[slot];
	struct volatilefs_extent got[8];
	struct ext w[8];
	size_t cnt = SIZE_MAX, want, max = o->flags;
	char gs[1024] = "", ws[1024] = "";
	size_t gp = 0, wp = 0;
	bool same;

	if (!S->real)
		return;
	for (int tries = 0; tries < 2; tries++) {
		memset(got, 0xa5, sizeof(got));
		if (!expect(S, "volatilefs_purged",
			    volatilefs_purged(m->fd, o->off, o->len, got, max, &cnt), 0))
			return;
		want = model_query(m, o->off, o->len, max, w);
		same = cnt == want;
		for (size_t i = 0; i < max && i < want; i++)
			same = same && got[i].offset == w[i].off && got[i].length == w[i].len;
		if (same || tries)
			break;
		/* a purge by memory pressure since the last report? */
		if (!check_purged(S, slot))
			return;
	}
	if (same)
		return;
	for (size_t i = 0; i < max && i < want; i++)
		wp += (size_t)snprintf(ws + wp, sizeof(ws) - wp, " %" PRIu64 ":%" PRIu64, w[i].off,
				       w[i].len);
	for (size_t i = 0; i < max && i < cnt && i < 8; i++)
		gp += (size_t)snprintf(gs + gp, sizeof(gs) - gp, " %" PRIu64 ":%" PRIu64,
				       got[i].offset, got[i].length);
	mismatch(S, F_QUERY, "volatilefs_purged(#%d, %" PRIu64 ", %" PRIu64 ", max %zu): count %zu"
		 " [%s ], want count %zu [%s ]", m->id, o->off, o->len, max, cnt, gs, want, ws);
}

static long attr_call(struct state *S, int slot, bool by_path, const char *name,
		      const char *value, size_t len, bool remove)
{
	int k = by_path ? first_name(S, slot) : -1;
	char p[PATH_MAX];

	if (k < 0)
		return remove ? fremovexattr(S->in[slot].fd, name) :
				fsetxattr(S->in[slot].fd, name, value, len, 0);
	path_of(S, k, p, sizeof(p));
	return remove ? removexattr(p, name) : setxattr(p, name, value, len, 0);
}

static void op_rename(struct state *S, const struct op *o)
{
	int sa = S->name[o->a], sb = S->name[o->b], want = 0;
	char na[16], nb[16];

	if (sa < 0)
		want = ENOENT;
	else if (o->flags == RENAME_NOREPLACE && sb >= 0)
		want = EEXIST;
	else if (o->flags == RENAME_EXCHANGE && sb < 0)
		want = ENOENT;
	if (S->real) {
		name_of(o->a, na, sizeof(na));
		name_of(o->b, nb, sizeof(nb));
		if (!expect(S, "renameat2", renameat2(S->dirfd, na, S->dirfd, nb, o->flags), want))
			return;
	}
	if (want || sa == sb) /* a name onto itself, or two names of one file: nothing */
		return;
	if (o->flags == RENAME_EXCHANGE) {
		S->name[o->a] = sb;
		S->name[o->b] = sa;
	} else {
		S->name[o->b] = sa;
		drop_name(S, o->a);
	}
	S->in[sa].touched = true;
	if (sb >= 0)
		S->in[sb].touched = true;
}

static void op_link(struct state *S, const struct op *o)
{
	int sa = S->name[o->a], sb = S->name[o->b], want = 0;
	char na[16], nb[16];

	if (sa < 0)
		want = ENOENT;
	else if (sb >= 0)
		want = EEXIST;
	if (S->real) {
		name_of(o->a, na, sizeof(na));
		name_of(o->b, nb, sizeof(nb));
		if (!expect(S, "linkat", linkat(S->dirfd, na, S->dirfd, nb, 0), want))
			return;
	}
	if (!want)
		S->name[o->b] = sa;
}

static void op_unlink(struct state *S, const struct op *o)
{
	int sa = S->name[o->a];
	char na[16];

	if (S->real) {
		name_of(o->a, na, sizeof(na));
		if (!expect(S, "unlinkat", unlinkat(S->dirfd, na, 0), sa < 0 ? ENOENT : 0))
			return;
	}
	if (sa >= 0) {
		drop_name(S, o->a);
		S->in[sa].touched = true;
	}
}

static void op_reopen(struct state *S, int slot, bool trunc)
{
	struct minode *m = &S->in[slot];
	int k = first_name(S, slot), fd;
	ino_t ino = m->ino;
	char nm[16];

	if (S->real)
		inode_close(m);
	if (k < 0) { /* no name left: the file is gone */
		inode_free(m);
		return;
	}
	if (S->real) {
		name_of(k, nm, sizeof(nm));
		fd = openat(S->dirfd, nm, O_RDWR | O_CLOEXEC | (trunc ? O_TRUNC : 0));
		if (!expect(S, "reopen", fd, 0))
			return;
		if (!inode_open(S, m, fd))
			return;
		if (m->ino != ino)
			mismatch(S, F_NAMES, "reopened %s: ino %lu, want %lu", nm, (unsigned long)m->ino,
			     (unsigned long)ino);
	}
	if (trunc) /* O_TRUNC: the daemon truncates in its open */
		model_truncate(m, 0);
	m->touched = true;
}

/* One step.  Returns true when the step wants every file checked in full. */
static bool do_step(struct state *S, const struct op *o)
{
	int slot = resolve(S, o->f);
	struct minode *m = slot >= 0 ? &S->in[slot] : NULL;
	uint64_t s, e;
	char val[512];
	size_t vlen;

	if (S->step >= S->trace_from) {
		char d[1024];

		describe(S, o, d, sizeof(d));
		fprintf(stderr, "modelcheck:   %5ld: %s\n", S->step, d);
	}
	switch (o->k) {
	case OP_CREATE:
		op_create(S, o);
		return false;
	case OP_RENAME:
		op_rename(S, o);
		return false;
	case OP_LINK:
		op_link(S, o);
		return false;
	case OP_UNLINK:
		op_unlink(S, o);
		return false;
	case OP_RPURGE:
		if (S->real && !expect(S, "setxattr root user.volatile.purge all",
				       setxattr(mount_dir, "user.volatile.purge", "all", 3, 0), 0))
			return false;
		for (int i = 0; i < MAXINODES; i++)
			if (S->in[i].live)
				model_purge_file(&S->in[i]);
		return true;
	default:
		break;
	}
	if (!m)
		return false; /* no file: skipped */
	S->pre_slot = slot;
	S->pre_size = m->size;
	S->pre_nu = m->nu;
	memcpy(S->pre_u, m->u, (size_t)m->nu * sizeof(m->u[0]));
	switch (o->k) {
	case OP_WRITE:
		op_write(S, m, o);
		break;
	case OP_READ:
		op_read(S, slot, o);
		return false;
	case OP_TRUNC:
		if (S->real && !expect(S, "ftruncate", ftruncate(m->fd, (off_t)o->len), 0))
			break;
		model_truncate(m, o->len);
		break;
	case OP_PUNCH:
		if (S->real && !expect(S, "fallocate PUNCH_HOLE",
				       fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						 (off_t)o->off, (off_t)o->len), 0))
			break;
		S->wslot = slot;
		S->ws = o->off;
		S->we = o->off + o->len;
		memset(m->purged + o->off, 0, (o->off + o->len < CAP ? o->off + o->len : CAP) - o->off);
		if (o->off < m->size)
			memset(m->data + o->off, 0,
			       (o->off + o->len < m->size ? o->off + o->len : m->size) - o->off);
		break;
	case OP_MWRITE:
		op_mwrite(S, m, o);
		break;
	case OP_MREAD:
		op_mread(S, slot, o);
		return false;
	case OP_MARK:
		if (S->real && !expect(S, "volatilefs_mark",
				       volatilefs_mark(m->fd, o->off, o->len, o->flags), 0))
			break;
		range_pages(o->off, o->len, &s, &e);
		model_mark(S, m, s, e, o->flags & VOLATILEFS_PRIORITY(0) ? (o->flags >> 4) & 0xf :
				VOLATILEFS_PRIORITY_DEFAULT, o->flags & VOLATILEFS_AGE);
		break;
	case OP_UNMARK:
		op_unmark(S, slot, o);
		break;
	case OP_XMARK:
	case OP_XUNMARK:
		vlen = xattr_value(o, o->k == OP_XMARK, val, sizeof(val));
		if (S->real &&
		    !expect(S, o->k == OP_XMARK ? "setxattr user.volatile.mark" :
			    "setxattr user.volatile.unmark",
			    attr_call(S, slot, o->path, o->k == OP_XMARK ? "user.volatile.mark" :
				      "user.volatile.unmark", val, vlen, false), 0))
			break;
		for (int i = 0; i < o->nr; i++) {
			range_pages(o->roff[i], o->rlen[i], &s, &e);
			if (o->k == OP_XMARK)
				model_mark(S, m, s, e, o->flags & VOLATILEFS_PRIORITY(0) ?
					   (o->flags >> 4) & 0xf : VOLATILEFS_PRIORITY_DEFAULT,
					   o->flags & VOLATILEFS_AGE);
			else
				model_unmark(S, m, s, e);
		}
		break;
	case OP_PURGED:
		op_purged(S, slot, o);
		return false;
	case OP_FPURGE:
		if (S->real && !expect(S, "setxattr user.volatile.purge all",
				       attr_call(S, slot, o->path, "user.volatile.purge", "all", 3,
						 false), 0))
			break;
		model_purge_file(m);
		break;
	case OP_FORGET:
		/* Forgetting hides a purge by memory pressure from then on: report it first. */
		if (S->real && !check_purged(S, slot))
			break;
		if (S->real && !expect(S, "removexattr user.volatile.purged",
				       attr_call(S, slot, o->path, "user.volatile.purged", NULL, 0,
						 true), 0))
			break;
		memset(m->purged, 0, CAP);
		break;
	case OP_REOPEN:
		op_reopen(S, slot, o->flags != 0);
		return false;
	case OP_FALLOC:
		if (S->real && !expect(S, "fallocate", fallocate(m->fd, o->flags ? FALLOC_FL_KEEP_SIZE : 0,
								  (off_t)o->off, (off_t)o->len), 0))
			break;
		/* New pages read as zeros; the purged set stays as it is. */
		if (!o->flags && o->off + o->len > m->size)
			m->size = o->off + o->len;
		break;
	default:
		break;
	}
	m->touched = true;
	return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Generating a sequence                                                                    */

static uint32_t gen_flags(uint64_t *r)
{
	uint32_t f = 0;

	if (chance(r, 60))
		f |= VOLATILEFS_PRIORITY(rnd(r, 8));
	if (chance(r, 25))
		f |= VOLATILEFS_AGE;
	return f;
}

/* A mark/unmark range: page-aligned offset near the file, length in pages, rounded, 0, huge. */
static void gen_range(uint64_t *r, uint64_t size, uint64_t *off, uint64_t *len)
{
	uint64_t pages = (size + PG - 1) / PG;

	*off = rnd(r, pages + 5) * PG;
	switch (rnd(r, 20)) {
	case 0:
	case 1:
	case 2:
		*len = 0; /* unbounded */
		break;
	case 3:
		*len = 1ull << (30 + rnd(r, 20)); /* far past the end */
		break;
	case 4:
	case 5:
		*len = (rnd(r, 16) + 1) * PG - rnd(r, PG); /* rounded up */
		break;
	default:
		*len = (rnd(r, chance(r, 70) ? 8 : 40) + 1) * PG;
		break;
	}
}

static uint64_t gen_len(uint64_t *r)
{
	switch (rnd(r, 4)) {
	case 0:
		return rnd(r, 300) + 1;
	case 1:
		return rnd(r, 16 * KIB) + 1;
	case 2:
		return (rnd(r, 8) + 1) * PG;
	default:
		return rnd(r, 64 * KIB) + 1;
	}
}

static struct op gen_one(const struct state *S, uint64_t *r)
{
	static const struct { uint8_t k; uint8_t w; } table[] = {
		{ OP_WRITE, 14 }, { OP_READ, 6 }, { OP_TRUNC, 5 }, { OP_PUNCH, 5 },
		{ OP_MWRITE, 6 }, { OP_MREAD, 4 }, { OP_MARK, 12 }, { OP_UNMARK, 10 },
		{ OP_XMARK, 4 }, { OP_XUNMARK, 3 }, { OP_PURGED, 3 }, { OP_FPURGE, 5 },
		{ OP_RPURGE, 1 }, { OP_FORGET, 2 }, { OP_RENAME, 3 }, { OP_LINK, 2 },
		{ OP_UNLINK, 2 }, { OP_REOPEN, 2 }, { OP_CREATE, 3 }, { OP_FALLOC, 3 },
	};
	unsigned total = 0, pick;
	int live = nlive(S), named = 0, slot;
	struct op o;
	uint64_t size;

	memset(&o, 0, sizeof(o));
	for (int k = 0; k < NNAMES; k++)
		named += S->name[k] >= 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		total += table[i].w;
	o.f = (uint8_t)rnd(r, 256);
	o.a = (uint8_t)rnd(r, NNAMES);
	o.b = (uint8_t)rnd(r, NNAMES);
	o.dseed = (uint32_t)splitmix(r);
	o.path = (uint8_t)rnd(r, 2);
	if (live < 3) {
		o.k = OP_CREATE;
		/* a free name, so that the file really comes; with none, free one */
		for (int k = 0; k < NNAMES && S->name[o.a] >= 0; k++)
			o.a = (uint8_t)((o.a + 1) % NNAMES);
		if (S->name[o.a] >= 0)
			o.k = OP_UNLINK;
		return o;
	}
	for (;;) {
		pick = (unsigned)rnd(r, total);
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
			if (pick < table[i].w) {
				o.k = table[i].k;
				break;
			}
			pick -= table[i].w;
		}
		if (o.k == OP_CREATE && live >= 5)
			continue;
		if ((o.k == OP_UNLINK || o.k == OP_RENAME) && named <= 3 && chance(r, 70))
			continue;
		break;
	}
	slot = resolve(S, o.f);
	size = S->in[slot].size;
	switch (o.k) {
	case OP_CREATE:
		for (int k = 0; k < NNAMES && S->name[o.a] >= 0 && chance(r, 90); k++)
			o.a = (uint8_t)((o.a + 1) % NNAMES);
		break;
	case OP_WRITE:
		o.len = gen_len(r);
		if (chance(r, 15))
			o.off = size;
		else if (chance(r, 30))
			o.off = rnd(r, MAXSZ / PG) * PG;
		else
			o.off = rnd(r, size > MAXSZ / 2 ? MAXSZ : size + MAXSZ / 2);
		if (o.off > MAXSZ)
			o.off = MAXSZ;
		break;
	case OP_READ:
		o.off = rnd(r, size + 8 * KIB);
		o.len = gen_len(r);
		break;
	case OP_MWRITE:
	case OP_MREAD:
		o.off = size ? rnd(r, size) : 0;
		o.len = gen_len(r);
		break;
	case OP_TRUNC:
		switch (rnd(r, 5)) {
		case 0:
			o.len = 0;
			break;
		case 1:
		case 2:
			o.len = size ? rnd(r, size) : 0;
			break;
		case 3:
			o.len = rnd(r, MAXSZ / PG + 1) * PG;
			break;
		default:
			o.len = size + rnd(r, MAXSZ - (size < MAXSZ ? size : MAXSZ) + 1);
			if (o.len > MAXSZ + 64 * KIB)
				o.len = MAXSZ;
			break;
		}
		break;
	case OP_PUNCH:
		o.off = chance(r, 40) ? rnd(r, size / PG + 2) * PG : rnd(r, size + PG);
		o.len = chance(r, 40) ? (rnd(r, 16) + 1) * PG : gen_len(r);
		break;
	case OP_FALLOC:
		o.off = rnd(r, size + 8 * KIB);
		if (o.off > MAXSZ)
			o.off = MAXSZ;
		o.len = gen_len(r);
		o.flags = (uint32_t)chance(r, 40);
		break;
	case OP_REOPEN:
		o.flags = (uint32_t)chance(r, 20);
		break;
	case OP_MARK:
	case OP_UNMARK:
		gen_range(r, size, &o.off, &o.len);
		if (o.k == OP_MARK)
			o.flags = gen_flags(r);
		break;
	case OP_XMARK:
	case OP_XUNMARK:
		o.nr = (uint8_t)(rnd(r, MAXR) + 1);
		for (int i = 0; i < o.nr; i++)
			gen_range(r, size, &o.roff[i], &o.rlen[i]);
		if (o.k == OP_XMARK)
			o.flags = gen_flags(r);
		break;
	case OP_PURGED:
		o.off = chance(r, 30) ? 0 : rnd(r, size + PG);
		o.len = chance(r, 20) ? 0 : chance(r, 10) ? UINT64_MAX - rnd(r, 10) : gen_len(r) * 4;
		o.flags = (uint32_t)rnd(r, 6); /* max, 0 included */
		break;
	case OP_RENAME: {
		static const uint32_t rf[] = { 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE };

		o.flags = rf[rnd(r, 4)];
		break;
	}
	default:
		break;
	}
	return o;
}

static void state_init(struct state *S, bool real)
{
	memset(S, 0, sizeof(*S));
	S->real = real;
	S->dirfd = -1;
	S->trace_from = LONG_MAX;
	for (int k = 0; k < NNAMES; k++)
		S->name[k] = -1;
	for (int i = 0; i < MAXINODES; i++)
		S->in[i].fd = -1;
}

static void state_free(struct state *S)
{
	for (int i = 0; i < MAXINODES; i++)
		if (S->in[i].live || S->in[i].data)
			inode_free(&S->in[i]);
}

/* The sequence of n operations that a seed makes (the model alone decides what comes). */
static struct op *generate(uint64_t seed, long n)
{
	struct op *ops = calloc((size_t)n + 1, sizeof(*ops));
	struct state *S = malloc(sizeof(*S));
	uint64_t r = seed;

	ck_assert_ptr_nonnull(ops);
	ck_assert_ptr_nonnull(S);
	state_init(S, false);
	for (long i = 0; i < n; i++) {
		ops[i] = gen_one(S, &r);
		S->step = i;
		do_step(S, &ops[i]);
		ck_assert_msg(S->fk == F_NONE, "model: %s", S->msg);
	}
	state_free(S);
	free(S);
	return ops;
}

/* ---------------------------------------------------------------------------------------- */
/* Running, shrinking                                                                       */

struct result {
	enum fail_kind fk;
	long step; /* index into the sequence run */
	char msg[4096];
};

static unsigned long run_counter;
static char seed_dir[PATH_MAX];

/* Runs ops[0..n) against a fresh directory; stops at the first mismatch. */
static void run(const struct op *ops, long n, long trace_from, struct result *res)
{
	struct state *S = malloc(sizeof(*S));
	int k;

	ck_assert_ptr_nonnull(S);
	state_init(S, true);
	S->trace_from = trace_from;
	k = snprintf(S->dir, sizeof(S->dir), "%s/r%lu", seed_dir, run_counter++);
	ck_assert(k > 0 && (size_t)k < sizeof(S->dir));
	ck_assert_msg(mkdir(S->dir, 0755) == 0, "mkdir %s: %s", S->dir, errname(errno));
	S->dirfd = open(S->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_msg(S->dirfd >= 0, "open %s: %s", S->dir, errname(errno));
	res->fk = F_NONE;
	res->step = -1;
	for (long i = 0; i < n && S->fk == F_NONE; i++) {
		bool all;

		S->step = i;
		S->pre_slot = S->wslot = S->pressure_slot = -1;
		S->wadopt = false;
		all = do_step(S, &ops[i]);
		if (S->fk == F_NONE)
			check_step(S, all || (i + 1) % FULL_CHECK_EVERY == 0 || i == n - 1);
		if (S->fk != F_NONE) {
			res->fk = S->fk;
			res->step = i;
			memcpy(res->msg, S->msg, sizeof(res->msg));
		}
	}
	state_free(S);
	close(S->dirfd);
	rm_tree_at(AT_FDCWD, S->dir);
	free(S);
}

/*
 * Shrinks a failing sequence: ops[0..*n) fails with kind fk.  Deletes chunks of steps, halving
 * the chunk down to single steps, keeping each deletion after which the same kind of failure
 * still happens (the sequence then ends at the new failing step).  idx[] follows: the
 * original step index of each operation kept.
 */
static void shrink(struct op *ops, long *idx, long *n, enum fail_kind fk, struct result *last)
{
	struct op *cand = malloc((size_t)*n * sizeof(*cand));
	long *cidx = malloc((size_t)*n * sizeof(*cidx));
	double deadline = now_s() + (double)shrink_seconds;
	struct result res;
	long runs = 0;

	ck_assert_ptr_nonnull(cand);
	ck_assert_ptr_nonnull(cidx);
	for (long chunk = *n / 2; chunk >= 1; chunk /= 2) {
		for (long i = 0; i < *n;) {
			long m = 0, c = chunk;

			if (now_s() > deadline) {
				fprintf(stderr, "modelcheck: shrinking stopped after %ld runs: "
					"MODELCHECK_SHRINK_SECONDS=%ld is up\n", runs, shrink_seconds);
				goto out;
			}
			if (i + c > *n)
				c = *n - i;
			/* never delete the last step alone when it is the only one left */
			if (c >= *n)
				break;
			for (long j = 0; j < *n; j++) {
				if (j >= i && j < i + c)
					continue;
				cand[m] = ops[j];
				cidx[m++] = idx[j];
			}
			run(cand, m, LONG_MAX, &res);
			runs++;
			if (res.fk == fk) {
				*n = res.step + 1;
				memcpy(ops, cand, (size_t)*n * sizeof(*ops));
				memcpy(idx, cidx, (size_t)*n * sizeof(*idx));
				*last = res;
			} else {
				i += c;
			}
		}
		if (chunk > *n / 2 && *n > 1)
			chunk = *n; /* the sequence got much shorter: start again from half of it */
	}
out:
	fprintf(stderr, "modelcheck: shrinking took %ld runs\n", runs);
	free(cand);
	free(cidx);
}

static void print_failure(uint64_t seed, const struct result *r, const char *when)
{
	fprintf(stderr, "modelcheck: seed %" PRIu64 ": %s: step %ld: %s mismatch:\n%s\n", seed, when,
		r->step, fail_name[r->fk], r->msg);
}

START_TEST(modelcheck_seed)
{
	uint64_t seed = seeds[_i];
	struct op *ops = generate(seed, nops), *seq;
	long n = nops, *idx;
	struct result res, again;
	long trace_from;
	int k;

	k = snprintf(seed_dir, sizeof(seed_dir), "%s/seed-%" PRIu64, run_dir, seed);
	ck_assert(k > 0 && (size_t)k < sizeof(seed_dir));
	ck_assert_msg(mkdir(seed_dir, 0755) == 0, "mkdir %s: %s", seed_dir, errname(errno));
	idx = malloc(((size_t)n + 1) * sizeof(*idx));
	seq = malloc(((size_t)n + 1) * sizeof(*seq));
	ck_assert_ptr_nonnull(idx);
	ck_assert_ptr_nonnull(seq);
	if (keep) {
		long m = 0;

		for (size_t i = 0; i < nkeep; i++) {
			ck_assert_msg(keep[i] >= 0 && keep[i] < nops && m < nops, "MODELCHECK_KEEP: step "
				      "%ld is not in 0..%ld", keep[i], nops - 1);
			seq[m] = ops[keep[i]];
			idx[m++] = keep[i];
		}
		n = m;
	} else {
		memcpy(seq, ops, (size_t)n * sizeof(*seq));
		for (long i = 0; i < n; i++)
			idx[i] = i;
	}
	run(seq, n, trace_all || keep ? 0 : LONG_MAX, &res);
	if (res.fk == F_NONE) {
		fprintf(stderr, "modelcheck: seed %" PRIu64 ": %ld steps match the model\n", seed, n);
		rm_tree_at(AT_FDCWD, seed_dir);
		free(ops);
		free(seq);
		free(idx);
		return;
	}
	print_failure(seed, &res, "first run");
	fprintf(stderr, "modelcheck: seed %" PRIu64 ": original step %ld; shrinking (replay cut "
		"there, then delete steps while a %s mismatch persists)\n", seed, idx[res.step],
		fail_name[res.fk]);
	n = res.step + 1;
	run(seq, n, LONG_MAX, &again);
	trace_from = 0;
	if (again.fk != res.fk) {
		fprintf(stderr, "modelcheck: seed %" PRIu64 ": the replay cut at step %ld gave %s, "
			"not the same failure: not shrunk (a race?); the last 40 steps follow\n", seed,
			res.step, again.fk == F_NONE ? "no failure" : fail_name[again.fk]);
		trace_from = n > 40 ? n - 40 : 0;
	} else {
		again.step = res.step;
		shrink(seq, idx, &n, res.fk, &again);
	}
	/* Replay what is left with a trace, for the readable sequence. */
	fprintf(stderr, "modelcheck: seed %" PRIu64 ": shrunk sequence, %ld step(s) (numbers are the "
		"steps of this replay; files are named nK(#inode), resolved as they ran):\n", seed, n);
	run(seq, n, trace_from, &again);
	if (again.fk != F_NONE)
		print_failure(seed, &again, "shrunk replay");
	else
		fprintf(stderr, "modelcheck: the shrunk replay did not fail this time (flaky)\n");
	fprintf(stderr, "modelcheck: replay it with: MODELCHECK_SEEDS=%" PRIu64 " MODELCHECK_OPS=%ld "
		"MODELCHECK_KEEP=", seed, nops);
	for (long i = 0, j; i < n; i = j + 1) {
		for (j = i; j + 1 < n && idx[j + 1] == idx[j] + 1; j++)
			;
		if (j > i)
			fprintf(stderr, "%s%ld-%ld", i ? "," : "", idx[i], idx[j]);
		else
			fprintf(stderr, "%s%ld", i ? "," : "", idx[i]);
	}
	fprintf(stderr, " MODELCHECK_TRACE=1 VFS_TEST_DIR=MOUNT modelcheck\n");
	rm_tree_at(AT_FDCWD, seed_dir);
	free(ops);
	free(seq);
	free(idx);
	ck_abort_msg("seed %" PRIu64 ": %s mismatch at step %ld (%ld step(s) after shrinking; "
		     "see stderr): %.300s", seed, fail_name[res.fk], res.step, n, res.msg);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static bool parse_list(const char *s, uint64_t **out, size_t *n)
{
	const char *p = s;

	*n = 0;
	*out = NULL;
	while (*p) {
		char *end;
		uint64_t v;

		errno = 0;
		v = strtoull(p, &end, 0);
		if (end == p || errno)
			return false;
		*out = realloc(*out, (*n + 1) * sizeof(**out));
		if (!*out)
			return false;
		(*out)[(*n)++] = v;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return false;
	}
	return *n > 0;
}

/* MODELCHECK_KEEP: "3,17,40-52,60". */
static bool parse_keep(const char *s)
{
	const char *p = s;

	while (*p) {
		char *end;
		long a, b;

		errno = 0;
		a = strtol(p, &end, 10);
		if (end == p || errno || a < 0)
			return false;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || errno || b < a)
				return false;
			p = end;
		}
		keep = realloc(keep, (nkeep + (size_t)(b - a) + 1) * sizeof(*keep));
		if (!keep)
			return false;
		for (long i = a; i <= b; i++)
			keep[nkeep++] = i;
		if (*p == ',')
			p++;
		else if (*p)
			return false;
	}
	return nkeep > 0;
}

static long env_long(const char *name, long def, long min)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	if (*end || v < min) {
		fprintf(stderr, "modelcheck: %s=%s: want a number >= %ld\n", name, s, min);
		exit(2);
	}
	return v;
}

int main(void)
{
	const char *s = getenv("MODELCHECK_SEEDS");
	const char *t = getenv("MODELCHECK_TRACE");
	Suite *suite;
	TCase *tc;

	if (!mtest_find_mount("modelcheck", mount_dir))
		return 1;
	if (s && strcmp(s, "random") == 0) {
		uint64_t r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

		seeds = malloc(sizeof(*seeds));
		seeds[0] = splitmix(&r) >> 16;
		nseeds = 1;
		fprintf(stderr, "modelcheck: MODELCHECK_SEEDS=random: seed %" PRIu64 "\n", seeds[0]);
	} else if (!parse_list(s && *s ? s : "1,2,3,4,5", &seeds, &nseeds)) {
		fprintf(stderr, "modelcheck: MODELCHECK_SEEDS=%s: want comma-separated numbers or "
				"\"random\"\n", s);
		return 2;
	}
	nops = env_long("MODELCHECK_OPS", 2000, 1);
	shrink_seconds = env_long("MODELCHECK_SHRINK_SECONDS", 120, 0);
	trace_all = t && *t && strcmp(t, "0") != 0;
	s = getenv("VFS_WRITE_POLICY");
	if (s && *s && strcmp(s, "keep") != 0 && strcmp(s, "unmark") != 0) {
		fprintf(stderr, "modelcheck: VFS_WRITE_POLICY=%s: want keep or unmark\n", s);
		return 2;
	}
	write_unmark = s && strcmp(s, "unmark") == 0;
	{
		char st[4096];
		ssize_t n = getxattr(mount_dir, "user.volatile.stats", st, sizeof(st) - 1);

		st[n > 0 ? n : 0] = '\0';
		passthrough_path = strstr(st, "passthrough=on\n") != NULL;
	}
	s = getenv("MODELCHECK_KEEP");
	if (s && *s && !parse_keep(s)) {
		fprintf(stderr, "modelcheck: MODELCHECK_KEEP=%s: want comma-separated step numbers "
				"and ranges A-B\n", s);
		return 2;
	}

	if (!mtest_make_run_dir("modelcheck", mount_dir))
		return 1;
	fprintf(stderr, "modelcheck: %zu seed(s) x %ld operations (MODELCHECK_SEEDS, MODELCHECK_OPS)\n",
		nseeds, nops);

	suite = suite_create("modelcheck");
	/* A few ms a step here; room for a sanitizer build and for shrinking. */
	tc = mtest_tcase(suite, "model", NULL, NULL, (double)(60 + nops / 20 + shrink_seconds * 2));
	tcase_add_loop_test(tc, modelcheck_seed, 0, (int)nseeds);
	return mtest_run(suite);
}
