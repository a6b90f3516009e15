/*
 * evict.c - purging volatile units; see evict.h.
 */
#include "evict.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "meta.h"

#define PG ARENA_PAGE_SIZE

int64_t evict_unit_locked(struct fs *fs, struct inode *n, struct unit *u)
{
	bool unbounded = u->end == UNIT_UNBOUNDED;
	uint64_t start = u->start * PG;
	uint64_t end = unbounded || u->end > n->size / PG ? n->size : u->end * PG;
	uint64_t before = n->purged.bytes, freed = u->resident;

	/* A unit that holds a page pays for what its purge adds: it frees
	 * at least PG bytes, and adds at most one purged-set extent (the
	 * unit is one run: it merges with what it touches) and the file's
	 * one notifier record, each far smaller.  Those are charged past
	 * the limit, so that a purge, which is how memory comes back, never
	 * fails for want of it.  A unit that holds nothing (a sparse range,
	 * one purged already) frees nothing: what it adds must fit under
	 * the limit like any metadata, or the purge fails with -ENOMEM and
	 * changes nothing (DESIGN section 3: no side door). */
	bool funded = freed > 0, was;
	int ret = 0;

	/* What the notifier will need, first: after the purge, queueing
	 * its invalidation cannot fail (notify.h). */
	if (fs->hooks.prepare && (ret = fs->hooks.prepare(fs->hooks.ctx, n, funded)) < 0)
		return ret;
	was = meta_unlimited(funded);
	if (start < end)
		ret = extset_add(&n->purged, start, end);
	meta_unlimited(was);
	if (ret < 0)
		return ret;
	units_purged(&fs->lru, u);
	/* Free exactly the unit's pages; no other unit overlaps them. */
	fs->store->free_range(fs, n, u->start, unbounded ? PM_MAX_INDEX : u->end - 1);
	atomic_fetch_add(&fs->purges_total, 1);
	atomic_fetch_add(&fs->purged_bytes_total, n->purged.bytes - before);
	/* The kernel drops its pages, then the poll waiters are woken:
	 * POLLPRI is up only once that was delivered.  length 0: to the end. */
	if (fs->hooks.purged)
		n->inval_seq = fs->hooks.purged(fs->hooks.ctx, n, start,
						unbounded ? 0 : (u->end - u->start) * PG);
	return (int64_t)freed;
}

/* Files purged under auto=unlink, whose names go once ns_lock can be had for writing. */
struct unlink_list {
	struct inode **v;
	size_t n, cap;
};

/*
 * After a purge of n (n locked for writing, ns_lock held): if n is an
 * auto=unlink file whose name must go (fs_auto_unlink_mark), mark it,
 * from when on the daemon refuses the name, and remember it (held, so
 * it stays alive) for unlink_pending.  If there is no room to remember
 * it, it is not marked and keeps its name: a later purge may take it.
 */
static void unlink_after_purge(struct unlink_list *l, struct inode *n, bool force)
{
	if (!n->auto_unlink)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct inode **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	if (!fs_auto_unlink_mark(n, force))
		return;
	fs_hold(n);
	l->v[l->n++] = n;
}

