/*
 * fuzz_volatile.c - differential libFuzzer harness for volatile ranges
 * (DESIGN section 4) on the filesystem layer, without a mount.
 *
 * The input is a program for ONE regular file of a fresh filesystem
 * (fs_init with a memory limit nothing reaches, fs_mknod).  Byte 0 is
 * the configuration (bit 0 write_policy=unmark, bit 1 purged_read=eio);
 * then every 8 bytes are one operation, an opcode and 7 parameters:
 *
 *   mark      user.volatile.mark with 1 or 2 ranges, priority=N, age, in
 *             decimal, hex or K notation, sometimes with a malformed item
 *             (then EINVAL and nothing may change)
 *   unmark    vol_unmark() of 1 or 2 ranges: bytes and purged checked; or
 *             user.volatile.unmark with the same ranges
 *   write     fs_write(off, len) of a pattern
 *   truncate  fs_setattr(FS_SET_SIZE)
 *   punch     fs_fallocate(PUNCH_HOLE | KEEP_SIZE)
 *   allocate  fs_fallocate(0 or KEEP_SIZE)
 *   purge     user.volatile.purge = "all" on the file
 *   rootpurge user.volatile.purge on the root: "all", or a SIZE
 *   read      fs_read(off, len): the bytes (or EIO) checked
 *   forget    removexattr user.volatile.purged, a vol_purged() window, or
 *             lseek(SEEK_DATA / SEEK_HOLE)
 *   probe     evict_probe(): which units' cached pages it drops (the
 *             coldest ones the kernel may cache, units.h), against the
 *             model, which tracks per unit "made or touched since its
 *             last probe"
 *
 * Offsets and sizes stay inside a universe of NP pages.  After every
 * operation the file is compared with a deliberately simple model:
 *
 *   unit_of[p]   the unit holding page p (0: non-volatile), for the NP
 *                pages and one more, TAIL, that stands for every page
 *                beyond them: a unit is unbounded exactly when it holds
 *                TAIL (no bounded range of the harness reaches it);
 *   prio, age    per unit; the LRU order as a list of units;
 *   present[p]   the page holds memory;
 *   data[b]      the content of each byte, purged[b] the purged set.
 *
 * The model follows DESIGN section 4 word for word (absorption, touching
 * units, unmark splits and its two values, purge of the unit's bytes
 * within the size, writes, truncation, punching; only marking, reading
 * and writing make a unit most recently used).  Where DESIGN.md is silent
 * it follows what the daemon documents (units.h, evict.h): a read or
 * write touching several units makes them most recently used in
 * ascending offset order, the right half of a split unit follows the
 * left one in the order, an unmark counts the bytes of a unit that was
 * unbounded only up to the size rounded up to a page, and a purge of a
 * SIZE takes only units that hold memory, counting the pages they held.
 *
 * Compared after every operation: the size and st_blocks, which pages
 * hold memory and their bytes (straight from the page map, which does
 * not disturb the LRU order the way fs_read would), the purged set
 * (user.volatile.purged), the units (user.volatile.ranges), and the
 * purge order itself: the units' resident counts and the LRU lists of
 * units.h, against the model's order; statfs's free blocks (the limit
 * minus the non-volatile data held) and poll's "something was purged".
 * At the end the whole file is read back with fs_read and the two
 * values are read through getxattr as the shell would.  A disagreement
 * prints the operations so far and both states, then abort()s, which is
 * how libFuzzer records a crash.
 *
 *   $ contrib/fuzz.sh                                # build, fuzz, replay
 *   $ build-fuzz/fuzz_volatile crash-XXXX            # replay one input
 *   $ FUZZ_VOLATILE_TRACE=1 build-fuzz/fuzz_volatile crash-XXXX   # every step
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "evict.h"
#include "fs.h"
#include "pagemap.h"
#include "size.h"
#include "units.h"
#include "vol.h"
#include "vxattr.h"
#include "volatilefs.h"

#define PG 4096u
#define NP 64u                 /* pages in the universe */
#define TAIL NP                /* the page that stands for all pages >= NP */
#define UBYTES (NP * PG)
#define MAXU ((int)(2 * (NP + 1) + 8)) /* unit ids; at most NP + 1 units live at once */
#define UNB UINT64_MAX          /* an unbounded range end, in bytes */

/* ---- the model ---- */

struct munit {
	bool used;
	unsigned prio;
	bool age;
	bool kcached; /* the kernel may cache its pages: made or touched since its probe */
};

struct model {
	uint64_t size;
	bool write_unmark, purged_eio;
	int unit_of[NP + 1];
	struct munit u[MAXU];
	int order[MAXU]; /* LRU: least recently used first */
	int norder;
	bool present[NP];
	uint8_t data[UBYTES];
	uint8_t purged[UBYTES];
};

static struct model M;

/* ---- reporting ---- */

static char trace[1 << 16];
static size_t trace_len;
static bool trace_live;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (trace_len >= sizeof(trace) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(trace + trace_len, sizeof(trace) - trace_len, fmt, ap);
	va_end(ap);
	if (trace_live)
		fputs(trace + trace_len, stderr);
	if (n > 0)
		trace_len += (size_t)n;
	if (trace_len > sizeof(trace) - 1)
		trace_len = sizeof(trace) - 1;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\nfuzz_volatile: the daemon and the model disagree after these "
		"operations (write_policy=%s, purged_read=%s):\n%s\n", M.write_unmark ? "unmark" :
		"keep", M.purged_eio ? "eio" : "zero", trace);
	fprintf(stderr, "fuzz_volatile: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- model helpers ---- */

/*
 * The model and the comparisons go without coverage instrumentation:
 * their loops over pages, units and bytes would otherwise take most of
 * the run time in comparison tracing, and their branches say nothing
 * about the daemon.  The operation decoders stay instrumented.
 */
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))

