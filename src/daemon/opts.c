/*
 * opts.c - mount option parsing; see opts.h.
 */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <fuse_opt.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int opts_parse_mode(const char *s, mode_t *out)
{
	unsigned long v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '7')
			return -EINVAL;
		v = v * 8 + (unsigned long)(*p - '0');
		if (v > 07777)
			return -EINVAL;
	}
	*out = (mode_t)v;
	return 0;
}

int opts_parse_id(const char *s, uint32_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v >= UINT32_MAX) /* (uid_t)-1 means "no change" to chown */
			return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

int opts_parse_passthrough(const char *s)
{
	if (strcmp(s, "auto") == 0)
		return OPTS_PT_AUTO;
	if (strcmp(s, "on") == 0)
		return OPTS_PT_ON;
	if (strcmp(s, "off") == 0)
		return OPTS_PT_OFF;
	return -EINVAL;
}

bool opts_list_has(const char *list, const char *item, size_t len)
{
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, item, len) == 0)
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

bool opts_asked(int argc, char *argv[], const char *opt)
{
	for (int i = 1; i < argc; i++) {
		const char *o = NULL;

		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			o = argv[++i];
		else if (strncmp(argv[i], "-o", 2) == 0)
			o = argv[i] + 2;
		if (o && opts_list_has(o, opt, strlen(opt)))
			return true;
	}
	return false;
}

struct raw_opts {
	char *memory_limit, *memory_low, *mode, *uid, *gid, *purged_read, *write_policy, *auto_;
	char *pressure, *pressure_headroom, *passthrough, *auto_unmount;
};

/*
 * Our options arrive as keys, not "%s" templates: libfuse's templates
 * overwrite the stored string when an option is repeated and leak the
 * first copy (found by tests/fuzz/fuzz_opts.c).  The key is the offset
 * of the field in struct raw_opts; the last value given wins.
 */
#define RAW(t, f) FUSE_OPT_KEY(t, (int)offsetof(struct raw_opts, f))
static const struct fuse_opt opt_table[] = {
	RAW("memory_limit=", memory_limit),
	RAW("memory_low=", memory_low),
	RAW("mode=", mode),
	RAW("uid=", uid),
	RAW("gid=", gid),
	RAW("purged_read=", purged_read),
	RAW("write_policy=", write_policy),
	RAW("auto=", auto_),
	RAW("pressure=", pressure),
	RAW("pressure_headroom=", pressure_headroom),
	RAW("passthrough=", passthrough),
	RAW("auto_unmount=", auto_unmount),
	FUSE_OPT_END
};

/*
 * fstab noise: options for mount(8), systemd and fstab readers that
 * reach us through mount.fuse3 and mean nothing to a FUSE daemon.
 */
static bool is_fstab_noise(const char *opt)
{
	static const char *const words[] = { "_netdev", "nofail", "noauto", "auto", "user",
					     "users", "nouser", "owner", "group", "defaults" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(opt, words[i]) == 0)
			return true;
	return strncmp(opt, "x-", 2) == 0 || strncmp(opt, "comment=", 8) == 0;
}

/*
 * Ours: store the value (after the '=') in its field.  fstab noise:
 * drop.  Anything else: keep for libfuse.
 */
static int keep_other(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	(void)outargs;
	if (key >= 0) {
		char **field = (char **)((char *)data + key);
		char *value = strdup(strchr(arg, '=') + 1);

		if (!value)
			return -1;
		free(*field);
		*field = value;
		return 0;
	}
	if (key == FUSE_OPT_KEY_OPT && is_fstab_noise(arg))
		return 0;
	return 1;
}

/* The first of the options given that a live mount cannot change (remount.h). */
static const char *first_fixed(const struct raw_opts *r)
{
	const struct {
		const char *name;
		const char *value;
	} fixed[] = {
		{ "memory_low", r->memory_low }, { "mode", r->mode }, { "uid", r->uid },
		{ "gid", r->gid }, { "purged_read", r->purged_read },
		{ "write_policy", r->write_policy }, { "auto", r->auto_ },
		{ "pressure", r->pressure }, { "pressure_headroom", r->pressure_headroom },
		{ "passthrough", r->passthrough }, { "auto_unmount", r->auto_unmount },
	};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fixed[i].value)
			return fixed[i].name;
	return NULL;
}

static int size_opt(const char *name, const char *val, uint64_t *out, char *err, size_t n)
{
	int ret = opts_parse_size(val, out);

	if (ret == -ERANGE)
		snprintf(err, n, "%s=%s: too large", name, val);
	else if (ret)
		snprintf(err, n, "%s=%s: not a size (bytes, or a number with K, M, G or T)",
			 name, val);
	else if (*out == 0) {
		snprintf(err, n, "%s=%s: must be greater than zero", name, val);
		ret = -EINVAL;
	}
	return ret ? -EINVAL : 0;
}

