/*
 * remount.c - a remount of a live mount through mount(8); see remount.h.
 */
#include "remount.h"

#include <fuse_opt.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/xattr.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo: undo it in place. */
static void unescape(char *s)
{
	size_t j = 0;

	for (size_t i = 0; s[i]; i++, j++) {
		if (s[i] == '\\' && s[i + 1] && s[i + 2] && s[i + 3]) {
			s[j] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			s[j] = s[i];
		}
	}
	s[j] = '\0';
}

int mount_entry_find(const char *mountpoint, struct mount_entry *out)
{
	char line[4096], mp[4096], opts[1024], fstype[256], source[256], super[1024];
	char path[PATH_MAX];
	unsigned major, minor;
	int ret = -ENOENT;
	FILE *f;

	if (!realpath(mountpoint, path))
		return -errno;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*d %*d %u:%u %*s %4095s %1023s", &major, &minor, mp,
				    opts) != 4 ||
		    sscanf(dash + 3, "%255s %255s %1023s", fstype, source, super) != 3 ||
		    strncmp(fstype, "fuse", 4) != 0)
			continue;
		unescape(mp);
		if (strcmp(mp, path) != 0)
			continue;
		/* The last one mounted there is the one a path reaches. */
		out->minor = minor;
		snprintf(out->opts, sizeof(out->opts), "%s", opts);
		snprintf(out->fstype, sizeof(out->fstype), "%s", fstype);
		unescape(source);
		snprintf(out->source, sizeof(out->source), "%s", source);
		snprintf(out->super, sizeof(out->super), "%s", super);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* The mount point's own flags (MS_*), as a bind remount sets them. */
static const struct {
	const char *name;
	unsigned long set, clear;
} mount_flags[] = {
	{ "ro", MS_RDONLY, 0 }, { "rw", 0, MS_RDONLY },
	{ "nosuid", MS_NOSUID, 0 }, { "suid", 0, MS_NOSUID },
	{ "nodev", MS_NODEV, 0 }, { "dev", 0, MS_NODEV },
	{ "noexec", MS_NOEXEC, 0 }, { "exec", 0, MS_NOEXEC },
	{ "nodiratime", MS_NODIRATIME, 0 }, { "diratime", 0, MS_NODIRATIME },
	{ "noatime", MS_NOATIME, MS_RELATIME | MS_STRICTATIME },
	{ "relatime", MS_RELATIME, MS_NOATIME | MS_STRICTATIME },
	{ "strictatime", MS_STRICTATIME, MS_NOATIME | MS_RELATIME },
	{ "atime", 0, MS_NOATIME },
};

/* Apply item (len bytes) to *flags if it is a mount point flag. */
static bool mount_flag(const char *item, size_t len, unsigned long *flags)
{
	for (size_t i = 0; i < sizeof(mount_flags) / sizeof(mount_flags[0]); i++) {
		if (strlen(mount_flags[i].name) == len && strncmp(item, mount_flags[i].name, len) == 0) {
			*flags = (*flags & ~mount_flags[i].clear) | mount_flags[i].set;
			return true;
		}
	}
	return false;
}

/* The flags of a mountinfo mount options field. */
static unsigned long flags_of(const char *list)
{
	unsigned long flags = 0;

	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		(void)mount_flag(p, n, &flags);
		if (!end)
			break;
		p = end + 1;
	}
	return flags;
}

/* fsname= and subtype= as the mount has them (mount.fuse3 passes them back). */
static bool names_the_mount(const struct mount_entry *me, const char *item, size_t len)
{
	if (len > 8 && strncmp(item, "subtype=", 8) == 0)
		return strncmp(me->fstype, "fuse.", 5) == 0 && strlen(me->fstype + 5) == len - 8 &&
		       strncmp(me->fstype + 5, item + 8, len - 8) == 0;
	if (len > 7 && strncmp(item, "fsname=", 7) == 0)
		return strlen(me->source) == len - 7 && strncmp(me->source, item + 7, len - 7) == 0;
	return false;
}

