/*
 * Unit tests for the notifier (notify.c) with a kernel that is slow on
 * purpose: the FUSE calls notify.c makes are replaced here by doubles that
 * log every call in one sequence, and an invalidation of a chosen node
 * blocks until the test lets it go.  What must hold (DESIGN section 4,
 * notify.h): a reply that reports a purge is sent only after the
 * invalidation it depends on, and never on a timeout; one file's slow
 * invalidation does not hold another file's report; a purge of the whole
 * mount waits for every file; a file's queued purges are coalesced
 * without dropping the pages between scattered ones (at most 16 ranges);
 * POLLPRI waits for the delivery; parked
 * replies are answered ENOTCONN at shutdown; an auto=unlink name is
 * deleted from the kernel's cache and its node refuses opens.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evict.h"
#include "fs.h"
#include "meta.h"
#include "notify.h"
#include "vol.h"
#include "vxattr.h"
#include "utest.h"

/* ---- the kernel's side, as notify.c sees it ---- */

enum ev_kind { EV_INVAL, EV_DELETE, EV_POLL, EV_REPLY };

struct event {
	enum ev_kind kind;
	uintptr_t id;      /* node id (EV_INVAL, EV_DELETE), handle (EV_POLL), request (EV_REPLY) */
	int err;           /* EV_REPLY */
	long value;        /* EV_REPLY: xattr length or ioctl result */
	off_t off, len;    /* EV_INVAL */
	char name[32];     /* EV_DELETE */
};

static pthread_mutex_t k_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t k_cond = PTHREAD_COND_INITIALIZER;
static struct event events[256];
static int nevents;
static fuse_ino_t blocked;      /* its invalidations wait for release() */
static int inside_blocked;      /* invalidations of it waiting now */
static bool deletes_blocked;    /* every name deletion waits for release() */
static int inside_delete;       /* deletions waiting now */

static void log_event(struct event e)
{
	pthread_mutex_lock(&k_lock);
	ck_assert_int_lt(nevents, 256);
	events[nevents++] = e;
	pthread_cond_broadcast(&k_cond);
	pthread_mutex_unlock(&k_lock);
}

int fuse_lowlevel_notify_inval_inode(struct fuse_session *se, fuse_ino_t ino, off_t off,
				     off_t len)
{
	(void)se;
	pthread_mutex_lock(&k_lock);
	inside_blocked += ino == blocked;
	pthread_cond_broadcast(&k_cond);
	while (ino == blocked)
		pthread_cond_wait(&k_cond, &k_lock);
	pthread_mutex_unlock(&k_lock);
	log_event((struct event){ .kind = EV_INVAL, .id = ino, .off = off, .len = len });
	return 0;
}

int fuse_lowlevel_notify_delete(struct fuse_session *se, fuse_ino_t parent, fuse_ino_t child,
				const char *name, size_t namelen)
{
	struct event e = { .kind = EV_DELETE, .id = child };

	(void)se; (void)parent;
	/* As the kernel's fuse_reverse_inval_entry waits for the i_rwsem
	 * that a request in flight holds. */
	pthread_mutex_lock(&k_lock);
	inside_delete++;
	pthread_cond_broadcast(&k_cond);
	while (deletes_blocked)
		pthread_cond_wait(&k_cond, &k_lock);
	inside_delete--;
	pthread_mutex_unlock(&k_lock);
	snprintf(e.name, sizeof(e.name), "%.*s", (int)namelen, name);
	log_event(e);
	return 0;
}

int fuse_lowlevel_notify_poll(struct fuse_pollhandle *ph)
{
	log_event((struct event){ .kind = EV_POLL, .id = (uintptr_t)ph });
	return 0;
}

void fuse_pollhandle_destroy(struct fuse_pollhandle *ph)
{
	(void)ph;
}

static int reply(fuse_req_t req, int err, long value)
{
	log_event((struct event){ .kind = EV_REPLY, .id = (uintptr_t)req, .err = err,
				  .value = value });
	return 0;
}

int fuse_reply_err(fuse_req_t req, int err)
{
	return reply(req, err, 0);
}

int fuse_reply_xattr(fuse_req_t req, size_t count)
{
	return reply(req, 0, (long)count);
}

int fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	(void)buf;
	return reply(req, 0, (long)size);
}

