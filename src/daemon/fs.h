/*
 * fs.h - the filesystem: namespace operations, attributes, data and
 * xattrs of nodes, with the locking of inode.h, and no FUSE in sight.
 *
 * The FUSE glue (ops.c) translates requests into these calls and their
 * results into replies; everything here is usable from a unit test.
 * The code is in one file per job: fs.c (set-up, node lifetime, room),
 * fs_ns.c (namespace), fs_attr.c (attributes), fs_data.c (data and
 * open descriptions), fs_xattr.c (plain xattrs); fs_int.h is what they
 * share.  The filesystem includes nothing above it (docs/ARCHITECTURE.md)
 * and reaches the layers above only through the hooks they install:
 * make_room (evict_attach) and struct fs_hooks (the notifier).
 * Functions return 0 (or a count) on success and -errno on failure, and
 * change nothing when they fail.
 *
 * References: every call that hands a node to the kernel (fs_lookup,
 * fs_mknod, fs_link, and fs_readdir in plus mode) adds one to the node's
 * nlookup; fs_forget takes them away.  Nodes passed in are ones the
 * kernel holds, so they are alive for the duration of the call.
 */
#ifndef VOLATILEFS_FS_H
#define VOLATILEFS_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "arena.h"
#include "inode.h"
#include "mem.h"
#include "shmfile.h"
#include "store.h"
#include "units.h"

#define FS_NAME_MAX 255
/* The names of the volatile layer's xattrs (vxattr.h): never stored here. */
#define FS_VOLATILE_PREFIX "user.volatile."

/* user.volatile.auto of a directory (DESIGN section 8). */
#define FS_AUTO_OFF    0
#define FS_AUTO_MARK   1
#define FS_AUTO_UNLINK 2
/* tmpfs's directory size: 20 bytes per entry, "." and ".." included. */
#define FS_DIRENT_SIZE 20

struct fs_config {
	uint64_t memory_limit; /* 0: half of physical memory */
	uint64_t memory_low;   /* 0: 90% of the limit */
	mode_t root_mode;      /* permission bits of the root */
	uid_t root_uid;
	gid_t root_gid;
	uid_t owner;           /* the mounting user (root-only xattrs) */
	bool purged_eio;       /* purged_read=eio */
	bool write_unmark;     /* write_policy=unmark */
	unsigned root_auto;    /* -o auto=: FS_AUTO_* of the root */
};

/*
 * What the filesystem asks of its host (the FUSE glue) when it changes
 * something on its own.  NULL members are skipped (unit tests).
 */
struct fs_hooks {
	void *ctx;
	/*
	 * Before a purge of n: make sure that what it will queue can be
	 * queued (allocate n's record).  Zero or -ENOMEM, and then the purge
	 * does not happen.  funded: the purge frees at least a page, so the
	 * record may be charged past the limit (meta.h); otherwise it must
	 * fit under it.  n locked for writing.
	 */
	int (*prepare)(void *ctx, struct inode *n, bool funded);
	/*
	 * A purge discarded bytes [off, off + len) of n (len 0: to the
	 * end): have the kernel drop its cached pages there, and then wake
	 * n's poll waiters.  Called with n's lock held, after prepare(), so
	 * it only queues and cannot fail.  Returns the purge's sequence
	 * number (never lower than an earlier one).
	 */
	uint64_t (*purged)(void *ctx, struct inode *n, uint64_t off, uint64_t len);
	/*
	 * The daemon is removing name from dir (child is the node it names)
	 * after a purge: the kernel should forget the dentry.  Best effort
	 * and only queued: no answer depends on it, since the daemon itself
	 * refuses the name from the moment of the purge (lookup, open;
	 * fs_auto_unlink_locked).  ns_lock held for writing.
	 */
	void (*unlinking)(void *ctx, struct inode *dir, struct inode *child, const char *name);
	/*
	 * n's size, blocks or times changed behind the kernel (a writer it
	 * served itself closed, after stores through a mapping that sent no
	 * request): it should read n's attributes again.  Best effort and
	 * only queued, on the deletions' queue.  n's lock may be held.
	 */
	void (*attrs)(void *ctx, struct inode *n);
	/*
	 * The answer being computed on this thread reports the state of n
	 * as of sequence number seq (0: all n has queued now): its reply
	 * waits until that was delivered (notify.h).  No lock held.
	 */
	void (*depend)(void *ctx, struct inode *n, uint64_t seq);
	/* The answer reports every purge so far, of any file. */
	void (*depend_all)(void *ctx);
	/* Was everything of n up to seq delivered?  (POLLPRI waits for it.) */
	bool (*delivered)(void *ctx, struct inode *n, uint64_t seq);
	/* Free a poll handle that will never be woken. */
	void (*poll_free)(void *ctx, void *poll_handle);
};