/*
 * The items of the other options (fuse_opt gathers them as -o LIST):
 * mount point flags into *flags; FUSE options must be in the mount's
 * own options already.  Zero, or -EINVAL with a message.
 */
static int check_rest(const struct fuse_args *rest, const struct mount_entry *me,
		      unsigned long *flags, char *err, size_t errlen)
{
	for (int i = 1; i < rest->argc; i++) {
		const char *p = rest->argv[i];

		if (strcmp(p, "-o") == 0 && i + 1 < rest->argc)
			p = rest->argv[++i];
		else if (strncmp(p, "-o", 2) == 0)
			p += 2;
		else
			continue; /* the mount point, -f, -s... */
		while (*p) {
			const char *end = strchr(p, ',');
			size_t n = end ? (size_t)(end - p) : strlen(p);

			if (n && !(n == 7 && strncmp(p, "remount", 7) == 0) &&
			    !mount_flag(p, n, flags) && !opts_list_has(me->super, p, n) &&
			    !names_the_mount(me, p, n)) {
				snprintf(err, errlen, "remount: %.*s: FUSE's options cannot change "
					 "on a mounted volatilefs; unmount it and mount again",
					 (int)n, p);
				return -EINVAL;
			}
			if (!end)
				break;
			p = end + 1;
		}
	}
	return 0;
}

int remount_run(const char *mountpoint, const struct opts *o, const struct fuse_args *rest,
		char *err, size_t errlen)
{
	struct mount_entry me;
	unsigned long flags, was;
	char limit[32];
	int ret = mount_entry_find(mountpoint, &me);

	if (ret == 0 && strcmp(me.fstype, "fuse.volatilefs") != 0)
		ret = -ENOENT;
	if (ret) {
		snprintf(err, errlen, "remount: %s: no volatilefs is mounted there", mountpoint);
		return ret;
	}
	if (o->fixed_given) {
		snprintf(err, errlen, "remount: %s cannot change on a mounted volatilefs (only "
			 "memory_limit can, also with setfattr -n user.volatile.memory_limit); "
			 "unmount it and mount again", o->fixed_given);
		return -EINVAL;
	}
	was = flags = flags_of(me.opts);
	ret = check_rest(rest, &me, &flags, err, errlen);
	if (ret)
		return ret;
	/* All checked.  The flags first: they can be put back if the limit
	 * then fails, and a limit once set may have purged. */
	if (flags != was && mount(NULL, mountpoint, NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0) {
		ret = -errno;
		snprintf(err, errlen, "remount: the mount point's flags (ro, nosuid, nodev, noexec, "
			 "atime): %s", strerror(-ret));
		return ret;
	}
	if (o->memory_limit) {
		snprintf(limit, sizeof(limit), "%" PRIu64, o->memory_limit);
		if (setxattr(mountpoint, "user.volatile.memory_limit", limit, strlen(limit), 0) < 0) {
			ret = -errno;
			snprintf(err, errlen, "remount: memory_limit=%s: %s", limit, strerror(-ret));
			if (flags != was)
				(void)mount(NULL, mountpoint, NULL, MS_REMOUNT | MS_BIND | was, NULL);
			return ret;
		}
	}
	return 0;
}

int remount_asked_flags(const char *mountpoint, int argc, char *argv[])
{
	struct mount_entry me;
	unsigned long flags, was;
	int ret;

	if (!opts_asked(argc, argv, "dev") && !opts_asked(argc, argv, "suid"))
		return 0;
	ret = mount_entry_find(mountpoint, &me);
	if (ret)
		return ret;
	was = flags = flags_of(me.opts);
	if (opts_asked(argc, argv, "dev"))
		flags &= ~(unsigned long)MS_NODEV;
	if (opts_asked(argc, argv, "suid"))
		flags &= ~(unsigned long)MS_NOSUID;
	if (flags != was && mount(NULL, mountpoint, NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0)
		return -errno;
	return 0;
}
