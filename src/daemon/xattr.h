/*
 * xattr.h - a node's plain extended attributes, stored as given.
 *
 * Owns: the attributes of one node (names, values) and the table that
 * finds them, all charged as metadata (meta.h).  A node with none costs
 * one NULL pointer; its first attribute brings a table, freed again with
 * its last one.
 *
 * The table: an open-addressing hash table of the entries (linear
 * probing, FNV-1a hashes kept in the entries, at most 3/4 full, grown by
 * doubling and halved below 1/8; removal shifts the run back, so there
 * are no tombstones).  Set, find and remove cost O(1) expected, one
 * memcmp of the name found.  The entries are also on a list in the
 * order they were first set, which is the listing order (a replaced
 * value keeps its place); the table keeps the listing's length, so a
 * size probe reads a counter and a listing copies each name once.  It
 * counts names per namespace, so the namespaces in use are known without
 * reading a name (xattr_ns: the lock-free ENODATA answer to the kernel's
 * security.capability lookup before every write).
 *
 * Costs: per attribute one block of 40 bytes + value + name; per node
 * with attributes one block of 48 bytes + 8 per slot (at least 8 slots,
 * between 4/3 and 8 per attribute).  A set allocates the entry before it
 * touches anything and grows the table after, freeing the entry if that
 * fails: a failed set (-ENOMEM) changes nothing.  Growing may pass what
 * fs_setxattr made room for; the metadata slack (mem.h) covers it.
 *
 * Which names are stored is decided by the caller (fs_xattr.c): those of a
 * namespace xattr_ns_of() knows, user.*, trusted.* and security.*, as
 * tmpfs does; user.volatile.* never reaches this table.
 *
 * Locking: none inside; the owning node's lock (inode->lock, see
 * docs/LOCKING.md) protects the table and its entries: held for reading
 * by xattr_find, xattr_list, xattr_ns and xattr_count, for writing by
 * the rest.
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
	struct xattr *prev, *next; /* in the order first set */
	const char *name;          /* NUL-terminated; after the value, same block */
	size_t size;
	uint32_t hash;
	uint32_t name_len;         /* strlen(name) */
	char value[];              /* size bytes, then the name */
};

struct xattrs; /* the table: xattr.c */

/* The namespace bit (XATTR_NS_*) of a name, or 0 for names not stored. */
unsigned xattr_ns_of(const char *name);
/* The namespaces with at least one name stored (XATTR_NS_* bits). */
unsigned xattr_ns(const struct xattrs *t);
/* How many attributes are stored. */
size_t xattr_count(const struct xattrs *t);

/*
 * flags: XATTR_CREATE, XATTR_REPLACE or 0.  Zero or -EEXIST/-ENODATA/
 * -ENOMEM, -ERANGE for a name longer than XATTR_NAME_MAX, -EOPNOTSUPP
 * for a name of no stored namespace.  A failure changes nothing.
 */
int xattr_set(struct xattrs **t, const char *name, const void *value, size_t size,
	      int flags);
/* The attribute, or NULL. */
const struct xattr *xattr_find(const struct xattrs *t, const char *name);
/* Zero or -ENODATA. */
int xattr_remove(struct xattrs **t, const char *name);
/*
 * Writes the NUL-separated names into buf (when size > 0), in the order
 * first set, and returns the length of the whole list, or -ERANGE when
 * size > 0 is too small.
 */
long xattr_list(const struct xattrs *t, char *buf, size_t size);
void xattr_free_all(struct xattrs **t);

#endif
