/*
 * inode.h - nodes and the inode table.
 *
 * A node is a file, directory, symlink, FIFO or socket.  The FUSE node
 * id of a node is its address (the root is FUSE_ROOT_ID, mapped by the
 * glue), so finding a node the kernel holds costs nothing.  The table is
 * the set of all live nodes, a tree by address: it answers whether an id
 * the kernel may no longer hold (a file handle's: itable_holds) is a live
 * node, and it is walked for freeing everything at unmount.
 *
 * Lifetime: a node lives while it has a name (nlink > 0) or the kernel
 * holds references to it (nlookup > 0: one per successful lookup,
 * create, mknod, mkdir, symlink, link and readdirplus entry, dropped by
 * forget).  An unlinked file that is still open keeps its data until the
 * kernel forgets it, which happens only after the last close.  The node
 * is freed by whichever of "last name removed" and "last forget" comes
 * second, under fs->ns_lock held for writing (fs.c).
 *
 * Locking:
 *   fs->ns_lock (rwlock)    the namespace: directory entries, nlink,
 *                           dir.parent, and the decision to free a node.
 *   inode->lock (rwlock)    the node's attributes, size, data (pagemap),
 *                           symlink target and xattrs.
 *   itable->lock (mutex)    the tree of all nodes and the counters; the
 *                           tree changes only with ns_lock also held for
 *                           writing, so ns_lock held for reading is
 *                           enough to walk it.
 *   arena->lock (mutex)     leaf.
 * Order: ns_lock, then one inode lock (never two at once: a rename or a
 * link takes each node's lock in turn under ns_lock held for writing),
 * then itable->lock or arena->lock.  nlink is written with ns_lock held
 * for writing and the inode's lock held, so either lock suffices to read
 * it.  nlookup is atomic.  Type bits of mode and ino are immutable.
 */
#ifndef VOLATILEFS_INODE_H
#define VOLATILEFS_INODE_H

#include <bsd/sys/tree.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <time.h>

#include "dir.h"
#include "extset.h"
#include "pagemap.h"
#include "units.h"
#include "xattr.h"

struct inode;
struct inval;

/*
 * An open description of a regular file (the fh of a FUSE open): its
 * access mode, for the ioctls, and its poll waiter.  Each open file of
 * an inode is on the inode's list, so a purge wakes every waiter.
 */
struct ofile {
	struct ofile *prev, *next; /* the inode's list; inode lock */
	struct inode *inode;       /* immutable */
	int flags;                 /* open(2) flags; immutable */
	void *poll_handle;         /* the newest poll of this file; inode lock */
	bool overdraft;            /* charged past the limit (fs_ofile_new); immutable */
	bool passthrough;          /* holds a use of the inode's backing id (fs_backing_get) */
	bool writes_seen;          /* ... and its writes reach the daemon (fs_writes_seen_locked) */
};

