/*
 * volatilectl - volatile ranges from the command line (SPEC section 7),
 * a thin layer over libvolatilefs and the user.volatile.* attributes.
 *
 *   $ volatilectl mark glyphs.atlas 0:64K 1M:1M --priority 1
 *   $ volatilectl purge /cache all
 *   $ volatilectl unmark glyphs.atlas 0:64K
 *   bytes=65536 purged=1
 *   $ echo $?
 *   3
 *   $ volatilectl status glyphs.atlas
 *
 * Exit status: 0 success, 1 an operation failed, 2 bad usage, 3 (unmark
 * only) something in the ranges had been purged.  Errors name the file
 * and the reason.  RANGE is OFFSET:LENGTH in the SIZE syntax (LENGTH 0:
 * to the end of the file, as it grows) or "all".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "size.h"
#include "vgrammar.h"
#include "volatilefs.h"

#define EXIT_USAGE 2
#define EXIT_PURGED 3

static const char *prog = "volatilectl";

static void die_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s\n", prog, msg, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "Try '%s --help'.\n", prog);
	exit(EXIT_USAGE);
}

/* A usage error about one FILE's arguments: the file, the reason, the argument. */
static void die_usage_file(const char *file, const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s: %s%s%s\n", prog, file, msg, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "Try '%s --help'.\n", prog);
	exit(EXIT_USAGE);
}

/*
 * FILE: WHAT: the reason, for a call that failed with err; exit status 1.
 * The errors whose strerror() says little here get their meaning first.
 */
static int fail(const char *file, const char *what, int err)
{
	const char *why = NULL;

	switch (err) {
	case ENOTTY: /* the kernel's answer to our ioctls off volatilefs */
		why = "not on a volatilefs mount";
		break;
	case ENOTCONN:
		why = "the volatilefs daemon is gone";
		break;
	}
	if (why)
		fprintf(stderr, "%s: %s: %s: %s (%s)\n", prog, file, what, why, strerror(err));
	else
		fprintf(stderr, "%s: %s: %s: %s\n", prog, file, what, strerror(err));
	return 1;
}

/*
 * A user.volatile.* name of the mount root failed on MNT with err.
 * ENODATA (a volatilefs directory that is not the root, or a file system
 * with xattrs) and ENOTSUP (one without) mean the same to the user.
 */
static int fail_root(const char *mnt, const char *what, int err)
{
	if (err == ENODATA || err == ENOTSUP) {
		fprintf(stderr, "%s: %s: %s: not the root of a volatilefs mount\n", prog, mnt,
			what);
		return 1;
	}
	if (err == EPERM) {
		fprintf(stderr, "%s: %s: %s: %s (needs root or the user who mounted)\n", prog,
			mnt, what, strerror(err));
		return 1;
	}
	return fail(mnt, what, err);
}

/*
 * MNT is the root of a volatilefs mount: the only node with stats.  Asked
 * before setting a root-only name, since on another file system with user
 * xattrs (ext4, tmpfs) the set would succeed and store a plain attribute.
 */
static int check_root(const char *mnt, const char *what)
{
	if (getxattr(mnt, "user.volatile.stats", NULL, 0) >= 0)
		return 0;
	return fail_root(mnt, what, errno);
}

/*
 * Open FILE, a regular file, with flags (O_RDONLY or O_WRONLY): the
 * descriptor, or -1 after a message.  Anything else is refused before it
 * is opened, so that a FIFO cannot block us; O_NONBLOCK covers a FIFO put
 * in its place meanwhile, and fstat checks what was opened.
 */
static int open_regular(const char *file, int flags)
{
	struct stat st;
	int fd;

	if (stat(file, &st) != 0) {
		fail(file, "open", errno);
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		fd = open(file, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			fail(file, "open", errno);
			return -1;
		}
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			return fd;
		close(fd);
	}
	fprintf(stderr, "%s: %s: not a regular file (volatile ranges belong to regular files)\n",
		prog, file);
	return -1;
}