int fuse_reply_ioctl(fuse_req_t req, int result, const void *buf, size_t size)
{
	(void)buf; (void)size;
	return reply(req, 0, result);
}

/* The index of the first event of this kind and id, or -1. */
static int find(enum ev_kind kind, uintptr_t id)
{
	int at = -1;

	pthread_mutex_lock(&k_lock);
	for (int i = 0; i < nevents && at < 0; i++)
		if (events[i].kind == kind && events[i].id == id)
			at = i;
	pthread_mutex_unlock(&k_lock);
	return at;
}

/* Wait (no deadline: the test's timeout is the judge) for that event. */
static int wait_for(enum ev_kind kind, uintptr_t id)
{
	int at;

	pthread_mutex_lock(&k_lock);
	for (;;) {
		at = -1;
		for (int i = 0; i < nevents && at < 0; i++)
			if (events[i].kind == kind && events[i].id == id)
				at = i;
		if (at >= 0)
			break;
		pthread_cond_wait(&k_cond, &k_lock);
	}
	pthread_mutex_unlock(&k_lock);
	return at;
}

/* Block invalidations of n; return once one is waiting inside. */
static void block(struct inode *n)
{
	pthread_mutex_lock(&k_lock);
	blocked = (fuse_ino_t)(uintptr_t)n;
	inside_blocked = 0;
	pthread_mutex_unlock(&k_lock);
}

static void wait_blocked(void)
{
	pthread_mutex_lock(&k_lock);
	while (!inside_blocked)
		pthread_cond_wait(&k_cond, &k_lock);
	pthread_mutex_unlock(&k_lock);
}

static void release(void)
{
	pthread_mutex_lock(&k_lock);
	blocked = 0;
	deletes_blocked = false;
	pthread_cond_broadcast(&k_cond);
	pthread_mutex_unlock(&k_lock);
}

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- fixture ---- */

#define PG 4096u
#define REQ(k) ((fuse_req_t)(uintptr_t)(0x1000 + (k)))

static struct fs fs;
static struct notifier nt;
static const struct fs_cred cred = { 0, 0 };

static void setup(void)
{
	nevents = 0;
	blocked = 0;
	deletes_blocked = false;
	inside_delete = 0;
	utest_fs_init(&fs, 0755, true);
	ck_assert_int_eq(notifier_start(&nt, NULL, &fs), 0);
}

static void teardown(void)
{
	release();
	ck_assert(notifier_stop(&nt, -1));
	fs.hooks = (struct fs_hooks){ 0 };
	utest_fs_destroy(&fs);
}

static struct inode *file_with(const char *name, size_t size, bool mark)
{
	struct inode *n;
	struct stat st;
	char *buf = malloc(size);

	memset(buf, 0x5a, size);
	ck_assert_int_eq(fs_mknod(&fs, fs.root, name, S_IFREG | 0600, 0, NULL, &cred, &n, &st), 0);
	ck_assert_int_eq(fs_write(&fs, n, 0, buf, size), (ssize_t)size);
	free(buf);
	if (mark)
		ck_assert_int_eq(vxattr_setxattr(&fs, n, "user.volatile.mark", "all", 3, 0, &cred), 0);
	return n;
}

/* The request k as ops.c makes it: user.volatile.purge on n. */
static void purge_request(int k, struct inode *n, const char *value)
{
	ck_assert_int_eq(notify_report_begin(&nt), 0);
	notify_reply_err(&nt, REQ(k), -vxattr_setxattr(&fs, n, "user.volatile.purge", value,
						      strlen(value), 0, &cred));
}

/* The request k as ops.c makes it: getxattr user.volatile.purged of n. */
static void purged_request(int k, struct inode *n)
{
	char buf[256];
	long len;

	ck_assert_int_eq(notify_report_begin(&nt), 0);
	len = vxattr_getxattr(&fs, n, "user.volatile.purged", buf, sizeof(buf));
	notify_reply_xattr(&nt, REQ(k), len, buf, sizeof(buf));
}

/* ---- tests ---- */

