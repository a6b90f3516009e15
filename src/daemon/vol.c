/*
 * vol.c - a file's volatile-range operations; see vol.h.
 */
#include "vol.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "meta.h"
#include "pressure.h"
#include "volatilefs.h"

#define PG ARENA_PAGE_SIZE

int vol_check_range(uint64_t offset, uint64_t length, struct vrange *out)
{
	if (offset % PG || offset > (uint64_t)INT64_MAX)
		return -EINVAL;
	if (length) {
		if (length > (uint64_t)INT64_MAX - offset)
			return -EINVAL;
		length = (length + PG - 1) / PG * PG;
		if (length > (uint64_t)INT64_MAX - offset)
			return -EINVAL;
	}
	out->offset = offset;
	out->length = length;
	return 0;
}

static void page_range(const struct vrange *r, uint64_t *start, uint64_t *end)
{
	*start = r->offset / PG;
	*end = r->length ? (r->offset + r->length) / PG : UNIT_UNBOUNDED;
}

static int reg_check(const struct inode *n)
{
	if (S_ISREG(n->mode))
		return 0;
	return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
}

/*
 * After reporting state read under n's lock: the answer waits until the
 * kernel has dropped the pages of the purges it includes (its reply is
 * parked, notify.h).
 */
static void wait_reported(struct fs *fs, struct inode *n, uint64_t seq)
{
	if (seq && fs->hooks.depend)
		fs->hooks.depend(fs->hooks.ctx, n, seq);
}

/*
 * The units that lie wholly at or past the end of n once ranges r are
 * marked, counted as if none absorbed another (an upper bound), and
 * never past VOL_UNITS_PAST_EOF + 1: the walk stops there.  n locked.
 */
static uint64_t past_eof_units(struct inode *n, const struct vrange *r, size_t nr)
{
	uint64_t eof = (n->size + PG - 1) / PG, count = 0;

	for (size_t i = 0; i < nr; i++)
		if (r[i].offset / PG >= eof)
			count++;
	if (!count)
		return 0; /* the call adds none: what is there was allowed */
	for (struct unit *u = units_first_from(&n->units, eof);
	     u && count <= VOL_UNITS_PAST_EOF; u = units_next(&n->units, u))
		if (u->start >= eof)
			count++;
	return count;
}

/*
 * nr units, allocated now (from fs_room's credit): the array, or NULL
 * when even that could not be had.  *ret is -ENOMEM when a unit could
 * not be: the array then holds those before it, NULL after.
 */
static struct unit **alloc_spares(size_t nr, int *ret)
{
	struct unit **spare = calloc(nr ? nr : 1, sizeof(*spare));

	*ret = 0;
	for (size_t i = 0; spare && i < nr; i++) {
		spare[i] = unit_alloc();
		if (!spare[i]) {
			*ret = -ENOMEM;
			break;
		}
	}
	return spare;
}

int vol_mark(struct fs *fs, struct inode *n, const struct vrange *r, size_t nr,
	     unsigned priority, bool age)
{
	struct unit **spare;
	int ret = reg_check(n);

	if (ret)
		return ret;
	if (priority >= UNIT_PRIORITIES)
		return -EINVAL;
	/* The units are metadata, charged against the limit: purge for
	 * them first, as a write does for its pages. */
	ret = fs_room(fs, nr * meta_cost(sizeof(struct unit)));
	if (ret)
		return ret;
	/* Every unit the call needs first: then nothing can fail halfway. */
	spare = alloc_spares(nr, &ret);
	fs_room_end(fs);
	if (!spare)
		return -ENOMEM;
	if (ret)
		goto out_free;
	pthread_rwlock_wrlock(&n->lock);
	fs_sync_locked(fs, n);
	if (past_eof_units(n, r, nr) > VOL_UNITS_PAST_EOF) {
		pthread_rwlock_unlock(&n->lock);
		atomic_fetch_add(&fs->mem.enospc_total, 1);
		ret = -ENOSPC;
		goto out_free;
	}
	for (size_t i = 0; i < nr; i++) {
		uint64_t start, end;

		page_range(&r[i], &start, &end);
		units_mark(&fs->lru, n, &n->units, &n->pages, start, end, priority, age, spare[i]);
		spare[i] = NULL;
	}
	pthread_rwlock_unlock(&n->lock);
out_free:
	for (size_t i = 0; i < nr; i++)
		unit_free(spare[i]);
	free(spare);
	return ret;
}

