/*
 * fs_attr.c - attributes: getattr, setattr (with truncation) and statfs.
 * A node's attributes are under its own lock; the time stamps are set
 * through stamp_locked (fs_int.h).
 */
#include "fs_int.h"

#include "file.h"

void fs_getattr(struct fs *fs, struct inode *n, struct stat *st)
{
	stat_of(fs, n, st);
}

int fs_setattr(struct fs *fs, struct inode *n, const struct fs_setattr *sa, struct stat *st)
{
	unsigned v = sa->valid;
	int ret = 0;

	if ((v & FS_SET_SIZE) && !S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	pthread_rwlock_wrlock(&n->lock);
	if (S_ISREG(n->mode))
		fs_sync_locked(fs, n);
	if (v & FS_SET_SIZE) {
		uint64_t old = n->size;

		ret = fs->store->truncate(fs, n, sa->size);
		if (ret)
			goto out_unlock;
		if (old != sa->size)
			stamp_locked(n, T_M | T_C);
	}
	if (v & FS_SET_MODE)
		n->mode = (n->mode & S_IFMT) | (sa->mode & 07777);
	if (v & FS_SET_UID)
		n->uid = sa->uid;
	if (v & FS_SET_GID)
		n->gid = sa->gid;
	if (v & FS_SET_ATIME_NOW)
		stamp_locked(n, T_A);
	else if (v & FS_SET_ATIME)
		n->atime = sa->atime;
	if (v & FS_SET_MTIME_NOW)
		stamp_locked(n, T_M);
	else if (v & FS_SET_MTIME)
		n->mtime = sa->mtime;
	if (v & FS_SET_CTIME)
		n->ctime = sa->ctime;
	else if (v & (FS_SET_MODE | FS_SET_UID | FS_SET_GID | FS_SET_ATIME | FS_SET_MTIME |
		      FS_SET_ATIME_NOW | FS_SET_MTIME_NOW))
		stamp_locked(n, T_C);
	if (S_ISREG(n->mode) && fs->store->set_times &&
	    (v & (FS_SET_ATIME | FS_SET_MTIME | FS_SET_ATIME_NOW | FS_SET_MTIME_NOW | FS_SET_SIZE)))
		fs->store->set_times(fs, n);
	inode_stat_locked(n, st);
out_unlock:
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

void fs_statfs(struct fs *fs, struct statvfs *sv)
{
	uint64_t limit = atomic_load(&fs->mem.limit);
	/* Free: the limit minus the non-volatile data held. */
	uint64_t data = arena_pages(&fs->arena) * ARENA_PAGE_SIZE;
	uint64_t vol = atomic_load(&fs->lru.resident) * ARENA_PAGE_SIZE, held;

	/* Shared memory: what the backing files hold, seen by the daemon or not. */
	if (fs->passthrough)
		data += shm_used(&fs->shm);
	held = data > vol ? data - vol : 0;
	uint64_t files = itable_count(&fs->itable);

	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = ARENA_PAGE_SIZE;
	sv->f_frsize = ARENA_PAGE_SIZE;
	sv->f_blocks = limit / ARENA_PAGE_SIZE;
	sv->f_bfree = held < limit ? (limit - held) / ARENA_PAGE_SIZE : 0;
	sv->f_bavail = sv->f_bfree;
	/* No inode limit: memory is the limit.  Report a kibibyte a node. */
	sv->f_files = limit / 1024 > files ? limit / 1024 : files;
	sv->f_ffree = sv->f_files - files;
	sv->f_favail = sv->f_ffree;
	sv->f_namemax = FS_NAME_MAX;
}
