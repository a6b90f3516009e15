/*
 * volatilectl - volatile ranges from the command line (DESIGN section 7),
 * a thin layer over libvolatilefs and the user.volatile.* attributes.
 *
 *   $ volatilectl mark glyphs.atlas 0:64K 1M:1M --priority 1
 *   $ volatilectl purge /cache all
 *   $ volatilectl unmark glyphs.atlas 0:64K
 *   bytes=65536 purged=1
 *   $ echo $?
 *   3
 *   $ volatilectl status glyphs.atlas
 *   $ volatilectl watch --count 2 /cache 5
 *   ------------- memory -------------- ---- purged ----- --- pressure ----
 *      limit      rss     data volatile    units    bytes    units    bytes
 *       256M     5.1M     3.0M     2.0M        2     1.1M        0        0
 *       256M     4.1M     2.0M     1.0M        1     1.0M        0        0
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
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
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
	{ "watch", "MOUNTPOINT [SECONDS] [--count N]",
	  "Print a line of the mount's figures every SECONDS (default 1, fractions\n"
	  "allowed), as vmstat does: the limit, RSS, data and volatile bytes held,\n"
	  "then the units and bytes purged in the interval, and those of them\n"
	  "purged for memory pressure (the first line: since the mount), and files\n"
	  "unlinked by purges when a directory has auto=unlink.  The header comes\n"
	  "again every screen.  --count N: stop after N lines (exit status 0)." },
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

/*
 * watch: one line per interval, as vmstat(8).  Each line reads
 * user.volatile.stats once; sizes held are shown as they are now,
 * counters as their growth since the line before (the first line: since
 * the mount, as vmstat's first line counts since boot).
 */

#define WATCH_PAGE 20 /* lines between headers when stdout is not a terminal */

struct sample {
	uint64_t limit, rss, data, vol;
	uint64_t purges, purged, ppurges, pbytes, unlinked;
	bool has_pressure, has_unlinked;
};

static volatile sig_atomic_t watch_stop;

static void watch_on_signal(int sig)
{
	watch_stop = sig;
}

/* "256M", "1.5G", "512B", "0": at most 6 characters. */
static const char *hsize(uint64_t v, char *buf, size_t n)
{
	static const char units[] = "KMGTPE";
	double d = (double)v;
	int u = -1;

	if (v == 0)
		snprintf(buf, n, "0");
	else if (v < 1024) {
		snprintf(buf, n, "%" PRIu64 "B", v);
	} else {
		while (d >= 1024 && u < 5) {
			d /= 1024;
			u++;
		}
		snprintf(buf, n, d < 9.95 ? "%.1f%c" : "%.0f%c", d, units[u]);
	}
	return buf;
}

/* The figures of MNT's user.volatile.stats: 0, or -errno. */
static int watch_sample(const char *mnt, struct sample *s)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "memory_limit", offsetof(struct sample, limit) },
		{ "rss", offsetof(struct sample, rss) },
		{ "data_bytes", offsetof(struct sample, data) },
		{ "volatile_bytes", offsetof(struct sample, vol) },
		{ "purges_total", offsetof(struct sample, purges) },
		{ "purged_bytes_total", offsetof(struct sample, purged) },
		{ "pressure_purges_total", offsetof(struct sample, ppurges) },
		{ "pressure_bytes_total", offsetof(struct sample, pbytes) },
		{ "files_unlinked_total", offsetof(struct sample, unlinked) },
	};
	char *stats = get_value(mnt, "user.volatile.stats"), *line, *save = NULL;
	unsigned seen = 0;

	if (!stats)
		return -errno;
	memset(s, 0, sizeof(*s));
	for (line = strtok_r(stats, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = '\0';
		for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (strcmp(line, keys[i].key) == 0) {
				*(uint64_t *)((char *)s + keys[i].off) = strtoull(eq + 1, NULL, 10);
				seen |= 1u << i;
			}
		}
	}
	free(stats);
	if ((seen & 0x3f) != 0x3f) /* the keys of DESIGN section 5 */
		return -EPROTO;
	s->has_pressure = (seen & 0xc0) == 0xc0;
	s->has_unlinked = seen & 0x100;
	return 0;
}

/* A header line of groups: LABEL centred in dashes over ncols columns. */
static void watch_group(const char *label, int ncols, bool last)
{
	int width = ncols * 9 - 1, len = (int)strlen(label) + 2, left = (width - len) / 2;

	printf("%.*s %s %.*s%s", left, "--------------------------------------", label,
	       width - len - left, "--------------------------------------", last ? "\n" : " ");
}

static void watch_header(bool unlinked)
{
	watch_group("memory", 4, false);
	watch_group("purged", 2, false);
	watch_group("pressure", 2, !unlinked);
	if (unlinked)
		printf("unlinked\n");
	printf("%8s %8s %8s %8s %8s %8s %8s %8s", "limit", "rss", "data", "volatile", "units",
	       "bytes", "units", "bytes");
	printf(unlinked ? " %8s\n" : "\n", "files");
}

