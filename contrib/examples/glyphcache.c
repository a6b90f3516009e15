/*
 * glyphcache - a compositor-style glyph cache whose atlas lives on volatilefs.
 *
 *   glyphcache --atlas /cache/glyphs.atlas --text FILE [--size PX] [--passes N]
 *
 * Renders FILE line by line with FreeType into an 8-bit grey image, taking
 * every glyph from an atlas file on a volatilefs mount, and prints what the
 * cache did (hits, misses, regenerations, purges seen) and a checksum of the
 * rendered image.  The checksum depends only on the text, the font and the
 * size: however much of the atlas the daemon purges meanwhile, the image is
 * the same.  That is the whole point, and what tests/mount/glyphcache.sh
 * checks.
 *
 * This file is meant to be read as a tutorial on volatilefs(3).
 *
 * 1. The atlas
 *
 * A compositor keeps rasterised glyphs in an atlas: a big buffer of
 * fixed-size cells that it fills once and reads every frame.  Glyphs are
 * cheap to regenerate (FreeType rasterises one in microseconds) but the atlas
 * is large, so it is the kind of memory the system would like back under
 * pressure.  Here the atlas is a file on volatilefs (default 32 MiB), cut
 * into page-aligned slots of 4-64 KiB (--slot-size, by default a cell of
 * 2 em by 2 em at --size).
 * Each slot holds one glyph: a 32-byte header (magic, code point, metrics)
 * and the bitmap, rows packed.  The program maps the file MAP_SHARED,
 * PROT_READ, and composes text by reading glyphs straight from the mapping,
 * as a GPU would sample a texture.
 *
 * In ordinary memory it keeps the slot table (what each slot holds and in
 * which state) and the glyph table (code point -> slot).  The atlas itself
 * holds no bookkeeping that a purge could take away.
 *
 * 2. Volatile idle slots
 *
 * A slot is in one of four states (enum slot_state):
 *
 *   FREE    never used: not volatile, holds nothing;
 *   PINNED  in use by the current line: not volatile, so never purged, and
 *           its bytes are valid -- composition reads it without any lock;
 *   IDLE    not needed by the current line: marked volatile, as its own unit
 *           (a range of exactly the slot in a mark call), so the daemon can purge
 *           it, and only it, whole;
 *   LOST    was IDLE, and the poll thread (section 3) learnt that it was
 *           purged: the entry is dropped -- the slot still belongs to the
 *           glyph, so that regenerating it is a refill in place, but its
 *           bytes are not to be trusted.  It is still marked volatile (a
 *           purge leaves the unit volatile), like an IDLE slot.
 *
 * Each line of text is one "frame".  Before composing it, the renderer
 *   a. collects the distinct glyphs the line needs;
 *   b. marks volatile every slot the previous line had pinned and this line
 *      does not need (priority from how often the glyph is used: common
 *      glyphs 5, ordinary ones 3, rare ones 1 -- the daemon purges lower
 *      priorities first, and the least recently used first within one);
 *   c. unmarks the IDLE and LOST slots it needs.  Slots are unmarked in runs
 *      of consecutive slots; then volatilefs_purged() over the span of the
 *      runs tells exactly which byte ranges were lost, and the glyphs whose
 *      slots intersect them -- and only those -- are rasterised again.  LOST
 *      slots are rasterised again too.  Once unmarked, a slot can no longer
 *      be purged, so what is checked is what stays;
 *   d. rasterises glyphs that are not in the atlas (a miss) into a FREE
 *      slot or, when the atlas is full, into the least recently used IDLE or
 *      LOST slot (an eviction).
 * Batching: every FUSE call is a round trip to the daemon, and one made
 * between two stretches of work costs a context switch each way, whatever
 * it does.  So a line makes as few as it can: step b is one
 * setxattr("user.volatile.mark") per priority present (a value lists many
 * ranges, "OFFSET:LENGTH ... priority=N", each range its own unit; the
 * priority applies to the whole call), step c one
 * setxattr("user.volatile.unmark") naming every run and one
 * volatilefs_purged() listing (more only when over PURGED_BATCH extents
 * are purged in the span).  The unmark through the xattr does not say
 * whether anything was purged, hence the listing; a one-range
 * volatilefs_unmark() would say it, but one call per run costs a round
 * trip per run (the xattrs: volatilefs(8)).
 *
 * Every write into a slot punches a hole over the slot (fallocate
 * PUNCH_HOLE), then covers the whole slot with one pwrite(2).  The punch
 * clears the slot's bytes from the file's purged set whatever path the
 * write then takes: a write(2) the daemon serves would clear exactly its
 * bytes itself, but on the passthrough path an open made while its file
 * held no mark (this one: open, write, then mark) is written by the
 * kernel, unseen, and so is any store through a mapping; a byte that
 * reads as zero after a purge stays reported until something says it
 * was written (volatilefs(8), "No loss
 * without a report").  (Stores through a writable mapping would work after
 * the punch too, but with the mount option purged_read=eio the store
 * fault on a purged page would read it first and raise SIGBUS.)  The
 * unmark always comes before the write: a slot written while still
 * volatile could be purged right after.
 *
 * 3. The poll thread
 *
 * volatilefs reports POLLPRI on a file while its purged set is not empty, and
 * a purge wakes the pollers at once.  A separate thread sleeps in poll() on
 * the atlas and, as soon as something is purged, takes the slot-table lock,
 * lists the purged extents with volatilefs_purged(), turns every IDLE slot
 * they intersect into LOST (dropping the entry), and then clears exactly
 * those extents from the purged set, so that POLLPRI goes down again.
 *
 * How to clear them is the subtle part.  removexattr("user.volatile.purged")
 * forgets the whole set, including bytes purged after we listed it and
 * before we removed it: those slots would stay IDLE in our table, their
 * unmark would then say purged=0, and the renderer would compose zeros.
 * Instead the thread punches a hole (fallocate PUNCH_HOLE) over exactly the
 * extents it listed: punched bytes leave the purged set, bytes purged in the
 * meantime stay in it and keep POLLPRI up, so the next poll() returns at
 * once and handles them.  Punching needs no memory (writing zeros would,
 * under memory pressure of all times).
 *
 * 4. Locking
 *
 * One mutex guards the slot table (states and the counters both threads
 * touch).  The renderer holds it while it releases and acquires the slots of
 * a line (steps b-d, including the volatilefs calls and the rasterising),
 * the poll thread while it handles a wake-up.  So the poll thread never sees a slot
 * half-way through an unmark and its regeneration, and when it lists the
 * purged set, every byte in it belongs to an IDLE or LOST slot: PINNED slots
 * are not volatile, and the renderer rewrote any purged bytes of the slots it
 * pinned before it let go of the lock.  The renderer composes without the
 * lock: it reads only PINNED slots, which nobody else changes.  The glyph
 * table and FreeType are the renderer's alone.
 *
 * A last safety net: every slot header carries a magic number and its code
 * point, checked each time the glyph is composed, so a purge that went
 * unnoticed shows up as an error instead of a wrong image.
 *
 * Output: key=value lines on stdout.  A lookup is one distinct glyph of one
 * line; it is a hit (served from the atlas as it was), a miss (first
 * rasterisation), a refill (rasterised again after its slot was evicted for
 * room) or a regeneration (rasterised again after a purge; split by who
 * found out first: the poll thread or the unmark).  purges_seen counts the
 * poll thread's wake-ups that found purged bytes, slots_dropped the slots it
 * turned LOST.  checksum is the FNV-1a 64 of the image, folded a page of
 * --page-lines lines at a time.  Exit status 0, 1 on any error (with a
 * message on stderr), 2 for bad usage.
 * The atlas file is created when missing, and then removed at the end
 * (unless --keep); an existing file is reused only when it is a regular
 * file on volatilefs.  Off volatilefs the volatilefs calls fail with ENOTTY:
 * the program says so and exits 1 without touching the file.
 *
 * Build: part of the volatilefs meson build when freetype2 is found
 * (Debian: libfreetype-dev; font: fonts-dejavu-core), or by hand:
 *   cc -std=gnu11 -O2 -pthread glyphcache.c $(pkg-config --cflags --libs freetype2 volatilefs)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <ft2build.h>
#include FT_FREETYPE_H

#include "volatilefs.h"

#define PAGE_BYTES 4096u
#define MIN_SLOT (4u * 1024)
#define MAX_SLOT (64u * 1024)
#define SLOT_MAGIC 0x31564347u /* "GCV1" */
#define DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#define DEFAULT_ATLAS (32u << 20)
#define PURGED_BATCH 64
/* One user.volatile.mark/unmark value: under the 64 KiB xattr limit. */
#define VALUE_MAX 60000u