static int id_opt(const char *name, const char *val, uint32_t *out, char *err, size_t n)
{
	if (opts_parse_id(val, out) == 0)
		return 0;
	snprintf(err, n, "%s=%s: not a numeric id", name, val);
	return -EINVAL;
}

int opts_parse(struct fuse_args *args, struct opts *o, char *err, size_t errlen)
{
	struct raw_opts raw = { 0 };
	int ret = 0;

	memset(o, 0, sizeof(*o));
	o->passthrough = OPTS_PT_AUTO; /* DESIGN section 11 */
	err[0] = '\0';
	if (fuse_opt_parse(args, &raw, opt_table, keep_other) == -1) {
		snprintf(err, errlen, "cannot parse the options");
		ret = -EINVAL;
		goto out; /* values stored before the failure are ours to free */
	}
	if (raw.memory_limit) {
		ret = size_opt("memory_limit", raw.memory_limit, &o->memory_limit, err, errlen);
		if (ret)
			goto out;
	}
	if (raw.memory_low) {
		ret = size_opt("memory_low", raw.memory_low, &o->memory_low, err, errlen);
		if (ret)
			goto out;
	}
	if (raw.mode) {
		if (opts_parse_mode(raw.mode, &o->mode)) {
			snprintf(err, errlen, "mode=%s: not octal permission bits (at most 7777)",
				 raw.mode);
			ret = -EINVAL;
			goto out;
		}
		o->mode_set = true;
	}
	if (raw.uid) {
		ret = id_opt("uid", raw.uid, &o->uid, err, errlen);
		if (ret)
			goto out;
		o->uid_set = true;
	}
	if (raw.gid) {
		ret = id_opt("gid", raw.gid, &o->gid, err, errlen);
		if (ret)
			goto out;
		o->gid_set = true;
	}
	if (raw.purged_read) {
		if (strcmp(raw.purged_read, "eio") == 0) {
			o->purged_eio = true;
		} else if (strcmp(raw.purged_read, "zero") != 0) {
			snprintf(err, errlen, "purged_read=%s: must be zero or eio", raw.purged_read);
			ret = -EINVAL;
			goto out;
		}
	}
	if (raw.write_policy) {
		if (strcmp(raw.write_policy, "unmark") == 0) {
			o->write_unmark = true;
		} else if (strcmp(raw.write_policy, "keep") != 0) {
			snprintf(err, errlen, "write_policy=%s: must be keep or unmark",
				 raw.write_policy);
			ret = -EINVAL;
			goto out;
		}
	}
	if (raw.auto_) {
		if (strcmp(raw.auto_, "off") == 0) {
			o->auto_mode = 0;
		} else if (strcmp(raw.auto_, "mark") == 0) {
			o->auto_mode = 1;
		} else if (strcmp(raw.auto_, "unlink") == 0) {
			o->auto_mode = 2;
		} else {
			snprintf(err, errlen, "auto=%s: must be off, mark or unlink", raw.auto_);
			ret = -EINVAL;
			goto out;
		}
	}
	if (raw.pressure) {
		if (strcmp(raw.pressure, "off") == 0) {
			o->pressure_off = true;
		} else if (strcmp(raw.pressure, "on") != 0) {
			snprintf(err, errlen, "pressure=%s: must be on or off", raw.pressure);
			ret = -EINVAL;
			goto out;
		}
	}
	if (raw.auto_unmount) {
		if (strcmp(raw.auto_unmount, "off") == 0) {
			o->auto_unmount_off = true;
		} else if (strcmp(raw.auto_unmount, "on") != 0) {
			snprintf(err, errlen, "auto_unmount=%s: must be on or off", raw.auto_unmount);
			ret = -EINVAL;
			goto out;
		}
	}
	if (raw.passthrough) {
		o->passthrough = opts_parse_passthrough(raw.passthrough);
		o->passthrough_set = true;
		if (o->passthrough < 0) {
			snprintf(err, errlen, "passthrough=%s: must be auto, on or off",
				 raw.passthrough);
			ret = -EINVAL;
			goto out;
		}
	}
	if (raw.pressure_headroom) {
		ret = size_opt("pressure_headroom", raw.pressure_headroom, &o->pressure_headroom,
			       err, errlen);
		if (ret)
			goto out;
	}
	if (o->memory_low && o->memory_limit && o->memory_low > o->memory_limit) {
		snprintf(err, errlen, "memory_low=%s is above memory_limit=%s", raw.memory_low,
			 raw.memory_limit);
		ret = -EINVAL;
	}
	if (!ret)
		o->fixed_given = first_fixed(&raw);
out:
	free(raw.memory_limit);
	free(raw.memory_low);
	free(raw.mode);
	free(raw.uid);
	free(raw.gid);
	free(raw.purged_read);
	free(raw.write_policy);
	free(raw.auto_);
	free(raw.pressure);
	free(raw.pressure_headroom);
	free(raw.passthrough);
	free(raw.auto_unmount);
	return ret;
}
