/*
 * ops.c - the FUSE glue: the only file that speaks the low-level API.
 *
 * Each handler maps node ids to nodes, calls into the layers below (the
 * filesystem, fs.h; xattr requests through vxattr.h, the ioctls through
 * vol.h and evict.h), and turns the result into a reply.  A reply that reports a purge (the user.volatile
 * xattrs, the ioctls) goes through the notifier, which sends it once the
 * kernel has dropped the purged pages (notify.h): the handler returns at
 * once and no worker waits.  No lock is held across a fuse_reply_* call:
 * the layers below take and drop their locks inside each call.  (One exception, a
 * file's read lock across a READ reply: see vfs_read.)
 *
 * Node ids are node addresses; the root is FUSE_ROOT_ID.  The kernel
 * only sends ids it holds a lookup reference to, so the node is alive.
 *
 * Caching: every change passes through this daemon, so entries and
 * attributes are cached for a day and file pages are kept across opens
 * (keep_cache).  AUTO_INVAL_DATA is off: without a writeback cache the
 * kernel does not track mtime itself, so it would throw away a file's
 * pages after every write.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <poll.h>

#include "evict.h"
#include "fs.h"
#include "fuseio.h"
#include "notify.h"
#include "tbuf.h"
#include "ops.h"
#include "vol.h"
#include "vxattr.h"
#include "volatilefs.h"

#define CACHE_TIMEOUT 86400.0

/*
 * Reply buffers for directory listings and xattr values: the worker
 * thread's (tbuf.h), kept between requests up to THREAD_BUF_KEEP bytes;
 * a larger one is given back after its reply, so that many workers that
 * once served a large reply do not keep it for good.
 */
#define THREAD_BUF_KEEP (16u << 10)

void ops_thread_cleanup(void)
{
	tbuf_release();
}

/*
 * The mount's readahead window.  The kernel reads ahead of a sequential
 * reader by its bdi's window, 128 KiB by default, and sends one READ per
 * window step, however large max_pages (1 MiB here) would allow.  Root
 * may widen the window in sysfs: it is set to READAHEAD_KB, unless it is
 * wider already, when the first request after INIT arrives (INIT's reply
 * sets the window to min(window, what was offered), and every other
 * request comes after that reply was taken).  A wider window lets cold
 * sequential reads of the classic path come in 1 MiB requests.  A daemon
 * that is not root cannot write there and keeps the kernel's default.
 */
#define READAHEAD_KB 1024

/* The mount's FUSE connection number (its device minor; -1 unknown), set
 * before the session's threads start, and whether its window was seen to. */
static int conn_minor = -1;
static _Atomic bool readahead_tuned;

void ops_set_connection(int minor)
{
	conn_minor = minor;
}

static void readahead_tune(void)
{
	char path[64], buf[32];
	ssize_t n;
	int fd;

	if (atomic_exchange(&readahead_tuned, true) || conn_minor < 0)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/0:%d/read_ahead_kb", conn_minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		if (strtoul(buf, NULL, 10) < READAHEAD_KB) {
			n = snprintf(buf, sizeof(buf), "%u\n", READAHEAD_KB);
			/* A refusal leaves the kernel's window: slower, not wrong. */
			if (pwrite(fd, buf, (size_t)n, 0) != n)
				n = 0;
		}
	}
	close(fd);
}

static struct fs *fs_of(fuse_req_t req)
{
	struct fs *fs = fuse_req_userdata(req);

	if (__builtin_expect(!atomic_load_explicit(&readahead_tuned, memory_order_relaxed), 0))
		readahead_tune();
	return fs;
}

/* The notifier the daemon wired into fs->hooks (main.c). */
static struct notifier *nt_of(fuse_req_t req)
{
	return fs_of(req)->hooks.ctx;
}

static struct inode *node_of(fuse_req_t req, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return fs_of(req)->root;
	return (struct inode *)(uintptr_t)ino;
}

