/*
 * units.h - volatile units: which pages of a file may be purged, and the
 * order in which the whole filesystem purges them.
 *
 * A unit is a run of pages [start, end) marked volatile by one range of
 * a mark call (end UNIT_UNBOUNDED for "to the end of the file, now and
 * as it grows").  A purge discards a unit whole.  Each file keeps its
 * units in a red-black tree ordered by start; units never overlap.
 *
 * Marking [s, e) (DESIGN section 4):
 *   the new unit absorbs every unit it overlaps: their union becomes one
 *   unit with the new call's priority and flags, most recently used;
 *   units that only touch it stay separate.
 * Unmarking [s, e), for each unit u it overlaps (the ashmem cases):
 *   1. [s, e) covers u                  -> u is removed;
 *   2. u covers [s, e) with room both sides -> u is split in two;
 *   3. [s, e) covers the front of u     -> u starts at e;
 *   4. [s, e) covers the back of u      -> u ends at s.
 *   Only case 2 needs memory, and only one unit per range can be in that
 *   case, so a call reserves one spare unit per range before it changes
 *   anything: unmarking never fails halfway.
 *
 * Purge order: 16 lists, one per (priority 0..7, aged or not), each least
 * recently used first.  The next victim is the head of the first
 * non-empty list in the order (0, aged), (0, not aged), (1, aged), ...:
 * O(1).  A unit is on its list only while it holds memory
 * (resident > 0), so the evictor never meets a unit with nothing to
 * free; a write into a purged unit puts it back.
 *
 * Recency: every unit carries a stamp from lru->clock, taken when it is
 * marked, read or written (units_touch), listed or not: a unit read
 * while purged was used too.  Each list is ordered by stamp (the pieces
 * of a split share their unit's stamp, in page order).  Touching
 * moves a unit to the tail with a new stamp (O(1)); a unit that gets
 * memory back without being used (fallocate) goes back to the place its
 * stamp says, found by walking the list from both ends at once: O(k)
 * for the k units on the nearer side, paid only by fallocate into a
 * purged or empty unit.
 *
 * Reads the kernel serves itself (its page cache, mmap) never reach the
 * daemon, so they cannot touch a unit.  Each unit says whether the
 * kernel may hold its pages (kcached: set when it is made or touched).
 * The evictor probes the cold end ahead of purges (evict_probe): the
 * coldest units that may be cached have their cached pages dropped, so
 * the next read of them reaches the daemon and touches them; a unit
 * nobody reads stays cold, and goes first.
 *
 * Costs: mark, unmark and lookups O(log n + k) in the units n of the file
 * and the units k they touch, plus a walk of the page map over the pages
 * whose residency must be counted; choosing a victim O(1).
 *
 * Locking: a unit's start, end, priority, age and resident count, and
 * the file's tree, are protected by the owning inode's lock (written
 * under the write lock).  List links, the list heads and the counters
 * in struct lru are protected by lru->lock, taken after inode locks.
 * unit->inode never changes.
 */
#ifndef VOLATILEFS_UNITS_H
#define VOLATILEFS_UNITS_H

#include <bsd/sys/tree.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pagemap.h"

#define UNIT_UNBOUNDED UINT64_MAX
#define UNIT_PRIORITIES 8
#define UNIT_DEFAULT_PRIORITY 3
#define LRU_LISTS (2 * UNIT_PRIORITIES)

struct inode;

struct unit {
	RB_ENTRY(unit) link;             /* in the file's tree; inode lock */
	struct unit *lru_prev, *lru_next; /* lru->lock; NULL when off the lists */
	struct inode *inode;             /* immutable */
	uint64_t stamp;                  /* last use, from lru->clock; lru->lock */
	uint64_t start, end;             /* pages; end may be UNIT_UNBOUNDED */
	uint64_t resident;               /* pages holding memory; inode lock */
	uint8_t priority;
	bool age;
	bool listed;                     /* on a list; lru->lock */
	bool pinned;                     /* chosen by the evictor; lru->lock */
	bool dead;                       /* released while pinned; lru->lock */
	bool kcached;                    /* the kernel may cache its pages; lru->lock */
};

RB_HEAD(unit_tree, unit);

struct lru {
	pthread_mutex_t lock;
	struct unit heads[LRU_LISTS];    /* sentinels */
	_Atomic uint64_t units;          /* all units, listed or not */
	_Atomic bool ever;               /* a unit was ever made (never cleared) */
	_Atomic uint64_t resident;       /* pages held by all units */
	struct units *files;             /* files with units; lru->lock */
	uint64_t clock;                  /* the last stamp handed out; lru->lock */
	uint64_t nfiles;                 /* lru->lock */
};

