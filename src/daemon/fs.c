/*
 * fs.c - namespace, attributes, data and xattrs with their locking; see
 * fs.h and, for the lock rules and node lifetime, inode.h.
 */
#include "fs.h"
#include "meta.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "file.h"

static void release_page(void *page, void *ctx)
{
	page_batch_release(page, ctx);
}

/* Free a node that has neither names nor kernel references.  ns_lock held for writing. */
static void node_free(struct fs *fs, struct inode *n)
{
	struct page_batch b = { .arena = &fs->arena };

	/* A read may still hold n's lock for a moment after its reply went
	 * out (fs_read_reply), and the kernel may have forgotten n in that
	 * moment: wait for it to let go.  No one can take the lock anew. */
	pthread_rwlock_wrlock(&n->lock);
	pthread_rwlock_unlock(&n->lock);
	if (S_ISREG(n->mode)) {
		units_clear(&fs->lru, &n->units);
		for (struct ofile *of = n->open_files; of; of = of->next)
			if (of->poll_handle && fs->hooks.poll_free)
				fs->hooks.poll_free(fs->hooks.ctx, of->poll_handle);
	}
	inode_free(&fs->itable, n, release_page, &b);
	page_batch_flush(&b);
}

static void node_maybe_free(struct fs *fs, struct inode *n)
{
	if (n->nlink == 0 && atomic_load(&n->nlookup) == 0)
		node_free(fs, n);
}

int fs_init(struct fs *fs, const struct fs_config *cfg)
{
	bool was;
	int ret;

	memset(fs, 0, sizeof(*fs));
	ret = -pthread_rwlock_init(&fs->ns_lock, NULL);
	if (ret)
		return ret;
	fs->owner = cfg->owner;
	fs->purged_eio = cfg->purged_eio;
	fs->write_unmark = cfg->write_unmark;
	fs->fuse_conn = -1;
	ret = -pthread_mutex_init(&fs->evict_lock, NULL);
	if (ret)
		goto out_ns;
	ret = -pthread_mutex_init(&fs->monitor_lock, NULL);
	if (ret)
		goto out_evict;
	ret = lru_init(&fs->lru);
	if (ret)
		goto out_monitor;
	ret = arena_init(&fs->arena);
	if (ret)
		goto out_lru;
	ret = mem_init(&fs->mem, &fs->arena, cfg->memory_limit, cfg->memory_low);
	if (ret)
		goto out_arena;
	meta_bind(&fs->mem); /* before the first node */
	ret = itable_init(&fs->itable);
	if (ret)
		goto out_mem;
	/* The root is charged but never refused: a daemon whose own RSS is
	 * past a tiny limit must still mount (and can be given more room). */
	was = meta_unlimited(true);
	fs->root = inode_new(&fs->itable, S_IFDIR | (cfg->root_mode & 07777), cfg->root_uid,
			     cfg->root_gid, 0);
	meta_unlimited(was);
	if (!fs->root) {
		ret = -ENOMEM;
		goto out_itable;
	}
	fs->root->nlink = 2;
	fs->root->size = 2 * FS_DIRENT_SIZE;
	fs->root->dir.parent = fs->root;
	fs->root->dir.auto_mode = (uint8_t)cfg->root_auto;
	atomic_store(&fs->auto_unlink_seen, cfg->root_auto == FS_AUTO_UNLINK);
	atomic_store(&fs->root->nlookup, 1); /* the kernel's, never forgotten */
	return 0;

out_itable:
	itable_destroy(&fs->itable, NULL, NULL);
out_mem:
	meta_bind(NULL);
	mem_destroy(&fs->mem);
out_arena:
	arena_destroy(&fs->arena);
out_lru:
	lru_destroy(&fs->lru);
out_monitor:
	pthread_mutex_destroy(&fs->monitor_lock);
out_evict:
	pthread_mutex_destroy(&fs->evict_lock);
out_ns:
	pthread_rwlock_destroy(&fs->ns_lock);
	return ret;
}

/*
 * Everything was freed: every figure of the accounting must be back to
 * zero.  What is not is a leak (or a reservation never given back), and
 * is said on stderr, which every mount test treats as a failure.
 */
static void fs_check_leaks(struct fs *fs)
{
	uint64_t meta = meta_bytes(), pages = arena_pages(&fs->arena);
	uint64_t charged = atomic_load(&fs->mem.charged);

	if (meta || pages || charged)
		fprintf(stderr,
			"volatilefs: at exit, not freed: %" PRIu64 " bytes of metadata, %" PRIu64
			" pages; %" PRIu64 " bytes still charged\n", meta, pages, charged);
}

