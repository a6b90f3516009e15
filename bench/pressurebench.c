/*
 * pressurebench - a plain program allocating at full speed inside a v1
 * memory cgroup that also holds memory meant to be given back: MADV_FREE
 * memory, or volatilefs with volatile data (DESIGN section 10; bench/, run by
 * contrib/bench.sh, group "pressure").  Needs root and the v1 memory
 * controller; CGROUP_DIR is a cgroup under /sys/fs/cgroup/memory with
 * memory.limit_in_bytes set.  The program itself stays outside the cgroup:
 * only its children join it.
 *
 * The allocation ("the hog") is memhog's (tests/mount/memhog.c): HOG_MIB
 * times malloc(1 MiB) and a write to every page, in a child that joined
 * CGROUP_DIR, timed from its first malloc to its last page.
 *
 *   pressurebench madvfree CGROUP_DIR MIB HOG_MIB
 *       The baseline: a child joins CGROUP_DIR, maps MIB MiB anonymous,
 *       writes every page, madvise(MADV_FREE)s all of it and waits; then
 *       the hog runs.  Prints "hog_ms", "hog_ok 1|0" (it completed),
 *       "oom_kills" (the rise of oom_kill in CGROUP_DIR/memory.oom_control),
 *       "holder_alive 1|0" (the MADV_FREE holder survived), "usage_mib"
 *       (the cgroup's usage before the hog) and "reclaimed_mib" (how much of
 *       the holder's VmRSS the kernel took back).  MIB 0: the hog alone
 *       in the cgroup, nothing to take back (what the cgroup itself costs).
 *
 *   pressurebench react CGROUP_DIR MOUNTROOT HEADROOM HOG_MIB
 *       A volatilefs daemon runs in CGROUP_DIR with volatile data, mounted
 *       at MOUNTROOT.  Registers through cgroup.event_control an eventfd
 *       usage threshold on memory.usage_in_bytes at limit - HEADROOM
 *       (HEADROOM 0: the daemon's default, the larger of 64 MiB and 5% of
 *       the tightest of the cgroup limit and MemTotal), so it is woken on
 *       the same crossings as the daemon, and a second one OUT_MARGIN
 *       under it.  A thread timestamps the crossings of both (each one's
 *       alternate, up and down; with PB_DEBUG set in the environment, each
 *       is traced on stderr with memory.usage_in_bytes); another polls
 *       user.volatile.stats on MOUNTROOT (fgetxattr, back to back) until
 *       pressure_purges_total changes.  Then the hog runs.  Prints, besides "hog_ms", "hog_ok" and
 *       "oom_kills" as above:
 *         up_ms          from the hog's start to the first crossing into the headroom
 *         first_purge_ms from that crossing to the first purge seen in the stats
 *                        (negative: seen before the crossing was)
 *         out_ms         from that crossing to being back out of the headroom: usage
 *                        crossing down a second threshold, OUT_MARGIN under the
 *                        first (-1: not within 2 s of the hog's end)
 *         out_max_ms     the longest of the stays in the headroom that ended
 *         out_during_hog 1 if the first way out came while the hog still allocated
 *         entries        stays in the headroom (in up to out down) until 200 ms
 *                        after the hog; unfinished 1 if the last had not ended 2 s after
 *         crossings      crossings of the daemon's threshold, both ways
 *         pressure_purges, pressure_mib  the rise of pressure_purges_total and
 *                        pressure_bytes_total (MiB) over the run
 *         polls          stats reads before the first purge was seen
 *         poll_max_ms    the longest of those reads
 *         event_rt       1 if the crossings' thread ran SCHED_FIFO (see below)
 *       and "headroom", "threshold", "usage_mib".
 *
 *   pressurebench churn CGROUP_DIR FILE MIB
 *       Churn, the baseline: a child joins CGROUP_DIR and holds MIB MiB of
 *       MADV_FREE memory, as in madvfree; FILE's pages are dropped from the
 *       page cache (posix_fadvise DONTNEED) and another child in CGROUP_DIR
 *       streams it (read, 1 MiB at a time, to the end: what `cat` does), so
 *       the cgroup fills with clean page cache and the kernel reclaims.
 *       Prints "stream_ms", "stream_mib", "failcnt" (the rise of
 *       memory.failcnt: the times usage hit the limit; 0 means no churn),
 *       "oom_kills", "holder_alive", "held_mib" (the holder's VmRSS before)
 *       and "kept_mib" and "kept" (after, and the fraction of held_mib).
 *
 *   pressurebench churn-vfs CGROUP_DIR FILE MOUNTROOT
 *       The same stream next to a volatilefs daemon running in CGROUP_DIR,
 *       mounted at MOUNTROOT, instead of the holder.  "held_mib" and
 *       "kept_mib" are volatile_bytes of user.volatile.stats before and
 *       after; also "pressure_purges" (the rise of pressure_purges_total).
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "bench.h"

#define MIB (1ull << 20)
#define HEADROOM_MIN (64ull << 20) /* PRESSURE_HEADROOM_MIN of the daemon */
#define MAX_EPISODES 4096
/* Back out of the headroom: usage this far under the daemon's threshold.
 * Next to the threshold, usage_in_bytes moves up and down by about a MiB
 * with nothing purged (per-CPU charge caches), which would cross it back
 * and forth; a purge frees whole units, 64 MiB here. */
