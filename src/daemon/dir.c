/*
 * dir.c - directory entries in two red-black trees; see dir.h.
 */
#include "dir.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_name(struct dirent_node *a, struct dirent_node *b)
{
	return strcmp(a->name, b->name);
}

static int cmp_cookie(struct dirent_node *a, struct dirent_node *b)
{
	return (a->cookie > b->cookie) - (a->cookie < b->cookie);
}

/* tree.h marks its generated functions __unused, which libbsd's cdefs.h
 * leaves undefined (the name clashes with struct members in system headers). */
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif
RB_GENERATE_STATIC(dirent_names, dirent_node, by_name, cmp_name)
RB_GENERATE_STATIC(dirent_cookies, dirent_node, by_cookie, cmp_cookie)

void dir_init(struct dir *d)
{
	RB_INIT(&d->names);
	RB_INIT(&d->cookies);
	d->next_cookie = DIR_FIRST_COOKIE;
	d->count = 0;
}

struct dirent_node *dir_find(struct dir *d, const char *name)
{
	/* A key on the stack: the tree compares names only. */
	size_t len = strlen(name);
	_Alignas(struct dirent_node) char buf[sizeof(struct dirent_node) + 256];
	struct dirent_node *key = (struct dirent_node *)buf;

	if (len > 255)
		return NULL;
	memcpy(key->name, name, len + 1);
	return RB_FIND(dirent_names, &d->names, key);
}

int dir_add(struct dir *d, const char *name, struct inode *inode, struct dirent_node **out)
{
	size_t len = strlen(name);
	struct dirent_node *e = meta_alloc(sizeof(*e) + len + 1);

	if (!e)
		return -ENOMEM;
	memcpy(e->name, name, len + 1);
	e->namelen = len;
	e->inode = inode;
	if (RB_INSERT(dirent_names, &d->names, e)) {
		meta_free(e);
		return -EEXIST;
	}
	e->cookie = d->next_cookie++;
	RB_INSERT(dirent_cookies, &d->cookies, e);
	d->count++;
	if (out)
		*out = e;
	return 0;
}

void dir_remove(struct dir *d, struct dirent_node *e)
{
	RB_REMOVE(dirent_names, &d->names, e);
	RB_REMOVE(dirent_cookies, &d->cookies, e);
	d->count--;
	meta_free(e);
}

void dir_replace(struct dir *d, struct dirent_node *old, struct dirent_node *e)
{
	RB_REMOVE(dirent_cookies, &d->cookies, e);
	RB_REMOVE(dirent_cookies, &d->cookies, old);
	e->cookie = old->cookie;
	RB_INSERT(dirent_cookies, &d->cookies, e);
	RB_REMOVE(dirent_names, &d->names, old);
	d->count--;
	meta_free(old);
}

struct dirent_node *dir_next(struct dir *d, uint64_t after)
{
	struct dirent_node key;

	if (after == UINT64_MAX)
		return NULL;
	key.cookie = after + 1;
	return RB_NFIND(dirent_cookies, &d->cookies, &key);
}

void dir_clear(struct dir *d)
{
	struct dirent_node *e;

	/* Remove before freeing: tree walks touch the parents of a node. */
	while ((e = RB_ROOT(&d->names)) != NULL) {
		RB_REMOVE(dirent_names, &d->names, e);
		meta_free(e);
	}
	dir_init(d);
}