void fs_destroy(struct fs *fs)
{
	struct page_batch b = { .arena = &fs->arena };

	for (struct inode *n = fs->itable.head.next; n != &fs->itable.head; n = n->next) {
		if (!S_ISREG(n->mode))
			continue;
		for (struct ofile *of = n->open_files; of; of = of->next)
			if (of->poll_handle && fs->hooks.poll_free)
				fs->hooks.poll_free(fs->hooks.ctx, of->poll_handle);
	}
	itable_destroy(&fs->itable, release_page, &b);
	page_batch_flush(&b);
	fs_check_leaks(fs);
	meta_bind(NULL);
	mem_destroy(&fs->mem);
	arena_destroy(&fs->arena);
	lru_destroy(&fs->lru);
	pthread_mutex_destroy(&fs->monitor_lock);
	pthread_mutex_destroy(&fs->evict_lock);
	pthread_rwlock_destroy(&fs->ns_lock);
}

/*
 * New nodes and attributes cost memory too.  Over the limit, purge
 * first, as a write does; only when that leaves us over is it ENOSPC.
 * Caller holds no lock.
 */
/* See find_room(). */
#define SPACE_RETRIES 64

static bool find_room(struct fs *fs, uint64_t bytes);

int fs_room(struct fs *fs, uint64_t bytes)
{
	for (int tries = 0; !mem_fits(&fs->mem, bytes); tries++) {
		if (tries == SPACE_RETRIES || !find_room(fs, bytes)) {
			atomic_fetch_add(&fs->mem.enospc_total, 1);
			return -ENOSPC;
		}
	}
	return 0;
}

/* A node, its name and its directory entry: about a kilobyte. */
#define NODE_BYTES 1024u

static int room_for_metadata(struct fs *fs)
{
	return fs_room(fs, NODE_BYTES);
}

