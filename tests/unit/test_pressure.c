/*
 * Unit tests for the memory-pressure module (src/daemon/pressure.c, DESIGN
 * section 10).  Covered:
 *  - the pure decisions: default headroom, the need against a limit and
 *    against MemAvailable, the purge step, the timer period; memory in use
 *    (usage less clean page cache), the slack, whether an event counts;
 *  - the parsers of cgroup values, /proc/meminfo, memory.stat (v1 and v2),
 *    /proc/self/cgroup and /proc/self/mountinfo;
 *  - pressure_open / pressure_need on a temporary directory laid out like
 *    /proc and a cgroup v2 hierarchy (cfg.proc is the seam), then like a
 *    hybrid system whose memory controller is on cgroup v1: the sources
 *    found, the headroom in force, the need at each level and from
 *    MemAvailable (the files are rewritten between calls); clean page cache
 *    in memory.stat is no shortage, dirty and writeback pages are;
 *  - a missing source is named once in the log, also after a rescan;
 *  - the thread with fake pressure_ops: a line written to the
 *    memory.pressure FIFO purges nothing while the cgroup has room (its
 *    page cache counted as room: churn) and exactly one step once the
 *    slack is under twice the headroom, MemAvailable under the
 *    headroom purges until nothing volatile is left, pressure_stop returns
 *    promptly.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pressure.h"
#include "utest.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define NOLIM PRESSURE_NOLIMIT
#define H64 PRESSURE_HEADROOM_MIN

/* ---- helpers: a temporary tree, files in it, a log recorder ---- */

/* Every tree is made under BASE, which main removes (also after a failure). */
static char BASE[64];
static char T[128];    /* the tree of the running test */
static char PROC[160]; /* T/proc, for cfg.proc (the module keeps the pointer) */

