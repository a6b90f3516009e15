/*
 * fuzz_opts.c - libFuzzer harness for the mount options (opts.c, DESIGN
 * section 2): opts_parse() over an argument vector built from the input,
 * through libfuse's own fuse_opt_parse().
 *
 * The first byte picks one of two modes:
 *
 *   raw (odd first byte): the rest of the input, split on NUL bytes, is
 *   argv[1..] as given ("-o", "memory_limit=1M,mode=0755", "/mnt", ...).
 *   Checked: opts_parse() returns 0 or -EINVAL; a failure comes with a
 *   message, a success with none; on success memory_limit and memory_low
 *   are not zero when given and memory_low <= memory_limit when both
 *   are, mode <= 07777, ids below (uid_t)-1, auto 0..2; none of our
 *   options and no fstab noise is left in the -o list handed on to
 *   libfuse; everything is freed (LeakSanitizer).
 *
 *   structured (even first byte): each NUL-separated piece is one option,
 *   its first byte choosing the name (ours, fstab noise, or a standard
 *   FUSE option) and the rest its value, escaped for fuse_opt so it
 *   arrives verbatim; the options are spread over "-o LIST" and "-oLIST"
 *   arguments, with a mountpoint last.  The harness knows what it wrote,
 *   so it also checks the plumbing: the last of a repeated option wins,
 *   every bad value is refused, the values land in struct opts, the
 *   noise is dropped and the other options reach libfuse in order.
 *
 * A disagreement is reported on stderr and abort()s (libFuzzer's crash).
 */
#include <errno.h>
#include <fuse_log.h>
#include <fuse_opt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

#define MAX_ARGS 64

static const uint8_t *in_data;
static size_t in_size;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\nfuzz_opts: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ninput (%zu bytes): \"", in_size);
	for (size_t i = 0; i < in_size && i < 512; i++) {
		if (in_data[i] >= 0x20 && in_data[i] < 0x7f && in_data[i] != '"' &&
		    in_data[i] != '\\')
			fputc(in_data[i], stderr);
		else
			fprintf(stderr, "\\x%02x", in_data[i]);
	}
	fprintf(stderr, "\"\n");
	abort();
}

/* fuse_opt reports "missing argument after -o" through fuse_log: keep the run quiet. */
static void quiet_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuse_set_log_func(quiet_log);
	return 0;
}

static const char *const ours[] = { "memory_limit=", "memory_low=", "mode=", "uid=", "gid=",
				     "purged_read=", "write_policy=", "auto=", "pressure=",
				     "pressure_headroom=" };
#define NOURS (sizeof(ours) / sizeof(ours[0]))

static bool is_noise(const char *o)
{
	static const char *const words[] = { "_netdev", "nofail", "noauto", "auto", "user",
					     "users", "nouser", "owner", "group", "defaults" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(o, words[i]) == 0)
			return true;
	return strncmp(o, "x-", 2) == 0 || strncmp(o, "comment=", 8) == 0;
}

static int ours_index(const char *o)
{
	for (size_t i = 0; i < NOURS; i++)
		if (strncmp(o, ours[i], strlen(ours[i])) == 0)
			return (int)i;
	return -1;
}

/*
 * Split an -o list as handed on by fuse_opt (',' separates, '\' escapes
 * the next character) into at most max options in buf.  The count.
 */
static size_t split_list(const char *list, char *buf, size_t bufsz, const char **out,
			 size_t max)
{
	size_t n = 0, d = 0;

	out[n++] = buf;
	for (const char *s = list; *s && d + 1 < bufsz; s++) {
		if (*s == '\\' && s[1]) {
			buf[d++] = *++s;
		} else if (*s == ',') {
			buf[d++] = '\0';
			if (n == max)
				break;
			out[n++] = buf + d;
		} else {
			buf[d++] = *s;
		}
	}
	buf[d] = '\0';
	return n;
}

/*
 * The -o lists of what opts_parse() left for libfuse (fuse_opt gathers
 * them into one "-o LIST" right after argv[0]), split into options.
 */
static size_t left_options(const struct fuse_args *args, char *buf, size_t bufsz,
			   const char **out, size_t max)
{
	size_t n = 0, used = 0;

	for (int i = 1; i < args->argc; i++) {
		if (strcmp(args->argv[i], "--") == 0)
			break;
		if (strcmp(args->argv[i], "-o") == 0 && i + 1 < args->argc) {
			size_t k = split_list(args->argv[i + 1], buf + used, bufsz - used, out + n,
					      max - n);

			n += k;
			used += strlen(args->argv[i + 1]) + 1;
			i++;
			if (n == max || used >= bufsz)
				break;
		}
	}
	return n;
}

