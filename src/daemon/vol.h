/*
 * vol.h - the volatile-range operations of one file (DESIGN section 4),
 * with their locking and reporting: what the xattrs (vxattr.c) and the
 * ioctls (ops.c) call.
 *
 * Ranges come in bytes, already checked by vol_check_range() or the
 * xattr grammar: offset a multiple of 4096, length rounded up to one
 * (0 = unbounded), offset + length within INT64_MAX.
 *
 * Reporting: a purge is reported by vol_unmark(), vol_purged() and the
 * formatted values; each of them tells fs->hooks.depend which purges its
 * answer includes, and the glue replies only once the kernel has
 * dropped its cached pages of all of them (notify.h), so no read through
 * any path can return discarded data afterwards.
 *
 * Locking: each call takes the file's lock for as long as it needs it
 * and no other inode lock.
 */
#ifndef VOLATILEFS_VOL_H
#define VOLATILEFS_VOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgrammar.h"

struct fs;
struct inode;
struct volatilefs_extent;

/*
 * Validate and round a range given in bytes (the ioctl path): offset a
 * multiple of 4096, length rounded up, the end within INT64_MAX.  Zero
 * or -EINVAL.
 */
int vol_check_range(uint64_t offset, uint64_t length, struct vrange *out);

/*
 * A file may hold at most this many units that start at or past its end.
 * What a unit past the end holds back is nothing the user asked the file
 * to hold, so a flood of them is refused (-ENOSPC).  Units inside the
 * size (of a sparse file too) are bounded by the memory limit alone:
 * every unit is metadata, charged like data (meta.h).
 */
#define VOL_UNITS_PAST_EOF 4096

/*
 * Mark each range as one unit.  Zero, -EISDIR/-EINVAL (not a file),
 * -ENOSPC (no room for the units under the limit after purging, or more
 * than VOL_UNITS_PAST_EOF units past the end), -ENOMEM.
 */
int vol_mark(struct fs *fs, struct inode *n, const struct vrange *r, size_t nr,
	     unsigned priority, bool age);
/*
 * Unmark the ranges; *bytes and *purged as DESIGN section 4.  All or
 * nothing.  -ENOSPC when the spare units a split may need find no room
 * after purging, -ENOMEM.
 */
int vol_unmark(struct fs *fs, struct inode *n, const struct vrange *r, size_t nr,
	       uint64_t *bytes, int *purged);
/* The same, and purged_each[i] (when not NULL): *purged for r[i] alone. */
int vol_unmark_each(struct fs *fs, struct inode *n, const struct vrange *r, size_t nr,
		    uint64_t *bytes, int *purged, unsigned char *purged_each);
/*
 * The purged extents inside [offset, offset + length) (length 0: to the
 * end), clipped to it: up to max in out, and their number in *count.
 */
int vol_purged(struct fs *fs, struct inode *n, uint64_t offset, uint64_t length,
	       struct volatilefs_extent *out, size_t max, uint64_t *count);
/* removexattr user.volatile.purged: forget the purged set. */
int vol_forget_purged(struct fs *fs, struct inode *n);
/* Is the purged set non-empty?  (poll: POLLPRI) */
bool vol_has_purged(struct fs *fs, struct inode *n);

/* The values read back (DESIGN section 5).  Zero, -E2BIG or -ENOMEM. */
int vol_format_ranges(struct fs *fs, struct inode *n, struct strbuf *b);
int vol_format_purged(struct fs *fs, struct inode *n, struct strbuf *b);
int vol_format_stats(struct fs *fs, struct strbuf *b);

#endif
