/*
 * pressure.c - memory pressure from the cgroup and the machine; see pressure.h.
 */
#include "pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- decisions ---- */

uint64_t pressure_default_headroom(uint64_t tightest_limit)
{
	uint64_t h = tightest_limit == PRESSURE_NOLIMIT ? 0 : tightest_limit / 20;

	return h > PRESSURE_HEADROOM_MIN ? h : PRESSURE_HEADROOM_MIN;
}

uint64_t pressure_need_limit(uint64_t usage, uint64_t limit, uint64_t headroom)
{
	uint64_t thr;

	if (limit == PRESSURE_NOLIMIT)
		return 0;
	thr = limit > headroom ? limit - headroom : 0;
	return usage > thr ? usage - thr : 0;
}

uint64_t pressure_need_avail(uint64_t avail, uint64_t headroom)
{
	return avail < headroom ? headroom - avail : 0;
}

uint64_t pressure_step(uint64_t need, bool event, uint64_t volatile_bytes)
{
	uint64_t step = volatile_bytes / 8;

	if (!need && !event)
		return 0;
	if (step < need)
		step = need;
	return step ? step : 1;
}

/*
 * Shortage or churn.  What the cgroup holds in use is its usage less the
 * clean page cache the kernel can drop (dirty and writeback pages are
 * not droppable: the kernel must write them first).  That figure alone
 * tells a neighbour streaming a file through the cgroup (page cache
 * fills it, nothing needs our memory) from a program that needs memory
 * the cgroup does not have (anonymous memory, which without swap only
 * the OOM killer can take back): the first stays far under the limit,
 * the second crosses it.  A PSI stall or a memory.pressure_level event
 * cannot tell them apart (a stream stalls more than a hog that gets
 * killed), so an event purges a step only while the slack is under twice
 * the headroom.  The runs behind this rule:
 * bench/results/pressure-signals.md.
 */
uint64_t pressure_in_use(uint64_t usage, uint64_t clean)
{
	return usage > clean ? usage - clean : 0;
}

uint64_t pressure_slack(uint64_t in_use, uint64_t limit)
{
	if (limit == PRESSURE_NOLIMIT)
		return PRESSURE_NOLIMIT;
	return limit > in_use ? limit - in_use : 0;
}

bool pressure_event_counts(uint64_t slack, uint64_t headroom)
{
	if (slack == PRESSURE_NOLIMIT)
		return true; /* no source can tell: as if short */
	return headroom > UINT64_MAX / 2 || slack < 2 * headroom;
}

int pressure_period_ms(uint64_t distance)
{
	uint64_t ms = distance / PRESSURE_RATE;

	if (ms < PRESSURE_MIN_MS)
		return PRESSURE_MIN_MS;
	return ms > PRESSURE_MAX_MS ? PRESSURE_MAX_MS : (int)ms;
}

/* ---- parsers ---- */

int pressure_parse_value(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "max", 3) == 0 && (p[3] == '\0' || p[3] == '\n')) {
		*out = PRESSURE_NOLIMIT;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p != '\0' && *p != '\n')
		return -EINVAL;
	*out = v;
	return 0;
}

/* "Key:   N kB" in text: N * 1024, or -ENOENT. */
static int meminfo_field(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned long long kb;

		if (strncmp(l, key, klen) != 0 || l[klen] != ':')
			continue;
		if (sscanf(l + klen + 1, "%llu", &kb) != 1 || kb > UINT64_MAX / 1024)
			return -EINVAL;
		*out = (uint64_t)kb * 1024;
		return 0;
	}
	return -ENOENT;
}

int pressure_parse_meminfo(const char *text, uint64_t *avail, uint64_t *total)
{
	int ret = meminfo_field(text, "MemAvailable", avail);

	if (ret)
		return ret;
	if (meminfo_field(text, "MemTotal", total))
		*total = 0;
	return 0;
}

/* "key N" at the start of a line of text: N, or -ENOENT. */
static int stat_field(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, key, klen) != 0 || l[klen] != ' ')
			continue;
		return pressure_parse_value(l + klen + 1, out);
	}
	return -ENOENT;
}