static fuse_ino_t id_of(struct fs *fs, struct inode *n)
{
	return n == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static void fill_entry(struct fs *fs, struct fuse_entry_param *e, struct inode *n,
		       const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = id_of(fs, n);
	e->generation = n->ino; /* node addresses are reused; st_ino never is */
	e->attr = *st;
	e->attr_timeout = CACHE_TIMEOUT;
	e->entry_timeout = CACHE_TIMEOUT;
}

static void reply_entry_or_err(fuse_req_t req, int ret, struct inode *n,
			       const struct stat *st)
{
	struct fuse_entry_param e;
	struct fs *fs;

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fs = fs_of(req);
	fill_entry(fs, &e, n, st);
	/* A reply the kernel did not take (interrupted, or the connection
	 * is gone) gave it no lookup to forget later.  req is freed by now. */
	if (fuse_reply_entry(req, &e) != 0)
		fs_forget(fs, n, 1);
}

static void vfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~(unsigned)(FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_WRITEBACK_CACHE |
				  FUSE_CAP_HANDLE_KILLPRIV);
	if (conn->capable & FUSE_CAP_EXPLICIT_INVAL_DATA)
		conn->want |= FUSE_CAP_EXPLICIT_INVAL_DATA;
	/* File handles outlive the kernel's inode cache (vfs_lookup). */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	conn->time_gran = 1;
	/* The kernel offers passthrough (fuseio.c adds it to this INIT's
	 * reply): file data goes to shared memory from the first file on. */
	if ((fuseio_offered() & (FUSEIO_PASSTHROUGH | FUSEIO_INIT_EXT)) ==
	    (FUSEIO_PASSTHROUGH | FUSEIO_INIT_EXT))
		fs_use_shm_store(userdata);
}

/*
 * An open of a regular file on the passthrough path (DESIGN section 11):
 * the kernel reads, writes and maps its backing file itself, and keeps
 * no pages of its own (no keep_cache: the kernel refuses it beside
 * passthrough).  The backing id, or 0 for a classic open (not this
 * path, or the backing file could not be registered: then the daemon
 * serves it from the same backing file).
 */
static int32_t passthrough_open(struct fs *fs, struct ofile *of, struct fuse_file_info *fi)
{
	int32_t id;

	if (!fs->passthrough)
		return 0;
	id = fs_backing_get(fs, of, fuseio_backing_open);
	if (id > 0) {
		fi->keep_cache = 0;
		/* Writes the daemon must see go through it (FOPEN_DIRECT_IO
		 * overrides passthrough for read and write, not for mmap). */
		fi->direct_io = of->writes_seen;
		/* FLUSH only where vfs_flush has work: a writable open. */
		fi->noflush = (of->flags & O_ACCMODE) == O_RDONLY;
		/* The kernel's splice read of such an open (sendfile, splice,
		 * copy_file_range) goes through the FUSE file's page cache,
		 * filled by READ requests: a purge must invalidate it. */
		if (fi->direct_io)
			atomic_store(&of->inode->fuse_cached, true);
		return id;
	}
	fuse_log(FUSE_LOG_ERR, "volatilefs: passthrough open refused (%s); served by the daemon\n",
		 strerror((int)-id));
	atomic_store(&of->inode->fuse_cached, true); /* the kernel may cache it now */
	return 0;
}

/* Undo what a passthrough open did, before the open description goes. */
static void passthrough_release(struct fs *fs, struct ofile *of)
{
	int32_t id = fs_backing_put(fs, of);

	if (id > 0)
		fuseio_backing_close(id);
}

static void vfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct inode *n = NULL;
	struct stat st;
	int ret;

	/* Path walks never send "." or "..": these come with the node id of
	 * a file handle the kernel no longer holds (FUSE_CAP_EXPORT_SUPPORT). */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		ret = fs_lookup_id(fs, (uintptr_t)node_of(req, parent), name, &n, &st);
		reply_entry_or_err(req, ret, n, &st);
		return;
	}
	ret = fs_lookup(fs, node_of(req, parent), name, &n, &st);

	if (ret == -ENOENT) {
		/* A negative entry: the name cannot appear behind the kernel's back. */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = CACHE_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry_or_err(req, ret, n, &st);
}

static void vfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_forget(fs_of(req), node_of(req, ino), nlookup);
	fuse_reply_none(req);
}

