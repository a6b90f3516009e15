/*
 * Unit tests for volatile units, purged sets and eviction (units.c,
 * vol.c, evict.c, vxattr.c) through the fs layer, without a mount.
 */
#include <check.h>
#include <errno.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evict.h"
#include "fs.h"
#include "meta.h"
#include "vol.h"
#include "volatilefs.h"
#include "vxattr.h"
#include "utest.h"

#define PG 4096u

static struct fs fs;
static const struct fs_cred cred = { 0, 0 };

static void setup(void)
{
	utest_fs_init(&fs, 0755, true);
}

static void teardown(void)
{
	utest_fs_destroy(&fs);
}

static struct inode *file_with(const char *name, size_t size)
{
	struct inode *n;
	struct stat st;
	char *buf = malloc(size ? size : 1);

	memset(buf, 0x5a, size);
	ck_assert_int_eq(fs_mknod(&fs, fs.root, name, S_IFREG | 0600, 0, NULL, &cred, &n, &st), 0);
	if (size)
		ck_assert_int_eq(fs_write(&fs, n, 0, buf, size), (ssize_t)size);
	free(buf);
	return n;
}

/* setxattr/getxattr of user.volatile.* as the shell would. */
static int vset(struct inode *n, const char *name, const char *value)
{
	char full[64] = "user.volatile.";

	strcat(full, name);
	return vxattr_setxattr(&fs, n, full, value, strlen(value), 0, &cred);
}

static char *vget(struct inode *n, const char *name)
{
	static char buf[65536];
	char full[64] = "user.volatile.";
	long len;

	strcat(full, name);
	len = vxattr_getxattr(&fs, n, full, buf, sizeof(buf) - 1);
	ck_assert_int_ge(len, 0);
	buf[len] = '\0';
	return buf;
}

START_TEST(mark_shows_units_sorted_with_flags)
{
	struct inode *f = file_with("f", 3 << 20);

	ck_assert_int_eq(vset(f, "mark", "1M:1M 0:64K priority=1"), 0);
	ck_assert_int_eq(vset(f, "mark", "128K:4K age"), 0);
	ck_assert_str_eq(vget(f, "ranges"),
			 "0:65536 volatile priority=1\n"
			 "131072:4096 volatile priority=3 age\n"
			 "1048576:1048576 volatile priority=1\n");
	ck_assert_uint_eq(fs.lru.units, 3);
	ck_assert_uint_eq(atomic_load(&fs.lru.resident), 16 + 1 + 256);
}
END_TEST

START_TEST(overlapping_mark_absorbs_touching_stays)
{
	struct inode *f = file_with("f", 1 << 20);

	ck_assert_int_eq(vset(f, "mark", "0:8K 16K:8K 32K:8K"), 0);
	/* overlaps the first two, touches the third */
	ck_assert_int_eq(vset(f, "mark", "4K:20K priority=6"), 0);
	ck_assert_str_eq(vget(f, "ranges"),
			 "0:24576 volatile priority=6\n"
			 "32768:8192 volatile priority=3\n");
	ck_assert_uint_eq(fs.lru.units, 2);
}
END_TEST

START_TEST(unmark_splits_and_reports_bytes_and_purged)
{
	struct inode *f = file_with("f", 1 << 20);
	struct vrange r = { 16 * PG, 4 * PG };
	uint64_t bytes;
	int purged;

	ck_assert_int_eq(vset(f, "mark", "0:64K"), 0);
	ck_assert_int_eq(vol_unmark(&fs, f, &r, 1, &bytes, &purged), 0);
	ck_assert_uint_eq(bytes, 0); /* nothing volatile there */
	r.offset = 4 * PG;
	ck_assert_int_eq(vol_unmark(&fs, f, &r, 1, &bytes, &purged), 0);
	ck_assert_uint_eq(bytes, 4 * PG);
	ck_assert_int_eq(purged, 0);
	ck_assert_str_eq(vget(f, "ranges"),
			 "0:16384 volatile priority=3\n"
			 "32768:32768 volatile priority=3\n");
	ck_assert_uint_eq(atomic_load(&fs.lru.resident), 12);
	/* half in a unit, half not */
	r.offset = 2 * PG;
	r.length = 4 * PG;
	ck_assert_int_eq(vol_unmark(&fs, f, &r, 1, &bytes, &purged), 0);
	ck_assert_uint_eq(bytes, 2 * PG);
}
END_TEST

