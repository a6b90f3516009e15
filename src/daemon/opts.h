/*
 * opts.h - the daemon's own mount options (DESIGN section 2).
 *
 * opts_parse() takes memory_limit=, memory_low=, purged_read=,
 * write_policy=, auto=, pressure=, pressure_headroom=, passthrough=, auto_unmount=, mode=,
 * uid=, gid= out
 * of the argument list with fuse_opt and validates them; everything else
 * stays for libfuse (standard FUSE options, -f/-d/-s, the mountpoint),
 * which refuses what it does not know.  The value parsers are pure
 * functions so they can be unit-tested and fuzzed.
 */
#ifndef VOLATILEFS_OPTS_H
#define VOLATILEFS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "size.h"

struct fuse_args;

struct opts {
	uint64_t memory_limit; /* 0: not given */
	uint64_t memory_low;   /* 0: not given */
	bool mode_set, uid_set, gid_set;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	bool purged_eio;       /* purged_read=eio (default zero) */
	bool write_unmark;     /* write_policy=unmark (default keep) */
	int auto_mode;         /* auto=off|mark|unlink of the root (0 = off) */
	bool pressure_off;     /* pressure=off (default on) */
	bool auto_unmount_off; /* auto_unmount=off (default on: main.c adds libfuse's auto_unmount) */
	uint64_t pressure_headroom; /* 0: not given */
	int passthrough;       /* OPTS_PT_*: passthrough=auto (default), on, off */
	bool passthrough_set;  /* given */
	/* The name of the first option given that only a new mount can
	 * change (all of ours but memory_limit), or NULL: remount.h. */
	const char *fixed_given;
};

/* auto is the default (opts_parse): see volatilefs(8), PASSTHROUGH. */
#define OPTS_PT_OFF  0
#define OPTS_PT_AUTO 1
#define OPTS_PT_ON   2

/* Octal permission bits, at most 07777.  Zero or -EINVAL. */
int opts_parse_mode(const char *s, mode_t *out);
/* auto, on, off: OPTS_PT_*, or -EINVAL. */
int opts_parse_passthrough(const char *s);
/* A decimal id below (uid_t)-1.  Zero or -EINVAL. */
int opts_parse_id(const char *s, uint32_t *out);

/* Is item (len bytes) one of the comma-separated items of list? */
bool opts_list_has(const char *list, const char *item, size_t len);
/* Does an -o list of the command line name opt (a word, as "remount")? */
bool opts_asked(int argc, char *argv[], const char *opt);

/*
 * Parse and remove our options from args into o.  Zero, or -EINVAL with
 * a message (naming the option and the reason) in err.
 */
int opts_parse(struct fuse_args *args, struct opts *o, char *err, size_t errlen);

#endif