NO_COVERAGE static bool unbounded(int id)
{
	return id && M.unit_of[TAIL] == id;
}

/* First and last page of unit id (TAIL included for an unbounded one). */
NO_COVERAGE static void extent_of(int id, unsigned *first, unsigned *last)
{
	unsigned p = 0;

	while (M.unit_of[p] != id)
		p++;
	*first = p;
	while (p + 1 <= TAIL && M.unit_of[p + 1] == id)
		p++;
	*last = p;
}

NO_COVERAGE static unsigned present_in(int id)
{
	unsigned n = 0;

	for (unsigned p = 0; p < NP; p++)
		n += M.unit_of[p] == id && M.present[p];
	return n;
}

NO_COVERAGE static int new_unit(unsigned prio, bool age)
{
	for (int id = 1; id < MAXU; id++) {
		if (!M.u[id].used) {
			M.u[id] = (struct munit){ true, prio, age, true };
			return id;
		}
	}
	fail("model: out of unit ids");
}

NO_COVERAGE static void order_remove(int id)
{
	for (int i = 0; i < M.norder; i++) {
		if (M.order[i] == id) {
			memmove(&M.order[i], &M.order[i + 1], (size_t)(M.norder - i - 1) * sizeof(int));
			M.norder--;
			return;
		}
	}
}

NO_COVERAGE static void order_tail(int id)
{
	order_remove(id);
	M.order[M.norder++] = id;
}

NO_COVERAGE static void order_after(int after, int id)
{
	for (int i = 0; i < M.norder; i++) {
		if (M.order[i] == after) {
			memmove(&M.order[i + 2], &M.order[i + 1], (size_t)(M.norder - i - 1) * sizeof(int));
			M.order[i + 1] = id;
			M.norder++;
			return;
		}
	}
	fail("model: unit %d not in the order", after);
}

NO_COVERAGE static void drop_unit_if_gone(int id)
{
	for (unsigned p = 0; p <= TAIL; p++)
		if (M.unit_of[p] == id)
			return;
	M.u[id].used = false;
	order_remove(id);
}

/* Pages [s, e) of a range in bytes: e is TAIL + 1 for an unbounded one. */
NO_COVERAGE static void pages_of(uint64_t off, uint64_t len, unsigned *s, unsigned *e)
{
	*s = (unsigned)(off / PG);
	*e = len ? (unsigned)((off + len + PG - 1) / PG) : TAIL + 1;
}

/* Mark: the new unit absorbs every unit it overlaps; touching ones stay. */
NO_COVERAGE static void model_mark(uint64_t off, uint64_t len, unsigned prio, bool age)
{
	unsigned s, e, lo, hi;
	int id;

	pages_of(off, len, &s, &e);
	lo = s;
	hi = e; /* exclusive */
	for (unsigned p = s; p < e; p++) {
		int old = M.unit_of[p];
		unsigned f, l;

		if (!old)
			continue;
		extent_of(old, &f, &l);
		if (f < lo)
			lo = f;
		if (l + 1 > hi)
			hi = l + 1;
	}
	for (unsigned p = lo; p < hi; p++) {
		int old = M.unit_of[p];

		if (old && M.u[old].used) {
			M.u[old].used = false;
			order_remove(old);
		}
	}
	id = new_unit(prio, age);
	for (unsigned p = lo; p < hi; p++)
		M.unit_of[p] = id;
	order_tail(id);
}

/* Pages [s, e) become non-volatile; a unit with pages on both sides splits. */
NO_COVERAGE static void model_unmark_pages(unsigned s, unsigned e)
{
	if (s > 0 && e <= TAIL && M.unit_of[s - 1] && M.unit_of[s - 1] == M.unit_of[e]) {
		int left = M.unit_of[s - 1];
		int right = new_unit(M.u[left].prio, M.u[left].age);

		M.u[right].kcached = M.u[left].kcached;
		for (unsigned p = e; p <= TAIL && M.unit_of[p] == left; p++)
			M.unit_of[p] = right;
		order_after(left, right);
	}
	for (unsigned p = s; p < e; p++) {
		int old = M.unit_of[p];

		M.unit_of[p] = 0;
		if (old)
			drop_unit_if_gone(old);
	}
}

/* Purge one unit: its bytes within the size join the purged set, its memory goes. */
NO_COVERAGE static unsigned model_purge_unit(int id)
{
	unsigned f, l, freed = 0;
	uint64_t from, to;

	extent_of(id, &f, &l);
	from = (uint64_t)f * PG;
	to = unbounded(id) ? M.size : (uint64_t)(l + 1) * PG;
	if (to > M.size)
		to = M.size;
	if (from < to) {
		memset(M.purged + from, 1, to - from);
		memset(M.data + from, 0, to - from);
	}
	for (unsigned p = f; p <= l && p < NP; p++) {
		freed += M.present[p];
		M.present[p] = false;
	}
	return freed;
}

/*
 * Reading or writing pages [s, e) makes the units there most recently
 * used (DESIGN section 4), in ascending order of offset when there are
 * several (units_touch() does so; DESIGN 4 does not say).  Holding memory
 * or not does not matter to DESIGN 4: a unit read while purged was used.
 */