#define OUT_MARGIN (16ull << 20)

/* ---- the cgroup ---- */

static uint64_t read_u64_fd(int fd)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		die("pread of a cgroup file:");
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

static uint64_t cg_u64(const char *cg, const char *name)
{
	char path[4096];
	uint64_t v;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", cg, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s:", path);
	v = read_u64_fd(fd);
	close(fd);
	return v;
}

/* oom_kill of CGROUP/memory.oom_control. */
static uint64_t oom_kills(const char *cg)
{
	char path[4096], buf[512], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/memory.oom_control", cg);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s:", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die("read %s:", path);
	buf[n] = '\0';
	p = strstr(buf, "oom_kill ");
	if (!p || sscanf(p + 9, "%llu", &v) != 1)
		die("no oom_kill in %s", path);
	return v;
}

/* In a child: move into the cgroup, and die with the parent. */
static void join_cgroup(const char *cg)
{
	char path[4096], pid[32];
	int fd, n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, pid, (size_t)n) != n)
		die("joining %s:", path);
	close(fd);
}

/* ---- the hog ---- */

struct hog_result {
	double t0, t1;  /* CLOCK_MONOTONIC, comparable with the parent's */
	unsigned long done; /* MiB allocated */
	int ok;
};

struct hog {
	pid_t pid;
	int go;         /* write end: one byte starts it */
	int res;        /* read end: struct hog_result */
};