START_TEST(unbounded_unit_counts_bytes_up_to_the_file_size)
{
	struct inode *f = file_with("f", 10 * PG + 1);
	struct vrange r = { PG, 0 };
	uint64_t bytes;
	int purged;

	ck_assert_int_eq(vset(f, "mark", "0:0"), 0);
	ck_assert_str_eq(vget(f, "ranges"), "0:0 volatile priority=3\n");
	ck_assert_int_eq(vol_unmark(&fs, f, &r, 1, &bytes, &purged), 0);
	ck_assert_uint_eq(bytes, 10 * PG); /* pages 1..10: the size rounded up */
	ck_assert_str_eq(vget(f, "ranges"), "0:4096 volatile priority=3\n");
}
END_TEST

START_TEST(purge_frees_memory_records_bytes_and_reads_zero)
{
	struct inode *f = file_with("f", 5 * PG + 100);
	char buf[PG];
	uint64_t before = arena_pages(&fs.arena);
	struct vrange r = { 0, 0 };
	uint64_t bytes;
	int purged;

	ck_assert_int_eq(vset(f, "mark", "4K:0"), 0);
	ck_assert_int_eq(vset(f, "purge", "all"), 0);
	ck_assert_uint_eq(arena_pages(&fs.arena), before - 5);
	ck_assert_str_eq(vget(f, "purged"), "4096:16484\n");
	ck_assert_str_eq(vget(f, "ranges"), "4096:0 purged priority=3\n");
	ck_assert_int_eq(fs_read(&fs, f, PG, PG, buf), PG);
	for (unsigned i = 0; i < PG; i++)
		ck_assert_int_eq(buf[i], 0);
	ck_assert_int_eq(fs_read(&fs, f, 0, PG, buf), PG);
	ck_assert_int_eq(buf[0], 0x5a); /* page 0 was not volatile */
	ck_assert_uint_eq(atomic_load(&fs.purges_total), 1);
	ck_assert_uint_eq(atomic_load(&fs.purged_bytes_total), 5 * PG + 100 - PG);
	ck_assert_int_eq(vol_unmark(&fs, f, &r, 1, &bytes, &purged), 0);
	ck_assert_int_eq(purged, 1);
	ck_assert(vol_has_purged(&fs, f));
}
END_TEST

START_TEST(write_removes_exactly_the_written_bytes_from_the_purged_set)
{
	struct inode *f = file_with("f", 4 * PG);

	ck_assert_int_eq(vset(f, "mark", "all"), 0);
	ck_assert_int_eq(vset(f, "purge", "all"), 0);
	ck_assert_int_eq(fs_write(&fs, f, 100, "abc", 3), 3);
	ck_assert_str_eq(vget(f, "purged"), "0:100\n103:16281\n");
	/* the write refilled a page of the unit: it is purgeable again */
	ck_assert_uint_eq(atomic_load(&fs.lru.resident), 1);
}
END_TEST

START_TEST(truncate_cuts_purged_set_and_bounded_units)
{
	struct inode *f = file_with("f", 8 * PG);
	struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 3 * PG + 10 };
	struct stat st;

	ck_assert_int_eq(vset(f, "mark", "0:8K 12K:12K 28K:4K 32K:0"), 0);
	ck_assert_int_eq(vset(f, "purge", "all"), 0);
	ck_assert_int_eq(fs_setattr(&fs, f, &sa, &st), 0);
	ck_assert_str_eq(vget(f, "purged"), "0:8192\n12288:10\n");
	ck_assert_str_eq(vget(f, "ranges"),
			 "0:8192 purged priority=3\n"
			 "12288:4096 purged priority=3\n"
			 "32768:0 volatile priority=3\n");
}
END_TEST

