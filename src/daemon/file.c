/*
 * file.c - regular file data; see file.h.
 */
#include "file.h"
#include "fs.h"
#include "meta.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <unistd.h>

#define PG ARENA_PAGE_SIZE

void page_batch_flush(struct page_batch *b)
{
	arena_free_batch(b->arena, b->pages, b->n);
	b->n = 0;
}

void page_batch_release(void *page, void *ctx)
{
	struct page_batch *b = ctx;

	if (b->n == sizeof(b->pages) / sizeof(b->pages[0]))
		page_batch_flush(b);
	b->pages[b->n++] = page;
}

/* What a hole reads as. */
static const char zero_page[PG];

ssize_t file_read_iov_locked(struct fs *fs, struct inode *n, uint64_t off, size_t size,
			     struct iovec *iov, size_t *niov)
{
	size_t done = 0, cnt = 0;

	*niov = 0;
	if (off >= n->size)
		return 0;
	if (size > n->size - off)
		size = n->size - off;
	if (fs->purged_eio && extset_intersects(&n->purged, off, off + size))
		return -EIO;
	while (done < size) {
		uint64_t pos = off + done;
		size_t in = pos % PG, chunk = PG - in;
		char *page = PM_PAGE(pagemap_get(&n->pages, pos / PG));
		const char *base = page ? page + in : zero_page + in;

		if (chunk > size - done)
			chunk = size - done;
		/* Pages next to each other in the arena make one piece. */
		if (page && cnt && (const char *)iov[cnt - 1].iov_base + iov[cnt - 1].iov_len == base)
			iov[cnt - 1].iov_len += chunk;
		else
			iov[cnt++] = (struct iovec){ .iov_base = (void *)base, .iov_len = chunk };
		done += chunk;
	}
	if (size)
		units_touch(&fs->lru, &n->units, off / PG, (off + size - 1) / PG + 1);
	*niov = cnt;
	return (ssize_t)done;
}

/*
 * Pages in [first, last] that hold no memory yet: the width of the range
 * minus the pages held there, which are counted over the page map's
 * nodes, so the cost follows the memory, not the range.
 */
static uint64_t pages_missing(struct inode *n, uint64_t first, uint64_t last)
{
	return last - first + 1 - pagemap_count(&n->pages, first, last);
}

int file_reserve_locked(struct fs *fs, struct inode *n, uint64_t first, uint64_t last,
			struct file_resv *r)
{
	uint64_t missing = pages_missing(n, first, last);
	uint64_t meta = pagemap_fill_bound(first, last, missing,
					   meta_cost(pagemap_node_size()));
	int ret;

	r->pages = r->meta = 0;
	if (!missing)
		return 0;
	/* More pages than the limit holds cannot fit, whatever is purged
	 * (and their byte count could overflow). */
	if (missing > atomic_load(&fs->mem.limit) / PG)
		return -ENOSPC;
	ret = mem_reserve(&fs->mem, missing * PG + meta);
	if (ret < 0)
		return ret;
	r->pages = missing;
	r->meta = meta;
	return 0;
}

void file_resv_release(struct fs *fs, struct file_resv *r)
{
	mem_unreserve(&fs->mem, r->pages * PG + r->meta);
	r->pages = r->meta = 0;
}

/*
 * What a write puts into the range: bytes [off, off + size) of the file
 * come from buf.  NULL for a range that only gets memory (fallocate).
 */
struct fill_src {
	const char *buf;
	uint64_t off;
	size_t size;
};

/* Copy the source's part of page index i into the resident page p. */
static void page_copy_in(char *p, uint64_t i, const struct fill_src *src)
{
	uint64_t from = i * PG > src->off ? i * PG : src->off;
	uint64_t to = (i + 1) * PG < src->off + src->size ? (i + 1) * PG : src->off + src->size;

	memcpy(p + from % PG, src->buf + (from - src->off), to - from);
}