static void check_common(int ret, const struct opts *o, const char *err, size_t errlen,
			 const struct fuse_args *args, const char *memory_low_given)
{
	static char buf[1 << 16];
	const char *left[256];
	size_t n;

	if (ret != 0 && ret != -EINVAL)
		fail("opts_parse returned %d", ret);
	if (memchr(err, '\0', errlen) == NULL)
		fail("the error message is not terminated");
	if (ret && !err[0])
		fail("opts_parse failed without a message");
	if (ret)
		return;
	if (err[0])
		fail("opts_parse succeeded with a message: %s", err);
	if (o->memory_low && o->memory_limit && o->memory_low > o->memory_limit)
		fail("accepted memory_low %" PRIu64 " above memory_limit %" PRIu64, o->memory_low,
		     o->memory_limit);
	if (memory_low_given && !o->memory_low)
		fail("accepted memory_low=%s as zero", memory_low_given);
	if (o->mode_set && o->mode > 07777)
		fail("accepted mode %o", (unsigned)o->mode);
	if ((o->uid_set && o->uid == (uid_t)-1) || (o->gid_set && o->gid == (gid_t)-1))
		fail("accepted the id -1");
	if (o->auto_mode < 0 || o->auto_mode > 2)
		fail("auto_mode %d", o->auto_mode);
	n = left_options(args, buf, sizeof(buf), left, 256);
	for (size_t i = 0; i < n; i++) {
		if (ours_index(left[i]) >= 0)
			fail("our option \"%s\" was left for libfuse", left[i]);
		if (is_noise(left[i]))
			fail("fstab noise \"%s\" was left for libfuse", left[i]);
	}
}

static void run_raw(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[MAX_ARGS + 2];
	struct fuse_args args;
	struct opts o;
	char err[256];
	int argc = 1, ret;

	if (!copy)
		return;
	memcpy(copy, data, size);
	copy[size] = '\0';
	argv[0] = "volatilefs";
	for (size_t i = 0; i < size && argc <= MAX_ARGS; i += strlen(copy + i) + 1)
		argv[argc++] = copy + i;
	argv[argc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	memset(err, 'x', sizeof(err));
	ret = opts_parse(&args, &o, err, sizeof(err));
	check_common(ret, &o, err, sizeof(err), &args, NULL);
	fuse_opt_free_args(&args);
	free(copy);
}

/* Names of the structured mode: ours, then noise, then options libfuse keeps. */
static const char *const names[] = {
	"memory_limit=", "memory_low=", "mode=", "uid=", "gid=", "purged_read=",
	"write_policy=", "auto=", "pressure=", "pressure_headroom=",
	"_netdev", "nofail", "defaults", "auto", "user", "x-systemd.", "comment=",
	"allow_other", "fsname=", "subtype=", "default_permissions", "max_read=",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

/* Append s to d escaped for fuse_opt's option lists. */
static size_t put_escaped(char *d, const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == ',' || s[i] == '\\')
			d[k++] = '\\';
		d[k++] = s[i];
	}
	return k;
}

