/*
 * inode.c - node allocation and the inode table; see inode.h.
 */
#include "inode.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_addr(struct inode *a, struct inode *b)
{
	return ((uintptr_t)a > (uintptr_t)b) - ((uintptr_t)a < (uintptr_t)b);
}

/* tree.h marks its generated functions __unused, which libbsd's cdefs.h
 * leaves undefined (the name clashes with struct members in system headers). */
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif
RB_GENERATE_STATIC(inode_addrs, inode, by_addr, cmp_addr)

int itable_init(struct itable *t)
{
	memset(t, 0, sizeof(*t));
	RB_INIT(&t->addrs);
	t->next_ino = 1; /* the root gets st_ino 1, as FUSE_ROOT_ID */
	return -pthread_mutex_init(&t->lock, NULL);
}

struct inode *inode_new(struct itable *t, mode_t mode, uid_t uid, gid_t gid, dev_t rdev)
{
	struct inode *n = meta_calloc(sizeof(*n));

	if (!n)
		return NULL;
	if (pthread_rwlock_init(&n->lock, NULL) != 0) {
		meta_free(n);
		return NULL;
	}
	n->mode = mode;
	n->uid = uid;
	n->gid = gid;
	n->rdev = rdev;
	inode_now(&n->ctime);
	n->atime = n->mtime = n->ctime;
	atomic_init(&n->nlookup, 0);
	atomic_init(&n->xattr_ns, 0);
	if (S_ISREG(mode)) {
		pagemap_init(&n->pages);
		units_init(&n->units);
		extset_init(&n->purged);
	}
	else if (S_ISDIR(mode))
		dir_init(&n->dir.entries);

	pthread_mutex_lock(&t->lock);
	n->ino = t->next_ino++;
	RB_INSERT(inode_addrs, &t->addrs, n);
	t->count++;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* Open descriptions left at unmount (no release comes then). */
static void ofile_free_all(struct inode *n)
{
	while (n->open_files) {
		struct ofile *of = n->open_files;

		n->open_files = of->next;
		meta_free(of);
	}
}

static void inode_release_contents(struct inode *n, void (*release)(void *page, void *ctx),
				   void *ctx)
{
	if (S_ISREG(n->mode)) {
		ofile_free_all(n);
		pagemap_destroy(&n->pages, release, ctx);
		units_free_all(&n->units);
		extset_clear(&n->purged);
		/* Idle by now: undelivered work holds the node (notify.h). */
		meta_free(n->inval);
	}
	else if (S_ISDIR(n->mode))
		dir_clear(&n->dir.entries);
	else if (S_ISLNK(n->mode))
		meta_free(n->target);
	xattr_free_all(&n->xattrs);
	pthread_rwlock_destroy(&n->lock);
	meta_free(n);
}

void inode_free(struct itable *t, struct inode *n, void (*release)(void *page, void *ctx),
		void *ctx)
{
	pthread_mutex_lock(&t->lock);
	RB_REMOVE(inode_addrs, &t->addrs, n);
	t->count--;
	pthread_mutex_unlock(&t->lock);
	inode_release_contents(n, release, ctx);
}

void itable_destroy(struct itable *t, void (*release)(void *page, void *ctx), void *ctx)
{
	struct inode *n;

	while ((n = RB_MIN(inode_addrs, &t->addrs)) != NULL) {
		RB_REMOVE(inode_addrs, &t->addrs, n);
		t->count--;
		inode_release_contents(n, release, ctx);
	}
	pthread_mutex_destroy(&t->lock);
}

bool itable_holds(struct itable *t, uintptr_t id)
{
	bool found;

	/* The tree compares addresses only: the key is never read. */
	pthread_mutex_lock(&t->lock);
	found = RB_FIND(inode_addrs, &t->addrs, (struct inode *)id) != NULL;
	pthread_mutex_unlock(&t->lock);
	return found;
}

struct inode *itable_first(struct itable *t)
{
	return RB_MIN(inode_addrs, &t->addrs);
}

struct inode *itable_next(struct itable *t, struct inode *n)
{
	(void)t;
	return RB_NEXT(inode_addrs, &t->addrs, n);
}

uint64_t itable_count(struct itable *t)
{
	uint64_t c;

	pthread_mutex_lock(&t->lock);
	c = t->count;
	pthread_mutex_unlock(&t->lock);
	return c;
}

void inode_stat_locked(const struct inode *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_rdev = n->rdev;
	st->st_size = (off_t)n->size;
	st->st_blksize = 4096;
	if (S_ISREG(n->mode))
		st->st_blocks = (blkcnt_t)(n->pages.npages * (4096 / 512));
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
}