NO_COVERAGE static void model_touch(unsigned s, unsigned e)
{
	int last = 0;

	for (unsigned p = s; p < e && p < NP; p++) {
		int id = M.unit_of[p];

		if (id && id != last) {
			order_tail(id);
			M.u[id].kcached = true;
		}
		last = id;
	}
}

/*
 * Give page p memory.  Only marking, reading and writing make a unit
 * most recently used (DESIGN section 4): memory coming back through
 * fallocate() does not.
 */
NO_COVERAGE static void model_fill_page(unsigned p)
{
	M.present[p] = true;
}

/* The bytes a write stores: different at every offset, so misplaced data shows. */
NO_COVERAGE static void pattern(uint8_t *buf, uint8_t seed, uint64_t off, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++) {
		uint64_t pos = off + i;

		buf[i] = (uint8_t)(seed + pos * 7 + (pos >> 12) * 13);
	}
}

/* The first offset in [from, to) where a and b differ, or to. */
NO_COVERAGE static uint64_t first_difference(const uint8_t *a, const uint8_t *b, uint64_t from,
					     uint64_t to)
{
	while (from < to && a[from] == b[from])
		from++;
	return from;
}

/* ---- the filesystem ---- */

static struct fs fs;
static struct inode *f;
static const struct fs_cred root_cred = { 0, 0 };
static uint8_t iobuf[UBYTES + PG];

/* ---- comparison ---- */

static const char *show(const char *s)
{
	return s && *s ? s : "(empty)\n";
}

NO_COVERAGE static void model_purged_text(struct strbuf *b)
{
	uint64_t i = 0;

	while (i < UBYTES) {
		const uint8_t *one = memchr(M.purged + i, 1, UBYTES - i), *zero;
		uint64_t s, e;

		if (!one)
			break;
		s = (uint64_t)(one - M.purged);
		zero = memchr(one, 0, UBYTES - s);
		e = zero ? (uint64_t)(zero - M.purged) : UBYTES;
		strbuf_printf(b, "%" PRIu64 ":%" PRIu64 "\n", s, e - s);
		i = e;
	}
}

NO_COVERAGE static bool model_purged_in(uint64_t from, uint64_t to)
{
	if (to > UBYTES)
		to = UBYTES;
	return from < to && memchr(M.purged + from, 1, to - from) != NULL;
}

NO_COVERAGE static void model_ranges_text(struct strbuf *b)
{
	for (unsigned p = 0; p <= TAIL; p++) {
		int id = M.unit_of[p];
		unsigned f0, l;
		uint64_t off, len;
		bool purged;

		if (!id || (p > 0 && M.unit_of[p - 1] == id))
			continue;
		extent_of(id, &f0, &l);
		off = (uint64_t)f0 * PG;
		len = unbounded(id) ? 0 : (uint64_t)(l - f0 + 1) * PG;
		purged = model_purged_in(off, len ? off + len : UNB);
		strbuf_printf(b, "%" PRIu64 ":%" PRIu64 " %s priority=%u%s\n", off, len,
			      purged ? "purged" : "volatile", M.u[id].prio, M.u[id].age ? " age" : "");
	}
}

