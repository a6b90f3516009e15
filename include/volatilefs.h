/*
 * volatilefs.h - the client interface of volatilefs.
 *
 * Files on a volatilefs mount can hold *volatile* byte ranges: data the
 * program can regenerate, which the daemon may discard ("purge") when
 * its memory goes over the mount's limit.  A program marks ranges
 * volatile while it does not need them, unmarks them before use, and
 * learns whether -- and exactly which bytes -- were purged meanwhile.
 *
 *   int fd = open("/cache/glyphs.atlas", O_RDWR);
 *   volatilefs_mark(fd, 0, 1 << 20, VOLATILEFS_PRIORITY(1));   // idle
 *   ...
 *   uint64_t bytes; int purged;
 *   volatilefs_unmark(fd, 0, 1 << 20, &bytes, &purged);         // in use
 *   if (purged) {
 *           struct volatilefs_extent ext[16]; size_t n;
 *           volatilefs_purged(fd, 0, 1 << 20, ext, 16, &n);     // regenerate these
 *   }
 *
 * Link with -lvolatilefs (pkg-config --cflags --libs volatilefs).  The
 * functions return 0, or -1 with errno set, like system calls.  See
 * volatilefs(3) for the full semantics, and volatilefs(8) for the same
 * operations through extended attributes.
 */
#ifndef VOLATILEFS_H
#define VOLATILEFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A byte range [offset, offset + length). */
struct volatilefs_extent {
	uint64_t offset;
	uint64_t length;
};

/*
 * Mark flags.  Without VOLATILEFS_PRIORITY a unit gets priority 3;
 * VOLATILEFS_PRIORITY(0) is priority 0 (a separate bit says a priority is
 * present).  Lower priorities are purged first; within one priority,
 * units marked with VOLATILEFS_AGE go first, then the least recently used.
 */
#define VOLATILEFS_AGE           0x1u
#define VOLATILEFS_PRIORITY(n)   (0x100u | (((unsigned)(n) & 0xfu) << 4))
#define VOLATILEFS_PRIORITY_DEFAULT 3

/*
 * Mark [offset, offset + length) volatile as one unit.  offset must be a
 * multiple of 4096 (EINVAL); length is rounded up to a multiple of 4096;
 * length 0 means "to the end of the file, now and as it grows".  The fd
 * must be open for writing (EBADF).  Off volatilefs: ENOTTY.
 */
int volatilefs_mark(int fd, uint64_t offset, uint64_t length, unsigned flags);

/*
 * Make [offset, offset + length) non-volatile, splitting units as needed.
 * *bytes: how many bytes of the range were volatile before the call and
 * are not now; *purged: 1 if any byte of the range (within the file's
 * size) was purged and not rewritten since, else 0.  Either pointer may
 * be NULL.  All or nothing: on failure nothing changed.
 */
int volatilefs_unmark(int fd, uint64_t offset, uint64_t length, uint64_t *bytes,
		      int *purged);

/*
 * The purged extents inside [offset, offset + length) (length 0: to the
 * end of the file), in order, clipped to the range: at most max of them
 * are stored in out, and *count is set to how many exist in the range,
 * so a caller can page through with a larger buffer or a later offset.
 */
int volatilefs_purged(int fd, uint64_t offset, uint64_t length,
		      struct volatilefs_extent *out, size_t max, size_t *count);

/*
 * One round trip for a frame of a cache's life (a compositor's glyph
 * atlas: the entries a frame needs come back, those gone idle go):
 * unmark[0..nunmark), then mark[0..nmark) with flags, each mark range a
 * unit of its own.
 *
 * The unmarks are one unmark call (all or nothing): *bytes as
 * volatilefs_unmark's for all of them, and purged[i] (0 or 1) as its
 * *purged for unmark[i] alone, so the caller knows which entries to
 * regenerate without asking again.  The marks come after and cannot undo
 * them: when the marks fail (no room under the limit: ENOSPC, ENOMEM),
 * the call still returns 0, with the unmarks done and *mark_error set to
 * the errno; the marked ranges are then unchanged (non-volatile, which
 * is safe).  Any bad range, bad flags, or more than VOLATILEFS_BATCH_MAX
 * ranges in all (E2BIG) fail the call before anything changes.  bytes,
 * purged and mark_error may be NULL.  The fd must be open for writing.
 */
#define VOLATILEFS_BATCH_MAX 240

int volatilefs_batch(int fd, const struct volatilefs_extent *unmark, size_t nunmark,
		     const struct volatilefs_extent *mark, size_t nmark, unsigned flags,
		     uint64_t *bytes, unsigned char *purged, int *mark_error);

/*
 * The ioctls behind the functions.  FUSE carries only "restricted"
 * ioctls, whose argument size is encoded in the command, so every
 * argument is a fixed-size struct passed with _IOWR.
 */
#define VOLATILEFS_IOC_MAGIC 0xb7

struct volatilefs_mark_arg {
	uint64_t offset;
	uint64_t length;
	uint32_t flags;
	uint32_t reserved; /* must be 0 */
};

struct volatilefs_unmark_arg {
	uint64_t offset;   /* in */
	uint64_t length;   /* in */
	uint64_t bytes;    /* out */
	uint32_t purged;   /* out: 0 or 1 */
	uint32_t reserved; /* must be 0 */
};

#define VOLATILEFS_PURGED_BATCH 128

struct volatilefs_purged_arg {
	uint64_t offset;   /* in */
	uint64_t length;   /* in: 0 = to the end of the file */
	uint64_t count;    /* out: extents in the range */
	uint32_t filled;   /* out: extents stored in extents[] */
	uint32_t reserved; /* must be 0 */
	struct volatilefs_extent extents[VOLATILEFS_PURGED_BATCH]; /* out */
};

struct volatilefs_batch_arg {
	uint32_t nunmark;    /* in: ranges[0..nunmark) are unmarked */
	uint32_t nmark;      /* in: ranges[nunmark..nunmark + nmark) are marked */
	uint32_t flags;      /* in: the marks' flags */
	int32_t mark_error;  /* out: 0, or the errno the marks failed with */
	uint64_t bytes;      /* out: as volatilefs_unmark's, for all the unmarks */
	uint64_t purged[(VOLATILEFS_BATCH_MAX + 63) / 64]; /* out: bit i for unmark i */
	uint64_t reserved;   /* must be 0 */
	struct volatilefs_extent ranges[VOLATILEFS_BATCH_MAX]; /* in */
};

#define VOLATILEFS_IOC_MARK   _IOWR(VOLATILEFS_IOC_MAGIC, 1, struct volatilefs_mark_arg)
#define VOLATILEFS_IOC_UNMARK _IOWR(VOLATILEFS_IOC_MAGIC, 2, struct volatilefs_unmark_arg)
#define VOLATILEFS_IOC_PURGED _IOWR(VOLATILEFS_IOC_MAGIC, 3, struct volatilefs_purged_arg)
#define VOLATILEFS_IOC_BATCH  _IOWR(VOLATILEFS_IOC_MAGIC, 4, struct volatilefs_batch_arg)

#ifdef __cplusplus
}
#endif

#endif
