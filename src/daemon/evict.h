/*
 * evict.h - purging: discarding volatile units to bring the daemon's RSS
 * back under its limit, and on request.
 *
 * Purging a unit (DESIGN section 4) frees every page it holds at once (the
 * arena gives them back to the kernel, so RSS falls), adds the unit's
 * bytes within the file's size to the file's purged set, leaves the
 * unit volatile, and hands the host (the FUSE glue) the byte range so
 * the kernel drops its cached pages there; the file's poll waiters are
 * woken once it has (notify.h).
 *
 * Who purges:
 *   - the write path, when a write needs memory the limit does not allow
 *     (evict_for_write, the filesystem's make_room hook that evict_attach
 *     installs): down to memory_low minus what the write needs;
 *   - the monitor thread, every EVICT_MONITOR_MS, for growth that does not
 *     come through writes (metadata, libfuse buffers): reconciles the RSS
 *     estimate with the kernel and purges down to memory_low when over;
 *   - user.volatile.purge and user.volatile.memory_limit (vxattr.c);
 *   - the pressure thread (pressure.h), when the cgroup or the machine
 *     runs short of memory (evict_for_pressure).
 *
 * Order: lru_pick() (units.h): priority, then aged, then least recently
 * used.  One evictor runs at a time (fs->evict_lock).  It holds
 * fs->ns_lock for reading while it works, so the inode of a unit it
 * picked cannot be freed, and takes each victim's inode lock for writing
 * while it purges that unit.  Lock order: evict_lock, ns_lock, inode
 * lock, lru->lock.  Callers hold none of these.
 */
#ifndef VOLATILEFS_EVICT_H
#define VOLATILEFS_EVICT_H

#include <stdbool.h>
#include <stdint.h>

struct fs;
struct inode;
struct unit;

#define EVICT_MONITOR_MS 100
/* While writable passthrough opens exist: how often the monitor looks at the room left. */
#define EVICT_KEEP_MS 10

/*
 * Recency that sees the kernel's own reads (units.h): every
 * EVICT_PROBE_MS the monitor thread probes up to EVICT_PROBE_MAX of the
 * coldest units that the kernel may cache: their cached pages are
 * dropped (through the same hook as a purge's), their data stays, and a
 * read of them then reaches the daemon and makes them most recently used.
 */
#define EVICT_PROBE_MS 1000
#define EVICT_PROBE_MAX 64
void evict_probe(struct fs *fs);

/*
 * Purge unit u of n; caller holds n's lock for writing.  Returns the
 * pages freed, or -ENOMEM when the purged set could not grow (nothing
 * changed then): a unit that holds memory pays for its extent with the
 * pages it frees; one that holds none must find room under the limit.
 */
int64_t evict_unit_locked(struct fs *fs, struct inode *n, struct unit *u);

/* Purge in order until the RSS estimate is at or under target.  Pages freed. */
uint64_t evict_to(struct fs *fs, uint64_t target);
/* Purge whole units in order until at least bytes were freed.  Bytes freed. */
uint64_t evict_bytes(struct fs *fs, uint64_t bytes);
/*
 * As evict_bytes, for memory pressure from outside (pressure.h): counted
 * in pressure_purges_total and pressure_bytes_total too.
 */
uint64_t evict_for_pressure(struct fs *fs, uint64_t bytes);
/*
 * Purge every unit (auto=unlink files that are open are skipped).  Bytes
 * freed, or -ENOMEM when a unit that holds no memory found no room for
 * its purged-set extent (every unit that holds memory was purged).
 */
int64_t evict_all(struct fs *fs);
/*
 * Purge every unit of one file (no lock held), and under auto=unlink
 * remove its name, also while it is open.  Bytes freed, or -errno
 * (-ENOMEM as evict_all).
 */
int64_t evict_file(struct fs *fs, struct inode *n);

/*
 * A write needs `pages` new pages and the limit refuses them: purge down
 * to memory_low minus what it needs.  True when something was freed (the
 * write should try again).
 */
bool evict_for_write(struct fs *fs, uint64_t pages);

/*
 * Hand the filesystem its make_room hook (fs.h): evict_for_write.  Once,
 * after fs_init and before the first request; without it a write that
 * finds the limit reached purges nothing and fails with ENOSPC.
 */
void evict_attach(struct fs *fs);

/* If RSS is over the limit, purge down to memory_low. */
void evict_check(struct fs *fs);

/* Start and stop the monitor thread.  Zero or -errno.  Stop it before fs_destroy. */
int evict_monitor_start(struct fs *fs);
void evict_monitor_stop(struct fs *fs);

#endif