static void tree_new(void)
{
	snprintf(T, sizeof(T), "%s/XXXXXX", BASE);
	ck_assert_ptr_nonnull(mkdtemp(T));
	snprintf(PROC, sizeof(PROC), "%s/proc", T);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* T/rel into out, creating its parent directories. */
static void path_of(char *out, size_t len, const char *rel)
{
	ck_assert_uint_lt((size_t)snprintf(out, len, "%s/%s", T, rel), len);
	for (char *s = strchr(out + strlen(T) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		ck_assert(mkdir(out, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
}

/* Write T/rel in place (same inode: the fds the module holds see the new text). */
static void put(const char *rel, const char *fmt, ...)
{
	char path[512], text[4096];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < sizeof(text));
	path_of(path, sizeof(path), rel);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, text, (size_t)n, 0), n);
	ck_assert_int_eq(ftruncate(fd, n), 0);
	close(fd);
}

/* A cgroup value: "max" or a number. */
static void put_value(const char *rel, uint64_t v)
{
	if (v == NOLIM)
		put(rel, "max\n");
	else
		put(rel, "%" PRIu64 "\n", v);
}

/* T/proc/meminfo with fixed-width numbers, so that a rewrite keeps the length. */
static void put_meminfo(uint64_t total, uint64_t avail)
{
	put("proc/meminfo",
	    "MemTotal:       %12" PRIu64 " kB\nMemFree:        %12" PRIu64 " kB\n"
	    "MemAvailable:   %12" PRIu64 " kB\nBuffers:                 1024 kB\n",
	    total / KiB, avail / KiB / 2, avail / KiB);
}

/* A v2 memory.stat with these file counts, fixed width (rewritten in place). */
static void put_stat2(const char *rel, uint64_t inactive, uint64_t active, uint64_t dirty,
		      uint64_t writeback)
{
	put(rel,
	    "anon %20" PRIu64 "\nfile %20" PRIu64 "\nshmem 0\nfile_mapped 0\n"
	    "file_dirty %20" PRIu64 "\nfile_writeback %20" PRIu64 "\n"
	    "inactive_anon 0\nactive_anon 0\ninactive_file %20" PRIu64 "\n"
	    "active_file %20" PRIu64 "\nunevictable 0\n",
	    (uint64_t)0, inactive + active, dirty, writeback, inactive, active);
}

/* A v1 memory.stat: its own counts 0, the hierarchical totals as given. */
static void put_stat1(const char *rel, uint64_t inactive, uint64_t active, uint64_t dirty,
		      uint64_t writeback)
{
	put(rel,
	    "cache 0\nrss 0\ndirty 0\nwriteback 0\ninactive_file 0\nactive_file 0\n"
	    "hierarchical_memory_limit 9223372036854771712\n"
	    "total_cache %20" PRIu64 "\ntotal_rss 0\ntotal_dirty %20" PRIu64 "\n"
	    "total_writeback %20" PRIu64 "\ntotal_inactive_anon 0\ntotal_active_anon 0\n"
	    "total_inactive_file %20" PRIu64 "\ntotal_active_file %20" PRIu64 "\n",
	    inactive + active, dirty, writeback, inactive, active);
}

struct logrec {
	pthread_mutex_t mu;
	unsigned n;
	char lines[32][320];
};

static void log_line(void *ctx, const char *msg)
{
	struct logrec *r = ctx;

	pthread_mutex_lock(&r->mu);
	if (r->n < 32)
		snprintf(r->lines[r->n], sizeof(r->lines[0]), "%s", msg);
	r->n++;
	pthread_mutex_unlock(&r->mu);
}

/* The number of lines that contain s. */
static unsigned log_count(struct logrec *r, const char *s)
{
	unsigned c = 0;

	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->n && i < 32; i++)
		c += strstr(r->lines[i], s) != NULL;
	pthread_mutex_unlock(&r->mu);
	return c;
}

static void open_with_log(struct pressure *p, struct logrec *r, uint64_t headroom,
			  _Atomic unsigned *sources_out)
{
	struct pressure_cfg cfg = { .proc = PROC, .headroom = headroom, .log = log_line,
				    .log_ctx = r, .sources_out = sources_out };

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	ck_assert_int_eq(pressure_open(p, &cfg), 0);
}

/*
 * The v2 layout: the daemon in /app.slice/vfs of a cgroup2 mount at T/cg,
 * its memory.pressure a FIFO (the seam), MemTotal 16G.
 */
#define OWN "cg/app.slice/vfs/"
#define ANC "cg/app.slice/"
static void v2_tree(uint64_t own_max, uint64_t own_cur, uint64_t anc_max, uint64_t avail)
{
	char fifo[512];

	tree_new();
	put("proc/self/cgroup", "0::/app.slice/vfs\n");
	put("proc/self/mountinfo",
	    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	    "30 22 0:26 / %s/cg rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
	    "rw,nsdelegate,memory_recursiveprot\n", T);
	put_value(OWN "memory.max", own_max);
	put_value(OWN "memory.high", NOLIM);
	put_value(OWN "memory.current", own_cur);
	put_stat2(OWN "memory.stat", 0, 0, 0, 0);
	put(OWN "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
	path_of(fifo, sizeof(fifo), OWN "memory.pressure");
	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	put_value(ANC "memory.max", anc_max);
	put_value(ANC "memory.high", NOLIM);
	put_value(ANC "memory.current", 200 * MiB);
	put_stat2(ANC "memory.stat", 0, 0, 0, 0);
	put("cg/memory.current", "0\n"); /* the root: not a level */
	put_meminfo(16 * GiB, avail);
}

/* Poll cond (an expression read under the mutex mu) for up to 5 s. */
#define WAIT_FOR(mu, cond)                                                             \
	do {                                                                           \
		bool ok_ = false;                                                      \
		for (int ms_ = 0; !ok_ && ms_ < 5000; ms_ += 2) {                      \
			pthread_mutex_lock(mu);                                        \
			ok_ = (cond);                                                  \
			pthread_mutex_unlock(mu);                                      \
			if (!ok_)                                                      \
				nanosleep(&(struct timespec){ 0, 2000000 }, NULL);     \
		}                                                                      \
		ck_assert_msg(ok_, "timed out waiting for %s", #cond);                 \
	} while (0)

/* ---- 1. decisions ---- */

START_TEST(decisions)
{
	const uint64_t L = 1 * GiB, H = 64 * MiB;

	ck_assert_uint_eq(pressure_default_headroom(NOLIM), H64);
	ck_assert_uint_eq(pressure_default_headroom(0), H64);
	ck_assert_uint_eq(pressure_default_headroom(512 * MiB), H64);    /* 25.6M < 64M */
	ck_assert_uint_eq(pressure_default_headroom(1280 * MiB), H64);   /* exactly 64M */
	ck_assert_uint_eq(pressure_default_headroom(4 * GiB), 214748364); /* 5% */
	ck_assert_uint_eq(pressure_default_headroom(16 * GiB), 858993459);

	ck_assert_uint_eq(pressure_need_limit(100 * MiB, L, H), 0);
	ck_assert_uint_eq(pressure_need_limit(L - H, L, H), 0);     /* at the threshold */
	ck_assert_uint_eq(pressure_need_limit(L - H + 1, L, H), 1); /* one byte over */
	ck_assert_uint_eq(pressure_need_limit(L + 5, L, H), H + 5);
	ck_assert_uint_eq(pressure_need_limit(10, 32 * MiB, H), 10); /* limit <= headroom */
	ck_assert_uint_eq(pressure_need_limit(0, H, H), 0);
	ck_assert_uint_eq(pressure_need_limit(UINT64_MAX - 1, NOLIM, H), 0);
	ck_assert_uint_eq(pressure_need_avail(8 * GiB, H), 0);
	ck_assert_uint_eq(pressure_need_avail(H, H), 0);
	ck_assert_uint_eq(pressure_need_avail(H - 3, H), 3);
	ck_assert_uint_eq(pressure_need_avail(0, H), H);

	ck_assert_uint_eq(pressure_step(0, false, 800 * MiB), 0);
	ck_assert_uint_eq(pressure_step(0, false, 0), 0);
	ck_assert_uint_eq(pressure_step(0, true, 800 * MiB), 100 * MiB);
	ck_assert_uint_eq(pressure_step(1, false, 800 * MiB), 100 * MiB);
	ck_assert_uint_eq(pressure_step(300 * MiB, false, 800 * MiB), 300 * MiB);
	ck_assert_uint_eq(pressure_step(300 * MiB, true, 800 * MiB), 300 * MiB);
	ck_assert_uint_eq(pressure_step(0, true, 0), 1);
	ck_assert_uint_eq(pressure_step(0, true, 7), 1);
	ck_assert_uint_eq(pressure_step(5, false, 0), 5);

	/* memory in use: usage less clean page cache */
	ck_assert_uint_eq(pressure_in_use(1400 * MiB, 900 * MiB), 500 * MiB);
	ck_assert_uint_eq(pressure_in_use(1400 * MiB, 0), 1400 * MiB);
	ck_assert_uint_eq(pressure_in_use(100 * MiB, 300 * MiB), 0); /* stats a little behind */
	ck_assert_uint_eq(pressure_slack(500 * MiB, L), L - 500 * MiB);
	ck_assert_uint_eq(pressure_slack(L, L), 0);
	ck_assert_uint_eq(pressure_slack(L + 7, L), 0);
	ck_assert_uint_eq(pressure_slack(L, NOLIM), NOLIM);
	/* an event counts under twice the headroom, or when nothing tells the slack */
	ck_assert(pressure_event_counts(0, H));
	ck_assert(pressure_event_counts(H, H));
	ck_assert(pressure_event_counts(2 * H - 1, H));
	ck_assert(!pressure_event_counts(2 * H, H));
	ck_assert(!pressure_event_counts(8 * GiB, H));
	ck_assert(pressure_event_counts(NOLIM, H));
	ck_assert(pressure_event_counts(NOLIM - 1, UINT64_MAX / 2 + 1)); /* no overflow */
	/*
	 * The churn of the measurement in pressure.c: a 1536M cgroup at its
	 * limit, 960M of it clean page cache: no need, the event does not count.
	 * The hog: the same usage with no cache: short.
	 */
	{
		const uint64_t cl = 1536 * MiB, ch = pressure_default_headroom(cl);
		uint64_t use = pressure_in_use(cl - 2 * MiB, 960 * MiB);

		ck_assert_uint_eq(pressure_need_limit(use, cl, ch), 0);
		ck_assert(!pressure_event_counts(pressure_slack(use, cl), ch));
		use = pressure_in_use(cl - 2 * MiB, 0);
		ck_assert_uint_eq(pressure_need_limit(use, cl, ch), ch - 2 * MiB);
		ck_assert(pressure_event_counts(pressure_slack(use, cl), ch));
		/* between the headroom and twice it: no need, but an event counts */
		use = pressure_in_use(cl - 2 * MiB, ch + ch / 2);
		ck_assert_uint_eq(pressure_need_limit(use, cl, ch), 0);
		ck_assert(pressure_event_counts(pressure_slack(use, cl), ch));
	}

	ck_assert_int_eq(pressure_period_ms(0), PRESSURE_MIN_MS);
	ck_assert_int_eq(pressure_period_ms(PRESSURE_RATE), PRESSURE_MIN_MS);
	ck_assert_int_eq(pressure_period_ms(100 * PRESSURE_RATE), 100);
	ck_assert_int_eq(pressure_period_ms(PRESSURE_MAX_MS * PRESSURE_RATE), PRESSURE_MAX_MS);
	ck_assert_int_eq(pressure_period_ms(1000 * PRESSURE_RATE), PRESSURE_MAX_MS);
	ck_assert_int_eq(pressure_period_ms(UINT64_MAX), PRESSURE_MAX_MS);
}
END_TEST

/* ---- 2. parsers ---- */

START_TEST(parse_value)
{
	const struct { const char *s; uint64_t v; } good[] = {
		{ "max", NOLIM }, { "max\n", NOLIM }, { "0", 0 }, { "1073741824\n", 1 * GiB },
		{ "9223372036854771712\n", 9223372036854771712ull },
		{ "18446744073709551614", UINT64_MAX - 1 },
	};
	const char *bad[] = { "", "\n", "12x", "x12", "-1", "maxx", "ma",
			      "99999999999999999999", "18446744073709551616" };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 42;
		ck_assert_msg(pressure_parse_value(good[i].s, &v) == 0, "refused '%s'", good[i].s);
		ck_assert_uint_eq(v, good[i].v);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		ck_assert_msg(pressure_parse_value(bad[i], &v) == -EINVAL, "accepted '%s'", bad[i]);
		ck_assert_uint_eq(v, 42);
	}
}
END_TEST

START_TEST(parse_meminfo)
{
	const char *text = "MemTotal:       16303548 kB\nMemFree:         1203040 kB\n"
			   "MemAvailable:    9876543 kB\nBuffers:          402220 kB\n"
			   "Cached:          7000000 kB\n";
	uint64_t avail = 0, total = 0;

	ck_assert_int_eq(pressure_parse_meminfo(text, &avail, &total), 0);
	ck_assert_uint_eq(avail, 9876543 * KiB);
	ck_assert_uint_eq(total, 16303548 * KiB);
	/* MemTotal missing: total 0, still fine */
	ck_assert_int_eq(pressure_parse_meminfo("MemAvailable: 10 kB\n", &avail, &total), 0);
	ck_assert_uint_eq(avail, 10 * KiB);
	ck_assert_uint_eq(total, 0);
	ck_assert_int_eq(pressure_parse_meminfo("MemTotal: 16 kB\nMemFree: 1 kB\n", &avail, &total),
			 -ENOENT);
	ck_assert_int_eq(pressure_parse_meminfo("", &avail, &total), -ENOENT);
	/* a key that only starts with MemAvailable is another key */
	ck_assert_int_eq(pressure_parse_meminfo("MemAvailableX: 5 kB\n", &avail, &total), -ENOENT);
}
END_TEST

START_TEST(parse_stat)
{
	/* a v1 memory.stat as the kernel writes it (6.18), shortened */
	const char *v1 = "cache 10784768\nrss 5816320\nshmem 10395648\nmapped_file 8433664\n"
			 "dirty 28672\nwriteback 0\ninactive_file 12288\nactive_file 376832\n"
			 "hierarchical_memory_limit 9223372036854771712\n"
			 "total_cache 790847488\ntotal_rss 12345344\ntotal_dirty 55345152\n"
			 "total_writeback 4096\ntotal_inactive_anon 6397952\n"
			 "total_active_anon 45056\ntotal_inactive_file 336764928\n"
			 "total_active_file 443686912\ntotal_unevictable 16211968\n";
	const char *v2 = "anon 1000\nfile 900000\nfile_mapped 4096\nfile_dirty 8192\n"
			 "file_writeback 4096\ninactive_anon 0\nactive_anon 1000\n"
			 "inactive_file 600000\nactive_file 300000\nunevictable 0\n";
	uint64_t c = 42;

	ck_assert_int_eq(pressure_parse_stat(v1, 1, &c), 0);
	ck_assert_uint_eq(c, 336764928ull + 443686912ull - 55345152ull - 4096ull);
	ck_assert_int_eq(pressure_parse_stat(v2, 2, &c), 0);
	ck_assert_uint_eq(c, 900000 - 8192 - 4096);
	/* the v1 own counts ("inactive_file") are not the v2 keys' lines */
	ck_assert_int_eq(pressure_parse_stat(v1, 2, &c), 0);
	ck_assert_uint_eq(c, 12288 + 376832); /* v2 keys: file_dirty absent, 0 */
	c = 42;
	ck_assert_int_eq(pressure_parse_stat(v2, 1, &c), -ENOENT);
	ck_assert_uint_eq(c, 42);
	/* dirty and writeback absent: 0; more dirty than file (stats in flight): 0 */
	ck_assert_int_eq(pressure_parse_stat("inactive_file 5\nactive_file 7\n", 2, &c), 0);
	ck_assert_uint_eq(c, 12);
	ck_assert_int_eq(pressure_parse_stat("inactive_file 5\nactive_file 7\nfile_dirty 20\n",
					     2, &c), 0);
	ck_assert_uint_eq(c, 0);
	/* a key that only starts like one is another key */
	ck_assert_int_eq(pressure_parse_stat("inactive_filex 5\nactive_file 7\n", 2, &c), -ENOENT);
	ck_assert_int_eq(pressure_parse_stat("active_file 7\n", 2, &c), -ENOENT);
	ck_assert_int_eq(pressure_parse_stat("", 1, &c), -ENOENT);
	ck_assert_int_eq(pressure_parse_stat("inactive_file x\nactive_file 7\n", 2, &c), -EINVAL);
	ck_assert_int_eq(pressure_parse_stat("inactive_file 18446744073709551615\n"
					     "active_file 7\n", 2, &c), -EINVAL);
	ck_assert_int_eq(pressure_parse_stat(v2, 3, &c), -EINVAL);
}
END_TEST

/* pressure_parse_cgroup as a string: the path, or "ENOENT" / "error N". */
static const char *cg(const char *text, int version)
{
	static char buf[64];
	int ret = pressure_parse_cgroup(text, version, buf, sizeof(buf));

	if (ret)
		snprintf(buf, sizeof(buf), ret == -ENOENT ? "ENOENT" : "error %d", ret);
	return buf;
}

/* pressure_parse_mountinfo as a string: "MOUNT ROOT", or "ENOENT" / "error N". */
static const char *mi(const char *text, int version)
{
	static char buf[160];
	char mnt[64], root[64];
	int ret = pressure_parse_mountinfo(text, version, mnt, sizeof(mnt), root, sizeof(root));

	if (ret)
		snprintf(buf, sizeof(buf), ret == -ENOENT ? "ENOENT" : "error %d", ret);
	else
		snprintf(buf, sizeof(buf), "%s %s", mnt, root);
	return buf;
}

START_TEST(parse_cgroup)
{
	const char *hybrid = "12:cpu,cpuacct:/other\n9:name=systemd:/\n4:memory:/a/b\n0::/\n";

	ck_assert_str_eq(cg(hybrid, 1), "/a/b");
	ck_assert_str_eq(cg(hybrid, 2), "/");
	ck_assert_str_eq(cg("0::/user.slice/x.service\n", 2), "/user.slice/x.service");
	ck_assert_str_eq(cg("5:cpu,memory:/x", 1), "/x");
	ck_assert_str_eq(cg("0::/u\n", 1), "ENOENT");
	ck_assert_str_eq(cg("4:memory:/a\n3:cpu:/y\n", 2), "ENOENT");
	ck_assert_str_eq(cg("6:memoryx:/z\n7:name=memory:/w\n", 1), "ENOENT");
	/* the v2 line is the one with hierarchy 0 and no controllers */
	ck_assert_str_eq(cg("0:memory:/m\n", 2), "ENOENT");
	ck_assert_str_eq(cg("", 2), "ENOENT");
}
END_TEST

START_TEST(parse_mountinfo)
{
	const char *text =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
		"33 30 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:10 - cgroup cgroup rw,cpu\n"
		"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	const char *cpu_only =
		"33 30 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:10 - cgroup cgroup rw,cpu\n"
		"35 30 0:32 / /sys/fs/cgroup/x rw - cgroup memory rw,cpuset,memoryx\n";

	ck_assert_str_eq(mi(text, 1), "/sys/fs/cgroup/memory /");
	ck_assert_str_eq(mi(text, 2), "/sys/fs/cgroup/unified /");
	ck_assert_str_eq(mi(cpu_only, 1), "ENOENT");
	ck_assert_str_eq(mi(cpu_only, 2), "ENOENT");
	/* \040 is a space; the root of the hierarchy the mount shows comes back too */
	ck_assert_str_eq(mi("41 30 0:38 /sub /mnt/my\\040cg rw - cgroup2 none rw", 2),
			 "/mnt/my cg /sub");
	ck_assert_str_eq(mi("34 30 0:31 /a /m rw shared:2 master:3 - cgroup cgroup rw,cpu,memory\n",
			    1), "/m /a");
	ck_assert_str_eq(mi("", 2), "ENOENT");
}
END_TEST

/* ---- 3. a cgroup v2 system ---- */

START_TEST(v2_sources_and_headroom)
{
	const unsigned all = PSRC_CGROUP2 | PSRC_PSI | PSRC_MEMINFO;
	_Atomic unsigned out = 0;
	struct pressure p;
	struct logrec r;
	char buf[64];

	/* own max 1G, ancestor 512M: 5% of 512M is under the floor */
	v2_tree(1 * GiB, 100 * MiB, 512 * MiB, 8 * GiB);
	open_with_log(&p, &r, 0, &out);
	ck_assert_uint_eq(p.sources, all);
	ck_assert(!(p.sources & PSRC_CGROUP1));
	ck_assert_uint_eq(out, all);
	pressure_format_sources(p.sources, buf, sizeof(buf));
	ck_assert_str_eq(buf, "cgroup2,psi,meminfo");
	pressure_format_sources(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "none");
	ck_assert_uint_eq(p.nlevels, 2); /* vfs and app.slice, not the root */
	ck_assert(p.psi_fifo);
	ck_assert_uint_eq(p.headroom, H64);
	ck_assert_uint_eq(log_count(&r, "not used"), 0);
	ck_assert_uint_eq(log_count(&r, "sources cgroup2,psi,meminfo"), 1);
	pressure_close(&p);
	ck_assert_uint_eq(p.sources, 0);

	/* 4G and 8G: 5% of 4G */
	v2_tree(4 * GiB, 100 * MiB, 8 * GiB, 8 * GiB);
	open_with_log(&p, &r, 0, NULL);
	ck_assert_uint_eq(p.headroom, 4 * GiB / 20);
	pressure_close(&p);
	/* an explicit headroom wins over the default */
	open_with_log(&p, &r, 1 * GiB, NULL);
	ck_assert_uint_eq(p.headroom, 1 * GiB);
	ck_assert_uint_eq(pressure_need(&p), 0);
	put_value(OWN "memory.current", 3 * GiB + 10);
	ck_assert_uint_eq(pressure_need(&p), 10);
	ck_assert_uint_eq(p.headroom, 1 * GiB);
	pressure_close(&p);
}
END_TEST

START_TEST(v2_need)
{
	const uint64_t H = 4 * GiB / 20;
	struct pressure p;
	struct logrec r;
	char path[512];

	v2_tree(4 * GiB, 100 * MiB, 8 * GiB, 8 * GiB);
	open_with_log(&p, &r, 0, NULL);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_int_eq(p.next_ms, PRESSURE_MAX_MS); /* far: the slowest timer */

	/* inside the headroom of memory.max: re-read on every call */
	put_value(OWN "memory.current", 4 * GiB - H + 1000);
	ck_assert_uint_eq(pressure_need(&p), 1000);
	ck_assert_int_eq(p.next_ms, 0);
	put_value(OWN "memory.current", 4 * GiB - H);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_int_eq(p.next_ms, PRESSURE_MIN_MS); /* at the threshold: the fastest */

	/* far over the threshold, all of it clean page cache: no need, a slow timer */
	put_value(OWN "memory.current", 4 * GiB - 1 * MiB);
	put_stat2(OWN "memory.stat", 2 * GiB, 1 * GiB, 0, 0);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.last_slack, 3 * GiB + 1 * MiB);
	ck_assert_int_eq(p.next_ms, PRESSURE_MAX_MS);
	/* dirty and writeback pages are not droppable: they count as in use */
	put_stat2(OWN "memory.stat", 2 * GiB, 1 * GiB, 2 * GiB, 1 * GiB - H + 1 * MiB + 4096);
	ck_assert_uint_eq(pressure_need(&p), 4096);
	ck_assert_int_eq(p.next_ms, 0);
	/* in use just under the threshold: no need, the fastest timer */
	put_stat2(OWN "memory.stat", 2 * GiB, 1 * GiB, 0, 3 * GiB - H + 1 * MiB);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.last_slack, H);
	ck_assert_int_eq(p.next_ms, PRESSURE_MIN_MS);
	put_stat2(OWN "memory.stat", 0, 0, 0, 0);

	/* memory.high under memory.max is the limit, and the headroom follows it */
	put_value(OWN "memory.high", 3 * GiB);
	put_value(OWN "memory.current", 3 * GiB - 3 * GiB / 20 + 5000);
	ck_assert_uint_eq(pressure_need(&p), 5000);
	ck_assert_uint_eq(p.headroom, 3 * GiB / 20);

	/* "max" everywhere: no cgroup need, the headroom follows MemTotal */
	put_value(OWN "memory.max", NOLIM);
	put_value(OWN "memory.high", NOLIM);
	put_value(ANC "memory.max", NOLIM);
	put_value(OWN "memory.current", 100 * GiB);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.headroom, 16 * GiB / 20);

	/* an ancestor's limit counts, and its own page cache */
	put_value(OWN "memory.current", 100 * MiB);
	put_value(ANC "memory.max", 2 * GiB);
	put_value(ANC "memory.current", 2 * GiB - 2 * GiB / 20 + 777);
	ck_assert_uint_eq(pressure_need(&p), 777);
	put_stat2(ANC "memory.stat", 700, 77, 0, 0);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.last_slack, 2 * GiB / 20);
	put_stat2(ANC "memory.stat", 0, 0, 0, 0);
	ck_assert_uint_eq(pressure_need(&p), 777);

	/* MemAvailable under the headroom: the larger need wins */
	put_meminfo(16 * GiB, 100 * MiB);
	ck_assert_uint_eq(pressure_need(&p), 2 * GiB / 20 - 100 * MiB);
	put_value(ANC "memory.current", 2 * GiB + 300 * MiB);
	ck_assert_uint_eq(pressure_need(&p), 2 * GiB / 20 + 300 * MiB);
	put_meminfo(16 * GiB, 8 * GiB);
	put_value(ANC "memory.current", 100 * MiB);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.last_need, 0);
	pressure_close(&p);

	/* without memory.stat, page cache counts as in use (and it is said once) */
	v2_tree(4 * GiB, 4 * GiB - H + 10, 8 * GiB, 8 * GiB);
	path_of(path, sizeof(path), OWN "memory.stat");
	ck_assert_int_eq(unlink(path), 0);
	open_with_log(&p, &r, 0, NULL);
	ck_assert_uint_eq(log_count(&r, "cannot open memory.stat"), 1);
	ck_assert_uint_eq(pressure_need(&p), 10);
	pressure_close(&p);
}
END_TEST