START_TEST(punch_hole_removes_punched_bytes_from_the_purged_set)
{
	struct inode *f = file_with("f", 4 * PG);

	ck_assert_int_eq(vset(f, "mark", "all"), 0);
	ck_assert_int_eq(vset(f, "purge", "all"), 0);
	ck_assert_int_eq(fs_fallocate(&fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10,
				      PG), 0);
	ck_assert_str_eq(vget(f, "purged"), "0:10\n4106:12278\n");
}
END_TEST

START_TEST(removexattr_forgets_the_purged_set)
{
	struct inode *f = file_with("f", PG);

	ck_assert_int_eq(vset(f, "mark", "all"), 0);
	ck_assert_int_eq(vset(f, "purge", "all"), 0);
	ck_assert(vol_has_purged(&fs, f));
	ck_assert_int_eq(vxattr_removexattr(&fs, f, "user.volatile.purged"), 0);
	ck_assert(!vol_has_purged(&fs, f));
	ck_assert_str_eq(vget(f, "purged"), "");
}
END_TEST

START_TEST(purge_order_is_priority_then_age_then_lru)
{
	struct inode *a = file_with("a", PG), *b = file_with("b", PG), *c = file_with("c", PG);
	struct inode *d = file_with("d", PG);
	char buf[8];

	ck_assert_int_eq(vset(a, "mark", "all priority=5"), 0);
	ck_assert_int_eq(vset(b, "mark", "all"), 0);
	ck_assert_int_eq(vset(c, "mark", "all"), 0);
	ck_assert_int_eq(vset(d, "mark", "all age"), 0);
	/* reading b makes it more recent than c */
	ck_assert_int_eq(fs_read(&fs, b, 0, 1, buf), 1);
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert(vol_has_purged(&fs, d));   /* aged first within priority 3 */
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert(vol_has_purged(&fs, c));   /* then least recently used */
	ck_assert(!vol_has_purged(&fs, b));
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert(vol_has_purged(&fs, b));
	ck_assert(!vol_has_purged(&fs, a));  /* priority 5 last */
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert(vol_has_purged(&fs, a));
	ck_assert_uint_eq(evict_bytes(&fs, 1), 0); /* nothing left holds memory */
}
END_TEST

/*
 * Recency counts uses only (DESIGN section 4): a purged unit that is read
 * was used; one that gets memory back through fallocate was not, and
 * keeps the place its last use gave it.
 */
START_TEST(recency_counts_uses_not_fallocate)
{
	struct inode *a = file_with("a", PG), *b = file_with("b", PG), *c = file_with("c", PG);
	char buf[8];

	ck_assert_int_eq(vset(a, "mark", "0:4096"), 0);
	ck_assert_int_eq(vset(b, "mark", "0:4096"), 0);
	ck_assert_int_eq(vset(c, "mark", "0:4096"), 0);
	/* a goes (least recently used), and comes back by fallocate */
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert(vol_has_purged(&fs, a));
	ck_assert_int_eq(fs_fallocate(&fs, a, 0, 0, PG), 0);
	/* still older than b and c: it goes first again */
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(a, "ranges"), "0:4096 purged priority=3\n");
	ck_assert_str_eq(vget(b, "ranges"), "0:4096 volatile priority=3\n");
	ck_assert_str_eq(vget(c, "ranges"), "0:4096 volatile priority=3\n");
	/* read while purged, a is now the most recently used */
	ck_assert_int_eq(fs_read(&fs, a, 0, 1, buf), 1);
	ck_assert_int_eq(fs_fallocate(&fs, a, 0, 0, PG), 0);
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(b, "ranges"), "0:4096 purged priority=3\n");
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(c, "ranges"), "0:4096 purged priority=3\n");
	/* a (its purged set still says so: fallocate writes nothing) goes last */
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_uint_eq(evict_bytes(&fs, 1), 0);
}
END_TEST

/*
 * A whole-file touch (the passthrough path's recency: an open file counts
 * as used) moves every unit of the file after the other files' units and
 * keeps their order among themselves.
 */
