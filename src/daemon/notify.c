/*
 * notify.c - the notifier; see notify.h.
 */
#include "notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"
#include "meta.h"

/*
 * Ranges a file's pending invalidation keeps apart: purges of scattered
 * units (a glyph atlas) must not drop the cached pages between them.
 */
#define INVAL_RANGES 16

struct brange {
	uint64_t lo, hi;
};

/* What one file has to tell the kernel (notify.h).  Under notifier->lock. */
struct inval {
	struct inode *n;
	struct inval *next_ready;
	/* The pending part (taken by the next delivery) and the part in
	 * flight: each on nt->undelivered while it has work, keyed by its
	 * oldest sequence number.  seq 0: inactive. */
	struct seqlink pend, fly;
	/* The pending byte ranges, sorted and disjoint (hi UINT64_MAX: to
	 * the end); at most INVAL_RANGES, the two closest merged beyond. */
	struct brange rng[INVAL_RANGES];
	unsigned nrng;
	uint64_t pend_last;       /* newest sequence number pending */
	uint64_t fly_last;        /* newest in flight */
	uint64_t done;            /* newest delivered */
	struct parked *parked;    /* requests waiting for this file */
	bool queued, inflight, held;
};

/*
 * A name a purge removed, for the kernel to forget (notify.h: deletions
 * have their own queue and thread, and no reply waits for one).  Both
 * nodes are held (fs_hold) until it was sent, so their node ids stay
 * theirs.  Allocated from meta, past the limit: it replaces the
 * directory entry freed with it, which cost more (meta.h).  With dir
 * NULL and an empty name: child's attributes to invalidate (hook_attrs),
 * which takes no lock in the kernel and shares the queue as a one-way
 * message that no reply waits for.
 */
struct delname {
	struct delname *next;
	struct inode *dir, *child;
	char name[];
};

enum reply_kind { R_ERR, R_XATTR, R_IOCTL };

/* A reply waiting for seq to be delivered. */
struct parked {
	struct parked *next;
	fuse_req_t req;
	uint64_t seq;
	enum reply_kind kind;
	int err;
	long len;          /* R_XATTR: value length or -errno */
	size_t size;       /* R_XATTR: the caller's buffer size (0: probe) */
	size_t cap;        /* bytes of buf */
	char buf[];
};

/* What the request on this thread depends on (fs_hooks depend calls). */
static __thread struct {
	struct notifier *nt;
	struct parked *rec;   /* preallocated by notify_report_begin */
	struct inode *n;      /* a file's records up to seq */
	uint64_t seq;
	uint64_t all_seq;     /* every record up to all_seq; 0: none */
} cur;