/* Fork the hog, in the cgroup, waiting for hog_go(). */
static void hog_start(struct hog *h, const char *cg, unsigned long mib)
{
	int go[2], res[2];

	if (pipe2(go, O_CLOEXEC) != 0 || pipe2(res, O_CLOEXEC) != 0)
		die("pipe:");
	h->pid = fork();
	if (h->pid < 0)
		die("fork:");
	if (h->pid == 0) {
		struct hog_result r = { 0 };
		char **v, c;

		close(go[1]);
		close(res[0]);
		join_cgroup(cg);
		v = calloc(mib, sizeof(*v));
		if (!v || read(go[0], &c, 1) != 1)
			_exit(1);
		r.t0 = now_s();
		for (r.done = 0; r.done < mib; r.done++) {
			v[r.done] = malloc(1u << 20);
			if (!v[r.done])
				break;
			for (size_t off = 0; off < (1u << 20); off += 4096)
				v[r.done][off] = (char)(r.done + off);
		}
		r.t1 = now_s();
		r.ok = r.done == mib;
		if (write(res[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(r.ok ? 0 : 1);
	}
	close(go[0]);
	close(res[1]);
	h->go = go[1];
	h->res = res[0];
}

static void hog_go(struct hog *h)
{
	if (write(h->go, "g", 1) != 1)
		die("starting the hog:");
}

/* Wait for the hog; false when it did not report (killed). */
static bool hog_wait(struct hog *h, struct hog_result *r)
{
	ssize_t n;
	int st;

	memset(r, 0, sizeof(*r));
	do
		n = read(h->res, r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	if (waitpid(h->pid, &st, 0) < 0)
		die("waitpid:");
	close(h->go);
	close(h->res);
	if (n != sizeof(*r)) {
		if (WIFSIGNALED(st))
			fprintf(stderr, "pressurebench: the hog died of signal %d\n", WTERMSIG(st));
		memset(r, 0, sizeof(*r));
		return false;
	}
	if (!r->ok)
		fprintf(stderr, "pressurebench: the hog's malloc failed after %lu MiB\n", r->done);
	return true;
}

/* The hog's time in ms, -1 when it was killed before it could say. */
static double hog_ms(const struct hog_result *r)
{
	return r->t1 > 0 ? (r->t1 - r->t0) * 1e3 : -1.0;
}

/* ---- madvfree ---- */

static int madvfree(const char *cg, unsigned long mib, unsigned long hog_mib)
{
	int ready[2], hold[2];
	struct hog_result r;
	uint64_t oom0, usage, rss0, rss1;
	struct hog h;
	pid_t holder;
	bool alive;
	char c;
	int st;

	if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(hold, O_CLOEXEC) != 0)
		die("pipe:");
	holder = fork();
	if (holder < 0)
		die("fork:");
	if (holder == 0) {
		size_t len = (size_t)mib * MIB;
		char *m;

		close(ready[0]);
		close(hold[1]);
		join_cgroup(cg);
		if (len) {
			m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0);
			if (m == MAP_FAILED)
				die("mmap %lu MiB:", mib);
			for (size_t off = 0; off < len; off += 4096)
				m[off] = (char)(off >> 12 | 1);
			if (madvise(m, len, MADV_FREE) != 0)
				die("madvise MADV_FREE:");
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		/* Hold it until the parent closes the pipe (or dies). */
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) != 1)
		die("the MADV_FREE holder did not get ready");
	close(ready[0]);
	usage = cg_u64(cg, "memory.usage_in_bytes");
	rss0 = vmrss_of(holder);
	oom0 = oom_kills(cg);

	hog_start(&h, cg, hog_mib);
	hog_go(&h);
	hog_wait(&h, &r);

	rss1 = vmrss_of(holder);
	alive = waitpid(holder, &st, WNOHANG) == 0;
	printf("hog_ms %.1f\nhog_ok %d\n", hog_ms(&r), r.ok);
	printf("oom_kills %" PRIu64 "\n", oom_kills(cg) - oom0);
	printf("holder_alive %d\n", alive);
	printf("usage_mib %.1f\n", usage / (double)MIB);
	printf("reclaimed_mib %.1f\n", alive && rss0 > rss1 ? (rss0 - rss1) / (double)MIB : 0.0);
	close(hold[1]);
	if (alive)
		waitpid(holder, &st, 0);
	return 0;
}

/* ---- churn ---- */

/* user.volatile.stats KEY of the mount open as fd. */
static uint64_t stat_key(int fd, const char *key)
{
	char buf[4096], pat[96], *p;
	ssize_t n = fgetxattr(fd, "user.volatile.stats", buf, sizeof(buf) - 1);

	if (n < 0)
		die("fgetxattr user.volatile.stats:");
	buf[n] = '\0';
	snprintf(pat, sizeof(pat), "%s=", key);
	p = strstr(buf, pat);
	if (!p)
		die("no %s in user.volatile.stats", key);
	return strtoull(p + strlen(pat), NULL, 10);
}

/* Stream FILE in a child that joined cg, its pages dropped first.  Seconds; MiB read in *mib. */
static double stream(const char *cg, const char *file, double *mib)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC), res[2], st;
	double t0, r[2] = { 0, 0 };
	pid_t pid;

	if (fd < 0)
		die("open %s:", file);
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
		die("posix_fadvise %s", file);
	if (pipe2(res, O_CLOEXEC) != 0)
		die("pipe:");
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		die("fork:");
	if (pid == 0) {
		static char buf[1 << 20];
		double bytes = 0;
		ssize_t n;

		close(res[0]);
		join_cgroup(cg);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			bytes += (double)n;
		r[0] = now_s();
		r[1] = bytes;
		if (n < 0 || write(res[1], r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(res[1]);
	close(fd);
	if (read(res[0], r, sizeof(r)) != sizeof(r))
		fprintf(stderr, "pressurebench: the stream did not finish\n");
	close(res[0]);
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid:");
	*mib = r[1] / (double)MIB;
	return r[0] > 0 ? r[0] - t0 : -1.0;
}

static uint64_t failcnt(const char *cg)
{
	return cg_u64(cg, "memory.failcnt");
}

static void churn_print(double secs, double mib, uint64_t fails, uint64_t ooms, int alive,
			uint64_t held, uint64_t kept)
{
	printf("stream_ms %.1f\nstream_mib %.1f\nfailcnt %" PRIu64 "\n", secs * 1e3, mib, fails);
	printf("oom_kills %" PRIu64 "\nholder_alive %d\n", ooms, alive);
	printf("held_mib %.1f\nkept_mib %.1f\nkept %.4f\n", held / (double)MIB, kept / (double)MIB,
	       held ? (double)kept / (double)held : 0.0);
}

static int churn(const char *cg, const char *file, unsigned long mib)
{
	int ready[2], hold[2], st;
	uint64_t oom0, fail0, rss0, rss1;
	double secs, got;
	pid_t holder;
	bool alive;
	char c;

	if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(hold, O_CLOEXEC) != 0)
		die("pipe:");
	holder = fork();
	if (holder < 0)
		die("fork:");
	if (holder == 0) {
		size_t len = (size_t)mib * MIB;
		char *m;

		close(ready[0]);
		close(hold[1]);
		join_cgroup(cg);
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			die("mmap %lu MiB:", mib);
		for (size_t off = 0; off < len; off += 4096)
			m[off] = (char)(off >> 12 | 1);
		if (madvise(m, len, MADV_FREE) != 0)
			die("madvise MADV_FREE:");
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) != 1)
		die("the MADV_FREE holder did not get ready");
	close(ready[0]);
	rss0 = vmrss_of(holder);
	oom0 = oom_kills(cg);
	fail0 = failcnt(cg);
	secs = stream(cg, file, &got);
	alive = waitpid(holder, &st, WNOHANG) == 0;
	rss1 = alive ? vmrss_of(holder) : 0;
	churn_print(secs, got, failcnt(cg) - fail0, oom_kills(cg) - oom0, alive, rss0,
		    rss1 < rss0 ? rss1 : rss0);
	close(hold[1]);
	if (alive)
		waitpid(holder, &st, 0);
	return 0;
}

static int churn_vfs(const char *cg, const char *file, const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t oom0, fail0, held, kept, purges0;
	double secs, got;

	if (fd < 0)
		die("open %s:", root);
	held = stat_key(fd, "volatile_bytes");
	purges0 = stat_key(fd, "pressure_purges_total");
	oom0 = oom_kills(cg);
	fail0 = failcnt(cg);
	secs = stream(cg, file, &got);
	kept = stat_key(fd, "volatile_bytes");
	churn_print(secs, got, failcnt(cg) - fail0, oom_kills(cg) - oom0, 1, held,
		    kept < held ? kept : held);
	printf("pressure_purges %" PRIu64 "\n", stat_key(fd, "pressure_purges_total") - purges0);
	close(fd);
	return 0;
}

/* ---- react ---- */

/* One usage threshold of cgroup.event_control: its crossings alternate. */
struct thr {
	int efd;
	uint64_t at;
	unsigned crossings;
	bool above;             /* after the crossings counted so far */
};

static struct {
	int usage_fd, stop_efd, root_fd;
	struct thr in, out;     /* the daemon's threshold; OUT_MARGIN under it */
	/* episodes in the headroom, by the event thread: the first crossing of
	 * in upwards, then the first of out downwards */
	double start[MAX_EPISODES], end[MAX_EPISODES];
	unsigned episodes;
	bool inside;
	/* the first purge, by the poller */
	uint64_t base_purges;
	double purge_t;         /* 0: not seen */
	unsigned long polls;
	double poll_max;        /* the longest fgetxattr */
	_Atomic bool stop_poll;
	_Atomic bool crossed;   /* the first crossing into the headroom happened */
} rx;

static void stats_of(int fd, uint64_t *purges, uint64_t *bytes)
{
	char buf[4096], *p;
	ssize_t n = fgetxattr(fd, "user.volatile.stats", buf, sizeof(buf) - 1);

	if (n < 0)
		die("fgetxattr user.volatile.stats:");
	buf[n] = '\0';
	p = strstr(buf, "pressure_purges_total=");
	if (!p)
		die("no pressure_purges_total in user.volatile.stats");
	*purges = strtoull(p + 22, NULL, 10);
	if (bytes) {
		p = strstr(buf, "pressure_bytes_total=");
		*bytes = p ? strtoull(p + 21, NULL, 10) : 0;
	}
}

static void thr_register(int ctl, struct thr *t, uint64_t at)
{
	char line[128];
	int n;

	t->at = at;
	t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->efd < 0)
		die("eventfd:");
	n = snprintf(line, sizeof(line), "%d %d %" PRIu64, t->efd, rx.usage_fd, at);
	if (write(ctl, line, (size_t)n) != n)
		die("registering a usage threshold at %" PRIu64 ":", at);
}

