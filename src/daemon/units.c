/*
 * units.c - volatile units and the purge order; see units.h.
 */
#include "units.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* tree.h marks its generated functions __unused, which libbsd's cdefs.h
 * leaves undefined (the name clashes with struct members in system headers). */
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif

static int cmp_start(struct unit *a, struct unit *b)
{
	return (a->start > b->start) - (a->start < b->start);
}

RB_GENERATE_STATIC(unit_tree, unit, link, cmp_start)

/* Interval tests on half-open page ranges. */
#define range_overlaps(u, s, e) ((u)->start < (e) && (s) < (u)->end)
#define range_covers(s, e, u)   ((s) <= (u)->start && (u)->end <= (e))

static inline unsigned list_of(const struct unit *u)
{
	return u->priority * 2u + (u->age ? 0u : 1u);
}

int lru_init(struct lru *l)
{
	memset(l, 0, sizeof(*l));
	for (unsigned i = 0; i < LRU_LISTS; i++)
		l->heads[i].lru_next = l->heads[i].lru_prev = &l->heads[i];
	atomic_init(&l->resident, 0);
	return -pthread_mutex_init(&l->lock, NULL);
}

void lru_destroy(struct lru *l)
{
	pthread_mutex_destroy(&l->lock);
}

void units_init(struct units *us)
{
	memset(us, 0, sizeof(*us));
	RB_INIT(&us->tree);
}

struct unit *unit_alloc(void)
{
	return meta_calloc(sizeof(struct unit));
}

void unit_free(struct unit *u)
{
	meta_free(u);
}

/* lru->lock held. */
static void unlist_locked(struct unit *u)
{
	if (!u->listed)
		return;
	u->lru_prev->lru_next = u->lru_next;
	u->lru_next->lru_prev = u->lru_prev;
	u->lru_prev = u->lru_next = NULL;
	u->listed = false;
}

/* Append u as most recently used of its list.  lru->lock held. */
static void list_tail_locked(struct lru *l, struct unit *u)
{
	struct unit *h = &l->heads[list_of(u)];

	unlist_locked(u);
	u->lru_prev = h->lru_prev;
	u->lru_next = h;
	h->lru_prev->lru_next = u;
	h->lru_prev = u;
	u->listed = true;
}

/*
 * Put an unlisted u back on its list where its stamp says: after the last
 * unit used before it.  Both ends are walked at once, so the cost is the
 * distance from the nearer end.  lru->lock held.
 */
/*
 * The list order: by stamp; the pieces of a split unit share its stamp and
 * keep the order of their pages.  Equal stamps mean one file, whose lock
 * the caller holds, so reading start is safe exactly when it happens.
 */
static bool used_before(const struct unit *a, const struct unit *b)
{
	return a->stamp < b->stamp || (a->stamp == b->stamp && a->start < b->start);
}

static void list_by_stamp_locked(struct lru *l, struct unit *u)
{
	struct unit *h = &l->heads[list_of(u)];
	struct unit *back = h->lru_prev, *front = h->lru_next, *after;

	for (;;) {
		if (back == h || used_before(back, u)) {
			after = back;
			break;
		}
		if (front == h || used_before(u, front)) {
			after = front->lru_prev;
			break;
		}
		back = back->lru_prev;
		front = front->lru_next;
	}
	u->lru_prev = after;
	u->lru_next = after->lru_next;
	after->lru_next->lru_prev = u;
	after->lru_next = u;
	u->listed = true;
}

/* Put u on its list right after `after` (a split keeps its place). lru->lock held. */
static void list_after_locked(struct unit *after, struct unit *u)
{
	u->lru_prev = after;
	u->lru_next = after->lru_next;
	after->lru_next->lru_prev = u;
	after->lru_next = u;
	u->listed = true;
}

