/*
 * xattr.h - a node's plain extended attributes, stored as given.
 *
 * A node with none costs one NULL pointer; its first attribute brings a
 * small table (struct xattrs), freed again with its last one.  The table
 * keeps the names in a singly linked list, in the order they were first
 * set, and counts them by namespace, so the namespaces in use are known
 * without reading a name (xattr_ns: the lock-free ENODATA answer to the
 * kernel's security.capability lookup before every write).  Lookups are
 * linear in the number of attributes of that one node.
 *
 * Which names are stored is decided by the caller (fs.c): those of a
 * namespace xattr_ns_of() knows, user.*, trusted.* and security.*, as
 * tmpfs does; user.volatile.* never reaches this table.
 *
 * Locking: none inside; the owning inode's lock protects the table.
 */
#ifndef VOLATILEFS_XATTR_H
#define VOLATILEFS_XATTR_H

#include <stddef.h>
#include <stdint.h>

/* Namespaces stored, as tmpfs. */
#define XATTR_NS_USER     1u
#define XATTR_NS_TRUSTED  2u
#define XATTR_NS_SECURITY 4u
#define XATTR_NS_COUNT    3

struct xattr {
	struct xattr *next;
	char *name;
	size_t size;
	char value[];
};

struct xattrs {
	struct xattr *first;             /* in the order first set */
	uint32_t ns_count[XATTR_NS_COUNT]; /* names per namespace */
};

/* The namespace bit (XATTR_NS_*) of a name, or 0 for names not stored. */
unsigned xattr_ns_of(const char *name);
/* The namespaces with at least one name stored (XATTR_NS_* bits). */
unsigned xattr_ns(const struct xattrs *t);

/*
 * flags: XATTR_CREATE, XATTR_REPLACE or 0.  Zero or -EEXIST/-ENODATA/
 * -ENOMEM, or -EOPNOTSUPP for a name of no stored namespace.  A failure
 * changes nothing.
 */
int xattr_set(struct xattrs **t, const char *name, const void *value, size_t size,
	      int flags);
/* The attribute, or NULL. */
const struct xattr *xattr_find(const struct xattrs *t, const char *name);
/* Zero or -ENODATA. */
int xattr_remove(struct xattrs **t, const char *name);
/*
 * Writes the NUL-separated names into buf (when size > 0) and returns
 * the length of the whole list, or -ERANGE when size > 0 is too small.
 */
long xattr_list(const struct xattrs *t, char *buf, size_t size);
void xattr_free_all(struct xattrs **t);

#endif