static void run_structured(const uint8_t *data, size_t size)
{
	/* Each input byte becomes at most a name (< 24 bytes) or two escaped bytes. */
	size_t cap = 24 * size + 64, nkept = 0, nargs = 0;
	char *pool = malloc(cap), *p = pool, *argv[MAX_ARGS + 4];
	const char *want[NOURS] = { 0 };
	const char *kept[MAX_ARGS * 4];
	char *plain = malloc(cap), *q = plain;
	struct fuse_args args;
	struct opts o, exp;
	char err[256];
	int ret, wret = 0;
	size_t i = 0;

	if (!pool || !plain)
		goto out;
	argv[nargs++] = "volatilefs";
	while (i + 1 < size && nargs + 2 < MAX_ARGS) {
		/* One argument: 1..4 options, as "-o LIST" or "-oLIST". */
		uint8_t how = data[i++];
		unsigned nopt = 1 + (how & 3);
		char *list = p;

		if (how & 4) {
			argv[nargs++] = "-o";
		} else {
			*p++ = '-';
			*p++ = 'o';
		}
		for (unsigned k = 0; k < nopt && i < size; k++) {
			const char *name = names[data[i++] % NNAMES];
			size_t vlen = 0, nl = strlen(name);
			const char *val = (const char *)data + i;
			int idx;

			while (i + vlen < size && data[i + vlen] != '\0')
				vlen++;
			i += vlen + (i + vlen < size);
			if (k)
				*p++ = ',';
			memcpy(p, name, nl);
			p += nl;
			/* Values only for names that take one. */
			if (name[nl - 1] == '=' || name[nl - 1] == '.')
				p += put_escaped(p, val, vlen);
			else
				vlen = 0;
			/* The option as fuse_opt will pass it on, unescaped. */
			memcpy(q, name, nl);
			memcpy(q + nl, val, vlen);
			q[nl + vlen] = '\0';
			idx = ours_index(q);
			if (idx >= 0)
				want[idx] = q + nl;
			else if (!is_noise(q) && nkept < MAX_ARGS * 4)
				kept[nkept++] = q;
			q += nl + vlen + 1;
		}
		*p++ = '\0';
		argv[nargs++] = list;
	}
	argv[nargs++] = "/mnt";
	argv[nargs] = NULL;

	/* What opts_parse() must make of it, from the value parsers it uses. */
	memset(&exp, 0, sizeof(exp));
	if (want[0] && (opts_parse_size(want[0], &exp.memory_limit) || !exp.memory_limit))
		wret = -EINVAL;
	if (want[1] && (opts_parse_size(want[1], &exp.memory_low) || !exp.memory_low))
		wret = -EINVAL;
	if (want[2] && opts_parse_mode(want[2], &exp.mode))
		wret = -EINVAL;
	exp.mode_set = want[2] != NULL;
	if (want[3] && opts_parse_id(want[3], &exp.uid))
		wret = -EINVAL;
	exp.uid_set = want[3] != NULL;
	if (want[4] && opts_parse_id(want[4], &exp.gid))
		wret = -EINVAL;
	exp.gid_set = want[4] != NULL;
	if (want[5]) {
		exp.purged_eio = strcmp(want[5], "eio") == 0;
		if (!exp.purged_eio && strcmp(want[5], "zero"))
			wret = -EINVAL;
	}
	if (want[6]) {
		exp.write_unmark = strcmp(want[6], "unmark") == 0;
		if (!exp.write_unmark && strcmp(want[6], "keep"))
			wret = -EINVAL;
	}
	if (want[7]) {
		exp.auto_mode = !strcmp(want[7], "mark") ? 1 : !strcmp(want[7], "unlink") ? 2 : 0;
		if (!exp.auto_mode && strcmp(want[7], "off"))
			wret = -EINVAL;
	}
	if (want[8]) {
		exp.pressure_off = strcmp(want[8], "off") == 0;
		if (!exp.pressure_off && strcmp(want[8], "on"))
			wret = -EINVAL;
	}
	if (want[9] && (opts_parse_size(want[9], &exp.pressure_headroom) ||
			!exp.pressure_headroom))
		wret = -EINVAL;
	if (!wret && exp.memory_low && exp.memory_limit && exp.memory_low > exp.memory_limit)
		wret = -EINVAL;

	args = (struct fuse_args)FUSE_ARGS_INIT((int)nargs, argv);
	memset(err, 'x', sizeof(err));
	ret = opts_parse(&args, &o, err, sizeof(err));
	check_common(ret, &o, err, sizeof(err), &args, want[1]);
	if (ret != wret)
		fail("opts_parse returned %d, expected %d (%s)", ret, wret, err);
	if (!ret) {
		static char buf[1 << 16];
		const char *left[MAX_ARGS * 4];
		size_t n;

		if (o.memory_limit != exp.memory_limit || o.memory_low != exp.memory_low ||
		    o.mode_set != exp.mode_set || (o.mode_set && o.mode != exp.mode) ||
		    o.uid_set != exp.uid_set || (o.uid_set && o.uid != exp.uid) ||
		    o.gid_set != exp.gid_set || (o.gid_set && o.gid != exp.gid) ||
		    o.purged_eio != exp.purged_eio || o.write_unmark != exp.write_unmark ||
		    o.auto_mode != exp.auto_mode || o.pressure_off != exp.pressure_off ||
		    o.pressure_headroom != exp.pressure_headroom)
			fail("opts_parse parsed the options into other values than given");
		n = left_options(&args, buf, sizeof(buf), left, MAX_ARGS * 4);
		if (nkept == 0)
			n = 0; /* no "-o" at all then: an empty list is not an option */
		if (n != nkept)
			fail("%zu options left for libfuse, expected %zu", n, nkept);
		for (size_t k = 0; k < n; k++)
			if (strcmp(left[k], kept[k]))
				fail("option %zu left for libfuse is \"%s\", expected \"%s\"", k,
				     left[k], kept[k]);
		if (strcmp(args.argv[args.argc - 1], "/mnt"))
			fail("the mountpoint is not passed on last");
	}
	fuse_opt_free_args(&args);
out:
	free(pool);
	free(plain);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	in_data = data;
	in_size = size;
	if (data[0] & 1)
		run_raw(data + 1, size - 1);
	else
		run_structured(data + 1, size - 1);
	return 0;
}