/* ---- 4. the memory controller on cgroup v1 ---- */

START_TEST(v1_need)
{
	const uint64_t H = 2 * GiB / 20;
	struct pressure p;
	struct logrec r;

	tree_new();
	put("proc/self/cgroup", "9:name=systemd:/\n4:memory:/grp\n0::/\n");
	put("proc/self/mountinfo",
	    "25 22 0:23 / %s/unified rw,nosuid - cgroup2 cgroup2 rw\n"
	    "34 22 0:31 / %s/v1 rw,relatime shared:15 - cgroup cgroup rw,memory\n", T, T);
	put("unified/cgroup.procs", "1\n"); /* no memory.current: not a memory cgroup */
	put_value("v1/grp/memory.usage_in_bytes", 100 * MiB);
	put("v1/grp/memory.limit_in_bytes", "9223372036854771712\n");
	put("v1/grp/cgroup.event_control", "");
	put("v1/grp/memory.pressure_level", "");
	put_stat1("v1/grp/memory.stat", 0, 0, 0, 0);
	put_meminfo(16 * GiB, 8 * GiB);
	open_with_log(&p, &r, 0, NULL);
	ck_assert_uint_eq(p.sources, PSRC_CGROUP1 | PSRC_MEMINFO);
	ck_assert_int_eq(p.cg_version, 1);
	ck_assert_uint_eq(p.nlevels, 1);
	ck_assert_uint_eq(log_count(&r, "source cgroup2 not used"), 1);
	ck_assert_uint_eq(log_count(&r, "cgroup2"), 1);
	ck_assert_uint_eq(log_count(&r, "source psi not used"), 1); /* no T/proc/pressure/memory */
	ck_assert_uint_eq(log_count(&r, "sources cgroup1,meminfo"), 1);

	/* the huge page-aligned number is "no limit" */
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.levels[0].limit, NOLIM);
	ck_assert_uint_eq(p.headroom, 16 * GiB / 20);
	put_value("v1/grp/memory.usage_in_bytes", 20 * GiB);
	ck_assert_uint_eq(pressure_need(&p), 0);

	/* a finite limit */
	put_value("v1/grp/memory.limit_in_bytes", 2 * GiB);
	put_value("v1/grp/memory.usage_in_bytes", 2 * GiB - H + 4096);
	ck_assert_uint_eq(pressure_need(&p), 4096);
	ck_assert_uint_eq(p.headroom, H);
	ck_assert_uint_eq(p.levels[0].thr_at, 2 * GiB - H); /* the threshold registered */
	put_value("v1/grp/memory.usage_in_bytes", 1 * GiB);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(log_count(&r, "not used"), 2); /* nothing new */

	/* a stream through the cgroup: usage at the limit, most of it clean cache */
	put_value("v1/grp/memory.usage_in_bytes", 2 * GiB - 4096);
	put_stat1("v1/grp/memory.stat", 900 * MiB, 300 * MiB, 1 * MiB, 0);
	ck_assert_uint_eq(pressure_need(&p), 0);
	ck_assert_uint_eq(p.last_slack, 1200 * MiB + 4096 - 1 * MiB);
	/* the threshold is registered, but usage is over it: the timer watches */
	ck_assert_uint_eq(p.levels[0].thr_at, 2 * GiB - H);
	ck_assert_int_eq(p.next_ms, pressure_period_ms(1200 * MiB + 4096 - 1 * MiB - H));
	/* the cache gone to anonymous memory: short */
	put_stat1("v1/grp/memory.stat", 10 * MiB, 0, 0, 0);
	ck_assert_uint_eq(pressure_need(&p), H - 10 * MiB - 4096);
	ck_assert_int_eq(p.next_ms, 0);
	pressure_close(&p);
}
END_TEST