START_TEST(touch_all_keeps_the_file_order)
{
	struct inode *a = file_with("a", 3 * PG), *b = file_with("b", PG);
	char buf[8];

	ck_assert_int_eq(vset(a, "mark", "0:4096 8192:4096"), 0);
	ck_assert_int_eq(vset(b, "mark", "0:4096"), 0);
	ck_assert_int_eq(vset(a, "mark", "4096:4096"), 0);
	/* a's units from coldest: 8192, then 4096 marked after b, then 0 read now ... */
	ck_assert_int_eq(fs_read(&fs, a, 0, 1, buf), 1);
	/* ... and now the whole file is used: b is the coldest. */
	pthread_rwlock_wrlock(&a->lock);
	units_touch_all(&fs.lru, &a->units);
	pthread_rwlock_unlock(&a->lock);
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(b, "ranges"), "0:4096 purged priority=3\n");
	/* Within a, the order its uses gave (not page order): 8192, 4096, 0. */
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(a, "ranges"), "0:4096 volatile priority=3\n"
			 "4096:4096 volatile priority=3\n8192:4096 purged priority=3\n");
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(a, "ranges"), "0:4096 volatile priority=3\n"
			 "4096:4096 purged priority=3\n8192:4096 purged priority=3\n");
}
END_TEST

/* The pieces of a split unit keep their unit's place, in page order. */
START_TEST(split_pieces_keep_their_place)
{
	struct inode *a = file_with("a", 3 * PG), *b = file_with("b", PG);

	ck_assert_int_eq(vset(a, "mark", "0:12288"), 0);
	ck_assert_int_eq(vset(b, "mark", "0:4096"), 0);
	ck_assert_int_eq(vset(a, "unmark", "4096:4096"), 0);
	ck_assert_str_eq(vget(a, "ranges"), "0:4096 volatile priority=3\n8192:4096 volatile priority=3\n");
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(a, "ranges"), "0:4096 purged priority=3\n8192:4096 volatile priority=3\n");
	ck_assert_uint_eq(evict_bytes(&fs, 1), PG);
	ck_assert_str_eq(vget(a, "ranges"), "0:4096 purged priority=3\n8192:4096 purged priority=3\n");
	ck_assert_str_eq(vget(b, "ranges"), "0:4096 volatile priority=3\n");
}
END_TEST

START_TEST(purge_size_stops_once_enough_was_freed)
{
	struct inode *a = file_with("a", 4 * PG), *b = file_with("b", 4 * PG);

	ck_assert_int_eq(vset(a, "mark", "all priority=0"), 0);
	ck_assert_int_eq(vset(b, "mark", "all priority=1"), 0);
	ck_assert_int_eq(vset(fs.root, "purge", "8K"), 0);
	ck_assert(vol_has_purged(&fs, a));
	ck_assert(!vol_has_purged(&fs, b));
}
END_TEST

START_TEST(write_over_limit_purges_volatile_data_first)
{
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	struct inode *v = file_with("v", 8 << 20), *n;
	struct stat st;
	uint64_t off = 0;

	memset(buf, 1, chunk);
	ck_assert_int_eq(vset(v, "mark", "all"), 0);
	/* 4 MiB over what the daemon counts now, its base measured afresh
	 * (under TSan the runtime's own memory grows between two measures;
	 * the arena's UFFDIO_COPY fills touch no shadow memory). */
	mem_reconcile(&fs.mem);
	mem_set_limit(&fs.mem, mem_rss(&fs.mem) + (4u << 20));
	ck_assert_int_eq(fs_mknod(&fs, fs.root, "n", S_IFREG | 0600, 0, NULL, &cred, &n, &st), 0);
	/* 6 MiB of non-volatile data fits only once the volatile 8 MiB go */
	for (int i = 0; i < 6; i++, off += chunk)
		ck_assert_int_eq(fs_write(&fs, n, off, buf, chunk), (ssize_t)chunk);
	ck_assert(vol_has_purged(&fs, v));
	ck_assert_uint_eq(atomic_load(&fs.lru.resident), 0);
	/* nothing volatile left: now ENOSPC */
	for (;; off += chunk) {
		ssize_t r = fs_write(&fs, n, off, buf, chunk);

		if (r < 0) {
			ck_assert_int_eq(r, -ENOSPC);
			break;
		}
		ck_assert_uint_lt(off, 64u << 20);
	}
	ck_assert_uint_ge(atomic_load(&fs.mem.enospc_total), 1);
	free(buf);
}
END_TEST