START_TEST(test_report_waits_for_the_invalidation)
{
	struct inode *a = file_with("a", 4 * PG, true);
	int inval, r1, r2;

	block(a);
	purge_request(1, a, "all");
	wait_blocked();
	purged_request(2, a);
	nap(200); /* a timeout, were there one, would have fired by now */
	ck_assert_int_eq(find(EV_REPLY, (uintptr_t)REQ(1)), -1);
	ck_assert_int_eq(find(EV_REPLY, (uintptr_t)REQ(2)), -1);
	release();
	r1 = wait_for(EV_REPLY, (uintptr_t)REQ(1));
	r2 = wait_for(EV_REPLY, (uintptr_t)REQ(2));
	inval = find(EV_INVAL, (uintptr_t)a);
	ck_assert_int_ge(inval, 0);
	ck_assert_int_gt(r1, inval);
	ck_assert_int_gt(r2, inval);
	ck_assert_int_eq(events[r2].value, (long)strlen("0:16384\n"));
}
END_TEST

START_TEST(test_small_file_does_not_wait_behind_a_large_one)
{
	struct inode *big = file_with("big", 64 * PG, true);
	struct inode *small = file_with("small", PG, true);

	block(big);
	purge_request(1, big, "all");
	wait_blocked();
	purge_request(2, small, "all");
	purged_request(3, small);
	wait_for(EV_REPLY, (uintptr_t)REQ(2));
	wait_for(EV_REPLY, (uintptr_t)REQ(3));
	ck_assert_int_ge(find(EV_INVAL, (uintptr_t)small), 0);
	ck_assert_int_eq(find(EV_REPLY, (uintptr_t)REQ(1)), -1);
	release();
	ck_assert_int_gt(wait_for(EV_REPLY, (uintptr_t)REQ(1)), find(EV_INVAL, (uintptr_t)big));
}
END_TEST

START_TEST(test_root_purge_waits_for_every_file)
{
	struct inode *a = file_with("a", 8 * PG, true);

	file_with("b", PG, true);
	block(a);
	purge_request(1, fs.root, "all");
	wait_blocked();
	nap(100);
	ck_assert_int_eq(find(EV_REPLY, (uintptr_t)REQ(1)), -1);
	release();
	ck_assert_int_gt(wait_for(EV_REPLY, (uintptr_t)REQ(1)), find(EV_INVAL, (uintptr_t)a));
}
END_TEST

/*
 * nunits one-page units at pages first, first + step, ...; the first
 * purged while its invalidation is held, the others queued behind it.
 * Returns the invalidations of the file, the first one included, and
 * checks that sequence numbers only grew.
 */
static int purge_behind_a_held_one(struct inode *a, unsigned nunits, unsigned step)
{
	uint64_t last = 0;
	int invals = 0;

	for (unsigned i = 0; i < nunits; i++) {
		/* marked (and so purged) in a scrambled order of offsets */
		unsigned k = (i * 7 + 3) % nunits;
		char r[32];

		snprintf(r, sizeof(r), "%u:4096", k * step * PG);
		ck_assert_int_eq(vxattr_setxattr(&fs, a, "user.volatile.mark", r, strlen(r), 0, &cred), 0);
	}
	block(a);
	for (unsigned i = 0; i < nunits; i++) {
		ck_assert_uint_eq(evict_bytes(&fs, PG), PG);
		if (i == 0)
			wait_blocked();
		ck_assert_uint_gt(a->inval_seq, last);
		last = a->inval_seq;
	}
	purged_request(1, a);
	release();
	wait_for(EV_REPLY, (uintptr_t)REQ(1));
	pthread_mutex_lock(&k_lock);
	for (int i = 0; i < nevents; i++) {
		if (events[i].kind != EV_INVAL || events[i].id != (uintptr_t)a)
			continue;
		invals++;
		/* never more than what lies between the first and last unit */
		ck_assert_int_ge(events[i].off, 0);
		ck_assert_int_le(events[i].off + events[i].len, (off_t)(nunits * step * PG));
		ck_assert_int_gt(events[i].len, 0);
	}
	/* every purged page was dropped by some invalidation */
	for (unsigned k = 0; k < nunits; k++) {
		off_t page = (off_t)(k * step * PG);
		bool covered = false;

		for (int i = 0; i < nevents && !covered; i++)
			covered = events[i].kind == EV_INVAL && events[i].id == (uintptr_t)a &&
				  events[i].off <= page && page + PG <= events[i].off + events[i].len;
		ck_assert_msg(covered, "page at %lld was purged and never invalidated",
			      (long long)page);
	}
	pthread_mutex_unlock(&k_lock);
	return invals;
}