int pressure_parse_stat(const char *text, int version, uint64_t *clean)
{
	static const char *const keys[3][4] = {
		[1] = { "total_inactive_file", "total_active_file", "total_dirty",
			"total_writeback" },
		[2] = { "inactive_file", "active_file", "file_dirty", "file_writeback" },
	};
	uint64_t v[4] = { 0 }, file;
	int ret;

	if (version != 1 && version != 2)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		ret = stat_field(text, keys[version][i], &v[i]);
		if (ret == -ENOENT && i >= 2)
			v[i] = 0;
		else if (ret)
			return ret;
	}
	if (v[0] > UINT64_MAX - v[1])
		return -EINVAL;
	file = v[0] + v[1];
	*clean = v[2] + v[3] < file && v[2] <= UINT64_MAX - v[3] ? file - v[2] - v[3] : 0;
	return 0;
}

/* Is word an item of the comma-separated list [s, end)? */
static bool in_list(const char *s, const char *end, const char *word)
{
	size_t wl = strlen(word);

	while (s < end) {
		const char *c = memchr(s, ',', (size_t)(end - s));
		const char *e = c ? c : end;

		if ((size_t)(e - s) == wl && strncmp(s, word, wl) == 0)
			return true;
		s = e + 1;
	}
	return false;
}

/* Copy [s, e) into out of size len; -ENAMETOOLONG if it does not fit. */
static int copy_span(char *out, size_t len, const char *s, const char *e)
{
	size_t n = (size_t)(e - s);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

int pressure_parse_cgroup(const char *text, int version, char *path, size_t len)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *eol = strchr(l, '\n');
		const char *c1 = strchr(l, ':'), *c2;

		if (!eol)
			eol = l + strlen(l);
		if (!c1 || c1 > eol)
			continue;
		c2 = memchr(c1 + 1, ':', (size_t)(eol - c1 - 1));
		if (!c2 || c2[1] != '/')
			continue;
		if (version == 2 ? (c1 - l == 1 && l[0] == '0' && c2 == c1 + 1)
				 : in_list(c1 + 1, c2, "memory"))
			return copy_span(path, len, c2 + 1, eol);
	}
	return -ENOENT;
}

/* Undo mountinfo's \ooo escapes in place. */
static void unescape(char *s)
{
	size_t j = 0;

	for (size_t i = 0; s[i]; i++, j++) {
		if (s[i] == '\\' && s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			s[j] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			s[j] = s[i];
		}
	}
	s[j] = '\0';
}

int pressure_parse_mountinfo(const char *text, int version, char *mnt, size_t mlen,
			     char *root, size_t rlen)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *eol = strchr(l, '\n');
		const char *f[6], *dash, *p = l;
		char fstype[32];
		int nf = 0;

		if (!eol)
			eol = l + strlen(l);
		/* id parent major:minor root mountpoint ... - fstype source superopts */
		while (nf < 6 && p < eol) {
			while (p < eol && *p == ' ')
				p++;
			f[nf++] = p;
			while (p < eol && *p != ' ')
				p++;
		}
		dash = NULL;
		for (const char *q = p; q + 2 < eol; q++)
			if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
				dash = q + 3;
				break;
			}
		if (nf < 5 || !dash) {
			continue;
		} else {
			const char *ft_end = memchr(dash, ' ', (size_t)(eol - dash));
			const char *src, *src_end, *opts;

			if (!ft_end || copy_span(fstype, sizeof(fstype), dash, ft_end))
				continue;
			src = ft_end + 1;
			src_end = memchr(src, ' ', (size_t)(eol - src));
			opts = src_end ? src_end + 1 : eol;
			if (version == 2 ? strcmp(fstype, "cgroup2") != 0
					 : (strcmp(fstype, "cgroup") != 0 || !in_list(opts, eol, "memory")))
				continue;
			if (copy_span(root, rlen, f[3], memchr(f[3], ' ', (size_t)(eol - f[3]))) ||
			    copy_span(mnt, mlen, f[4], memchr(f[4], ' ', (size_t)(eol - f[4]))))
				return -ENAMETOOLONG;
			unescape(root);
			unescape(mnt);
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- sources ---- */

#define MOUNTINFO_MAX (4u << 20)

static void plog(struct pressure *p, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->cfg.log)
		p->cfg.log(p->cfg.log_ctx, msg);
	else
		fprintf(stderr, "volatilefs: %s\n", msg);
}

