/*
 * file.c - regular file data; see file.h.
 */
#include "file.h"
#include "fs.h"

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

ssize_t file_read_locked(struct fs *fs, struct inode *n, uint64_t off, size_t size,
			 char *buf)
{
	size_t done = 0;

	if (off >= n->size)
		return 0;
	if (size > n->size - off)
		size = n->size - off;
	if (fs->purged_eio && extset_intersects(&n->purged, off, off + size))
		return -EIO;
	while (done < size) {
		uint64_t pos = off + done;
		size_t in = pos % PG, chunk = PG - in;
		void *page = PM_PAGE(pagemap_get(&n->pages, pos / PG));

		if (chunk > size - done)
			chunk = size - done;
		if (page)
			memcpy(buf + done, (char *)page + in, chunk);
		else
			memset(buf + done, 0, chunk);
		done += chunk;
	}
	if (size)
		units_touch(&fs->lru, &n->units, off / PG, (off + size - 1) / PG + 1);
	return (ssize_t)done;
}

/* Pages in [first, last] that hold no memory yet. */
static uint64_t pages_missing(struct inode *n, uint64_t first, uint64_t last)
{
	uint64_t missing = 0;

	for (uint64_t i = first; i <= last; i++)
		if (!PM_PAGE(pagemap_get(&n->pages, i)))
			missing++;
	return missing;
}

/*
 * Give every page in [first, last] memory; the caller has charged them.
 * Pages come from the arena in batches, resident already (the accounting
 * counts every handed-out page as resident).  On -ENOMEM the pages
 * already given stay (they read as zeros, which they were).
 */
#define FILL_BATCH 256

static int pages_fill(struct fs *fs, struct inode *n, uint64_t first, uint64_t last,
		      bool used)
{
	struct mem *m = &fs->mem;
	uint64_t idx[FILL_BATCH];
	uintptr_t tags[FILL_BATCH];
	void *pages[FILL_BATCH];
	uint64_t i = first;

	while (i <= last) {
		size_t want = 0, got, j;

		for (; i <= last && want < FILL_BATCH; i++) {
			uintptr_t e = pagemap_get(&n->pages, i);

			if (!PM_PAGE(e)) {
				tags[want] = PM_TAGS(e);
				idx[want++] = i;
			}
		}
		if (!want)
			break;
		got = arena_alloc_many(m->arena, pages, want);
		for (j = 0; j < got; j++) {
			int ret = pagemap_set(&n->pages, idx[j], (uintptr_t)pages[j] | tags[j], NULL);

			if (ret < 0) {
				arena_free_batch(m->arena, pages + j, got - j);
				return ret;
			}
			units_page_added(&fs->lru, &n->units, idx[j], used);
		}
		if (got < want)
			return -ENOMEM;
	}
	return 0;
}

uint64_t file_pages_needed_locked(struct inode *n, uint64_t off, uint64_t size)
{
	if (size == 0 || off > FILE_MAX_SIZE || size > FILE_MAX_SIZE - off)
		return 0;
	return pages_missing(n, off / PG, (off + size - 1) / PG);
}

ssize_t file_write_locked(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			  size_t size)
{
	struct unit *spare = NULL;
	uint64_t first, last;
	size_t done = 0;
	int ret;

	if (size == 0)
		return 0;
	if (off > FILE_MAX_SIZE || size > FILE_MAX_SIZE - off)
		return -EFBIG;
	first = off / PG;
	last = (off + size - 1) / PG;
	ret = mem_charge(&fs->mem, pages_missing(n, first, last));
	if (ret < 0)
		return ret;
	if (fs->write_unmark && n->units.count) {
		spare = unit_alloc();
		if (!spare)
			return -ENOMEM;
	}
	/* Under write_policy=unmark the written pages leave their units
	 * below: no unit is used by this write. */
	ret = pages_fill(fs, n, first, last, !spare);
	if (ret == 0)
		ret = extset_remove(&n->purged, off, off + size);
	if (ret < 0) {
		unit_free(spare);
		return ret;
	}
	if (spare) {
		units_unmark(&fs->lru, &n->units, &n->pages, first, last + 1, 0, &spare);
		unit_free(spare);
	}
	while (done < size) {
		uint64_t pos = off + done;
		size_t in = pos % PG, chunk = PG - in;
		char *page = PM_PAGE(pagemap_get(&n->pages, pos / PG));

		if (chunk > size - done)
			chunk = size - done;
		memcpy(page + in, buf + done, chunk);
		done += chunk;
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

int file_fallocate_locked(struct fs *fs, struct inode *n, int mode, uint64_t off,
			  uint64_t len)
{
	uint64_t first, last;
	int ret;

	if (len == 0)
		return -EINVAL;
	if (off > FILE_MAX_SIZE || len > FILE_MAX_SIZE - off)
		return -EFBIG;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return file_punch_locked(fs, n, off, len);
	if (mode != 0 && mode != FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	first = off / PG;
	last = (off + len - 1) / PG;
	if (last > PM_MAX_INDEX)
		return -EFBIG;
	ret = mem_charge(&fs->mem, pages_missing(n, first, last));
	if (ret < 0)
		return ret;
	ret = pages_fill(fs, n, first, last, false);
	if (ret < 0)
		return ret;
	if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > n->size)
		n->size = off + len;
	return 0;
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