static const char *prog = "glyphcache";

/* ------------------------------------------------------------------ data */

enum slot_state { SLOT_FREE, SLOT_PINNED, SLOT_IDLE, SLOT_LOST };

static const char *const state_names[] = { "free", "pinned", "idle", "lost" };

/* At the start of every slot in the atlas; the bitmap follows, rows packed. */
struct slot_header {
	uint32_t magic;     /* SLOT_MAGIC */
	uint32_t codepoint;
	uint16_t width;     /* bitmap columns */
	uint16_t rows;      /* bitmap rows */
	int16_t left;       /* bitmap origin: pixels right of the pen */
	int16_t top;        /* bitmap origin: pixels above the baseline */
	int16_t advance;    /* pen advance, pixels */
	uint16_t reserved[7];
};
_Static_assert(sizeof(struct slot_header) == 32, "slot header is 32 bytes");

struct slot {
	int32_t glyph;      /* index into cache.glyphs; -1 while FREE */
	uint8_t state;      /* enum slot_state */
	uint64_t last_used; /* line number of the last line that pinned it */
};

struct glyph {
	uint32_t cp;
	int32_t slot;       /* -1: not in the atlas (never was, or evicted) */
	uint64_t line;      /* last line that needed it: dedup within a line */
	uint32_t uses;      /* lines that needed it */
	bool seen;          /* rasterised at least once */
};

struct stats {
	uint64_t lines, lookups, hits, misses, refills, evictions;
	uint64_t regen_unmark;  /* purged, found by the renderer's unmark */
	uint64_t regen_poll;    /* purged, dropped by the poll thread first */
	uint64_t lost_bytes;    /* purged bytes the renderer listed */
	uint64_t marks, unmarks, clipped; /* slots marked, runs unmarked */
	uint64_t calls;         /* the renderer's volatilefs round trips */
	uint64_t purge_events;  /* poll wake-ups that found purged extents */
	uint64_t slots_dropped; /* IDLE slots the poll thread turned LOST */
	uint64_t bytes_dropped; /* purged bytes the poll thread cleared */
};

struct cache {
	const char *path;
	int fd;
	const uint8_t *map;        /* the atlas, MAP_SHARED, PROT_READ */
	size_t atlas_size;
	uint32_t slot_size, nslots;

	/* Guarded by lock: slot states and the stats both threads touch. */
	pthread_mutex_t lock;
	struct slot *slots;
	struct stats st;

	/* The renderer's alone. */
	struct glyph *glyphs;
	size_t nglyphs, glyphs_cap;
	int32_t *hash;             /* open addressing: glyph index or -1 */
	size_t hash_cap;           /* a power of two */
	uint8_t *stage;            /* one slot, built before its pwrite */
	int32_t *pinned;           /* slots pinned for the previous line */
	size_t npinned;
	int32_t *runs, *fill;      /* per-line scratch: slots to unmark, glyphs to fill */
	bool *redo;                /* per-line scratch: slots to rasterise again */
	char *value;               /* per-call scratch: a range list, VALUE_MAX + 64 */
	uint64_t line;             /* current line number, from 1 */
	FT_Library ft;
	FT_Face face;

	/* The poll thread. */
	pthread_t poller;
	bool poller_running;
	int stop_fd;               /* eventfd: written to stop it */
	atomic_int poll_failed;
};

/* --------------------------------------------------------------- helpers */

static void warn_errno(const char *what, const char *detail)
{
	fprintf(stderr, "%s: %s%s%s: %s\n", prog, what, detail ? " " : "", detail ? detail : "",
		strerror(errno));
}

static void *xcalloc(size_t n, size_t size, const char *what)
{
	void *p = calloc(n, size);

	if (!p)
		fprintf(stderr, "%s: out of memory allocating %s (%zu x %zu bytes)\n", prog, what,
			n, size);
	return p;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A size: decimal or 0x hex, optional K/M/G (binary). -1 when malformed. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	if (*s == '-' || *s == '\0')
		return -1;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (*s == '-' || *s == '\0')
		return -1;
	v = strtoul(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* FNV-1a, 64 bits. */
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

/* ------------------------------------------------------------------ text */

struct text {
	uint32_t *cps;   /* all lines' code points, back to back */
	size_t *starts;  /* line i is cps[starts[i] .. starts[i + 1]) */
	size_t nlines;
};

/*
 * Decode one UTF-8 sequence at p (n bytes left); store the code point and
 * return its length.  Malformed input gives U+FFFD and consumes one byte.
 */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	uint32_t c = p[0], min;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		*cp = 0xfffd;
		return 1;
	}
	if (len > n)
		goto bad;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			goto bad;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		goto bad;
	*cp = c;
	return len;
bad:
	*cp = 0xfffd;
	return 1;
}

static void text_free(struct text *t)
{
	free(t->cps);
	free(t->starts);
	memset(t, 0, sizeof(*t));
}