/* Name a skipped source once for the life of the mount. */
static void skipped(struct pressure *p, unsigned bit, const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	if (p->named & bit)
		return;
	p->named |= bit;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	plog(p, "pressure: source %s not used: %s", name, why);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Read a whole small file into buf (NUL-terminated).  Length or -errno. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got + 1 == len) {
		char c;

		/* More than fits: say so rather than use a cut-off text. */
		if (read(fd, &c, 1) == 1) {
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The value in an open cgroup file, or PRESSURE_NOLIMIT when unreadable. */
static uint64_t read_value(int fd)
{
	char buf[64];
	ssize_t n;
	uint64_t v;

	if (fd < 0)
		return PRESSURE_NOLIMIT;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return PRESSURE_NOLIMIT;
	buf[n] = '\0';
	return pressure_parse_value(buf, &v) == 0 ? v : PRESSURE_NOLIMIT;
}

static int open_at(const char *dir, const char *name, int flags)
{
	char path[768];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	return open(path, flags | O_CLOEXEC);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void level_init(struct pressure_level *l)
{
	l->usage_fd = l->stat_fd = l->limit_fd[0] = l->limit_fd[1] = l->events_fd = -1;
	l->ctl_fd = l->thr_efd = l->lvl_efd = l->lvl_fd = -1;
	l->limit = PRESSURE_NOLIMIT;
	l->thr_at = 0;
}

static void level_close(struct pressure_level *l)
{
	close_fd(&l->usage_fd);
	close_fd(&l->stat_fd);
	close_fd(&l->limit_fd[0]);
	close_fd(&l->limit_fd[1]);
	close_fd(&l->events_fd);
	close_fd(&l->ctl_fd);
	close_fd(&l->thr_efd);
	close_fd(&l->lvl_efd);
	close_fd(&l->lvl_fd);
}

/* v1: ask cgroup.event_control to signal efd on events of file fd ("ARG"). */
static int v1_register(struct pressure_level *l, int efd, int fd, const char *arg)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "%d %d %s", efd, fd, arg);

	ssize_t w;

	if (l->ctl_fd < 0 || n < 0 || (size_t)n >= sizeof(line))
		return -EINVAL;
	w = write(l->ctl_fd, line, (size_t)n);
	return w == n ? 0 : w < 0 ? -errno : -EIO;
}

/* v1: the usage threshold at limit - headroom, registered anew when it moved. */
static void v1_threshold(struct pressure *p, struct pressure_level *l, uint64_t thr)
{
	char arg[32];
	int efd, ret;

	if (thr == l->thr_at)
		return;
	close_fd(&l->thr_efd); /* closing the eventfd unregisters it */
	l->thr_at = 0;
	if (!thr || l->ctl_fd < 0)
		return;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return;
	snprintf(arg, sizeof(arg), "%" PRIu64, thr);
	ret = v1_register(l, efd, l->usage_fd, arg);
	if (ret < 0) {
		plog(p, "pressure: cannot register a usage threshold in cgroup %s: %s",
		     p->cg_dir, strerror(-ret));
		close(efd);
		close_fd(&l->ctl_fd); /* say it once; the timer still reads usage */
		return;
	}
	l->thr_efd = efd;
	l->thr_at = thr;
}

/* memory.stat of a level; without it, its page cache counts as in use (logged). */
static void stat_open(struct pressure *p, struct pressure_level *l, const char *dir)
{
	l->stat_fd = open_at(dir, "memory.stat", O_RDONLY);
	if (l->stat_fd < 0)
		plog(p, "pressure: cannot open memory.stat in cgroup %s (%s): its page cache "
		     "counts as memory in use", dir, strerror(errno));
}

/* Clean page cache of a level now (0 when it cannot be read). */
static uint64_t read_clean(const struct pressure *p, const struct pressure_level *l)
{
	char buf[8192];
	uint64_t clean;
	ssize_t n;

	if (l->stat_fd < 0)
		return 0;
	n = pread(l->stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return pressure_parse_stat(buf, p->cg_version, &clean) == 0 ? clean : 0;
}

/* Open one level in dir; false when it has no memory controller files. */
static bool level_open(struct pressure *p, struct pressure_level *l, const char *dir, int version,
		       bool own)
{
	level_init(l);
	if (version == 2) {
		l->usage_fd = open_at(dir, "memory.current", O_RDONLY);
		if (l->usage_fd < 0)
			return false;
		stat_open(p, l, dir);
		l->limit_fd[0] = open_at(dir, "memory.max", O_RDONLY);
		l->limit_fd[1] = open_at(dir, "memory.high", O_RDONLY);
		l->events_fd = open_at(dir, "memory.events", O_RDONLY);
		return true;
	}
	l->usage_fd = open_at(dir, "memory.usage_in_bytes", O_RDONLY);
	if (l->usage_fd < 0)
		return false;
	stat_open(p, l, dir);
	l->limit_fd[0] = open_at(dir, "memory.limit_in_bytes", O_RDONLY);
	l->ctl_fd = open_at(dir, "cgroup.event_control", O_WRONLY);
	if (own && l->ctl_fd >= 0) {
		l->lvl_fd = open_at(dir, "memory.pressure_level", O_RDONLY);
		l->lvl_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (l->lvl_fd < 0 || l->lvl_efd < 0 ||
		    v1_register(l, l->lvl_efd, l->lvl_fd, "medium") < 0) {
			plog(p, "pressure: no memory.pressure_level events in cgroup %s: %s", dir,
			     strerror(errno));
			close_fd(&l->lvl_fd);
			close_fd(&l->lvl_efd);
		}
	}
	return true;
}

/* Try cgroup version v; true when its levels are open. */
static bool open_cgroup_version(struct pressure *p, int version)
{
	static const char *const names[] = { [1] = "cgroup1", [2] = "cgroup2" };
	unsigned bit = version == 2 ? PSRC_CGROUP2 : PSRC_CGROUP1;
	char path[512], mnt[256], root[512], file[512], *info;
	const char *rel;
	size_t mlen;
	ssize_t n;

	if (pressure_parse_cgroup(p->cgroup_text, version, path, sizeof(path))) {
		skipped(p, bit, names[version], "%s/self/cgroup names no %s", p->cfg.proc,
			version == 2 ? "v2 cgroup" : "v1 memory cgroup");
		return false;
	}
	snprintf(file, sizeof(file), "%s/self/mountinfo", p->cfg.proc);
	/* A machine with thousands of mounts has a mountinfo of some 100 KiB. */
	info = malloc(MOUNTINFO_MAX);
	n = info ? slurp(file, info, MOUNTINFO_MAX) : -ENOMEM;
	if (n < 0 || pressure_parse_mountinfo(info, version, mnt, sizeof(mnt), root,
					      sizeof(root))) {
		skipped(p, bit, names[version], "no %s hierarchy is mounted (%s: %s)",
			version == 2 ? "cgroup2" : "v1 memory", file,
			n < 0 ? strerror((int)-n) : "not listed");
		free(info);
		return false;
	}
	free(info);
	/* The mount shows the hierarchy from root: our path is below it. */
	rel = path;
	if (strcmp(root, "/") != 0) {
		size_t rl = strlen(root);

		if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0')) {
			skipped(p, bit, names[version], "cgroup %s is outside the mount of %s",
				path, mnt);
			return false;
		}
		rel = path + rl;
	}
	if (strcmp(rel, "/") == 0)
		rel = "";
	if ((size_t)snprintf(p->cg_dir, sizeof(p->cg_dir), "%s%s", mnt, rel) >=
	    sizeof(p->cg_dir)) {
		p->cg_dir[0] = '\0';
		skipped(p, bit, names[version], "cgroup path too long");
		return false;
	}
	mlen = strlen(mnt);
	strcpy(file, p->cg_dir);
	/* Our level, then each ancestor below the hierarchy's root (which has no limit). */
	for (;;) {
		bool own = p->nlevels == 0;
		char *slash;

		if (p->nlevels == PRESSURE_LEVELS_MAX ||
		    !level_open(p, &p->levels[p->nlevels], file, version, own))
			break;
		p->nlevels++;
		slash = strrchr(file, '/');
		if (!slash || (size_t)(slash - file) < mlen || strlen(file) <= mlen)
			break;
		*slash = '\0';
		if (strlen(file) <= mlen)
			break; /* the root of the hierarchy */
	}
	if (!p->nlevels) {
		skipped(p, bit, names[version], "no memory controller in %s", p->cg_dir);
		p->cg_dir[0] = '\0';
		return false;
	}
	p->cg_version = version;
	atomic_fetch_or(&p->sources, bit);
	return true;
}

static void close_cgroups(struct pressure *p)
{
	for (size_t i = 0; i < p->nlevels; i++)
		level_close(&p->levels[i]);
	p->nlevels = 0;
	p->cg_version = 0;
	p->cg_dir[0] = '\0';
	atomic_fetch_and(&p->sources, ~(PSRC_CGROUP1 | PSRC_CGROUP2));
}

static void open_cgroups(struct pressure *p)
{
	char file[512];
	ssize_t n;

	snprintf(file, sizeof(file), "%s/self/cgroup", p->cfg.proc);
	n = slurp(file, p->cgroup_text, sizeof(p->cgroup_text));
	if (n < 0) {
		p->cgroup_text[0] = '\0';
		skipped(p, PSRC_CGROUP2, "cgroup2", "cannot read %s: %s", file, strerror((int)-n));
		skipped(p, PSRC_CGROUP1, "cgroup1", "cannot read %s: %s", file, strerror((int)-n));
		return;
	}
	if (!open_cgroup_version(p, 2))
		open_cgroup_version(p, 1);
}

static void close_psi(struct pressure *p)
{
	close_fd(&p->psi_fd);
	p->psi_fifo = false;
	atomic_fetch_and(&p->sources, ~PSRC_PSI);
}

static void open_psi(struct pressure *p)
{
	char path[768];
	struct stat st;
	int fd;

	if (p->cg_version == 2)
		snprintf(path, sizeof(path), "%s/memory.pressure", p->cg_dir);
	else
		snprintf(path, sizeof(path), "%s/pressure/memory", p->cfg.proc);
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		skipped(p, PSRC_PSI, "psi", "cannot open %s: %s", path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
		p->psi_fifo = true; /* the test seam: lines written to it are events */
	} else if (write(fd, PRESSURE_PSI_TRIGGER, sizeof(PRESSURE_PSI_TRIGGER)) < 0) {
		skipped(p, PSRC_PSI, "psi", "cannot set a trigger in %s: %s", path,
			strerror(errno));
		close(fd);
		return;
	}
	p->psi_fd = fd;
	atomic_fetch_or(&p->sources, PSRC_PSI);
}

static void open_meminfo(struct pressure *p)
{
	char path[512], buf[8192];
	uint64_t avail, total;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/meminfo", p->cfg.proc);
	p->meminfo_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->meminfo_fd < 0) {
		skipped(p, PSRC_MEMINFO, "meminfo", "cannot open %s: %s", path, strerror(errno));
		return;
	}
	n = pread(p->meminfo_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	if (pressure_parse_meminfo(buf, &avail, &total)) {
		skipped(p, PSRC_MEMINFO, "meminfo", "%s has no MemAvailable", path);
		close_fd(&p->meminfo_fd);
		return;
	}
	p->memtotal = total;
	atomic_fetch_or(&p->sources, PSRC_MEMINFO);
}

int pressure_open(struct pressure *p, const struct pressure_cfg *cfg)
{
	char names[64];

	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	if (!p->cfg.proc)
		p->cfg.proc = "/proc";
	p->meminfo_fd = p->psi_fd = -1;
	p->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stop_efd < 0)
		return -errno;
	open_cgroups(p);
	open_psi(p);
	open_meminfo(p);
	p->last_rescan_ms = now_ms();
	(void)pressure_need(p);
	if (p->cfg.sources_out)
		atomic_store(p->cfg.sources_out, atomic_load(&p->sources));
	pressure_format_sources(atomic_load(&p->sources), names, sizeof(names));
	plog(p, "pressure: sources %s, headroom %" PRIu64 " MiB%s%s", names, p->headroom >> 20,
	     p->cg_version ? ", cgroup " : "", p->cg_dir);
	return 0;
}

