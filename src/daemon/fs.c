/*
 * fs.c - the filesystem's set-up and teardown, the lifetime of its nodes
 * (freeing, internal references) and making room for new memory; see
 * fs.h, and fs_int.h for the other parts (namespace, attributes, data,
 * xattrs) and the helpers they share.
 */
#include "fs_int.h"

#include <inttypes.h>
#include <stdio.h>

#include "file.h"
#include "meta.h"

static void release_page(void *page, void *ctx)
{
	page_batch_release(page, ctx);
}

/* Free a node that has neither names nor kernel references.  ns_lock held for writing. */
void node_free(struct fs *fs, struct inode *n)
{
	struct page_batch b = { .arena = &fs->arena };

	/* A read may still hold n's lock for a moment after its reply went
	 * out (fs_read_reply), and the kernel may have forgotten n in that
	 * moment: wait for it to let go.  No one can take the lock anew. */
	pthread_rwlock_wrlock(&n->lock);
	pthread_rwlock_unlock(&n->lock);
	if (S_ISREG(n->mode)) {
		units_clear(&fs->lru, &n->units);
		for (struct ofile *of = n->open_files; of; of = of->next)
			if (of->poll_handle && fs->hooks.poll_free)
				fs->hooks.poll_free(fs->hooks.ctx, of->poll_handle);
	}
	if (S_ISREG(n->mode) && fs->store->node_free)
		fs->store->node_free(fs, n);
	inode_free(&fs->itable, n, release_page, &b);
	page_batch_flush(&b);
}

void fs_sync_locked(struct fs *fs, struct inode *n)
{
	if (fs->store->sync && S_ISREG(n->mode))
		fs->store->sync(fs, n);
}

void fs_sync(struct fs *fs, struct inode *n)
{
	if (!fs->store->sync || !S_ISREG(n->mode))
		return;
	pthread_rwlock_wrlock(&n->lock);
	fs->store->sync(fs, n);
	pthread_rwlock_unlock(&n->lock);
}

static uint64_t shm_used_of(void *ctx)
{
	return shm_used(ctx);
}

int fs_shm_setup(struct fs *fs, uint64_t cap)
{
	int ret = shm_setup(&fs->shm, cap);

	if (ret)
		return ret;
	fs->mem.shared_ctx = &fs->shm;
	fs->mem.shared_used = shm_used_of;
	/* Stores and loads through mappings of the backing files need
	 * pages of the tmpfs that no reservation paid for: the daemon's
	 * own writes leave them this much (with what fs_shm_recap leaves
	 * above the limit, about 4 MiB in all). */
	fs->mem.keep = FS_SHM_KEEP;
	fs_shm_recap(fs); /* what the limit leaves beside our RSS, from the start */
	return 0;
}

#define RECAP_STEP (1u << 20)

uint64_t fs_shm_cap_max(struct fs *fs)
{
	uint64_t limit = atomic_load(&fs->mem.limit), rss = mem_rss_kernel(&fs->mem);
	/*
	 * The limit plus DESIGN section 3's allowance, max(1%, 4 MiB), beside
	 * our RSS.  The daemon's own writes stop at the limit (they reserve
	 * first, mem.h), so the allowance is what is left, when the limit is
	 * reached, for what the daemon cannot reserve: a load through a
	 * mapping of a purged page (the tmpfs needs a page for it, punched
	 * again at the next sync) and stores through a mapping or an open
	 * the kernel writes itself, until the monitor purges.
	 */
	uint64_t slack = mem_allowance(limit);
	/* Less what the size may lag (it moves only by more than
	 * RECAP_STEP), and three quarters of the allowance for what our RSS
	 * may grow by while the tmpfs is full: the size never drops below
	 * what the tmpfs holds, so RSS that grows after writers the kernel
	 * serves filled it (new worker threads, their buffers) is memory held
	 * past the size; a quarter of the allowance is what those writers
	 * may take beyond the limit. */
	uint64_t keep = rss + RECAP_STEP + slack / 4 * 3;

	return limit + slack > keep ? limit + slack - keep : 0;
}

void fs_shm_recap(struct fs *fs)
{
	uint64_t cap, used, cur;

	if (fs->shm.mnt < 0)
		return;
	cap = fs_shm_cap_max(fs);
	used = shm_used(&fs->shm);
	if (cap < used)
		cap = used;
	cur = atomic_load(&fs->shm.cap);
	/* Not for every page of RSS that comes and goes. */
	if (cap + RECAP_STEP < cur || cap > cur + RECAP_STEP)
		(void)shm_set_cap(&fs->shm, cap);
}