NO_COVERAGE static void check_all(void)
{
	struct strbuf got, want;
	struct stat st;
	unsigned npresent = 0, nunits = 0, resident = 0, pres[MAXU] = { 0 }, first[MAXU];
	int ret;

	for (unsigned p = TAIL + 1; p-- > 0;) {
		if (p < NP)
			pres[M.unit_of[p]] += M.present[p];
		first[M.unit_of[p]] = p;
	}

	/* size and memory held */
	fs_getattr(&fs, f, &st);
	for (unsigned p = 0; p < NP; p++)
		npresent += M.present[p];
	if ((uint64_t)st.st_size != M.size)
		fail("size %" PRIu64 ", the model %" PRIu64, (uint64_t)st.st_size, M.size);
	if ((uint64_t)st.st_blocks != npresent * 8ull)
		fail("st_blocks %" PRIu64 ", the model holds %u pages", (uint64_t)st.st_blocks,
		     npresent);
	/* statfs: free = the limit minus the non-volatile data held (DESIGN section 3) */
	{
		struct statvfs sv;
		uint64_t nonvol = 0;

		for (unsigned p = 0; p < NP; p++)
			nonvol += M.present[p] && !M.unit_of[p];
		fs_statfs(&fs, &sv);
		if (sv.f_bfree != sv.f_blocks - nonvol)
			fail("statfs f_bfree %" PRIu64 " of %" PRIu64 ", the model holds %" PRIu64
			     " non-volatile pages", (uint64_t)sv.f_bfree, (uint64_t)sv.f_blocks, nonvol);
	}
	/* poll's POLLPRI: the purged set is not empty */
	if (vol_has_purged(&fs, f) != model_purged_in(0, UBYTES))
		fail("vol_has_purged says %d", vol_has_purged(&fs, f));

	/* pages and bytes, from the page map (fs_read would touch the units) */
	for (unsigned p = 0; p < NP; p++) {
		const uint8_t *page = PM_PAGE(pagemap_get(&f->pages, p));

		if (!page != !M.present[p])
			fail("page %u %s memory, the model %s", p, page ? "holds" : "holds no",
			     M.present[p] ? "holds some" : "none");
		if (page && memcmp(page, M.data + (uint64_t)p * PG, PG)) {
			unsigned i = (unsigned)first_difference(page, M.data + (uint64_t)p * PG, 0, PG);

			fail("byte %" PRIu64 " is 0x%02x, the model 0x%02x%s", (uint64_t)p * PG + i,
			     page[i], M.data[(uint64_t)p * PG + i],
			     M.purged[(uint64_t)p * PG + i] ? " (purged)" : "");
		}
	}

	/* the purged set */
	strbuf_init(&got);
	strbuf_init(&want);
	ret = vol_format_purged(&fs, f, &got);
	model_purged_text(&want);
	if (ret || strcmp(show(got.buf), show(want.buf)))
		fail("user.volatile.purged (%d) is\n%sthe model has\n%s", ret, show(got.buf),
		     show(want.buf));
	strbuf_free(&got);
	strbuf_free(&want);

	/* the units */
	ret = vol_format_ranges(&fs, f, &got);
	model_ranges_text(&want);
	if (ret || strcmp(show(got.buf), show(want.buf)))
		fail("user.volatile.ranges (%d) is\n%sthe model has\n%s", ret, show(got.buf),
		     show(want.buf));
	strbuf_free(&got);
	strbuf_free(&want);

	/* memory per unit, and the counters behind volatile_units and volatile_bytes */
	for (struct unit *u = units_first_from(&f->units, 0); u; u = units_next(&f->units, u)) {
		int id = M.unit_of[u->start < TAIL ? u->start : TAIL];
		unsigned want_res = pres[id];

		if (!id) /* cannot happen: the ranges matched */
			fail("the unit at page %" PRIu64 " is not in the model", u->start);

		nunits++;
		resident += want_res;
		if (u->resident != want_res)
			fail("the unit at page %" PRIu64 " counts %" PRIu64 " resident pages, the "
			     "model %u", u->start, u->resident, want_res);
		if (u->listed != (u->resident > 0))
			fail("the unit at page %" PRIu64 " is %slisted with %" PRIu64 " resident pages",
			     u->start, u->listed ? "" : "not ", u->resident);
	}
	if (atomic_load(&fs.lru.units) != nunits || f->units.count != nunits)
		fail("volatile_units %" PRIu64 " (file %" PRIu64 "), the tree holds %u",
		     (uint64_t)atomic_load(&fs.lru.units), f->units.count, nunits);
	if (atomic_load(&fs.lru.resident) != resident)
		fail("volatile_bytes %" PRIu64 ", the units hold %u pages",
		     (uint64_t)atomic_load(&fs.lru.resident) * PG, resident);

	/* the purge order: each list of units.h against the model's LRU order */
	for (unsigned li = 0; li < LRU_LISTS; li++) {
		struct unit *h = &fs.lru.heads[li], *u = h->lru_next;

		for (int i = 0; i < M.norder; i++) {
			int id = M.order[i];
			unsigned f0 = first[id];

			if (M.u[id].prio * 2 + (M.u[id].age ? 0 : 1) != li || !pres[id])
				continue;
			if (u == h || u->start != f0) {
				char buf[1024];
				size_t n = 0;

				for (int k = 0; k < M.norder && n < sizeof(buf) - 32; k++) {
					if (!pres[M.order[k]])
						continue;
					n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %u(p%u%s)",
							      first[M.order[k]],
							      M.u[M.order[k]].prio,
							      M.u[M.order[k]].age ? ",age" : "");
				}
				fail("purge order, list %u (priority %u%s): next is the unit at page %s%"
				     PRIu64 ", the model's is at page %u\nthe model's LRU order "
				     "(least recent first, by first page):%s", li, li / 2,
				     li % 2 ? "" : ", age", u == h ? "none " : "",
				     u == h ? 0 : u->start, f0, buf);
			}
			u = u->lru_next;
		}
		if (u != h)
			fail("purge order, list %u: the unit at page %" PRIu64 " is listed, the model "
			     "has nothing more there", li, u->start);
	}
}

/* ---- operations ---- */

/* A range within the universe from two bytes, with a byte-exact length from sub. */
static void pick_range(uint8_t a, uint8_t b, unsigned sub, uint64_t *off, uint64_t *len)
{
	unsigned s = a % (NP + 1), lenp;

	*off = (uint64_t)s * PG;
	if (s == NP) {
		*len = 0;
		return;
	}
	lenp = b % (NP - s + 1);
	*len = lenp ? (uint64_t)lenp * PG - (sub % PG) : 0;
}

/* A SIZE in one of the notations of DESIGN section 2. */
static int put_size(char *d, size_t n, uint64_t v, unsigned how)
{
	switch (how % 4) {
	case 1:
		return snprintf(d, n, "0x%" PRIx64, v);
	case 2:
		if (v % 1024 == 0)
			return snprintf(d, n, "%" PRIu64 "%c", v / 1024, how & 4 ? 'k' : 'K');
		break;
	case 3:
		if (v == 0)
			return snprintf(d, n, "0x0");
		break;
	}
	return snprintf(d, n, "%" PRIu64, v);
}

