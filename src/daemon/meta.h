/*
 * meta.h - the daemon's lasting metadata, allocated and charged.
 *
 * Every block of metadata that outlives a request (nodes, directory
 * entries, names, symlink targets, xattrs, volatile units, purged-set
 * extents, page-map nodes, open files) comes from here, so the memory
 * limit counts it (DESIGN section 3: metadata is reserved before it is
 * used, like data).  A block is charged at what the allocator really
 * spends on it: its usable size plus malloc's header word.  The charge
 * is reserved before malloc is called (with glibc's chunk size as the
 * estimate) and corrected to the real figure afterwards.
 *
 * Binding: meta_bind(m) makes m the accounting that blocks are charged
 * to; the daemon binds its one struct mem before it allocates anything
 * and unbinds after it freed everything.  Unbound (unit tests), blocks
 * are only counted.  Either way meta_bytes() is what is held now, so a
 * daemon that has freed everything must read zero: fs_destroy checks it
 * (a leak check at every clean exit).
 *
 * Failure: NULL with errno ENOMEM, when the charge does not fit under
 * the limit or malloc fails; callers turn it into -ENOMEM.  Under a
 * build with libfiu (-Dfiu=enabled) the fault point "volatilefs/meta"
 * fails allocations on demand (fault.h).
 *
 * Locking: none; the counters are atomic.
 */
#ifndef VOLATILEFS_META_H
#define VOLATILEFS_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mem;

void meta_bind(struct mem *m);
/* Bytes of metadata held now (charged or counted). */
uint64_t meta_bytes(void);

/*
 * Credit: a caller that reserved bytes for metadata it is about to
 * allocate (mem_reserve for a page fill's page-map nodes; fs_room, with
 * mem_reserve_meta, for a node, a name, an xattr, units, an open file)
 * hands them to this thread with meta_credit_begin(); allocations on
 * the thread are then paid from the credit before anything is charged
 * anew (a block larger than what is left is charged whole, the credit
 * kept).  meta_credit_end() returns what was not used, for the caller to
 * mem_unreserve().  Not nested.
 */
void meta_credit_begin(uint64_t bytes);
uint64_t meta_credit_end(void);

/*
 * Between meta_unlimited(true) and meta_unlimited(false), on this
 * thread, blocks are charged without the limit's check.  Returns the
 * previous setting.  Every use is paid for by something the caller
 * frees or already reserved, so the limit has no side door (DESIGN
 * section 3); each use says so beside it:
 *   - evict.c, evict_unit_locked: the purged-set extent of a unit that
 *     holds memory (at most one: a unit is one run), paid for by the at
 *     least one page the purge frees; a unit that holds none is charged
 *     under the limit;
 *   - notify.c, hook_prepare: a file's one notifier record, the same way
 *     (funded only by a purge that frees a page; the probe's is limited);
 *   - notify.c, hook_unlinking: a name deletion, paid for by the larger
 *     directory entry freed with it;
 *   - fs_ns.c, fs_rename: the new entry when its name is no longer than the
 *     old one, whose entry is freed in the same call;
 *   - fs_data.c, fs_ofile_new: open descriptions past the limit, at most
 *     FS_OPEN_OVERDRAFT bytes of them in all (fs.h);
 *   - fs.c, fs_init: the root, once.
 * Outside meta: a parked reply (notify.c) lives while its request is in
 * flight and its invalidation is pending, like libfuse's own request
 * buffer, and both show in the RSS the monitor reads.
 */
bool meta_unlimited(bool on);

/* What a block of size bytes is charged (glibc's chunk size). */
size_t meta_cost(size_t size);

void *meta_alloc(size_t size);
void *meta_calloc(size_t size); /* zeroed */
char *meta_strdup(const char *s);
void meta_free(void *p);

#endif