/* A file's first unit came or its last went.  lru->lock held. */
static void file_list_locked(struct lru *l, struct units *us, struct inode *n)
{
	if (us->listed)
		return;
	us->inode = n;
	us->fprev = NULL;
	us->fnext = l->files;
	if (l->files)
		l->files->fprev = us;
	l->files = us;
	us->listed = true;
	l->nfiles++;
}

static void file_unlist_locked(struct lru *l, struct units *us)
{
	if (!us->listed)
		return;
	if (us->fprev)
		us->fprev->fnext = us->fnext;
	else
		l->files = us->fnext;
	if (us->fnext)
		us->fnext->fprev = us->fprev;
	us->fprev = us->fnext = NULL;
	us->listed = false;
	l->nfiles--;
}

size_t lru_files(struct lru *l, struct inode **out, size_t max, uint64_t *total)
{
	size_t n = 0;

	pthread_mutex_lock(&l->lock);
	*total = l->nfiles;
	for (struct units *us = l->files; us && n < max; us = us->fnext)
		out[n++] = us->inode;
	pthread_mutex_unlock(&l->lock);
	return n;
}

static void resident_add(struct lru *l, struct unit *u, int64_t pages)
{
	u->resident = (uint64_t)((int64_t)u->resident + pages);
	atomic_fetch_add(&l->resident, (uint64_t)pages);
}

/* Remove u from its file and free it (or leave it to the evictor that pinned it). */
static void unit_release(struct lru *l, struct units *us, struct unit *u)
{
	RB_REMOVE(unit_tree, &us->tree, u);
	us->count--;
	atomic_fetch_sub(&l->resident, u->resident);
	u->resident = 0;
	pthread_mutex_lock(&l->lock);
	unlist_locked(u);
	l->units--;
	if (!us->count)
		file_unlist_locked(l, us);
	if (u->pinned) {
		u->dead = true;
		u = NULL;
	}
	pthread_mutex_unlock(&l->lock);
	meta_free(u);
}

/* Resident pages of pm in [start, end): a walk of the nodes held there. */
static uint64_t count_pages(const struct pagemap *pm, uint64_t start, uint64_t end)
{
	return start < end ? pagemap_count(pm, start, end - 1) : 0;
}

struct unit *units_first_from(struct units *us, uint64_t page)
{
	struct unit key = { .start = page }, *u;

	/* The unit starting at or before page may still cover it. */
	u = RB_NFIND(unit_tree, &us->tree, &key);
	if (u && u->start == page)
		return u;
	{
		struct unit *prev = u ? RB_PREV(unit_tree, &us->tree, u) : RB_MAX(unit_tree, &us->tree);

		if (prev && prev->end > page)
			return prev;
	}
	return u;
}

struct unit *units_next(struct units *us, struct unit *u)
{
	(void)us; /* libbsd's RB_NEXT needs only the node */
	return RB_NEXT(unit_tree, &us->tree, u);
}

struct unit *units_find(struct units *us, uint64_t page)
{
	struct unit *u = units_first_from(us, page);

	return u && u->start <= page ? u : NULL;
}

void units_mark(struct lru *l, struct inode *n, struct units *us, const struct pagemap *pm,
		uint64_t start, uint64_t end, unsigned priority, bool age, struct unit *spare)
{
	struct unit *u, *next;

	/* Absorb every overlapping unit into the union. */
	for (u = units_first_from(us, start); u && u->start < end; u = next) {
		next = units_next(us, u);
		if (u->start < start)
			start = u->start;
		if (u->end > end)
			end = u->end;
		unit_release(l, us, u);
	}
	spare->inode = n;
	spare->start = start;
	spare->end = end;
	spare->priority = (uint8_t)priority;
	spare->age = age;
	spare->resident = 0;
	spare->listed = spare->pinned = spare->dead = false;
	spare->kcached = true; /* its pages may be in the kernel's cache */
	RB_INSERT(unit_tree, &us->tree, spare);
	us->count++;
	resident_add(l, spare, (int64_t)count_pages(pm, start, end));
	pthread_mutex_lock(&l->lock);
	l->units++;
	atomic_store(&l->ever, true);
	spare->stamp = ++l->clock;
	file_list_locked(l, us, n);
	if (spare->resident)
		list_tail_locked(l, spare);
	pthread_mutex_unlock(&l->lock);
}

