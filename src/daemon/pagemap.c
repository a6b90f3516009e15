/*
 * pagemap.c - radix tree of pages; see pagemap.h.
 */
#include "pagemap.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PM_MAX_HEIGHT 9 /* 9 * 6 = 54 bits >= 52 bits of page index */

struct pm_node {
	uintptr_t slot[PM_FANOUT];
	unsigned count; /* non-zero slots */
};

static inline unsigned shift_of(unsigned height)
{
	return (height - 1) * PM_SHIFT;
}

/* Largest index a tree of this height can hold. */
static inline uint64_t height_max(unsigned height)
{
	if (height == 0)
		return 0;
	if (height * PM_SHIFT >= 64)
		return UINT64_MAX;
	return (1ull << (height * PM_SHIFT)) - 1;
}

void pagemap_init(struct pagemap *pm)
{
	memset(pm, 0, sizeof(*pm));
}

uintptr_t pagemap_get(const struct pagemap *pm, uint64_t index)
{
	const struct pm_node *n = pm->root;
	unsigned h;

	if (!n || index > height_max(pm->height))
		return 0;
	for (h = pm->height; h > 1; h--) {
		n = (const struct pm_node *)n->slot[(index >> shift_of(h)) & (PM_FANOUT - 1)];
		if (!n)
			return 0;
	}
	return n->slot[index & (PM_FANOUT - 1)];
}

static struct pm_node *node_new(struct pagemap *pm)
{
	struct pm_node *n = meta_calloc(sizeof(*n));

	if (n)
		pm->nnodes++;
	return n;
}

static void node_free(struct pagemap *pm, struct pm_node *n)
{
	meta_free(n);
	pm->nnodes--;
}

/* Shrink the tree while the root holds only slot 0. */
static void pagemap_shrink(struct pagemap *pm)
{
	while (pm->root && pm->height > 1 && pm->root->count == 1 && pm->root->slot[0]) {
		struct pm_node *child = (struct pm_node *)pm->root->slot[0];

		node_free(pm, pm->root);
		pm->root = child;
		pm->height--;
	}
	if (pm->root && pm->root->count == 0) {
		node_free(pm, pm->root);
		pm->root = NULL;
		pm->height = 0;
	}
}

/*
 * Remove the entry at index, pruning nodes that empty.  The path is
 * recorded on the way down so pruning walks back up without recursion.
 */
uintptr_t pagemap_clear(struct pagemap *pm, uint64_t index)
{
	struct pm_node *path[PM_MAX_HEIGHT];
	struct pm_node *n = pm->root;
	uintptr_t old;
	unsigned h, depth = 0;

	if (!n || index > height_max(pm->height))
		return 0;
	for (h = pm->height; h > 1; h--) {
		path[depth++] = n;
		n = (struct pm_node *)n->slot[(index >> shift_of(h)) & (PM_FANOUT - 1)];
		if (!n)
			return 0;
	}
	old = n->slot[index & (PM_FANOUT - 1)];
	if (!old)
		return 0;
	n->slot[index & (PM_FANOUT - 1)] = 0;
	n->count--;
	pm->nentries--;
	if (PM_PAGE(old))
		pm->npages--;
	/* Walk back up freeing emptied nodes (not the root: shrink does that). */
	for (h = 1; n->count == 0 && depth > 0; h++) {
		struct pm_node *parent = path[--depth];

		node_free(pm, n);
		parent->slot[(index >> shift_of(h + 1)) & (PM_FANOUT - 1)] = 0;
		parent->count--;
		n = parent;
	}
	pagemap_shrink(pm);
	return old;
}

int pagemap_set(struct pagemap *pm, uint64_t index, uintptr_t entry, uintptr_t *old)
{
	struct pm_node *n;
	uintptr_t prev;
	unsigned h;

	if (index > PM_MAX_INDEX || !entry)
		return -EINVAL;
	if (!pm->root) {
		/* Tall enough for index at once: growing from height 1 would
		 * leave a chain of empty nodes under slot 0. */
		unsigned h = 1;

		while (index > height_max(h))
			h++;
		pm->root = node_new(pm);
		if (!pm->root)
			return -ENOMEM;
		pm->height = h;
	}
	while (index > height_max(pm->height)) {
		struct pm_node *top = node_new(pm);

		if (!top)
			return -ENOMEM; /* extra levels are harmless; nothing changed */
		top->slot[0] = (uintptr_t)pm->root;
		top->count = 1;
		pm->root = top;
		pm->height++;
	}
	n = pm->root;
	for (h = pm->height; h > 1; h--) {
		uintptr_t *s = &n->slot[(index >> shift_of(h)) & (PM_FANOUT - 1)];

		if (!*s) {
			struct pm_node *c = node_new(pm);

			if (!c) {
				pagemap_shrink(pm);
				return -ENOMEM;
			}
			*s = (uintptr_t)c;
			n->count++;
		}
		n = (struct pm_node *)*s;
	}
	prev = n->slot[index & (PM_FANOUT - 1)];
	n->slot[index & (PM_FANOUT - 1)] = entry;
	if (!prev) {
		n->count++;
		pm->nentries++;
	}
	if (PM_PAGE(prev) && !PM_PAGE(entry))
		pm->npages--;
	else if (!PM_PAGE(prev) && PM_PAGE(entry))
		pm->npages++;
	if (old)
		*old = prev;
	return 0;
}