static void op_mark(const uint8_t *p)
{
	uint64_t off[2], len[2];
	unsigned flags = p[3], nr = flags & 0x20 ? 2 : 1, prio = flags & 8 ? flags & 7 : 3;
	bool age = flags & 0x10, bad = (flags & 0xc0) == 0xc0 && (p[6] & 3) == 0;
	static const char *const seps[] = { " ", ",", "\t", "\n", " , " };
	char txt[256];
	size_t n = 0;
	int ret;

	pick_range(p[0], p[1], (p[2] & 15) * 256u + (p[6] >> 4), &off[0], &len[0]);
	pick_range(p[4], p[5], (p[2] >> 4) * 256u, &off[1], &len[1]);
	if ((flags & 0xc0) == 0x40) { /* flags first */
		if (age)
			n += (size_t)snprintf(txt + n, sizeof(txt) - n, "age ");
		if (flags & 8)
			n += (size_t)snprintf(txt + n, sizeof(txt) - n, "priority=%u ", prio);
	}
	for (unsigned i = 0; i < nr; i++) {
		if (i)
			n += (size_t)snprintf(txt + n, sizeof(txt) - n, "%s", seps[p[6] % 5]);
		if (off[i] == 0 && len[i] == 0 && (p[6] & 4)) {
			n += (size_t)snprintf(txt + n, sizeof(txt) - n, "all");
			continue;
		}
		n += (size_t)put_size(txt + n, sizeof(txt) - n, off[i], p[6] >> (2 + i));
		txt[n++] = ':';
		n += (size_t)put_size(txt + n, sizeof(txt) - n, len[i], p[6] >> (4 + i));
	}
	if ((flags & 0xc0) != 0x40) {
		if (age)
			n += (size_t)snprintf(txt + n, sizeof(txt) - n, " age");
		if (flags & 8)
			n += (size_t)snprintf(txt + n, sizeof(txt) - n, ",priority=%u", prio);
	}
	if (bad) /* one malformed item: the whole call must change nothing */
		n += (size_t)snprintf(txt + n, sizeof(txt) - n, " %s",
				      (p[6] >> 2) % 3 == 0 ? "4097:4K" : (p[6] >> 2) % 3 == 1 ?
				      "priority=8" : "0:1Q");
	note("mark \"%s\"\n", txt);
	/* n + 1 bytes: with the trailing NUL that setfattr sends */
	ret = vxattr_setxattr(&fs, f, "user.volatile.mark", txt, n + (p[2] & 1), 0, &root_cred);
	if (bad) {
		if (ret != -EINVAL)
			fail("a malformed mark returned %d, not EINVAL", ret);
		return;
	}
	if (ret)
		fail("mark \"%s\" returned %d", txt, ret);
	for (unsigned i = 0; i < nr; i++)
		model_mark(off[i], len[i], prio, age);
}

static void op_unmark(const uint8_t *p)
{
	struct vrange r[2];
	uint64_t off[2], len[2], bytes = 0, want_bytes = 0, limit;
	unsigned nr = p[3] & 1 ? 2 : 1;
	int before[NP + 1], purged = -1, want_purged = 0, ret;
	bool was_unb[MAXU] = { 0 }, named[NP + 1] = { 0 }, by_xattr = p[3] & 2;
	char txt[128];
	size_t n = 0;

	pick_range(p[0], p[1], (p[2] & 15) * 256u, &off[0], &len[0]);
	pick_range(p[4], p[5], (p[2] >> 4) * 256u, &off[1], &len[1]);
	note(by_xattr ? "unmark (setxattr)" : "unmark");
	for (unsigned i = 0; i < nr; i++) {
		if (vol_check_range(off[i], len[i], &r[i]))
			fail("vol_check_range(%" PRIu64 ", %" PRIu64 ") refused a valid range", off[i],
			     len[i]);
		if (r[i].offset != off[i] || r[i].length != (len[i] + PG - 1) / PG * PG)
			fail("vol_check_range(%" PRIu64 ", %" PRIu64 ") rounded to %" PRIu64 ":%" PRIu64,
			     off[i], len[i], r[i].offset, r[i].length);
		note(" %" PRIu64 ":%" PRIu64, off[i], len[i]);
		n += (size_t)snprintf(txt + n, sizeof(txt) - n, "%s%" PRIu64 ":%" PRIu64, i ? "," : "",
				      off[i], len[i]);
	}
	note("\n");
	if (by_xattr) /* user.volatile.unmark: the same change, no values reported */
		ret = vxattr_setxattr(&fs, f, "user.volatile.unmark", txt, n, 0, &root_cred);
	else
		ret = vol_unmark(&fs, f, r, nr, &bytes, &purged);
	if (ret)
		fail("unmark returned %d", ret);

	/*
	 * bytes: pages of the named ranges volatile before the call (all of
	 * them are not after it), those of a unit that was unbounded only up
	 * to the size rounded up to a page.  purged: a named byte is purged.
	 */
	memcpy(before, M.unit_of, sizeof(before));
	for (unsigned p2 = 0; p2 <= TAIL; p2++)
		if (before[p2])
			was_unb[before[p2]] = unbounded(before[p2]);
	limit = (M.size + PG - 1) / PG;
	for (unsigned i = 0; i < nr; i++) {
		unsigned s, e;
		/* the named range is the rounded one: length up to a page (DESIGN section 4) */
		uint64_t to = r[i].length ? r[i].offset + r[i].length : M.size;

		pages_of(off[i], len[i], &s, &e);
		for (unsigned p2 = s; p2 < e; p2++)
			named[p2] = true;
		if (model_purged_in(off[i], to < M.size ? to : M.size))
			want_purged = 1;
	}
	for (unsigned p2 = 0; p2 <= TAIL; p2++)
		if (named[p2] && before[p2] && (!was_unb[before[p2]] || p2 < limit))
			want_bytes += PG;
	for (unsigned i = 0; i < nr; i++) {
		unsigned s, e;

		pages_of(off[i], len[i], &s, &e);
		model_unmark_pages(s, e);
	}
	if (!by_xattr && (bytes != want_bytes || purged != want_purged))
		fail("unmark reported bytes=%" PRIu64 " purged=%d, the model bytes=%" PRIu64
		     " purged=%d", bytes, purged, want_bytes, want_purged);
}

