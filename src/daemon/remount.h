/*
 * remount.h - `mount -o remount,OPTIONS MOUNTPOINT` of a mounted volatilefs.
 *
 * mount(8) hands a remount of a fuse.volatilefs mount to mount.fuse3, which
 * runs the daemon's binary again, with "remount" among the options and
 * those the mount already has (rw, relatime, user_id=...) beside the ones
 * asked for.  That second process mounts nothing: it changes what a live
 * mount can change and exits.
 *
 *   memory_limit=SIZE   through the root's user.volatile.memory_limit, as
 *                       setfattr would (purging at once when it is lowered);
 *   ro, rw, nosuid, suid, nodev, dev, noexec, exec, and the atime flags
 *                       (noatime, relatime, strictatime, nodiratime...):
 *                       the mount point's own flags, by a bind remount
 *                       (mount(2) with MS_REMOUNT | MS_BIND), as
 *                       `mount -o remount,bind` changes them;
 *   FUSE's options (user_id=, group_id=, default_permissions, allow_other,
 *                       ...) are accepted when the mount has them already
 *                       (mount(8) passes them back) and refused otherwise;
 *   our other options (opts.h: fixed_given) are refused: they hold from
 *                       the mount to the unmount.
 * A refusal names the option and says what works instead; nothing is
 * changed then.
 */
#ifndef VOLATILEFS_REMOUNT_H
#define VOLATILEFS_REMOUNT_H

#include <stdbool.h>
#include <stddef.h>

#include "opts.h"

struct fuse_args;

/* A line of /proc/self/mountinfo (proc(5)), its fields unescaped. */
struct mount_entry {
	unsigned minor;       /* of the device: a FUSE mount's connection number */
	char opts[1024];      /* the mount point's own flags: rw,nosuid,relatime... */
	char fstype[256];     /* fuse.volatilefs */
	char source[256];     /* what mount(8) shows as the source (fsname=) */
	char super[1024];     /* the file system's options: rw,user_id=0,... */
};

/*
 * The last (topmost) FUSE mount on mountpoint: zero, -ENOENT if there is
 * none, or -errno.
 */
int mount_entry_find(const char *mountpoint, struct mount_entry *out);

/*
 * Apply a remount to the volatilefs mounted on mountpoint: o holds our
 * options, rest the others (opts_parse's leftovers).  Zero, or -errno
 * with a message in err.
 */
int remount_run(const char *mountpoint, const struct opts *o, const struct fuse_args *rest,
		char *err, size_t errlen);

/*
 * After our own mount through fusermount3 (libfuse's auto_unmount): it
 * mounts nosuid,nodev whatever the options asked, as it must for users.
 * For root, give the mount point the dev and suid the command line
 * (argc, argv) asked for, by a bind remount.  Zero, or -errno.
 */
int remount_asked_flags(const char *mountpoint, int argc, char *argv[]);

#endif
