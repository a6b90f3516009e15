/*
 * extset.h - a set of byte offsets kept as disjoint half-open extents.
 *
 * Owns one file's purged set (DESIGN section 4): the bytes whose data a
 * purge discarded and that have not been written since, exact to the
 * byte.  A purge adds a unit's bytes; a write, a truncate or a punch
 * removes bytes; an unmark asks whether a range intersects the set.
 *
 * The set is a red-black tree (libbsd's <bsd/sys/tree.h>) of extents
 * [start, end) keyed by start.  Invariants, true after every call:
 *   - start < end for every extent;
 *   - extents are disjoint and never touch: for consecutive extents a, b
 *     a->end < b->start.  Adding merges overlapping and adjacent extents,
 *     so a set of bytes has exactly one representation and ->count is the
 *     number of maximal runs;
 *   - ->count is the number of extents and ->bytes the sum of their
 *     lengths.
 * Because extents are disjoint, ordering by start also orders by end, so
 * "the first extent ending after x" is a single descent of the tree.
 *
 * An end of UINT64_MAX means "to the end of any file"; no arithmetic here
 * goes past it.  The byte at offset UINT64_MAX itself cannot be named.
 *
 * Costs, with n extents in the set: lookups (extset_intersects,
 * extset_first_from) O(log n); extset_count_in and extset_bytes_in
 * O(log n + k) for the k extents they visit; extset_next amortized O(1).
 * extset_add and extset_remove cost O(log n) to find their place, plus
 * O(log n) for each extent they swallow or delete; every extent was made
 * by one earlier call, and a call makes at most one, so a sequence of m
 * calls costs O(m log n) in all.  extset_clear is O(n).  Memory: one
 * malloc'd struct extent (48 bytes on LP64) per extent.
 *
 * Locking: none inside.  The owning inode's lock protects the set, and
 * every extent pointer it hands out is valid only until the next
 * extset_add, extset_remove or extset_clear.
 */
#ifndef VOLATILEFS_EXTSET_H
#define VOLATILEFS_EXTSET_H

#include <bsd/sys/tree.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* [start, end), start < end.  Owned by the set; read-only to callers. */
struct extent {
	RB_ENTRY(extent) link;
	uint64_t start, end;
};

RB_HEAD(extent_tree, extent);

struct extset {
	struct extent_tree tree;
	uint64_t count; /* extents in the tree */
	uint64_t bytes; /* sum of their lengths */
};

/* An empty set.  Allocates nothing. */
void extset_init(struct extset *s);

/* Free every extent; the set is empty (and initialised) afterwards. */
void extset_clear(struct extset *s);

/*
 * Add the bytes [start, end), merging with every extent they overlap or
 * touch.  A range with start >= end is empty: nothing changes, 0.
 * Returns zero on success, -ENOMEM if a new extent could not be
 * allocated; the set is unchanged on failure.  Only an add that neither
 * overlaps nor touches an existing extent allocates.
 */
int extset_add(struct extset *s, uint64_t start, uint64_t end);

/*
 * Remove the bytes [start, end): extents inside it are freed, extents
 * that cross one edge are trimmed, and an extent that covers it with
 * bytes left on both sides is split in two.  A range with start >= end
 * is empty: nothing changes, 0.  Removing [0, UINT64_MAX) empties the
 * set.  Returns zero on success, -ENOMEM if the split could not allocate
 * its second extent; the set is unchanged on failure.  Only a split
 * allocates.
 */
int extset_remove(struct extset *s, uint64_t start, uint64_t end);

/*
 * Remove from the set the bytes of [off, off + len) that are not zero in
 * buf (buf[i] is byte off + i), run by run, at most EXTSET_NONZERO_RUNS
 * runs in each 4096-byte page: what a purge discarded reads as zeros, so
 * a byte that is not zero was written since; a zero byte may have been
 * written or lost, and stays.  Runs past the cap stay too (they hold
 * data: reporting them is allowed, losing a report is not), which bounds
 * the extents that random data, or a hostile pattern of bytes, can split
 * a set into.  Zero, or -ENOMEM from a split (the runs before it are
 * removed).
 */
#define EXTSET_NONZERO_RUNS 4
int extset_remove_nonzero(struct extset *s, uint64_t off, const uint8_t *buf, size_t len);

/* True if some byte of [start, end) is in the set; false for start >= end. */
bool extset_intersects(const struct extset *s, uint64_t start, uint64_t end);

/*
 * The first extent with end > from: the one containing from, else the
 * next one after it.  NULL if there is none.  extset_first_from(s, 0)
 * is the lowest extent.
 */
const struct extent *extset_first_from(const struct extset *s, uint64_t from);

/* The extent after e in s, in increasing order, or NULL after the last. */
const struct extent *extset_next(const struct extset *s, const struct extent *e);

/*
 * The number of extents with at least one byte in [start, end); 0 for
 * start >= end.  O(log n + k).
 */
uint64_t extset_count_in(const struct extset *s, uint64_t start, uint64_t end);

/* The number of bytes of the set inside [start, end); 0 for start >= end. */
uint64_t extset_bytes_in(const struct extset *s, uint64_t start, uint64_t end);

static inline bool extset_empty(const struct extset *s)
{
	return s->count == 0;
}

#endif
