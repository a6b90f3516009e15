/*
 * dir.h - a directory's entries.
 *
 * Each entry sits in two red-black trees (libbsd's <bsd/sys/tree.h>):
 * by name, for lookup in O(log n), and by cookie, for readdir.  A
 * cookie is a per-directory counter value given to the entry when it is
 * added and never reused, so a readdir offset stays meaningful while the
 * directory changes: readdir resumes at the first entry whose cookie is
 * greater than the offset it was given (RB_NFIND), so no entry is
 * returned twice and no surviving entry is skipped; a rename within the
 * directory keeps the cookie (dir_replace), so a listing that renames
 * what it reads ends.  Cookies 1 and 2 are
 * "." and "..".
 *
 * Locking: none inside; fs->ns_lock protects every directory's entries.
 */
#ifndef VOLATILEFS_DIR_H
#define VOLATILEFS_DIR_H

#include <bsd/sys/tree.h>
#include <stddef.h>
#include <stdint.h>

struct inode;

struct dirent_node {
	RB_ENTRY(dirent_node) by_name;
	RB_ENTRY(dirent_node) by_cookie;
	uint64_t cookie;
	struct inode *inode;
	size_t namelen;
	char name[];
};

RB_HEAD(dirent_names, dirent_node);
RB_HEAD(dirent_cookies, dirent_node);

#define DIR_FIRST_COOKIE 3

struct dir {
	struct dirent_names names;
	struct dirent_cookies cookies;
	uint64_t next_cookie;
	uint64_t count;
};

void dir_init(struct dir *d);
struct dirent_node *dir_find(struct dir *d, const char *name);
/* Zero, -EEXIST or -ENOMEM.  The new entry is returned in *out when out is not NULL. */
int dir_add(struct dir *d, const char *name, struct inode *inode, struct dirent_node **out);
/* Remove and free the entry. */
void dir_remove(struct dir *d, struct dirent_node *e);
/*
 * A rename within d: e (just added under the new name) takes old's
 * cookie, and old is removed and freed.  The file keeps its place in
 * the listing: a reader past it does not meet it again, one before it
 * meets it once, under the new name.
 */
void dir_replace(struct dir *d, struct dirent_node *old, struct dirent_node *e);
/* Point an existing entry at another inode (rename over, exchange). */
static inline void dir_retarget(struct dirent_node *e, struct inode *inode)
{
	e->inode = inode;
}
/* First entry with a cookie greater than after, or NULL. */
struct dirent_node *dir_next(struct dir *d, uint64_t after);
/* Frees every entry without touching the inodes they name. */
void dir_clear(struct dir *d);

#endif