/* An offset in the universe and a length of 1.. that stays in it. */
static void pick_io(const uint8_t *p, uint64_t *off, uint64_t *len, uint64_t span)
{
	uint64_t raw = p[3] | (uint64_t)p[4] << 8 | (uint64_t)(p[5] & 1) << 16, max;

	*off = (p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16) % span;
	max = UBYTES > *off ? UBYTES - *off : 1;
	switch ((p[5] >> 1) & 3) {
	case 0: *len = 1 + raw % 16; break;
	case 1: *len = 1 + raw % PG; break;
	default: *len = 1 + raw % max; break;
	}
	if (*len > max)
		*len = max;
}

static void op_write(const uint8_t *p)
{
	uint64_t off, len;
	unsigned first, last;
	ssize_t ret;

	pick_io(p, &off, &len, UBYTES);
	note("write %" PRIu64 " +%" PRIu64 " seed %u\n", off, len, p[6]);
	pattern(iobuf, p[6], off, len);
	ret = fs_write(&fs, f, off, (const char *)iobuf, len);
	if (ret != (ssize_t)len)
		fail("write returned %zd", ret);
	first = (unsigned)(off / PG);
	last = (unsigned)((off + len - 1) / PG);
	memcpy(M.data + off, iobuf, len);
	memset(M.purged + off, 0, len);
	if (off + len > M.size)
		M.size = off + len;
	for (unsigned pg = first; pg <= last; pg++)
		model_fill_page(pg);
	if (M.write_unmark)
		model_unmark_pages(first, last + 1);
	else
		model_touch(first, last + 1);
}

static void op_truncate(const uint8_t *p)
{
	struct fs_setattr sa = { .valid = FS_SET_SIZE };
	struct stat st;
	uint64_t size = (p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16) % (UBYTES + 1);
	int ret;

	if (p[3] & 1)
		size = size / PG * PG;
	sa.size = size;
	note("truncate %" PRIu64 "\n", size);
	ret = fs_setattr(&fs, f, &sa, &st);
	if (ret)
		fail("truncate returned %d", ret);
	if (size < M.size) {
		unsigned keep = (unsigned)((size + PG - 1) / PG);

		memset(M.data + size, 0, UBYTES - size);
		memset(M.purged + size, 0, UBYTES - size);
		for (unsigned pg = keep; pg < NP; pg++) {
			int id = M.unit_of[pg];

			M.present[pg] = false;
			if (id && !unbounded(id)) {
				M.unit_of[pg] = 0;
				drop_unit_if_gone(id);
			}
		}
	}
	M.size = size;
}

static void op_punch(const uint8_t *p)
{
	uint64_t off, len;
	int ret;

	pick_io(p, &off, &len, UBYTES);
	note("punch %" PRIu64 " +%" PRIu64 "\n", off, len);
	ret = fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
	if (ret)
		fail("punch returned %d", ret);
	memset(M.data + off, 0, len);
	memset(M.purged + off, 0, len);
	for (unsigned pg = 0; pg < NP; pg++)
		if ((uint64_t)pg * PG >= off && (uint64_t)(pg + 1) * PG <= off + len)
			M.present[pg] = false;
}

static void op_allocate(const uint8_t *p)
{
	uint64_t off, len;
	int mode = p[6] & 1 ? FALLOC_FL_KEEP_SIZE : 0, ret;

	pick_io(p, &off, &len, UBYTES);
	note("fallocate %s%" PRIu64 " +%" PRIu64 "\n", mode ? "keep_size " : "", off, len);
	ret = fs_fallocate(&fs, f, mode, off, len);
	if (ret)
		fail("fallocate returned %d", ret);
	for (unsigned pg = (unsigned)(off / PG); pg <= (off + len - 1) / PG; pg++)
		model_fill_page(pg);
	if (!mode && off + len > M.size)
		M.size = off + len;
}

static void op_purge_file(const uint8_t *p)
{
	int ret;

	note("purge the file\n");
	ret = vxattr_setxattr(&fs, f, "user.volatile.purge", "all", 3 + (p[0] & 1), 0, &root_cred);
	if (ret)
		fail("purge of the file returned %d", ret);
	for (int id = 1; id < MAXU; id++)
		if (M.u[id].used)
			model_purge_unit(id);
}

