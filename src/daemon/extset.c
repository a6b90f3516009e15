/*
 * extset.c - a byte set as coalesced extents in a red-black tree; see
 * extset.h for the invariants and the costs.
 *
 * Every operation starts with one descent, first_end_at_least(), then
 * walks forward in order.  Changing an extent's start in place is safe
 * for the tree as long as it stays between its neighbours' keys; each
 * place that does so says why it does.
 *
 * Both mutators that can allocate do so before touching the tree, so a
 * failed allocation leaves the set as it was.
 */
#include "extset.h"
#include "meta.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

static int cmp_start(struct extent *a, struct extent *b)
{
	return (a->start > b->start) - (a->start < b->start);
}

/* tree.h marks its generated functions __unused, which libbsd's cdefs.h
 * leaves undefined (the name clashes with struct members in system headers). */
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif
RB_GENERATE_STATIC(extent_tree, extent, link, cmp_start)

/*
 * The first extent whose end is >= min_end, or NULL.  Disjoint extents
 * are ordered by their ends as well as their starts, so one descent
 * finds it.  Reading a const set's tree yields non-const node pointers
 * (the const covers the head, not the nodes): the mutators use them,
 * and the const entry points hand them out as const.
 */
static struct extent *first_end_at_least(const struct extset *s, uint64_t min_end)
{
	struct extent *e = RB_ROOT(&s->tree);
	struct extent *best = NULL;

	while (e) {
		if (e->end >= min_end) {
			best = e;
			e = RB_LEFT(e, link);
		} else {
			e = RB_RIGHT(e, link);
		}
	}
	return best;
}

/* The first extent whose end is > from, or NULL. */
static struct extent *first_from(const struct extset *s, uint64_t from)
{
	if (from == UINT64_MAX)
		return NULL; /* no end exceeds UINT64_MAX */
	return first_end_at_least(s, from + 1);
}

static struct extent *next_of(struct extent *e)
{
	/* The generated function ignores the head: it walks parent links. */
	return extent_tree_RB_NEXT(e);
}

static void drop(struct extset *s, struct extent *e)
{
	RB_REMOVE(extent_tree, &s->tree, e);
	s->count--;
	s->bytes -= e->end - e->start;
	meta_free(e);
}

void extset_init(struct extset *s)
{
	RB_INIT(&s->tree);
	s->count = 0;
	s->bytes = 0;
}

void extset_clear(struct extset *s)
{
	struct extent *e = RB_ROOT(&s->tree);
	struct extent *up;

	/*
	 * Post-order, without rebalancing: unhook each child on the way down
	 * so that coming back up finds it gone.  O(n) and no stack.
	 */
	while (e) {
		if (RB_LEFT(e, link)) {
			up = e;
			e = RB_LEFT(e, link);
			RB_LEFT(up, link) = NULL;
		} else if (RB_RIGHT(e, link)) {
			up = e;
			e = RB_RIGHT(e, link);
			RB_RIGHT(up, link) = NULL;
		} else {
			up = RB_PARENT(e, link);
			meta_free(e);
			e = up;
		}
	}
	extset_init(s);
}

int extset_add(struct extset *s, uint64_t start, uint64_t end)
{
	struct extent *e, *n;

	if (start >= end)
		return 0;
	/* The first extent that overlaps or touches [start, end), if any. */
	e = first_end_at_least(s, start);
	if (!e || e->start > end) {
		n = meta_alloc(sizeof(*n));
		if (!n)
			return -ENOMEM;
		n->start = start;
		n->end = end;
		n = RB_INSERT(extent_tree, &s->tree, n);
		assert(n == NULL); /* e, the next start, is > end > start */
		s->count++;
		s->bytes += end - start;
		return 0;
	}

	/*
	 * Grow e to the union.  Its predecessor ends before start (e is the
	 * first to reach start) and does not touch it, so lowering e->start
	 * keeps the order.  Successors that begin at or before the new end
	 * are swallowed: remember the furthest end and free them.
	 */
	s->bytes -= e->end - e->start;
	if (start < e->start)
		e->start = start;
	if (e->end > end)
		end = e->end;
	while ((n = next_of(e)) != NULL && n->start <= end) {
		if (n->end > end)
			end = n->end;
		drop(s, n);
	}
	e->end = end;
	s->bytes += e->end - e->start;
	return 0;
}