static fuse_ino_t nodeid(struct fs *fs, struct inode *n)
{
	return n == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static void seq_append(struct notifier *nt, struct seqlink *l, struct inval *owner,
		       uint64_t seq)
{
	l->owner = owner;
	l->seq = seq;
	l->next = &nt->undelivered;
	l->prev = nt->undelivered.prev;
	l->prev->next = l;
	nt->undelivered.prev = l;
}

static void seq_remove(struct seqlink *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
	l->seq = 0;
}

/* Put `to` where `from` is in the list (its key moves with it). */
static void seq_replace(struct seqlink *from, struct seqlink *to)
{
	*to = *from;
	to->prev->next = to;
	to->next->prev = to;
	from->prev = from->next = NULL;
	from->seq = 0;
}

/* Every sequence number up to this one was delivered. */
static uint64_t watermark(const struct notifier *nt)
{
	const struct seqlink *first = nt->undelivered.next;

	return first == &nt->undelivered ? nt->next_seq : first->seq - 1;
}

static void make_ready(struct notifier *nt, struct inval *r)
{
	if (r->queued || r->inflight || nt->stop)
		return;
	r->queued = true;
	r->next_ready = NULL;
	if (nt->ready_tail)
		nt->ready_tail->next_ready = r;
	else
		nt->ready = r;
	nt->ready_tail = r;
	pthread_cond_signal(&nt->work);
}

/* A new sequence number for pending work on r.  nt locked. */
static uint64_t pend_seq(struct notifier *nt, struct inval *r)
{
	uint64_t seq = ++nt->next_seq;

	if (!r->pend.seq)
		seq_append(nt, &r->pend, r, seq);
	r->pend_last = seq;
	if (!r->held) {
		/* The node outlives its undelivered work (notify.h). */
		fs_hold(r->n);
		r->held = true;
	}
	return seq;
}

/* ---- the hooks (fs.h) ---- */

static int hook_prepare(void *ctx, struct inode *n, bool funded)
{
	struct notifier *nt = ctx;
	struct inval *r;
	bool have, was;

	pthread_mutex_lock(&nt->lock);
	have = n->inval != NULL;
	pthread_mutex_unlock(&nt->lock);
	if (have)
		return 0;
	/* One record per file, freed with the node.  Past the limit only
	 * when the purge it serves frees at least a page, which is more
	 * than the record costs (fs.h, prepare); otherwise it must fit. */
	was = meta_unlimited(funded);
	r = meta_calloc(sizeof(*r));
	meta_unlimited(was);
	if (!r)
		return -ENOMEM;
	r->n = n;
	pthread_mutex_lock(&nt->lock);
	if (!n->inval) {
		n->inval = r;
		r = NULL;
	}
	pthread_mutex_unlock(&nt->lock);
	meta_free(r);
	return 0;
}

/*
 * Add [lo, hi) to r's pending ranges: merged with those it overlaps or
 * touches; past INVAL_RANGES, the two ranges with the smallest gap become
 * one (what lies between is dropped too, which is only a cost).
 */
static void add_range(struct inval *r, uint64_t lo, uint64_t hi)
{
	unsigned i = 0, j, best = 0;
	uint64_t gap = UINT64_MAX;

	while (i < r->nrng && r->rng[i].hi < lo)
		i++;
	/* rng[i..j) overlap or touch [lo, hi): one range with it */
	for (j = i; j < r->nrng && r->rng[j].lo <= hi; j++) {
		if (r->rng[j].lo < lo)
			lo = r->rng[j].lo;
		if (r->rng[j].hi > hi)
			hi = r->rng[j].hi;
	}
	if (j > i) {
		r->rng[i] = (struct brange){ lo, hi };
		memmove(&r->rng[i + 1], &r->rng[j], (r->nrng - j) * sizeof(r->rng[0]));
		r->nrng -= j - i - 1;
		return;
	}
	if (r->nrng == INVAL_RANGES) {
		for (unsigned k = 0; k + 1 < r->nrng; k++) {
			if (r->rng[k + 1].lo - r->rng[k].hi < gap) {
				gap = r->rng[k + 1].lo - r->rng[k].hi;
				best = k;
			}
		}
		r->rng[best].hi = r->rng[best + 1].hi;
		memmove(&r->rng[best + 1], &r->rng[best + 2],
			(r->nrng - best - 2) * sizeof(r->rng[0]));
		r->nrng--;
		if (best + 1 == i)
			return; /* the new range lay in the gap just closed */
		if (best + 1 < i)
			i--;
	}
	memmove(&r->rng[i + 1], &r->rng[i], (r->nrng - i) * sizeof(r->rng[0]));
	r->rng[i] = (struct brange){ lo, hi };
	r->nrng++;
}

static uint64_t hook_purged(void *ctx, struct inode *n, uint64_t off, uint64_t len)
{
	struct notifier *nt = ctx;
	uint64_t end = len && len <= UINT64_MAX - off ? off + len : UINT64_MAX;
	struct inval *r;
	uint64_t seq;

	pthread_mutex_lock(&nt->lock);
	r = n->inval; /* prepared before the purge */
	add_range(r, off, end);
	seq = pend_seq(nt, r);
	make_ready(nt, r);
	pthread_mutex_unlock(&nt->lock);
	return seq;
}

/*
 * Put d (its dir, child and name filled in) on the deletions' queue,
 * holding its nodes until it is sent; freed instead once the notifier
 * stops (nothing is sent any more, notifier_stop).
 */
static void queue_delname(struct notifier *nt, struct delname *d)
{
	d->next = NULL;
	pthread_mutex_lock(&nt->lock);
	if (nt->stop) {
		pthread_mutex_unlock(&nt->lock);
		meta_free(d);
		return;
	}
	if (d->dir)
		fs_hold(d->dir);
	fs_hold(d->child);
	if (nt->del_tail)
		nt->del_tail->next = d;
	else
		nt->del_head = d;
	nt->del_tail = d;
	pthread_cond_signal(&nt->del_work);
	pthread_mutex_unlock(&nt->lock);
}

static void hook_unlinking(void *ctx, struct inode *dir, struct inode *child,
			   const char *name)
{
	struct notifier *nt = ctx;
	size_t len = strlen(name);
	struct delname *d;
	bool was;

	/* Past the limit: the entry removed with this name cost more. */
	was = meta_unlimited(true);
	d = meta_alloc(sizeof(*d) + len + 1);
	meta_unlimited(was);
	if (!d)
		return; /* the kernel keeps its dentry until it expires: opens
			 * through it are refused all the same (fs.h) */
	d->dir = dir;
	d->child = child;
	memcpy(d->name, name, len + 1);
	queue_delname(nt, d);
}

static void hook_attrs(void *ctx, struct inode *n)
{
	struct notifier *nt = ctx;
	struct delname *d = meta_alloc(sizeof(*d) + 1);

	if (!d)
		return; /* the kernel's attributes stay until they expire */
	d->dir = NULL;
	d->child = n;
	d->name[0] = '\0';
	queue_delname(nt, d);
}

/* The newest sequence number of n's record, 0 if it has none.  nt locked. */
static uint64_t newest(const struct inode *n)
{
	const struct inval *r = n->inval;

	if (!r)
		return 0;
	if (r->pend.seq)
		return r->pend_last;
	return r->inflight ? r->fly_last : r->done;
}

static void hook_depend(void *ctx, struct inode *n, uint64_t seq)
{
	struct notifier *nt = ctx;

	if (cur.nt != nt)
		return; /* not a reporting request (notify_report_begin) */
	pthread_mutex_lock(&nt->lock);
	if (!seq)
		seq = newest(n);
	pthread_mutex_unlock(&nt->lock);
	if (!seq)
		return;
	if (cur.n && cur.n != n) {
		/* Two files in one answer (none today): wait for all. */
		uint64_t m = cur.seq > seq ? cur.seq : seq;

		if (m > cur.all_seq)
			cur.all_seq = m;
		return;
	}
	cur.n = n;
	if (seq > cur.seq)
		cur.seq = seq;
}

static void hook_depend_all(void *ctx)
{
	struct notifier *nt = ctx;

	if (cur.nt != nt)
		return;
	pthread_mutex_lock(&nt->lock);
	cur.all_seq = nt->next_seq;
	pthread_mutex_unlock(&nt->lock);
}

static bool delivered_locked(const struct inode *n, uint64_t seq)
{
	return !n->inval || n->inval->done >= seq;
}

static bool hook_delivered(void *ctx, struct inode *n, uint64_t seq)
{
	struct notifier *nt = ctx;
	bool ret;

	pthread_mutex_lock(&nt->lock);
	ret = delivered_locked(n, seq);
	pthread_mutex_unlock(&nt->lock);
	return ret;
}

static void hook_poll_free(void *ctx, void *ph)
{
	(void)ctx;
	fuse_pollhandle_destroy(ph);
}

/* ---- replies ---- */

static void reply_now(struct parked *p)
{
	switch (p->kind) {
	case R_ERR:
		fuse_reply_err(p->req, p->err);
		break;
	case R_XATTR:
		if (p->len < 0)
			fuse_reply_err(p->req, (int)-p->len);
		else if (p->size == 0)
			fuse_reply_xattr(p->req, (size_t)p->len);
		else
			fuse_reply_buf(p->req, p->buf, (size_t)p->len);
		break;
	case R_IOCTL:
		if (p->err)
			fuse_reply_err(p->req, p->err);
		else
			fuse_reply_ioctl(p->req, 0, p->buf, (size_t)p->len);
		break;
	}
	free(p);
}

static void reply_list(struct parked *p)
{
	while (p) {
		struct parked *next = p->next;

		reply_now(p);
		p = next;
	}
}

/* Forget the request's dependencies and free its unused record. */
static void cur_reset(void)
{
	free(cur.rec);
	memset(&cur, 0, sizeof(cur));
}

int notify_report_begin(struct notifier *nt)
{
	cur_reset();
	/* The reply of a setxattr or an ioctl that changed state must not be
	 * refused afterwards, so its record exists before (ioctl arguments
	 * are at most a few KiB; they get room when they are replied). */
	cur.rec = calloc(1, sizeof(*cur.rec));
	if (!cur.rec)
		return -ENOMEM;
	cur.nt = nt;
	return 0;
}

/* Reply with p now, or park it until what the request depends on is delivered. */
static void park_or_reply(struct notifier *nt, fuse_req_t req, struct parked *p)
{
	bool now = true;

	p->req = req;
	if (cur.nt == nt && (cur.seq || cur.all_seq)) {
		pthread_mutex_lock(&nt->lock);
		if (nt->stop) {
			now = true; /* nothing will be delivered: see notifier_stop */
		} else if (cur.all_seq) {
			uint64_t seq = cur.all_seq > cur.seq ? cur.all_seq : cur.seq;

			if (watermark(nt) < seq) {
				p->seq = seq;
				p->next = NULL;
				if (nt->all_tail)
					nt->all_tail->next = p;
				else
					nt->all_head = p;
				nt->all_tail = p;
				now = false;
			}
		} else if (!delivered_locked(cur.n, cur.seq)) {
			p->seq = cur.seq;
			p->next = cur.n->inval->parked;
			cur.n->inval->parked = p;
			now = false;
		}
		pthread_mutex_unlock(&nt->lock);
	}
	if (cur.rec == p)
		cur.rec = NULL;
	memset(&cur, 0, sizeof(cur));
	if (now)
		reply_now(p);
}

void notify_reply_err(struct notifier *nt, fuse_req_t req, int err)
{
	struct parked *p = cur.rec;

	if (!p) { /* notify_report_begin was not called or failed */
		fuse_reply_err(req, err);
		return;
	}
	p->kind = R_ERR;
	p->err = err;
	park_or_reply(nt, req, p);
}

/* A record with room for size bytes: the preallocated one, grown. */
static struct parked *rec_with(size_t size)
{
	struct parked *p = cur.rec;

	if (p && p->cap >= size)
		return p;
	p = realloc(p, sizeof(*p) + size);
	if (!p)
		return NULL;
	if (!cur.rec)
		memset(p, 0, sizeof(*p));
	p->cap = size;
	cur.rec = p;
	return p;
}

void notify_reply_xattr(struct notifier *nt, fuse_req_t req, long len, const char *buf,
			size_t size)
{
	size_t copy = len > 0 && size ? (size_t)len : 0;
	struct parked *p = rec_with(copy);

	if (!p) { /* a get changed nothing: failing it is sound */
		cur_reset();
		fuse_reply_err(req, ENOMEM);
		return;
	}
	p->kind = R_XATTR;
	p->len = len;
	p->size = size;
	if (copy)
		memcpy(p->buf, buf, copy);
	park_or_reply(nt, req, p);
}

void notify_reply_ioctl(struct notifier *nt, fuse_req_t req, int err, const void *buf,
			size_t size)
{
	struct parked *p = cur.rec;

	if (!err && !(p = rec_with(size))) {
		/* The unmark happened; its answer cannot be given.  Say so
		 * rather than park nothing or answer early. */
		p = cur.rec;
		err = ENOMEM;
	}
	if (!p) {
		cur_reset();
		fuse_reply_err(req, err ? err : ENOMEM);
		return;
	}
	p->kind = R_IOCTL;
	p->err = err;
	p->len = (long)size;
	if (!err)
		memcpy(p->buf, buf, size);
	park_or_reply(nt, req, p);
}

/* ---- delivery ---- */

/* Take the parked requests that r's delivered work satisfies.  nt locked. */
static struct parked *take_satisfied(struct notifier *nt, struct inval *r)
{
	struct parked *out = NULL, **pp = &r->parked;
	uint64_t mark = watermark(nt);

	while (*pp) {
		struct parked *p = *pp;

		if (p->seq <= r->done) {
			*pp = p->next;
			p->next = out;
			out = p;
		} else {
			pp = &p->next;
		}
	}
	/* Waiting for all: in sequence order, so from the head. */
	while (nt->all_head && nt->all_head->seq <= mark) {
		struct parked *p = nt->all_head;

		nt->all_head = p->next;
		if (!nt->all_head)
			nt->all_tail = NULL;
		p->next = out;
		out = p;
	}
	return out;
}

static void report_failure(const char *what, int ret)
{
	/* ENOENT: the kernel has no such inode or name (nothing cached);
	 * ENODEV, EBADF, ENOTCONN: unmounting.  No stale data either way. */
	if (ret < 0 && ret != -ENOENT && ret != -ENODEV && ret != -EBADF && ret != -ENOTCONN)
		fprintf(stderr, "volatilefs: %s failed: %s\n", what, strerror(-ret));
}

/* Wake the poll waiters of n: POLLPRI can be seen now.  No lock held. */
static void wake_pollers(struct inode *n, bool stopping)
{
	for (;;) {
		void *ph = NULL;

		pthread_rwlock_wrlock(&n->lock);
		for (struct ofile *of = n->open_files; of && !ph; of = of->next) {
			ph = of->poll_handle;
			of->poll_handle = NULL;
		}
		pthread_rwlock_unlock(&n->lock);
		if (!ph)
			break;
		if (!stopping)
			fuse_lowlevel_notify_poll(ph);
		fuse_pollhandle_destroy(ph);
	}
}

static void deliver_one(struct notifier *nt, struct inval *r)
{
	struct inode *n = r->n;
	fuse_ino_t ino = nodeid(nt->fs, n);
	struct brange rng[INVAL_RANGES];
	unsigned nrng = r->nrng;
	bool range = nrng > 0, put = false, stopping;
	struct parked *replies;

	/* Pending becomes in flight, keeping its place in sequence order. */
	r->queued = false;
	r->inflight = true;
	seq_replace(&r->pend, &r->fly);
	r->fly_last = r->pend_last;
	memcpy(rng, r->rng, nrng * sizeof(rng[0]));
	r->nrng = 0;
	pthread_mutex_unlock(&nt->lock);

	/* A passthrough file whose opens all go to the backing file (reads,
	 * writes, splice, mappings) has no pages in the kernel's cache of the
	 * FUSE file, which the purge punched: only its attributes
	 * (st_blocks) are told.  One with a classic or a FOPEN_DIRECT_IO
	 * open may have some (fuse_cached). */
	if (range && nt->fs->passthrough && !atomic_load(&n->fuse_cached))
		report_failure("attribute invalidation after a purge",
			       fuse_lowlevel_notify_inval_inode(nt->se, ino, -1, 0));
	else
		for (unsigned i = 0; i < nrng; i++)
			report_failure("cache invalidation after a purge",
				       fuse_lowlevel_notify_inval_inode(nt->se, ino,
						(off_t)rng[i].lo, rng[i].hi == UINT64_MAX ? 0 :
						(off_t)(rng[i].hi - rng[i].lo)));
	pthread_mutex_lock(&nt->lock);
	r->done = r->fly_last;
	seq_remove(&r->fly);
	replies = take_satisfied(nt, r);
	stopping = nt->stop;
	pthread_mutex_unlock(&nt->lock);

	reply_list(replies);
	/* Still in flight: no other thread takes r (and may put n) meanwhile. */
	if (range)
		wake_pollers(n, stopping);

	pthread_mutex_lock(&nt->lock);
	r->inflight = false;
	if (r->pend.seq)
		make_ready(nt, r);
	else if (r->held) {
		r->held = false;
		put = true;
	}
	pthread_mutex_unlock(&nt->lock);
	if (put) {
		/* May free n and r (inode_free): neither is touched after. */
		pthread_rwlock_wrlock(&nt->fs->ns_lock);
		fs_put_locked(nt->fs, n);
		pthread_rwlock_unlock(&nt->fs->ns_lock);
	}
	pthread_mutex_lock(&nt->lock);
}

static void *delivery_main(void *arg)
{
	struct notifier *nt = arg;

	pthread_mutex_lock(&nt->lock);
	while (!nt->stop) {
		struct inval *r = nt->ready;

		if (!r) {
			pthread_cond_wait(&nt->work, &nt->lock);
			continue;
		}
		nt->ready = r->next_ready;
		if (!nt->ready)
			nt->ready_tail = NULL;
		deliver_one(nt, r);
	}
	pthread_mutex_unlock(&nt->lock);
	return NULL;
}

/*
 * The deletion thread: sends the name deletions, oldest first.  A
 * deletion takes the directory's and the file's i_rwsem in the kernel
 * (docs/LOCKING.md, "The kernel's locks") and may wait for any request
 * that holds one of them; no reply waits for a deletion, so every such
 * request ends on its own and the deletion follows.  It never holds up
 * a data invalidation: those have their own threads.
 */
static void *deletion_main(void *arg)
{
	struct notifier *nt = arg;

	pthread_mutex_lock(&nt->lock);
	while (!nt->stop) {
		struct delname *d = nt->del_head;

		if (!d) {
			pthread_cond_wait(&nt->del_work, &nt->lock);
			continue;
		}
		nt->del_head = d->next;
		if (!nt->del_head)
			nt->del_tail = NULL;
		pthread_mutex_unlock(&nt->lock);
		if (d->dir)
			report_failure("removing a name from the kernel's cache",
				       fuse_lowlevel_notify_delete(nt->se, nodeid(nt->fs, d->dir),
								   nodeid(nt->fs, d->child), d->name,
								   strlen(d->name)));
		else
			report_failure("attribute invalidation",
				       fuse_lowlevel_notify_inval_inode(nt->se,
						nodeid(nt->fs, d->child), -1, 0));
		pthread_rwlock_wrlock(&nt->fs->ns_lock);
		fs_put_locked(nt->fs, d->child);
		if (d->dir)
			fs_put_locked(nt->fs, d->dir);
		pthread_rwlock_unlock(&nt->fs->ns_lock);
		meta_free(d);
		pthread_mutex_lock(&nt->lock);
	}
	pthread_mutex_unlock(&nt->lock);
	return NULL;
}

int notifier_start(struct notifier *nt, struct fuse_session *se, struct fs *fs)
{
	struct fs_hooks *hooks = &fs->hooks;
	int ret;

	memset(nt, 0, sizeof(*nt));
	nt->se = se;
	nt->fs = fs;
	nt->undelivered.next = nt->undelivered.prev = &nt->undelivered;
	if ((ret = pthread_mutex_init(&nt->lock, NULL)) != 0)
		return -ret;
	if ((ret = pthread_cond_init(&nt->work, NULL)) != 0) {
		pthread_mutex_destroy(&nt->lock);
		return -ret;
	}
	if ((ret = pthread_cond_init(&nt->del_work, NULL)) != 0) {
		pthread_cond_destroy(&nt->work);
		pthread_mutex_destroy(&nt->lock);
		return -ret;
	}
	/* threads[0] sends deletions, the others data invalidations. */
	ret = pthread_create(&nt->threads[0], NULL, deletion_main, nt);
	for (nt->nthreads = ret ? 0 : 1; !ret && nt->nthreads < NOTIFY_THREADS + 1; nt->nthreads++) {
		ret = pthread_create(&nt->threads[nt->nthreads], NULL, delivery_main, nt);
		if (ret)
			break;
	}
	if (nt->nthreads < 2) {
		/* Both kinds are needed: stop the one that started. */
		pthread_mutex_lock(&nt->lock);
		nt->stop = true;
		pthread_cond_broadcast(&nt->del_work);
		pthread_mutex_unlock(&nt->lock);
		while (nt->nthreads)
			pthread_join(nt->threads[--nt->nthreads], NULL);
		pthread_cond_destroy(&nt->del_work);
		pthread_cond_destroy(&nt->work);
		pthread_mutex_destroy(&nt->lock);
		return -(ret ? ret : EAGAIN);
	}
	nt->running = true;
	hooks->ctx = nt;
	hooks->prepare = hook_prepare;
	hooks->purged = hook_purged;
	hooks->unlinking = hook_unlinking;
	hooks->attrs = hook_attrs;
	hooks->depend = hook_depend;
	hooks->depend_all = hook_depend_all;
	hooks->delivered = hook_delivered;
	hooks->poll_free = hook_poll_free;
	return 0;
}

/*
 * Once stopping: nothing more will be delivered, so the parked requests
 * get ENOTCONN (their answer would report a purge the kernel may not
 * have seen; the mount is going away), before the device is closed.
 * Queued work is dropped: its names freed, its holds forgotten (the
 * nodes are all freed with the filesystem).  nt locked.
 */
static struct parked *drop_all(struct notifier *nt)
{
	struct parked *out = nt->all_head, **tail = &out;

	nt->all_head = nt->all_tail = NULL;
	while (*tail)
		tail = &(*tail)->next;
	/* The list stays as it is: a delivery in flight removes its link. */
	for (struct seqlink *l = nt->undelivered.next; l != &nt->undelivered; l = l->next) {
		struct inval *r = l->owner;

		*tail = r->parked;
		r->parked = NULL;
		while (*tail)
			tail = &(*tail)->next;
	}
	nt->ready = nt->ready_tail = NULL;
	/* Deletions not sent: their holds die with the nodes. */
	while (nt->del_head) {
		struct delname *d = nt->del_head;

		nt->del_head = d->next;
		meta_free(d);
	}
	nt->del_tail = NULL;
	return out;
}

bool notifier_stop(struct notifier *nt, int timeout_ms)
{
	struct parked *replies;
	struct timespec ts;

	if (!nt->running)
		return true;
	pthread_mutex_lock(&nt->lock);
	nt->stop = true;
	pthread_cond_broadcast(&nt->work);
	pthread_cond_broadcast(&nt->del_work);
	replies = drop_all(nt);
	pthread_mutex_unlock(&nt->lock);
	for (struct parked *p = replies; p; p = p->next)
		p->kind = R_ERR, p->err = ENOTCONN;
	reply_list(replies);
	if (timeout_ms >= 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
	}
	while (nt->nthreads) {
		pthread_t t = nt->threads[nt->nthreads - 1];

		if (timeout_ms >= 0 ? pthread_timedjoin_np(t, NULL, &ts) != 0
				    : pthread_join(t, NULL) != 0)
			return false; /* still in the kernel; call again */
		nt->nthreads--;
	}
	pthread_cond_destroy(&nt->del_work);
	pthread_cond_destroy(&nt->work);
	pthread_mutex_destroy(&nt->lock);
	nt->running = false;
	return true;
}