static void vfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		fs_forget(fs_of(req), node_of(req, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void vfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fs_getattr(fs_of(req), node_of(req, ino), &st);
	fuse_reply_attr(req, &st, CACHE_TIMEOUT);
}

/*
 * tmpfs drops S_ISGID when a user outside the file's group writes or
 * truncates, even without group execute (the VFS's
 * setattr_should_drop_sgid); the FUSE kernel's own clearing, without
 * handle_killpriv, covers only the group-execute case (and S_ISUID).
 * Do the rest here, before the change, as the VFS does.  all: the
 * kernel cleared nothing (a write through a passthrough open with
 * FOPEN_DIRECT_IO skips its file_remove_privs; with
 * FUSE_HANDLE_KILLPRIV_V2, fuseio.h, it never clears), so S_ISUID and a
 * group-executable S_ISGID go here too, for a writer other than root
 * (the one that has CAP_FSETID).
 */
static void drop_setid(fuse_req_t req, struct inode *n, bool all)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fs_setattr sa = { .valid = FS_SET_MODE };
	gid_t groups[64];
	struct stat st;
	bool member = false;
	int ng;

	fs_getattr(fs_of(req), n, &st);
	if (!(st.st_mode & (S_ISUID | S_ISGID)) || ctx->uid == 0)
		return;
	sa.mode = st.st_mode;
	if (all) {
		sa.mode &= ~(mode_t)S_ISUID;
		if (st.st_mode & S_IXGRP)
			sa.mode &= ~(mode_t)S_ISGID;
	}
	if ((sa.mode & S_ISGID) && !(st.st_mode & S_IXGRP) && ctx->gid != st.st_gid) {
		ng = fuse_req_getgroups(req, 64, groups);
		for (int i = 0; i < ng && i < 64; i++)
			member |= groups[i] == st.st_gid;
		if (!member)
			sa.mode &= ~(mode_t)S_ISGID;
	}
	if (sa.mode != st.st_mode)
		fs_setattr(fs_of(req), n, &sa, &st);
}

/* The attributes a SETATTR may name; one naming none of them is "empty". */
#define SETATTR_ATTRS (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |      \
		       FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |     \
		       FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)

/*
 * What the kernel leaves to the daemon under FUSE_HANDLE_KILLPRIV_V2
 * (fuseio.h), for a SETATTR that sets no mode: a chown or chgrp of a
 * non-directory clears S_ISUID, and S_ISGID with group execute, whoever
 * asks (tmpfs does, and the kernel computed it before); a truncate
 * clears them as a write does (drop_setid, all).
 * An empty SETATTR comes from a write or fallocate of a set-id file by a
 * caller without CAP_FSETID, or from a chown(-1, -1) by anyone (the
 * kernel sends its ATTR_CTIME as nothing).  A directory is never
 * written, so there it is a chown, which leaves a directory's bits
 * alone; from root it is a chown too (root's writes keep the bits and
 * send none), which clears as any chown does; from another caller
 * either one clears as a write does.
 */
static void killpriv_v2(fuse_req_t req, struct inode *n, int to_set, struct fs_setattr *sa)
{
	struct stat st;
	bool owner;

	if (!fuseio_killpriv() || (to_set & FUSE_SET_ATTR_MODE))
		return;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		drop_setid(req, n, true);
		return;
	}
	owner = to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
	if (!owner && (to_set & SETATTR_ATTRS))
		return;
	fs_getattr(fs_of(req), n, &st);
	if (S_ISDIR(st.st_mode) || !(st.st_mode & (S_ISUID | S_ISGID)))
		return;
	if (!owner && fuse_req_ctx(req)->uid != 0) {
		drop_setid(req, n, true);
		return;
	}
	sa->valid |= FS_SET_MODE;
	sa->mode = st.st_mode & ~(mode_t)S_ISUID;
	if (st.st_mode & S_IXGRP)
		sa->mode &= ~(mode_t)S_ISGID;
}

static void vfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	struct fs_setattr sa = { 0 };
	struct stat st;
	int ret;

	(void)fi;
	if (to_set & FUSE_SET_ATTR_MODE) { sa.valid |= FS_SET_MODE; sa.mode = attr->st_mode; }
	if (to_set & FUSE_SET_ATTR_UID) { sa.valid |= FS_SET_UID; sa.uid = attr->st_uid; }
	if (to_set & FUSE_SET_ATTR_GID) { sa.valid |= FS_SET_GID; sa.gid = attr->st_gid; }
	if ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	killpriv_v2(req, node_of(req, ino), to_set, &sa);
	/* A chown(-1, -1) moves the ctime (the kernel sends it as nothing). */
	if (!(to_set & SETATTR_ATTRS)) {
		sa.valid |= FS_SET_CTIME;
		inode_now(&sa.ctime);
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (!(to_set & FUSE_SET_ATTR_MODE) && !fuseio_killpriv())
			drop_setid(req, node_of(req, ino), false);
		sa.valid |= FS_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa.valid |= FS_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) { sa.valid |= FS_SET_ATIME; sa.atime = attr->st_atim; }
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa.valid |= FS_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) { sa.valid |= FS_SET_MTIME; sa.mtime = attr->st_mtim; }
	if (to_set & FUSE_SET_ATTR_CTIME) { sa.valid |= FS_SET_CTIME; sa.ctime = attr->st_ctim; }
	ret = fs_setattr(fs_of(req), node_of(req, ino), &sa, &st);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, CACHE_TIMEOUT);
}

