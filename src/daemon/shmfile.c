/*
 * shmfile.c - the shared-memory store; see shmfile.h.
 */
#include "shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "file.h"
#include "fs.h"
#include "meta.h"
#include "tbuf.h"

#define PG ARENA_PAGE_SIZE

/* ------------------------------------------------------------------ */
/* The private tmpfs. */

static void cap_string(uint64_t cap, char *buf, size_t len)
{
	uint64_t pages = cap / PG + (cap % PG != 0);

	snprintf(buf, len, "%" PRIu64, (pages ? pages : 1) * PG);
}

int shm_setup(struct shm *s, uint64_t cap)
{
	char size[32];
	int fc, mnt, ret;

	s->root = s->mnt = -1;
	fc = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fc < 0)
		return -errno;
	cap_string(cap, size, sizeof(size));
	if (fsconfig(fc, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(fc, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
	    fsconfig(fc, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		ret = -errno;
		close(fc);
		return ret;
	}
	mnt = fsmount(fc, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID);
	ret = mnt < 0 ? -errno : 0;
	close(fc);
	if (ret)
		return ret;
	s->mnt = s->root = mnt; /* the mount's fd is its root directory */
	atomic_store(&s->cap, cap);
	return 0;
}

void shm_teardown(struct shm *s)
{
	if (s->mnt >= 0)
		close(s->mnt); /* the last reference: the tmpfs and its files go */
	s->mnt = s->root = -1;
}

int shm_set_cap(struct shm *s, uint64_t cap)
{
	char size[32];
	int fc, ret = 0;

	if (s->mnt < 0)
		return -ENODEV;
	fc = fspick(s->mnt, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC);
	if (fc < 0)
		return -errno;
	cap_string(cap, size, sizeof(size));
	if (fsconfig(fc, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(fc, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0)
		ret = -errno;
	else
		atomic_store(&s->cap, cap);
	close(fc);
	return ret;
}

uint64_t shm_used(const struct shm *s)
{
	struct statfs sf;

	if (s->mnt < 0 || fstatfs(s->mnt, &sf) < 0)
		return 0;
	return (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
}

int shm_watch(const struct shm *s)
{
	char path[64];
	int fd;

	if (s->root < 0)
		return -1;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return -1;
	/* The tmpfs is attached nowhere: its root is reached through our descriptor. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->root);
	if (inotify_add_watch(fd, path, IN_MODIFY) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The daemon's own write or fallocate of bytes more found the tmpfs
 * full: its size lags the room the limit leaves (fs_shm_recap follows
 * the RSS every tick), and the daemon reserved those bytes against the
 * limit before it wrote (file_reserve_locked).  But that reservation
 * counts only the pages the daemon knows of, not those a writer the
 * kernel serves allocated since the last sync: the tmpfs grows to hold
 * them only within what the limit leaves (fs_shm_cap_max), and the
 * write otherwise fails with ENOSPC, which purges and tries again
 * (fs_write).  True when it grew.
 */
static bool shm_grow_for(struct fs *fs, uint64_t bytes)
{
	struct shm *s = &fs->shm;
	uint64_t want = shm_used(s) + bytes + PG;

	return want > atomic_load(&s->cap) && want <= fs_shm_cap_max(fs) &&
	       shm_set_cap(s, want) == 0;
}

/* ------------------------------------------------------------------ */
/* Backing files. */

static bool ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Give the backing file fd n's times, and remember them as seen. */
static void times_to_backing(struct inode *n, int fd)
{
	struct timespec ts[2] = { n->atime, n->mtime };

	if (futimens(fd, ts) == 0) {
		n->shm_atime = n->atime;
		n->shm_mtime = n->mtime;
	}
}


/*
 * After the daemon's own punch into fd (a purge): the mtime it moved is
 * taken as seen, so that a sync neither shows it (a purge is no write
 * of the program's) nor takes it for a write the kernel served.  A
 * write(2) that lands between the punch and this fstat is taken as seen
 * too: its bytes stay reported (allowed) until the next write.
 */
static void punch_seen(struct inode *n, int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0)
		n->shm_mtime = st.st_mtim;
}

static void name_of(const struct inode *n, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIx64, n->ino);
}

int shm_backing_open(struct fs *fs, struct inode *n, bool create)
{
	char name[24];
	struct stat st;
	int fd;

	name_of(n, name, sizeof(name));
	fd = openat(fs->shm.root, name, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0),
		    0600);
	if (fd < 0 && create && errno == EEXIST)
		return shm_backing_open(fs, n, false);
	if (fd < 0)
		return -errno;
	if (create)
		times_to_backing(n, fd); /* new: it starts with the node's times */
	/* A file that had a size before its data needed a home. */
	if (create && fstat(fd, &st) == 0 && (uint64_t)st.st_size < n->size &&
	    ftruncate(fd, (off_t)n->size) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

/* count pages left the map: their charge goes. */
static void held_sub(struct fs *fs, uint64_t count)
{
	atomic_fetch_sub(&fs->mem.shared, count * PG);
	mem_unreserve(&fs->mem, count * PG);
}

/* Uncharge the pages [first, last] of n's map and forget them (no page to free). */
static void count_page(void *page, void *ctx)
{
	(void)page;
	(*(uint64_t *)ctx)++;
}

static void map_drop(struct fs *fs, struct inode *n, uint64_t first, uint64_t last)
{
	uint64_t count = 0;

	if (first > last)
		return;
	units_pages_dropping(&fs->lru, &n->units, &n->pages, first, last);
	pagemap_remove_range(&n->pages, first, last, count_page, &count);
	held_sub(fs, count);
}

static int punch(int fd, uint64_t off, uint64_t len)
{
	/* The last page of a file of 2^63 - 1 bytes ends past what off_t
	 * holds: fallocate would refuse the range (EFBIG). */
	if (off >= (uint64_t)INT64_MAX)
		return 0;
	if (len > (uint64_t)INT64_MAX - off)
		len = (uint64_t)INT64_MAX - off;
	if (len == 0)
		return 0;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		return -errno;
	return 0;
}

/* Page idx of fd reads as zeros (or cannot be read). */
static bool page_is_zero(int fd, uint64_t idx)
{
	uint64_t buf[PG / sizeof(uint64_t)] = { 0 };
	/* The last page of a file of 2^63 - 1 bytes ends past off_t. */
	size_t len = idx * PG > (uint64_t)INT64_MAX - PG ? (size_t)(INT64_MAX - idx * PG) : PG;
	ssize_t got = pread(fd, buf, len, (off_t)(idx * PG));

	if (got > 0)
		got = (got + (ssize_t)sizeof(buf[0]) - 1) / (ssize_t)sizeof(buf[0]) *
		      (ssize_t)sizeof(buf[0]);

	for (ssize_t i = 0; i < got / (ssize_t)sizeof(buf[0]); i++)
		if (buf[i])
			return false;
	return true;
}

/* The first page in [from, last] the map holds, or last + 1. */
static uint64_t next_held(const struct inode *n, uint64_t from, uint64_t last)
{
	uint64_t held;
	uintptr_t e;

	if (!pagemap_next(&n->pages, from, true, &held, &e) || held > last)
		return last + 1;
	return held;
}

/* Page idx of the backing file into page: the bytes read (0 on an error). */
static size_t read_page(int fd, uint64_t idx, uint8_t *page)
{
	/* The last page of a file of 2^63 - 1 bytes ends past off_t. */
	size_t len = idx * PG > (uint64_t)INT64_MAX - PG ? (size_t)(INT64_MAX - idx * PG) : PG;
	ssize_t got = pread(fd, page, len, (off_t)(idx * PG));

	return got < 0 ? 0 : (size_t)got;
}

/*
 * A page of the backing file that the map does not know: written (or,
 * after a purge, faulted in) by someone the daemon did not see: a
 * write(2) the kernel served, a store through a mapping.  Neither says
 * which bytes it wrote, but what a purge discarded reads as zeros: the
 * page's purged bytes that are not zero were written since, and leave
 * the purged set (extset_remove_nonzero); a zero byte may be a lost one
 * and stays reported.  Later stores into it through a mapping allocate
 * nothing and leave the set as it is, which may then name bytes that
 * hold data (allowed; a loss without a report is not); a later write(2)
 * moves the mtime, and rescan_purged reads the page again.  A page wholly
 * purged that reads as zeros was only loaded through a mapping of the
 * punched hole: it is punched again while a unit holds it, so that
 * reading a purged page through a mapping costs no memory.
 */
static void page_found(struct fs *fs, struct inode *n, int fd, uint64_t idx, uintptr_t old)
{
	uint8_t page[PG];
	size_t got;
	bool was;

	if (extset_intersects(&n->purged, idx * PG, (idx + 1) * PG)) {
		got = read_page(fd, idx, page);
		if (units_find(&n->units, idx) &&
		    extset_bytes_in(&n->purged, idx * PG, (idx + 1) * PG) == PG &&
		    (got == 0 || (page[0] == 0 && memcmp(page, page + 1, got - 1) == 0))) {
			(void)punch(fd, idx * PG, PG);
			punch_seen(n, fd);
			return;
		}
		/* Without memory for a split, bytes stay reported: allowed. */
		(void)extset_remove_nonzero(&n->purged, idx * PG, page, got);
	}
	was = meta_unlimited(true);
	if (pagemap_set(&n->pages, idx, SHM_HELD | PM_TAGS(old), NULL) == 0) {
		mem_charge(&fs->mem, PG); /* the kernel let the writer allocate it */
		atomic_fetch_add(&fs->mem.shared, PG);
		units_page_added(&fs->lru, &n->units, idx, true);
	}
	meta_unlimited(was);
}

/*
 * The backing file was written since the last sync (its mtime moved: a
 * write(2) the kernel served, or the daemon's own): pages the map holds
 * that still have purged bytes may hold new data there.  Their bytes
 * that are not zero leave the purged set, as page_found's do; at most
 * SHM_RESCAN_MAX pages a sync (the rest stay reported until the next
 * write: allowed).  Stores through a mapping do not move the mtime and
 * are not looked for here.
 */
#define SHM_RESCAN_MAX 1024
static void rescan_purged(struct inode *n, int fd)
{
	unsigned budget = SHM_RESCAN_MAX;
	const struct extent *e;
	uint8_t page[PG];
	uint64_t pos = 0;

	while (budget && (e = extset_first_from(&n->purged, pos)) != NULL) {
		uint64_t first = (e->start > pos ? e->start : pos) / PG;
		uint64_t last = e->end == UINT64_MAX ? PM_MAX_INDEX : (e->end - 1) / PG;
		uint64_t i = next_held(n, first, last);

		if (i > last) {
			if (last >= PM_MAX_INDEX)
				break;
			pos = (last + 1) * PG; /* the extent holds no page */
			continue;
		}
		/* Changes the set: e is not used after this. */
		(void)extset_remove_nonzero(&n->purged, i * PG, page, read_page(fd, i, page));
		budget--;
		if (i >= PM_MAX_INDEX)
			break;
		pos = (i + 1) * PG;
	}
}

static void shm_set_times(struct fs *fs, struct inode *n)
{
	int fd = shm_backing_open(fs, n, false);

	if (fd >= 0) {
		times_to_backing(n, fd);
		close(fd);
	}
}

/*
 * Learn what the kernel did to n's backing file behind the daemon.  The
 * usual case (every stat, lookup and listing entry of a regular file
 * comes here) is one fstatat by name: the file is opened only when its
 * blocks differ from the map, or it was written over purged bytes.
 */
/* Pages of the backing file (of st, open as fd) that the map lacks: page_found. */
static void find_pages(struct fs *fs, struct inode *n, int fd, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size, off = 0;

	while (off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;

		if (d < 0)
			break;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || (uint64_t)h > size)
			h = (off_t)size;
		for (uint64_t i = (uint64_t)d / PG, last = ((uint64_t)h - 1) / PG; i <= last;) {
			uint64_t held = next_held(n, i, last);

			for (; i < held; i++)
				page_found(fs, n, fd, i, pagemap_get(&n->pages, i));
			i = held + 1;
		}
		off = (uint64_t)h;
	}
	/* tmpfs's SEEK_DATA never finds the last page of a file whose
	 * rounded-up size overflows loff_t (2^63 - 4095 bytes or more, on
	 * 6.18): still short of the backing file's blocks, look at it. */
	if (size > 0 && (uint64_t)st->st_blocks > n->pages.npages * (PG / 512) &&
	    size > (uint64_t)INT64_MAX - PG + 1) {
		uint64_t last = (size - 1) / PG;

		if (next_held(n, last, last) > last && !page_is_zero(fd, last))
			page_found(fs, n, fd, last, pagemap_get(&n->pages, last));
	}
}

static void shm_sync(struct fs *fs, struct inode *n)
{
	struct stat st;
	bool written, rescan, found;
	char name[24];
	int fd;

	name_of(n, name, sizeof(name));
	if (fstatat(fs->shm.root, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	n->size = (uint64_t)st.st_size; /* only the daemon shrinks it, and it keeps both alike */
	/* Times the kernel moved for readers and writers the daemon did not
	 * see (the backing file's, which shm_set_times keeps alike). */
	written = !ts_eq(&st.st_mtim, &n->shm_mtime);
	if (written) {
		n->mtime = n->ctime = st.st_mtim;
		n->shm_mtime = st.st_mtim;
	}
	if (!ts_eq(&st.st_atim, &n->shm_atime)) {
		n->atime = st.st_atim;
		n->shm_atime = st.st_atim;
	}
	/* Nothing allocated behind the map's back, nothing written over
	 * purged bytes: the usual case. */
	rescan = written && !extset_empty(&n->purged);
	found = (uint64_t)st.st_blocks != n->pages.npages * (PG / 512);
	if (!rescan && !found)
		return;
	fd = shm_backing_open(fs, n, false);
	if (fd < 0)
		return;
	if (rescan)
		rescan_purged(n, fd);

	if (found)
		find_pages(fs, n, fd, &st);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* The store's functions (store.h), each under the node's lock. */

static ssize_t shm_read_iov(struct fs *fs, struct inode *n, uint64_t off, size_t size,
			    struct iovec *iov, size_t *niov)
{
	ssize_t got = 0;
	char *read_buf;
	int fd;

	*niov = 0;
	if (off >= n->size)
		return 0;
	if (size > n->size - off)
		size = n->size - off;
	if (fs->purged_eio && extset_intersects(&n->purged, off, off + size))
		return -EIO;
	read_buf = tbuf_get(size); /* until the reply is out (tbuf.h) */
	if (!read_buf)
		return -ENOMEM;
	fd = shm_backing_open(fs, n, false);
	if (fd >= 0) {
		got = pread(fd, read_buf, size, (off_t)off);
		close(fd);
		if (got < 0)
			return -errno;
	}
	memset(read_buf + got, 0, size - (size_t)got); /* past the backing file's end */
	iov[0] = (struct iovec){ .iov_base = read_buf, .iov_len = size };
	*niov = 1;
	units_touch(&fs->lru, &n->units, off / PG, (off + size - 1) / PG + 1);
	return (ssize_t)size;
}

/* Pages of [first, last] the map lacks become held, paid from r (file.h). */
static void map_fill(struct fs *fs, struct inode *n, uint64_t first, uint64_t last, bool used,
		     struct file_resv *r)
{
	uint64_t i = first;

	meta_credit_begin(r->meta);
	while (i <= last) {
		uint64_t held = next_held(n, i, last);

		for (; i < held; i++) {
			uintptr_t old = pagemap_get(&n->pages, i);

			/* Page-map nodes come from r's credit (file_reserve_locked
			 * bounds them); without memory for one the page stays
			 * out of the map, and the next sync finds it. */
			if (pagemap_set(&n->pages, i, SHM_HELD | PM_TAGS(old), NULL) < 0)
				continue;
			if (r->pages)
				r->pages--; /* the reservation becomes the page's charge */
			else
				mem_charge(&fs->mem, PG);
			atomic_fetch_add(&fs->mem.shared, PG);
			units_page_added(&fs->lru, &n->units, i, used);
		}
		i = held + 1;
	}
	r->meta = meta_credit_end();
}

static ssize_t shm_write(struct fs *fs, struct inode *n, uint64_t off, const char *buf,
			 size_t size, bool mapped)
{
	struct unit *spare = NULL;
	struct file_resv r;
	uint64_t first, last;
	size_t done = 0;
	int fd, ret;

	if (size == 0)
		return 0;
	if (off > FILE_MAX_SIZE || size > FILE_MAX_SIZE - off)
		return -EFBIG;
	shm_sync(fs, n);
	first = off / PG;
	last = (off + size - 1) / PG;
	ret = file_reserve_locked(fs, n, first, last, &r);
	if (ret < 0)
		return ret;
	if (!mapped && extset_intersects(&n->purged, off, off + size)) {
		uint64_t ext = meta_cost(sizeof(struct extent));

		ret = mem_reserve(&fs->mem, ext);
		if (ret < 0)
			goto out;
		r.meta += ext;
	}
	if (fs->write_unmark && n->units.count) {
		spare = unit_alloc();
		if (!spare) {
			ret = -ENOMEM;
			goto out;
		}
	}
	fd = shm_backing_open(fs, n, true);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	while (done < size) {
		ssize_t w = pwrite(fd, buf + done, size - done, (off_t)(off + done));
		int err = w < 0 ? errno : EIO; /* before anything else sets errno */

		if (w < 0 && err == ENOSPC && shm_grow_for(fs, size - done)) {
			w = pwrite(fd, buf + done, size - done, (off_t)(off + done));
			err = w < 0 ? errno : EIO;
		}
		if (w <= 0) {
			ret = -err;
			break;
		}
		done += (size_t)w;
	}
	close(fd);
	if (done)
		map_fill(fs, n, first, (off + done - 1) / PG, !spare, &r);
	if (ret < 0 && !done)
		goto out;
	meta_credit_begin(r.meta);
	if (!mapped)
		(void)extset_remove(&n->purged, off, off + done);
	else
		(void)extset_remove_nonzero(&n->purged, off, (const uint8_t *)buf, done);
	r.meta = meta_credit_end();
	if (spare)
		units_unmark(&fs->lru, &n->units, &n->pages, first, (off + done - 1) / PG + 1, 0,
			     &spare);
	if (off + done > n->size)
		n->size = off + done;
	units_touch(&fs->lru, &n->units, first, (off + done - 1) / PG + 1);
	ret = 0;
out:
	unit_free(spare);
	file_resv_release(fs, &r);
	return ret < 0 ? ret : (ssize_t)done;
}

static int shm_truncate(struct fs *fs, struct inode *n, uint64_t size)
{
	uint64_t keep = (size + PG - 1) / PG;
	int fd;

	if (size > FILE_MAX_SIZE)
		return -EFBIG;
	shm_sync(fs, n);
	fd = shm_backing_open(fs, n, false);
	if (fd >= 0) {
		int ret = ftruncate(fd, (off_t)size) < 0 ? -errno : 0;

		close(fd);
		if (ret)
			return ret;
	} else if (fd != -ENOENT) {
		return fd;
	}
	if (size < n->size) {
		map_drop(fs, n, keep, PM_MAX_INDEX);
		extset_remove(&n->purged, size, UINT64_MAX);
		units_truncate(&fs->lru, &n->units, keep);
	}
	n->size = size;
	return 0;
}

static int shm_punch(struct fs *fs, struct inode *n, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, first = (off + PG - 1) / PG, last_excl = end / PG;
	int fd, ret = extset_remove(&n->purged, off, end);

	if (ret)
		return ret;
	fd = shm_backing_open(fs, n, false);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	ret = punch(fd, off, len);
	close(fd);
	if (ret)
		return ret;
	if (first < last_excl)
		map_drop(fs, n, first, last_excl - 1);
	return 0;
}

static int shm_falloc_begin(struct fs *fs, struct inode *n, int mode, uint64_t off,
			    uint64_t len, struct file_falloc *fa)
{
	int ret;

	memset(fa, 0, sizeof(*fa));
	if (len == 0)
		return -EINVAL;
	if (off > FILE_MAX_SIZE || len > FILE_MAX_SIZE - off)
		return -EFBIG;
	shm_sync(fs, n);
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		ret = shm_punch(fs, n, off, len);
		return ret < 0 ? ret : 1;
	}
	if (mode != 0 && mode != FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	fa->first = fa->pos = off / PG;
	fa->last = (off + len - 1) / PG;
	fa->end = off + len;
	fa->keep_size = mode & FALLOC_FL_KEEP_SIZE;
	if (fa->last > PM_MAX_INDEX)
		return -EFBIG;
	ret = file_reserve_locked(fs, n, fa->first, fa->last, &fa->resv);
	return ret < 0 ? ret : 0;
}

static int shm_falloc_step(struct fs *fs, struct inode *n, struct file_falloc *fa)
{
	uint64_t stop = fa->last - fa->pos < FILE_FALLOC_BATCH ? fa->last
							       : fa->pos + FILE_FALLOC_BATCH - 1;
	uint64_t from = fa->pos * PG, to = (stop + 1) * PG < fa->end ? (stop + 1) * PG : fa->end;
	uint64_t missing = stop - fa->pos + 1 - pagemap_count(&n->pages, fa->pos, stop);
	int fd, ret;

	if (missing > fa->resv.pages) {
		/* Pages went while the lock was dropped (file.c's case). */
		struct file_resv more;

		ret = file_reserve_locked(fs, n, fa->pos, stop, &more);
		if (ret < 0)
			return ret;
		fa->resv.pages += more.pages;
		fa->resv.meta += more.meta;
	}
	fd = shm_backing_open(fs, n, true);
	if (fd < 0)
		return fd;
	do
		ret = fallocate(fd, fa->keep_size ? FALLOC_FL_KEEP_SIZE : 0, (off_t)from,
				(off_t)(to - from)) < 0 ? -errno : 0;
	while (ret == -ENOSPC && shm_grow_for(fs, to - from));
	close(fd);
	if (ret)
		return ret;
	map_fill(fs, n, fa->pos, stop, false, &fa->resv);
	if (stop < fa->last) {
		fa->pos = stop + 1;
		return 0;
	}
	if (!fa->keep_size && fa->end > n->size)
		n->size = fa->end;
	return 1;
}

static uint64_t shm_pages_held(struct inode *n, uint64_t first, uint64_t last)
{
	return first > last ? 0 : pagemap_count(&n->pages, first, last);
}

/* The end (exclusive) of the run of pages held in the map from first, within last. */
static uint64_t held_run_end(const struct inode *n, uint64_t first, uint64_t last)
{
	uint64_t p = first;

	while (p <= last && next_held(n, p, p) == p)
		p++;
	return p;
}

/* Add [lo, hi) to n's purged set (bounded: at most one extent per call). */
static void purged_add(struct inode *n, uint64_t lo, uint64_t hi)
{
	bool was;

	if (lo >= hi)
		return;
	was = meta_unlimited(true); /* a purge's own record: meta.h */
	(void)extset_add(&n->purged, lo, hi);
	meta_unlimited(was);
}

/*
 * The purge of pages [first, last] of n (evict.c): the caller has
 * synced n and put its bytes in [first * PG, n->size) in the purged set.
 * A writer the kernel serves may be appending meanwhile, so the punch
 * takes exactly the pages the record speaks for: those up to the end of
 * the file as synced (the last one whole), and beyond it only pages the
 * map holds (fallocated with KEEP_SIZE).  Pages a writer appends past
 * them survive, unrecorded.  A writer that wrote into a punched page
 * before the punch reached it has moved the size past those bytes by
 * then (tmpfs updates the size before it unlocks the page it wrote,
 * and a punch waits for each locked page), so the size read after the
 * punch tells which punched bytes were data: they join the record.
 */
static void shm_free_range(struct fs *fs, struct inode *n, uint64_t first, uint64_t last)
{
	uint64_t count = 0, eof = n->size / PG + (n->size % PG != 0), synced = n->size;
	uint64_t stop = last < eof ? last + 1 : eof; /* pages [first, stop) are in the file */
	int fd = shm_backing_open(fs, n, false);
	struct stat st;

	if (fd >= 0) {
		uint64_t from = first > stop ? first : stop, p, q;

		if (first < stop)
			(void)punch(fd, first * PG, (stop - first) * PG);
		for (p = next_held(n, from, last); p <= last; p = next_held(n, q, last)) {
			q = held_run_end(n, p, last);
			(void)punch(fd, p * PG, (q - p) * PG);
			if (q > last)
				break;
		}
		if (fstat(fd, &st) < 0)
			st.st_size = 0;
		else
			n->shm_mtime = st.st_mtim; /* the punch's: punch_seen */
		if ((uint64_t)st.st_size > synced) {
			uint64_t now = (uint64_t)st.st_size;

			if (first < stop)
				purged_add(n, synced > first * PG ? synced : first * PG,
					   now < stop * PG ? now : stop * PG);
			for (p = next_held(n, from, last); p <= last && p * PG < now;
			     p = next_held(n, q, last)) {
				q = held_run_end(n, p, last);
				purged_add(n, p * PG, now < q * PG ? now : q * PG);
				if (q > last)
					break;
			}
		}
		close(fd);
	}
	pagemap_remove_range(&n->pages, first, last, count_page, &count);
	held_sub(fs, count);
}

static uint64_t shm_bytes_held(struct inode *n)
{
	return n->pages.npages * PG;
}

static void shm_node_free(struct fs *fs, struct inode *n)
{
	char name[24];
	uint64_t count = 0;

	name_of(n, name, sizeof(name));
	(void)unlinkat(fs->shm.root, name, 0);
	pagemap_remove_range(&n->pages, 0, PM_MAX_INDEX, count_page, &count);
	held_sub(fs, count);
}

const struct store_ops shm_store = {
	.read_iov = shm_read_iov,
	.write = shm_write,
	.pages_needed = file_pages_needed_locked,
	.truncate = shm_truncate,
	.falloc_begin = shm_falloc_begin,
	.falloc_step = shm_falloc_step,
	.resv_release = file_resv_release,
	.seek = file_seek_locked,
	.pages_held = shm_pages_held,
	.free_range = shm_free_range,
	.bytes_held = shm_bytes_held,
	.sync = shm_sync,
	.set_times = shm_set_times,
	.node_free = shm_node_free,
};