static int cmp_range(const void *a, const void *b)
{
	const struct vrange *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

static uint64_t range_end(const struct vrange *r)
{
	return r->length ? r->offset + r->length : UINT64_MAX;
}

/*
 * The ranges of one unmark call, sorted and merged into disjoint ones,
 * so that what a range reports cannot depend on what an earlier range of
 * the same call cut (an unbounded unit split by one range would
 * otherwise leave a bounded piece that the next counts past the end of
 * the file).  Returns how many ranges are left in out.
 */
static size_t merge_ranges(const struct vrange *r, size_t nr, struct vrange *out)
{
	size_t n = 0;

	memcpy(out, r, nr * sizeof(*r));
	qsort(out, nr, sizeof(*out), cmp_range);
	for (size_t i = 0; i < nr; i++) {
		if (n && out[i].offset <= range_end(&out[n - 1])) {
			uint64_t end = range_end(&out[i]);

			if (end > range_end(&out[n - 1]))
				out[n - 1].length = end == UINT64_MAX ? 0 : end - out[n - 1].offset;
			continue;
		}
		out[n++] = out[i];
	}
	return n;
}

int vol_unmark(struct fs *fs, struct inode *n, const struct vrange *r_in, size_t nr_in,
	       uint64_t *bytes, int *purged)
{
	return vol_unmark_each(fs, n, r_in, nr_in, bytes, purged, NULL);
}

int vol_unmark_each(struct fs *fs, struct inode *n, const struct vrange *r_in, size_t nr_in,
		    uint64_t *bytes, int *purged, unsigned char *purged_each)
{
	struct vrange *r = NULL;
	size_t nr = 0;
	struct unit **spare;
	uint64_t pages = 0, seq;
	bool any = false;
	int ret = reg_check(n);

	if (ret)
		return ret;
	r = malloc((nr_in ? nr_in : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	nr = merge_ranges(r_in, nr_in, r);
	/* A split keeps one more unit: purge for the spares first, as a
	 * mark does, so that an unmark at the limit is not refused while
	 * volatile data holds memory. */
	ret = fs_room(fs, nr * meta_cost(sizeof(struct unit)));
	if (ret) {
		free(r);
		return ret;
	}
	spare = alloc_spares(nr, &ret);
	fs_room_end(fs);
	if (!spare) {
		free(r);
		return -ENOMEM;
	}
	if (ret)
		goto out_free;
	pthread_rwlock_wrlock(&n->lock);
	fs_sync_locked(fs, n);
	for (size_t i = 0; i < nr; i++) {
		uint64_t start, end, limit = (n->size + PG - 1) / PG;
		uint64_t bstart = r[i].offset;
		uint64_t bend = r[i].length ? r[i].offset + r[i].length : UINT64_MAX;

		/* Purged bytes lie within the file's size by construction. */
		if (extset_intersects(&n->purged, bstart, bend))
			any = true;
		page_range(&r[i], &start, &end);
		pages += units_unmark(&fs->lru, &n->units, &n->pages, start, end, limit, &spare[i]);
	}
	/* Per range as named (an unmark does not change the purged set). */
	for (size_t i = 0; purged_each && i < nr_in; i++)
		purged_each[i] = extset_intersects(&n->purged, r_in[i].offset, range_end(&r_in[i]));
	seq = n->inval_seq;
	pthread_rwlock_unlock(&n->lock);
	wait_reported(fs, n, seq);
	*bytes = pages * PG;
	*purged = any;
out_free:
	for (size_t i = 0; i < nr; i++)
		unit_free(spare[i]);
	free(spare);
	free(r);
	return ret;
}

int vol_purged(struct fs *fs, struct inode *n, uint64_t offset, uint64_t length,
	       struct volatilefs_extent *out, size_t max, uint64_t *count)
{
	uint64_t end = length && length <= UINT64_MAX - offset ? offset + length : UINT64_MAX;
	const struct extent *e;
	uint64_t seq;
	size_t i = 0;
	int ret = reg_check(n);

	if (ret)
		return ret;
	fs_sync(fs, n);
	pthread_rwlock_rdlock(&n->lock);
	*count = extset_count_in(&n->purged, offset, end);
	for (e = extset_first_from(&n->purged, offset); e && e->start < end && i < max;
	     e = extset_next(&n->purged, e), i++) {
		uint64_t s = e->start > offset ? e->start : offset;
		uint64_t t = e->end < end ? e->end : end;

		out[i].offset = s;
		out[i].length = t - s;
	}
	seq = n->inval_seq;
	pthread_rwlock_unlock(&n->lock);
	wait_reported(fs, n, seq);
	return 0;
}

int vol_forget_purged(struct fs *fs, struct inode *n)
{
	int ret = reg_check(n);

	(void)fs;
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&n->lock);
	extset_clear(&n->purged);
	pthread_rwlock_unlock(&n->lock);
	return 0;
}

bool vol_has_purged(struct fs *fs, struct inode *n)
{
	bool has;

	(void)fs;
	if (!S_ISREG(n->mode))
		return false;
	fs_sync(fs, n);
	pthread_rwlock_rdlock(&n->lock);
	has = !extset_empty(&n->purged);
	pthread_rwlock_unlock(&n->lock);
	return has;
}

int vol_format_ranges(struct fs *fs, struct inode *n, struct strbuf *b)
{
	uint64_t seq;
	int ret = reg_check(n);

	if (ret)
		return ret;
	fs_sync(fs, n);
	pthread_rwlock_rdlock(&n->lock);
	for (struct unit *u = units_first_from(&n->units, 0); u && !ret;
	     u = units_next(&n->units, u)) {
		uint64_t off = u->start * PG;
		uint64_t len = u->end == UNIT_UNBOUNDED ? 0 : (u->end - u->start) * PG;
		uint64_t bend = len ? off + len : UINT64_MAX;
		bool purged = extset_intersects(&n->purged, off, bend);

		ret = strbuf_printf(b, "%" PRIu64 ":%" PRIu64 " %s priority=%u%s\n", off, len,
				    purged ? "purged" : "volatile", u->priority,
				    u->age ? " age" : "");
	}
	seq = n->inval_seq;
	pthread_rwlock_unlock(&n->lock);
	wait_reported(fs, n, seq);
	return ret;
}

int vol_format_purged(struct fs *fs, struct inode *n, struct strbuf *b)
{
	uint64_t seq;
	int ret = reg_check(n);

	if (ret)
		return ret;
	fs_sync(fs, n);
	pthread_rwlock_rdlock(&n->lock);
	for (const struct extent *e = extset_first_from(&n->purged, 0); e && !ret;
	     e = extset_next(&n->purged, e))
		ret = strbuf_printf(b, "%" PRIu64 ":%" PRIu64 "\n", e->start, e->end - e->start);
	seq = n->inval_seq;
	pthread_rwlock_unlock(&n->lock);
	wait_reported(fs, n, seq);
	return ret;
}

int vol_format_stats(struct fs *fs, struct strbuf *b)
{
	uint64_t units;

	int ret;

	units = atomic_load(&fs->lru.units);
	ret = strbuf_printf(b,
		"memory_limit=%" PRIu64 "\n"
		"memory_low=%" PRIu64 "\n"
		"rss=%" PRIu64 "\n"
		"data_bytes=%" PRIu64 "\n"
		"volatile_bytes=%" PRIu64 "\n"
		"purged_bytes_total=%" PRIu64 "\n"
		"purges_total=%" PRIu64 "\n"
		"volatile_units=%" PRIu64 "\n"
		"files=%" PRIu64 "\n"
		"enospc_total=%" PRIu64 "\n",
		atomic_load(&fs->mem.limit), atomic_load(&fs->mem.low),
		mem_rss_kernel(&fs->mem),
		arena_pages(&fs->arena) * PG + (fs->passthrough ? shm_used(&fs->shm) : 0),
		atomic_load(&fs->lru.resident) * PG, atomic_load(&fs->purged_bytes_total),
		atomic_load(&fs->purges_total), units, itable_count(&fs->itable),
		atomic_load(&fs->mem.enospc_total));
	if (!ret) {
		char names[64];

		pressure_format_sources(atomic_load(&fs->pressure_sources), names, sizeof(names));
		ret = strbuf_printf(b,
			"pressure_purges_total=%" PRIu64 "\n"
			"pressure_bytes_total=%" PRIu64 "\n"
			"pressure_sources=%s\n",
			atomic_load(&fs->pressure_purges_total),
			atomic_load(&fs->pressure_bytes_total), names);
	}
	/* The data path (DESIGN section 11). */
	if (!ret)
		ret = strbuf_printf(b, "passthrough=%s\nshared_bytes=%" PRIu64 "\n",
				    fs->passthrough ? "on" : "off", shm_used(&fs->shm));
	/* Cache directories with auto=unlink add their counter (DESIGN section 8). */
	if (!ret && atomic_load(&fs->auto_unlink_seen))
		ret = strbuf_printf(b, "files_unlinked_total=%" PRIu64 "\n",
				    atomic_load(&fs->files_unlinked_total));
	return ret;
}