static void vfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	const char *t = fs_readlink(fs_of(req), node_of(req, ino));

	if (t)
		fuse_reply_readlink(req, t);
	else
		fuse_reply_err(req, EINVAL);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev, const char *target)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fs_cred cred = { .uid = ctx->uid, .gid = ctx->gid };
	struct inode *n = NULL;
	struct stat st;
	int ret = fs_mknod(fs_of(req), node_of(req, parent), name, mode, rdev, target, &cred,
			   &n, &st);

	reply_entry_or_err(req, ret, n, &st);
}

static void vfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev)
{
	make_node(req, parent, name, mode, rdev, NULL);
}

static void vfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

static void vfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_node(req, parent, name, S_IFLNK | 0777, 0, link);
}

static void vfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -fs_unlink(fs_of(req), node_of(req, parent), name));
}

static void vfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -fs_rmdir(fs_of(req), node_of(req, parent), name));
}

static void vfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fs_cred cred = { .uid = ctx->uid, .gid = ctx->gid };

	fuse_reply_err(req, -fs_rename(fs_of(req), node_of(req, parent), name,
				       node_of(req, newparent), newname, flags, &cred));
}

static void vfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct inode *n = node_of(req, ino);
	struct stat st;
	int ret = fs_link(fs_of(req), n, node_of(req, newparent), newname, &st);

	reply_entry_or_err(req, ret, n, &st);
}

static void vfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct inode *n = node_of(req, ino);
	struct ofile *of;
	struct fs *fs;
	int32_t id;
	int ret;

	if (S_ISDIR(n->mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* First what can fail, then the truncation. */
	of = fs_ofile_new(fs_of(req));
	if (!of) {
		fuse_reply_err(req, errno == ENOSPC ? ENOSPC : ENOMEM);
		return;
	}
	ret = fs_open_attach(fs_of(req), of, n, fi->flags);
	if (ret) {
		fs_ofile_discard(fs_of(req), of);
		fuse_reply_err(req, -ret);
		return;
	}
	if ((fi->flags & O_TRUNC) && S_ISREG(n->mode)) {
		/* libfuse negotiates atomic O_TRUNC: the truncation is ours.
		 * Like the VFS, O_TRUNC stamps mtime and ctime even on an
		 * empty file, and clears set-id bits as a truncate does (the
		 * kernel's FUSE_OPEN_KILL_SUIDGID, which libfuse 3.14 drops,
		 * or its own SETATTR, which atomic O_TRUNC skips). */
		struct fs_setattr sa = { .valid = FS_SET_SIZE | FS_SET_MTIME_NOW };
		struct stat st;

		drop_setid(req, n, true);

		ret = fs_setattr(fs_of(req), n, &sa, &st);
		if (ret) {
			fs_release_file(fs_of(req), of);
			fuse_reply_err(req, -ret);
			return;
		}
	}
	fi->keep_cache = 1;
	fi->fh = (uint64_t)(uintptr_t)of;
	fs = fs_of(req);
	id = S_ISREG(n->mode) ? passthrough_open(fs, of, fi) : 0;
	/* Not taken (interrupted, or the connection is gone): no RELEASE
	 * will come.  req is freed by the reply, so fs was read before. */
	if (fuseio_reply_open(req, fi, id) != 0) {
		passthrough_release(fs, of);
		fs_release_file(fs, of);
	}
}

static void vfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ofile *of = (struct ofile *)(uintptr_t)fi->fh;

	(void)ino;
	passthrough_release(fs_of(req), of);
	fs_release_file(fs_of(req), of);
	fuse_reply_err(req, 0);
}