/* Count the crossings signalled on t; true when one of them went upwards. */
static bool thr_take(struct thr *t)
{
	uint64_t cnt;
	bool went_up;

	if (read(t->efd, &cnt, sizeof(cnt)) != sizeof(cnt) || !cnt)
		return false;
	went_up = !t->above || cnt >= 2;
	t->crossings += (unsigned)cnt;
	if (cnt & 1)
		t->above = !t->above;
	return went_up;
}

static void *event_thread(void *arg)
{
	struct pollfd pf[3] = { { .fd = rx.in.efd, .events = POLLIN },
				{ .fd = rx.out.efd, .events = POLLIN },
				{ .fd = rx.stop_efd, .events = POLLIN } };
	bool debug = getenv("PB_DEBUG") != NULL;

	(void)arg;
	for (;;) {
		bool in_up = false;
		double t;

		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll:");
		}
		if (pf[2].revents)
			break;
		t = now_s();
		if (pf[0].revents)
			in_up = thr_take(&rx.in);
		if (pf[1].revents)
			thr_take(&rx.out);
		if (!rx.inside && in_up && rx.episodes < MAX_EPISODES) {
			rx.start[rx.episodes] = t;
			rx.inside = true;
			atomic_store(&rx.crossed, true);
		}
		if (rx.inside && !rx.out.above) {
			rx.end[rx.episodes++] = t;
			rx.inside = false;
		}
		if (debug)
			fprintf(stderr, "pressurebench: %.3f ms usage-threshold %+lld KiB, in %u out %u%s\n",
				t * 1e3, ((long long)read_u64_fd(rx.usage_fd) - (long long)rx.in.at) / 1024,
				rx.in.crossings, rx.out.crossings, rx.inside ? " inside" : "");
	}
	return NULL;
}