/* Read and decode FILE: tabs become four spaces, other controls vanish. */
static int text_load(struct text *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, ncp = 0, line = 0;
	int ret = -1;

	memset(t, 0, sizeof(*t));
	if (!f) {
		warn_errno("cannot open text", path);
		return -1;
	}
	for (;;) {
		size_t got;

		if (cap - len < 65536) {
			unsigned char *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				fprintf(stderr, "%s: out of memory reading %s\n", prog, path);
				goto out;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f)) {
				warn_errno("cannot read text", path);
				goto out;
			}
			break;
		}
	}
	/* At most 4 code points per byte (a tab), and one line per byte + 1. */
	t->cps = xcalloc(len * 4 + 1, sizeof(*t->cps), "the text's code points");
	t->starts = xcalloc(len + 2, sizeof(*t->starts), "the text's line table");
	if (!t->cps || !t->starts)
		goto out;
	t->starts[0] = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp;

		i += utf8_decode(buf + i, len - i, &cp);
		if (cp == '\n') {
			t->starts[++line] = ncp;
		} else if (cp == '\t') {
			for (int k = 0; k < 4; k++)
				t->cps[ncp++] = ' ';
		} else if (cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0)) {
			t->cps[ncp++] = cp;
		}
	}
	if (len == 0 || buf[len - 1] != '\n')
		t->starts[++line] = ncp; /* the last line, unterminated */
	t->nlines = line;
	if (t->nlines == 0) {
		fprintf(stderr, "%s: %s: the text is empty\n", prog, path);
		goto out;
	}
	ret = 0;
out:
	if (ret)
		text_free(t);
	free(buf);
	fclose(f);
	return ret;
}

/* ----------------------------------------------------------- glyph table */

static size_t hash_of(uint32_t cp, size_t cap)
{
	return (size_t)((cp * 0x9e3779b1u) & (cap - 1));
}

static int hash_grow(struct cache *c)
{
	size_t cap = c->hash_cap ? c->hash_cap * 2 : 1024;
	int32_t *h = xcalloc(cap, sizeof(*h), "the glyph hash");

	if (!h)
		return -1;
	for (size_t i = 0; i < cap; i++)
		h[i] = -1;
	for (size_t g = 0; g < c->nglyphs; g++) {
		size_t i = hash_of(c->glyphs[g].cp, cap);

		while (h[i] >= 0)
			i = (i + 1) & (cap - 1);
		h[i] = (int32_t)g;
	}
	free(c->hash);
	c->hash = h;
	c->hash_cap = cap;
	return 0;
}

/* The index of cp's glyph entry, created on first sight; -1 out of memory. */
static int32_t glyph_get(struct cache *c, uint32_t cp)
{
	size_t i;

	if (c->hash_cap == 0 && hash_grow(c) < 0)
		return -1;
	for (i = hash_of(cp, c->hash_cap); c->hash[i] >= 0; i = (i + 1) & (c->hash_cap - 1))
		if (c->glyphs[c->hash[i]].cp == cp)
			return c->hash[i];
	if (c->nglyphs == c->glyphs_cap) {
		size_t cap = c->glyphs_cap ? c->glyphs_cap * 2 : 256;
		struct glyph *g = reallocarray(c->glyphs, cap, sizeof(*g));

		if (!g) {
			fprintf(stderr, "%s: out of memory growing the glyph table to %zu\n", prog,
				cap);
			return -1;
		}
		c->glyphs = g;
		c->glyphs_cap = cap;
	}
	if ((c->nglyphs + 1) * 2 > c->hash_cap) {
		if (hash_grow(c) < 0)
			return -1;
		/* Find the free bucket again in the new table. */
		for (i = hash_of(cp, c->hash_cap); c->hash[i] >= 0;
		     i = (i + 1) & (c->hash_cap - 1))
			;
	}
	c->glyphs[c->nglyphs] = (struct glyph){ .cp = cp, .slot = -1 };
	c->hash[i] = (int32_t)c->nglyphs;
	return (int32_t)c->nglyphs++;
}

/* ------------------------------------------------------------- the atlas */

static uint64_t slot_off(const struct cache *c, int32_t s)
{
	return (uint64_t)s * c->slot_size;
}

static const struct slot_header *slot_header(const struct cache *c, int32_t s)
{
	return (const struct slot_header *)(c->map + slot_off(c, s));
}

/*
 * Rasterise glyph gi into slot s: build the whole slot in the staging
 * buffer and write it with pwrite.  The slot must not be volatile (unmark
 * first).  Called with the lock held.
 */
static int rasterise(struct cache *c, int32_t gi, int32_t s)
{
	struct glyph *g = &c->glyphs[gi];
	struct slot_header *h = (struct slot_header *)c->stage;
	uint8_t *bits = c->stage + sizeof(*h);
	size_t cap = c->slot_size - sizeof(*h);
	FT_GlyphSlot gs;
	FT_Bitmap *bm;
	FT_Error err;
	unsigned w, rows;
	size_t done = 0;

	err = FT_Load_Char(c->face, g->cp, FT_LOAD_RENDER);
	if (err) {
		fprintf(stderr, "%s: FreeType cannot render U+%04" PRIX32 ": error %d\n", prog,
			g->cp, err);
		return -1;
	}
	gs = c->face->glyph;
	bm = &gs->bitmap;
	if (bm->rows && bm->width && bm->pixel_mode != FT_PIXEL_MODE_GRAY) {
		fprintf(stderr, "%s: FreeType rendered U+%04" PRIX32
			" in pixel mode %u, want grey\n", prog, g->cp, (unsigned)bm->pixel_mode);
		return -1;
	}
	w = bm->width;
	rows = bm->rows;
	if (w > UINT16_MAX || w > cap)
		w = (unsigned)(cap < UINT16_MAX ? cap : UINT16_MAX);
	if (w && (size_t)w * rows > cap)
		rows = (unsigned)(cap / w);
	if (w != bm->width || rows != bm->rows)
		c->st.clipped++;

	memset(c->stage, 0, c->slot_size);
	*h = (struct slot_header){
		.magic = SLOT_MAGIC,
		.codepoint = g->cp,
		.width = (uint16_t)w,
		.rows = (uint16_t)rows,
		.left = (int16_t)(gs->bitmap_left < INT16_MIN ? INT16_MIN
				  : gs->bitmap_left > INT16_MAX ? INT16_MAX : gs->bitmap_left),
		.top = (int16_t)(gs->bitmap_top < INT16_MIN ? INT16_MIN
				 : gs->bitmap_top > INT16_MAX ? INT16_MAX : gs->bitmap_top),
		.advance = (int16_t)((gs->advance.x + 32) >> 6),
	};
	for (unsigned y = 0; y < rows; y++) {
		/* A negative pitch means the rows are stored bottom-up. */
		size_t apitch = (size_t)(bm->pitch < 0 ? -bm->pitch : bm->pitch);
		size_t row = bm->pitch < 0 ? bm->rows - 1 - y : y;

		memcpy(bits + (size_t)y * w, bm->buffer + row * apitch, w);
	}

	/* First a hole over the slot: punched bytes leave the purged set,
	 * whoever writes them next (see "Every write into a slot" above). */
	if (fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)slot_off(c, s),
		      (off_t)c->slot_size) != 0) {
		fprintf(stderr, "%s: %s: clearing slot %" PRId32 " at offset %" PRIu64 ": %s\n",
			prog, c->path, s, slot_off(c, s), strerror(errno));
		return -1;
	}
	/* The whole slot, padding included: every purged byte of it is rewritten. */
	while (done < c->slot_size) {
		ssize_t n = pwrite(c->fd, c->stage + done, c->slot_size - done,
				   (off_t)(slot_off(c, s) + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: %s: writing slot %" PRId32 " (U+%04" PRIX32
				") at offset %" PRIu64 ": %s\n", prog, c->path, s, g->cp,
				slot_off(c, s) + done, strerror(errno));
			return -1;
		}
		done += (size_t)n;
	}
	g->seen = true;
	return 0;
}