struct fs {
	pthread_rwlock_t ns_lock; /* see inode.h */
	struct itable itable;
	struct arena arena;
	struct mem mem;
	struct lru lru;
	struct inode *root;
	/* File data (store.h): the arena store from fs_init;
	 * fs_use_shm_store switches to the shared-memory store before the
	 * first file exists (at FUSE INIT, on a worker thread, while the
	 * monitor and notifier threads already run), and it is constant
	 * after.  passthrough is set after store, atomically: a thread that
	 * reads it true reads the new store too. */
	const struct store_ops *store;
	struct shm shm;           /* the shared-memory store's tmpfs (root -1: none) */
	_Atomic bool passthrough; /* files are opened through the kernel (DESIGN 11) */
	/* Files with passthrough opens (inode.h pt_link), for
	 * fs_pt_walk; pt_lock is taken after inode locks. */
	pthread_mutex_t pt_lock;
	LIST_HEAD(, inode) pt_open;
	struct fs_hooks hooks;
	uid_t owner;              /* the user who mounted; immutable */
	bool purged_eio;          /* purged_read=eio; immutable */
	bool write_unmark;        /* write_policy=unmark; immutable */
	pthread_mutex_t evict_lock; /* one evictor at a time; taken before ns_lock */
	/*
	 * Making room: a request refused for space (a write, a fallocate,
	 * new metadata through fs_room) asks the volatile layer above to
	 * free `pages` pages' worth.  True when something was freed and the
	 * request should try again.  Installed at set-up (evict_attach in
	 * evict.h) and constant after; NULL: nothing can be freed, the
	 * request fails with ENOSPC.  Called with no lock held.
	 */
	bool (*make_room)(struct fs *fs, uint64_t pages);
	_Atomic uint64_t purges_total;
	_Atomic uint64_t purged_bytes_total;
	_Atomic uint64_t files_unlinked_total;
	_Atomic bool auto_unlink_seen;  /* stats show files_unlinked_total */
	_Atomic uint64_t open_overdraft; /* open descriptions past the limit (fs_ofile_new) */
	/* Memory pressure from outside (pressure.h, DESIGN section 10). */
	_Atomic uint64_t pressure_purges_total;
	_Atomic uint64_t pressure_bytes_total;
	_Atomic unsigned pressure_sources; /* PSRC_* in use, set by the daemon's glue */
	/* The eviction layer's monitor thread (evict.c owns it), and the
	 * way to wake it that it installs while it runs (fs_monitor_kick):
	 * set before the session's threads start, cleared after they end. */
	struct evict_monitor *monitor;
	void (*_Atomic monitor_kick)(struct fs *fs);
	/* Writable passthrough opens of all files (the kernel may write or
	 * map the backing files for them): the monitor looks every
	 * EVICT_KEEP_MS while there are any; and those among them whose
	 * write(2)s the kernel serves itself (not of->writes_seen), for
	 * which it purges further ahead (evict.c). */
	_Atomic uint32_t pt_writers;
	_Atomic uint32_t pt_kernel_writers;
};

/* The caller of a request. */
struct fs_cred {
	uid_t uid;
	gid_t gid;
};

/* What fs_setattr changes. */
#define FS_SET_MODE      (1u << 0)
#define FS_SET_UID       (1u << 1)
#define FS_SET_GID       (1u << 2)
#define FS_SET_SIZE      (1u << 3)
#define FS_SET_ATIME     (1u << 4)
#define FS_SET_MTIME     (1u << 5)
#define FS_SET_ATIME_NOW (1u << 6)
#define FS_SET_MTIME_NOW (1u << 7)
#define FS_SET_CTIME     (1u << 8)

struct fs_setattr {
	unsigned valid;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
};

int fs_init(struct fs *fs, const struct fs_config *cfg);