static uint64_t clip(uint64_t v, uint64_t limit)
{
	return v < limit ? v : limit;
}

uint64_t units_unmark(struct lru *l, struct units *us, const struct pagemap *pm,
		      uint64_t start, uint64_t end, uint64_t limit_page, struct unit **spare)
{
	uint64_t pages = 0;
	struct unit *u, *next;

	for (u = units_first_from(us, start); u && u->start < end; u = next) {
		uint64_t os = u->start > start ? u->start : start; /* overlap */
		uint64_t oe = u->end < end ? u->end : end;

		next = units_next(us, u);
		if (u->end == UNIT_UNBOUNDED)
			pages += clip(oe, limit_page) > os ? clip(oe, limit_page) - os : 0;
		else
			pages += oe - os;

		if (range_covers(start, end, u)) {                   /* case 1 */
			unit_release(l, us, u);
		} else if (u->start < start && end < u->end) {       /* case 2 */
			struct unit *right = *spare;

			*spare = NULL;
			/* Field by field: u's list links belong to lru->lock,
			 * and a neighbour's unlink may be writing them now. */
			memset(right, 0, sizeof(*right));
			right->inode = u->inode;
			right->start = end;
			right->end = u->end;
			right->priority = u->priority;
			right->age = u->age;
			resident_add(l, u, -(int64_t)count_pages(pm, start, u->end));
			u->end = start;
			RB_INSERT(unit_tree, &us->tree, right);
			us->count++;
			resident_add(l, right, (int64_t)count_pages(pm, end, right->end));
			pthread_mutex_lock(&l->lock);
			l->units++;
			right->stamp = u->stamp;
			right->kcached = u->kcached;
			if (right->resident) {
				if (u->listed)
					list_after_locked(u, right);
				else
					list_by_stamp_locked(l, right);
			}
			if (!u->resident)
				unlist_locked(u);
			pthread_mutex_unlock(&l->lock);
		} else {                                             /* cases 3 and 4 */
			resident_add(l, u, -(int64_t)count_pages(pm, os, oe));
			if (u->start < start)
				u->end = start;
			else
				u->start = end; /* the tree order holds: no unit lies between */
			if (!u->resident) {
				pthread_mutex_lock(&l->lock);
				unlist_locked(u);
				pthread_mutex_unlock(&l->lock);
			}
		}
	}
	return pages;
}

void units_page_added(struct lru *l, struct units *us, uint64_t page, bool used)
{
	struct unit *u = units_find(us, page);

	if (!u)
		return;
	resident_add(l, u, 1);
	if (u->resident == 1) {
		pthread_mutex_lock(&l->lock);
		if (used) {
			/* what units_touch() is about to do anyway */
			u->stamp = ++l->clock;
			list_tail_locked(l, u);
		} else {
			list_by_stamp_locked(l, u);
		}
		pthread_mutex_unlock(&l->lock);
	}
}

void units_pages_dropping(struct lru *l, struct units *us, const struct pagemap *pm,
			  uint64_t first, uint64_t last)
{
	uint64_t end = last == UINT64_MAX ? UINT64_MAX : last + 1;

	for (struct unit *u = units_first_from(us, first); u && u->start < end;
	     u = units_next(us, u)) {
		uint64_t os = u->start > first ? u->start : first;
		uint64_t oe = u->end < end ? u->end : end;
		uint64_t gone = count_pages(pm, os, oe);

		if (!gone)
			continue;
		resident_add(l, u, -(int64_t)gone);
		if (!u->resident) {
			pthread_mutex_lock(&l->lock);
			unlist_locked(u);
			pthread_mutex_unlock(&l->lock);
		}
	}
}

