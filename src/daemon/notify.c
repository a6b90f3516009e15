/*
 * notify.c - the notifier thread; see notify.h.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"

struct nevent {
	struct nevent *next;
	uint64_t seq;
	fuse_ino_t ino;
	off_t off, len;              /* len 0: to the end */
	struct fuse_pollhandle *ph;  /* may be NULL */
	fuse_ino_t parent;           /* a removed name: parent, ino = child */
	char *name;
};

static void deliver(struct notifier *nt, struct nevent *ev)
{
	int ret = 0;

	if (ev->name)
		ret = fuse_lowlevel_notify_delete(nt->se, ev->parent, ev->ino, ev->name,
						  strlen(ev->name));
	else if (ev->ino)
		ret = fuse_lowlevel_notify_inval_inode(nt->se, ev->ino, ev->off, ev->len);

	/* ENOENT: the kernel has no inode (nothing cached); ENODEV, EBADF:
	 * unmounting.  Neither leaves stale data to worry about. */
	if (ret < 0 && ret != -ENOENT && ret != -ENODEV && ret != -EBADF)
		fprintf(stderr, "volatilefs: cache invalidation after a purge failed: %s\n",
			strerror(-ret));
	if (ev->ph) {
		fuse_lowlevel_notify_poll(ev->ph);
		fuse_pollhandle_destroy(ev->ph);
	}
}

static void *notifier_main(void *arg)
{
	struct notifier *nt = arg;

	pthread_mutex_lock(&nt->lock);
	for (;;) {
		struct nevent *ev = nt->head;
		bool stopping;

		if (!ev) {
			if (nt->stop)
				break;
			pthread_cond_wait(&nt->work, &nt->lock);
			continue;
		}
		nt->head = ev->next;
		if (!nt->head)
			nt->tail = NULL;
		stopping = nt->stop;
		pthread_mutex_unlock(&nt->lock);
		if (stopping) {
			/* The session loop is over: nothing serves the
			 * kernel, and the caches go with the mount.  Writing
			 * to the device now could only block or fail. */
			if (ev->ph)
				fuse_pollhandle_destroy(ev->ph);
		} else {
			deliver(nt, ev);
		}
		pthread_mutex_lock(&nt->lock);
		nt->done_seq = ev->seq;
		pthread_cond_broadcast(&nt->done);
		free(ev->name);
		free(ev);
	}
	pthread_mutex_unlock(&nt->lock);
	return NULL;
}

/* Queue an event; its sequence number, or 0 when it could not be queued. */
static uint64_t enqueue(struct notifier *nt, fuse_ino_t ino, uint64_t off, uint64_t len,
			struct fuse_pollhandle *ph)
{
	struct nevent *ev = calloc(1, sizeof(*ev));
	uint64_t seq;

	pthread_mutex_lock(&nt->lock);
	if (!ev || nt->stop) {
		pthread_mutex_unlock(&nt->lock);
		if (!ev)
			fprintf(stderr, "volatilefs: out of memory queueing a notification\n");
		if (ph)
			fuse_pollhandle_destroy(ph);
		free(ev);
		return 0;
	}
	ev->seq = seq = ++nt->next_seq;
	ev->ino = ino;
	ev->off = (off_t)off;
	ev->len = (off_t)len;
	ev->ph = ph;
	if (nt->tail)
		nt->tail->next = ev;
	else
		nt->head = ev;
	nt->tail = ev;
	pthread_cond_signal(&nt->work);
	pthread_mutex_unlock(&nt->lock);
	return seq;
}

static uint64_t hook_purged(void *ctx, struct inode *n, uint64_t off, uint64_t len)
{
	return enqueue(ctx, (fuse_ino_t)(uintptr_t)n, off, len, NULL);
}

static void hook_wake(void *ctx, void *ph)
{
	enqueue(ctx, 0, 0, 0, ph);
}