/*
 * Make room for bytes of new memory (metadata a request is about to
 * allocate) and reserve it: zero when they fit, after purging volatile
 * data if it had to; -ENOSPC (counted in enospc_total) when nothing
 * volatile is left to purge.  On zero, the thread's metadata
 * allocations are paid from the reservation (meta.h, credit) until
 * fs_room_end(), which every caller that got zero must call, on every
 * path, and which gives back what was not used.  Not nested.  Caller
 * holds no lock.
 */
int fs_room(struct fs *fs, uint64_t bytes);
void fs_room_end(struct fs *fs);
/* Free everything.  Threads of the layers above (the monitor, evict.h) are stopped first. */
void fs_destroy(struct fs *fs);

int fs_lookup(struct fs *fs, struct inode *dir, const char *name, struct inode **out,
	      struct stat *st);
/*
 * The lookup of "." or ".." that the kernel sends with the node id of a
 * file handle (open_by_handle_at) once it has forgotten the node: id may
 * name no live node, and is checked before it is used.  Like fs_lookup:
 * *out takes a lookup reference.  -ESTALE for an id of no live node or
 * of one without a name; -ENOTDIR for ".." of a non-directory.
 */
int fs_lookup_id(struct fs *fs, uintptr_t id, const char *name, struct inode **out,
		 struct stat *st);
void fs_forget(struct fs *fs, struct inode *n, uint64_t nlookup);
void fs_getattr(struct fs *fs, struct inode *n, struct stat *st);
/*
 * Shared memory (DESIGN section 11), before any file exists: keep file
 * data in backing files on a private tmpfs of cap bytes.  Zero or
 * -errno (the arena store stays).  fs_use_shm_store then switches to
 * it (at FUSE INIT, when the kernel offers passthrough).
 */
int fs_shm_setup(struct fs *fs, uint64_t cap);
void fs_use_shm_store(struct fs *fs);
/* Wake the monitor thread, if it runs, to look again at once. */
void fs_monitor_kick(struct fs *fs);
/*
 * Bring n up to date with writers the kernel served itself (store.h:
 * sync): its size, times, pages and purged set.  Does nothing on the
 * arena store.  fs_sync takes n's lock; fs_sync_locked wants it held
 * for writing.
 */
void fs_sync(struct fs *fs, struct inode *n);
/*
 * Set the shared-memory tmpfs's size to what the limit and DESIGN 3's
 * allowance, max(1%, 4 MiB), leave beside the daemon's RSS, never below
 * what it holds: the daemon's own writes stop at the limit (they
 * reserve), and what it cannot reserve (stores through a mapping or an
 * open the kernel writes itself, loads of purged pages through a
 * mapping) gets ENOSPC or SIGBUS from the kernel beyond the allowance.
 */
void fs_shm_recap(struct fs *fs);
/*
 * The largest size the tmpfs may have now: the limit and its allowance
 * less the daemon's RSS (the kernel's figure) and what that may grow by
 * before the next look.  The daemon's own write that finds the tmpfs
 * full grows it at most to this (shmfile.c); past it the write asks for
 * a purge, as one refused by its reservation does.
 */
uint64_t fs_shm_cap_max(struct fs *fs);
/* What reservations leave under the limit on the passthrough path (mem.h keep). */
#define FS_SHM_KEEP (2u << 20)
void fs_sync_locked(struct fs *fs, struct inode *n);
int fs_setattr(struct fs *fs, struct inode *n, const struct fs_setattr *sa, struct stat *st);

/*
 * Create a node named name in dir: mode carries the type (S_IFREG,
 * S_IFDIR, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK, S_IFLNK) and permission
 * bits; target is the symlink's target (S_IFLNK only).  With name NULL,
 * an O_TMPFILE regular file: owned as if made in dir, with no name
 * (nlink 0) until fs_link gives it its first.
 */
int fs_mknod(struct fs *fs, struct inode *dir, const char *name, mode_t mode, dev_t rdev,
	     const char *target, const struct fs_cred *cred, struct inode **out,
	     struct stat *st);
int fs_link(struct fs *fs, struct inode *n, struct inode *newdir, const char *newname,
	    struct stat *st);