void pressure_close(struct pressure *p)
{
	close_cgroups(p);
	close_psi(p);
	close_fd(&p->meminfo_fd);
	atomic_store(&p->sources, 0);
	close_fd(&p->stop_efd);
}

/* Re-read PROC/self/cgroup; reopen the cgroup sources if the daemon moved. */
static void rescan(struct pressure *p)
{
	char file[512], text[sizeof(p->cgroup_text)];

	p->last_rescan_ms = now_ms();
	snprintf(file, sizeof(file), "%s/self/cgroup", p->cfg.proc);
	if (slurp(file, text, sizeof(text)) < 0 || strcmp(text, p->cgroup_text) == 0) {
		/* Same cgroup; a PSI trigger that failed is set again. */
		if (p->psi_fd < 0 && !(p->named & PSRC_PSI))
			open_psi(p);
		return;
	}
	close_cgroups(p);
	close_psi(p);
	open_cgroups(p);
	open_psi(p);
	plog(p, "pressure: the daemon moved to cgroup %s", p->cg_dir[0] ? p->cg_dir : "(none)");
}

uint64_t pressure_need(struct pressure *p)
{
	uint64_t usage[PRESSURE_LEVELS_MAX];
	uint64_t tight = PRESSURE_NOLIMIT, need = 0, dist = UINT64_MAX, avail = 0, total = 0;
	uint64_t slack = PRESSURE_NOLIMIT;
	bool have_avail = false;

	if (p->meminfo_fd >= 0) {
		char buf[8192];
		ssize_t n = pread(p->meminfo_fd, buf, sizeof(buf) - 1, 0);

		buf[n > 0 ? n : 0] = '\0';
		if (n > 0 && pressure_parse_meminfo(buf, &avail, &total) == 0) {
			have_avail = true;
			if (total)
				p->memtotal = total;
		}
	}
	if (p->memtotal)
		tight = p->memtotal;
	for (size_t i = 0; i < p->nlevels; i++) {
		struct pressure_level *l = &p->levels[i];
		uint64_t a = read_value(l->limit_fd[0]), b = read_value(l->limit_fd[1]);

		/* v1 shows "no limit" as a huge page-aligned number */
		if (p->cg_version == 1 && a >= (1ull << 62))
			a = PRESSURE_NOLIMIT;
		l->limit = a < b ? a : b;
		usage[i] = read_value(l->usage_fd);
		if (usage[i] == PRESSURE_NOLIMIT)
			usage[i] = 0;
		if (l->limit < tight)
			tight = l->limit;
	}
	p->headroom = p->cfg.headroom ? p->cfg.headroom : pressure_default_headroom(tight);
	for (size_t i = 0; i < p->nlevels; i++) {
		struct pressure_level *l = &p->levels[i];
		uint64_t in_use, n, s, thr;

		if (l->limit == PRESSURE_NOLIMIT) {
			if (p->cg_version == 1)
				v1_threshold(p, l, 0);
			continue;
		}
		/* Clean page cache is no shortage: the kernel drops it instead. */
		in_use = pressure_in_use(usage[i], read_clean(p, l));
		n = pressure_need_limit(in_use, l->limit, p->headroom);
		s = pressure_slack(in_use, l->limit);
		thr = l->limit > p->headroom ? l->limit - p->headroom : 0;
		if (p->cg_version == 1)
			v1_threshold(p, l, thr);
		if (n > need)
			need = n;
		if (s < slack)
			slack = s;
		/*
		 * A registered v1 threshold wakes us when usage crosses it; once
		 * page cache holds usage above it, only the timer sees memory in
		 * use grow.
		 */
		if (!n && (l->thr_efd < 0 || usage[i] >= thr) && thr - in_use < dist)
			dist = thr - in_use;
	}
	if (have_avail) {
		uint64_t n = pressure_need_avail(avail, p->headroom);

		if (n > need)
			need = n;
		if (avail < slack)
			slack = avail;
		if (!n && avail - p->headroom < dist)
			dist = avail - p->headroom;
	}
	p->last_need = need;
	p->last_slack = slack;
	p->next_ms = need ? 0 : pressure_period_ms(dist);
	return need;
}