/* ---- the filesystem, faked: volatile bytes that purge gives back ---- */

struct fake {
	uint64_t vol;      /* volatile bytes now */
	unsigned vb_calls; /* calls of volatile_bytes */
	unsigned n;        /* calls of purge; for each: */
	uint64_t asked[64], before[64];
	unsigned vb_at[64]; /* vb_calls at the time */
	pthread_mutex_t mu; /* last: snap() copies what is before it */
};

static uint64_t fake_bytes(void *ctx)
{
	struct fake *f = ctx;
	uint64_t v;

	pthread_mutex_lock(&f->mu);
	f->vb_calls++;
	v = f->vol;
	pthread_mutex_unlock(&f->mu);
	return v;
}

static uint64_t fake_purge(void *ctx, uint64_t bytes)
{
	struct fake *f = ctx;
	uint64_t got;

	pthread_mutex_lock(&f->mu);
	got = bytes < f->vol ? bytes : f->vol;
	if (f->n < 64) {
		f->asked[f->n] = bytes;
		f->before[f->n] = f->vol;
		f->vb_at[f->n] = f->vb_calls;
	}
	f->n++;
	f->vol -= got;
	pthread_mutex_unlock(&f->mu);
	return got;
}

/* A copy of f's counters taken under its lock, to assert on. */
static struct fake snap(struct fake *f)
{
	struct fake s;