int fs_unlink(struct fs *fs, struct inode *dir, const char *name);
int fs_rmdir(struct fs *fs, struct inode *dir, const char *name);
/* flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE. */
/*
 * flags: RENAME_NOREPLACE, RENAME_EXCHANGE or RENAME_WHITEOUT (the old
 * name then names a new character device 0:0 of cred's, in the same
 * step; cred is used for nothing else and may be NULL without it).
 */
int fs_rename(struct fs *fs, struct inode *olddir, const char *oldname,
	      struct inode *newdir, const char *newname, unsigned flags,
	      const struct fs_cred *cred);
/* The target of a symlink (immutable while the node lives), or NULL. */
const char *fs_readlink(struct fs *fs, struct inode *n);

ssize_t fs_read(struct fs *fs, struct inode *n, uint64_t off, size_t size, char *buf);
/*
 * A read answered without a copy into a buffer: reply(ctx, iov, count)
 * is called with pointers to the file's own pages (holes: a page of
 * zeros), with the file's lock held for reading so that they stay valid
 * until it returns.  reply must not take any lock of this filesystem and
 * must not wait for a request to be served (a FUSE reply writes to the
 * device and returns).  Zero once reply was called, or -errno without a
 * call.
 */
struct iovec;
typedef void (*fs_reply_fn)(void *ctx, const struct iovec *iov, size_t count);
int fs_read_reply(struct fs *fs, struct inode *n, uint64_t off, size_t size,
		  fs_reply_fn reply, void *ctx);
ssize_t fs_write(struct fs *fs, struct inode *n, uint64_t off, const char *buf, size_t size);
/*
 * The kernel writing back pages stored into through a mapping (FUSE's
 * writepage): as fs_write, except for the purged set.  A store into a
 * purged page does not say which of its bytes it wrote, and the
 * write-back carries the whole page, the purge's zeros included: only
 * the bytes that are not zero leave the set (they were written since
 * the purge); a zero byte may be a lost one and stays reported until it
 * is known to be written again (a write(2), a punch, a truncate, or the
 * report cleared).
 */
ssize_t fs_writeback(struct fs *fs, struct inode *n, uint64_t off, const char *buf, size_t size);
int fs_fallocate(struct fs *fs, struct inode *n, int mode, uint64_t off, uint64_t len);
int64_t fs_lseek(struct fs *fs, struct inode *n, uint64_t off, int whence);

/*
 * Calls fill for each entry of dir after offset off ("." is offset 1,
 * ".." 2, then cookies), with the offset of the next entry.  fill
 * returns 0 when it took the entry, 1 when it is full (the entry was
 * not taken: stop), or -errno.  In plus mode, st is filled and each
 * taken entry other than "." and ".." gains a lookup reference.
 * Returns 0 or the first -errno of fill.
 */
typedef int (*fs_fill_fn)(void *ctx, const char *name, struct inode *n,
			  const struct stat *st, uint64_t next_off);
int fs_readdir(struct fs *fs, struct inode *dir, uint64_t off, bool plus, fs_fill_fn fill,
	       void *ctx);

void fs_statfs(struct fs *fs, struct statvfs *sv);

/* user.volatile.auto of a directory: get and set (FS_AUTO_*). */
int fs_get_auto(struct fs *fs, struct inode *dir);
int fs_set_auto(struct fs *fs, struct inode *dir, int mode);

/*
 * The purge of an auto=unlink file, in two steps.  fs_auto_unlink_mark,
 * in the purge's own critical section (ns_lock held for reading or
 * writing, n locked for writing): when n is an auto=unlink file with
 * exactly one name and (unless force) no open description, it is marked
 * purge_unlinked and true is returned; from then on the daemon refuses
 * its name itself (fs_lookup: ENOENT; an open through a dentry the
 * kernel still caches: ESTALE, and the VFS looks the name up again), so
 * the name is gone for every opener before the purge can be reported.
 * fs_auto_unlink_locked, later, with ns_lock held for writing: remove
 * the marked name from its directory and ask the kernel to drop its
 * dentry.  True when the name went.
 */
bool fs_auto_unlink_mark(struct inode *n, bool force);
bool fs_auto_unlink_locked(struct fs *fs, struct inode *n);

/*
 * An internal reference that keeps n alive while no lock is held (the
 * evictor between its purge and the unlink that follows).  fs_put_locked
 * drops it with ns_lock held for writing, freeing n if it was the last.
 */
