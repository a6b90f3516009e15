/*
 * fs_data.c - file data: read (into a buffer or straight from the file's
 * pages), write, fallocate, lseek, and open descriptions (open, release,
 * poll).  The data itself is file.c's; here are the locking, the time
 * stamps and the retries after making room (find_room, fs_int.h).
 */
#include "fs_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "file.h"
#include "meta.h"

/* relatime: atime moves when it is older than mtime or ctime, or a day old. */
static bool atime_due(const struct inode *n)
{
	struct timespec now;

	if (n->atime.tv_sec < n->mtime.tv_sec ||
	    (n->atime.tv_sec == n->mtime.tv_sec && n->atime.tv_nsec <= n->mtime.tv_nsec))
		return true;
	if (n->atime.tv_sec < n->ctime.tv_sec ||
	    (n->atime.tv_sec == n->ctime.tv_sec && n->atime.tv_nsec <= n->ctime.tv_nsec))
		return true;
	inode_now(&now);
	return now.tv_sec - n->atime.tv_sec >= 24 * 3600;
}

struct copy_out {
	char *buf;
	size_t len;
};

static void copy_out(void *ctx, const struct iovec *iov, size_t count)
{
	struct copy_out *c = ctx;

	for (size_t i = 0; i < count; i++) {
		memcpy(c->buf + c->len, iov[i].iov_base, iov[i].iov_len);
		c->len += iov[i].iov_len;
	}
}

ssize_t fs_read(struct fs *fs, struct inode *n, uint64_t off, size_t size, char *buf)
{
	struct copy_out c = { .buf = buf };
	int ret = fs_read_reply(fs, n, off, size, copy_out, &c);

	return ret < 0 ? ret : (ssize_t)c.len;
}

int fs_read_reply(struct fs *fs, struct inode *n, uint64_t off, size_t size,
		  fs_reply_fn reply, void *ctx)
{
	struct iovec stack_iov[FILE_READ_IOV_MAX(256 * ARENA_PAGE_SIZE)];
	struct iovec *iov = stack_iov;
	size_t niov;
	ssize_t got;
	bool due;
	int ret = 0;

	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	if (FILE_READ_IOV_MAX(size) > sizeof(stack_iov) / sizeof(stack_iov[0])) {
		iov = malloc(FILE_READ_IOV_MAX(size) * sizeof(*iov));
		if (!iov)
			return -ENOMEM;
	}
	/* The access time moves before the reply: once the reply is out,
	 * the kernel may close the file and forget the node at once.  When
	 * it is due (relatime: rarely), the read is done under the write
	 * lock that moving it needs. */
	pthread_rwlock_rdlock(&n->lock);
	due = atime_due(n);
	if (due) {
		pthread_rwlock_unlock(&n->lock);
		pthread_rwlock_wrlock(&n->lock);
	}
	got = fs->store->read_iov(fs, n, off, size, iov, &niov);
	if (got >= 0) {
		if (due)
			stamp_locked(n, T_A);
		reply(ctx, iov, niov);
	}
	pthread_rwlock_unlock(&n->lock);
	if (iov != stack_iov)
		free(iov);
	if (got < 0)
		ret = (int)got;
	return ret;
}

static ssize_t write_any(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			 size_t size, bool mapped)
{
	ssize_t ret;

	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	for (int tries = 0;; tries++) {
		uint64_t need;

		pthread_rwlock_wrlock(&n->lock);
		ret = fs->store->write(fs, n, off, buf, size, mapped);
		if (ret > 0)
			stamp_locked(n, T_M | T_C);
		need = ret == -ENOSPC ? fs->store->pages_needed(n, off, size) : 0;
		pthread_rwlock_unlock(&n->lock);
		if (ret != -ENOSPC || tries == SPACE_RETRIES ||
		    !find_room(fs, need * ARENA_PAGE_SIZE))
			break;
	}
	if (ret == -ENOSPC)
		atomic_fetch_add(&fs->mem.enospc_total, 1);
	return ret;
}

