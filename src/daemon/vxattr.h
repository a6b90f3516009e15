/*
 * vxattr.h - the user.volatile.* extended attributes (SPEC section 5).
 *
 * These names are an interface, never stored: fs.c hands every name with
 * the prefix to these functions, and listxattr never shows them.
 *
 *   name          on            set                       get
 *   mark          regular file  mark ranges               ENODATA
 *   unmark        regular file  unmark ranges             ENODATA
 *   ranges        regular file  EINVAL                    one line per unit
 *   purged        regular file  EINVAL (remove: forget)   the purged set
 *   purge         regular file  "all": purge its units    ENODATA
 *   purge         mount root    "all" or SIZE (owner)     ENODATA
 *   stats         mount root    EINVAL                    key=value lines
 *   memory_limit  mount root    SIZE, live (owner)        the limit
 *   auto          directory     off, mark or unlink       the setting
 * mark/unmark on a directory: EISDIR.  Any other name, or a name on a
 * node it does not apply to: set EINVAL, get ENODATA.  "owner": uid 0
 * or the user who mounted, else EPERM.  The kernel has already checked
 * write (set) or read (get) permission, as for every user.* name.
 */
#ifndef VOLATILEFS_VXATTR_H
#define VOLATILEFS_VXATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VXATTR_PREFIX "user.volatile."

struct fs;
struct inode;

static inline bool vxattr_is_ours(const char *name)
{
	return __builtin_strncmp(name, VXATTR_PREFIX, sizeof(VXATTR_PREFIX) - 1) == 0;
}

int vxattr_set(struct fs *fs, struct inode *n, const char *name, const char *value,
	       size_t size, uid_t caller);
/* The value's length (copied when size > 0), or -errno (-ERANGE, -E2BIG, -ENODATA ...). */
long vxattr_get(struct fs *fs, struct inode *n, const char *name, char *buf, size_t size);
int vxattr_remove(struct fs *fs, struct inode *n, const char *name);

#endif