static unsigned mark_priority(const struct cache *c, const struct glyph *g)
{
	/* Glyphs used in a quarter of the lines so far: keep them longest. */
	if (g->uses >= 16 && (uint64_t)g->uses * 4 >= c->line)
		return 5;
	if (g->uses >= 4)
		return 3;
	return 1;
}

/* setxattr(name) with the range list in c->value (len bytes).  Lock held. */
static int set_ranges(struct cache *c, const char *name, size_t len)
{
	if (fsetxattr(c->fd, name, c->value, len, 0) < 0) {
		fprintf(stderr, "%s: %s: setxattr %s \"%.60s%s\": %s\n", prog, c->path, name,
			c->value, len > 60 ? "..." : "", strerror(errno));
		return -1;
	}
	c->st.calls++;
	return 0;
}

/*
 * Step b: PINNED -> IDLE for the slots s[0..n): each marked volatile as a
 * unit of its own, one setxattr per priority present.  Lock held.
 */
static int release_slots(struct cache *c, const int32_t *s, size_t n)
{
	static const unsigned prios[] = { 5, 3, 1 };

	for (size_t p = 0; p < sizeof(prios) / sizeof(prios[0]); p++) {
		size_t len = 0, listed = 0;

		for (size_t i = 0; i < n; i++) {
			if (mark_priority(c, &c->glyphs[c->slots[s[i]].glyph]) != prios[p])
				continue;
			if (len == 0)
				len = (size_t)snprintf(c->value, VALUE_MAX, "priority=%u", prios[p]);
			len += (size_t)snprintf(c->value + len, VALUE_MAX + 64 - len,
						" %" PRIu64 ":%" PRIu32, slot_off(c, s[i]),
						c->slot_size);
			listed++;
			if (len > VALUE_MAX) {
				if (set_ranges(c, "user.volatile.mark", len) < 0)
					return -1;
				len = 0;
			}
		}
		if (len && set_ranges(c, "user.volatile.mark", len) < 0)
			return -1;
		c->st.marks += listed;
	}
	for (size_t i = 0; i < n; i++)
		c->slots[s[i]].state = SLOT_IDLE;
	return 0;
}

static int unmark(struct cache *c, int32_t first, int32_t n, int *purged)
{
	if (volatilefs_unmark(c->fd, slot_off(c, first), (uint64_t)n * c->slot_size, NULL,
			      purged) < 0) {
		fprintf(stderr, "%s: %s: volatilefs_unmark of slots %" PRId32 "-%" PRId32
			" (%" PRIu64 ":%" PRIu64 "): %s\n", prog, c->path, first, first + n - 1,
			slot_off(c, first), (uint64_t)n * c->slot_size, strerror(errno));
		return -1;
	}
	c->st.unmarks++;
	c->st.calls++;
	return 0;
}

/*
 * A slot for a glyph that is not in the atlas: a FREE one, else the least
 * recently used LOST one (its data is gone anyway), else the least recently
 * used IDLE one.  It is unmarked before it is returned.  Lock held.
 */
static int32_t take_slot(struct cache *c)
{
	int32_t best = -1;

	for (uint32_t s = 0; s < c->nslots; s++) {
		const struct slot *sl = &c->slots[s];

		if (sl->state == SLOT_FREE)
			return (int32_t)s;
		if (sl->state == SLOT_PINNED)
			continue;
		if (best < 0 ||
		    (sl->state == SLOT_LOST && c->slots[best].state == SLOT_IDLE) ||
		    (sl->state == c->slots[best].state && sl->last_used < c->slots[best].last_used))
			best = (int32_t)s;
	}
	if (best < 0) {
		fprintf(stderr, "%s: the atlas is too small: line %" PRIu64 " needs more than its "
			"%" PRIu32 " slots (raise --atlas-size or lower --size)\n", prog, c->line,
			c->nslots);
		return -1;
	}
	if (unmark(c, best, 1, NULL) < 0)
		return -1;
	c->glyphs[c->slots[best].glyph].slot = -1;
	c->slots[best].glyph = -1;
	c->slots[best].state = SLOT_FREE;
	c->st.evictions++;
	return best;
}

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/*
 * Step c for the slots s[0..n), sorted, all IDLE or LOST and needed by this
 * line: one setxattr unmarks them, run by run; then the purged extents in
 * their span are listed, and the glyphs whose slots they touch are
 * rasterised again.  LOST slots are rasterised again whatever the listing
 * says.  Extents over slots that this line does not need are left to the
 * poll thread.  Lock held.
 */