void fs_monitor_kick(struct fs *fs)
{
	void (*kick)(struct fs *) = atomic_load(&fs->monitor_kick);

	if (kick)
		kick(fs);
}

void fs_use_shm_store(struct fs *fs)
{
	if (fs->shm.root >= 0 && fs->itable.count <= 1) {
		fs->store = &shm_store;
		fs->passthrough = true;
	}
}

void node_maybe_free(struct fs *fs, struct inode *n)
{
	if (n->nlink == 0 && atomic_load(&n->nlookup) == 0)
		node_free(fs, n);
}

int fs_init(struct fs *fs, const struct fs_config *cfg)
{
	bool was;
	int ret;

	memset(fs, 0, sizeof(*fs));
	ret = -pthread_rwlock_init(&fs->ns_lock, NULL);
	if (ret)
		return ret;
	fs->owner = cfg->owner;
	fs->purged_eio = cfg->purged_eio;
	fs->write_unmark = cfg->write_unmark;
	fs->store = &arena_store;
	fs->shm.root = fs->shm.mnt = -1;
	ret = -pthread_mutex_init(&fs->evict_lock, NULL);
	if (ret)
		goto out_ns;
	ret = -pthread_mutex_init(&fs->pt_lock, NULL);
	if (ret)
		goto out_evict;
	ret = lru_init(&fs->lru);
	if (ret)
		goto out_pt;
	ret = arena_init(&fs->arena);
	if (ret)
		goto out_lru;
	ret = mem_init(&fs->mem, &fs->arena, cfg->memory_limit, cfg->memory_low);
	if (ret)
		goto out_arena;
	meta_bind(&fs->mem); /* before the first node */
	ret = itable_init(&fs->itable);
	if (ret)
		goto out_mem;
	/* The root is charged but never refused: a daemon whose own RSS is
	 * past a tiny limit must still mount (and can be given more room). */
	was = meta_unlimited(true);
	fs->root = inode_new(&fs->itable, S_IFDIR | (cfg->root_mode & 07777), cfg->root_uid,
			     cfg->root_gid, 0);
	meta_unlimited(was);
	if (!fs->root) {
		ret = -ENOMEM;
		goto out_itable;
	}
	fs->root->nlink = 2;
	fs->root->size = 2 * FS_DIRENT_SIZE;
	fs->root->dir.parent = fs->root;
	fs->root->dir.auto_mode = (uint8_t)cfg->root_auto;
	atomic_store(&fs->auto_unlink_seen, cfg->root_auto == FS_AUTO_UNLINK);
	atomic_store(&fs->root->nlookup, 1); /* the kernel's, never forgotten */
	return 0;

out_itable:
	itable_destroy(&fs->itable, NULL, NULL);
out_mem:
	meta_bind(NULL);
	mem_destroy(&fs->mem);
	shm_teardown(&fs->shm);
out_arena:
	arena_destroy(&fs->arena);
out_lru:
	lru_destroy(&fs->lru);
out_pt:
	pthread_mutex_destroy(&fs->pt_lock);
out_evict:
	pthread_mutex_destroy(&fs->evict_lock);
out_ns:
	pthread_rwlock_destroy(&fs->ns_lock);
	return ret;
}

/*
 * Everything was freed: every figure of the accounting must be back to
 * zero.  What is not is a leak (or a reservation never given back), and
 * is said on stderr, which every mount test treats as a failure.
 */
static void fs_check_leaks(struct fs *fs)
{
	uint64_t meta = meta_bytes(), pages = arena_pages(&fs->arena);
	uint64_t charged = atomic_load(&fs->mem.charged);

	if (meta || pages || charged)
		fprintf(stderr,
			"volatilefs: at exit, not freed: %" PRIu64 " bytes of metadata, %" PRIu64
			" pages; %" PRIu64 " bytes still charged\n", meta, pages, charged);
}