START_TEST(test_scattered_purges_keep_their_ranges)
{
	/* one in flight, then seven ranges with gaps, one call each */
	ck_assert_int_eq(purge_behind_a_held_one(file_with("a", 16 * PG, false), 8, 2), 8);
}
END_TEST

START_TEST(test_touching_purges_coalesce)
{
	/* page 3 in flight, then 2, 1, 0, 7, 6, 5, 4 as two ranges: [0, 3) and [4, 8) */
	ck_assert_int_eq(purge_behind_a_held_one(file_with("a", 8 * PG, false), 8, 1), 3);
}
END_TEST

START_TEST(test_many_ranges_merge_the_closest)
{
	/* one in flight, then 39 ranges kept as at most 16 */
	ck_assert_int_eq(purge_behind_a_held_one(file_with("a", 80 * PG, false), 40, 2), 17);
}
END_TEST

START_TEST(test_pollpri_after_delivery)
{
	struct inode *a = file_with("a", 4 * PG, true);
	struct ofile *of = fs_ofile_new(&fs);
	void *old = NULL, *ph = (void *)0x77;

	ck_assert_ptr_nonnull(of);
	ck_assert_int_eq(fs_open_attach(&fs, of, a, O_RDWR), 0);
	block(a);
	purge_request(1, a, "all");
	wait_blocked();
	ck_assert(!fs_poll(&fs, of, ph, &old)); /* purged, not yet delivered */
	release();
	ck_assert_int_gt(wait_for(EV_POLL, (uintptr_t)ph), find(EV_INVAL, (uintptr_t)a));
	ck_assert(fs_poll(&fs, of, NULL, &old));
	fs_release_file(&fs, of);
}
END_TEST

START_TEST(test_shutdown_answers_parked_replies)
{
	struct inode *a = file_with("a", 4 * PG, true);
	int r;

	block(a);
	purge_request(1, a, "all");
	wait_blocked();
	(void)notifier_stop(&nt, 0); /* tells it; a thread is still in the kernel */
	r = wait_for(EV_REPLY, (uintptr_t)REQ(1));
	ck_assert_int_eq(events[r].err, ENOTCONN);
	ck_assert_int_eq(find(EV_INVAL, (uintptr_t)a), -1);
}
END_TEST

/* A file in a new auto=unlink directory "cache", holding a byte, marked all. */
static struct inode *cache_file(struct inode **dir, const char *name)
{
	struct inode *n;
	struct stat st;

	if (!*dir) {
		ck_assert_int_eq(fs_mknod(&fs, fs.root, "cache", S_IFDIR | 0755, 0, NULL, &cred,
					  dir, &st), 0);
		ck_assert_int_eq(vxattr_setxattr(&fs, *dir, "user.volatile.auto", "unlink", 6, 0,
						 &cred), 0);
	}
	ck_assert_int_eq(fs_mknod(&fs, *dir, name, S_IFREG | 0600, 0, NULL, &cred, &n, &st), 0);
	ck_assert_int_eq(fs_write(&fs, n, 0, "x", 1), 1);
	return n;
}

static int count_entry(void *ctx, const char *name, struct inode *n, const struct stat *st,
		       uint64_t next)
{
	(void)n; (void)st; (void)next;
	*(int *)ctx += strcmp(name, "entry") == 0;
	return 0;
}

/* Refused by the daemon itself: lookup, readdir, link and open (DESIGN 8). */
static void assert_name_refused(struct inode *dir, struct inode *n)
{
	struct inode *got;
	struct ofile *of;
	struct stat st;
	int seen = 0;

	ck_assert_int_eq(fs_lookup(&fs, dir, "entry", &got, &st), -ENOENT);
	ck_assert_int_eq(fs_readdir(&fs, dir, 0, false, count_entry, &seen), 0);
	ck_assert_int_eq(seen, 0);
	ck_assert_int_eq(fs_link(&fs, n, dir, "again", &st), -ENOENT);
	of = fs_ofile_new(&fs);
	ck_assert_int_eq(fs_open_attach(&fs, of, n, O_RDONLY), -ESTALE);
	fs_ofile_discard(&fs, of);
}

/*
 * The kernel's deletion of a dentry waits for the directory's and the
 * file's i_rwsem, which the purging request may hold (SETXATTR on the
 * root or on the file): no reply may wait for it.  Here every deletion
 * blocks, as if that lock were held; the purge's reply still comes,
 * another file's invalidation is still delivered, and the name is
 * refused from the reply on.
 */