	pthread_mutex_lock(&f->mu);
	memcpy(&s, f, offsetof(struct fake, mu));
	pthread_mutex_unlock(&f->mu);
	return s;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- 5. named once ---- */

START_TEST(missing_sources_named_once)
{
	const char *names[] = { "source cgroup2 not used", "source cgroup1 not used",
				"source psi not used", "source meminfo not used" };
	struct fake f = { .vol = 0 }; /* nothing volatile: purge must not be called */
	struct pressure_ops ops = { .ctx = &f, .volatile_bytes = fake_bytes, .purge = fake_purge };
	struct pressure p;
	struct logrec r;
	unsigned lines;

	pthread_mutex_init(&f.mu, NULL);
	tree_new();
	put("proc/self/cgroup", "0::/\n");
	put("proc/self/mountinfo", "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n");
	open_with_log(&p, &r, 0, NULL);
	ck_assert_uint_eq(p.sources, 0);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_msg(log_count(&r, names[i]) == 1, "'%s' logged %u times", names[i],
			      log_count(&r, names[i]));
	ck_assert_uint_eq(log_count(&r, "sources none"), 1);
	lines = r.n;
	ck_assert_uint_eq(lines, 5);
	p.ops = ops; /* pressure_round without the thread */
	for (int i = 0; i < 100; i++) {
		ck_assert_uint_eq(pressure_need(&p), 0);
		ck_assert_uint_eq(p.headroom, H64);
		ck_assert_uint_eq(pressure_round(&p, i % 2), 0);
	}
	ck_assert_uint_eq(r.n, lines);

	/* the daemon moved: the thread opens the sources again, and names none again */
	put("proc/self/cgroup", "0::/elsewhere\n");
	p.last_rescan_ms = 0; /* rescan at once */
	ck_assert_int_eq(pressure_start(&p, &ops), 0);
	WAIT_FOR(&r.mu, r.n > lines);
	pressure_stop(&p);
	ck_assert_uint_eq(log_count(&r, "moved to cgroup (none)"), 1);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_msg(log_count(&r, names[i]) == 1, "'%s' logged %u times", names[i],
			      log_count(&r, names[i]));
	ck_assert_uint_eq(r.n, lines + 1);
	ck_assert_uint_eq(snap(&f).n, 0);
	pressure_close(&p);
}
END_TEST

/* ---- 6. the thread ---- */

START_TEST(thread_purges_on_event_and_avail)
{
	const uint64_t H = 4 * GiB / 20, need = H - 100 * MiB;
	struct fake f = { .vol = 1 * GiB }, s;
	struct pressure_ops ops = { .ctx = &f, .volatile_bytes = fake_bytes, .purge = fake_purge };
	struct pressure p;
	struct logrec r;
	char fifo[512];
	uint64_t t0;
	int fd;

	pthread_mutex_init(&f.mu, NULL);
	v2_tree(4 * GiB, 100 * MiB, 8 * GiB, 8 * GiB);
	open_with_log(&p, &r, 0, NULL);
	ck_assert_uint_eq(p.headroom, H);
	ck_assert_int_eq(pressure_start(&p, &ops), 0);

	/* quiet: two timer rounds and no purge */
	WAIT_FOR(&f.mu, f.vb_calls >= 2);
	ck_assert_uint_eq(snap(&f).n, 0);

	/*
	 * A PSI event while the cgroup is far from its limit, its page cache
	 * counted as room (usage near the limit, 3 GiB of it clean cache): churn,
	 * no purge.  The rounds after it read the sources again.
	 */
	put_stat2(OWN "memory.stat", 2 * GiB, 1 * GiB, 0, 0); /* first: never short between */
	put_value(OWN "memory.current", 4 * GiB - 10 * MiB);
	path_of(fifo, sizeof(fifo), OWN "memory.pressure");
	fd = open(fifo, O_WRONLY | O_NONBLOCK);
	ck_assert_int_ge(fd, 0);
	s = snap(&f);
	ck_assert_int_eq(write(fd, "x\n", 2), 2);
	WAIT_FOR(&f.mu, f.vb_calls >= s.vb_calls + 3);
	ck_assert_uint_eq(snap(&f).n, 0);

	/* the same event with the slack under twice the headroom: one step of volatile / 8 */
	put_stat2(OWN "memory.stat", H + H / 2 - 10 * MiB, 0, 0, 0);
	ck_assert_int_eq(write(fd, "x\n", 2), 2);
	close(fd);
	WAIT_FOR(&f.mu, f.n >= 1);
	/* the round that purged looked again, and the next round too: nothing more */
	WAIT_FOR(&f.mu, f.vb_calls >= f.vb_at[0] + 2);
	s = snap(&f);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.before[0], 1 * GiB);
	ck_assert_uint_eq(s.asked[0], 1 * GiB / 8);