void fs_destroy(struct fs *fs)
{
	struct page_batch b = { .arena = &fs->arena };

	for (struct inode *n = itable_first(&fs->itable); n; n = itable_next(&fs->itable, n)) {
		if (!S_ISREG(n->mode))
			continue;
		for (struct ofile *of = n->open_files; of; of = of->next)
			if (of->poll_handle && fs->hooks.poll_free)
				fs->hooks.poll_free(fs->hooks.ctx, of->poll_handle);
		if (fs->store->node_free)
			fs->store->node_free(fs, n);
	}
	itable_destroy(&fs->itable, release_page, &b);
	page_batch_flush(&b);
	fs_check_leaks(fs);
	meta_bind(NULL);
	mem_destroy(&fs->mem);
	arena_destroy(&fs->arena);
	lru_destroy(&fs->lru);
	pthread_mutex_destroy(&fs->pt_lock);
	pthread_mutex_destroy(&fs->evict_lock);
	pthread_rwlock_destroy(&fs->ns_lock);
}

/*
 * New nodes and attributes cost memory too.  Over the limit, purge
 * first, as a write does; only when that leaves us over is it ENOSPC.
 * What fits is reserved and handed to this thread as metadata credit:
 * its allocations until fs_room_end() are paid from it, so no other
 * request can take the room between the check and the allocation, and
 * no second check can refuse what this one granted (a create's ENOMEM
 * in mount-concurrency, when the kernel's RSS, read again for the
 * charge, had grown by pages other writers had taken and not yet
 * filled).  Caller holds no lock.
 */
int fs_room(struct fs *fs, uint64_t bytes)
{
	for (int tries = 0; mem_reserve_meta(&fs->mem, bytes) < 0; tries++) {
		if (tries == SPACE_RETRIES || !find_room(fs, bytes)) {
			atomic_fetch_add(&fs->mem.enospc_total, 1);
			return -ENOSPC;
		}
	}
	meta_credit_begin(bytes);
	return 0;
}

void fs_room_end(struct fs *fs)
{
	mem_unreserve(&fs->mem, meta_credit_end());
}

/*
 * A request refused for space: purge volatile data and try again.  Only
 * when nothing volatile is left does ENOSPC reach the caller (and
 * enospc_total).  Requests that hit the limit together queue on the
 * evictor: the first purges, the next find the RSS already low and free
 * nothing, yet must try again, since room was made; so a request gives
 * up only when a purge freed nothing and no volatile page is held any
 * more (or after SPACE_RETRIES rounds of losing the room to others, or
 * of volatile pages that cannot go: open auto=unlink files).
 *
 * A request that would not fit even if every volatile page went (a
 * fallocate of a petabyte) purges nothing: it fails at once.  The RSS
 * that judges it counts memory that comes and goes (receive buffers, the
 * allocator's free lists), so only a miss by more than DESIGN section 3's
 * allowance, max(1%, 4 MiB), counts as hopeless: judged by the RSS
 * alone, a 1 MiB write got ENOSPC with 1 MiB of volatile data held (the
 * evict test, once under stress-ng).  Before it gives up, free heap
 * memory is handed back to the kernel (mem_trim), so a flood of metadata
 * that was deleted does not keep refusing requests.
 */
bool find_room(struct fs *fs, uint64_t bytes)
{
	uint64_t limit = atomic_load(&fs->mem.limit);
	uint64_t vol = atomic_load(&fs->lru.resident) * ARENA_PAGE_SIZE;
	uint64_t rest = mem_rss(&fs->mem), own = atomic_load(&fs->mem.charged);
	uint64_t swing = mem_allowance(limit), pages = (bytes + ARENA_PAGE_SIZE - 1) / ARENA_PAGE_SIZE;

	/* Nothing volatile to purge, or a request no purge can serve even
	 * with every volatile page gone: with what the daemon charged for the
	 * rest (exact), or with the rest of its RSS less what the RSS swings. */
	rest = rest > vol ? rest - vol : 0;
	own = own > vol ? own - vol : 0;
	if (vol == 0 || bytes > limit || own > limit - bytes ||
	    (rest > swing && rest - swing > limit - bytes)) {
		mem_trim(&fs->mem, true);
		return mem_fits(&fs->mem, bytes);
	}
	if (fs->make_room && fs->make_room(fs, pages))
		return true;
	if (atomic_load(&fs->lru.resident) > 0 || mem_fits(&fs->mem, bytes))
		return true;
	mem_trim(&fs->mem, true);
	return mem_fits(&fs->mem, bytes);
}

void fs_hold(struct inode *n)
{
	atomic_fetch_add(&n->nlookup, 1);
}

void fs_put_locked(struct fs *fs, struct inode *n)
{
	atomic_fetch_sub(&n->nlookup, 1);
	if (n != fs->root)
		node_maybe_free(fs, n);
}