ssize_t fs_write(struct fs *fs, struct inode *n, uint64_t off, const char *buf, size_t size)
{
	return write_any(fs, n, off, buf, size, false);
}

ssize_t fs_writeback(struct fs *fs, struct inode *n, uint64_t off, const char *buf, size_t size)
{
	return write_any(fs, n, off, buf, size, true);
}

/*
 * Everything the range needs is reserved first, under the file's lock;
 * the pages are then given memory in steps of FILE_FALLOC_BATCH, and the
 * lock is dropped between steps, so a truncate or a read of the same
 * file waits for one step at most, never for the whole range.
 */
int fs_fallocate(struct fs *fs, struct inode *n, int mode, uint64_t off, uint64_t len)
{
	struct file_falloc fa;
	int ret;

	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -ENODEV;
	for (int tries = 0;; tries++) {
		uint64_t need;

		pthread_rwlock_wrlock(&n->lock);
		ret = fs->store->falloc_begin(fs, n, mode, off, len, &fa);
		if (ret != -ENOSPC)
			break; /* with the lock held */
		need = fs->store->pages_needed(n, off, len);
		pthread_rwlock_unlock(&n->lock);
		if (tries == SPACE_RETRIES || need > atomic_load(&fs->mem.limit) / ARENA_PAGE_SIZE ||
		    !find_room(fs, need * ARENA_PAGE_SIZE)) {
			atomic_fetch_add(&fs->mem.enospc_total, 1);
			return -ENOSPC;
		}
	}
	while (ret == 0) {
		ret = fs->store->falloc_step(fs, n, &fa);
		if (ret == 0) {
			pthread_rwlock_unlock(&n->lock);
			pthread_rwlock_wrlock(&n->lock);
		}
	}
	if (ret == 1) {
		stamp_locked(n, T_M | T_C);
		ret = 0;
	}
	fs->store->resv_release(fs, &fa.resv);
	pthread_rwlock_unlock(&n->lock);
	if (ret == -ENOSPC)
		atomic_fetch_add(&fs->mem.enospc_total, 1);
	return ret;
}