START_TEST(write_policy_unmark_makes_written_pages_non_volatile)
{
	struct inode *f = file_with("f", 8 * PG);

	fs.write_unmark = true;
	ck_assert_int_eq(vset(f, "mark", "all"), 0);
	ck_assert_int_eq(fs_write(&fs, f, 2 * PG + 5, "xy", 2), 2);
	ck_assert_str_eq(vget(f, "ranges"),
			 "0:8192 volatile priority=3\n"
			 "12288:0 volatile priority=3\n");
}
END_TEST

START_TEST(purged_read_eio_refuses_purged_bytes)
{
	struct inode *f = file_with("f", 2 * PG);
	char buf[PG];

	fs.purged_eio = true;
	ck_assert_int_eq(vset(f, "mark", "4K:4K"), 0);
	ck_assert_int_eq(vset(f, "purge", "all"), 0);
	ck_assert_int_eq(fs_read(&fs, f, 0, PG, buf), PG);
	ck_assert_int_eq(fs_read(&fs, f, PG - 1, 2, buf), -EIO);
	ck_assert_int_eq(fs_write(&fs, f, PG, buf, PG), PG);
	ck_assert_int_eq(fs_read(&fs, f, PG, PG, buf), PG);
}
END_TEST

START_TEST(malformed_values_change_nothing)
{
	struct inode *f = file_with("f", PG), *d;
	struct stat st;
	struct fs_cred other = { 1000, 1000 };

	ck_assert_int_eq(vset(f, "mark", "0:4K"), 0);
	ck_assert_int_eq(vset(f, "mark", "8K:4K 1:4K"), -EINVAL);
	ck_assert_int_eq(vset(f, "mark", "8K:4K priority=8"), -EINVAL);
	ck_assert_int_eq(vset(f, "unmark", "0:4K age"), -EINVAL);
	ck_assert_int_eq(vset(f, "ranges", "0:4K"), -EINVAL);
	ck_assert_int_eq(vset(f, "nonsense", "0:4K"), -EINVAL);
	ck_assert_int_eq(vset(f, "purge", "4K"), -EINVAL); /* SIZE only on the root */
	ck_assert_str_eq(vget(f, "ranges"), "0:4096 volatile priority=3\n");
	ck_assert_int_eq(fs_mknod(&fs, fs.root, "d", S_IFDIR | 0700, 0, NULL, &cred, &d, &st), 0);
	ck_assert_int_eq(vset(d, "mark", "all"), -EISDIR);
	ck_assert_int_eq(vset(d, "unmark", "all"), -EISDIR);
	ck_assert_int_eq(vxattr_getxattr(&fs, f, "user.volatile.mark", NULL, 0), -ENODATA);
	ck_assert_int_eq(vxattr_getxattr(&fs, f, "user.volatile.stats", NULL, 0), -ENODATA);
	ck_assert_int_eq(vxattr_setxattr(&fs, fs.root, "user.volatile.memory_limit", "1M", 2, 0,
					 &other), -EPERM);
	ck_assert_int_eq(vxattr_setxattr(&fs, fs.root, "user.volatile.purge", "all", 3, 0, &other),
			 -EPERM);
	ck_assert_int_eq(vxattr_listxattr(&fs, f, NULL, 0), 0);
}
END_TEST

