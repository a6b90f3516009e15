/*
 * shmfile.h - the shared-memory store of file data (DESIGN section 11):
 * each regular file's bytes live in a backing file on a tmpfs that the
 * daemon mounts privately (fsopen/fsmount: a mount attached nowhere,
 * reached only through its root descriptor), at the same offsets, so
 * that the kernel can serve reads, writes and mmap of an open file
 * itself (FUSE passthrough, fuseio.h) with the data held once.
 *
 * The backing file of node n is named by n's inode number in hex in
 * that tmpfs's root, created on first use and removed when the node is
 * freed.  No descriptor is kept: the kernel holds the backing file of
 * a passthrough open itself (fuseio_backing_open), and the store opens
 * it by name for each call it makes (one openat, about 2 us), so a
 * million files need no million descriptors (RLIMIT_NOFILE is 20,000
 * here).
 *
 * The node's page map still says which pages hold memory, with a
 * placeholder entry (SHM_HELD) for each page of the backing file: the
 * volatile units, st_blocks, SEEK_DATA/SEEK_HOLE and the accounting work
 * on it as on the arena store.  Writers the daemon does not see (a
 * passthrough open, a shared mapping) change the backing file behind
 * it: shm_sync (store_ops.sync) brings the map, the size, mtime and the
 * purged set up to date from the backing file, and every caller that
 * reads them takes it first (fs_sync).  A store through a mapping, or a
 * write(2) the kernel served itself, does not say which bytes of a page
 * it wrote; what a purge discarded reads as zeros, so when a sync finds a
 * new page in a purged range it takes out of the purged set the bytes
 * that are not zero (at most a few runs a page), and a zero byte stays
 * reported (no loss without a report).  Each page is read so once:
 * later stores into a page that holds memory allocate nothing, and the
 * set stays as it is (it may then name bytes that hold data) until the
 * daemon's own write(2), a punch, a truncate or the cleared report.  A
 * wholly purged page that holds only zeros was loaded through a mapping
 * of the punched hole: it is punched again while a unit holds it.  The
 * scan for new pages is skipped while the backing file's allocated size
 * still equals the map's count.
 *
 * Memory: each page of a backing file is charged 4096 bytes, as an
 * arena page is (mem.h): reserved before the daemon writes or
 * allocates, charged when found by a sync (the kernel let a writer
 * allocate it: the tmpfs's size, SHM cap, is the hard backstop).  The
 * daemon's own write or fallocate that finds the tmpfs full grows it to
 * what it reserved (the size lags the RSS by up to a tick).
 *
 * Locking: as store.h (the node's lock); struct shm is set up before
 * any thread and constant after, except cap (atomic).
 */
#ifndef VOLATILEFS_SHMFILE_H
#define VOLATILEFS_SHMFILE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct fs;
struct inode;

/* The page-map entry of a page held in the backing file. */
#define SHM_HELD ((uintptr_t)4096)

struct shm {
	int root;                 /* the private tmpfs's root directory; -1: none */
	int mnt;                  /* the detached mount (fsmount), for resizing */
	_Atomic uint64_t cap;     /* its size= in bytes */
};

extern const struct store_ops shm_store;

/*
 * Mount the private tmpfs, size= cap bytes (rounded up to a page).
 * Zero, or -errno (-EPERM without CAP_SYS_ADMIN, -ENOSYS on a kernel
 * without fsopen).
 */
int shm_setup(struct shm *s, uint64_t cap);
void shm_teardown(struct shm *s);
/* Change the tmpfs's size (never below what it holds).  Zero or -errno. */
int shm_set_cap(struct shm *s, uint64_t cap);
/* Bytes the tmpfs holds now (its statfs), 0 when not set up. */
uint64_t shm_used(const struct shm *s);
/*
 * An inotify descriptor (non-blocking) that becomes readable whenever a
 * backing file is written through write(2) or fallocate, the kernel's
 * own passthrough writes included (not stores through a mapping), or -1
 * when not set up or inotify is unavailable.  The caller closes it.
 */
int shm_watch(const struct shm *s);

/*
 * Open n's backing file for reading and writing (created when create
 * is true, and then sized to n->size).  A descriptor, or -errno
 * (-ENOENT when it does not exist and create is false).  n locked.
 */
int shm_backing_open(struct fs *fs, struct inode *n, bool create);

#endif