static int unmark_slots(struct cache *c, const int32_t *s, size_t n)
{
	uint64_t off = slot_off(c, s[0]), stop = slot_off(c, s[n - 1] + 1);
	bool *redo = c->redo;
	size_t len = 0, k = 0;

	memset(redo, 0, n * sizeof(*redo));
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && s[j] == s[j - 1] + 1)
			j++;
		len += (size_t)snprintf(c->value + len, VALUE_MAX + 64 - len, "%" PRIu64 ":%" PRIu64 " ",
					slot_off(c, s[i]), (uint64_t)(j - i) * c->slot_size);
		c->st.unmarks++;
		if (len > VALUE_MAX || j == n) {
			if (set_ranges(c, "user.volatile.unmark", len) < 0)
				return -1;
			len = 0;
		}
		i = j;
	}
	/* Page through: each batch starts where the last extent ended. */
	for (;;) {
		struct volatilefs_extent ext[PURGED_BATCH];
		size_t count, got;

		if (volatilefs_purged(c->fd, off, stop - off, ext, PURGED_BATCH, &count) < 0) {
			if (errno == EAGAIN)
				continue;
			fprintf(stderr, "%s: %s: volatilefs_purged(%" PRIu64 ", %" PRIu64 "): %s\n",
				prog, c->path, off, stop - off, strerror(errno));
			return -1;
		}
		c->st.calls++;
		got = count < PURGED_BATCH ? count : PURGED_BATCH;
		/* Extents are sorted and disjoint, and so are the slots. */
		for (size_t i = 0; i < got; i++) {
			uint64_t a = ext[i].offset, b = a + ext[i].length;

			while (k < n && slot_off(c, s[k] + 1) <= a)
				k++;
			for (size_t m = k; m < n && slot_off(c, s[m]) < b; m++) {
				uint64_t lo = slot_off(c, s[m]), hi = slot_off(c, s[m] + 1);

				redo[m] = true;
				c->st.lost_bytes += (b < hi ? b : hi) - (a > lo ? a : lo);
			}
		}
		if (count <= PURGED_BATCH || got == 0)
			break;
		off = ext[got - 1].offset + ext[got - 1].length;
	}
	for (size_t m = 0; m < n; m++) {
		struct slot *sl = &c->slots[s[m]];

		if (sl->state == SLOT_LOST || redo[m]) {
			if (rasterise(c, sl->glyph, s[m]) < 0)
				return -1;
			if (sl->state == SLOT_LOST)
				c->st.regen_poll++;
			else
				c->st.regen_unmark++;
		} else {
			c->st.hits++;
		}
		sl->state = SLOT_PINNED;
		sl->last_used = c->line;
	}
	return 0;
}

/*
 * Steps b-d for one line: release what the previous line pinned and this
 * one does not need, then pin the glyphs need[0..n).  Takes the lock.
 */
static int prepare_line(struct cache *c, const int32_t *need, size_t n)
{
	int32_t *runs = c->runs, *fill = c->fill;
	size_t nruns = 0, nfill = 0, keep = 0, nidle = 0;
	int ret = -1;

	pthread_mutex_lock(&c->lock);

	/* b. release (runs is free until step c: it holds the slots going idle) */
	for (size_t i = 0; i < c->npinned; i++) {
		int32_t s = c->pinned[i];

		if (c->glyphs[c->slots[s].glyph].line != c->line)
			runs[nidle++] = s; /* else needed again: stays pinned */
	}
	if (release_slots(c, runs, nidle) < 0)
		goto out;

	/* c. classify: pinned already, to unmark, or not in the atlas */
	for (size_t i = 0; i < n; i++) {
		int32_t s = c->glyphs[need[i]].slot;

		c->st.lookups++;
		if (s < 0) {
			fill[nfill++] = need[i];
		} else if (c->slots[s].state == SLOT_PINNED) {
			c->st.hits++;
			c->slots[s].last_used = c->line;
		} else {
			runs[nruns++] = s;
		}
	}
	qsort(runs, nruns, sizeof(*runs), cmp_int32);
	if (nruns && unmark_slots(c, runs, nruns) < 0)
		goto out;

	/* d. misses */
	for (size_t i = 0; i < nfill; i++) {
		struct glyph *g = &c->glyphs[fill[i]];
		int32_t s = take_slot(c);

		if (s < 0)
			goto out;
		c->slots[s].glyph = fill[i];
		g->slot = s;
		if (g->seen)
			c->st.refills++;
		else
			c->st.misses++;
		if (rasterise(c, fill[i], s) < 0)
			goto out;
		c->slots[s].state = SLOT_PINNED;
		c->slots[s].last_used = c->line;
	}

	/* What this line pinned, for the next line's step b. */
	for (size_t i = 0; i < n; i++)
		c->pinned[keep++] = c->glyphs[need[i]].slot;
	c->npinned = keep;
	ret = 0;
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* At the end: every pinned slot goes idle, as a compositor going idle. */
static int release_all(struct cache *c)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = release_slots(c, c->pinned, c->npinned);
	c->npinned = 0;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ----------------------------------------------------------- poll thread */

/*
 * Handle one POLLPRI: drop the slots the purged set touches and punch out
 * exactly the listed extents (see section 3 above).  Lock held.
 */
static int drop_purged(struct cache *c)
{
	uint64_t off = 0;
	bool any = false;

	for (;;) {
		struct volatilefs_extent ext[PURGED_BATCH];
		size_t count, got;

		if (volatilefs_purged(c->fd, off, 0, ext, PURGED_BATCH, &count) < 0) {
			if (errno == EAGAIN)
				continue;
			fprintf(stderr, "%s: poll thread: %s: volatilefs_purged: %s\n", prog,
				c->path, strerror(errno));
			return -1;
		}
		got = count < PURGED_BATCH ? count : PURGED_BATCH;
		for (size_t i = 0; i < got; i++) {
			uint64_t a = ext[i].offset, b = a + ext[i].length;

			for (uint64_t s = a / c->slot_size; s * c->slot_size < b; s++) {
				struct slot *sl;

				if (s >= c->nslots || c->slots[s].state == SLOT_FREE ||
				    c->slots[s].state == SLOT_PINNED) {
					fprintf(stderr, "%s: poll thread: %s: purged extent "
						"%" PRIu64 ":%" PRIu64 " touches slot %" PRIu64
						", which is %s and cannot have been purged\n",
						prog, c->path, a, ext[i].length, s,
						s >= c->nslots ? "past the atlas"
						: state_names[c->slots[s].state]);
					return -1;
				}
				sl = &c->slots[s];
				if (sl->state == SLOT_IDLE) {
					sl->state = SLOT_LOST;
					c->st.slots_dropped++;
				}
			}
			if (fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)a, (off_t)ext[i].length) < 0) {
				fprintf(stderr, "%s: poll thread: %s: punching the purged extent %"
					PRIu64 ":%" PRIu64 ": %s\n", prog, c->path, a,
					ext[i].length, strerror(errno));
				return -1;
			}
			c->st.bytes_dropped += ext[i].length;
			any = true;
		}
		if (count <= PURGED_BATCH || got == 0)
			break;
		off = ext[got - 1].offset + ext[got - 1].length;
	}
	if (any)
		c->st.purge_events++;
	return 0;
}

static void *poll_main(void *arg)
{
	struct cache *c = arg;
	struct pollfd pfd[2] = {
		{ .fd = c->fd, .events = POLLPRI },
		{ .fd = c->stop_fd, .events = POLLIN },
	};

	for (;;) {
		int ret;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			warn_errno("poll thread: poll on", c->path);
			break;
		}
		if (pfd[1].revents)
			return NULL; /* asked to stop */
		if (pfd[0].revents & (POLLERR | POLLNVAL | POLLHUP)) {
			fprintf(stderr, "%s: poll thread: %s: poll reported %#x\n", prog, c->path,
				(unsigned)pfd[0].revents);
			break;
		}
		if (!(pfd[0].revents & POLLPRI))
			continue;
		pthread_mutex_lock(&c->lock);
		ret = drop_purged(c);
		pthread_mutex_unlock(&c->lock);
		if (ret < 0)
			break;
	}
	atomic_store(&c->poll_failed, 1);
	return NULL;
}