START_TEST(stats_and_memory_limit_on_the_root)
{
	struct inode *f = file_with("f", 2 * PG);
	char *s;

	ck_assert_int_eq(vset(f, "mark", "all"), 0);
	s = vget(fs.root, "stats");
	ck_assert_ptr_nonnull(strstr(s, "memory_limit=1073741824\n"));
	ck_assert_ptr_nonnull(strstr(s, "data_bytes=8192\n"));
	ck_assert_ptr_nonnull(strstr(s, "volatile_bytes=8192\n"));
	ck_assert_ptr_nonnull(strstr(s, "volatile_units=1\n"));
	ck_assert_int_eq(vset(fs.root, "memory_limit", "100M"), 0);
	ck_assert_str_eq(vget(fs.root, "memory_limit"), "104857600");
	ck_assert_uint_eq(atomic_load(&fs.mem.low), 104857600ull / 10 * 9);
	ck_assert_int_eq(vset(fs.root, "memory_limit", "0"), -EINVAL);
}
END_TEST

START_TEST(unlinking_a_file_drops_its_units)
{
	struct inode *f = file_with("f", 2 * PG);

	ck_assert_int_eq(vset(f, "mark", "0:4K 4K:4K"), 0);
	ck_assert_uint_eq(fs.lru.units, 2);
	ck_assert_int_eq(fs_unlink(&fs, fs.root, "f"), 0);
	fs_forget(&fs, f, 1);
	ck_assert_uint_eq(fs.lru.units, 0);
	ck_assert_uint_eq(atomic_load(&fs.lru.resident), 0);
	ck_assert_uint_eq(evict_bytes(&fs, 1), 0);
}
END_TEST

START_TEST(ioctl_range_checks)
{
	struct vrange r;

	ck_assert_int_eq(vol_check_range(1, 4096, &r), -EINVAL);
	ck_assert_int_eq(vol_check_range(4096, 1, &r), 0);
	ck_assert_uint_eq(r.length, 4096);
	ck_assert_int_eq(vol_check_range(0, UINT64_MAX, &r), -EINVAL);
	ck_assert_int_eq(vol_check_range((uint64_t)INT64_MAX + 1, 0, &r), -EINVAL);
	ck_assert_int_eq(vol_check_range(4096, 0, &r), 0);
	ck_assert_uint_eq(r.length, 0);
}
END_TEST

/* ---- the cap on units past the end of a file ---- */

/* Mark one-page units at pages first, first + 2, ... (count of them) in one call. */
static int mark_pages(struct inode *n, uint64_t first, size_t count)
{
	struct vrange *r = calloc(count ? count : 1, sizeof(*r));
	int ret;

	for (size_t i = 0; i < count; i++) {
		r[i].offset = (first + 2 * i) * PG;
		r[i].length = PG;
	}
	ret = vol_mark(&fs, n, r, count, 3, false);
	free(r);
	return ret;
}

static void set_size(struct inode *n, uint64_t size)
{
	struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = size };
	struct stat st;

	ck_assert_int_eq(fs_setattr(&fs, n, &sa, &st), 0);
}

