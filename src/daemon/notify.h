/*
 * notify.h - the notifier: tells the kernel what the daemon changed on
 * its own, and answers the requests that report it once the kernel knows.
 *
 * A purge frees a file's pages while the kernel may still cache them
 * (page cache, mmaps).  The kernel must drop them before anyone learns
 * that they are gone (DESIGN section 4), but a notification may not be
 * sent from a request handler or under a lock a handler may need:
 * fuse_lowlevel_notify_inval_inode waits for page locks that in-flight
 * requests hold, and for write-backs that need a free worker
 * (FUSE-FACTS 3).  So:
 *
 * - Each file that has something to tell the kernel has a record (struct
 *   inval, hung on the inode, allocated by the prepare hook before the
 *   purge, so that queueing can never fail after it).  A purge adds its
 *   range to the record's pending ranges (coalesced: touching ranges
 *   merge, at most INVAL_RANGES (16) are kept apart and the two closest merge
 *   past that, so the pages between scattered units stay cached; one
 *   round per file however many units went) under a new sequence number.
 * - A few delivery threads (NOTIFY_THREADS) take records from a ready
 *   queue, one file per thread, and send its invalidation with no lock
 *   held.  A slow file (a large mapping, a dirty one) holds one thread;
 *   the other files' records go by it.
 * - A name an auto=unlink purge removed goes on a queue of its own; one
 *   more thread sends those deletions.  A deletion needs the kernel's
 *   i_rwsem of the directory and of the file, which requests in flight
 *   may hold (SETXATTR, RENAME, ... docs/LOCKING.md, "The kernel's
 *   locks"), so it has no sequence number and no reply waits for it:
 *   the daemon refuses the name itself from the purge on (fs.h,
 *   fs_auto_unlink_mark).
 * - A request that reports a purge (the purged/ranges xattrs, unmark,
 *   the ioctls, user.volatile.purge) computes its answer, then
 *   notify_reply_*() parks it with the sequence number it depends on
 *   (recorded by the fs_hooks depend calls while it was computed).  It
 *   is answered by the delivery thread that delivers that number: no
 *   worker waits, and no timeout decides anything.  A file's reporters
 *   wait for that file's record only; a purge of the whole mount waits
 *   until every sequence number up to its own was delivered.
 * - Poll waiters of a purged file are woken after the file's
 *   invalidation was delivered, and poll reports POLLPRI only then.
 *
 * Sequence numbers come from one counter and never go backwards.  A
 * record with undelivered work holds its node (fs_hold), so the node
 * outlives it; an idle record is freed with its node (inode_free).
 *
 * Locking: everything here is under notifier->lock, a leaf lock taken
 * under inode and namespace locks.  Delivery threads drop it to talk to
 * the kernel, and take a node's lock (poll wake) or ns_lock (the put of
 * the hold) only with it dropped.
 */
#ifndef VOLATILEFS_NOTIFY_H
#define VOLATILEFS_NOTIFY_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fs;
struct inval;
struct parked;
struct delname;

/* Delivery threads: files whose invalidations are slow block one each. */
#define NOTIFY_THREADS 4

/* A position in the list of undelivered work, ordered by sequence number. */
struct seqlink {
	struct seqlink *prev, *next;
	struct inval *owner;
	uint64_t seq;
};

struct notifier {
	struct fuse_session *se;
	struct fs *fs;
	pthread_mutex_t lock;
	pthread_cond_t work;           /* a record is ready, or stop */
	struct inval *ready, *ready_tail;
	pthread_cond_t del_work;       /* a name deletion is queued, or stop */
	struct delname *del_head, *del_tail;
	struct seqlink undelivered;    /* sentinel; oldest first */
	struct parked *all_head, *all_tail; /* waiting for every seq up to theirs */
	uint64_t next_seq;             /* last sequence number handed out */
	bool stop;
	bool running;
	unsigned nthreads;
	pthread_t threads[NOTIFY_THREADS + 1]; /* [0]: the deletion thread */
};

/* Start the threads for session se and fill fs's hooks to feed them.  Zero or -errno. */
int notifier_start(struct notifier *nt, struct fuse_session *se, struct fs *fs);
/*
 * Stop: deliveries in progress finish, what is still queued is dropped
 * (only called once the session loop is over, when nothing serves the
 * kernel and the caches die with the mount), and every parked request
 * gets its answer.  With timeout_ms >= 0, give up after that long and
 * return false (a thread is stuck in the kernel; the caller may abort
 * the connection and call again with -1); 0 just tells them to stop.
 */
bool notifier_stop(struct notifier *nt, int timeout_ms);

/*
 * Replies of requests that may report a purge.  The handler calls
 * notify_report_begin() before computing its answer (it forgets what an
 * earlier request on this thread depended on), then one of these, which
 * reply at once when nothing the answer depends on is undelivered, and
 * otherwise park the reply and return.  A reply that cannot be parked
 * for want of memory is answered ENOMEM (notify_reply_err cannot fail:
 * its record is allocated by notify_report_begin, which returns -ENOMEM
 * before anything is done).
 */
int notify_report_begin(struct notifier *nt);
void notify_reply_err(struct notifier *nt, fuse_req_t req, int err);
void notify_reply_xattr(struct notifier *nt, fuse_req_t req, long len, const char *buf,
			size_t size);
void notify_reply_ioctl(struct notifier *nt, fuse_req_t req, int err, const void *buf,
			size_t size);

#endif