/* b - a for a counter, 0 if it went back (it never should). */
static uint64_t grew(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

static void watch_line(const struct sample *p, const struct sample *c)
{
	char b[8][16];

	printf("%8s %8s %8s %8s %8" PRIu64 " %8s", hsize(c->limit, b[0], 16),
	       hsize(c->rss, b[1], 16), hsize(c->data, b[2], 16), hsize(c->vol, b[3], 16),
	       grew(p->purges, c->purges), hsize(grew(p->purged, c->purged), b[4], 16));
	if (c->has_pressure)
		printf(" %8" PRIu64 " %8s", grew(p->ppurges, c->ppurges),
		       hsize(grew(p->pbytes, c->pbytes), b[5], 16));
	else
		printf(" %8s %8s", "-", "-");
	if (c->has_unlinked)
		printf(" %8" PRIu64, grew(p->unlinked, c->unlinked));
	printf("\n");
}

/* Lines between headers: a screen on a terminal, less the header. */
static unsigned watch_page(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 3)
		return ws.ws_row - 2u;
	return WATCH_PAGE;
}

/* SIGINT and SIGTERM end the loop, unless ignored when we started (nohup, &). */
static void watch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct sigaction sa = { .sa_handler = watch_on_signal }; /* no SA_RESTART */

	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;

		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
	/* A reader that goes away (| head) ends us through EPIPE, quietly. */
	signal(SIGPIPE, SIG_IGN);
}

/* Ended by a signal: die of it, so that a calling shell knows (exit 130 for SIGINT). */
static int watch_die(void)
{
	int sig = watch_stop;

	fflush(stdout);
	signal(sig, SIG_DFL);
	raise(sig);
	return 128 + sig;
}

static void timespec_add(struct timespec *t, double secs)
{
	time_t whole = (time_t)secs; /* secs > 0: truncation is floor */

	t->tv_sec += whole;
	t->tv_nsec += (long)((secs - (double)whole) * 1e9);
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static int cmd_watch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	const char *mnt, *bad_count = NULL, *bad_opt = NULL;
	struct sample prev = { 0 }, cur;
	unsigned long long count = 0;
	unsigned long long lines = 0;
	unsigned since_header = 0, page = watch_page();
	bool unlinked_shown = false;
	struct timespec next, now;
	double secs = 1;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'c':
			errno = 0;
			count = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || count == 0 || optarg[0] == '-')
				bad_count = optarg;
			break;
		default:
			if (!bad_opt)
				bad_opt = argv[optind - 1];
			break;
		}
	}
	if (optind >= argc)
		die_usage("watch: no MOUNTPOINT given", NULL);
	mnt = argv[optind];
	if (argc - optind > 2)
		die_usage_file(mnt, "watch takes MOUNTPOINT and SECONDS only", argv[optind + 2]);
	if (bad_opt)
		die_usage_file(mnt, "watch: unknown option, or --count without N", bad_opt);
	if (bad_count)
		die_usage_file(mnt, "--count takes a number of lines, 1 or more", bad_count);
	if (argc - optind == 2) {
		const char *arg = argv[optind + 1];
		char *end;

		errno = 0;
		secs = strtod(arg, &end);
		if (errno || end == arg || *end || !isfinite(secs) || secs < 0.001 ||
		    secs > 86400)
			die_usage_file(mnt, "SECONDS must be a number from 0.001 to 86400", arg);
	}

	watch_signals();
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		ret = watch_sample(mnt, &cur);
		if (watch_stop)
			return watch_die();
		if (ret == -EPROTO) {
			fprintf(stderr, "%s: %s: stats: the daemon's answer lacks the usual keys\n",
				prog, mnt);
			return 1;
		}
		if (ret)
			return fail_root(mnt, "stats", -ret);
		if (lines == 0 || since_header >= page || cur.has_unlinked != unlinked_shown) {
			watch_header(cur.has_unlinked);
			unlinked_shown = cur.has_unlinked;
			since_header = 0;
		}
		watch_line(&prev, &cur);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			if (errno == EPIPE)
				return 0;
			return fail("standard output", "write", errno);
		}
		prev = cur;
		since_header++;
		if (++lines == count)
			return 0;

		/* Absolute deadlines: the interval does not drift with the reads. */
		timespec_add(&next, secs);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now; /* a slow read: no burst of lines to catch up */
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			if (watch_stop)
				return watch_die();
	}
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
	if (strcmp(cmd, "watch") == 0)
		return cmd_watch(argc - 1, argv + 1);
	die_usage("unknown command", cmd);
	return EXIT_USAGE;
}
