/*
 * notify.h - the notifier thread: tells the kernel what the daemon
 * changed on its own.
 *
 * A purge frees a file's pages while the kernel may still cache them
 * (page cache, mmaps).  The kernel must drop them, but a notification
 * may not be sent from a request handler or while holding a lock a
 * handler may need: fuse_lowlevel_notify_inval_inode waits for page
 * locks that in-flight requests hold (FUSE-NOTES.md: reproduced as a
 * hang).  So purges only queue events here, under whatever locks they
 * hold, and this thread sends them with no lock held, in order, each
 * under a sequence number.  Whoever reports a purge waits until the
 * thread has delivered its sequence number (notifier_wait), so the
 * kernel has dropped the discarded data before anyone learns it is gone.
 *
 * It also wakes poll waiters (fuse_lowlevel_notify_poll) of purged
 * files, and frees their poll handles, and tells the kernel of names the
 * daemon removed itself (auto=unlink: fuse_lowlevel_notify_delete).
 *
 * Locking: the queue, the sequence numbers and `stop` are under
 * notifier->lock, a leaf lock.
 */
#ifndef VOLATILEFS_NOTIFY_H
#define VOLATILEFS_NOTIFY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct fuse_session;
struct fs;
struct nevent;

struct notifier {
	struct fuse_session *se;
	struct fs *fs;
	pthread_mutex_t lock;
	pthread_cond_t work;   /* events queued, or stop */
	pthread_cond_t done;   /* done_seq moved */
	struct nevent *head, *tail;
	uint64_t next_seq;     /* last sequence number handed out */
	uint64_t done_seq;     /* last sequence number delivered */
	unsigned waiters;      /* reporters waiting for done_seq */
	bool stop;
	bool running;
	pthread_t thread;
};

/* Start the thread for session se and fill fs's hooks to feed it.  Zero or -errno. */
int notifier_start(struct notifier *nt, struct fuse_session *se, struct fs *fs);
/*
 * Stop the thread: the event it is delivering finishes, the rest of the
 * queue is dropped (only called once the session loop is over, when
 * nothing serves the kernel and the caches die with the mount).  With
 * timeout_ms >= 0, give up after that long and return false (the thread
 * is stuck in the kernel; the caller may abort the connection and call
 * again with -1); 0 just tells the thread to stop.
 */
bool notifier_stop(struct notifier *nt, int timeout_ms);

#endif