static void vfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fs_cred cred = { .uid = ctx->uid, .gid = ctx->gid };
	struct fuse_entry_param e;
	struct inode *n = NULL;
	struct ofile *of;
	struct stat st;
	struct fs *fs;
	int32_t id;
	int ret;

	/* First what can fail for memory, then the file: a create that
	 * fails leaves no name behind. */
	of = fs_ofile_new(fs_of(req));
	if (!of) {
		fuse_reply_err(req, errno == ENOSPC ? ENOSPC : ENOMEM);
		return;
	}
	/* "/": an O_TMPFILE open (fuseio.c passes TMPFILE on as CREATE). */
	ret = fs_mknod(fs_of(req), node_of(req, parent), strcmp(name, "/") ? name : NULL,
		       S_IFREG | (mode & 07777), 0, NULL, &cred, &n, &st);
	if (ret) {
		fs_ofile_discard(fs_of(req), of);
		fuse_reply_err(req, -ret);
		return;
	}
	(void)fs_open_attach(fs_of(req), of, n, fi->flags); /* a new node: never refused */
	fill_entry(fs_of(req), &e, n, &st);
	fi->keep_cache = 1;
	fi->fh = (uint64_t)(uintptr_t)of;
	fs = fs_of(req);
	id = passthrough_open(fs, of, fi);
	if (fuseio_reply_create(req, &e, fi, id) != 0) { /* as in vfs_open */
		passthrough_release(fs, of);
		fs_release_file(fs, of);
		fs_forget(fs, n, 1);
	}
}

static void reply_read(void *ctx, const struct iovec *iov, size_t count)
{
	fuse_reply_iov(ctx, iov, (int)count);
}

/*
 * Reads are answered from the file's pages themselves (fs_read_reply):
 * no buffer to keep per thread and no copy on our side.  The file's read
 * lock is held across fuse_reply_iov, the one exception to "no lock
 * across a reply": writing a READ reply to the device copies into pages
 * the kernel locked or pinned before it sent the request, and waits for
 * nothing this daemon does.
 */
static void vfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	int ret;

	(void)fi;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ret = fs_read_reply(fs_of(req), node_of(req, ino), (uint64_t)off, size, reply_read, req);
	if (ret < 0)
		fuse_reply_err(req, -ret);
}

/*
 * The data of a large write sits in libfuse's receive buffer of this
 * worker thread (1 MiB, kept for the thread's life; the kernel hands
 * requests to idle workers in turn, so every worker's buffer ends up
 * touched).  Those megabytes count against the limit like the rest.
 * When the daemon is at or over memory_low, the whole pages of the data
 * just copied into the arena go back to the kernel, so that request
 * buffers do not take room from file data.  Not otherwise: the next
 * large write would fault them in again, zeroed, which measured 1.6x
 * slower for a 1 MiB sequential writer.  libfuse reads nothing of the
 * buffer after the handler returns.
 */
#define RELEASE_WRITE_BYTES (64u << 10)

static void release_request_pages(struct fs *fs, const char *buf, size_t size)
{
	uintptr_t start = ((uintptr_t)buf + 4095) & ~(uintptr_t)4095;
	uintptr_t end = ((uintptr_t)buf + size) & ~(uintptr_t)4095;

	if (size >= RELEASE_WRITE_BYTES && end > start &&
	    mem_rss(&fs->mem) >= atomic_load(&fs->mem.low))
		madvise((void *)start, end - start, MADV_DONTNEED);
}

static void vfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	ssize_t n;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct fs *fs = fs_of(req);

	drop_setid(req, node_of(req, ino),
		   ((struct ofile *)(uintptr_t)fi->fh)->passthrough || fuseio_killpriv());
	n = fi->writepage ? fs_writeback(fs, node_of(req, ino), (uint64_t)off, buf, size)
			  : fs_write(fs, node_of(req, ino), (uint64_t)off, buf, size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
	release_request_pages(fs, buf, size);
}

static void vfs_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, 0);
}

/*
 * Without passthrough nothing to flush: data reaches the daemon with
 * each write.  ENOSYS once makes the kernel stop sending FLUSH on every
 * close (one request less per open file).
 * On the passthrough path the kernel stores through a writable open's
 * mappings into the backing file without a request, and keeps the
 * attributes it cached: the close of such an open drops them before
 * close(2) returns, so that a stat after it asks again and sees the
 * times the stores moved (RELEASE, which does it too, is sent after
 * close(2) has returned).  Dropping attributes takes no lock in the
 * kernel (offset -1), so it is sent from here.  Read-only passthrough
 * opens are answered FOPEN_NOFLUSH (passthrough_open); a classic open
 * on this path gets 0 (ENOSYS would stop FLUSH for every open).
 */
static void vfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct ofile *of = (const struct ofile *)(uintptr_t)fi->fh;

	if (!fs_of(req)->passthrough) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (of->passthrough && (of->flags & O_ACCMODE) != O_RDONLY)
		(void)fuse_lowlevel_notify_inval_inode(nt_of(req)->se, ino, -1, 0);
	fuse_reply_err(req, 0);
}

