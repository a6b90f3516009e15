/*
 * store.h - where a regular file's data lives: one interface, so that a
 * second kind of storage (the shared-memory store of DESIGN section 11)
 * is a second table of these functions, not a rewrite of the
 * filesystem.
 *
 * The filesystem (fs_data.c, fs_attr.c) and the purge (evict.c) reach
 * file data only through fs->store.  The first implementation is the
 * arena store, file.c (arena_store, file.h): 4 KiB arena pages in a
 * per-file page map, each reserved against the limit before it is
 * allocated.  What each function does, its errors and its costs are
 * documented at that implementation's function (file.h), named beside
 * each member below.
 *
 * Locking: every function needs the file's lock (n->lock), held for
 * writing by the ones that change the file and at least for reading by
 * the others; none takes a lock of the namespace or calls up a layer.
 *
 * The second implementation is the shared-memory store, shmfile.c
 * (DESIGN section 11): the same page map with placeholder entries, the
 * bytes in a backing file the kernel serves itself.
 *
 * Not yet behind this interface (the next step of the seam): the
 * volatile units (units.h) and the node (inode.h) still see the page
 * map itself: units_mark, units_unmark and units_pages_dropping count a
 * unit's resident pages in it, inode.c creates and frees it and counts
 * st_blocks from it.  A second store must either keep a page map of
 * what it holds or those calls must move to pages_held.
 */
#ifndef VOLATILEFS_STORE_H
#define VOLATILEFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fs;
struct inode;
struct iovec;
struct file_falloc;
struct file_resv;

struct store_ops {
	/* Read without a copy: file_read_iov_locked. */
	ssize_t (*read_iov)(struct fs *fs, struct inode *n, uint64_t off, size_t size,
			    struct iovec *iov, size_t *niov);
	/*
	 * Write: file_write_locked; pages_needed: what a refused write asks
	 * room for.  mapped: the write-back of stores through a mapping,
	 * which takes only bytes that are not zero out of the purged set
	 * (fs.h, fs_writeback).
	 */
	ssize_t (*write)(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			 size_t size, bool mapped);
	uint64_t (*pages_needed)(struct inode *n, uint64_t off, uint64_t size);
	/* Truncate: file_truncate_locked. */
	int (*truncate)(struct fs *fs, struct inode *n, uint64_t size);
	/* Allocate or punch, in steps: file_fallocate_begin_locked, _step_locked, file_resv_release. */
	int (*falloc_begin)(struct fs *fs, struct inode *n, int mode, uint64_t off, uint64_t len,
			    struct file_falloc *fa);
	int (*falloc_step)(struct fs *fs, struct inode *n, struct file_falloc *fa);
	void (*resv_release)(struct fs *fs, struct file_resv *r);
	/* SEEK_DATA, SEEK_HOLE: file_seek_locked. */
	int64_t (*seek)(struct inode *n, uint64_t off, int whence);
	/* Fill state: how many of the pages [first, last] hold memory. */
	uint64_t (*pages_held)(struct inode *n, uint64_t first, uint64_t last);
	/*
	 * Free the memory of pages [first, last] (a purge: the caller has
	 * already settled the units' counts, units_purged).
	 */
	void (*free_range)(struct fs *fs, struct inode *n, uint64_t first, uint64_t last);
	/* Bytes of memory the file's data holds. */
	uint64_t (*bytes_held)(struct inode *n);
	/*
	 * NULL when every change passes through the store.  Otherwise
	 * (shmfile.c: writers the kernel serves itself) bring n's size,
	 * times, page map and purged set up to date with its data; n
	 * locked for writing.  Callers use fs_sync / fs_sync_locked (fs.h).
	 */
	void (*sync)(struct fs *fs, struct inode *n);
	/* NULL, or n's atime and mtime changed by the daemon (setattr). */
	void (*set_times)(struct fs *fs, struct inode *n);
	/* NULL, or give up n's data before the node is freed (fs.c). */
	void (*node_free)(struct fs *fs, struct inode *n);
};

#endif
