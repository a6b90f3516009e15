/*
 * fs_ns.c - the namespace: lookup, forget, mknod, link, unlink, rmdir,
 * rename, readlink, readdir, a directory's auto setting and the removal
 * of a purged auto=unlink file's name.  Every change of a directory's
 * entries holds ns_lock for writing, and takes each node's lock in turn
 * (fs_int.h, inode.h).
 */
#include "fs_int.h"

#include <fcntl.h>
#include <linux/fs.h>

#include "meta.h"

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
	stat_of(fs, e->inode, st);
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	return ret;
}

int fs_lookup_id(struct fs *fs, uintptr_t id, const char *name, struct inode **out,
		 struct stat *st)
{
	struct inode *n = (struct inode *)id;
	int ret = 0;

	pthread_rwlock_rdlock(&fs->ns_lock);
	if (!itable_holds(&fs->itable, id)) {
		ret = -ESTALE;
		goto out_unlock;
	}
	if (strcmp(name, "..") == 0) {
		if (!S_ISDIR(n->mode)) {
			ret = -ENOTDIR;
			goto out_unlock;
		}
		n = n->dir.parent;
	}
	/* Not reachable by any name: a file whose last name went (the
	 * kernel would hold it were it still open), or one a purge is
	 * unlinking (DESIGN 8). */
	if (n != fs->root && (n->nlink == 0 || name_purged(n))) {
		ret = -ESTALE;
		goto out_unlock;
	}
	atomic_fetch_add(&n->nlookup, 1);
	*out = n;
	stat_of(fs, n, st);
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

int fs_mknod(struct fs *fs, struct inode *dir, const char *name, mode_t mode, dev_t rdev,
	     const char *target, const struct fs_cred *cred, struct inode **out,
	     struct stat *st)
{
	struct inode *n;
	gid_t gid = cred->gid;
	struct dirent_node *e;
	struct unit *spare = NULL;
	char *copy = NULL;
	int ret = name ? check_name(name) : 0;

	if (ret)
		return ret;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (!name && !S_ISREG(mode))
		return -EINVAL;
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
	ret = fs_room(fs, NODE_BYTES + (S_ISLNK(mode) ? meta_cost(strlen(target) + 1) : 0));
	if (ret)
		return ret;
	if ((S_ISREG(mode) && !(spare = unit_alloc())) ||
	    (S_ISLNK(mode) && !(copy = meta_strdup(target)))) {
		fs_room_end(fs);
		return -ENOMEM;
	}

