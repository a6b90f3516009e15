/*
 * fs_xattr.c - plain extended attributes, stored on the node (xattr.h)
 * under its lock.  The user.volatile.* names are never stored here: the
 * layer above answers them (vxattr.h).
 */
#include "fs_int.h"

#include <sys/xattr.h>

#include "meta.h"

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
	fs_room_end(fs);
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
