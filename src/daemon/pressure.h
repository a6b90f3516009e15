/*
 * pressure.h - memory pressure from outside the daemon (DESIGN section 10).
 *
 * memory_limit is the daemon's own ceiling (mem.h, evict.h).  This module
 * watches everyone else's: the daemon's memory cgroup and the machine.
 * It owns the sources and the thread that waits on them; it knows nothing
 * of files, and purges through a callback (struct pressure_ops).
 *
 * Sources, each used when it exists and skipped (named once in the log)
 * when it does not:
 *   cgroup2  the v2 cgroup of /proc/self/cgroup ("0::PATH") and its
 *            ancestors: memory.current less the clean page cache of
 *            memory.stat against memory.max and memory.high;
 *            memory.events wakes us (POLLPRI) on high/max events, and the
 *            cgroup's memory.pressure carries the PSI trigger.
 *   cgroup1  the v1 memory cgroup ("N:...memory...:PATH") and its
 *            ancestors: memory.usage_in_bytes less the clean page cache of
 *            memory.stat (total_*) against memory.limit_in_bytes,
 *            with a usage-threshold eventfd at limit - headroom and a
 *            memory.pressure_level eventfd ("medium") registered through
 *            cgroup.event_control.
 *   psi      a PSI trigger (POLLPRI) on memory.pressure of the v2 cgroup
 *            when cgroup2 is in use, else on PROC/pressure/memory.
 *   meminfo  MemAvailable of PROC/meminfo against the headroom.
 *
 * Decisions (pure functions below, unit-tested; how they were chosen is
 * measured in pressure.c): clean page cache that the kernel can drop is no
 * shortage.  A cgroup level's memory "in use" is its usage less the clean
 * file pages of its memory.stat (pressure_parse_stat); the level is short
 * while in use > limit - headroom.  The machine is short while MemAvailable
 * (which already counts droppable cache as available) < headroom.  The
 * bytes "needed" are the largest shortfall over all sources.  The "slack"
 * is the least room left anywhere, droppable cache counted as room: limit -
 * in use for each level, MemAvailable for the machine.  While anything is
 * needed, the thread purges one step: max(needed, volatile bytes / 8), at
 * least one unit, and looks again at once, until nothing is needed or
 * nothing volatile holds memory.  A PSI or pressure-level event purges a
 * step too, but only while the slack is under twice the headroom (or no
 * source can tell the slack): an event while the kernel can still drop
 * clean cache for it is churn, not shortage.  Between events the thread
 * re-reads the sources on a timer whose period follows the distance to the
 * headroom in memory in use (PRESSURE_RATE bytes per ms, between
 * PRESSURE_MIN_MS and PRESSURE_MAX_MS), so a quiet machine costs a few
 * reads a second.
 *
 * Test seam: cfg.proc replaces /proc (PROC/self/cgroup,
 * PROC/self/mountinfo, PROC/meminfo, PROC/pressure/memory), so a test can
 * lay out a directory as a v2 cgroup.  When the PSI file is a FIFO, no
 * trigger is written to it and every line written to it is one event.
 *
 * Locking: struct pressure belongs to its thread once pressure_start()
 * returned; before that and after pressure_stop() to the caller.  The
 * only field read from other threads is `sources` (atomic).
 */
#ifndef VOLATILEFS_PRESSURE_H
#define VOLATILEFS_PRESSURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PRESSURE_LEVELS_MAX 8          /* cgroup levels watched, nearest first */
#define PRESSURE_HEADROOM_MIN (64ull << 20)
#define PRESSURE_RATE (8ull << 20)     /* assumed fastest allocation, bytes per ms */
#define PRESSURE_MIN_MS 5
#define PRESSURE_MAX_MS 250
#define PRESSURE_RESCAN_MS 2000        /* re-read /proc/self/cgroup and the limits */
#define PRESSURE_NOLIMIT UINT64_MAX
/* The PSI trigger: 150 ms of "some" stall in a 2 s window (2 s windows are
 * allowed to unprivileged users too). */
#define PRESSURE_PSI_TRIGGER "some 150000 2000000"

/* Bits of pressure.sources. */
#define PSRC_CGROUP2 (1u << 0)
#define PSRC_CGROUP1 (1u << 1)
#define PSRC_PSI     (1u << 2)
#define PSRC_MEMINFO (1u << 3)

struct pressure_cfg {
	const char *proc;       /* "/proc", or a test directory laid out like it */
	uint64_t headroom;      /* 0: the default (pressure_default_headroom) */
	/* One line for the log, without newline.  NULL: stderr. */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
	/* When not NULL, kept equal to pressure.sources (for the stats). */
	_Atomic unsigned *sources_out;
};

/* What the thread asks of the filesystem. */
struct pressure_ops {
	void *ctx;
	/* Bytes of memory held by volatile units now. */
	uint64_t (*volatile_bytes)(void *ctx);
	/* Purge whole units in purge order until at least bytes were freed.  Bytes freed. */
	uint64_t (*purge)(void *ctx, uint64_t bytes);
};