/*
 * The files that have units now (at most max of them), for purging
 * "all".  Caller holds fs->ns_lock so they stay alive.  Returns the count
 * stored; *total is how many there are.
 */
size_t lru_files(struct lru *l, struct inode **out, size_t max, uint64_t *total);

int lru_init(struct lru *l);
void lru_destroy(struct lru *l);

/*
 * The per-file part, in the inode.  A file with at least one unit is
 * also on lru->files, so purging "all" visits only such files.
 */
struct units {
	struct unit_tree tree;
	uint64_t count;                  /* inode lock */
	struct units *fprev, *fnext;     /* lru->files; lru->lock */
	struct inode *inode;             /* set when first listed */
	bool listed;                     /* lru->lock */
};

void units_init(struct units *u);

/* A spare unit for one range of a mark or unmark call. */
struct unit *unit_alloc(void);
void unit_free(struct unit *u);

/*
 * Mark pages [start, end) of inode n volatile (caller holds n's lock for
 * writing).  spare is a unit from unit_alloc(), consumed.  Never fails.
 */
void units_mark(struct lru *l, struct inode *n, struct units *us, const struct pagemap *pm,
		uint64_t start, uint64_t end, unsigned priority, bool age, struct unit *spare);

/*
 * Unmark pages [start, end).  Returns the pages that were volatile, with
 * an unbounded unit counted up to limit_page (the file's end rounded up
 * to a page).  *spare is used for a split (then set to NULL); the caller
 * frees what is left.  Never fails.
 */
uint64_t units_unmark(struct lru *l, struct units *us, const struct pagemap *pm,
		      uint64_t start, uint64_t end, uint64_t limit_page, struct unit **spare);

/* The unit containing page, or NULL. */
struct unit *units_find(struct units *us, uint64_t page);
/* The first unit that ends after page (contains it or lies beyond), or NULL. */
struct unit *units_first_from(struct units *us, uint64_t page);
struct unit *units_next(struct units *us, struct unit *u);

/*
 * Page accounting hooks, called by file.c with n's lock held for writing.
 * used: the page came with a write (which touches the units next), not
 * with fallocate (which is no use of the unit).
 */
void units_page_added(struct lru *l, struct units *us, uint64_t page, bool used);
/* Pages [first, last] of pm are about to be dropped: uncount the resident ones. */
void units_pages_dropping(struct lru *l, struct units *us, const struct pagemap *pm,
			  uint64_t first, uint64_t last);
/* Truncation to new_end_page pages: bounded units are cut there, those beyond go. */
void units_truncate(struct lru *l, struct units *us, uint64_t new_end_page);

/* Reading or writing pages [start, end) makes the units there most recently used,
 * whether they hold memory or not. */
void units_touch(struct lru *l, struct units *us, uint64_t start, uint64_t end);
/*
 * Make every unit of the file most recently used, keeping their order
 * among themselves (by stamp; page order if no memory for the sort):
 * O(k log k) for the file's k units.
 */
void units_touch_all(struct lru *l, struct units *us);

/* A purge freed every page of u: off the lists, resident 0.  inode lock held. */
void units_purged(struct lru *l, struct unit *u);

/* Remove every unit of a file (freeing the node). */
void units_clear(struct lru *l, struct units *us);
/* Free every unit without touching the lists (unmount: the lists go too). */
void units_free_all(struct units *us);

/*
 * The evictor's hand-off.  lru_pick() returns the next unit to purge,
 * pinned, or NULL when no unit holds memory.  The evictor then takes the
 * unit's inode lock (the inode cannot go away: the evictor holds
 * fs->ns_lock) and calls lru_unpin(): false means the unit was released
 * meanwhile (and is now freed); true means it is still the file's and,
 * under the inode lock, safe to purge.  A unit released while pinned is
 * only marked dead, so the pointer stays valid until lru_unpin().
 */
struct unit *lru_pick(struct lru *l);
bool lru_unpin(struct lru *l, struct unit *u);

/*
 * The probe's pick: among the coldest units (the first 1/LRU_PROBE_SHARE
 * of all units in purge order, at least one), those the kernel may
 * cache, at most max, pinned as lru_pick() pins (one caller at a time:
 * the evictor's lock), their kcached cleared.  Returns how many.
 */
#define LRU_PROBE_SHARE 8
size_t lru_probe_pick(struct lru *l, struct unit **out, size_t max);

#endif