struct inode {
	uint64_t ino;                 /* st_ino; immutable */
	mode_t mode;                  /* type bits immutable; rest under lock */
	uid_t uid;                    /* under lock */
	gid_t gid;                    /* under lock */
	dev_t rdev;                   /* immutable */
	uint32_t nlink;               /* see the locking rules above */
	uint64_t size;                /* under lock */
	struct timespec atime, mtime, ctime; /* under lock */
	pthread_rwlock_t lock;
	_Atomic uint64_t nlookup;
	/* Namespaces with at least one stored xattr (XATTR_NS_* bits),
	 * readable without the lock so that the kernel's lookup of
	 * security.capability before every write is answered at once. */
	_Atomic unsigned xattr_ns;
	struct xattrs *xattrs;        /* NULL when none (xattr.h); under lock */
	RB_ENTRY(inode) by_addr;      /* in the table; under itable->lock */
	union {
		struct {                  /* regular file; all under lock */
			struct pagemap pages;
			struct units units;   /* volatile units (units.h) */
			struct extset purged; /* the purged set, in bytes */
			struct ofile *open_files; /* open descriptions (fs.h) */
			uint32_t nopen;
			/* Cache directories (DESIGN section 8), under fs->ns_lock:
			 * created under auto=unlink, a purge removes its name;
			 * link1 is its one name while it has exactly one known
			 * name (NULL after link(2)), in directory link1_dir. */
			bool auto_unlink;
			struct dirent_node *link1;
			struct inode *link1_dir;
			/* auto=unlink: a purge took its name (set by
			 * fs_auto_unlink_mark under lock with ns_lock held
			 * at least for reading, never cleared): lookups
			 * and opens through a stale dentry are refused
			 * (DESIGN 8).  Read under lock, or under ns_lock
			 * held for writing. */
			bool purge_unlinked;
			/* Made by O_TMPFILE and never named yet: link(2) may
			 * give it a first name (under fs->ns_lock). */
			bool linkable;
			uint64_t inval_seq;   /* the notifier's sequence of the last purge */
			/* The shared-memory store (shmfile.h), under lock:
			 * the backing file's times at the last sync, the
			 * backing id registered while passthrough opens
			 * exist (0: none) and their count. */
			struct timespec shm_atime, shm_mtime;
			int32_t backing_id;
			uint32_t pt_opens;
			/* The writable ones among them: changed under lock,
			 * read without it by fs_pt_walk's quick skip. */
			_Atomic uint32_t pt_writers;
			/* On the passthrough path: a classic open (passthrough
			 * refused) or a FOPEN_DIRECT_IO one (its splice reads
			 * use the page cache) was made, so the kernel may
			 * cache pages of the FUSE file (notify.c); set once. */
			_Atomic bool fuse_cached;
			/* On fs->pt_open while pt_opens > 0 (fs->pt_lock). */
			LIST_ENTRY(inode) pt_link;
			/* What the kernel is yet to be told (notify.h): set
			 * once under the notifier's lock, freed with the node. */
			struct inval *inval;
		};
		struct {
			struct dir entries;   /* under fs->ns_lock */
			struct inode *parent; /* under fs->ns_lock */
			uint8_t auto_mode;    /* FS_AUTO_*; under fs->ns_lock */
		} dir;
		char *target;             /* symlink; immutable */
	};
};

RB_HEAD(inode_addrs, inode);

struct itable {
	pthread_mutex_t lock;
	struct inode_addrs addrs; /* every live node, by address */
	uint64_t next_ino;  /* under lock */
	uint64_t count;     /* under lock */
};

int itable_init(struct itable *t);
/*
 * Allocate a node of the given mode, owner and times now, with nlink 0
 * and nlookup 0, and add it to the table.  NULL when out of memory.
 */
struct inode *inode_new(struct itable *t, mode_t mode, uid_t uid, gid_t gid, dev_t rdev);
/*
 * Remove from the table and free the node; its data pages go to
 * release(page, ctx).  Caller holds fs->ns_lock for writing (or is
 * alone), and no one else can reach the node.
 */
void inode_free(struct itable *t, struct inode *n, void (*release)(void *page, void *ctx),
		void *ctx);
/* Free every node (unmount). */
void itable_destroy(struct itable *t, void (*release)(void *page, void *ctx), void *ctx);
uint64_t itable_count(struct itable *t);
/*
 * Is id the address of a live node?  For ids the kernel may have
 * forgotten (a file handle's); the node stays live only while the
 * caller holds fs->ns_lock (inode_free's rule).
 */
bool itable_holds(struct itable *t, uintptr_t id);
/* The walk of every node in address order: caller holds ns_lock or is alone. */
struct inode *itable_first(struct itable *t);
struct inode *itable_next(struct itable *t, struct inode *n);

/* Fill st from n.  Caller holds n->lock (read is enough). */
void inode_stat_locked(const struct inode *n, struct stat *st);

static inline void inode_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

#endif