START_TEST(units_past_eof_are_capped)
{
	struct inode *f = file_with("f", 0);
	const uint64_t cap = VOL_UNITS_PAST_EOF, k = 100;
	uint64_t next = 2 * cap; /* the first page after the units below */
	char val[64];

	/* The cap, in calls of 64 ranges: every unit apart, none absorbed. */
	for (uint64_t i = 0; i < cap; i += 64)
		ck_assert_int_eq(mark_pages(f, 2 * i, cap - i < 64 ? cap - i : 64), 0);
	ck_assert_uint_eq(f->units.count, cap);
	ck_assert_uint_eq(fs.lru.units, cap);
	/* One more past the end: refused, nothing changes. */
	ck_assert_int_eq(mark_pages(f, next, 1), -ENOSPC);
	ck_assert_uint_eq(f->units.count, cap);
	ck_assert_uint_eq(fs.lru.units, cap);
	/* However it is asked: far away, unbounded, through the xattr. */
	ck_assert_int_eq(mark_pages(f, 1ull << 40, 1), -ENOSPC);
	{
		struct vrange r = { next * PG, 0 };

		ck_assert_int_eq(vol_mark(&fs, f, &r, 1, 3, false), -ENOSPC);
	}
	snprintf(val, sizeof(val), "%llu:4K", (unsigned long long)(next * PG));
	ck_assert_int_eq(vset(f, "mark", val), -ENOSPC);
	ck_assert_uint_eq(f->units.count, cap);
	ck_assert_uint_eq(fs.lru.units, cap);

	/* Growing the file brings k of them inside it. */
	set_size(f, 2 * k * PG);
	/* Inside the size: still allowed at the cap. */
	ck_assert_int_eq(mark_pages(f, 1, 1), 0);
	ck_assert_uint_eq(f->units.count, cap + 1);
	/* A call with one range past the end too many fails whole ... */
	ck_assert_int_eq(mark_pages(f, next, k + 1), -ENOSPC);
	ck_assert_uint_eq(f->units.count, cap + 1);
	/* ... and one with a range inside and one past the end, at the cap: neither is marked. */
	ck_assert_int_eq(mark_pages(f, next, k), 0);
	ck_assert_uint_eq(f->units.count, cap + 1 + k);
	{
		struct vrange r[2] = { { 3 * PG, PG }, { (next + 2 * k) * PG, PG } };

		ck_assert_int_eq(vol_mark(&fs, f, r, 2, 3, false), -ENOSPC);
		ck_assert_uint_eq(f->units.count, cap + 1 + k);
		/* the one inside alone is fine */
		ck_assert_int_eq(vol_mark(&fs, f, r, 1, 3, false), 0);
		ck_assert_uint_eq(f->units.count, cap + 2 + k);
	}
	ck_assert_int_eq(mark_pages(f, next + 2 * k, 1), -ENOSPC);
	ck_assert_uint_eq(fs.lru.units, cap + 2 + k);
	/* Marks that add nothing past the end do not count against the cap. */
	ck_assert_int_eq(mark_pages(f, 5, 10), 0);
	ck_assert_uint_eq(f->units.count, cap + 12 + k);
	/* The cap is per file. */
	{
		struct inode *g = file_with("g", 0);

		ck_assert_int_eq(mark_pages(g, 0, 64), 0);
		ck_assert_uint_eq(g->units.count, 64);
	}
}
END_TEST

/* Units past the end that go away make room again: unmarked, or the file grown over them. */
START_TEST(units_past_eof_cap_counts_what_is_there_now)
{
	struct inode *f = file_with("f", 3 * PG);
	const uint64_t cap = VOL_UNITS_PAST_EOF;
	struct vrange all = { 0, 0 };
	uint64_t bytes;
	int purged;

	for (uint64_t i = 0; i < cap; i += 128)
		ck_assert_int_eq(mark_pages(f, 4 + 2 * i, 128), 0);
	ck_assert_uint_eq(f->units.count, cap);
	ck_assert_int_eq(mark_pages(f, 4 + 2 * cap, 1), -ENOSPC);
	/* Within the size: fine at the cap. */
	ck_assert_int_eq(mark_pages(f, 0, 2), 0);
	ck_assert_uint_eq(f->units.count, cap + 2);
	/* Unmarking everything frees the cap. */
	ck_assert_int_eq(vol_unmark(&fs, f, &all, 1, &bytes, &purged), 0);
	ck_assert_uint_eq(f->units.count, 0);
	ck_assert_uint_eq(fs.lru.units, 0);
	ck_assert_int_eq(mark_pages(f, 4 + 2 * cap, 64), 0);
	ck_assert_uint_eq(f->units.count, 64);
}
END_TEST

/*
 * Units are metadata, charged against the limit: a flood of marks on a
 * file whose size costs nothing ends in an error for the call, with
 * the accounting within the limit (and metadata's slack).
 */