/* ------------------------------------------------------------- rendering */

struct image {
	uint8_t *px;
	unsigned width, height;     /* one page */
	unsigned line_height, ascent, page_lines, row; /* row: next line in the page */
	uint64_t hash, pages;
	const char *pgm;            /* write the first page here, if set */
};

static int write_pgm(const struct image *im)
{
	FILE *f = fopen(im->pgm, "wb");
	size_t n = (size_t)im->width * im->height;
	bool ok;

	if (!f) {
		warn_errno("cannot create", im->pgm);
		return -1;
	}
	ok = fprintf(f, "P5\n%u %u\n255\n", im->width, im->height) > 0 &&
	     fwrite(im->px, 1, n, f) == n;
	if (fclose(f) != 0 || !ok) {
		warn_errno("cannot write", im->pgm);
		return -1;
	}
	return 0;
}

/* Fold the current page into the checksum and start a blank one. */
static int flush_page(struct image *im)
{
	im->hash = fnv1a(im->hash, im->px, (size_t)im->width * im->height);
	if (im->pages++ == 0 && im->pgm && write_pgm(im) < 0)
		return -1;
	memset(im->px, 0, (size_t)im->width * im->height);
	im->row = 0;
	return 0;
}

/* Compose the line cps[0..n) from the atlas; all its glyphs are pinned. */
static int compose_line(struct cache *c, struct image *im, const uint32_t *cps, size_t n)
{
	int baseline = (int)(im->row * im->line_height + im->ascent), pen = 2;

	for (size_t i = 0; i < n && pen < (int)im->width; i++) {
		int32_t gi = glyph_get(c, cps[i]), s;
		const struct slot_header *h;
		const uint8_t *bits;

		if (gi < 0)
			return -1;
		s = c->glyphs[gi].slot;
		h = slot_header(c, s);
		if (h->magic != SLOT_MAGIC || h->codepoint != cps[i]) {
			fprintf(stderr, "%s: %s: slot %" PRId32 " should hold U+%04" PRIX32
				" but holds magic %#" PRIx32 " code point %#" PRIx32
				": a purge went unnoticed\n", prog, c->path, s, cps[i], h->magic,
				h->codepoint);
			return -1;
		}
		bits = (const uint8_t *)(h + 1);
		for (int y = 0; y < h->rows; y++) {
			int iy = baseline - h->top + y;

			if (iy < 0 || iy >= (int)im->height)
				continue;
			for (int x = 0; x < h->width; x++) {
				int ix = pen + h->left + x;
				uint8_t v = bits[(size_t)y * h->width + (size_t)x];
				uint8_t *d;

				if (ix < 0 || ix >= (int)im->width)
					continue;
				d = &im->px[(size_t)iy * im->width + (size_t)ix];
				if (v > *d)
					*d = v;
			}
		}
		pen += h->advance;
	}
	return 0;
}

static int render_line(struct cache *c, struct image *im, const uint32_t *cps, size_t n,
		       int32_t *need)
{
	size_t nneed = 0;

	c->line++;
	for (size_t i = 0; i < n; i++) {
		int32_t gi = glyph_get(c, cps[i]);

		if (gi < 0)
			return -1;
		if (c->glyphs[gi].line != c->line) {
			c->glyphs[gi].line = c->line;
			c->glyphs[gi].uses++;
			need[nneed++] = gi;
		}
	}
	if (prepare_line(c, need, nneed) < 0)
		return -1;
	if (compose_line(c, im, cps, n) < 0)
		return -1;
	c->st.lines++;
	if (++im->row == im->page_lines)
		return flush_page(im);
	return 0;
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s --atlas PATH --text FILE [OPTION...]\n"
		"Render FILE line by line from a glyph atlas kept in PATH, a file on a\n"
		"volatilefs mount whose idle slots are volatile, and print the cache's\n"
		"statistics and the checksum of the rendered image.\n"
		"\n"
		"  --atlas PATH        the atlas, a regular file on volatilefs: created (and\n"
		"                      then removed at the end, unless --keep), or emptied\n"
		"                      and reused when it exists\n"
		"  --text FILE         UTF-8 text to render\n"
		"  --size PX           pixel size of the font (default 32, 6..256)\n"
		"  --passes N          render the text N times (default 1)\n"
		"  --font FILE         TrueType/OpenType font (default %s)\n"
		"  --atlas-size SIZE   atlas bytes, K/M/G suffixes (default 32M)\n"
		"  --slot-size SIZE    bytes per glyph slot, a multiple of 4096 from 4K to 64K\n"
		"                      (default: what the pixel size needs)\n"
		"  --width PX          width of the image (default 1024)\n"
		"  --page-lines N      lines per image page (default 16)\n"
		"  --line-delay-us N   sleep N microseconds after each line (frame pacing)\n"
		"  --pgm FILE          also write the first page as a PGM image\n"
		"  --keep              keep the atlas file at the end\n"
		"  --help              this text\n", prog, DEFAULT_FONT);
}

struct options {
	const char *atlas, *text, *font, *pgm;
	unsigned size, passes, width, page_lines, line_delay_us;
	uint64_t atlas_size, slot_size;
	bool keep;
};