static const struct {
	const char *name, *args, *help;
} commands[] = {
	{ "mark", "FILE RANGE... [--age] [--priority N]",
	  "Mark each RANGE of FILE volatile, as one unit each: the daemon may purge\n"
	  "it whole when over its memory limit.  --priority N (0..7, default 3):\n"
	  "lower priorities are purged first; --age: before others of the same\n"
	  "priority.  FILE must be writable." },
	{ "unmark", "FILE RANGE...",
	  "Make the RANGEs of FILE non-volatile again and print\n"
	  "'bytes=N purged=0|1': how many bytes were volatile, and whether any byte\n"
	  "of the ranges had been purged (exit status 3 then).  FILE must be writable." },
	{ "status", "FILE",
	  "Show FILE's volatile units and purged extents as a table." },
	{ "stats", "MOUNTPOINT",
	  "Show the mount's counters, with sizes in human units." },
	{ "purge", "MOUNTPOINT all|SIZE",
	  "Purge every volatile unit of the mount (all), or whole units in purge\n"
	  "order until at least SIZE bytes were freed.  Needs root or the user\n"
	  "who mounted." },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: %s COMMAND ARGS...\n\ncommands:\n", prog);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %s %s\n", commands[i].name, commands[i].args);
	fprintf(out, "\nRANGE: OFFSET:LENGTH (bytes, or with K, M, G, T; LENGTH 0 = to the end\n"
		     "of the file, as it grows), or 'all'.  OFFSET must be a multiple of 4096.\n"
		     "'%s COMMAND --help' describes one command.\n", prog);
}

static void command_help(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(commands[i].name, name) == 0) {
			printf("usage: %s %s %s\n\n%s\n", prog, name, commands[i].args,
			       commands[i].help);
			exit(0);
		}
	}
}

static int has_help(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

/* One RANGE argument, with the xattr grammar's rules. */
static int parse_range(const char *arg, struct vrange *r)
{
	struct vrange_list l;
	int ret = vgrammar_parse_ranges(arg, strlen(arg), false, &l);

	if (ret)
		return ret;
	if (l.n != 1) {
		vrange_list_free(&l);
		return -EINVAL;
	}
	*r = l.v[0];
	vrange_list_free(&l);
	return 0;
}

static struct vrange *parse_ranges(const char *file, int argc, char **argv)
{
	struct vrange *r;

	if (argc < 1)
		die_usage_file(file, "no RANGE given", NULL);
	r = calloc((size_t)argc, sizeof(*r));
	if (!r) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	for (int i = 0; i < argc; i++)
		if (parse_range(argv[i], &r[i]))
			die_usage_file(file, "bad RANGE (OFFSET:LENGTH with OFFSET a multiple "
				       "of 4096, or all)", argv[i]);
	return r;
}

static int cmd_mark(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "age", no_argument, NULL, 'a' },
		{ "priority", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file, *bad_prio = NULL, *bad_opt = NULL;
	unsigned flags = 0;
	struct vrange *r;
	int c, fd, ret = 0;

	/*
	 * Options may also follow the ranges: GNU getopt permutes them.  So
	 * FILE is known only at the end, and a bad option is reported then,
	 * with the file it was meant for.
	 */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ap:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			flags |= VOLATILEFS_AGE;
			break;
		case 'p':
			if (strlen(optarg) != 1 || optarg[0] < '0' || optarg[0] > '7')
				bad_prio = optarg;
			else
				flags |= VOLATILEFS_PRIORITY(optarg[0] - '0');
			break;
		default:
			if (!bad_opt)
				bad_opt = argv[optind - 1];
			break;
		}
	}
	if (optind >= argc)
		die_usage("mark: no FILE given", NULL);
	file = argv[optind];
	if (bad_opt)
		die_usage_file(file, "mark: unknown option, or --priority without N", bad_opt);
	if (bad_prio)
		die_usage_file(file, "--priority takes 0 to 7", bad_prio);
	r = parse_ranges(file, argc - optind - 1, argv + optind + 1);
	fd = open_regular(file, O_WRONLY);
	if (fd < 0) {
		free(r);
		return 1;
	}
	for (int i = 0; i < argc - optind - 1 && !ret; i++)
		if (volatilefs_mark(fd, r[i].offset, r[i].length, flags) != 0)
			ret = fail(file, "mark", errno);
	close(fd);
	free(r);
	return ret;
}