static void vfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	vfs_ok(req, ino, fi); /* memory is as durable as it gets */
}

static void vfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!S_ISDIR(node_of(req, ino)->mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fuse_reply_open(req, fi);
}

struct dirbuf {
	fuse_req_t req;
	struct fs *fs;
	char *buf;
	size_t size, pos;
	bool plus;
	struct inode **given;  /* readdirplus: the entries that gave a lookup */
	size_t ngiven;
};

static int dir_fill(void *ctx, const char *name, struct inode *n, const struct stat *st,
		    uint64_t next_off)
{
	struct dirbuf *d = ctx;
	size_t len;

	if (d->plus) {
		struct fuse_entry_param e;

		fill_entry(d->fs, &e, n, st);
		len = fuse_add_direntry_plus(d->req, d->buf + d->pos, d->size - d->pos, name, &e,
					     (off_t)next_off);
		/* fs_readdir counts a lookup for each entry that fits, but
		 * "." and ".." */
		if (len <= d->size - d->pos && strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
			d->given[d->ngiven++] = n;
	} else {
		/* Type bits and st_ino never change: no lock needed. */
		struct stat s = { .st_ino = n->ino, .st_mode = n->mode & S_IFMT };

		len = fuse_add_direntry(d->req, d->buf + d->pos, d->size - d->pos, name, &s,
					(off_t)next_off);
	}
	if (len > d->size - d->pos)
		return 1;
	d->pos += len;
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct dirbuf d = { .req = req, .fs = fs_of(req), .size = size, .plus = plus };
	int ret;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	d.buf = tbuf_get(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (plus) {
		/* No entry is smaller than one with a one-byte name
		 * (with a NULL buffer libfuse only says the size). */
		size_t least = fuse_add_direntry_plus(req, NULL, 0, "x", NULL, 0);

		d.given = malloc((size / least + 1) * sizeof(*d.given));
		if (!d.given) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	ret = fs_readdir(d.fs, node_of(req, ino), (uint64_t)off, plus, dir_fill, &d);
	if (ret) {
		fuse_reply_err(req, -ret);
	} else if (fuse_reply_buf(req, d.buf, d.pos) != 0) {
		/* Not taken (interrupted, or the connection is gone): the
		 * kernel will not forget the lookups it never saw. */
		for (size_t i = 0; i < d.ngiven; i++)
			fs_forget(d.fs, d.given[i], 1);
	}
	free(d.given);
	tbuf_shrink(THREAD_BUF_KEEP);
}

static void vfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void vfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void vfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			 struct fuse_file_info *fi)
{
	(void)datasync;
	vfs_ok(req, ino, fi);
}

static void vfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	fs_statfs(fs_of(req), &sv);
	fuse_reply_statfs(req, &sv);
}

static void vfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fs_cred cred = { .uid = ctx->uid, .gid = ctx->gid };
	int ret;

	if (!vxattr_is_ours(name)) {
		fuse_reply_err(req, -vxattr_setxattr(fs_of(req), node_of(req, ino), name, value,
						     size, flags, &cred));
		return;
	}
	/* unmark, purge: the reply may report purges. */
	if (notify_report_begin(nt_of(req)) < 0) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = vxattr_setxattr(fs_of(req), node_of(req, ino), name, value, size, flags, &cred);
	notify_reply_err(nt_of(req), req, -ret);
}

/* Reply to a getxattr/listxattr size probe or fill, given a filled buffer of len bytes. */
static void reply_xattr_buf(fuse_req_t req, long len, const char *buf, size_t size)
{
	if (len < 0)
		fuse_reply_err(req, (int)-len);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

static void vfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = NULL;
	long len;

	if (size && !(buf = tbuf_get(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (!vxattr_is_ours(name)) {
		len = vxattr_getxattr(fs_of(req), node_of(req, ino), name, buf, size);
		reply_xattr_buf(req, len, buf, size);
	} else if (notify_report_begin(nt_of(req)) < 0) {
		fuse_reply_err(req, ENOMEM);
	} else {
		/* ranges, purged: the reply may report purges. */
		len = vxattr_getxattr(fs_of(req), node_of(req, ino), name, buf, size);
		notify_reply_xattr(nt_of(req), req, len, buf, size);
	}
	tbuf_shrink(THREAD_BUF_KEEP);
}

static void vfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = NULL;
	long len;

	if (size && !(buf = tbuf_get(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	len = vxattr_listxattr(fs_of(req), node_of(req, ino), buf, size);
	reply_xattr_buf(req, len, buf, size);	tbuf_shrink(THREAD_BUF_KEEP);
}

static void vfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, -vxattr_removexattr(fs_of(req), node_of(req, ino), name));
}

static void vfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			  off_t length, struct fuse_file_info *fi)
{
	(void)fi;
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -fs_fallocate(fs_of(req), node_of(req, ino), mode,
					  (uint64_t)offset, (uint64_t)length));
}

static void vfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		      struct fuse_file_info *fi)
{
	int64_t ret;

	(void)fi;
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	ret = fs_lseek(fs_of(req), node_of(req, ino), (uint64_t)off, whence);
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else
		fuse_reply_lseek(req, (off_t)ret);
}