static void bad_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s\nTry '%s --help'.\n", prog, msg, arg ? ": " : "",
		arg ? arg : "", prog);
	exit(2);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { O_ATLAS = 256, O_TEXT, O_SIZE, O_PASSES, O_FONT, O_ATLAS_SIZE, O_SLOT_SIZE,
	       O_WIDTH, O_PAGE_LINES, O_DELAY, O_PGM, O_KEEP, O_HELP };
	static const struct option longopts[] = {
		{ "atlas", required_argument, NULL, O_ATLAS },
		{ "text", required_argument, NULL, O_TEXT },
		{ "size", required_argument, NULL, O_SIZE },
		{ "passes", required_argument, NULL, O_PASSES },
		{ "font", required_argument, NULL, O_FONT },
		{ "atlas-size", required_argument, NULL, O_ATLAS_SIZE },
		{ "slot-size", required_argument, NULL, O_SLOT_SIZE },
		{ "width", required_argument, NULL, O_WIDTH },
		{ "page-lines", required_argument, NULL, O_PAGE_LINES },
		{ "line-delay-us", required_argument, NULL, O_DELAY },
		{ "pgm", required_argument, NULL, O_PGM },
		{ "keep", no_argument, NULL, O_KEEP },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct options){ .font = DEFAULT_FONT, .size = 32, .passes = 1, .width = 1024,
			       .page_lines = 16, .atlas_size = DEFAULT_ATLAS };
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case O_ATLAS: o->atlas = optarg; break;
		case O_TEXT: o->text = optarg; break;
		case O_FONT: o->font = optarg; break;
		case O_PGM: o->pgm = optarg; break;
		case O_KEEP: o->keep = true; break;
		case O_SIZE:
			if (parse_uint(optarg, 6, 256, &o->size) < 0)
				bad_usage("--size wants a pixel size from 6 to 256", optarg);
			break;
		case O_PASSES:
			if (parse_uint(optarg, 1, 1000000, &o->passes) < 0)
				bad_usage("--passes wants a number from 1", optarg);
			break;
		case O_WIDTH:
			if (parse_uint(optarg, 16, 16384, &o->width) < 0)
				bad_usage("--width wants pixels from 16 to 16384", optarg);
			break;
		case O_PAGE_LINES:
			if (parse_uint(optarg, 1, 1024, &o->page_lines) < 0)
				bad_usage("--page-lines wants a number from 1 to 1024", optarg);
			break;
		case O_DELAY:
			if (parse_uint(optarg, 0, 10000000, &o->line_delay_us) < 0)
				bad_usage("--line-delay-us wants a number up to 10000000", optarg);
			break;
		case O_ATLAS_SIZE:
			if (parse_size(optarg, &o->atlas_size) < 0 || o->atlas_size < (1u << 20) ||
			    o->atlas_size > (1ull << 32))
				bad_usage("--atlas-size wants a size from 1M to 4G", optarg);
			break;
		case O_SLOT_SIZE:
			if (parse_size(optarg, &o->slot_size) < 0 || o->slot_size < MIN_SLOT ||
			    o->slot_size > MAX_SLOT || o->slot_size % PAGE_BYTES)
				bad_usage("--slot-size wants a multiple of 4096 from 4K to 64K",
					  optarg);
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			exit(2);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument", argv[optind]);
	if (!o->atlas || !o->text)
		bad_usage("--atlas and --text are required", NULL);
	if (!o->slot_size) {
		/* A cell of 2 em by 2 em, which holds every DejaVu Sans glyph we draw. */
		uint64_t need = sizeof(struct slot_header) + 4ull * o->size * o->size;

		need = (need + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
		o->slot_size = need < MIN_SLOT ? MIN_SLOT : need > MAX_SLOT ? MAX_SLOT : need;
	}
	if (o->atlas_size < o->slot_size * 16)
		bad_usage("--atlas-size must hold at least 16 slots", NULL);
}

static int font_open(struct cache *c, const struct options *o)
{
	FT_Error err = FT_Init_FreeType(&c->ft);

	if (err) {
		c->ft = NULL;
		fprintf(stderr, "%s: FreeType initialisation failed: error %d\n", prog, err);
		return -1;
	}
	err = FT_New_Face(c->ft, o->font, 0, &c->face);
	if (err) {
		c->face = NULL;
		fprintf(stderr, "%s: %s: FreeType cannot open the font: error %d%s\n", prog,
			o->font, err,
			access(o->font, R_OK) ? " (no such file: install fonts-dejavu-core or "
						"pass --font)" : "");
		return -1;
	}
	if ((err = FT_Select_Charmap(c->face, FT_ENCODING_UNICODE)) != 0) {
		fprintf(stderr, "%s: %s: the font has no Unicode character map (error %d)\n", prog,
			o->font, err);
		return -1;
	}
	if ((err = FT_Set_Pixel_Sizes(c->face, 0, o->size)) != 0) {
		fprintf(stderr, "%s: %s: cannot set the pixel size %u: error %d\n", prog, o->font,
			o->size, err);
		return -1;
	}
	return 0;
}

/*
 * Open the atlas -- created when missing (*created is then true: only such a
 * file is removed at the end) -- check that it is a regular file on
 * volatilefs, and only then empty it, size it and map it.  Nothing is
 * truncated or removed off volatilefs.
 */