static int cmd_unmark(int argc, char **argv)
{
	uint64_t total = 0;
	int any = 0, fd, ret = 0;
	const char *file;
	struct vrange *r;

	if (argc < 2)
		die_usage("unmark: no FILE given", NULL);
	file = argv[1];
	r = parse_ranges(file, argc - 2, argv + 2);
	fd = open_regular(file, O_WRONLY);
	if (fd < 0) {
		free(r);
		return 1;
	}
	for (int i = 0; i < argc - 2; i++) {
		uint64_t bytes;
		int purged;

		if (volatilefs_unmark(fd, r[i].offset, r[i].length, &bytes, &purged) != 0) {
			ret = fail(file, "unmark", errno);
			break;
		}
		total += bytes;
		any |= purged;
	}
	close(fd);
	free(r);
	if (ret)
		return ret;
	printf("bytes=%" PRIu64 " purged=%d\n", total, any);
	return any ? EXIT_PURGED : 0;
}

/* "1.5 MiB" style, exact bytes below 1 KiB. */
static const char *human(uint64_t v, char *buf, size_t n)
{
	static const char *units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(buf, n, "%" PRIu64 " B", v);
		return buf;
	}
	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", d, units[u]);
	return buf;
}

/* The value of a user.volatile.* attribute, NUL-terminated; NULL with errno. */
static char *get_value(const char *path, const char *name)
{
	char *buf = NULL;

	for (;;) {
		ssize_t len = getxattr(path, name, NULL, 0);
		char *p;

		if (len < 0)
			break;
		p = realloc(buf, (size_t)len + 1);
		if (!p) {
			errno = ENOMEM;
			break;
		}
		buf = p;
		len = getxattr(path, name, buf, (size_t)len);
		if (len >= 0) {
			buf[len] = '\0';
			return buf;
		}
		if (errno != ERANGE) /* grew between the calls: again */
			break;
	}
	{
		int err = errno;

		free(buf);
		errno = err;
	}
	return NULL;
}