/* Search the subtree n (height h, first index base) for the first match >= from. */
static bool next_rec(const struct pm_node *n, unsigned h, uint64_t base, uint64_t from,
		     bool want_page, uint64_t *index, uintptr_t *entry)
{
	unsigned shift = shift_of(h);
	unsigned i = from > base ? (unsigned)((from - base) >> shift) : 0;

	for (; i < PM_FANOUT; i++) {
		uintptr_t s = n->slot[i];
		uint64_t cbase = base + ((uint64_t)i << shift);

		if (!s)
			continue;
		if (h == 1) {
			if (!want_page || PM_PAGE(s)) {
				*index = cbase;
				*entry = s;
				return true;
			}
		} else if (next_rec((const struct pm_node *)s, h - 1, cbase,
				    from > cbase ? from : cbase, want_page, index, entry)) {
			return true;
		}
	}
	return false;
}

bool pagemap_next(const struct pagemap *pm, uint64_t from, bool want_page,
		  uint64_t *index, uintptr_t *entry)
{
	if (!pm->root || from > height_max(pm->height))
		return false;
	return next_rec(pm->root, pm->height, 0, from, want_page, index, entry);
}

/* Pages in the subtree n (height h, first index base) inside [first, last]. */
static uint64_t count_rec(const struct pm_node *n, unsigned h, uint64_t base, uint64_t first,
			  uint64_t last)
{
	unsigned shift = shift_of(h);
	unsigned i = first > base ? (unsigned)((first - base) >> shift) : 0;
	uint64_t count = 0;

	for (; i < PM_FANOUT; i++) {
		uintptr_t s = n->slot[i];
		uint64_t cbase = base + ((uint64_t)i << shift);

		if (cbase > last)
			break;
		if (!s)
			continue;
		if (h == 1)
			count += PM_PAGE(s) != NULL;
		else
			count += count_rec((const struct pm_node *)s, h - 1, cbase, first, last);
	}
	return count;
}

uint64_t pagemap_count(const struct pagemap *pm, uint64_t first, uint64_t last)
{
	if (!pm->root || first > last || first > height_max(pm->height))
		return 0;
	return count_rec(pm->root, pm->height, 0, first, last);
}

uint64_t pagemap_fill_bound(uint64_t first, uint64_t last, uint64_t missing,
			    uint64_t node_cost)
{
	uint64_t nodes = 0;

	if (first > last || !missing)
		return 0;
	/* Level h (leaves first): no more new nodes than new entries, nor
	 * than the nodes of that level the range spans; and a tree that
	 * grows taller gains a new root at each level it adds. */
	for (unsigned h = 1; h <= PM_MAX_HEIGHT; h++) {
		unsigned shift = h * PM_SHIFT;
		uint64_t span = shift >= 64 ? 1 : (last >> shift) - (first >> shift) + 1;

		nodes += span < missing ? span : missing;
	}
	return (nodes + PM_MAX_HEIGHT) * node_cost;
}

size_t pagemap_node_size(void)
{
	return sizeof(struct pm_node);
}

uint64_t pagemap_remove_range(struct pagemap *pm, uint64_t first, uint64_t last,
			      void (*release)(void *page, void *ctx), void *ctx)
{
	uint64_t idx, released = 0;
	uintptr_t e;

	while (first <= last && pagemap_next(pm, first, false, &idx, &e) && idx <= last) {
		pagemap_clear(pm, idx);
		if (PM_PAGE(e)) {
			if (release)
				release(PM_PAGE(e), ctx);
			released++;
		}
		if (idx == UINT64_MAX)
			break;
		first = idx + 1;
	}
	return released;
}

static void destroy_rec(struct pagemap *pm, struct pm_node *n, unsigned h,
			void (*release)(void *page, void *ctx), void *ctx)
{
	for (unsigned i = 0; i < PM_FANOUT; i++) {
		uintptr_t s = n->slot[i];

		if (!s)
			continue;
		if (h > 1)
			destroy_rec(pm, (struct pm_node *)s, h - 1, release, ctx);
		else if (PM_PAGE(s) && release)
			release(PM_PAGE(s), ctx);
	}
	node_free(pm, n);
}

void pagemap_destroy(struct pagemap *pm, void (*release)(void *page, void *ctx), void *ctx)
{
	if (pm->root)
		destroy_rec(pm, pm->root, pm->height, release, ctx);
	pagemap_init(pm);
}

size_t pagemap_meta_bytes(const struct pagemap *pm)
{
	return pm->nnodes * sizeof(struct pm_node);
}
