/*
 * file.h - the data of regular files: read, write, truncate, fallocate,
 * punch, SEEK_DATA/SEEK_HOLE over a node's page map.
 *
 * A byte at offset o lives in page o / 4096 of the node's pagemap at
 * o % 4096.  A missing page is a hole and reads as zeros; pages are
 * allocated by writes and fallocate only.  Bytes of a page beyond the
 * file size are always zero (truncate clears them), so growing a file
 * never exposes old data.  Every new page is charged against the memory
 * limit first (mem_charge): a write that cannot be charged fails with
 * ENOSPC and changes nothing.
 *
 * Locking: every function here needs the node's lock, held for writing
 * by the ones that change the file (write, truncate, fallocate) and at
 * least for reading by the others.
 */
#ifndef VOLATILEFS_FILE_H
#define VOLATILEFS_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inode.h"
#include "mem.h"

struct fs;

/* Largest file size: the page map's reach (and what off_t can say). */
#define FILE_MAX_SIZE ((uint64_t)INT64_MAX)

/* Page releaser that batches pages for arena_free_batch. */
struct page_batch {
	struct arena *arena;
	size_t n;
	void *pages[256];
};
void page_batch_release(void *page, void *ctx); /* ctx: struct page_batch */
void page_batch_flush(struct page_batch *b);

/*
 * Copies up to size bytes at off into buf; returns the count (0 at or
 * past EOF), or -EIO when purged_read=eio and a byte of the range is in
 * the purged set.  Purged bytes read as zeros otherwise: their pages
 * are gone.
 */
ssize_t file_read_locked(struct fs *fs, struct inode *n, uint64_t off, size_t size,
			 char *buf);
/*
 * Writes size bytes at off; they leave the purged set, and with
 * write_policy=unmark the pages they touch become non-volatile.  Bytes
 * written (all of them), or -EFBIG, -ENOSPC (the caller may purge and
 * retry), -ENOMEM.
 */
ssize_t file_write_locked(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			  size_t size);
/* Pages a write of size bytes at off would allocate. */
uint64_t file_pages_needed_locked(struct inode *n, uint64_t off, uint64_t size);
/*
 * Zero or -EFBIG.  Purged bytes at and beyond the new size are
 * forgotten; bounded units are cut at the new size rounded up to a page.
 */
int file_truncate_locked(struct fs *fs, struct inode *n, uint64_t size);
/*
 * mode: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE.
 * Punched bytes leave the purged set.  Zero or -errno.
 */
int file_fallocate_locked(struct fs *fs, struct inode *n, int mode, uint64_t off,
			  uint64_t len);
/* Drop whole pages [first, last] and give their memory back. */
void file_drop_pages_locked(struct fs *fs, struct inode *n, uint64_t first, uint64_t last);
/* whence: SEEK_DATA or SEEK_HOLE.  The offset, or -ENXIO / -EINVAL. */
int64_t file_seek_locked(struct inode *n, uint64_t off, int whence);

#endif