/* The mark flags a client may pass (volatilefs.h). */
#define MARK_FLAGS_KNOWN (VOLATILEFS_AGE | VOLATILEFS_PRIORITY(15))

/* The priority and age of mark flags, or -EINVAL. */
static int mark_flags(uint32_t flags, unsigned *prio)
{
	*prio = VOLATILEFS_PRIORITY_DEFAULT;
	if (flags & ~MARK_FLAGS_KNOWN)
		return -EINVAL;
	if (flags & VOLATILEFS_PRIORITY(0))
		*prio = (flags >> 4) & 0xfu;
	else if (flags & (VOLATILEFS_PRIORITY(15) & ~VOLATILEFS_PRIORITY(0)))
		return -EINVAL; /* priority bits without "a priority is given" */
	return *prio > VGRAMMAR_PRIORITY_MAX ? -EINVAL : 0;
}

static int ioctl_mark(struct fs *fs, struct inode *n, const struct volatilefs_mark_arg *a)
{
	unsigned prio;
	struct vrange r;
	int ret;

	if (a->reserved)
		return -EINVAL;
	ret = mark_flags(a->flags, &prio);
	if (!ret)
		ret = vol_check_range(a->offset, a->length, &r);
	if (ret)
		return ret;
	return vol_mark(fs, n, &r, 1, prio, a->flags & VOLATILEFS_AGE);
}

/*
 * volatilefs_batch (volatilefs.h): every range and the flags are checked
 * before anything changes; then one unmark of all the unmark ranges, and
 * one mark of all the mark ranges, whose failure is reported in
 * mark_error and does not undo the unmark.
 */
static int ioctl_batch(struct fs *fs, struct inode *n, struct volatilefs_batch_arg *a)
{
	struct vrange r[VOLATILEFS_BATCH_MAX];
	unsigned char each[VOLATILEFS_BATCH_MAX];
	unsigned prio = VOLATILEFS_PRIORITY_DEFAULT;
	int purged = 0, ret;

	if (a->reserved || a->mark_error || a->bytes ||
	    a->nunmark > VOLATILEFS_BATCH_MAX || a->nmark > VOLATILEFS_BATCH_MAX - a->nunmark)
		return -EINVAL;
	ret = mark_flags(a->flags, &prio);
	for (uint32_t i = 0; i < a->nunmark + a->nmark && !ret; i++)
		ret = vol_check_range(a->ranges[i].offset, a->ranges[i].length, &r[i]);
	if (ret)
		return ret;
	memset(a->purged, 0, sizeof(a->purged));
	if (a->nunmark) {
		ret = vol_unmark_each(fs, n, r, a->nunmark, &a->bytes, &purged, each);
		if (ret)
			return ret;
		for (uint32_t i = 0; i < a->nunmark; i++)
			a->purged[i / 64] |= (uint64_t)(each[i] != 0) << (i % 64);
	}
	if (a->nmark)
		a->mark_error = -vol_mark(fs, n, r + a->nunmark, a->nmark, prio,
					  a->flags & VOLATILEFS_AGE);
	return 0;
}

static int ioctl_unmark(struct fs *fs, struct inode *n, struct volatilefs_unmark_arg *a)
{
	struct vrange r;
	int purged = 0, ret;

	if (a->reserved)
		return -EINVAL;
	ret = vol_check_range(a->offset, a->length, &r);
	if (ret)
		return ret;
	ret = vol_unmark(fs, n, &r, 1, &a->bytes, &purged);
	a->purged = (uint32_t)purged;
	return ret;
}