static int cmd_status(int argc, char **argv)
{
	struct volatilefs_extent ext[VOLATILEFS_PURGED_BATCH];
	char hb[32], hb2[32], *ranges, *line, *save = NULL;
	uint64_t next = 0;
	const char *file;
	struct stat st;
	size_t count;
	int fd;

	if (argc != 2)
		die_usage("status takes one FILE", NULL);
	file = argv[1];
	fd = open_regular(file, O_RDONLY);
	if (fd < 0)
		return 1;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return fail(file, "stat", errno);
	}
	ranges = get_value(file, "user.volatile.ranges");
	if (!ranges) {
		/* A regular file without the name: not on volatilefs. */
		int err = errno == ENODATA || errno == ENOTSUP ? ENOTTY : errno;

		close(fd);
		return fail(file, "units", err);
	}
	printf("%s: size %s (%jd bytes)\n\nunits:\n", file,
	       human((uint64_t)st.st_size, hb, sizeof(hb)), (intmax_t)st.st_size);
	printf("  %-20s %-20s %-9s %-8s %s\n", "OFFSET", "LENGTH", "STATE", "PRIORITY", "AGE");
	if (!*ranges)
		printf("  (none)\n");
	for (line = strtok_r(ranges, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t off, len;
		char state[16];
		unsigned prio;

		if (sscanf(line, "%" SCNu64 ":%" SCNu64 " %15s priority=%u", &off, &len, state,
			   &prio) != 4)
			continue;
		printf("  %-20" PRIu64 " %-20s %-9s %-8u %s\n", off,
		       len ? human(len, hb, sizeof(hb)) : "to end of file", state, prio,
		       strstr(line, " age") ? "yes" : "");
	}
	free(ranges);
	printf("\npurged extents:\n  %-20s %s\n", "OFFSET", "LENGTH");
	for (;;) {
		if (volatilefs_purged(fd, next, 0, ext, VOLATILEFS_PURGED_BATCH, &count) != 0) {
			int err = errno;

			close(fd);
			return fail(file, "purged extents", err);
		}
		if (count == 0 && next == 0)
			printf("  (none)\n");
		if (count == 0)
			break;
		for (size_t i = 0; i < count && i < VOLATILEFS_PURGED_BATCH; i++)
			printf("  %-20" PRIu64 " %s (%" PRIu64 " bytes)\n", ext[i].offset,
			       human(ext[i].length, hb2, sizeof(hb2)), ext[i].length);
		if (count <= VOLATILEFS_PURGED_BATCH)
			break;
		next = ext[VOLATILEFS_PURGED_BATCH - 1].offset + ext[VOLATILEFS_PURGED_BATCH - 1].length;
	}
	close(fd);
	return 0;
}

static int is_byte_key(const char *key)
{
	return strcmp(key, "memory_limit") == 0 || strcmp(key, "memory_low") == 0 ||
	       strcmp(key, "rss") == 0 || strstr(key, "bytes") != NULL;
}

static int cmd_stats(int argc, char **argv)
{
	char *stats, *line, *save = NULL, hb[32];
	const char *mnt;

	if (argc != 2)
		die_usage("stats takes one MOUNTPOINT", NULL);
	mnt = argv[1];
	stats = get_value(mnt, "user.volatile.stats");
	if (!stats)
		return fail_root(mnt, "stats", errno);
	for (line = strtok_r(stats, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		uint64_t v;

		if (!eq)
			continue;
		*eq = '\0';
		/* Words (pressure_sources) are shown as they are. */
		if (eq[1] < '0' || eq[1] > '9') {
			printf("%-22s %12s\n", line, eq + 1);
			continue;
		}
		v = strtoull(eq + 1, NULL, 10);
		if (is_byte_key(line))
			printf("%-22s %12s  (%" PRIu64 " bytes)\n", line, human(v, hb, sizeof(hb)), v);
		else
			printf("%-22s %12" PRIu64 "\n", line, v);
	}
	free(stats);
	return 0;
}

static int cmd_purge(int argc, char **argv)
{
	const char *mnt, *what;
	uint64_t size;

	if (argc != 3)
		die_usage("purge takes MOUNTPOINT and all or SIZE", NULL);
	mnt = argv[1];
	what = argv[2];
	if (strcmp(what, "all") != 0 && opts_parse_size(what, &size) != 0)
		die_usage_file(mnt, "purge: not all or a SIZE", what);
	if (check_root(mnt, "purge"))
		return 1;
	if (setxattr(mnt, "user.volatile.purge", what, strlen(what), 0) != 0)
		return fail_root(mnt, "purge", errno);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("volatilectl version %s\n", VOLATILEFS_VERSION);
		return 0;
	}
	if (has_help(argc - 2, argv + 2))
		command_help(cmd);
	if (strcmp(cmd, "mark") == 0)
		return cmd_mark(argc - 1, argv + 1);
	if (strcmp(cmd, "unmark") == 0)
		return cmd_unmark(argc - 1, argv + 1);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc - 1, argv + 1);
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(argc - 1, argv + 1);
	if (strcmp(cmd, "purge") == 0)
		return cmd_purge(argc - 1, argv + 1);
	die_usage("unknown command", cmd);
	return EXIT_USAGE;
}
