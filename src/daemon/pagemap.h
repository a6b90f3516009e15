/*
 * pagemap.h - a file's page map: page index -> page of data.
 *
 * A radix tree of PM_FANOUT-slot nodes, like the kernel's page cache:
 * height h covers page indices below PM_FANOUT^h, so a lookup costs
 * O(log64 n) in the file size and a sparse file costs nothing for its
 * holes.  Interior nodes count their non-empty slots and are freed when
 * they empty, so metadata stays at about 8 bytes per data page plus one
 * node per 64 (0.2% of data for dense files).
 *
 * Entries are uintptr_t.  A page pointer is 4096-aligned, so the low
 * PM_TAG_BITS of an entry are free for per-page state: PM_PAGE(e) is the
 * page (NULL for a hole), PM_TAGS(e) the state, and an entry with tags
 * but no page is legal (state kept for a page whose memory is gone).
 *
 * How the volatile-range layer sits on it without changing it: units
 * (runs of volatile pages, purged whole) live in a per-file interval
 * tree beside this map (units.c), and the byte-exact purged set in an
 * extent set (extset.c).  A purge walks the unit's index range here with
 * pagemap_remove_range(); residency of a range is counted with
 * pagemap_next(..., want_page = true).  Per-page state has so far been
 * derivable from the units, so the tag bits are unused: they remain for
 * state that is not (a per-page dirty or accessed bit, say).
 *
 * Locking: none inside.  The owning inode's lock protects the map.
 */
#ifndef VOLATILEFS_PAGEMAP_H
#define VOLATILEFS_PAGEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_SHIFT 6
#define PM_FANOUT (1u << PM_SHIFT)
#define PM_TAG_BITS 12
#define PM_TAG_MASK ((uintptr_t)((1u << PM_TAG_BITS) - 1))
#define PM_PAGE(e) ((void *)((e) & ~PM_TAG_MASK))
#define PM_TAGS(e) ((e) & PM_TAG_MASK)

/* Largest page index: 2^52 pages of 4096 bytes reach 2^64 bytes. */
#define PM_MAX_INDEX ((uint64_t)(1ull << 52) - 1)

struct pm_node;

struct pagemap {
	struct pm_node *root; /* NULL when empty */
	unsigned height;      /* 0 when empty */
	uint64_t npages;      /* entries with a page */
	uint64_t nentries;    /* non-zero entries */
	uint64_t nnodes;      /* radix nodes allocated */
};

void pagemap_init(struct pagemap *pm);

/* The entry at index, 0 for none. */
uintptr_t pagemap_get(const struct pagemap *pm, uint64_t index);

/*
 * Store entry (non-zero) at index; returns the previous entry in *old
 * when old is not NULL.  Zero or -ENOMEM (the map is unchanged then).
 */
int pagemap_set(struct pagemap *pm, uint64_t index, uintptr_t entry, uintptr_t *old);

/* Remove the entry at index and return it (0 if there was none). */
uintptr_t pagemap_clear(struct pagemap *pm, uint64_t index);

/*
 * The first index >= from whose entry has a page (want_page) or is
 * non-zero (!want_page); true with *index and *entry set, or false.
 */
bool pagemap_next(const struct pagemap *pm, uint64_t from, bool want_page,
		  uint64_t *index, uintptr_t *entry);

/*
 * The entries with a page in [first, last] (inclusive).  Visits only the
 * nodes that exist inside the range: the cost follows the pages held
 * there, not the width of the range.
 */
uint64_t pagemap_count(const struct pagemap *pm, uint64_t first, uint64_t last);

/*
 * An upper bound on the bytes of new nodes that storing `missing` new
 * entries inside [first, last] can allocate (each node charged at
 * node_cost bytes).
 */
uint64_t pagemap_fill_bound(uint64_t first, uint64_t last, uint64_t missing,
			    uint64_t node_cost);

/* sizeof one node, for pagemap_fill_bound's node_cost. */
size_t pagemap_node_size(void);

/*
 * Remove every entry in [first, last] (inclusive).  Each removed page is
 * passed to release(page, ctx) (tags dropped).  Returns the number of
 * pages released.
 */
uint64_t pagemap_remove_range(struct pagemap *pm, uint64_t first, uint64_t last,
			      void (*release)(void *page, void *ctx), void *ctx);

/* Free all nodes, passing each page to release (which may be NULL). */
void pagemap_destroy(struct pagemap *pm, void (*release)(void *page, void *ctx), void *ctx);

/* Bytes of metadata held by the map's nodes. */
size_t pagemap_meta_bytes(const struct pagemap *pm);

#endif
