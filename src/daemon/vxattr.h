/*
 * vxattr.h - the user.volatile.* extended attributes (DESIGN section 5).
 *
 * These names are an interface, never stored.  This is the layer of
 * requests on them, above the volatile layer (vol.c, evict.c) and the
 * filesystem (fs.h): the FUSE glue hands every xattr request to
 * vxattr_setxattr/getxattr/listxattr/removexattr, which answer the names
 * with the prefix here and pass every other name down to fs_*xattr
 * (which refuse ours: they store plain xattrs only).  listxattr never
 * shows them.
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

#include "fs.h"

#define VXATTR_PREFIX FS_VOLATILE_PREFIX

static inline bool vxattr_is_ours(const char *name)
{
	return __builtin_strncmp(name, VXATTR_PREFIX, sizeof(VXATTR_PREFIX) - 1) == 0;
}

int vxattr_set(struct fs *fs, struct inode *n, const char *name, const char *value,
	       size_t size, uid_t caller);
/* The value's length (copied when size > 0), or -errno (-ERANGE, -E2BIG, -ENODATA ...). */
long vxattr_get(struct fs *fs, struct inode *n, const char *name, char *buf, size_t size);
int vxattr_remove(struct fs *fs, struct inode *n, const char *name);

/*
 * The xattr requests, as fs_setxattr etc. (fs.h) take them: a
 * user.volatile.* name is answered by vxattr_set/get/remove (cred: the
 * caller, for the owner-only names), any other goes to the plain store.
 */
int vxattr_setxattr(struct fs *fs, struct inode *n, const char *name, const void *value,
		    size_t size, int flags, const struct fs_cred *cred);
long vxattr_getxattr(struct fs *fs, struct inode *n, const char *name, void *buf, size_t size);
long vxattr_listxattr(struct fs *fs, struct inode *n, char *buf, size_t size);
int vxattr_removexattr(struct fs *fs, struct inode *n, const char *name);

#endif