static void op_purge_root(const uint8_t *p)
{
	char txt[64];
	int n, ret;

	if (p[0] & 1) {
		n = snprintf(txt, sizeof(txt), "all");
	} else {
		uint64_t size = (p[1] | (uint64_t)p[2] << 8 | (uint64_t)p[3] << 16) % (70 * PG);

		if (p[4] & 1)
			size = size / PG * PG;
		n = put_size(txt, sizeof(txt), size, p[5]);
	}
	note("purge the root \"%s\"\n", txt);
	ret = vxattr_setxattr(&fs, fs.root, "user.volatile.purge", txt, (size_t)n, 0, &root_cred);
	if (ret)
		fail("purge of the root returned %d", ret);
	if (p[0] & 1) {
		for (int id = 1; id < MAXU; id++)
			if (M.u[id].used)
				model_purge_unit(id);
	} else {
		uint64_t want = 0, freed = 0;

		opts_parse_size(txt, &want);
		/* whole units in purge order, only those holding memory, until enough */
		while (freed * PG < want) {
			int best = 0, besti = 0;

			for (int i = 0; i < M.norder; i++) {
				int id = M.order[i];
				unsigned key, bkey;

				if (!present_in(id))
					continue;
				key = M.u[id].prio * 2 + (M.u[id].age ? 0 : 1);
				bkey = best ? M.u[best].prio * 2 + (M.u[best].age ? 0 : 1) : ~0u;
				if (key < bkey || (key == bkey && i < besti)) {
					best = id;
					besti = i;
				}
			}
			if (!best)
				break;
			freed += model_purge_unit(best);
		}
	}
}

/* What evict_probe() asked to drop from the kernel's cache. */
static struct {
	uint64_t off, len;
} probed[MAXU];
static int nprobed;

static uint64_t record_probe(void *ctx, struct inode *n, uint64_t off, uint64_t len)
{
	(void)ctx;
	if (n != f)
		fail("the probe names another inode");
	if (nprobed == MAXU)
		fail("the probe dropped more than %d ranges", MAXU);
	probed[nprobed].off = off;
	probed[nprobed].len = len;
	nprobed++;
	return 0;
}

/*
 * The recency probe (units.h, evict_probe): among the first eighth of all
 * units (at least one) in purge order, counting only the listed ones, those
 * the kernel may cache have their cached pages dropped, in that order; the
 * order itself does not change (a probe is no use of a unit).
 */
static void op_probe(const uint8_t *p)
{
	int want[MAXU], nwant = 0, nunits = 0;
	unsigned window;

	(void)p;
	note("probe\n");
	for (int id = 1; id < MAXU; id++)
		nunits += M.u[id].used;
	window = nunits / LRU_PROBE_SHARE ? (unsigned)nunits / LRU_PROBE_SHARE : 1;
	for (unsigned li = 0; li < LRU_LISTS && window; li++) {
		for (int i = 0; i < M.norder && window; i++) {
			int id = M.order[i];

			if (M.u[id].prio * 2 + (M.u[id].age ? 0 : 1) != li || !present_in(id))
				continue;
			window--;
			if (M.u[id].kcached && nwant < EVICT_PROBE_MAX) {
				M.u[id].kcached = false;
				want[nwant++] = id;
			}
		}
	}
	nprobed = 0;
	fs.hooks.purged = record_probe;
	evict_probe(&fs);
	fs.hooks.purged = NULL;
	if (nprobed != nwant)
		fail("the probe dropped %d ranges, the model %d", nprobed, nwant);
	for (int i = 0; i < nwant; i++) {
		unsigned first, last;
		uint64_t off, len;

		extent_of(want[i], &first, &last);
		off = (uint64_t)first * PG;
		len = unbounded(want[i]) ? 0 : (uint64_t)(last + 1 - first) * PG;
		if (probed[i].off != off || probed[i].len != len)
			fail("probe %d dropped %" PRIu64 " +%" PRIu64 ", the model's unit is %" PRIu64
			     " +%" PRIu64, i, probed[i].off, probed[i].len, off, len);
	}
}

static void op_read(const uint8_t *p)
{
	uint64_t off, len, want;
	ssize_t ret;

	pick_io(p, &off, &len, UBYTES + PG);
	if (p[6] & 1)
		len = UBYTES; /* to the end, whatever the size */
	note("read %" PRIu64 " +%" PRIu64 "\n", off, len);
	ret = fs_read(&fs, f, off, len, (char *)iobuf);
	want = off >= M.size ? 0 : M.size - off < len ? M.size - off : len;
	if (M.purged_eio && want && model_purged_in(off, off + want)) {
		if (ret != -EIO)
			fail("read of purged bytes returned %zd, not EIO", ret);
		return;
	}
	if (ret != (ssize_t)want)
		fail("read returned %zd, the model %" PRIu64, ret, want);
	if (want && memcmp(iobuf, M.data + off, want)) {
		uint64_t i = first_difference(iobuf, M.data + off, 0, want);

		fail("read: byte %" PRIu64 " is 0x%02x, the model 0x%02x%s", off + i, iobuf[i],
		     M.data[off + i], M.purged[off + i] ? " (purged)" : "");
	}
	if (want)
		model_touch((unsigned)(off / PG), (unsigned)((off + want - 1) / PG + 1));
}