START_TEST(mark_flood_ends_at_the_limit)
{
	struct inode *f = file_with("f", 0);
	struct inode *v = file_with("v", 1 << 20);
	uint64_t units = 0, limit, before, base_ok = 0;
	int ret = 0;

	/* Volatile data elsewhere: purged for the units before a mark fails. */
	ck_assert_int_eq(vset(v, "mark", "all"), 0);
	set_size(f, 1ull << 50); /* a petabyte of holes: nothing paid for */
	mem_reconcile(&fs.mem);
	limit = mem_rss(&fs.mem) + (2u << 20);
	mem_set_limit(&fs.mem, limit);
	while (units < 2000000) {
		ret = mark_pages(f, 2 * units, 256);
		if (ret)
			break;
		units += 256;
		ck_assert_uint_le(mem_rss(&fs.mem), limit + MEM_META_SLACK);
		base_ok = (uint64_t)atomic_load(&fs.mem.base);
	}
	ck_assert_msg(ret == -ENOSPC || ret == -ENOMEM, "flood of %llu units: %d",
		      (unsigned long long)units, ret);
	ck_assert_uint_eq(f->units.count, units);
	ck_assert_uint_gt(units, 1000); /* something fitted */
	ck_assert_uint_eq(atomic_load(&fs.purged_bytes_total), 1 << 20);
	ck_assert_uint_eq(atomic_load(&fs.lru.resident), 0);
	/* Against base as of the last mark that fitted: the failed call
	 * reads the kernel's figure again, and under a sanitizer that
	 * figure includes shadow memory that grew with the heap. */
	ck_assert_uint_le(atomic_load(&fs.mem.charged) + base_ok, limit + MEM_META_SLACK);
	/* The failed call changed nothing; a second one fails the same way. */
	before = atomic_load(&fs.mem.charged);
	ret = mark_pages(f, 2 * units, 256);
	ck_assert(ret == -ENOSPC || ret == -ENOMEM);
	ck_assert_uint_eq(f->units.count, units);
	ck_assert_uint_eq(atomic_load(&fs.mem.charged), before);
	/* Unlinking gives it all back. */
	ck_assert_int_eq(fs_unlink(&fs, fs.root, "f"), 0);
	fs_forget(&fs, f, 1);
	ck_assert_uint_eq(fs.lru.units, 1); /* v's */
	ck_assert_uint_lt(atomic_load(&fs.mem.charged), before);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vol");
	TCase *tc = utest_tcase(s, "core", setup, teardown, 30);

	tcase_add_test(tc, mark_shows_units_sorted_with_flags);
	tcase_add_test(tc, overlapping_mark_absorbs_touching_stays);
	tcase_add_test(tc, unmark_splits_and_reports_bytes_and_purged);
	tcase_add_test(tc, unbounded_unit_counts_bytes_up_to_the_file_size);
	tcase_add_test(tc, purge_frees_memory_records_bytes_and_reads_zero);
	tcase_add_test(tc, write_removes_exactly_the_written_bytes_from_the_purged_set);
	tcase_add_test(tc, truncate_cuts_purged_set_and_bounded_units);
	tcase_add_test(tc, punch_hole_removes_punched_bytes_from_the_purged_set);
	tcase_add_test(tc, removexattr_forgets_the_purged_set);
	tcase_add_test(tc, purge_order_is_priority_then_age_then_lru);
	tcase_add_test(tc, recency_counts_uses_not_fallocate);
	tcase_add_test(tc, split_pieces_keep_their_place);
	tcase_add_test(tc, touch_all_keeps_the_file_order);
	tcase_add_test(tc, purge_size_stops_once_enough_was_freed);
	tcase_add_test(tc, write_over_limit_purges_volatile_data_first);
	tcase_add_test(tc, write_policy_unmark_makes_written_pages_non_volatile);
	tcase_add_test(tc, purged_read_eio_refuses_purged_bytes);
	tcase_add_test(tc, malformed_values_change_nothing);
	tcase_add_test(tc, stats_and_memory_limit_on_the_root);
	tcase_add_test(tc, unlinking_a_file_drops_its_units);
	tcase_add_test(tc, ioctl_range_checks);
	tcase_add_test(tc, units_past_eof_are_capped);
	tcase_add_test(tc, units_past_eof_cap_counts_what_is_there_now);
	tcase_add_test(tc, mark_flood_ends_at_the_limit);
	return utest_run(s);
}
