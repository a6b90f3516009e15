/*
 * xattr.h - a node's plain extended attributes, stored as given.
 *
 * A short singly linked list per node: files carry few attributes, and
 * a list keeps the cost of a node with none at one pointer.  Lookups are
 * linear in the number of attributes of that one node.
 *
 * Which names are stored is decided by the caller (fs.c): user.*,
 * trusted.* and security.*, as tmpfs does; user.volatile.* never reaches
 * this list.
 *
 * Locking: none inside; the owning inode's lock protects the list.
 */
#ifndef VOLATILEFS_XATTR_H
#define VOLATILEFS_XATTR_H

#include <stddef.h>

struct xattr {
	struct xattr *next;
	char *name;
	size_t size;
	char value[];
};

/* flags: XATTR_CREATE, XATTR_REPLACE or 0.  Zero or -EEXIST/-ENODATA/-ENOMEM. */
int xattr_set(struct xattr **list, const char *name, const void *value, size_t size,
	      int flags);
/* The attribute, or NULL. */
const struct xattr *xattr_find(const struct xattr *list, const char *name);
/* Zero or -ENODATA. */
int xattr_remove(struct xattr **list, const char *name);
/*
 * Writes the NUL-separated names into buf (when size > 0) and returns
 * the length of the whole list, or -ERANGE when size > 0 is too small.
 */
long xattr_list(const struct xattr *list, char *buf, size_t size);
void xattr_free_all(struct xattr **list);

#endif