/* One cgroup level whose limits apply to the daemon. */
struct pressure_level {
	int usage_fd;           /* memory.current / memory.usage_in_bytes */
	int stat_fd;            /* memory.stat (clean page cache), -1 when it cannot be read */
	int limit_fd[2];        /* v2: memory.max, memory.high; v1: memory.limit_in_bytes, -1 */
	int events_fd;          /* v2: memory.events (POLLPRI), else -1 */
	int ctl_fd;             /* v1: cgroup.event_control, else -1 */
	int thr_efd;            /* v1: usage-threshold eventfd, else -1 */
	int lvl_efd;            /* v1: memory.pressure_level eventfd, else -1 */
	int lvl_fd;             /* v1: memory.pressure_level, else -1 */
	uint64_t limit;         /* the lower of its limits, PRESSURE_NOLIMIT when none */
	uint64_t thr_at;        /* v1: the threshold registered, 0 when none */
};

struct pressure {
	struct pressure_cfg cfg;
	_Atomic unsigned sources;   /* PSRC_* in use */
	unsigned named;             /* PSRC_* already named in the log as skipped */
	char cgroup_text[8192];     /* PROC/self/cgroup when the cgroups were opened */
	int cg_version;             /* 2, 1 or 0 (no cgroup source) */
	char cg_dir[512];           /* the daemon's own cgroup directory */
	struct pressure_level levels[PRESSURE_LEVELS_MAX];
	size_t nlevels;
	int meminfo_fd;
	int psi_fd;
	bool psi_fifo;              /* the test seam: lines are events */
	uint64_t memtotal;
	uint64_t headroom;          /* in force */
	uint64_t last_need;         /* from the last pressure_need() */
	uint64_t last_slack;        /* likewise; PRESSURE_NOLIMIT when no source tells it */
	int next_ms;                /* timer period after the last pressure_need() */
	uint64_t last_rescan_ms;
	/* The thread. */
	struct pressure_ops ops;
	pthread_t thread;
	bool running;
	int stop_efd;
};

/* Decisions, pure. */
uint64_t pressure_default_headroom(uint64_t tightest_limit);
/* Bytes over limit - headroom (0 when not in the headroom). */
uint64_t pressure_need_limit(uint64_t usage, uint64_t limit, uint64_t headroom);
/* Bytes MemAvailable is short of the headroom. */
uint64_t pressure_need_avail(uint64_t avail, uint64_t headroom);
/* One purge step: max(need, volatile / 8), at least 1 (one unit); 0 when nothing is asked. */
uint64_t pressure_step(uint64_t need, bool event, uint64_t volatile_bytes);
/* Memory in use at a cgroup level: usage less its clean page cache (0 at least). */
uint64_t pressure_in_use(uint64_t usage, uint64_t clean);
/* Room left under a limit for memory in use: limit - in_use, 0 at least;
 * PRESSURE_NOLIMIT when there is no limit. */
uint64_t pressure_slack(uint64_t in_use, uint64_t limit);
/* Does a pressure event purge a step?  While the slack is under twice the
 * headroom, or unknown (PRESSURE_NOLIMIT). */
bool pressure_event_counts(uint64_t slack, uint64_t headroom);
/* Timer period in ms for a distance in bytes to the nearest headroom. */
int pressure_period_ms(uint64_t distance);

/* Parsers, pure.  Zero or -EINVAL / -ENOENT. */
/* A cgroup limit or counter: a decimal number or "max". */
int pressure_parse_value(const char *s, uint64_t *out);
/* From /proc/meminfo: MemAvailable and MemTotal in bytes (-ENOENT when absent). */
int pressure_parse_meminfo(const char *text, uint64_t *avail, uint64_t *total);
/*
 * From a cgroup's memory.stat: the clean page cache the kernel can drop,
 * inactive_file + active_file - dirty - writeback (0 at least).  Version 1
 * reads the hierarchical total_inactive_file, total_active_file,
 * total_dirty and total_writeback; version 2 inactive_file, active_file,
 * file_dirty and file_writeback.  -ENOENT when a file LRU count is absent
 * (dirty and writeback absent count as 0).
 */
int pressure_parse_stat(const char *text, int version, uint64_t *clean);
/*
 * From /proc/self/cgroup: the path of the v2 cgroup (version 2) or of the
 * v1 memory cgroup (version 1), copied into path.  -ENOENT when absent.
 */
int pressure_parse_cgroup(const char *text, int version, char *path, size_t len);
/*
 * From /proc/self/mountinfo: where the v2 hierarchy (version 2) or the v1
 * memory hierarchy (version 1) is mounted, and the root of the hierarchy
 * that mount shows.  -ENOENT when not mounted.
 */
int pressure_parse_mountinfo(const char *text, int version, char *mnt, size_t mlen,
			     char *root, size_t rlen);

/*
 * Open every source that exists; the others are named once through
 * cfg->log.  Zero (also when no source exists) or -errno (out of memory).
 */
int pressure_open(struct pressure *p, const struct pressure_cfg *cfg);
void pressure_close(struct pressure *p);
/*
 * Read every source: the bytes to free to be out of every headroom now (0
 * when none).  Sets last_need, last_slack, next_ms and, with the default
 * headroom, headroom.
 */
uint64_t pressure_need(struct pressure *p);
/* "cgroup1,psi,meminfo", or "none". */
void pressure_format_sources(unsigned sources, char *buf, size_t len);

/*
 * One round as the thread runs it after a wake-up with `events` pressure
 * events: purge in steps while needed, and a step for each event while
 * pressure_event_counts() says it counts.  Bytes freed.
 */
uint64_t pressure_round(struct pressure *p, unsigned events);

/* Start and stop the thread (after pressure_open).  Zero or -errno. */
int pressure_start(struct pressure *p, const struct pressure_ops *ops);
void pressure_stop(struct pressure *p);

#endif
