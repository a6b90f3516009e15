/*
 * vxattr.c - the user.volatile.* extended attributes; see vxattr.h.
 */
#include "vxattr.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "evict.h"
#include "fs.h"
#include "vgrammar.h"
#include "vol.h"

static const char *short_name(const char *name)
{
	return name + sizeof(VXATTR_PREFIX) - 1;
}

static bool is_owner(struct fs *fs, uid_t caller)
{
	return caller == 0 || caller == fs->owner;
}

static int set_ranges(struct fs *fs, struct inode *n, bool mark, const char *value,
		      size_t size)
{
	struct vrange_list l;
	uint64_t bytes;
	int purged, ret;

	if (S_ISDIR(n->mode))
		return -EISDIR;
	if (!S_ISREG(n->mode))
		return -EINVAL;
	ret = vgrammar_parse_ranges(value, size, mark, &l);
	if (ret)
		return ret;
	if (mark)
		ret = vol_mark(fs, n, l.v, l.n, l.priority, l.age);
	else
		ret = vol_unmark(fs, n, l.v, l.n, &bytes, &purged);
	vrange_list_free(&l);
	return ret;
}

static int set_purge(struct fs *fs, struct inode *n, const char *value, size_t size,
		     uid_t caller)
{
	uint64_t bytes;
	int64_t got;
	bool all;
	int ret = vgrammar_parse_purge(value, size, &all, &bytes);

	if (ret)
		return ret;
	if (n == fs->root) {
		if (!is_owner(fs, caller))
			return -EPERM;
		got = all ? evict_all(fs) : (int64_t)evict_bytes(fs, bytes);
		/* Returns once the kernel dropped the data that went.  Names
		 * are refused by the daemon from the purge on; their dentry
		 * deletions are sent apart, and nothing waits for them: this
		 * request holds the root's i_rwsem, which they need. */
		if (fs->hooks.depend_all)
			fs->hooks.depend_all(fs->hooks.ctx);
		return got < 0 ? (int)got : 0;
	}
	if (!S_ISREG(n->mode) || !all)
		return -EINVAL;
	/* Bytes freed, 64-bit: more than 2 GiB is no error (DESIGN section 9). */
	got = evict_file(fs, n);
	if (fs->hooks.depend)
		fs->hooks.depend(fs->hooks.ctx, n, 0);
	return got < 0 ? (int)got : 0;
}

static int set_limit(struct fs *fs, const char *value, size_t size, uid_t caller)
{
	uint64_t limit;
	int ret;

	if (!is_owner(fs, caller))
		return -EPERM;
	ret = vgrammar_parse_size(value, size, &limit);
	if (ret)
		return -EINVAL;
	if (limit == 0)
		return -EINVAL;
	mem_set_limit(&fs->mem, limit);
	mem_reconcile(&fs->mem);
	evict_check(fs); /* lowering it purges at once */
	return 0;
}

int vxattr_set(struct fs *fs, struct inode *n, const char *name, const char *value,
	       size_t size, uid_t caller)
{
	const char *s = short_name(name);

	if (strcmp(s, "mark") == 0 || strcmp(s, "unmark") == 0)
		return set_ranges(fs, n, s[0] == 'm', value, size);
	if (strcmp(s, "purge") == 0)
		return set_purge(fs, n, value, size, caller);
	if (strcmp(s, "memory_limit") == 0 && n == fs->root)
		return set_limit(fs, value, size, caller);
	if (strcmp(s, "auto") == 0 && S_ISDIR(n->mode)) {
		int mode, ret = vgrammar_parse_auto(value, size, &mode);

		return ret ? ret : fs_set_auto(fs, n, mode);
	}
	return -EINVAL;
}

static long reply_value(struct strbuf *b, int ret, char *buf, size_t size)
{
	long len;

	if (ret)
		len = ret;
	else if (size == 0)
		len = (long)b->len;
	else if (size < b->len)
		len = -ERANGE;
	else {
		if (b->len)
			memcpy(buf, b->buf, b->len);
		len = (long)b->len;
	}
	strbuf_free(b);
	return len;
}

long vxattr_get(struct fs *fs, struct inode *n, const char *name, char *buf, size_t size)
{
	const char *s = short_name(name);
	struct strbuf b;
	int ret;

	strbuf_init(&b);
	if (S_ISREG(n->mode) && strcmp(s, "ranges") == 0)
		ret = vol_format_ranges(fs, n, &b);
	else if (S_ISREG(n->mode) && strcmp(s, "purged") == 0)
		ret = vol_format_purged(fs, n, &b);
	else if (n == fs->root && strcmp(s, "stats") == 0)
		ret = vol_format_stats(fs, &b);
	else if (n == fs->root && strcmp(s, "memory_limit") == 0)
		ret = strbuf_printf(&b, "%" PRIu64, atomic_load(&fs->mem.limit));
	else if (S_ISDIR(n->mode) && strcmp(s, "auto") == 0)
		ret = strbuf_printf(&b, "%s", vgrammar_auto_name(fs_get_auto(fs, n)));
	else
		ret = -ENODATA;
	return reply_value(&b, ret, buf, size);
}

int vxattr_remove(struct fs *fs, struct inode *n, const char *name)
{
	if (S_ISREG(n->mode) && strcmp(short_name(name), "purged") == 0)
		return vol_forget_purged(fs, n);
	return -ENODATA;
}

int vxattr_setxattr(struct fs *fs, struct inode *n, const char *name, const void *value,
		    size_t size, int flags, const struct fs_cred *cred)
{
	if (vxattr_is_ours(name))
		return vxattr_set(fs, n, name, value, size, cred->uid);
	return fs_setxattr(fs, n, name, value, size, flags, cred);
}

long vxattr_getxattr(struct fs *fs, struct inode *n, const char *name, void *buf, size_t size)
{
	if (vxattr_is_ours(name))
		return vxattr_get(fs, n, name, buf, size);
	return fs_getxattr(fs, n, name, buf, size);
}

/* Only the stored names: ours are never listed. */
long vxattr_listxattr(struct fs *fs, struct inode *n, char *buf, size_t size)
{
	return fs_listxattr(fs, n, buf, size);
}

int vxattr_removexattr(struct fs *fs, struct inode *n, const char *name)
{
	if (vxattr_is_ours(name))
		return vxattr_remove(fs, n, name);
	return fs_removexattr(fs, n, name);
}