static void *poll_thread(void *arg)
{
	(void)arg;
	/*
	 * Poll the stats only from the first crossing on: FUSE round trips back
	 * to back keep both CPUs busy (the poller and a daemon worker) and would
	 * slow the allocation being measured.
	 */
	while (!atomic_load(&rx.crossed) && !atomic_load(&rx.stop_poll))
		usleep(200);
	while (!atomic_load(&rx.stop_poll)) {
		double t0 = now_s(), dt;
		uint64_t purges;

		stats_of(rx.root_fd, &purges, NULL);
		rx.polls++;
		dt = now_s() - t0;
		if (dt > rx.poll_max)
			rx.poll_max = dt;
		if (purges != rx.base_purges) {
			rx.purge_t = now_s();
			break;
		}
	}
	return NULL;
}

/*
 * The event thread runs SCHED_FIFO when it may: it sleeps but for a few
 * microseconds a crossing, and its timestamps should be the crossings', not
 * the end of a wait for a CPU (the hog, the daemon and the poller keep two
 * busy).  True when it got it.
 */
static bool start_event_thread(pthread_t *th)
{
	struct sched_param sp = { .sched_priority = 50 };
	pthread_attr_t a;
	bool rt = false;

	if (pthread_attr_init(&a) == 0 &&
	    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED) == 0 &&
	    pthread_attr_setschedpolicy(&a, SCHED_FIFO) == 0 &&
	    pthread_attr_setschedparam(&a, &sp) == 0)
		rt = pthread_create(th, &a, event_thread, NULL) == 0;
	pthread_attr_destroy(&a);
	if (!rt && pthread_create(th, NULL, event_thread, NULL) != 0)
		die("pthread_create");
	return rt;
}