void pressure_format_sources(unsigned sources, char *buf, size_t len)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ PSRC_CGROUP2, "cgroup2" }, { PSRC_CGROUP1, "cgroup1" },
		{ PSRC_PSI, "psi" }, { PSRC_MEMINFO, "meminfo" },
	};
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int n;

		if (!(sources & names[i].bit))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", names[i].name);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "none");
}

uint64_t pressure_round(struct pressure *p, unsigned events)
{
	uint64_t freed = 0;

	for (;;) {
		uint64_t need = pressure_need(p);
		uint64_t vol = p->ops.volatile_bytes(p->ops.ctx);
		/* An event while clean page cache can still be dropped is churn. */
		bool event = events > 0 && pressure_event_counts(p->last_slack, p->headroom);
		uint64_t step = pressure_step(need, event, vol), got;

		if (!step)
			break;
		if (!vol) {
			/* Pressure, and nothing of ours to give: look again later. */
			p->next_ms = 100;
			break;
		}
		got = p->ops.purge(p->ops.ctx, step);
		freed += got;
		if (events)
			events--;
		if (!got) {
			/* Nothing could go (every unit left is skipped): do not spin. */
			p->next_ms = 100;
			break;
		}
	}
	return freed;
}

/* Drain an eventfd (or the seam's FIFO); the number of events it carried. */
static unsigned drain(int fd, bool lines)
{
	unsigned events = 0;
	char buf[256];
	ssize_t n;

	if (!lines) {
		uint64_t v;

		return read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v) ? (unsigned)(v ? 1 : 0) : 0;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			events += buf[i] == '\n';
	return events;
}