/*
 * Make the new pages[0..n) of page indexes idx[0..n) resident, each
 * holding its part of src (zeros elsewhere).  A page wholly inside the
 * source is filled from it in place, a run of them in one call, so its
 * bytes are written once and never cleared first; a page the source
 * covers in part is put together in a buffer first.  Both arrays ascend.
 */
static int pages_fill_new(struct arena *ar, void **pages, const uint64_t *idx, size_t n,
			  const struct fill_src *src)
{
	size_t j, run;

	for (j = 0; j < n; j += run) {
		char *start = pages[j];
		bool whole = src && idx[j] * PG >= src->off &&
			     (idx[j] + 1) * PG <= src->off + src->size;
		const char *from = whole ? src->buf + (idx[j] * PG - src->off) : NULL;
		int ret;

		run = 1;
		if (!src || whole) /* a page the source covers in part goes alone */
			while (j + run < n && (char *)pages[j + run] == start + run * PG &&
			       idx[j + run] == idx[j] + run &&
			       (!whole || (idx[j + run] + 1) * PG <= src->off + src->size))
				run++;
		if (src && !whole) {
			char tmp[PG] __attribute__((aligned(64)));

			memset(tmp, 0, sizeof(tmp));
			page_copy_in(tmp, idx[j], src);
			ret = arena_fill(ar, start, tmp, PG);
		} else {
			ret = arena_fill(ar, start, from, run * PG);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * Give every page in [first, last] memory, out of reservation r (its
 * pages and, for new page-map nodes, its metadata credit), and, when src
 * is given, write its bytes into every page of the range, old or new.
 * Pages come from the arena in batches and are made resident before
 * they are added (the accounting counts every handed-out page as
 * resident).  Returns zero, -EAGAIN when more pages are missing than r
 * holds (the range changed since it was reserved: reserve again), or
 * -ENOMEM; the pages already given stay, as do the bytes written into
 * them (a failed write may leave a prefix of its range written).
 */
#define FILL_BATCH 256

static int pages_fill(struct fs *fs, struct inode *n, uint64_t first, uint64_t last,
		      bool used, struct file_resv *r, const struct fill_src *src)
{
	struct mem *m = &fs->mem;
	uint64_t idx[FILL_BATCH];
	uintptr_t tags[FILL_BATCH];
	void *pages[FILL_BATCH];
	uint64_t i = first;
	int ret = 0;

	meta_credit_begin(r->meta);
	while (i <= last && ret == 0) {
		size_t want = 0, got, j;

		/* The next missing pages: those before the next held one;
		 * a held page on the way gets its bytes at once. */
		while (i <= last && want < FILL_BATCH) {
			uint64_t held;
			uintptr_t e;

			if (!pagemap_next(&n->pages, i, true, &held, &e) || held > last)
				held = last + 1;
			for (; i < held && want < FILL_BATCH; i++) {
				tags[want] = PM_TAGS(pagemap_get(&n->pages, i));
				idx[want++] = i;
			}
			if (i == held && held <= last) {
				if (src)
					page_copy_in(PM_PAGE(e), i, src);
				i++;
			}
		}
		if (!want)
			break;
		if (want > r->pages) {
			ret = -EAGAIN;
			break;
		}
		got = arena_take_many(m->arena, pages, want);
		r->pages -= got; /* taken: from now on they are the arena's to uncharge */
		ret = pages_fill_new(m->arena, pages, idx, got, src);
		for (j = 0; j < got && ret == 0; j++) {
			ret = pagemap_set(&n->pages, idx[j], (uintptr_t)pages[j] | tags[j], NULL);
			if (ret < 0)
				break;
			units_page_added(&fs->lru, &n->units, idx[j], used);
		}
		if (ret < 0)
			arena_free_batch(m->arena, pages + j, got - j);
		else if (got < want)
			ret = -ENOMEM;
	}
	r->meta = meta_credit_end();
	return ret;
}

uint64_t file_pages_needed_locked(struct inode *n, uint64_t off, uint64_t size)
{
	if (size == 0 || off > FILE_MAX_SIZE || size > FILE_MAX_SIZE - off)
		return 0;
	return pages_missing(n, off / PG, (off + size - 1) / PG);
}

ssize_t file_write_locked(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			  size_t size, bool mapped)
{
	struct file_resv r;
	struct unit *spare = NULL;
	uint64_t first, last;
	int ret;

	if (size == 0)
		return 0;
	if (off > FILE_MAX_SIZE || size > FILE_MAX_SIZE - off)
		return -EFBIG;
	first = off / PG;
	last = (off + size - 1) / PG;
	ret = file_reserve_locked(fs, n, first, last, &r);
	if (ret < 0)
		return ret;
	/* A write inside a purged extent splits it: one extent more. */
	if (!mapped && extset_intersects(&n->purged, off, off + size)) {
		uint64_t ext = meta_cost(sizeof(struct extent));

		ret = mem_reserve(&fs->mem, ext);
		if (ret < 0) {
			file_resv_release(fs, &r);
			return ret;
		}
		r.meta += ext;
	}
	if (fs->write_unmark && n->units.count) {
		spare = unit_alloc();
		if (!spare) {
			file_resv_release(fs, &r);
			return -ENOMEM;
		}
	}
	/* Under write_policy=unmark the written pages leave their units
	 * below: no unit is used by this write. */
	ret = pages_fill(fs, n, first, last, !spare, &r,
			 &(struct fill_src){ .buf = buf, .off = off, .size = size });
	if (ret == 0) {
		meta_credit_begin(r.meta);
		if (!mapped)
			ret = extset_remove(&n->purged, off, off + size);
		else /* without memory for a split, bytes stay reported: allowed */
			(void)extset_remove_nonzero(&n->purged, off, (const uint8_t *)buf, size);
		r.meta = meta_credit_end();
	}
	file_resv_release(fs, &r);
	if (ret < 0) {
		unit_free(spare);
		return ret;
	}
	if (spare) {
		units_unmark(&fs->lru, &n->units, &n->pages, first, last + 1, 0, &spare);
		unit_free(spare);
	}
	if (off + size > n->size)
		n->size = off + size;
	units_touch(&fs->lru, &n->units, first, last + 1);
	return (ssize_t)size;
}

/* Zero [from, to) inside one page, if that page holds memory. */
static void page_zero(struct inode *n, uint64_t from, uint64_t to)
{
	char *page;

	if (from >= to)
		return;
	page = PM_PAGE(pagemap_get(&n->pages, from / PG));
	if (page)
		memset(page + from % PG, 0, to - from);
}

void file_drop_pages_locked(struct fs *fs, struct inode *n, uint64_t first, uint64_t last)
{
	struct page_batch b = { .arena = &fs->arena };

	if (first > last)
		return;
	units_pages_dropping(&fs->lru, &n->units, &n->pages, first, last);
	pagemap_remove_range(&n->pages, first, last, page_batch_release, &b);
	page_batch_flush(&b);
}

int file_truncate_locked(struct fs *fs, struct inode *n, uint64_t size)
{
	uint64_t keep = (size + PG - 1) / PG; /* pages still needed */

	if (size > FILE_MAX_SIZE)
		return -EFBIG;
	if (size < n->size) {
		if (size % PG)
			page_zero(n, size, (size / PG + 1) * PG);
		file_drop_pages_locked(fs, n, keep, PM_MAX_INDEX);
		/* Cutting a tail never splits an extent: this cannot fail. */
		extset_remove(&n->purged, size, UINT64_MAX);
		units_truncate(&fs->lru, &n->units, keep);
	}
	n->size = size;
	return 0;
}

static int file_punch_locked(struct fs *fs, struct inode *n, uint64_t off, uint64_t len)
{
	uint64_t end = off + len; /* exclusive */
	uint64_t first = (off + PG - 1) / PG, last_excl = end / PG;
	int ret = extset_remove(&n->purged, off, end);

	if (ret)
		return ret;

	if (first > last_excl) {
		/* Inside one page. */
		page_zero(n, off, end);
		return 0;
	}
	page_zero(n, off, first * PG);
	page_zero(n, last_excl * PG, end);
	if (first < last_excl)
		file_drop_pages_locked(fs, n, first, last_excl - 1);
	return 0;
}

int file_fallocate_begin_locked(struct fs *fs, struct inode *n, int mode, uint64_t off,
				uint64_t len, struct file_falloc *fa)
{
	int ret;

	memset(fa, 0, sizeof(*fa));
	if (len == 0)
		return -EINVAL;
	if (off > FILE_MAX_SIZE || len > FILE_MAX_SIZE - off)
		return -EFBIG;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		ret = file_punch_locked(fs, n, off, len);
		return ret < 0 ? ret : 1;
	}
	if (mode != 0 && mode != FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	fa->first = fa->pos = off / PG;
	fa->last = (off + len - 1) / PG;
	fa->end = off + len;
	fa->keep_size = mode & FALLOC_FL_KEEP_SIZE;
	if (fa->last > PM_MAX_INDEX)
		return -EFBIG;
	ret = file_reserve_locked(fs, n, fa->first, fa->last, &fa->resv);
	return ret < 0 ? ret : 0;
}

int file_fallocate_step_locked(struct fs *fs, struct inode *n, struct file_falloc *fa)
{
	uint64_t stop = fa->last - fa->pos < FILE_FALLOC_BATCH ? fa->last
							       : fa->pos + FILE_FALLOC_BATCH - 1;
	int ret = pages_fill(fs, n, fa->pos, stop, false, &fa->resv, NULL);

	if (ret == -EAGAIN) {
		/* Pages counted as held when we reserved went meanwhile (a
		 * truncate or punch while the lock was dropped): reserve
		 * what this batch still needs on top. */
		struct file_resv more;

		ret = file_reserve_locked(fs, n, fa->pos, stop, &more);
		if (ret < 0)
			return ret;
		fa->resv.pages += more.pages;
		fa->resv.meta += more.meta;
		ret = pages_fill(fs, n, fa->pos, stop, false, &fa->resv, NULL);
	}
	if (ret < 0)
		return ret;
	if (stop < fa->last) {
		fa->pos = stop + 1;
		return 0;
	}
	if (!fa->keep_size && fa->end > n->size)
		n->size = fa->end;
	return 1;
}

int64_t file_seek_locked(struct inode *n, uint64_t off, int whence)
{
	uint64_t idx;
	uintptr_t e;

	if (off >= n->size)
		return -ENXIO;
	if (whence == SEEK_DATA) {
		if (!pagemap_next(&n->pages, off / PG, true, &idx, &e))
			return -ENXIO;
		if (idx * PG >= n->size)
			return -ENXIO;
		return (int64_t)(idx * PG > off ? idx * PG : off);
	}
	if (whence == SEEK_HOLE) {
		idx = off / PG;
		while (idx * PG < n->size && PM_PAGE(pagemap_get(&n->pages, idx)))
			idx++;
		if (idx * PG >= n->size)
			return (int64_t)n->size;
		return (int64_t)(idx * PG > off ? idx * PG : off);
	}
	return -EINVAL;
}

static uint64_t arena_pages_held(struct inode *n, uint64_t first, uint64_t last)
{
	return first > last ? 0 : pagemap_count(&n->pages, first, last);
}

static void arena_free_range(struct fs *fs, struct inode *n, uint64_t first, uint64_t last)
{
	struct page_batch b = { .arena = &fs->arena };

	pagemap_remove_range(&n->pages, first, last, page_batch_release, &b);
	page_batch_flush(&b);
}

static uint64_t arena_bytes_held(struct inode *n)
{
	return n->pages.npages * PG;
}

const struct store_ops arena_store = {
	.read_iov = file_read_iov_locked,
	.write = file_write_locked,
	.pages_needed = file_pages_needed_locked,
	.truncate = file_truncate_locked,
	.falloc_begin = file_fallocate_begin_locked,
	.falloc_step = file_fallocate_step_locked,
	.resv_release = file_resv_release,
	.seek = file_seek_locked,
	.pages_held = arena_pages_held,
	.free_range = arena_free_range,
	.bytes_held = arena_bytes_held,
};