	/* MemAvailable under the headroom: purge until nothing volatile is left */
	put_meminfo(16 * GiB, 100 * MiB);
	WAIT_FOR(&f.mu, f.vol == 0);
	s = snap(&f);
	ck_assert_uint_ge(s.n, 3);
	ck_assert_uint_le(s.n, 64);
	for (unsigned i = 1; i < s.n; i++) {
		uint64_t want = s.before[i] / 8 > need ? s.before[i] / 8 : need;

		ck_assert_msg(s.asked[i] == want, "purge %u asked %" PRIu64 ", not %" PRIu64, i,
			      s.asked[i], want);
	}
	/* nothing volatile: the thread keeps looking but purges no more */
	WAIT_FOR(&f.mu, f.vb_calls >= s.vb_at[s.n - 1] + 2);
	ck_assert_uint_eq(snap(&f).n, s.n);

	t0 = mono_ms();
	pressure_stop(&p);
	ck_assert_uint_lt(mono_ms() - t0, 1000);
	ck_assert(!p.running);
	pressure_close(&p);
}
END_TEST

int main(void)
{
	const TTest *core[] = { decisions, parse_value, parse_meminfo, parse_stat, parse_cgroup,
				parse_mountinfo, v2_sources_and_headroom, v2_need, v1_need };
	const TTest *threaded[] = { missing_sources_named_once, thread_purges_on_event_and_avail };
	Suite *s = suite_create("pressure");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 0);
	TCase *th = utest_tcase(s, "thread", NULL, NULL, 30);
	int status;

	strcpy(BASE, "/tmp/vfs-pressure-XXXXXX");
	if (!mkdtemp(BASE)) {
		perror("mkdtemp");
		return 1;
	}
	for (unsigned i = 0; i < sizeof(core) / sizeof(core[0]); i++)
		tcase_add_test(tc, core[i]);
	for (unsigned i = 0; i < sizeof(threaded) / sizeof(threaded[0]); i++)
		tcase_add_test(th, threaded[i]);
	status = utest_run(s);
	if (nftw(BASE, rm_one, 16, FTW_DEPTH | FTW_PHYS)) {
		perror(BASE);
		return 1;
	}
	return status;
}