static void *pressure_main(void *arg)
{
	struct pressure *p = arg;

	for (;;) {
		struct pollfd fds[2 + 3 * PRESSURE_LEVELS_MAX];
		/* What each pollfd is: 0 stop, 1 psi, 2 threshold, 3 pressure level, 4 events. */
		int what[2 + 3 * PRESSURE_LEVELS_MAX];
		size_t nfds = 0;
		unsigned events = 0;
		uint64_t since = now_ms() - p->last_rescan_ms;
		int timeout = p->next_ms, n;

		fds[nfds] = (struct pollfd){ .fd = p->stop_efd, .events = POLLIN };
		what[nfds++] = 0;
		if (p->psi_fd >= 0) {
			fds[nfds] = (struct pollfd){ .fd = p->psi_fd,
						     .events = p->psi_fifo ? POLLIN : POLLPRI };
			what[nfds++] = 1;
		}
		for (size_t i = 0; i < p->nlevels; i++) {
			struct pressure_level *l = &p->levels[i];

			if (l->thr_efd >= 0) {
				fds[nfds] = (struct pollfd){ .fd = l->thr_efd, .events = POLLIN };
				what[nfds++] = 2;
			}
			if (l->lvl_efd >= 0) {
				fds[nfds] = (struct pollfd){ .fd = l->lvl_efd, .events = POLLIN };
				what[nfds++] = 3;
			}
			if (l->events_fd >= 0) {
				fds[nfds] = (struct pollfd){ .fd = l->events_fd, .events = POLLPRI };
				what[nfds++] = 4;
			}
		}
		if (since >= PRESSURE_RESCAN_MS)
			timeout = 0;
		else if ((uint64_t)timeout > PRESSURE_RESCAN_MS - since)
			timeout = (int)(PRESSURE_RESCAN_MS - since);
		n = poll(fds, nfds, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && fds[0].revents)
			break;
		for (size_t i = 1; n > 0 && i < nfds; i++) {
			char buf[512];

			if (!fds[i].revents)
				continue;
			switch (what[i]) {
			case 1:
				if (p->psi_fifo) {
					events += drain(p->psi_fd, true);
				} else if (fds[i].revents & POLLPRI) {
					events++;
				} else {
					/* the trigger is gone (its cgroup was removed) */
					close_psi(p);
					p->last_rescan_ms = 0;
				}
				break;
			case 2:
				(void)drain(fds[i].fd, false);
				break;
			case 3:
				events += drain(fds[i].fd, false);
				break;
			case 4:
				/* kernfs: reading the file re-arms its notification */
				if (pread(fds[i].fd, buf, sizeof(buf), 0) < 0)
					p->last_rescan_ms = 0;
				break;
			}
		}
		if (now_ms() - p->last_rescan_ms >= PRESSURE_RESCAN_MS)
			rescan(p);
		if (p->cfg.sources_out)
			atomic_store(p->cfg.sources_out, atomic_load(&p->sources));
		pressure_round(p, events);
	}
	return NULL;
}

int pressure_start(struct pressure *p, const struct pressure_ops *ops)
{
	int ret;

	p->ops = *ops;
	ret = pthread_create(&p->thread, NULL, pressure_main, p);
	if (ret)
		return -ret;
	p->running = true;
	return 0;
}

void pressure_stop(struct pressure *p)
{
	uint64_t one = 1;

	if (!p->running)
		return;
	if (write(p->stop_efd, &one, sizeof(one)) != sizeof(one))
		plog(p, "pressure: cannot stop the thread: %s", strerror(errno));
	pthread_join(p->thread, NULL);
	p->running = false;
}