START_TEST(test_root_purge_reply_does_not_wait_for_name_deletion)
{
	struct inode *dir = NULL, *n = cache_file(&dir, "entry");
	struct inode *other = file_with("other", 4 * PG, false);

	ck_assert_int_eq(vxattr_setxattr(&fs, other, "user.volatile.mark", "all", 3, 0, &cred), 0);
	pthread_mutex_lock(&k_lock);
	deletes_blocked = true;
	pthread_mutex_unlock(&k_lock);
	purge_request(1, fs.root, "all");
	ck_assert_int_ge(wait_for(EV_REPLY, (uintptr_t)REQ(1)), 0);
	ck_assert_int_eq(events[find(EV_REPLY, (uintptr_t)REQ(1))].err, 0);
	ck_assert_int_ge(find(EV_INVAL, (uintptr_t)other), 0);
	ck_assert_int_eq(find(EV_DELETE, (uintptr_t)n), -1); /* still blocked */
	assert_name_refused(dir, n);
	/* A per-file report on the other file does not wait either. */
	purged_request(2, other);
	ck_assert_int_ge(wait_for(EV_REPLY, (uintptr_t)REQ(2)), 0);
	release();
	ck_assert_str_eq(events[wait_for(EV_DELETE, (uintptr_t)n)].name, "entry");
	fs_forget(&fs, n, 1);
}
END_TEST

/* A per-file user.volatile.purge removes the name too (DESIGN section 8), open or not. */
START_TEST(test_file_purge_unlinks_auto_unlink_file)
{
	struct inode *dir = NULL, *n = cache_file(&dir, "entry");
	struct ofile *of = fs_ofile_new(&fs);
	char buf[4];

	ck_assert_int_eq(fs_open_attach(&fs, of, n, O_RDONLY), 0);
	pthread_mutex_lock(&k_lock);
	deletes_blocked = true;
	pthread_mutex_unlock(&k_lock);
	purge_request(1, n, "all");
	ck_assert_int_ge(wait_for(EV_REPLY, (uintptr_t)REQ(1)), 0);
	ck_assert_int_eq(events[find(EV_REPLY, (uintptr_t)REQ(1))].err, 0);
	assert_name_refused(dir, n);
	ck_assert_uint_eq(atomic_load(&fs.files_unlinked_total), 1);
	/* The open description reads it as an unlinked, purged file. */
	ck_assert_int_eq(fs_read(&fs, n, 0, 1, buf), 1);
	ck_assert_int_eq(buf[0], 0);
	release();
	ck_assert_str_eq(events[wait_for(EV_DELETE, (uintptr_t)n)].name, "entry");
	fs_release_file(&fs, of);
	fs_forget(&fs, n, 1);
}
END_TEST

/* A purge without an auto=unlink directory leaves names alone. */
START_TEST(test_file_purge_keeps_plain_names)
{
	struct inode *n = file_with("plain", PG, true), *got;
	struct stat st;

	purge_request(1, n, "all");
	ck_assert_int_ge(wait_for(EV_REPLY, (uintptr_t)REQ(1)), 0);
	ck_assert_int_eq(fs_lookup(&fs, fs.root, "plain", &got, &st), 0);
	ck_assert_ptr_eq(got, n);
	fs_forget(&fs, n, 2);
}
END_TEST

static Suite *notify_suite(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = utest_tcase(s, "notify", setup, teardown, 20);

	tcase_add_test(tc, test_report_waits_for_the_invalidation);
	tcase_add_test(tc, test_small_file_does_not_wait_behind_a_large_one);
	tcase_add_test(tc, test_root_purge_waits_for_every_file);
	tcase_add_test(tc, test_scattered_purges_keep_their_ranges);
	tcase_add_test(tc, test_touching_purges_coalesce);
	tcase_add_test(tc, test_many_ranges_merge_the_closest);
	tcase_add_test(tc, test_pollpri_after_delivery);
	tcase_add_test(tc, test_shutdown_answers_parked_replies);
	tcase_add_test(tc, test_root_purge_reply_does_not_wait_for_name_deletion);
	tcase_add_test(tc, test_file_purge_unlinks_auto_unlink_file);
	tcase_add_test(tc, test_file_purge_keeps_plain_names);
	return s;
}

int main(void)
{
	return utest_run(notify_suite());
}