static int react(const char *cg, const char *root, uint64_t headroom, unsigned long hog_mib)
{
	uint64_t limit, tight, usage, oom0, purges1, bytes0, bytes1, one = 1;
	double tgo, first, out_ms = -1, out_max = -1;
	struct hog_result r;
	pthread_t ev, pl;
	char path[4096];
	struct hog h;
	int ctl;
	bool rt;

	limit = cg_u64(cg, "memory.limit_in_bytes");
	if (limit >= (1ull << 62))
		die("%s has no memory limit", cg);
	if (!headroom) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		uint64_t total = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : limit;

		tight = limit < total ? limit : total;
		headroom = tight / 20 > HEADROOM_MIN ? tight / 20 : HEADROOM_MIN;
	}
	if (headroom + OUT_MARGIN >= limit)
		die("headroom %" PRIu64 " not under the limit %" PRIu64, headroom, limit);

	snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", cg);
	rx.usage_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (rx.usage_fd < 0)
		die("open %s:", path);
	snprintf(path, sizeof(path), "%s/cgroup.event_control", cg);
	ctl = open(path, O_WRONLY | O_CLOEXEC);
	if (ctl < 0)
		die("open %s:", path);
	rx.stop_efd = eventfd(0, EFD_CLOEXEC);
	if (rx.stop_efd < 0)
		die("eventfd:");
	rx.root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rx.root_fd < 0)
		die("open %s:", root);
	usage = read_u64_fd(rx.usage_fd);
	if (usage >= limit - headroom - OUT_MARGIN)
		die("usage %" PRIu64 " is already within %llu MiB of the headroom (limit %" PRIu64
		    ", headroom %" PRIu64 ")", usage, OUT_MARGIN >> 20, limit, headroom);
	thr_register(ctl, &rx.in, limit - headroom);
	thr_register(ctl, &rx.out, limit - headroom - OUT_MARGIN);
	stats_of(rx.root_fd, &rx.base_purges, &bytes0);
	oom0 = oom_kills(cg);

	hog_start(&h, cg, hog_mib);
	rt = start_event_thread(&ev);
	if (pthread_create(&pl, NULL, poll_thread, NULL) != 0)
		die("pthread_create");
	tgo = now_s();
	hog_go(&h);
	if (!hog_wait(&h, &r))
		r.t0 = tgo, r.t1 = now_s();
	/* The crossings the hog's exit causes: 200 ms, or up to 2 s for a way out. */
	for (int i = 0; i < 200; i++) {
		usleep(10000);
		if (i >= 20 && !rx.inside)
			break;
	}
	atomic_store(&rx.stop_poll, true);
	if (write(rx.stop_efd, &one, sizeof(one)) != sizeof(one))
		die("write eventfd:");
	pthread_join(ev, NULL);
	pthread_join(pl, NULL);
	stats_of(rx.root_fd, &purges1, &bytes1);

	first = rx.episodes || rx.inside ? rx.start[0] : 0;
	if (rx.episodes)
		out_ms = (rx.end[0] - rx.start[0]) * 1e3;
	for (unsigned i = 0; i < rx.episodes; i++)
		if ((rx.end[i] - rx.start[i]) * 1e3 > out_max)
			out_max = (rx.end[i] - rx.start[i]) * 1e3;
	if (rx.inside)
		fprintf(stderr, "pressurebench: still in the headroom at the end by the crossings "
			"(in %u, out %u), usage %+lld KiB from the threshold\n", rx.in.crossings,
			rx.out.crossings,
			((long long)read_u64_fd(rx.usage_fd) - (long long)rx.in.at) / 1024);
	printf("headroom %" PRIu64 "\nthreshold %" PRIu64 "\n", headroom, rx.in.at);
	printf("usage_mib %.1f\n", usage / (double)MIB);
	printf("hog_ms %.1f\nhog_ok %d\n", r.done ? hog_ms(&r) : -1.0, r.ok);
	printf("oom_kills %" PRIu64 "\n", oom_kills(cg) - oom0);
	printf("entries %u\nunfinished %d\ncrossings %u\n", rx.episodes + rx.inside, rx.inside,
	       rx.in.crossings);
	printf("up_ms %.3f\n", first ? (first - r.t0) * 1e3 : -1.0);
	printf("first_purge_ms %.3f\n", first && rx.purge_t ? (rx.purge_t - first) * 1e3 : -1.0);
	printf("out_ms %.3f\nout_max_ms %.3f\n", out_ms, out_max);
	printf("out_during_hog %d\n", rx.episodes && rx.end[0] <= r.t1);
	printf("pressure_purges %" PRIu64 "\n", purges1 - rx.base_purges);
	printf("pressure_mib %.1f\n", (bytes1 - bytes0) / (double)MIB);
	printf("polls %lu\npoll_max_ms %.3f\nevent_rt %d\n", rx.polls, rx.poll_max * 1e3, rt);
	if (!first)
		fprintf(stderr, "pressurebench: usage never crossed %" PRIu64 "\n", rx.in.at);
	close(rx.in.efd); /* closing the eventfds unregisters the thresholds */
	close(rx.out.efd);
	close(ctl);
	close(rx.usage_fd);
	close(rx.root_fd);
	close(rx.stop_efd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && strcmp(argv[1], "madvfree") == 0)
		return madvfree(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
	if (argc == 6 && strcmp(argv[1], "react") == 0)
		return react(argv[2], argv[3], parse_size(argv[4]), strtoul(argv[5], NULL, 10));
	if (argc == 5 && strcmp(argv[1], "churn") == 0)
		return churn(argv[2], argv[3], strtoul(argv[4], NULL, 10));
	if (argc == 5 && strcmp(argv[1], "churn-vfs") == 0)
		return churn_vfs(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: pressurebench madvfree CGROUP_DIR MIB HOG_MIB\n"
			"       pressurebench react CGROUP_DIR MOUNTROOT HEADROOM HOG_MIB\n"
			"       pressurebench churn CGROUP_DIR FILE MIB\n"
			"       pressurebench churn-vfs CGROUP_DIR FILE MOUNTROOT\n");
	return 2;
}