/* Caller holds evict_lock only. */
static void unlink_pending(struct fs *fs, struct unlink_list *l)
{
	if (!l->n)
		goto out;
	pthread_rwlock_wrlock(&fs->ns_lock);
	for (size_t i = 0; i < l->n; i++) {
		fs_auto_unlink_locked(fs, l->v[i]);
		fs_put_locked(fs, l->v[i]);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
out:
	free(l->v);
}

/* auto=unlink files that are open are skipped (DESIGN section 8). */
static bool skip_open(struct inode *n)
{
	return n->auto_unlink && n->nopen > 0;
}

/*
 * Purge in order while more() says so.  Returns pages freed; stops when
 * no unit holds memory, a purge fails, or every unit left was skipped.
 */
static uint64_t evict_loop(struct fs *fs, bool (*more)(struct fs *, uint64_t, uint64_t),
			   uint64_t arg, uint64_t *units)
{
	struct unlink_list pending = { 0 };
	uint64_t freed = 0, skipped = 0, purged = 0;

	pthread_mutex_lock(&fs->evict_lock);
	pthread_rwlock_rdlock(&fs->ns_lock);
	while (more(fs, freed, arg)) {
		struct unit *u = lru_pick(&fs->lru);
		struct inode *n;
		int64_t got = 0;

		if (!u)
			break;
		n = u->inode; /* immutable, and alive: we hold ns_lock */
		pthread_rwlock_wrlock(&n->lock);
		fs_sync_locked(fs, n);
		/* Released meanwhile, or emptied by another purge: skip it. */
		if (lru_unpin(&fs->lru, u) && u->resident) {
			if (skip_open(n)) {
				/* to the back of its list, so the next pick differs */
				units_touch(&fs->lru, &n->units, u->start, u->start + 1);
				if (++skipped > fs->lru.units)
					got = -EBUSY;
			} else {
				got = evict_unit_locked(fs, n, u);
				if (got >= 0)
					purged++;
				if (got >= 0)
					unlink_after_purge(&pending, n, false);
			}
		}
		pthread_rwlock_unlock(&n->lock);
		if (got < 0)
			break;
		freed += (uint64_t)got;
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	unlink_pending(fs, &pending);
	pthread_mutex_unlock(&fs->evict_lock);
	if (units)
		*units = purged;
	return freed;
}

static bool always_more(struct fs *fs, uint64_t freed, uint64_t arg)
{
	(void)fs; (void)freed; (void)arg;
	return true;
}

static bool over_target(struct fs *fs, uint64_t freed, uint64_t target)
{
	(void)freed;
	return mem_rss(&fs->mem) > target;
}

static bool under_bytes(struct fs *fs, uint64_t freed, uint64_t bytes)
{
	(void)fs;
	return freed * PG < bytes;
}

uint64_t evict_to(struct fs *fs, uint64_t target)
{
	return evict_loop(fs, over_target, target, NULL);
}

uint64_t evict_bytes(struct fs *fs, uint64_t bytes)
{
	return evict_loop(fs, under_bytes, bytes, NULL) * PG;
}

uint64_t evict_for_pressure(struct fs *fs, uint64_t bytes)
{
	uint64_t units = 0, freed = evict_loop(fs, under_bytes, bytes, &units) * PG;

	atomic_fetch_add(&fs->pressure_purges_total, units);
	atomic_fetch_add(&fs->pressure_bytes_total, freed);
	return freed;
}

/*
 * Purge the units of n that hold memory (with_memory) or the others
 * that cover bytes of the file (their bytes join the purged set; their
 * extents must fit under the limit: evict_unit_locked).  n locked.
 * Pages freed, or -ENOMEM when a unit could not be purged for want of
 * room (those before it were).  *any: set when a unit was purged.
 */
static int64_t purge_file_locked(struct fs *fs, struct inode *n, bool with_memory, bool *any)
{
	uint64_t freed = 0;

	for (struct unit *u = units_first_from(&n->units, 0); u; u = units_next(&n->units, u)) {
		uint64_t start = u->start * PG, end;
		int64_t got;

		if (with_memory != (u->resident > 0) || (!with_memory && start >= n->size))
			continue;
		if (!with_memory) {
			/* Its bytes in the file, all purged already (by the
			 * first pass, or before): nothing to add. */
			end = u->end == UNIT_UNBOUNDED || u->end > n->size / PG ? n->size
									       : u->end * PG;
			if (extset_bytes_in(&n->purged, start, end) == end - start)
				continue;
		}
		got = evict_unit_locked(fs, n, u);
		if (got < 0)
			return got;
		*any = true;
		freed += (uint64_t)got;
	}
	return (int64_t)freed;
}

/*
 * "all" means every unit, also those that hold no memory (a sparse or
 * already purged range whose bytes then join the purged set), so visit
 * every file that has units: lru->files, not the purge lists, and not
 * the whole inode table (files without units cost nothing here).
 * Units that hold memory go first, in every file, so that the memory
 * they give back makes room for what the others add.  ns_lock held for
 * reading keeps those files alive.
 */
int64_t evict_all(struct fs *fs)
{
	struct unlink_list pending = { 0 };
	struct inode **files = NULL;
	uint64_t freed = 0, total;
	size_t n = 0;
	int err = 0;

	pthread_mutex_lock(&fs->evict_lock);
	pthread_rwlock_rdlock(&fs->ns_lock);
	lru_files(&fs->lru, NULL, 0, &total);
	if (total && (files = calloc(total, sizeof(*files))) != NULL)
		n = lru_files(&fs->lru, files, total, &total);
	/* Out of memory for the list: purge what the lists know of. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			struct inode *f = files[i];
			bool any = false;
			int64_t got = 0;

			pthread_rwlock_wrlock(&f->lock);
			fs_sync_locked(fs, f);
			if (f->units.count && !skip_open(f)) {
				got = purge_file_locked(fs, f, pass == 0, &any);
				if (any)
					unlink_after_purge(&pending, f, false);
			}
			pthread_rwlock_unlock(&f->lock);
			if (got > 0)
				freed += (uint64_t)got;
			else if (got < 0)
				err = (int)got;
		}
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	unlink_pending(fs, &pending);
	pthread_mutex_unlock(&fs->evict_lock);
	free(files);
	if (total && !files)
		freed += evict_loop(fs, always_more, 0, NULL);
	return err ? err : (int64_t)(freed * PG);
}

int64_t evict_file(struct fs *fs, struct inode *n)
{
	struct unlink_list pending = { 0 };
	bool any = false;
	int64_t got, more;

	if (!S_ISREG(n->mode))
		return -EISDIR;
	pthread_mutex_lock(&fs->evict_lock);
	pthread_rwlock_rdlock(&fs->ns_lock);
	pthread_rwlock_wrlock(&n->lock);
	fs_sync_locked(fs, n);
	got = purge_file_locked(fs, n, true, &any);
	if (got >= 0 && (more = purge_file_locked(fs, n, false, &any)) < 0)
		got = more;
	/* Asked for by name: its names go even while it is open (DESIGN 8:
	 * every purge of such a file removes them); open descriptions
	 * keep reading it as an unlinked file. */
	if (any)
		unlink_after_purge(&pending, n, true);
	pthread_rwlock_unlock(&n->lock);
	pthread_rwlock_unlock(&fs->ns_lock);
	unlink_pending(fs, &pending);
	pthread_mutex_unlock(&fs->evict_lock);
	return got < 0 ? got : got * (int64_t)PG;
}

bool evict_for_write(struct fs *fs, uint64_t pages)
{
	uint64_t low = atomic_load(&fs->mem.low), need = pages * PG;

	mem_reconcile(&fs->mem);
	return evict_to(fs, low > need ? low - need : 0) > 0;
}

void evict_attach(struct fs *fs)
{
	fs->make_room = evict_for_write;
}

/*
 * On the passthrough path, where the purge starts and where it stops.
 * Writers the kernel serves itself are not reserved for: the purge starts
 * halfway between memory_low and the limit, so that a writer meets room
 * rather than the tmpfs's size (the hard backstop).  While an open exists
 * whose write(2)s the kernel serves, such a writer can fill what is left
 * in a few milliseconds, faster than the monitor wakes and purges: the
 * purge then starts as far below memory_low as the limit is above it,
 * and goes as far again, so that the writer has that much room before
 * the next purge must start (a 64M mount: from 51.2 down to 44.8 MiB).
 */
static void pt_bounds(struct fs *fs, uint64_t *start, uint64_t *target)
{
	uint64_t limit = atomic_load(&fs->mem.limit), low = atomic_load(&fs->mem.low);
	uint64_t step = limit - low;

	*start = low + step / 2;
	*target = low;
	if (atomic_load(&fs->pt_kernel_writers)) {
		*start = low > step ? low - step : 0;
		*target = *start > step ? *start - step : 0;
	}
}

void evict_check(struct fs *fs)
{
	uint64_t limit = atomic_load(&fs->mem.limit), low = atomic_load(&fs->mem.low);

	if (atomic_load(&fs->passthrough)) {
		uint64_t start, target;

		/* Writers the kernel serves are seen only here and in
		 * keep_room: what the backing files hold, and the tmpfs's
		 * size moved to what the limit leaves beside our RSS. */
		pt_bounds(fs, &start, &target);
		fs_pt_walk(fs, false);
		mem_reconcile(&fs->mem);
		fs_shm_recap(fs);
		if (mem_rss(&fs->mem) > start)
			evict_to(fs, target);
		return;
	}
	if (mem_rss(&fs->mem) > limit)
		evict_to(fs, low);
}

void evict_probe(struct fs *fs)
{
	struct unit *v[EVICT_PROBE_MAX];
	size_t nv;

	if (fs->passthrough) {
		/* No kernel copy to drop: the kernel reads the backing
		 * file itself; open files count as used instead. */
		fs_pt_walk(fs, true);
		return;
	}
	if (!fs->hooks.purged)
		return;
	pthread_mutex_lock(&fs->evict_lock);
	pthread_rwlock_rdlock(&fs->ns_lock);
	nv = lru_probe_pick(&fs->lru, v, EVICT_PROBE_MAX);
	for (size_t i = 0; i < nv; i++) {
		struct inode *n = v[i]->inode; /* alive: ns_lock */

		pthread_rwlock_wrlock(&n->lock);
		if (lru_unpin(&fs->lru, v[i]) && v[i]->resident &&
		    (!fs->hooks.prepare || fs->hooks.prepare(fs->hooks.ctx, n, false) == 0)) {
			uint64_t len = v[i]->end == UNIT_UNBOUNDED ? 0 :
				       (v[i]->end - v[i]->start) * PG;

			/* Only the kernel's copy goes; the unit keeps its data. */
			fs->hooks.purged(fs->hooks.ctx, n, v[i]->start * PG, len);
		}
		pthread_rwlock_unlock(&n->lock);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	pthread_mutex_unlock(&fs->evict_lock);
}

/*
 * Room for writers the kernel serves (opens answered without
 * FOPEN_DIRECT_IO, stores through mappings): they allocate pages of the
 * backing files with no request, and get ENOSPC (SIGBUS through a
 * mapping) once the tmpfs is full, while volatile data may still hold
 * memory.  The purge must start before that (pt_bounds), in time: each
 * write(2) to a backing file wakes the monitor (inotify IN_MODIFY on
 * their directory), which compares the kernel's two figures (our RSS,
 * the tmpfs's use: two system calls) with the start and only past it
 * purges, with nothing else first: the pages the writers added count in
 * base once reconciled (mem.h), and the sync of the files they write,
 * which can take milliseconds, waits for the monitor's tick.  Stores
 * through a mapping send no event: while any writable passthrough open
 * exists the monitor also looks every EVICT_KEEP_MS.
 */
static void keep_room(struct fs *fs)
{
	uint64_t start, target;

	if (!atomic_load(&fs->passthrough))
		return;
	fs_shm_recap(fs); /* the size follows the RSS, which a purge or an rm lowered */
	if (!atomic_load(&fs->lru.ever) || !atomic_load(&fs->lru.resident))
		return;
	pt_bounds(fs, &start, &target);
	if (mem_rss_kernel(&fs->mem) + shm_used(&fs->shm) <= start)
		return;
	mem_reconcile(&fs->mem);
	if (mem_rss(&fs->mem) > start)
		evict_to(fs, target);
}

/* Milliseconds from now to *t (0 when past), at most cap. */
static int ms_until(const struct timespec *t, int cap)
{
	struct timespec now;
	int64_t ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (int64_t)(t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > cap ? cap : (int)ms;
}

static bool past(const struct timespec *t)
{
	return ms_until(t, 1) == 0;
}

static void add_ms(struct timespec *t, long ms)
{
	t->tv_nsec += ms * 1000000L;
	while (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/* Read what woke us from fd (non-blocking): true when anything was there. */
static bool drain(int fd)
{
	char buf[4096];
	bool any = false;

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

/*
 * The monitor thread: it sleeps in poll() on wake (an eventfd: stop, or
 * look again) and watch (inotify on the backing files' directory, -1
 * without one: writes the kernel serves).  Allocated by
 * evict_monitor_start, freed by evict_monitor_stop; fs->monitor points
 * to it meanwhile.
 */
struct evict_monitor {
	struct fs *fs;
	pthread_t thread;
	pthread_mutex_t lock;
	bool stop; /* under lock */
	int wake;
	int watch;
};

static bool stopping(struct evict_monitor *m)
{
	bool stop;

	pthread_mutex_lock(&m->lock);
	stop = m->stop;
	pthread_mutex_unlock(&m->lock);
	return stop;
}

/* fs->monitor_kick while the monitor runs. */
static void monitor_kick(struct fs *fs)
{
	uint64_t one = 1;

	/* An eventfd short of 2^64 - 1 takes it: it cannot fail. */
	if (write(fs->monitor->wake, &one, sizeof(one)) < 0)
		return;
}

/*
 * Writers the kernel serves fill the tmpfs at memory speed and meet ENOSPC
 * if the monitor is late, so it must run as soon as it wakes, whatever
 * else the machine runs: the lowest real-time priority (it sleeps in
 * poll() between looks and does little when it wakes), else a nice of
 * -10, else as it is (a daemon without the privilege).
 */
static void monitor_priority(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		return;
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10);
}

static void *monitor_main(void *arg)
{
	struct evict_monitor *m = arg;
	struct fs *fs = m->fs;
	struct pollfd p[2] = { { .fd = m->wake, .events = POLLIN },
			       { .fd = m->watch, .events = POLLIN } };
	struct timespec tick;
	unsigned ticks = 0;

	monitor_priority();
	clock_gettime(CLOCK_MONOTONIC, &tick);
	add_ms(&tick, EVICT_MONITOR_MS);
	while (!stopping(m)) {
		int wait = ms_until(&tick, EVICT_MONITOR_MS);

		if (atomic_load(&fs->pt_writers) && wait > EVICT_KEEP_MS)
			wait = EVICT_KEEP_MS;
		/* The daemon's own writes modify the backing files too, but
		 * they reserve first: the watch is listened to only while an
		 * open the kernel writes exists (its queue is emptied below). */
		bool watch = p[1].fd >= 0 && atomic_load(&fs->pt_kernel_writers);

		if (poll(p, watch ? 2 : 1, wait) < 0 && errno != EINTR)
			break;
		if (drain(m->wake) && stopping(m))
			break;
		(void)drain(m->watch);
		if (!past(&tick)) {
			keep_room(fs);
			continue;
		}
		add_ms(&tick, EVICT_MONITOR_MS);
		/* Freed metadata back to the kernel, then the kernel's figure. */
		mem_trim(&fs->mem, mem_rss(&fs->mem) > atomic_load(&fs->mem.limit));
		evict_check(fs);
		if (++ticks % (EVICT_PROBE_MS / EVICT_MONITOR_MS) == 0)
			evict_probe(fs);
	}
	return NULL;
}

static void monitor_free(struct evict_monitor *m)
{
	close(m->wake);
	if (m->watch >= 0)
		close(m->watch);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int evict_monitor_start(struct fs *fs)
{
	struct evict_monitor *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->fs = fs;
	ret = -pthread_mutex_init(&m->lock, NULL);
	if (ret) {
		free(m);
		return ret;
	}
	m->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake < 0) {
		ret = -errno;
		pthread_mutex_destroy(&m->lock);
		free(m);
		return ret;
	}
	/* Without a watch, the monitor still looks every EVICT_KEEP_MS
	 * while writers exist. */
	m->watch = shm_watch(&fs->shm);
	fs->monitor = m;
	ret = -pthread_create(&m->thread, NULL, monitor_main, m);
	if (ret) {
		fs->monitor = NULL;
		monitor_free(m);
		return ret;
	}
	atomic_store(&fs->monitor_kick, monitor_kick);
	return 0;
}

void evict_monitor_stop(struct fs *fs)
{
	struct evict_monitor *m = fs->monitor;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_mutex_unlock(&m->lock);
	monitor_kick(fs);
	pthread_join(m->thread, NULL);
	atomic_store(&fs->monitor_kick, NULL);
	fs->monitor = NULL;
	monitor_free(m);
}