int extset_remove(struct extset *s, uint64_t start, uint64_t end)
{
	struct extent *e, *n;

	if (start >= end)
		return 0;
	e = first_from(s, start);
	if (!e || e->start >= end)
		return 0;

	/*
	 * Four cases for each extent e that meets [start, end):
	 * 1. e sticks out on both sides: split it (only the first can);
	 * 2. e sticks out on the left: cut its tail at start;
	 * 3. e lies inside: free it;
	 * 4. e sticks out on the right: cut its head at end (only the last).
	 */
	if (e->start < start && e->end > end) {
		n = meta_alloc(sizeof(*n));
		if (!n)
			return -ENOMEM;
		n->start = end;
		n->end = e->end;
		e->end = start;
		n = RB_INSERT(extent_tree, &s->tree, n);
		assert(n == NULL); /* e's successor started after the old e->end */
		s->count++;
		s->bytes -= end - start;
		return 0;
	}
	if (e->start < start) {
		s->bytes -= e->end - start;
		e->end = start;
		e = next_of(e);
	}
	while (e && e->start < end) {
		if (e->end > end) {
			/* Everything before e that met the range ends <= start
			 * now, so raising e->start to end keeps the order. */
			s->bytes -= end - e->start;
			e->start = end;
			break;
		}
		n = next_of(e);
		drop(s, e);
		e = n;
	}
	return 0;
}

/* Runs of one page's piece [0, len) of buf, at most EXTSET_NONZERO_RUNS. */
static int remove_nonzero_piece(struct extset *s, uint64_t off, const uint8_t *buf, size_t len)
{
	unsigned runs = 0;
	size_t i = 0;

	while (i < len && runs < EXTSET_NONZERO_RUNS) {
		size_t j;
		int ret;

		while (i < len && buf[i] == 0)
			i++;
		for (j = i; j < len && buf[j] != 0; j++)
			;
		if (i == j)
			break;
		if (extset_intersects(s, off + i, off + j)) {
			ret = extset_remove(s, off + i, off + j);
			if (ret)
				return ret;
			runs++;
		}
		i = j;
	}
	return 0;
}

int extset_remove_nonzero(struct extset *s, uint64_t off, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		size_t piece = 4096 - (size_t)(off % 4096);
		int ret;

		if (piece > len)
			piece = len;
		if (extset_intersects(s, off, off + piece) &&
		    (ret = remove_nonzero_piece(s, off, buf, piece)) != 0)
			return ret;
		off += piece;
		buf += piece;
		len -= piece;
	}
	return 0;
}

bool extset_intersects(const struct extset *s, uint64_t start, uint64_t end)
{
	const struct extent *e;

	if (start >= end)
		return false;
	e = first_from(s, start);
	return e && e->start < end;
}

const struct extent *extset_first_from(const struct extset *s, uint64_t from)
{
	return first_from(s, from);
}

const struct extent *extset_next(const struct extset *s, const struct extent *e)
{
	(void)s; /* kept for symmetry with extset_first_from and for a future tree */
	/* The set hands out const extents of nodes it owns and may change:
	 * casting back is sound, and next_of() only reads. */
	return next_of((struct extent *)e);
}

uint64_t extset_count_in(const struct extset *s, uint64_t start, uint64_t end)
{
	struct extent *e;
	uint64_t n = 0;

	if (start >= end)
		return 0;
	for (e = first_from(s, start); e && e->start < end; e = next_of(e))
		n++;
	return n;
}

uint64_t extset_bytes_in(const struct extset *s, uint64_t start, uint64_t end)
{
	struct extent *e;
	uint64_t bytes = 0;

	if (start >= end)
		return 0;
	for (e = first_from(s, start); e && e->start < end; e = next_of(e))
		bytes += (e->end < end ? e->end : end) - (e->start > start ? e->start : start);
	return bytes;
}