static int ioctl_purged(struct fs *fs, struct inode *n, struct volatilefs_purged_arg *a)
{
	int ret;

	if (a->reserved)
		return -EINVAL;
	ret = vol_purged(fs, n, a->offset, a->length, a->extents, VOLATILEFS_PURGED_BATCH,
			 &a->count);
	a->filled = (uint32_t)(a->count < VOLATILEFS_PURGED_BATCH ? a->count :
			       VOLATILEFS_PURGED_BATCH);
	return ret;
}

/*
 * Restricted ioctls only (FUSE-FACTS 5): the kernel copies in and out
 * _IOC_SIZE(cmd) bytes, so each command's struct arrives whole in in_buf
 * and `arg` is never dereferenced.
 */
static void vfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		      struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		      size_t in_bufsz, size_t out_bufsz)
{
	struct fs *fs = fs_of(req);
	struct inode *n = node_of(req, ino);
	union {
		struct volatilefs_mark_arg mark;
		struct volatilefs_unmark_arg unmark;
		struct volatilefs_purged_arg purged;
		struct volatilefs_batch_arg batch;
	} a;
	size_t size = _IOC_SIZE(cmd);
	bool writable;
	int ret;

	(void)arg;
	if (cmd != VOLATILEFS_IOC_MARK && cmd != VOLATILEFS_IOC_UNMARK &&
	    cmd != VOLATILEFS_IOC_PURGED && cmd != VOLATILEFS_IOC_BATCH) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (in_bufsz != size || out_bufsz != size || size > sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((flags & FUSE_IOCTL_DIR) || S_ISDIR(n->mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	writable = (((struct ofile *)(uintptr_t)fi->fh)->flags & O_ACCMODE) != O_RDONLY;
	memcpy(&a, in_buf, size);
	/* unmark, purged: the reply may report purges. */
	if (notify_report_begin(nt_of(req)) < 0) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	switch (cmd) {
	case VOLATILEFS_IOC_MARK:
		ret = writable ? ioctl_mark(fs, n, &a.mark) : -EBADF;
		break;
	case VOLATILEFS_IOC_UNMARK:
		ret = writable ? ioctl_unmark(fs, n, &a.unmark) : -EBADF;
		break;
	case VOLATILEFS_IOC_BATCH:
		ret = writable ? ioctl_batch(fs, n, &a.batch) : -EBADF;
		break;
	default:
		ret = ioctl_purged(fs, n, &a.purged);
		break;
	}
	notify_reply_ioctl(nt_of(req), req, -ret, &a, size);
}

/*
 * A regular file is always readable and writable; POLLPRI is up while
 * its purged set is not empty.  The newest poll handle is kept and a
 * purge wakes it (through the notifier).
 */
static void vfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct fuse_pollhandle *ph)
{
	struct inode *n = node_of(req, ino);
	unsigned revents = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
	void *old = NULL;

	(void)n;
	if (fs_poll(fs_of(req), (struct ofile *)(uintptr_t)fi->fh, ph, &old))
		revents |= POLLPRI;
	if (old)
		fuse_pollhandle_destroy(old);
	fuse_reply_poll(req, revents);
}

const struct fuse_lowlevel_ops volatilefs_ops = {
	.init = vfs_init,
	.lookup = vfs_lookup,
	.forget = vfs_forget,
	.forget_multi = vfs_forget_multi,
	.getattr = vfs_getattr,
	.setattr = vfs_setattr,
	.readlink = vfs_readlink,
	.mknod = vfs_mknod,
	.mkdir = vfs_mkdir,
	.symlink = vfs_symlink,
	.unlink = vfs_unlink,
	.rmdir = vfs_rmdir,
	.rename = vfs_rename,
	.link = vfs_link,
	.open = vfs_open,
	.create = vfs_create,
	.read = vfs_read,
	.write = vfs_write,
	.flush = vfs_flush,
	.release = vfs_release,
	.fsync = vfs_fsync,
	.opendir = vfs_opendir,
	.readdir = vfs_readdir,
	.readdirplus = vfs_readdirplus,
	.releasedir = vfs_ok,
	.fsyncdir = vfs_fsyncdir,
	.statfs = vfs_statfs,
	.setxattr = vfs_setxattr,
	.getxattr = vfs_getxattr,
	.listxattr = vfs_listxattr,
	.removexattr = vfs_removexattr,
	.fallocate = vfs_fallocate,
	.lseek = vfs_lseek,
	.ioctl = vfs_ioctl,
	.poll = vfs_poll,
};