void fs_hold(struct inode *n);
void fs_put_locked(struct fs *fs, struct inode *n);

/*
 * Opening n, in two steps: the open description is allocated first
 * (fs_ofile_new: NULL when out of memory), before a create or an O_TRUNC
 * changes anything, so nothing can fail after the change; then attached
 * to n.  An unused one goes back with fs_ofile_discard.  Attaching fails
 * only for a file whose name a purge removed (auto=unlink): -ESTALE, and
 * the VFS looks the name up again (DESIGN section 8).
 *
 * An open description is metadata like any other and is charged under
 * the limit, after purging if it must; past that, up to FS_OPEN_OVERDRAFT
 * bytes of open descriptions may exceed the limit (a full filesystem
 * must still open and read what it holds, as tmpfs does), and beyond
 * that fs_ofile_new fails (NULL, errno ENOSPC).  Caller holds no lock.
 */
#define FS_OPEN_OVERDRAFT (1024u * 1024u)
struct ofile *fs_ofile_new(struct fs *fs);
void fs_ofile_discard(struct fs *fs, struct ofile *of);
int fs_open_attach(struct fs *fs, struct ofile *of, struct inode *n, int flags);
/* The last close of an open description. */
void fs_release_file(struct fs *fs, struct ofile *of);
/*
 * Passthrough opens (DESIGN section 11, shared-memory store only): the
 * backing id of of's file, shared by all its open descriptions; the
 * first registers the backing file (created if need be) by calling
 * reg(fd), which returns an id (> 0) or -errno.  The id, or -errno.
 * fs_backing_put, before fs_release_file, undoes it and returns the id
 * to drop when it was the last use (else 0).
 */
int32_t fs_backing_get(struct fs *fs, struct ofile *of, int (*reg)(int fd));
int32_t fs_backing_put(struct fs *fs, struct ofile *of);
/*
 * Does a writable passthrough open (fs_backing_get sets of->writes_seen)
 * send its write(2)s through the daemon (FOPEN_DIRECT_IO)?  Yes when a
 * write could change what the volatile layer records: when n holds a
 * unit or purged bytes, or under write_policy=unmark; and when n is
 * set-user-ID or set-group-ID (a write clears those bits).  Otherwise
 * the kernel writes the backing file itself, at the speed of tmpfs, and
 * the monitor keeps room ahead of it (evict.h).  An open cannot change
 * its way later: a file marked while such an open exists (a glyph atlas:
 * open, write, mark, rewrite by pwrite) goes on being written unseen,
 * and the sync takes out of its purged set the bytes that are not zero
 * (shmfile.c, page_found and rescan_purged).  n locked.
 */
bool fs_writes_seen_locked(struct fs *fs, struct inode *n);
/*
 * Walk the files with passthrough opens (the kernel reads and writes
 * them without the daemon).  Each with a writable open is synced
 * (fs_sync: pages written behind the daemon get charged and join their
 * units); with touch, each is made most recently used, whole (DESIGN 11's
 * recency, per file).  The monitor calls it every tick on that path,
 * with touch every second.  A file whose lock is busy waits for the
 * next walk.  No lock held.
 */
void fs_pt_walk(struct fs *fs, bool touch);

/*
 * poll: keep ph (when not NULL) as the file's waiter, returning the one
 * it replaces in *old for the caller to free.  True while the purged set
 * is not empty.
 */
bool fs_poll(struct fs *fs, struct ofile *of, void *ph, void **old);

/*
 * Plain xattrs, stored on the node (xattr.h).  The user.volatile.* names
 * are the layer above's (vxattr.h: the FUSE glue calls vxattr_setxattr
 * etc., which come here for every other name); passed here they are
 * never stored: set -EINVAL, get and remove -ENODATA.  cred: the caller.
 */
int fs_setxattr(struct fs *fs, struct inode *n, const char *name, const void *value,
		size_t size, int flags, const struct fs_cred *cred);
/* The value's length (copied when size > 0), or -errno (-ERANGE when it does not fit). */
long fs_getxattr(struct fs *fs, struct inode *n, const char *name, void *buf, size_t size);
long fs_listxattr(struct fs *fs, struct inode *n, char *buf, size_t size);
int fs_removexattr(struct fs *fs, struct inode *n, const char *name);

#endif
