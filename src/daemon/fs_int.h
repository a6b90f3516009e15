/*
 * fs_int.h - what the parts of the filesystem share (fs.c, fs_ns.c,
 * fs_attr.c, fs_data.c, fs_xattr.c); not for use outside them.
 *
 * The filesystem is one module (fs.h) in five files, one per job:
 *   fs.c        set-up and teardown, node lifetime (freeing, fs_hold),
 *               making room for new memory (fs_room, find_room)
 *   fs_ns.c     the namespace: lookup, forget, mknod, link, unlink, rmdir,
 *               rename, readlink, readdir, auto and its unlink
 *   fs_attr.c   attributes: getattr, setattr, statfs
 *   fs_data.c   file data: read, write, fallocate, lseek, open, release, poll
 *   fs_xattr.c  plain xattrs
 *
 * Locking (inode.h, docs/LOCKING.md): ns_lock, then at most one node's
 * lock.  Each helper below says what its caller holds; the ones that
 * take a node's lock themselves (stamp, nlink_add, dir_changed, stat_of,
 * name_purged) must be called without it.
 */
#ifndef VOLATILEFS_FS_INT_H
#define VOLATILEFS_FS_INT_H

#include <errno.h>
#include <string.h>

#include "fs.h"

/* See find_room(). */
#define SPACE_RETRIES 64

/* A node, its name and its directory entry: about a kilobyte. */
#define NODE_BYTES 1024u

/* Time stamps to bring to now. */
#define T_A 1u
#define T_M 2u
#define T_C 4u

/* Free a node that has neither names nor kernel references.  ns_lock held for writing. */
void node_free(struct fs *fs, struct inode *n);
/* node_free(n) if it has neither names nor kernel references.  ns_lock held for writing. */
void node_maybe_free(struct fs *fs, struct inode *n);
/*
 * A request refused for space: have the volatile layer purge
 * (fs->make_room) and say whether to try again.  Caller holds no lock.
 */
bool find_room(struct fs *fs, uint64_t bytes);

static inline int room_for_metadata(struct fs *fs)
{
	return fs_room(fs, NODE_BYTES);
}

static inline int check_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return -ENOENT;
	if (len > FS_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static inline void stamp_locked(struct inode *n, unsigned which)
{
	struct timespec now;

	inode_now(&now);
	if (which & T_A)
		n->atime = now;
	if (which & T_M)
		n->mtime = now;
	if (which & T_C)
		n->ctime = now;
}

static inline void stamp(struct inode *n, unsigned which)
{
	pthread_rwlock_wrlock(&n->lock);
	stamp_locked(n, which);
	pthread_rwlock_unlock(&n->lock);
}

/* nlink changes need ns_lock (held for writing by the caller) and the node's lock. */
static inline void nlink_add(struct inode *n, int delta, bool touch_ctime)
{
	pthread_rwlock_wrlock(&n->lock);
	n->nlink = (uint32_t)((int64_t)n->nlink + delta);
	if (touch_ctime)
		stamp_locked(n, T_C);
	pthread_rwlock_unlock(&n->lock);
}

/* A directory's entries changed: its size, mtime and ctime follow.  ns_lock held. */
static inline void dir_changed(struct inode *dir)
{
	pthread_rwlock_wrlock(&dir->lock);
	dir->size = (dir->dir.entries.count + 2) * FS_DIRENT_SIZE;
	stamp_locked(dir, T_M | T_C);
	pthread_rwlock_unlock(&dir->lock);
}

static inline void stat_of(struct fs *fs, struct inode *n, struct stat *st)
{
	if (fs->store->sync && S_ISREG(n->mode)) {
		pthread_rwlock_wrlock(&n->lock);
		fs->store->sync(fs, n);
	} else {
		pthread_rwlock_rdlock(&n->lock);
	}
	inode_stat_locked(n, st);
	pthread_rwlock_unlock(&n->lock);
}

/*
 * A name whose file a purge has taken (auto=unlink): refused from the
 * purge on, before fs_auto_unlink_locked removes it (fs.h).  ns_lock held.
 */
static inline bool name_purged(struct inode *n)
{
	bool gone;

	if (!S_ISREG(n->mode))
		return false;
	pthread_rwlock_rdlock(&n->lock);
	gone = n->purge_unlinked;
	pthread_rwlock_unlock(&n->lock);
	return gone;
}

#endif