void units_truncate(struct lru *l, struct units *us, uint64_t new_end_page)
{
	struct unit *u, *next;

	/* Pages beyond the end were dropped (and uncounted) already. */
	for (u = units_first_from(us, new_end_page); u; u = next) {
		next = units_next(us, u);
		if (u->end == UNIT_UNBOUNDED)
			continue;
		if (u->start >= new_end_page)
			unit_release(l, us, u);
		else
			u->end = new_end_page;
	}
}

void units_touch(struct lru *l, struct units *us, uint64_t start, uint64_t end)
{
	struct unit *u = units_first_from(us, start);

	if (!u || u->start >= end)
		return;
	pthread_mutex_lock(&l->lock);
	for (; u && u->start < end; u = units_next(us, u)) {
		u->stamp = ++l->clock;
		u->kcached = true;
		if (u->listed)
			list_tail_locked(l, u);
	}
	pthread_mutex_unlock(&l->lock);
}

static int by_stamp(const void *a, const void *b)
{
	uint64_t x = (*(struct unit *const *)a)->stamp, y = (*(struct unit *const *)b)->stamp;

	return x < y ? -1 : x > y;
}

void units_touch_all(struct lru *l, struct units *us)
{
	struct unit **v;
	size_t k = 0;

	if (us->count == 0)
		return;
	v = malloc(us->count * sizeof(*v));
	if (!v) { /* no order to keep then: page order */
		units_touch(l, us, 0, UNIT_UNBOUNDED);
		return;
	}
	for (struct unit *u = units_first_from(us, 0); u && k < us->count; u = units_next(us, u))
		v[k++] = u;
	pthread_mutex_lock(&l->lock);
	qsort(v, k, sizeof(*v), by_stamp);
	for (size_t i = 0; i < k; i++) {
		v[i]->stamp = ++l->clock;
		v[i]->kcached = true;
		if (v[i]->listed)
			list_tail_locked(l, v[i]);
	}
	pthread_mutex_unlock(&l->lock);
	free(v);
}

void units_purged(struct lru *l, struct unit *u)
{
	atomic_fetch_sub(&l->resident, u->resident);
	u->resident = 0;
	pthread_mutex_lock(&l->lock);
	unlist_locked(u);
	pthread_mutex_unlock(&l->lock);
}

void units_clear(struct lru *l, struct units *us)
{
	struct unit *u;

	while ((u = RB_ROOT(&us->tree)) != NULL)
		unit_release(l, us, u);
}

void units_free_all(struct units *us)
{
	struct unit *u;

	while ((u = RB_ROOT(&us->tree)) != NULL) {
		RB_REMOVE(unit_tree, &us->tree, u);
		meta_free(u);
	}
	us->count = 0;
}

struct unit *lru_pick(struct lru *l)
{
	struct unit *u = NULL;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < LRU_LISTS; i++) {
		if (l->heads[i].lru_next != &l->heads[i]) {
			u = l->heads[i].lru_next;
			u->pinned = true;
			break;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return u;
}

size_t lru_probe_pick(struct lru *l, struct unit **out, size_t max)
{
	uint64_t window = atomic_load(&l->units) / LRU_PROBE_SHARE, seen = 0;
	size_t n = 0;

	if (window < 1)
		window = 1;
	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < LRU_LISTS; i++) {
		for (struct unit *u = l->heads[i].lru_next; u != &l->heads[i]; u = u->lru_next) {
			if (seen++ >= window || n == max)
				goto out;
			if (u->kcached && !u->pinned) {
				u->kcached = false;
				u->pinned = true;
				out[n++] = u;
			}
		}
	}
out:
	pthread_mutex_unlock(&l->lock);
	return n;
}

bool lru_unpin(struct lru *l, struct unit *u)
{
	bool alive;

	pthread_mutex_lock(&l->lock);
	u->pinned = false;
	alive = !u->dead;
	pthread_mutex_unlock(&l->lock);
	if (!alive)
		meta_free(u);
	return alive;
}
