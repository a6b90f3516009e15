/*
 * file.h - the data of regular files: read, write, truncate, fallocate,
 * punch, SEEK_DATA/SEEK_HOLE over a node's page map.
 *
 * A byte at offset o lives in page o / 4096 of the node's pagemap at
 * o % 4096.  A missing page is a hole and reads as zeros; pages are
 * allocated by writes and fallocate only.  Bytes of a page beyond the
 * file size are always zero (truncate clears them), so growing a file
 * never exposes old data.  Every new page, and the page-map nodes it
 * may need, is reserved against the memory limit before it is allocated
 * (file_reserve_locked, mem.h): a write that cannot reserve fails with
 * ENOSPC and changes nothing.  Costs follow the pages a call holds or
 * allocates, never the width of the range it names.
 *
 * Locking: every function here needs the node's lock, held for writing
 * by the ones that change the file (write, truncate, fallocate) and at
 * least for reading by the others.
 *
 * This is the first store of file data (store.h): arena_store below is
 * the table the filesystem calls these functions through.
 */
#ifndef VOLATILEFS_FILE_H
#define VOLATILEFS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "inode.h"
#include "mem.h"
#include "store.h"

struct fs;

/* The arena store: the functions below as a struct store_ops (store.h). */
extern const struct store_ops arena_store;

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
 * The bytes [off, off + size), clipped at the end of the file, without
 * copying: iov[] gets pointers to the bytes themselves (holes point at a
 * page of zeros) and *niov their number, at most FILE_READ_IOV_MAX(size);
 * valid while the lock is held.  Returns the byte count (0 at or past
 * EOF), or -EIO when purged_read=eio and a byte of the range is in the
 * purged set.  Purged bytes read as zeros otherwise: their pages are gone.
 */
ssize_t file_read_iov_locked(struct fs *fs, struct inode *n, uint64_t off, size_t size,
			     struct iovec *iov, size_t *niov);
/* iovecs file_read_iov_locked may need for size bytes. */
#define FILE_READ_IOV_MAX(size) ((size) / ARENA_PAGE_SIZE + 2)
/*
 * Writes size bytes at off; they leave the purged set (only those that
 * are not zero when mapped: the write-back of stores through a mapping,
 * which do not say which bytes of a page they wrote), and with
 * write_policy=unmark the pages
 * they touch become non-volatile.  Bytes written (all of them), or
 * -EFBIG, -ENOSPC (the caller may purge and retry), -ENOMEM.
 */
ssize_t file_write_locked(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			  size_t size, bool mapped);
/*
 * A reservation for giving memory to pages (mem.h): how many pages it
 * still covers and how many bytes of page-map nodes.
 */
struct file_resv {
	uint64_t pages;
	uint64_t meta;
};
/*
 * Reserve what giving memory to every page of [first, last] that has
 * none needs: zero (r set; nothing reserved when nothing is missing) or
 * -ENOSPC.  The cost follows the pages held in the range, not its width.
 */
int file_reserve_locked(struct fs *fs, struct inode *n, uint64_t first, uint64_t last,
			struct file_resv *r);
/* Give back what r still holds. */
void file_resv_release(struct fs *fs, struct file_resv *r);

/* Pages a write of size bytes at off would allocate. */
uint64_t file_pages_needed_locked(struct inode *n, uint64_t off, uint64_t size);
/*
 * Zero or -EFBIG.  Purged bytes at and beyond the new size are
 * forgotten; bounded units are cut at the new size rounded up to a page.
 */
int file_truncate_locked(struct fs *fs, struct inode *n, uint64_t size);
/*
 * fallocate, in steps, so that the file's lock is not held across work
 * that follows the size of the range: begin validates and reserves
 * everything the range needs (mode 0 or FALLOC_FL_KEEP_SIZE), or does a
 * punch (FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE: punched bytes leave
 * the purged set) at once.  It returns 1 when done (a punch), 0 when
 * steps follow, or -errno (nothing changed).  Each step gives memory to
 * at most FILE_FALLOC_BATCH pages and returns 0 (more to do: the caller
 * may drop the lock and take it again), 1 when done (the size is set
 * then), or -errno (the pages given so far stay, as zeros).  The caller
 * releases fa->resv at the end, whatever happened.
 */
#define FILE_FALLOC_BATCH (16384u) /* pages: 64 MiB */
struct file_falloc {
	uint64_t first, last, pos; /* pages: the range, and the next to fill */
	uint64_t end;              /* off + len, for the size */
	bool keep_size;
	struct file_resv resv;
};
int file_fallocate_begin_locked(struct fs *fs, struct inode *n, int mode, uint64_t off,
				uint64_t len, struct file_falloc *fa);
int file_fallocate_step_locked(struct fs *fs, struct inode *n, struct file_falloc *fa);
/* Drop whole pages [first, last] and give their memory back. */
void file_drop_pages_locked(struct fs *fs, struct inode *n, uint64_t first, uint64_t last);
/* whence: SEEK_DATA or SEEK_HOLE.  The offset, or -ENXIO / -EINVAL. */
int64_t file_seek_locked(struct inode *n, uint64_t off, int whence);

#endif