/* SEEK_DATA / SEEK_HOLE: data is the pages that hold memory, as on tmpfs. */
static void op_seek(const uint8_t *p)
{
	uint64_t off = (p[1] | (uint64_t)p[2] << 8 | (uint64_t)p[3] << 16) % (UBYTES + PG);
	int whence = p[4] & 1 ? SEEK_HOLE : SEEK_DATA;
	int64_t got = fs_lseek(&fs, f, off, whence), want;

	note("lseek %" PRIu64 " %s\n", off, whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE");
	if (off >= M.size) {
		want = -ENXIO;
	} else {
		uint64_t pg = off / PG;

		while (pg * PG < M.size && M.present[pg] == (whence == SEEK_HOLE))
			pg++;
		if (pg * PG >= M.size)
			want = whence == SEEK_DATA ? -ENXIO : (int64_t)M.size;
		else
			want = (int64_t)(pg * PG > off ? pg * PG : off);
	}
	if (got != want)
		fail("lseek(%" PRIu64 ", %s) returned %" PRId64 ", the model %" PRId64, off,
		     whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE", got, want);
}

static void op_forget_or_query(const uint8_t *p)
{
	if (p[0] % 3 == 2) {
		op_seek(p);
	} else if (p[0] % 3 == 1) {
		int ret;

		note("removexattr user.volatile.purged\n");
		ret = vxattr_removexattr(&fs, f, "user.volatile.purged");
		if (ret)
			fail("removexattr user.volatile.purged returned %d", ret);
		memset(M.purged, 0, sizeof(M.purged));
	} else {
		struct volatilefs_extent out[8];
		uint64_t off = (p[1] | (uint64_t)p[2] << 8 | (uint64_t)p[3] << 16) % (UBYTES + PG);
		uint64_t len = (p[4] | (uint64_t)p[5] << 8 | (uint64_t)(p[6] & 3) << 16) % UBYTES;
		uint64_t end = len ? off + len : UNB, count = 0, want = 0, b;
		size_t max = (p[6] >> 2) % 9;
		int ret;

		note("vol_purged %" PRIu64 " +%" PRIu64 " max %zu\n", off, len, max);
		ret = vol_purged(&fs, f, off, len, out, max, &count);
		if (ret)
			fail("vol_purged returned %d", ret);
		/* the model's extents, clipped to the window */
		if (end > UBYTES)
			end = UBYTES;
		b = off;
		while (b < end) {
			const uint8_t *one = memchr(M.purged + b, 1, end - b), *zero;
			uint64_t s, e;

			if (!one)
				break;
			s = (uint64_t)(one - M.purged);
			zero = memchr(one, 0, end - s);
			e = zero ? (uint64_t)(zero - M.purged) : end;
			b = e;
			if (want < max && (out[want].offset != s || out[want].length != e - s))
				fail("vol_purged extent %" PRIu64 " is %" PRIu64 ":%" PRIu64 ", the model %"
				     PRIu64 ":%" PRIu64, want, out[want].offset, out[want].length, s,
				     e - s);
			want++;
		}
		if (count != want)
			fail("vol_purged counts %" PRIu64 " extents, the model %" PRIu64, count, want);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	trace_live = getenv("FUZZ_VOLATILE_TRACE") != NULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_config cfg = { .memory_limit = 1ull << 44, .root_mode = 0755 };
	struct stat st;

	if (size < 1)
		return 0;
	memset(&M, 0, sizeof(M));
	trace_len = 0;
	trace[0] = '\0';
	M.write_unmark = data[0] & 1;
	M.purged_eio = data[0] & 2;
	if (fs_init(&fs, &cfg))
		fail("fs_init failed");
	evict_attach(&fs);
	fs.write_unmark = M.write_unmark;
	fs.purged_eio = M.purged_eio;
	if (fs_mknod(&fs, fs.root, "f", S_IFREG | 0600, 0, NULL, &root_cred, &f, &st))
		fail("fs_mknod failed");

	for (size_t i = 1; i < size; i += 8) {
		uint8_t p[7] = { 0 };

		memcpy(p, data + i + 1, i + 8 <= size ? 7 : size - i - 1);
		/* Opcode 12 alone is the probe: every other byte keeps the
		 * meaning it had before there was one (saved inputs stay valid). */
		switch (data[i] == 12 ? 12 : data[i] % 12) {
		case 0: case 1: op_mark(p); break;
		case 2: op_unmark(p); break;
		case 3: case 4: op_write(p); break;
		case 5: op_truncate(p); break;
		case 6: op_punch(p); break;
		case 7: op_allocate(p); break;
		case 8: op_purge_file(p); break;
		case 9: op_purge_root(p); break;
		case 10: op_read(p); break;
		case 12: op_probe(p); break;
		default: op_forget_or_query(p); break;
		}
		check_all();
	}

	/* The whole file through fs_read at the end (zeros where purged). */
	if (!M.purged_eio || !model_purged_in(0, M.size)) {
		ssize_t ret = fs_read(&fs, f, 0, UBYTES + PG, (char *)iobuf);

		note("final read\n");
		if (ret != (ssize_t)M.size || memcmp(iobuf, M.data, M.size))
			fail("the final read differs (returned %zd, size %" PRIu64 ")", ret, M.size);
	}
	/* The same values through getxattr, as the shell gets them: size probe, ERANGE, value. */
	{
		static const char *const names[] = { "user.volatile.ranges", "user.volatile.purged" };

		for (int i = 0; i < 2; i++) {
			struct strbuf want;
			long len;

			strbuf_init(&want);
			if (i == 0)
				model_ranges_text(&want);
			else
				model_purged_text(&want);
			len = vxattr_getxattr(&fs, f, names[i], NULL, 0);
			if (len != (long)want.len)
				fail("getxattr %s reports %ld bytes, the model %zu", names[i], len, want.len);
			if (want.len && vxattr_getxattr(&fs, f, names[i], iobuf, want.len - 1) != -ERANGE)
				fail("getxattr %s into a buffer too small is not ERANGE", names[i]);
			len = vxattr_getxattr(&fs, f, names[i], iobuf, sizeof(iobuf));
			if (len != (long)want.len || (want.len && memcmp(iobuf, want.buf, want.len)))
				fail("getxattr %s returns another value than the model's", names[i]);
			strbuf_free(&want);
		}
	}
	fs_destroy(&fs);
	return 0;
}