static int atlas_open(struct cache *c, const struct options *o, bool *created)
{
	struct stat st;
	size_t count;

	c->path = o->atlas;
	c->slot_size = (uint32_t)o->slot_size;
	c->nslots = (uint32_t)(o->atlas_size / o->slot_size);
	c->atlas_size = (size_t)c->nslots * c->slot_size;
	c->fd = open(o->atlas, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (c->fd >= 0)
		*created = true;
	else if (errno == EEXIST)
		c->fd = open(o->atlas, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (c->fd < 0) {
		warn_errno("cannot open the atlas", o->atlas);
		return -1;
	}
	if (fstat(c->fd, &st) < 0) {
		warn_errno("cannot stat the atlas", o->atlas);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s is not a regular file: the atlas must be a file on a "
			"volatilefs mount\n", prog, o->atlas);
		return -1;
	}
	/* Any volatilefs call tells: elsewhere the ioctl fails with ENOTTY. */
	if (volatilefs_purged(c->fd, 0, 0, NULL, 0, &count) < 0) {
		if (errno == ENOTTY)
			fprintf(stderr, "%s: %s is not on a volatilefs mount (volatilefs_purged: "
				"%s): put the atlas on volatilefs\n", prog, o->atlas,
				strerror(errno));
		else
			warn_errno("volatilefs_purged on the atlas", o->atlas);
		return -1;
	}
	/* A reused atlas: drop its old glyphs, units and purged set. */
	if (ftruncate(c->fd, 0) < 0) {
		warn_errno("cannot empty the atlas", o->atlas);
		return -1;
	}
	if (ftruncate(c->fd, (off_t)c->atlas_size) < 0) {
		warn_errno("cannot size the atlas", o->atlas);
		return -1;
	}
	c->map = mmap(NULL, c->atlas_size, PROT_READ, MAP_SHARED, c->fd, 0);
	if (c->map == MAP_FAILED) {
		c->map = NULL;
		warn_errno("cannot map the atlas", o->atlas);
		return -1;
	}
	/* Glyphs are read a slot at a time: readahead would only fetch idle slots. */
	if (madvise((void *)c->map, c->atlas_size, MADV_RANDOM) < 0)
		warn_errno("madvise(MADV_RANDOM) on the atlas", o->atlas);
	return 0;
}

static void print_stats(const struct cache *c, const struct image *im, const struct options *o,
			double seconds)
{
	const struct stats *s = &c->st;

	printf("atlas=%zu slot_size=%" PRIu32 " slots=%" PRIu32 " size=%u passes=%u\n",
	       c->atlas_size, c->slot_size, c->nslots, o->size, o->passes);
	printf("lines=%" PRIu64 "\n", s->lines);
	printf("distinct_glyphs=%zu\n", c->nglyphs);
	printf("lookups=%" PRIu64 "\n", s->lookups);
	printf("hits=%" PRIu64 "\n", s->hits);
	printf("misses=%" PRIu64 "\n", s->misses);
	printf("refills=%" PRIu64 "\n", s->refills);
	printf("evictions=%" PRIu64 "\n", s->evictions);
	printf("regenerations=%" PRIu64 "\n", s->regen_unmark + s->regen_poll);
	printf("regenerations_after_unmark=%" PRIu64 "\n", s->regen_unmark);
	printf("regenerations_after_poll=%" PRIu64 "\n", s->regen_poll);
	printf("lost_bytes_at_unmark=%" PRIu64 "\n", s->lost_bytes);
	printf("purges_seen=%" PRIu64 "\n", s->purge_events);
	printf("slots_dropped=%" PRIu64 "\n", s->slots_dropped);
	printf("bytes_dropped=%" PRIu64 "\n", s->bytes_dropped);
	printf("marks=%" PRIu64 "\n", s->marks);
	printf("unmarks=%" PRIu64 "\n", s->unmarks);
	printf("volatile_calls=%" PRIu64 "\n", s->calls);
	printf("clipped_glyphs=%" PRIu64 "\n", s->clipped);
	printf("pages=%" PRIu64 "\n", im->pages);
	printf("seconds=%.3f\n", seconds);
	printf("checksum=fnv1a64:%016" PRIx64 "\n", im->hash);
}

int main(int argc, char **argv)
{
	struct options o;
	struct text text = { 0 };
	struct cache c = { .fd = -1, .stop_fd = -1 };
	struct image im = { .hash = FNV_OFFSET };
	int32_t *need = NULL;
	size_t longest = 0;
	bool created = false, lock_ready = false;
	double t0 = now_seconds();
	int status = 1, err;

	parse_options(argc, argv, &o);
	if (text_load(&text, o.text) < 0)
		goto out;
	for (size_t i = 0; i < text.nlines; i++)
		if (text.starts[i + 1] - text.starts[i] > longest)
			longest = text.starts[i + 1] - text.starts[i];
	if (font_open(&c, &o) < 0)
		goto out;
	if (atlas_open(&c, &o, &created) < 0)
		goto out;

	c.slots = xcalloc(c.nslots, sizeof(*c.slots), "the slot table");
	c.pinned = xcalloc(longest + 1, sizeof(*c.pinned), "the pinned list");
	c.runs = xcalloc(longest + 1, sizeof(*c.runs), "the unmark list");
	c.fill = xcalloc(longest + 1, sizeof(*c.fill), "the miss list");
	c.redo = xcalloc(longest + 1, sizeof(*c.redo), "the regeneration list");
	c.stage = xcalloc(1, c.slot_size, "the staging slot");
	c.value = xcalloc(1, VALUE_MAX + 64, "the range list");
	need = xcalloc(longest + 1, sizeof(*need), "the line's glyph list");
	im.width = o.width;
	im.page_lines = o.page_lines;
	im.ascent = (unsigned)((c.face->size->metrics.ascender + 63) >> 6);
	im.line_height = (unsigned)((c.face->size->metrics.height + 63) >> 6);
	im.height = im.line_height * o.page_lines;
	im.pgm = o.pgm;
	im.px = xcalloc((size_t)im.width, im.height, "the image page");
	if (!c.slots || !c.pinned || !c.runs || !c.fill || !c.redo || !c.stage || !c.value ||
	    !need || !im.px)
		goto out;
	for (uint32_t s = 0; s < c.nslots; s++)
		c.slots[s].glyph = -1;

	if ((err = pthread_mutex_init(&c.lock, NULL)) != 0) {
		fprintf(stderr, "%s: pthread_mutex_init: %s\n", prog, strerror(err));
		goto out;
	}
	lock_ready = true;
	c.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (c.stop_fd < 0) {
		warn_errno("eventfd", NULL);
		goto out;
	}
	if ((err = pthread_create(&c.poller, NULL, poll_main, &c)) != 0) {
		fprintf(stderr, "%s: cannot start the poll thread: %s\n", prog, strerror(err));
		goto out;
	}
	c.poller_running = true;

	for (unsigned pass = 0; pass < o.passes; pass++) {
		for (size_t l = 0; l < text.nlines; l++) {
			if (render_line(&c, &im, text.cps + text.starts[l],
					text.starts[l + 1] - text.starts[l], need) < 0) {
				fprintf(stderr, "%s: giving up at line %zu of %s (pass %u)\n", prog,
					l + 1, o.text, pass + 1);
				goto out;
			}
			if (atomic_load(&c.poll_failed)) {
				fprintf(stderr, "%s: the poll thread failed; giving up\n", prog);
				goto out;
			}
			if (o.line_delay_us)
				usleep(o.line_delay_us);
		}
	}
	if (im.row > 0 && flush_page(&im) < 0)
		goto out;
	if (release_all(&c) < 0)
		goto out;
	status = 0;
out:
	if (c.poller_running) {
		uint64_t one = 1;
		ssize_t n;

		while ((n = write(c.stop_fd, &one, sizeof(one))) < 0 && errno == EINTR)
			;
		if (n != sizeof(one)) {
			/* Cannot happen with an eventfd; still, never free under its feet. */
			warn_errno("cannot stop the poll thread: eventfd write", NULL);
			pthread_cancel(c.poller);
			lock_ready = false; /* it may have died holding the lock */
			status = 1;
		}
		pthread_join(c.poller, NULL);
		if (atomic_load(&c.poll_failed))
			status = 1;
	}
	if (status == 0)
		print_stats(&c, &im, &o, now_seconds() - t0);
	if (c.stop_fd >= 0)
		close(c.stop_fd);
	if (lock_ready)
		pthread_mutex_destroy(&c.lock);
	if (c.map)
		munmap((void *)c.map, c.atlas_size);
	if (c.fd >= 0 && close(c.fd) < 0) {
		warn_errno("closing the atlas", c.path);
		status = 1;
	}
	if (created && !o.keep && unlink(o.atlas) < 0) {
		warn_errno("cannot remove the atlas", o.atlas);
		status = 1;
	}
	if (c.face)
		FT_Done_Face(c.face);
	if (c.ft)
		FT_Done_FreeType(c.ft);
	free(im.px);
	free(need);
	free(c.stage);
	free(c.value);
	free(c.pinned);
	free(c.runs);
	free(c.fill);
	free(c.redo);
	free(c.slots);
	free(c.glyphs);
	free(c.hash);
	text_free(&text);
	if (fflush(stdout) != 0) {
		warn_errno("writing the statistics", NULL);
		status = 1;
	}
	return status;
}
