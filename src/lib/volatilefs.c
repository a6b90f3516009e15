/*
 * volatilefs.c - libvolatilefs: the client functions of volatilefs.h over
 * the daemon's ioctls.
 *
 * Each function is one restricted ioctl (FUSE carries only those: the
 * argument is a fixed-size struct whose size is encoded in the command),
 * except volatilefs_purged(), which pages through answers of
 * VOLATILEFS_PURGED_BATCH extents when the caller wants more.
 *
 * Errors are reported like system calls: -1 with errno set.  The errno of
 * a failed ioctl is passed through untouched, so a descriptor that is not
 * on volatilefs fails with the kernel's ENOTTY, and the daemon's answers
 * (EBADF, EINVAL, EISDIR, ...) reach the caller as they were given.  The
 * library checks only what the daemon cannot see: the caller's pointers.
 *
 * Paging: the daemon clips extents to the requested range and reports how
 * many extents the whole range holds (count).  Extents in the purged set
 * are coalesced, so two of them never touch; the next batch therefore
 * starts at the end of the last extent received, and its first extent is
 * the next one of the set.  Batches are separate requests, so a purge or a
 * write in between can change the set: the library notices when a later
 * batch does not continue the first one (a different number of extents
 * left, or an extent that touches the previous one) and starts again from
 * the first batch, a bounded number of times (then EAGAIN).  A caller that
 * has unmarked the range first sees no purges there, and nothing changes
 * unless it writes concurrently.
 *
 * Thread safety: no state; each call uses only its arguments and stack.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "volatilefs.h"

#define EXPORT __attribute__((visibility("default")))

/* A purged set that keeps changing under a paged listing: give up after this many tries. */
#define PURGED_TRIES 16

_Static_assert(sizeof(unsigned) <= sizeof(uint32_t), "mark flags must fit the ioctl's 32 bits");
_Static_assert(sizeof(struct volatilefs_purged_arg) <= 16384,
	       "FUSE carries restricted ioctl arguments of up to about 16 KiB");

EXPORT int volatilefs_mark(int fd, uint64_t offset, uint64_t length, unsigned flags)
{
	struct volatilefs_mark_arg a = {
		.offset = offset,
		.length = length,
		.flags = flags,
	};

	return ioctl(fd, VOLATILEFS_IOC_MARK, &a) < 0 ? -1 : 0;
}

EXPORT int volatilefs_unmark(int fd, uint64_t offset, uint64_t length, uint64_t *bytes,
			     int *purged)
{
	struct volatilefs_unmark_arg a = {
		.offset = offset,
		.length = length,
	};

	if (ioctl(fd, VOLATILEFS_IOC_UNMARK, &a) < 0)
		return -1;
	if (bytes)
		*bytes = a.bytes;
	if (purged)
		*purged = a.purged != 0;
	return 0;
}

_Static_assert(sizeof(struct volatilefs_batch_arg) <= 4096,
	       "a batch argument fits one page each way");

EXPORT int volatilefs_batch(int fd, const struct volatilefs_extent *unmark, size_t nunmark,
			    const struct volatilefs_extent *mark, size_t nmark, unsigned flags,
			    uint64_t *bytes, unsigned char *purged, int *mark_error)
{
	struct volatilefs_batch_arg a;

	if (nunmark > VOLATILEFS_BATCH_MAX || nmark > VOLATILEFS_BATCH_MAX - nunmark) {
		errno = E2BIG;
		return -1;
	}
	if ((nunmark && !unmark) || (nmark && !mark)) {
		errno = EFAULT;
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.nunmark = (uint32_t)nunmark;
	a.nmark = (uint32_t)nmark;
	a.flags = flags;
	if (nunmark)
		memcpy(a.ranges, unmark, nunmark * sizeof(*unmark));
	if (nmark)
		memcpy(a.ranges + nunmark, mark, nmark * sizeof(*mark));
	if (ioctl(fd, VOLATILEFS_IOC_BATCH, &a) < 0)
		return -1;
	if (bytes)
		*bytes = a.bytes;
	for (size_t i = 0; purged && i < nunmark; i++)
		purged[i] = (a.purged[i / 64] >> (i % 64)) & 1;
	if (mark_error)
		*mark_error = a.mark_error;
	return 0;
}

/*
 * One listing attempt: fills out[0..max) and *total from batches, the first
 * at [offset, end).  end is UINT64_MAX for "to the end of the file".  Returns
 * 0, -1 with errno set, or 1 when the set changed between batches.
 */
static int purged_attempt(int fd, uint64_t offset, uint64_t length, uint64_t end,
			  struct volatilefs_extent *out, size_t max, uint64_t *total,
			  struct volatilefs_purged_arg *a)
{
	uint64_t stored = 0, prev_end = 0;
	bool first = true;

	for (;;) {
		uint64_t want;

		memset(a, 0, sizeof(*a)); /* all of it goes to the daemon */
		a->offset = offset;
		a->length = length;
		if (ioctl(fd, VOLATILEFS_IOC_PURGED, a) < 0)
			return -1;
		if (a->filled > VOLATILEFS_PURGED_BATCH || a->filled > a->count) {
			errno = EPROTO; /* not an answer volatilefs gives */
			return -1;
		}
		if (first) {
			*total = a->count;
			first = false;
		} else if (a->count != *total - stored ||
			   (a->filled && a->extents[0].offset <= prev_end)) {
			return 1;
		}
		want = max - stored < a->filled ? max - stored : a->filled;
		if (want)
			memcpy(out + stored, a->extents, want * sizeof(*out));
		stored += want;
		/* Done: the buffer is full, or this answer held the rest. */
		if (stored == max || stored >= *total || a->filled == a->count)
			return 0;
		if (a->filled == 0)
			return 1; /* the count promised more than came */
		prev_end = a->extents[a->filled - 1].offset + a->extents[a->filled - 1].length;
		if (prev_end >= end)
			return 1;
		offset = prev_end;
		/* Unbounded stays unbounded; else the rest of the caller's range. */
		length = length ? end - offset : 0;
	}
}

EXPORT int volatilefs_purged(int fd, uint64_t offset, uint64_t length,
			     struct volatilefs_extent *out, size_t max, size_t *count)
{
	/* As the daemon reads the range: an end past 2^64 means "to the end". */
	uint64_t end = length && length <= UINT64_MAX - offset ? offset + length : UINT64_MAX;
	struct volatilefs_purged_arg a;
	uint64_t total = 0;
	int ret = 1;

	if (!out && max) {
		errno = EFAULT;
		return -1;
	}
	if (end == UINT64_MAX)
		length = 0;
	for (int i = 0; i < PURGED_TRIES && ret == 1; i++)
		ret = purged_attempt(fd, offset, length, end, out, max, &total, &a);
	if (ret < 0)
		return -1;
	if (ret == 1) {
		errno = EAGAIN;
		return -1;
	}
#if SIZE_MAX < UINT64_MAX
	if (total > SIZE_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
#endif
	if (count)
		*count = (size_t)total;
	return 0;
}