static fuse_ino_t nodeid(struct fs *fs, struct inode *n)
{
	return n == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static void hook_unlinked(void *ctx, struct inode *dir, struct inode *child, const char *name)
{
	struct notifier *nt = ctx;
	struct nevent *ev = calloc(1, sizeof(*ev));
	char *copy = strdup(name);

	pthread_mutex_lock(&nt->lock);
	if (!ev || !copy || nt->stop) {
		pthread_mutex_unlock(&nt->lock);
		if (!ev || !copy)
			fprintf(stderr, "volatilefs: out of memory queueing a notification\n");
		free(ev);
		free(copy);
		return;
	}
	ev->seq = ++nt->next_seq;
	ev->parent = nodeid(nt->fs, dir);
	ev->ino = nodeid(nt->fs, child);
	ev->name = copy;
	if (nt->tail)
		nt->tail->next = ev;
	else
		nt->head = ev;
	nt->tail = ev;
	pthread_cond_signal(&nt->work);
	pthread_mutex_unlock(&nt->lock);
}

/*
 * Reporters wait in request handlers, on worker threads, while the
 * invalidation they wait for may itself need a worker: invalidating a
 * dirty shared mapping launders it with a WRITE request.  So the waiters
 * may never hold all the workers (faults.sh: 80 reporters against a
 * dirty mapping deadlocked 64 workers).  At most NOTIFY_MAX_WAITERS wait,
 * each at most NOTIFY_WAIT_MS; the others wait NOTIFY_OVERFLOW_MS at
 * most.  A report that times out goes out before the kernel has dropped
 * the discarded pages: a liveness-over-ordering choice that only such an
 * overload can reach.
 */
#define NOTIFY_MAX_WAITERS 16
#define NOTIFY_WAIT_MS 5000
#define NOTIFY_OVERFLOW_MS 200
#define NOTIFY_SLICE_MS 50

static bool timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* The time ms milliseconds from now on clock clk. */
static struct timespec time_in(clockid_t clk, long ms)
{
	struct timespec t;

	clock_gettime(clk, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void hook_wait(void *ctx, uint64_t seq)
{
	struct notifier *nt = ctx;
	struct timespec deadline;
	long ms;

	pthread_mutex_lock(&nt->lock);
	if (nt->done_seq >= seq || nt->stop)
		goto out_unlock;
	ms = nt->waiters < NOTIFY_MAX_WAITERS ? NOTIFY_WAIT_MS : NOTIFY_OVERFLOW_MS;
	deadline = time_in(CLOCK_MONOTONIC, ms);
	nt->waiters++;
	/* In slices: once the session is exiting (SIGTERM), the loop waits
	 * for every worker, and a WRITE the notifier may need is served by
	 * none, so stop waiting at once. */
	while (nt->done_seq < seq && !nt->stop && !fuse_session_exited(nt->se)) {
		struct timespec slice = time_in(CLOCK_MONOTONIC, NOTIFY_SLICE_MS);

		if (timespec_before(&deadline, &slice))
			slice = deadline;
		if (pthread_cond_timedwait(&nt->done, &nt->lock, &slice) == ETIMEDOUT &&
		    !timespec_before(&slice, &deadline))
			break;
	}
	nt->waiters--;
out_unlock:
	pthread_mutex_unlock(&nt->lock);
}

static void hook_poll_free(void *ctx, void *ph)
{
	(void)ctx;
	fuse_pollhandle_destroy(ph);
}

int notifier_start(struct notifier *nt, struct fuse_session *se, struct fs *fs)
{
	struct fs_hooks *hooks = &fs->hooks;
	int ret;

	memset(nt, 0, sizeof(*nt));
	nt->se = se;
	nt->fs = fs;
	if ((ret = pthread_mutex_init(&nt->lock, NULL)) != 0)
		return -ret;
	if ((ret = pthread_cond_init(&nt->work, NULL)) != 0)
		goto out_lock;
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		ret = pthread_cond_init(&nt->done, &ca);
		pthread_condattr_destroy(&ca);
		if (ret)
			goto out_work;
	}
	if ((ret = pthread_create(&nt->thread, NULL, notifier_main, nt)) != 0)
		goto out_done;
	nt->running = true;
	hooks->ctx = nt;
	hooks->purged = hook_purged;
	hooks->wake = hook_wake;
	hooks->unlinked = hook_unlinked;
	hooks->wait = hook_wait;
	hooks->poll_free = hook_poll_free;
	return 0;

out_done:
	pthread_cond_destroy(&nt->done);
out_work:
	pthread_cond_destroy(&nt->work);
out_lock:
	pthread_mutex_destroy(&nt->lock);
	return -ret;
}

bool notifier_stop(struct notifier *nt, int timeout_ms)
{
	if (!nt->running)
		return true;
	pthread_mutex_lock(&nt->lock);
	nt->stop = true;
	pthread_cond_broadcast(&nt->work);
	pthread_cond_broadcast(&nt->done);
	pthread_mutex_unlock(&nt->lock);
	if (timeout_ms >= 0) {
		struct timespec ts = time_in(CLOCK_REALTIME, timeout_ms);

		if (pthread_timedjoin_np(nt->thread, NULL, &ts) != 0)
			return false; /* still in the kernel; call again */
	} else {
		pthread_join(nt->thread, NULL);
	}
	pthread_cond_destroy(&nt->done);
	pthread_cond_destroy(&nt->work);
	pthread_mutex_destroy(&nt->lock);
	nt->running = false;
	return true;
}