static int check_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return -ENOENT;
	if (len > FS_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Time stamps to bring to now. */
#define T_A 1u
#define T_M 2u
#define T_C 4u

static void stamp_locked(struct inode *n, unsigned which)
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

static void stamp(struct inode *n, unsigned which)
{
	pthread_rwlock_wrlock(&n->lock);
	stamp_locked(n, which);
	pthread_rwlock_unlock(&n->lock);
}

/* nlink changes need ns_lock (held for writing by the caller) and the node's lock. */
static void nlink_add(struct inode *n, int delta, bool touch_ctime)
{
	pthread_rwlock_wrlock(&n->lock);
	n->nlink = (uint32_t)((int64_t)n->nlink + delta);
	if (touch_ctime)
		stamp_locked(n, T_C);
	pthread_rwlock_unlock(&n->lock);
}

/* A directory's entries changed: its size, mtime and ctime follow.  ns_lock held. */
static void dir_changed(struct inode *dir)
{
	pthread_rwlock_wrlock(&dir->lock);
	dir->size = (dir->dir.entries.count + 2) * FS_DIRENT_SIZE;
	stamp_locked(dir, T_M | T_C);
	pthread_rwlock_unlock(&dir->lock);
}

static void stat_of(struct inode *n, struct stat *st)
{
	pthread_rwlock_rdlock(&n->lock);
	inode_stat_locked(n, st);
	pthread_rwlock_unlock(&n->lock);
}

/*
 * A name whose file a purge has taken (auto=unlink): refused from the
 * purge on, before fs_auto_unlink_locked removes it (fs.h).  ns_lock held.
 */
static bool name_purged(struct inode *n)
{
	bool gone;

	if (!S_ISREG(n->mode))
		return false;
	pthread_rwlock_rdlock(&n->lock);
	gone = n->purge_unlinked;
	pthread_rwlock_unlock(&n->lock);
	return gone;
}

int fs_lookup(struct fs *fs, struct inode *dir, const char *name, struct inode **out,
	      struct stat *st)
{
	struct dirent_node *e;
	int ret = check_name(name);

	if (ret)
		return ret;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	pthread_rwlock_rdlock(&fs->ns_lock);
	e = dir_find(&dir->dir.entries, name);
	if (!e || name_purged(e->inode)) {
		ret = -ENOENT;
		goto out_unlock;
	}
	atomic_fetch_add(&e->inode->nlookup, 1);
	*out = e->inode;
	stat_of(e->inode, st);
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	return ret;
}

void fs_forget(struct fs *fs, struct inode *n, uint64_t count)
{
	uint64_t cur = atomic_load(&n->nlookup);

	/* Lock-free while the count stays above zero ... */
	while (cur > count)
		if (atomic_compare_exchange_weak(&n->nlookup, &cur, cur - count))
			return;
	/* ... the last reference is dropped under ns_lock, where the node
	 * may be freed; no lookup can take a new one meanwhile. */
	pthread_rwlock_wrlock(&fs->ns_lock);
	cur = atomic_load(&n->nlookup);
	atomic_store(&n->nlookup, cur > count ? cur - count : 0);
	if (n != fs->root)
		node_maybe_free(fs, n);
	pthread_rwlock_unlock(&fs->ns_lock);
}

void fs_getattr(struct fs *fs, struct inode *n, struct stat *st)
{
	(void)fs;
	stat_of(n, st);
}

int fs_setattr(struct fs *fs, struct inode *n, const struct fs_setattr *sa, struct stat *st)
{
	unsigned v = sa->valid;
	int ret = 0;

	if ((v & FS_SET_SIZE) && !S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	pthread_rwlock_wrlock(&n->lock);
	if (v & FS_SET_SIZE) {
		uint64_t old = n->size;

		ret = file_truncate_locked(fs, n, sa->size);
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
	inode_stat_locked(n, st);
out_unlock:
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

int fs_mknod(struct fs *fs, struct inode *dir, const char *name, mode_t mode, dev_t rdev,
	     const char *target, const struct fs_cred *cred, struct inode **out,
	     struct stat *st)
{
	struct inode *n;
	gid_t gid = cred->gid;
	struct dirent_node *e;
	struct unit *spare = NULL;
	char *copy = NULL;
	int ret = check_name(name);

	if (ret)
		return ret;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
		break;
	case S_IFLNK:
		if (!target)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	/* Room first (purging if need be), then what the node needs beside
	 * itself: a unit for a file created in a cache directory, a
	 * symlink's target; all taken before anything changes. */
	ret = room_for_metadata(fs);
	if (ret)
		return ret;
	if (S_ISREG(mode) && !(spare = unit_alloc()))
		return -ENOMEM;
	if (S_ISLNK(mode) && !(copy = meta_strdup(target)))
		return -ENOMEM;

	pthread_rwlock_wrlock(&fs->ns_lock);
	if (dir->nlink == 0) {
		ret = -ENOENT; /* removed while we waited */
		goto out_unlock;
	}
	if (dir_find(&dir->dir.entries, name)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	/* Group of a setgid directory, and setgid inherited by directories
	 * (the VFS already stripped S_ISGID where the caller may not have it). */
	if (dir->mode & S_ISGID) {
		gid = dir->gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	n = inode_new(&fs->itable, mode, cred->uid, gid, S_ISCHR(mode) || S_ISBLK(mode) ? rdev : 0);
	if (!n) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	ret = dir_add(&dir->dir.entries, name, n, &e);
	if (ret) {
		node_free(fs, n);
		goto out_unlock;
	}
	if (S_ISDIR(mode)) {
		n->nlink = 2;
		n->size = 2 * FS_DIRENT_SIZE;
		n->dir.parent = dir;
		n->dir.auto_mode = dir->dir.auto_mode; /* inherited */
		nlink_add(dir, 1, false);
	} else if (S_ISREG(mode)) {
		n->nlink = 1;
		n->link1 = e;
		n->link1_dir = dir;
		if (dir->dir.auto_mode != FS_AUTO_OFF) {
			/* marked "all" at creation, as one unit */
			pthread_rwlock_wrlock(&n->lock);
			units_mark(&fs->lru, n, &n->units, &n->pages, 0, UNIT_UNBOUNDED,
				   UNIT_DEFAULT_PRIORITY, false, spare);
			pthread_rwlock_unlock(&n->lock);
			spare = NULL;
			n->auto_unlink = dir->dir.auto_mode == FS_AUTO_UNLINK;
		}
	} else {
		n->nlink = 1;
		if (S_ISLNK(mode)) {
			n->target = copy;
			n->size = strlen(copy);
			copy = NULL;
		}
	}
	dir_changed(dir);
	atomic_store(&n->nlookup, 1);
	*out = n;
	inode_stat_locked(n, st); /* unreachable by others until ns_lock drops */
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	meta_free(copy);
	unit_free(spare);
	return ret;
}

int fs_link(struct fs *fs, struct inode *n, struct inode *newdir, const char *newname,
	    struct stat *st)
{
	int ret = check_name(newname);

	if (ret)
		return ret;
	if (S_ISDIR(n->mode))
		return -EPERM;
	if (!S_ISDIR(newdir->mode))
		return -ENOTDIR;
	ret = room_for_metadata(fs);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&fs->ns_lock);
	if (newdir->nlink == 0) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (n->nlink == 0 || name_purged(n)) {
		/* linking an unlinked file, as the VFS refuses; or one whose
		 * name a purge is taking */
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = dir_add(&newdir->dir.entries, newname, n, NULL);
	if (ret)
		goto out_unlock;
	if (S_ISREG(n->mode))
		n->link1 = NULL; /* two names now: auto=unlink leaves it alone */
	nlink_add(n, 1, true);
	dir_changed(newdir);
	atomic_fetch_add(&n->nlookup, 1);
	stat_of(n, st);
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	return ret;
}

/* Drop one name of n (already removed from its directory).  ns_lock held for writing. */
static void drop_name(struct fs *fs, struct inode *parent, struct inode *n)
{
	if (S_ISDIR(n->mode)) {
		nlink_add(n, -(int)n->nlink, true); /* an empty directory: 2 -> 0 */
		nlink_add(parent, -1, false);
	} else {
		nlink_add(n, -1, true);
	}
	node_maybe_free(fs, n);
}

static int remove_entry(struct fs *fs, struct inode *dir, const char *name, bool want_dir)
{
	struct dirent_node *e;
	struct inode *n;
	int ret = check_name(name);

	if (ret)
		return ret;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	pthread_rwlock_wrlock(&fs->ns_lock);
	e = dir_find(&dir->dir.entries, name);
	if (!e) {
		ret = -ENOENT;
		goto out_unlock;
	}
	n = e->inode;
	if (want_dir && !S_ISDIR(n->mode)) {
		ret = -ENOTDIR;
		goto out_unlock;
	}
	if (!want_dir && S_ISDIR(n->mode)) {
		ret = -EISDIR;
		goto out_unlock;
	}
	if (want_dir && n->dir.entries.count) {
		ret = -ENOTEMPTY;
		goto out_unlock;
	}
	if (S_ISREG(n->mode) && n->link1 == e)
		n->link1 = NULL;
	dir_remove(&dir->dir.entries, e);
	dir_changed(dir);
	drop_name(fs, dir, n);
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	return ret;
}

int fs_unlink(struct fs *fs, struct inode *dir, const char *name)
{
	return remove_entry(fs, dir, name, false);
}

int fs_rmdir(struct fs *fs, struct inode *dir, const char *name)
{
	return remove_entry(fs, dir, name, true);
}

/* Is a the directory d or one of its ancestors?  ns_lock held. */
static bool is_ancestor(struct fs *fs, struct inode *a, struct inode *d)
{
	for (;;) {
		if (d == a)
			return true;
		if (d == fs->root)
			return false;
		d = d->dir.parent;
	}
}

/* A directory moved from one parent to another.  ns_lock held for writing. */
static void reparent(struct inode *d, struct inode *from, struct inode *to)
{
	if (from == to)
		return;
	d->dir.parent = to;
	nlink_add(from, -1, false);
	nlink_add(to, 1, false);
}

/* n's name entry from went to entry to in dir (for auto=unlink's link1). */
static void name_moved(struct inode *n, struct dirent_node *from, struct dirent_node *to,
		       struct inode *dir)
{
	if (S_ISREG(n->mode) && n->link1 == from) {
		n->link1 = to;
		n->link1_dir = dir;
	}
}

static int rename_exchange(struct fs *fs, struct inode *olddir, struct dirent_node *oe,
			   struct inode *newdir, struct dirent_node *ne)
{
	struct inode *a = oe->inode, *b = ne->inode;

	if (S_ISDIR(a->mode) && is_ancestor(fs, a, newdir))
		return -EINVAL;
	if (S_ISDIR(b->mode) && is_ancestor(fs, b, olddir))
		return -EINVAL;
	dir_retarget(oe, b);
	dir_retarget(ne, a);
	name_moved(a, oe, ne, newdir);
	name_moved(b, ne, oe, olddir);
	if (S_ISDIR(a->mode))
		reparent(a, olddir, newdir);
	if (S_ISDIR(b->mode))
		reparent(b, newdir, olddir);
	stamp(a, T_C);
	stamp(b, T_C);
	dir_changed(olddir);
	if (newdir != olddir)
		dir_changed(newdir);
	return 0;
}

int fs_rename(struct fs *fs, struct inode *olddir, const char *oldname,
	      struct inode *newdir, const char *newname, unsigned flags)
{
	struct dirent_node *oe, *ne;
	struct inode *src, *dst;
	bool grows;
	int ret;

	ret = check_name(oldname);
	if (!ret)
		ret = check_name(newname);
	if (ret)
		return ret;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (!S_ISDIR(olddir->mode) || !S_ISDIR(newdir->mode))
		return -ENOTDIR;
	/* A longer name costs more than the entry it replaces: room first,
	 * purging if need be, as for a new entry. */
	grows = strlen(newname) > strlen(oldname);
	if (grows && (ret = room_for_metadata(fs)) != 0)
		return ret;

	pthread_rwlock_wrlock(&fs->ns_lock);
	oe = dir_find(&olddir->dir.entries, oldname);
	if (!oe) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ne = dir_find(&newdir->dir.entries, newname);
	src = oe->inode;
	dst = ne ? ne->inode : NULL;

	if (flags & RENAME_EXCHANGE) {
		ret = ne ? rename_exchange(fs, olddir, oe, newdir, ne) : -ENOENT;
		goto out_unlock;
	}
	if (ne && (flags & RENAME_NOREPLACE)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	if (dst == src)
		goto out_unlock; /* two names of one node: POSIX says do nothing */
	if (S_ISDIR(src->mode) && is_ancestor(fs, src, newdir)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (dst) {
		if (S_ISDIR(src->mode) && !S_ISDIR(dst->mode)) {
			ret = -ENOTDIR;
			goto out_unlock;
		}
		if (!S_ISDIR(src->mode) && S_ISDIR(dst->mode)) {
			ret = -EISDIR;
			goto out_unlock;
		}
		if (S_ISDIR(dst->mode) && dst->dir.entries.count) {
			ret = -ENOTEMPTY;
			goto out_unlock;
		}
		if (S_ISREG(dst->mode) && dst->link1 == ne)
			dst->link1 = NULL;
		dir_retarget(ne, src);
		name_moved(src, oe, ne, newdir);
		dir_remove(&olddir->dir.entries, oe);
		if (S_ISDIR(src->mode))
			reparent(src, olddir, newdir);
		drop_name(fs, newdir, dst);
	} else {
		struct dirent_node *moved;
		bool was;

		/* The new entry is charged under the limit, unless its name
		 * is no longer than the old one: then the old entry, freed
		 * just below, paid for it, and a full filesystem still
		 * renames (SPEC section 3, no side door). */
		was = meta_unlimited(!grows);
		ret = dir_add(&newdir->dir.entries, newname, src, &moved);
		meta_unlimited(was);
		if (ret == -ENOMEM && grows)
			ret = -ENOSPC;
		if (ret)
			goto out_unlock;
		name_moved(src, oe, moved, newdir);
		dir_remove(&olddir->dir.entries, oe);
		if (S_ISDIR(src->mode))
			reparent(src, olddir, newdir);
	}
	stamp(src, T_C);
	dir_changed(olddir);
	if (newdir != olddir)
		dir_changed(newdir);
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	return ret;
}

const char *fs_readlink(struct fs *fs, struct inode *n)
{
	(void)fs;
	return S_ISLNK(n->mode) ? n->target : NULL;
}

/* relatime: atime moves when it is older than mtime or ctime, or a day old. */
static bool atime_due(const struct inode *n)
{
	struct timespec now;

	if (n->atime.tv_sec < n->mtime.tv_sec ||
	    (n->atime.tv_sec == n->mtime.tv_sec && n->atime.tv_nsec <= n->mtime.tv_nsec))
		return true;
	if (n->atime.tv_sec < n->ctime.tv_sec ||
	    (n->atime.tv_sec == n->ctime.tv_sec && n->atime.tv_nsec <= n->ctime.tv_nsec))
		return true;
	inode_now(&now);
	return now.tv_sec - n->atime.tv_sec >= 24 * 3600;
}

struct copy_out {
	char *buf;
	size_t len;
};

static void copy_out(void *ctx, const struct iovec *iov, size_t count)
{
	struct copy_out *c = ctx;

	for (size_t i = 0; i < count; i++) {
		memcpy(c->buf + c->len, iov[i].iov_base, iov[i].iov_len);
		c->len += iov[i].iov_len;
	}
}

ssize_t fs_read(struct fs *fs, struct inode *n, uint64_t off, size_t size, char *buf)
{
	struct copy_out c = { .buf = buf };
	int ret = fs_read_reply(fs, n, off, size, copy_out, &c);

	return ret < 0 ? ret : (ssize_t)c.len;
}

int fs_read_reply(struct fs *fs, struct inode *n, uint64_t off, size_t size,
		  fs_reply_fn reply, void *ctx)
{
	struct iovec stack_iov[FILE_READ_IOV_MAX(256 * ARENA_PAGE_SIZE)];
	struct iovec *iov = stack_iov;
	size_t niov;
	ssize_t got;
	bool due;
	int ret = 0;

	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	if (FILE_READ_IOV_MAX(size) > sizeof(stack_iov) / sizeof(stack_iov[0])) {
		iov = malloc(FILE_READ_IOV_MAX(size) * sizeof(*iov));
		if (!iov)
			return -ENOMEM;
	}
	/* The access time moves before the reply: once the reply is out,
	 * the kernel may close the file and forget the node at once.  When
	 * it is due (relatime: rarely), the read is done under the write
	 * lock that moving it needs. */
	pthread_rwlock_rdlock(&n->lock);
	due = atime_due(n);
	if (due) {
		pthread_rwlock_unlock(&n->lock);
		pthread_rwlock_wrlock(&n->lock);
	}
	got = file_read_iov_locked(fs, n, off, size, iov, &niov);
	if (got >= 0) {
		if (due)
			stamp_locked(n, T_A);
		reply(ctx, iov, niov);
	}
	pthread_rwlock_unlock(&n->lock);
	if (iov != stack_iov)
		free(iov);
	if (got < 0)
		ret = (int)got;
	return ret;
}

/*
 * A request refused for space: purge volatile data and try again.  Only
 * when nothing volatile is left does ENOSPC reach the caller (and
 * enospc_total).  Requests that hit the limit together queue on the
 * evictor: the first purges, the next find the RSS already low and free
 * nothing, yet must try again, since room was made; so a request gives
 * up only when a purge freed nothing and no volatile page is held any
 * more (or after SPACE_RETRIES rounds of losing the room to others, or
 * of volatile pages that cannot go: open auto=unlink files).
 *
 * A request that would not fit even if every volatile page went (a
 * fallocate of a petabyte) purges nothing: it fails at once.  Before it
 * gives up, free heap memory is handed back to the kernel (mem_trim), so
 * a flood of metadata that was deleted does not keep refusing requests.
 */
static bool find_room(struct fs *fs, uint64_t bytes)
{
	uint64_t limit = atomic_load(&fs->mem.limit);
	uint64_t vol = atomic_load(&fs->lru.resident) * ARENA_PAGE_SIZE;
	uint64_t rss = mem_rss(&fs->mem);
	uint64_t pages = (bytes + ARENA_PAGE_SIZE - 1) / ARENA_PAGE_SIZE;

	if (bytes > limit || (rss > vol ? rss - vol : 0) > limit - bytes) {
		mem_trim(&fs->mem, true);
		return mem_fits(&fs->mem, bytes);
	}
	if (fs->make_room && fs->make_room(fs, pages))
		return true;
	if (atomic_load(&fs->lru.resident) > 0 || mem_fits(&fs->mem, bytes))
		return true;
	mem_trim(&fs->mem, true);
	return mem_fits(&fs->mem, bytes);
}

ssize_t fs_write(struct fs *fs, struct inode *n, uint64_t off, const char *buf, size_t size)
{
	ssize_t ret;

	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	for (int tries = 0;; tries++) {
		uint64_t need;

		pthread_rwlock_wrlock(&n->lock);
		ret = file_write_locked(fs, n, off, buf, size);
		if (ret > 0)
			stamp_locked(n, T_M | T_C);
		need = ret == -ENOSPC ? file_pages_needed_locked(n, off, size) : 0;
		pthread_rwlock_unlock(&n->lock);
		if (ret != -ENOSPC || tries == SPACE_RETRIES ||
		    !find_room(fs, need * ARENA_PAGE_SIZE))
			break;
	}
	if (ret == -ENOSPC)
		atomic_fetch_add(&fs->mem.enospc_total, 1);
	return ret;
}

/*
 * Everything the range needs is reserved first, under the file's lock;
 * the pages are then given memory in steps of FILE_FALLOC_BATCH, and the
 * lock is dropped between steps, so a truncate or a read of the same
 * file waits for one step at most, never for the whole range.
 */
int fs_fallocate(struct fs *fs, struct inode *n, int mode, uint64_t off, uint64_t len)
{
	struct file_falloc fa;
	int ret;

	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -ENODEV;
	for (int tries = 0;; tries++) {
		uint64_t need;

		pthread_rwlock_wrlock(&n->lock);
		ret = file_fallocate_begin_locked(fs, n, mode, off, len, &fa);
		if (ret != -ENOSPC)
			break; /* with the lock held */
		need = file_pages_needed_locked(n, off, len);
		pthread_rwlock_unlock(&n->lock);
		if (tries == SPACE_RETRIES || need > atomic_load(&fs->mem.limit) / ARENA_PAGE_SIZE ||
		    !find_room(fs, need * ARENA_PAGE_SIZE)) {
			atomic_fetch_add(&fs->mem.enospc_total, 1);
			return -ENOSPC;
		}
	}
	while (ret == 0) {
		ret = file_fallocate_step_locked(fs, n, &fa);
		if (ret == 0) {
			pthread_rwlock_unlock(&n->lock);
			pthread_rwlock_wrlock(&n->lock);
		}
	}
	if (ret == 1) {
		stamp_locked(n, T_M | T_C);
		ret = 0;
	}
	file_resv_release(fs, &fa.resv);
	pthread_rwlock_unlock(&n->lock);
	if (ret == -ENOSPC)
		atomic_fetch_add(&fs->mem.enospc_total, 1);
	return ret;
}

int64_t fs_lseek(struct fs *fs, struct inode *n, uint64_t off, int whence)
{
	int64_t ret;

	(void)fs;
	if (!S_ISREG(n->mode))
		return -EINVAL;
	pthread_rwlock_rdlock(&n->lock);
	ret = file_seek_locked(n, off, whence);
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

int fs_readdir(struct fs *fs, struct inode *dir, uint64_t off, bool plus, fs_fill_fn fill,
	       void *ctx)
{
	struct stat st;
	struct dirent_node *e;
	int ret = 0;

	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	memset(&st, 0, sizeof(st));
	pthread_rwlock_rdlock(&fs->ns_lock);
	if (off < 1) {
		if (plus)
			stat_of(dir, &st);
		ret = fill(ctx, ".", dir, &st, 1);
		if (ret)
			goto out_unlock;
	}
	if (off < 2) {
		if (plus)
			stat_of(dir->dir.parent, &st);
		ret = fill(ctx, "..", dir->dir.parent, &st, 2);
		if (ret)
			goto out_unlock;
	}
	for (e = dir_next(&dir->dir.entries, off); e;
	     e = dir_next(&dir->dir.entries, e->cookie)) {
		if (name_purged(e->inode))
			continue; /* going: not listed, as lookup refuses it */
		if (plus)
			stat_of(e->inode, &st);
		ret = fill(ctx, e->name, e->inode, &st, e->cookie);
		if (ret)
			break;
		if (plus)
			atomic_fetch_add(&e->inode->nlookup, 1);
	}
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	return ret < 0 ? ret : 0;
}

void fs_statfs(struct fs *fs, struct statvfs *sv)
{
	uint64_t limit = atomic_load(&fs->mem.limit);
	/* Free: the limit minus the non-volatile data held. */
	uint64_t held = (arena_pages(&fs->arena) - atomic_load(&fs->lru.resident)) *
			ARENA_PAGE_SIZE;
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

void fs_hold(struct inode *n)
{
	atomic_fetch_add(&n->nlookup, 1);
}

void fs_put_locked(struct fs *fs, struct inode *n)
{
	atomic_fetch_sub(&n->nlookup, 1);
	if (n != fs->root)
		node_maybe_free(fs, n);
}

int fs_get_auto(struct fs *fs, struct inode *dir)
{
	int mode;

	pthread_rwlock_rdlock(&fs->ns_lock);
	mode = dir->dir.auto_mode;
	pthread_rwlock_unlock(&fs->ns_lock);
	return mode;
}

int fs_set_auto(struct fs *fs, struct inode *dir, int mode)
{
	if (!S_ISDIR(dir->mode))
		return -EINVAL;
	pthread_rwlock_wrlock(&fs->ns_lock);
	dir->dir.auto_mode = (uint8_t)mode;
	pthread_rwlock_unlock(&fs->ns_lock);
	stamp(dir, T_C);
	if (mode == FS_AUTO_UNLINK)
		atomic_store(&fs->auto_unlink_seen, true);
	return 0;
}

bool fs_auto_unlink_mark(struct inode *n, bool force)
{
	if (!S_ISREG(n->mode) || !n->auto_unlink || !n->link1 || n->nlink != 1)
		return false;
	/* Under n's lock, so that an open either came first (and the file
	 * is skipped) or is refused (fs_open_attach). */
	if (n->nopen > 0 && !force)
		return false; /* a later purge may take it once it is closed */
	n->purge_unlinked = true;
	return true;
}

bool fs_auto_unlink_locked(struct fs *fs, struct inode *n)
{
	struct inode *dir = n->link1_dir;
	struct dirent_node *e = n->link1;

	/* purge_unlinked is set with ns_lock held at least for reading:
	 * with it held for writing, it can be read without n's lock.
	 * A link(2) to a marked file is refused, so nlink is 1 or 0 (a
	 * rename over it or an unlink took the name already). */
	if (!S_ISREG(n->mode) || !n->purge_unlinked || !e || n->nlink != 1)
		return false;
	if (fs->hooks.unlinking)
		fs->hooks.unlinking(fs->hooks.ctx, dir, n, e->name);
	n->link1 = NULL;
	dir_remove(&dir->dir.entries, e);
	dir_changed(dir);
	atomic_fetch_add(&fs->files_unlinked_total, 1);
	drop_name(fs, dir, n); /* may free n */
	return true;
}

struct ofile *fs_ofile_new(struct fs *fs)
{
	struct ofile *of;
	uint64_t cost = meta_cost(sizeof(*of)), over;
	bool was;

	/* Under the limit, purging first if need be (fs.h) ... */
	if (fs_room(fs, cost) == 0 && (of = meta_calloc(sizeof(*of))) != NULL)
		return of;
	/* ... else from the overdraft, bounded by FS_OPEN_OVERDRAFT: the
	 * SPEC section 3 allowance has room for it. */
	over = atomic_fetch_add(&fs->open_overdraft, cost);
	if (over + cost > FS_OPEN_OVERDRAFT) {
		atomic_fetch_sub(&fs->open_overdraft, cost);
		errno = ENOSPC;
		return NULL;
	}
	was = meta_unlimited(true);
	of = meta_calloc(sizeof(*of));
	meta_unlimited(was);
	if (!of) {
		atomic_fetch_sub(&fs->open_overdraft, cost);
		return NULL;
	}
	of->overdraft = true;
	return of;
}

void fs_ofile_discard(struct fs *fs, struct ofile *of)
{
	if (of->overdraft)
		atomic_fetch_sub(&fs->open_overdraft, meta_cost(sizeof(*of)));
	meta_free(of);
}

int fs_open_attach(struct fs *fs, struct ofile *of, struct inode *n, int flags)
{
	(void)fs;
	of->inode = n;
	of->flags = flags;
	if (!S_ISREG(n->mode))
		return 0; /* not listed: only files are purged */
	pthread_rwlock_wrlock(&n->lock);
	if (n->purge_unlinked) {
		/* Reached through a dentry the kernel has not yet dropped:
		 * ESTALE makes the VFS look the name up again (and create
		 * it anew under O_CREAT). */
		pthread_rwlock_unlock(&n->lock);
		return -ESTALE;
	}
	of->next = n->open_files;
	if (of->next)
		of->next->prev = of;
	n->open_files = of;
	n->nopen++;
	pthread_rwlock_unlock(&n->lock);
	return 0;
}

void fs_release_file(struct fs *fs, struct ofile *of)
{
	struct inode *n = of->inode;

	if (S_ISREG(n->mode)) {
		pthread_rwlock_wrlock(&n->lock);
		if (of->prev)
			of->prev->next = of->next;
		else
			n->open_files = of->next;
		if (of->next)
			of->next->prev = of->prev;
		n->nopen--;
		pthread_rwlock_unlock(&n->lock);
	}
	if (of->poll_handle && fs->hooks.poll_free)
		fs->hooks.poll_free(fs->hooks.ctx, of->poll_handle);
	fs_ofile_discard(fs, of);
}

bool fs_poll(struct fs *fs, struct ofile *of, void *ph, void **old)
{
	struct inode *n = of->inode;
	bool purged;

	*old = NULL;
	if (!S_ISREG(n->mode))
		return false;
	pthread_rwlock_wrlock(&n->lock);
	/* Up once the kernel has dropped the purged pages: the waiter kept
	 * here is woken then (notify.h). */
	purged = !extset_empty(&n->purged) &&
		 (!fs->hooks.delivered || fs->hooks.delivered(fs->hooks.ctx, n, n->inval_seq));
	if (ph) {
		*old = of->poll_handle;
		of->poll_handle = ph;
	}
	pthread_rwlock_unlock(&n->lock);
	return purged;
}

/* Publish the namespace bits (counted by xattr.c).  Caller holds n->lock for writing. */
static void xattr_ns_update_locked(struct inode *n)
{
	atomic_store_explicit(&n->xattr_ns, xattr_ns(n->xattrs), memory_order_release);
}

/*
 * user.volatile.* names belong to the layer above (vxattr.h), which
 * answers them before it calls here; one that arrives anyway is never
 * stored: refused as an unknown name of that family would be.
 */
static bool is_volatile_name(const char *name)
{
	return strncmp(name, FS_VOLATILE_PREFIX, sizeof(FS_VOLATILE_PREFIX) - 1) == 0;
}

int fs_setxattr(struct fs *fs, struct inode *n, const char *name, const void *value,
		size_t size, int flags, const struct fs_cred *cred)
{
	int ret;

	(void)cred;
	if (is_volatile_name(name))
		return -EINVAL;
	if (!xattr_ns_of(name))
		return -EOPNOTSUPP;
	ret = fs_room(fs, meta_cost(size) + meta_cost(strlen(name) + 1) + NODE_BYTES);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&n->lock);
	ret = xattr_set(&n->xattrs, name, value, size, flags);
	if (!ret) {
		xattr_ns_update_locked(n);
		stamp_locked(n, T_C);
	}
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

long fs_getxattr(struct fs *fs, struct inode *n, const char *name, void *buf, size_t size)
{
	const struct xattr *x;
	long ret;
	unsigned ns = xattr_ns_of(name);

	(void)fs;
	if (is_volatile_name(name))
		return -ENODATA;
	if (!ns)
		return -EOPNOTSUPP;
	/* The kernel asks for security.capability before every write: a
	 * namespace with nothing stored is answered without the lock. */
	if (!(atomic_load_explicit(&n->xattr_ns, memory_order_acquire) & ns))
		return -ENODATA;
	pthread_rwlock_rdlock(&n->lock);
	x = xattr_find(n->xattrs, name);
	if (!x)
		ret = -ENODATA;
	else if (size == 0)
		ret = (long)x->size;
	else if (size < x->size)
		ret = -ERANGE;
	else {
		memcpy(buf, x->value, x->size);
		ret = (long)x->size;
	}
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

long fs_listxattr(struct fs *fs, struct inode *n, char *buf, size_t size)
{
	long ret;

	(void)fs;
	pthread_rwlock_rdlock(&n->lock);
	ret = xattr_list(n->xattrs, buf, size);
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

int fs_removexattr(struct fs *fs, struct inode *n, const char *name)
{
	int ret;

	(void)fs;
	if (is_volatile_name(name))
		return -ENODATA;
	if (!xattr_ns_of(name))
		return -EOPNOTSUPP;
	pthread_rwlock_wrlock(&n->lock);
	ret = xattr_remove(&n->xattrs, name);
	if (!ret) {
		xattr_ns_update_locked(n);
		stamp_locked(n, T_C);
	}
	pthread_rwlock_unlock(&n->lock);
	return ret;
}