int64_t fs_lseek(struct fs *fs, struct inode *n, uint64_t off, int whence)
{
	int64_t ret;

	if (!S_ISREG(n->mode))
		return -EINVAL;
	fs_sync(fs, n);
	pthread_rwlock_rdlock(&n->lock);
	ret = fs->store->seek(n, off, whence);
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

struct ofile *fs_ofile_new(struct fs *fs)
{
	struct ofile *of;
	uint64_t cost = meta_cost(sizeof(*of)), over;
	bool was;

	/* Under the limit, purging first if need be (fs.h) ... */
	if (fs_room(fs, cost) == 0) {
		of = meta_calloc(sizeof(*of));
		fs_room_end(fs);
		if (of)
			return of;
	}
	/* ... else from the overdraft, bounded by FS_OPEN_OVERDRAFT: the
	 * DESIGN section 3 allowance has room for it. */
	over = atomic_fetch_add(&fs->open_overdraft, cost);
	if (over + cost > FS_OPEN_OVERDRAFT) {
		atomic_fetch_sub(&fs->open_overdraft, cost);
		errno = ENOSPC;
		return NULL;
	}
	was = meta_unlimited(true);
	of = meta_calloc(sizeof(*of));
	meta_unlimited(was);
	if (!of) {
		atomic_fetch_sub(&fs->open_overdraft, cost);
		return NULL;
	}
	of->overdraft = true;
	return of;
}

void fs_ofile_discard(struct fs *fs, struct ofile *of)
{
	if (of->overdraft)
		atomic_fetch_sub(&fs->open_overdraft, meta_cost(sizeof(*of)));
	meta_free(of);
}

int fs_open_attach(struct fs *fs, struct ofile *of, struct inode *n, int flags)
{
	(void)fs;
	of->inode = n;
	of->flags = flags;
	if (!S_ISREG(n->mode))
		return 0; /* not listed: only files are purged */
	pthread_rwlock_wrlock(&n->lock);
	if (n->purge_unlinked) {
		/* Reached through a dentry the kernel has not yet dropped:
		 * ESTALE makes the VFS look the name up again (and create
		 * it anew under O_CREAT). */
		pthread_rwlock_unlock(&n->lock);
		return -ESTALE;
	}
	of->next = n->open_files;
	if (of->next)
		of->next->prev = of;
	n->open_files = of;
	n->nopen++;
	pthread_rwlock_unlock(&n->lock);
	return 0;
}

/*
 * Recency on the passthrough path (DESIGN 11): the kernel reads a
 * passthrough file without the daemon, so the file counts as used, whole,
 * at each open, at its last close, and every second while it is open
 * (fs_pt_walk with touch): no read of it can happen outside those times.
 * n locked for writing.
 */
static void touch_file(struct fs *fs, struct inode *n)
{
	units_touch_all(&fs->lru, &n->units);
}

void fs_pt_walk(struct fs *fs, bool touch)
{
	struct inode *n;

	pthread_rwlock_rdlock(&fs->ns_lock);
	pthread_mutex_lock(&fs->pt_lock);
	LIST_FOREACH(n, &fs->pt_open, pt_link) {
		/* pt_lock nests inside inode locks: only try.  A file whose
		 * lock is held is in use now; the next walk finds it. */
		if ((!touch && !atomic_load(&n->pt_writers)) ||
		    pthread_rwlock_trywrlock(&n->lock) != 0)
			continue;
		if (atomic_load(&n->pt_writers)) {
			struct timespec was = n->mtime;

			fs_sync_locked(fs, n);
			/* A store through a mapping moves the backing file's
			 * mtime and sends the kernel nothing: have it drop the
			 * times it caches, so that stat shows the store while
			 * the writer is still open. */
			if ((was.tv_sec != n->mtime.tv_sec || was.tv_nsec != n->mtime.tv_nsec) &&
			    fs->hooks.attrs)
				fs->hooks.attrs(fs->hooks.ctx, n);
		}
		if (touch)
			touch_file(fs, n);
		pthread_rwlock_unlock(&n->lock);
	}
	pthread_mutex_unlock(&fs->pt_lock);
	pthread_rwlock_unlock(&fs->ns_lock);
}

int32_t fs_backing_get(struct fs *fs, struct ofile *of, int (*reg)(int fd))
{
	struct inode *n = of->inode;
	int32_t id;
	int fd;

	if (!fs->passthrough || !S_ISREG(n->mode))
		return -EOPNOTSUPP;
	pthread_rwlock_wrlock(&n->lock);
	id = n->backing_id;
	if (id <= 0) {
		fd = shm_backing_open(fs, n, true);
		id = fd < 0 ? fd : reg(fd);
		if (fd >= 0)
			close(fd); /* the kernel holds its own reference */
		if (id > 0)
			n->backing_id = id;
	}
	if (id > 0) {
		if (n->pt_opens++ == 0) {
			pthread_mutex_lock(&fs->pt_lock);
			LIST_INSERT_HEAD(&fs->pt_open, n, pt_link);
			pthread_mutex_unlock(&fs->pt_lock);
		}
		of->passthrough = true;
		if ((of->flags & O_ACCMODE) != O_RDONLY) {
			bool first;

			of->writes_seen = fs_writes_seen_locked(fs, n);
			atomic_fetch_add(&n->pt_writers, 1);
			first = atomic_fetch_add(&fs->pt_writers, 1) == 0;
			if (!of->writes_seen)
				first |= atomic_fetch_add(&fs->pt_kernel_writers, 1) == 0;
			/* The monitor sleeps up to EVICT_MONITOR_MS, not
			 * listening to the watch: a writer can fill the
			 * mount before then. */
			if (first)
				fs_monitor_kick(fs);
		}
		touch_file(fs, n);
	}
	pthread_rwlock_unlock(&n->lock);
	/* A writer the kernel serves meets the tmpfs's size, not a
	 * reservation: size it to what the limit leaves now, with freed
	 * metadata given back first (an rm may have just freed much). */
	if (id > 0 && (of->flags & O_ACCMODE) != O_RDONLY && !of->writes_seen) {
		mem_trim(&fs->mem, false);
		fs_shm_recap(fs);
	}
	return id;
}

bool fs_writes_seen_locked(struct fs *fs, struct inode *n)
{
	/* A write clears set-user-ID and set-group-ID (FUSE_WRITE_KILL_SUIDGID
	 * reaches the daemon only with the write; the kernel's own write to
	 * the backing file leaves the node's mode alone). */
	return fs->write_unmark || n->units.count > 0 ||
	       !extset_empty(&n->purged) || (n->mode & (S_ISUID | S_ISGID));
}

int32_t fs_backing_put(struct fs *fs, struct ofile *of)
{
	struct inode *n = of->inode;
	int32_t id = 0;

	if (!of->passthrough)
		return 0;
	pthread_rwlock_wrlock(&n->lock);
	of->passthrough = false;
	if ((of->flags & O_ACCMODE) != O_RDONLY) {
		atomic_fetch_sub(&n->pt_writers, 1);
		atomic_fetch_sub(&fs->pt_writers, 1);
		if (!of->writes_seen)
			atomic_fetch_sub(&fs->pt_kernel_writers, 1);
		fs_sync_locked(fs, n); /* what it wrote behind the daemon */
		/* The kernel caches attributes for long and saw no request
		 * for stores through a mapping: every process sees the size,
		 * blocks and times once the writer has closed. */
		if (fs->hooks.attrs)
			fs->hooks.attrs(fs->hooks.ctx, n);
	}
	touch_file(fs, n); /* read up to now */
	if (--n->pt_opens == 0) {
		id = n->backing_id;
		n->backing_id = 0;
		pthread_mutex_lock(&fs->pt_lock);
		LIST_REMOVE(n, pt_link);
		pthread_mutex_unlock(&fs->pt_lock);
	}
	pthread_rwlock_unlock(&n->lock);
	return id;
}

void fs_release_file(struct fs *fs, struct ofile *of)
{
	struct inode *n = of->inode;

	if (S_ISREG(n->mode)) {
		pthread_rwlock_wrlock(&n->lock);
		if (of->prev)
			of->prev->next = of->next;
		else
			n->open_files = of->next;
		if (of->next)
			of->next->prev = of->prev;
		n->nopen--;
		pthread_rwlock_unlock(&n->lock);
	}
	if (of->poll_handle && fs->hooks.poll_free)
		fs->hooks.poll_free(fs->hooks.ctx, of->poll_handle);
	fs_ofile_discard(fs, of);
}

bool fs_poll(struct fs *fs, struct ofile *of, void *ph, void **old)
{
	struct inode *n = of->inode;
	bool purged;

	*old = NULL;
	if (!S_ISREG(n->mode))
		return false;
	pthread_rwlock_wrlock(&n->lock);
	fs_sync_locked(fs, n); /* what writers the kernel serves rewrote */
	/* Up once the kernel has dropped the purged pages: the waiter kept
	 * here is woken then (notify.h). */
	purged = !extset_empty(&n->purged) &&
		 (!fs->hooks.delivered || fs->hooks.delivered(fs->hooks.ctx, n, n->inval_seq));
	if (ph) {
		*old = of->poll_handle;
		of->poll_handle = ph;
	}
	pthread_rwlock_unlock(&n->lock);
	return purged;
}