	pthread_rwlock_wrlock(&fs->ns_lock);
	if (dir->nlink == 0) {
		ret = -ENOENT; /* removed while we waited */
		goto out_unlock;
	}
	if (name && dir_find(&dir->dir.entries, name)) {
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
	if (!name) {
		/* O_TMPFILE: no name, nothing in the directory changes. */
		n->linkable = true;
		goto made;
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
made:
	atomic_store(&n->nlookup, 1);
	*out = n;
	inode_stat_locked(n, st); /* unreachable by others until ns_lock drops */
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	fs_room_end(fs);
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
	if ((n->nlink == 0 && !(S_ISREG(n->mode) && n->linkable)) || name_purged(n)) {
		/* linking an unlinked file, as the VFS refuses (an O_TMPFILE
		 * file excepted); or one whose name a purge is taking */
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = dir_add(&newdir->dir.entries, newname, n, NULL);
	if (ret)
		goto out_unlock;
	if (S_ISREG(n->mode)) {
		n->link1 = NULL; /* two names now: auto=unlink leaves it alone */
		n->linkable = false;
	}
	nlink_add(n, 1, true);
	dir_changed(newdir);
	atomic_fetch_add(&n->nlookup, 1);
	stat_of(fs, n, st);
out_unlock:
	pthread_rwlock_unlock(&fs->ns_lock);
	fs_room_end(fs);
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

/*
 * A whiteout for a rename into olddir (RENAME_WHITEOUT, what overlayfs
 * asks of its upper directory): a character device 0:0 of mode 0, owned
 * as a new node of cred's.  Not yet named.  NULL when out of memory.
 * ns_lock held for writing.
 */
static struct inode *whiteout_new(struct fs *fs, struct inode *olddir, const struct fs_cred *cred)
{
	return inode_new(&fs->itable, S_IFCHR, cred->uid,
			 olddir->mode & S_ISGID ? olddir->gid : cred->gid, 0);
}

/*
 * The old name's entry once its file moved on: given to the whiteout
 * (*wo, then NULL) if there is one; else, for a rename within the
 * directory, the moved entry takes its place in the listing
 * (dir_replace); else removed.
 */
static void leave_old_entry(struct inode *olddir, struct dirent_node *oe,
			    struct dirent_node *moved, struct inode **wo)
{
	if (*wo) {
		dir_retarget(oe, *wo);
		(*wo)->nlink = 1;
		*wo = NULL;
	} else if (moved) {
		dir_replace(&olddir->dir.entries, oe, moved);
	} else {
		dir_remove(&olddir->dir.entries, oe);
	}
}

int fs_rename(struct fs *fs, struct inode *olddir, const char *oldname,
	      struct inode *newdir, const char *newname, unsigned flags,
	      const struct fs_cred *cred)
{
	struct dirent_node *oe, *ne;
	struct inode *src, *dst, *wo = NULL;
	bool grows;
	int ret;

	ret = check_name(oldname);
	if (!ret)
		ret = check_name(newname);
	if (ret)
		return ret;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
		return -EINVAL;
	if ((flags & RENAME_WHITEOUT) && !cred)
		return -EINVAL;
	if (!S_ISDIR(olddir->mode) || !S_ISDIR(newdir->mode))
		return -ENOTDIR;
	/* A longer name costs more than the entry it replaces: room first,
	 * purging if need be, as for a new entry. */
	grows = strlen(newname) > strlen(oldname) || (flags & RENAME_WHITEOUT);
	if (grows && (ret = room_for_metadata(fs)) != 0)
		return ret;

	pthread_rwlock_wrlock(&fs->ns_lock);
	/* The whiteout takes the old name's entry once the file has left
	 * it, so nothing is allocated after the rename has begun. */
	if ((flags & RENAME_WHITEOUT) && !(wo = whiteout_new(fs, olddir, cred))) {
		ret = -ENOMEM;
		goto out_unlock;
	}
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
		leave_old_entry(olddir, oe, NULL, &wo);
		if (S_ISDIR(src->mode))
			reparent(src, olddir, newdir);
		drop_name(fs, newdir, dst);
	} else {
		struct dirent_node *moved;
		bool was;

		/* The new entry is charged under the limit, unless its name
		 * is no longer than the old one: then the old entry, freed
		 * just below, paid for it, and a full filesystem still
		 * renames (DESIGN section 3, no side door). */
		was = meta_unlimited(!grows);
		ret = dir_add(&newdir->dir.entries, newname, src, &moved);
		meta_unlimited(was);
		if (ret == -ENOMEM && grows)
			ret = -ENOSPC;
		if (ret)
			goto out_unlock;
		name_moved(src, oe, moved, newdir);
		leave_old_entry(olddir, oe, newdir == olddir ? moved : NULL, &wo);
		if (S_ISDIR(src->mode))
			reparent(src, olddir, newdir);
	}
	stamp(src, T_C);
	dir_changed(olddir);
	if (newdir != olddir)
		dir_changed(newdir);
out_unlock:
	if (wo)
		node_free(fs, wo); /* the rename did not happen */
	pthread_rwlock_unlock(&fs->ns_lock);
	if (grows)
		fs_room_end(fs);
	return ret;
}

const char *fs_readlink(struct fs *fs, struct inode *n)
{
	(void)fs;
	return S_ISLNK(n->mode) ? n->target : NULL;
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
			stat_of(fs, dir, &st);
		ret = fill(ctx, ".", dir, &st, 1);
		if (ret)
			goto out_unlock;
	}
	if (off < 2) {
		if (plus)
			stat_of(fs, dir->dir.parent, &st);
		ret = fill(ctx, "..", dir->dir.parent, &st, 2);
		if (ret)
			goto out_unlock;
	}
	for (e = dir_next(&dir->dir.entries, off); e;
	     e = dir_next(&dir->dir.entries, e->cookie)) {
		if (name_purged(e->inode))
			continue; /* going: not listed, as lookup refuses it */
		if (plus)
			stat_of(fs, e->inode, &st);
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
