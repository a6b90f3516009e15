/*
 * concurrency: many processes at once on a volatilefs mount while purges run all the time
 * (DESIGN section 9: "no deadlock, no lost non-volatile byte, RSS held near the limit").
 *
 *	$ tests/mount/with-mount.sh build/src/daemon/volatilefs -o memory_limit=64M -- ./concurrency
 *	$ VFS_CONCURRENCY_SECONDS=60 tests/mount/with-mount.sh ... -- ./concurrency   (longer)
 *	$ CK_RUN_CASE=load tests/mount/with-mount.sh ... -- ./concurrency   (one test case)
 *
 * Run it with the default purged_read=zero (the mappings would get SIGBUS under eio).
 *
 * Test case "enospc" checks DESIGN section 3's rule ("only when nothing volatile is left does it
 * fail with ENOSPC") with writers racing for the memory, one thing at a time:
 *   - 8 threads rewrite 1 MiB volatile files (40 each, five times the limit): no write fails;
 *   - 4 threads do the same while the test creates files: no creation fails.
 *
 * Test case "load": for VFS_CONCURRENCY_SECONDS (default 10) these processes run side by
 * side, each in its own part of the test directory:
 *   writer x2    rewrites its 12 non-volatile files (random sizes up to 512 KiB) by O_TRUNC,
 *                by unlink and create, or by writing a temporary file and renaming it over;
 *                checks a file's contents before rewriting it;
 *   renamer      moves 8 non-volatile files between two directories (rename, RENAME_NOREPLACE,
 *                RENAME_EXCHANGE) and 2 volatile ones, checking contents and units after moves;
 *   reader       reads the renamer's files wherever they are (their contents say who they are)
 *                and the writers' files, lists the directories;
 *   mmap writer  stores self-describing words into a shared 4 MiB volatile file through a
 *                MAP_SHARED mapping, and through pwrite now and then, with msync;
 *   mmap reader  reads the shared file through its own mapping and pread: every 32-bit half
 *                word is 0 (purged) or the value for its offset -- never anything else;
 *   marker x2    writes its 2 MiB file, marks random ranges (priorities, age, unbounded),
 *                unmarks some, waits, unmarks all, and checks that the bytes listed purged
 *                read zeros, lie in pages that were volatile, and every other byte is intact;
 *                also marks and unmarks random ranges of the shared file;
 *   purger       purges every 100 ms: the whole mount, or (every other round on average)
 *                4 MiB by SIZE; reads the stats;
 *   flooder x2   writes 1 MiB volatile files in a ring of 80 each (more than the limit), so
 *                the daemon purges under pressure all along; checks that every byte of an
 *                older file is its data, or 0 and listed purged.
 * Every write of non-volatile data must succeed: the volatile data can always make room.
 *
 * No hang: each process re-arms alarm(30) before every step, and SIGALRM (default action)
 * kills a process stuck in a call for 30 s; the test names the call.  The parent samples the
 * daemon's VmRSS meanwhile.  Afterwards it checks every non-volatile byte the processes left
 * (recorded in shared memory), that the daemon is alive (stat of the root, stats readable),
 * and that its VmRSS is under the limit plus max(1%, 4 MiB).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mtest.h"

#define KIB 1024L
#define MIB (1024L * KIB)
#define PAGE 4096L

#define CALL_TIMEOUT 30      /* seconds any one step may take */
#define DEFAULT_SECONDS 10

#define WRITERS 2
#define WFILES 12
#define WMAX (512 * KIB)
#define RFILES 8             /* the renamer's non-volatile files */
#define RSIZE (256 * KIB)
#define SHARED_SIZE (4 * MIB)
#define MARKERS 2
#define MSIZE (2 * MIB)
#define FLOOD_RING 80
#define FLOOD_SIZE MIB

static char root_dir[PATH_MAX];
static pid_t daemon_pid;

/* ---------------------------------------------------------------------------------------- */
/* State shared between the processes                                                       */

enum role {
	R_WRITER, R_RENAMER, R_READER, R_MMAP_WRITER, R_MMAP_READER, R_MARKER, R_PURGER,
	R_FLOODER,
};

static const char *const role_names[] = {
	"writer", "renamer", "reader", "mmap-writer", "mmap-reader", "marker", "purger", "flooder",
};

struct slot {
	enum role role;
	int index;
	pid_t pid;
	_Atomic long steps;
	char op[192];         /* the step under way: named when it hangs */
	char msg[768];        /* the first failure */
};

struct wfile {
	_Atomic int state;    /* 0 absent, 1 holds (seed, size), 2 being rewritten */
	uint64_t seed;
	uint32_t size;
};

#define FLOODERS 2
#define NPROCS (WRITERS + 1 + 1 + 1 + 1 + MARKERS + 1 + FLOODERS)

struct shared {
	atomic_bool stop;
	struct slot slots[NPROCS];
	struct wfile wfiles[WRITERS][WFILES];
	/* The renamer's files: which directory each name is in, which file it holds. */
	_Atomic int rdir[RFILES];
	_Atomic int rid[RFILES];
	_Atomic int rbusy;    /* renamer between steps: 0 */
};

static struct shared *sh;
static struct slot *me;   /* in a child: its slot */

static void child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void child_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(me->msg, sizeof(me->msg), fmt, ap);
	va_end(ap);
	_exit(1);
}

/* The step under way; re-arms the hang alarm. */
static void step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void step(const char *fmt, ...)
{
	va_list ap;

	alarm(CALL_TIMEOUT);
	va_start(ap, fmt);
	vsnprintf(me->op, sizeof(me->op), fmt, ap);
	va_end(ap);
}

static bool stopping(void)
{
	return atomic_load(&sh->stop);
}

/* ---------------------------------------------------------------------------------------- */
/* Data                                                                                     */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The byte of file offset off in the data of seed. */
static inline uint8_t data_byte(uint64_t seed, uint64_t off)
{
	uint64_t w = mix(seed * 0xD1B54A32D192ED03ull + (off / 8 + 1) * 0x9E3779B97F4A7C15ull);

	return (uint8_t)(w >> (8 * (off % 8)));
}

/* buf = the data of seed at file offsets [off, off + len); off and len multiples of 8. */
static void data_fill(uint8_t *buf, size_t len, uint64_t off, uint64_t seed)
{
	uint64_t *w = (uint64_t *)buf;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = mix(seed * 0xD1B54A32D192ED03ull + (off / 8 + i + 1) * 0x9E3779B97F4A7C15ull);
}

/* The first offset in [0, len) where buf differs from the data of seed at off, or -1. */
static long data_diff(const uint8_t *buf, size_t len, uint64_t off, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != data_byte(seed, off + i))
			return (long)i;
	return -1;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state += 0x9E3779B97F4A7C15ull;
	return mix(rng_state);
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* I/O helpers for the children: errors end the child with a message                        */

static void *cmalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (!p)
		child_fail("out of memory (%zu bytes)", len);
	return p;
}

/* Writes everything; returns 0 or the errno that stopped it. */
static int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Reads up to len bytes at off (fewer only at end of file); -1 with errno on error. */
static ssize_t read_all(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, off + (off_t)done);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Creates or truncates path and writes the data of seed, size bytes; 0 or an errno. */
static int write_data_file(const char *path, int flags, uint64_t seed, size_t size,
			   uint8_t *scratch)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644), err;

	if (fd < 0)
		return errno;
	data_fill(scratch, (size + 7) / 8 * 8, 0, seed);
	err = write_all(fd, scratch, size, 0);
	if (close(fd) != 0 && !err)
		err = errno;
	return err;
}

/*
 * Checks that path holds exactly the data of seed, size bytes.  Returns 0, ENOENT if it is
 * missing (when allowed by the caller), or fails the child.
 */
static int check_data_file(const char *path, uint64_t seed, size_t size, uint8_t *scratch,
			   bool missing_ok)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;
	long d;

	if (fd < 0) {
		if (errno == ENOENT && missing_ok)
			return ENOENT;
		child_fail("open(%s): %s", path, errname(errno));
	}
	n = read_all(fd, scratch, size + 1, 0);
	if (n < 0)
		child_fail("read(%s): %s", path, errname(errno));
	close(fd);
	if ((size_t)n != size)
		child_fail("%s holds %zd bytes, expected %zu (non-volatile data lost)", path, n,
			   size);
	d = data_diff(scratch, size, 0, seed);
	if (d >= 0)
		child_fail("%s: non-volatile byte at offset %ld is 0x%02x, expected 0x%02x", path,
			   d, scratch[d], data_byte(seed, (uint64_t)d));
	return 0;
}

static int xsetxattr(const char *path, const char *name, const char *value)
{
	return setxattr(path, name, value, strlen(value), 0) == 0 ? 0 : errno;
}

/* getxattr into a new string, or NULL with errno. */
static char *xgetxattr(const char *path, const char *name)
{
	for (int tries = 0; tries < 20; tries++) {
		ssize_t len = getxattr(path, name, NULL, 0), got;
		char *buf;

		if (len < 0)
			return NULL;
		buf = malloc((size_t)len + 1);
		if (!buf) {
			errno = ENOMEM;
			return NULL;
		}
		got = getxattr(path, name, buf, (size_t)len);
		if (got < 0) {
			int e = errno;

			free(buf);
			if (e == ERANGE)
				continue;
			errno = e;
			return NULL;
		}
		buf[got] = '\0';
		return buf;
	}
	errno = ERANGE;
	return NULL;
}

static int renameat2_(const char *from, const char *to, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
}

/* ---------------------------------------------------------------------------------------- */
/* writer                                                                                   */

static void writer_main(int w)
{
	uint8_t *buf = cmalloc(WMAX + 8);
	char path[PATH_MAX], tmp[PATH_MAX];

	while (!stopping()) {
		int i = (int)rnd_below(WFILES), how = (int)rnd_below(3), err;
		struct wfile *f = &sh->wfiles[w][i];
		uint64_t seed = rnd() | 1;
		size_t size = 1 + rnd_below(WMAX);

		snprintf(path, sizeof(path), "w%d/f%02d", w, i);
		snprintf(tmp, sizeof(tmp), "w%d/tmp%02d", w, i);
		if (atomic_load(&f->state) == 1) {
			step("writer %d: check %s before rewriting it", w, path);
			check_data_file(path, f->seed, f->size, buf, false);
		}
		atomic_store(&f->state, 2);
		switch (how) {
		case 0:
			step("writer %d: rewrite %s with O_TRUNC (%zu bytes)", w, path, size);
			err = write_data_file(path, O_TRUNC, seed, size, buf);
			break;
		case 1:
			step("writer %d: unlink and create %s (%zu bytes)", w, path, size);
			if (unlink(path) != 0 && errno != ENOENT)
				child_fail("unlink(%s): %s", path, errname(errno));
			err = write_data_file(path, O_EXCL, seed, size, buf);
			break;
		default:
			step("writer %d: write %s (%zu bytes) and rename it over %s", w, tmp, size,
			     path);
			err = write_data_file(tmp, O_TRUNC, seed, size, buf);
			if (!err && rename(tmp, path) != 0)
				child_fail("rename(%s, %s): %s", tmp, path, errname(errno));
			break;
		}
		if (err)
			child_fail("%s: %s (non-volatile data must always fit: the volatile data "
				   "can make room)", me->op, errname(err));
		f->seed = seed;
		f->size = (uint32_t)size;
		atomic_store(&f->state, 1);
		atomic_fetch_add(&me->steps, 1);
	}
	free(buf);
}

/* ---------------------------------------------------------------------------------------- */
/* renamer and reader                                                                       */

static const char *const rdirs[2] = { "ra", "rb" };

/* A renamer file: its id in the first 8 bytes, then the data of seed 1000 + id. */
static void rfile_fill(uint8_t *buf, int id)
{
	data_fill(buf, RSIZE, 0, 1000 + (uint64_t)id);
	memcpy(buf, &(uint64_t){ 0xC0FFEE00u + (uint64_t)id }, 8);
}

/* Checks a renamer file read whole; want_id -1: any.  Returns its id or fails the child. */
static int rfile_check(const char *path, const uint8_t *buf, ssize_t n, int want_id)
{
	uint64_t tag;
	long d;
	int id;

	if (n != RSIZE)
		child_fail("%s holds %zd bytes, expected %ld (non-volatile data lost)", path, n,
			   RSIZE);
	memcpy(&tag, buf, 8);
	id = (int)(tag - 0xC0FFEE00u);
	if (tag < 0xC0FFEE00u || id >= RFILES)
		child_fail("%s: header 0x%016" PRIx64 " names no file of the renamer", path, tag);
	if (want_id >= 0 && id != want_id)
		child_fail("%s holds file %d, expected file %d", path, id, want_id);
	d = data_diff(buf + 8, RSIZE - 8, 8, 1000 + (uint64_t)id);
	if (d >= 0)
		child_fail("%s (file %d): non-volatile byte at offset %ld is 0x%02x, expected "
			   "0x%02x", path, id, d + 8, buf[d + 8], data_byte(1000 + (uint64_t)id,
									   (uint64_t)d + 8));
	return id;
}

static void rfile_verify(const char *path, int want_id, uint8_t *buf)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		child_fail("open(%s): %s", path, errname(errno));
	n = read_all(fd, buf, RSIZE + 1, 0);
	if (n < 0)
		child_fail("read(%s): %s", path, errname(errno));
	close(fd);
	rfile_check(path, buf, n, want_id);
}

static void renamer_main(void)
{
	uint8_t *buf = cmalloc(RSIZE + 1);
	char from[64], to[64];

	while (!stopping()) {
		int j = (int)rnd_below(RFILES), op = (int)rnd_below(4);

		snprintf(from, sizeof(from), "%s/n%d", rdirs[sh->rdir[j]], j);
		snprintf(to, sizeof(to), "%s/n%d", rdirs[!sh->rdir[j]], j);
		if (op == 3) {
			/* Exchange with a name in the other directory, if there is one. */
			int k = -1;

			for (int t = 0; t < RFILES; t++)
				if (sh->rdir[t] != sh->rdir[j])
					k = t;
			if (k >= 0) {
				int a = sh->rid[j];

				snprintf(to, sizeof(to), "%s/n%d", rdirs[sh->rdir[k]], k);
				step("renamer: renameat2(%s, %s, RENAME_EXCHANGE)", from, to);
				if (renameat2_(from, to, RENAME_EXCHANGE) != 0)
					child_fail("%s: %s", me->op, errname(errno));
				/* The names stay, the files swap. */
				atomic_store(&sh->rid[j], sh->rid[k]);
				atomic_store(&sh->rid[k], a);
				step("renamer: check %s and %s after the exchange", from, to);
				rfile_verify(from, sh->rid[j], buf);
				rfile_verify(to, sh->rid[k], buf);
				atomic_fetch_add(&me->steps, 1);
				continue;
			}
		}
		step("renamer: rename%s(%s, %s)", op == 1 ? "at2 RENAME_NOREPLACE" : "", from, to);
		if ((op == 1 ? renameat2_(from, to, RENAME_NOREPLACE) : rename(from, to)) != 0)
			child_fail("%s: %s", me->op, errname(errno));
		atomic_store(&sh->rdir[j], !sh->rdir[j]);
		step("renamer: check %s after the move", to);
		rfile_verify(to, sh->rid[j], buf);

		/* And a volatile file: it keeps its unit through the move. */
		{
			int v = (int)rnd_below(2);
			char vf[64], vt[64], *r;

			snprintf(vf, sizeof(vf), "ra/vol%d", v);
			snprintf(vt, sizeof(vt), "rb/vol%d", v);
			if (access(vf, F_OK) != 0) {
				char t[64];

				memcpy(t, vf, sizeof(t));
				memcpy(vf, vt, sizeof(vf));
				memcpy(vt, t, sizeof(vt));
			}
			step("renamer: rename(%s, %s)", vf, vt);
			if (rename(vf, vt) != 0)
				child_fail("%s: %s", me->op, errname(errno));
			step("renamer: getxattr(%s, user.volatile.ranges)", vt);
			r = xgetxattr(vt, "user.volatile.ranges");
			if (!r)
				child_fail("%s: %s", me->op, errname(errno));
			if (strncmp(r, "0:0 ", 4) != 0 || strchr(r, '\n') != r + strlen(r) - 1)
				child_fail("%s after rename: ranges \"%s\", expected the one unit "
					   "\"0:0 ...\"", vt, r);
			free(r);
		}
		atomic_fetch_add(&me->steps, 1);
	}
	free(buf);
}

static void reader_main(void)
{
	uint8_t *buf = cmalloc(WMAX + RSIZE + 1);
	char path[PATH_MAX];

	while (!stopping()) {
		int j = (int)rnd_below(RFILES), fd = -1;
		ssize_t n;

		/* A renamer file, wherever it is now. */
		for (int t = 0; t < 2 && fd < 0; t++) {
			snprintf(path, sizeof(path), "%s/n%d", rdirs[t], j);
			step("reader: open(%s)", path);
			fd = open(path, O_RDONLY);
			if (fd < 0 && errno != ENOENT)
				child_fail("%s: %s", me->op, errname(errno));
		}
		if (fd >= 0) {
			step("reader: read %s", path);
			n = read_all(fd, buf, RSIZE + 1, 0);
			if (n < 0)
				child_fail("%s: %s", me->op, errname(errno));
			close(fd);
			rfile_check(path, buf, n, -1);
		}

		/* A writer's file: contents change under us; reading must just work. */
		snprintf(path, sizeof(path), "w%d/f%02d", (int)rnd_below(WRITERS),
			 (int)rnd_below(WFILES));
		step("reader: read %s", path);
		fd = open(path, O_RDONLY);
		if (fd < 0 && errno != ENOENT)
			child_fail("%s: open: %s", me->op, errname(errno));
		if (fd >= 0) {
			if (read_all(fd, buf, WMAX + 1, 0) < 0)
				child_fail("%s: %s", me->op, errname(errno));
			close(fd);
		}

		/* A directory listing. */
		{
			const char *d = rnd_below(2) ? rdirs[rnd_below(2)] : "vf";
			DIR *dir;

			step("reader: list %s", d);
			dir = opendir(d);
			if (!dir)
				child_fail("%s: %s", me->op, errname(errno));
			errno = 0;
			while (readdir(dir))
				;
			if (errno)
				child_fail("%s: readdir: %s", me->op, errname(errno));
			closedir(dir);
		}
		atomic_fetch_add(&me->steps, 1);
	}
	free(buf);
}

/* ---------------------------------------------------------------------------------------- */
/* mmap writer and reader on the shared volatile file                                       */

/* Each 32-bit half of the word at offset off is 0 or: high = index + 1, low = index | gen. */
static inline uint64_t shared_word(uint64_t off, uint32_t gen)
{
	uint64_t idx = off / 8;

	return ((idx + 1) << 32) | ((uint64_t)(gen & 0xfffu) << 20) | (idx & 0xfffffu);
}

/* 0 if every half word of the page at off is 0 or right for its offset, else the bad offset + 1. */
static uint64_t shared_page_bad(const volatile uint64_t *w, uint64_t off)
{
	for (uint64_t i = 0; i < PAGE / 8; i++) {
		uint64_t v = w[i], idx = off / 8 + i;
		uint32_t hi = (uint32_t)(v >> 32), lo = (uint32_t)v;

		if (hi && hi != idx + 1)
			return off + i * 8 + 1;
		if (lo && (lo & 0xfffffu) != (idx & 0xfffffu))
			return off + i * 8 + 1;
	}
	return 0;
}

static void mmap_writer_main(void)
{
	int fd;
	volatile uint64_t *map;
	uint64_t page_buf[PAGE / 8];
	uint32_t gen = 0;

	step("mmap-writer: open and mmap shared.vol");
	fd = open("shared.vol", O_RDWR);
	if (fd < 0)
		child_fail("%s: %s", me->op, errname(errno));
	map = mmap(NULL, SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		child_fail("%s: %s", me->op, errname(errno));
	while (!stopping()) {
		uint64_t page = rnd_below(SHARED_SIZE / PAGE), off = page * PAGE;
		int how = (int)rnd_below(8);

		gen++;
		if (how == 0) {
			for (uint64_t i = 0; i < PAGE / 8; i++)
				page_buf[i] = shared_word(off + i * 8, gen);
			step("mmap-writer: pwrite page %" PRIu64, page);
			if (write_all(fd, page_buf, PAGE, (off_t)off))
				child_fail("%s: %s", me->op, errname(errno));
		} else {
			/* A run of pages through the mapping. */
			uint64_t run = 1 + rnd_below(8);

			if (page + run > SHARED_SIZE / PAGE)
				run = SHARED_SIZE / PAGE - page;
			step("mmap-writer: store to pages %" PRIu64 "..%" PRIu64 " through the mapping",
			     page, page + run - 1);
			for (uint64_t o = off; o < off + run * PAGE; o += 8)
				map[o / 8] = shared_word(o, gen);
			if (how == 1) {
				step("mmap-writer: msync(MS_SYNC) pages %" PRIu64 "..%" PRIu64, page,
				     page + run - 1);
				if (msync((void *)(map + off / 8), run * PAGE, MS_SYNC) != 0)
					child_fail("%s: %s", me->op, errname(errno));
			} else if (how == 2) {
				step("mmap-writer: msync(MS_ASYNC) of the whole file");
				if (msync((void *)map, SHARED_SIZE, MS_ASYNC) != 0)
					child_fail("%s: %s", me->op, errname(errno));
			}
		}
		atomic_fetch_add(&me->steps, 1);
	}
	munmap((void *)map, SHARED_SIZE);
	close(fd);
}

static void mmap_reader_main(void)
{
	int fd;
	const volatile uint64_t *map;
	uint64_t page_buf[PAGE / 8], bad;

	step("mmap-reader: open and mmap shared.vol");
	fd = open("shared.vol", O_RDONLY);
	if (fd < 0)
		child_fail("%s: %s", me->op, errname(errno));
	map = mmap(NULL, SHARED_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		child_fail("%s: %s", me->op, errname(errno));
	while (!stopping()) {
		uint64_t page = rnd_below(SHARED_SIZE / PAGE), off = page * PAGE;

		if (rnd_below(2)) {
			step("mmap-reader: read page %" PRIu64 " through the mapping", page);
			bad = shared_page_bad(map + off / 8, off);
			if (bad)
				child_fail("shared.vol through a mapping: the word at offset %" PRIu64
					   " is 0x%016" PRIx64 ", neither 0 nor written there", bad - 1,
					   map[(bad - 1) / 8]);
		} else {
			ssize_t n;

			step("mmap-reader: pread page %" PRIu64, page);
			n = read_all(fd, page_buf, PAGE, (off_t)off);
			if (n != PAGE)
				child_fail("%s: %zd: %s", me->op, n, n < 0 ? errname(errno) : "short");
			bad = shared_page_bad(page_buf, off);
			if (bad)
				child_fail("shared.vol through pread: the word at offset %" PRIu64
					   " is 0x%016" PRIx64 ", neither 0 nor written there", bad - 1,
					   page_buf[(bad - 1 - off) / 8]);
		}
		atomic_fetch_add(&me->steps, 1);
	}
	munmap((void *)map, SHARED_SIZE);
	close(fd);
}

/* ---------------------------------------------------------------------------------------- */
/* marker                                                                                   */

/* Parses a purged list "OFF:LEN\n..." into extents; returns the count, fails the child. */
static size_t parse_extents(const char *path, const char *s, uint64_t (*ext)[2], size_t max)
{
	size_t n = 0;
	uint64_t prev_end = 0;

	while (*s) {
		unsigned long long off, len;
		int used = 0;

		if (sscanf(s, "%llu:%llu\n%n", &off, &len, &used) != 2 || used == 0 ||
		    s[used - 1] != '\n')
			child_fail("%s: malformed purged list near \"%.40s\"", path, s);
		if (n == max)
			child_fail("%s: more than %zu purged extents", path, max);
		if (len == 0 || (n && off <= prev_end))
			child_fail("%s: purged list not sorted and coalesced near \"%.40s\"", path, s);
		ext[n][0] = off;
		ext[n][1] = len;
		prev_end = off + len;
		n++;
		s += used;
	}
	return n;
}

static void marker_main(int m)
{
	enum { PAGES = MSIZE / PAGE, MAXEXT = PAGES };
	uint8_t *buf = cmalloc(MSIZE), *want = cmalloc(MSIZE);
	uint64_t (*ext)[2] = cmalloc(sizeof(*ext) * MAXEXT);
	bool ever[PAGES];
	char path[32], value[256];
	uint64_t seed = 0;

	snprintf(path, sizeof(path), "m%d", m);
	while (!stopping()) {
		int nmarks = 1 + (int)rnd_below(4), fd, err;
		char *p;
		size_t next;

		seed = rnd() | 1;
		memset(ever, 0, sizeof(ever));
		step("marker %d: write %s (2 MiB)", m, path);
		fd = open(path, O_RDWR | O_CREAT, 0644);
		if (fd < 0)
			child_fail("%s: open: %s", me->op, errname(errno));
		data_fill(want, MSIZE, 0, seed);
		err = write_all(fd, want, MSIZE, 0);
		if (err)
			child_fail("%s: %s", me->op, errname(err));

		for (int k = 0; k < nmarks; k++) {
			uint64_t first = rnd_below(PAGES), len = rnd_below(PAGES / 4) + 1, last;
			bool unbounded = rnd_below(8) == 0;
			int prio = (int)rnd_below(8);

			last = unbounded || first + len > PAGES ? PAGES : first + len;
			for (uint64_t i = first; i < last; i++)
				ever[i] = true;
			snprintf(value, sizeof(value), "%" PRIu64 ":%" PRIu64 " priority=%d%s",
				 first * PAGE, unbounded ? 0 : len * PAGE, prio,
				 rnd_below(3) == 0 ? " age" : "");
			step("marker %d: mark %s \"%s\"", m, path, value);
			err = xsetxattr(path, "user.volatile.mark", value);
			if (err)
				child_fail("%s: %s", me->op, errname(err));
		}
		if (rnd_below(2)) {
			uint64_t first = rnd_below(PAGES), len = rnd_below(PAGES / 4);

			snprintf(value, sizeof(value), "%" PRIu64 ":%" PRIu64, first * PAGE,
				 len * PAGE + 1);
			step("marker %d: unmark %s \"%s\"", m, path, value);
			err = xsetxattr(path, "user.volatile.unmark", value);
			if (err)
				child_fail("%s: %s", me->op, errname(err));
		}
		/* The shared file too: random units come and go under the mmap processes. */
		{
			uint64_t first = rnd_below(SHARED_SIZE / PAGE), len = rnd_below(64) + 1;
			const char *what = rnd_below(3) ? "mark" : "unmark";
			char name[32];

			snprintf(value, sizeof(value), "%" PRIu64 ":%" PRIu64 "%s", first * PAGE,
				 len * PAGE, what[0] == 'm' && rnd_below(2) ? " priority=1" : "");
			snprintf(name, sizeof(name), "user.volatile.%s", what);
			step("marker %d: %s shared.vol \"%s\"", m, what, value);
			err = xsetxattr("shared.vol", name, value);
			if (err)
				child_fail("%s: %s", me->op, errname(err));
		}
		nap_ms((long)rnd_below(20));

		step("marker %d: unmark %s \"0:0\"", m, path);
		err = xsetxattr(path, "user.volatile.unmark", "0:0");
		if (err)
			child_fail("%s: %s", me->op, errname(err));
		step("marker %d: getxattr(%s, user.volatile.purged)", m, path);
		p = xgetxattr(path, "user.volatile.purged");
		if (!p)
			child_fail("%s: %s", me->op, errname(errno));
		step("marker %d: read %s after unmarking it", m, path);
		if (read_all(fd, buf, MSIZE, 0) != MSIZE)
			child_fail("%s: %s", me->op, errname(errno));
		close(fd);

		/* Purged bytes: zeros, inside pages that were volatile; all others: intact. */
		next = 0;
		{
			size_t n = parse_extents(path, p, ext, MAXEXT);

			for (size_t e = 0; e <= n; e++) {
				uint64_t s = e < n ? ext[e][0] : MSIZE;
				uint64_t t = e < n ? ext[e][0] + ext[e][1] : MSIZE;
				long d;

				if (t > MSIZE)
					child_fail("%s: purged extent %" PRIu64 ":%" PRIu64 " beyond "
						   "the size %ld", path, s, t - s, MSIZE);
				d = s > next ? data_diff(buf + next, s - next, next, seed) : -1;
				if (d >= 0)
					child_fail("%s: byte %" PRIu64 " (not listed purged) is 0x%02x, "
						   "expected 0x%02x; purged list:\n%s", path,
						   next + (uint64_t)d, buf[next + (uint64_t)d],
						   want[next + (uint64_t)d], p);
				for (uint64_t b = s; b < t; b++) {
					if (!ever[b / PAGE])
						child_fail("%s: byte %" PRIu64 " listed purged but its "
							   "page was never marked volatile", path, b);
					if (buf[b])
						child_fail("%s: byte %" PRIu64 " listed purged reads "
							   "0x%02x, not 0", path, b, buf[b]);
				}
				next = t;
			}
		}
		free(p);
		atomic_fetch_add(&me->steps, 1);
	}
	free(ext);
	free(buf);
	free(want);
}

/* ---------------------------------------------------------------------------------------- */
/* purger and flooder                                                                       */

static void purger_main(void)
{
	while (!stopping()) {
		/* Half the rounds only 4 MiB, so the flooders push RSS to the limit between them
		 * and purges under pressure run too. */
		const char *how = rnd_below(2) ? "all" : "4M";
		char *s;
		int err;

		step("purger: setxattr(root, user.volatile.purge, %s)", how);
		err = xsetxattr(root_dir, "user.volatile.purge", how);
		if (err)
			child_fail("%s: %s", me->op, errname(err));
		step("purger: getxattr(root, user.volatile.stats)");
		s = xgetxattr(root_dir, "user.volatile.stats");
		if (!s)
			child_fail("%s: %s", me->op, errname(errno));
		if (!strstr(s, "purges_total=") || !strstr(s, "volatile_bytes="))
			child_fail("stats lack keys:\n%s", s);
		free(s);
		atomic_fetch_add(&me->steps, 1);
		nap_ms(100);
	}
}

static void flooder_main(int f)
{
	uint8_t *buf = cmalloc(FLOOD_SIZE), *got = cmalloc(FLOOD_SIZE + 1);
	uint64_t (*ext)[2] = cmalloc(sizeof(*ext) * (FLOOD_SIZE / PAGE));
	uint64_t seeds[FLOOD_RING] = { 0 };
	char path[32];

	for (int i = 0; !stopping(); i = (i + 1) % FLOOD_RING) {
		int fd, err, o;

		snprintf(path, sizeof(path), "vf/%d-v%02d", f, i);
		seeds[i] = rnd() | 1;
		step("flooder: create %s and mark it \"0:0\"", path);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			child_fail("%s: %s", me->op, errname(errno));
		err = xsetxattr(path, "user.volatile.mark", "0:0");
		if (err)
			child_fail("%s: %s", me->op, errname(err));
		step("flooder: write 1 MiB to volatile %s", path);
		data_fill(buf, FLOOD_SIZE, 0, seeds[i]);
		err = write_all(fd, buf, FLOOD_SIZE, 0);
		if (err)
			child_fail("%s: %s (with volatile data to purge, writes must not fail)",
				   me->op, errname(err));
		close(fd);

		/* An older file: intact, or purged whole and reading zeros. */
		o = (i + FLOOD_RING - 1 - (int)rnd_below(20)) % FLOOD_RING;
		if (seeds[o]) {
			ssize_t n;
			long d;
			char *p;

			snprintf(path, sizeof(path), "vf/%d-v%02d", f, o);
			step("flooder: read %s", path);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				child_fail("%s: %s", me->op, errname(errno));
			n = read_all(fd, got, FLOOD_SIZE + 1, 0);
			close(fd);
			if (n != FLOOD_SIZE)
				child_fail("%s: %zd bytes", me->op, n);
			d = data_diff(got, FLOOD_SIZE, 0, seeds[o]);
			if (d >= 0) {
				/* Read first, report after: every byte that is not the data must
				 * read 0 and be listed purged. */
				size_t e = 0, n;

				step("flooder: getxattr(%s, user.volatile.purged)", path);
				p = xgetxattr(path, "user.volatile.purged");
				if (!p)
					child_fail("%s: %s", me->op, errname(errno));
				n = parse_extents(path, p, ext, FLOOD_SIZE / PAGE);
				for (long b = d; b < FLOOD_SIZE; b++) {
					if (got[b] == data_byte(seeds[o], (uint64_t)b))
						continue;
					while (e < n && ext[e][0] + ext[e][1] <= (uint64_t)b)
						e++;
					if (e == n || ext[e][0] > (uint64_t)b)
						child_fail("%s: byte %ld reads 0x%02x, expected 0x%02x, and "
							   "the purged list (read after) is \"%s\"", path,
							   b, got[b], data_byte(seeds[o], (uint64_t)b), p);
					if (got[b])
						child_fail("%s: byte %ld is listed purged but reads 0x%02x, "
							   "neither the data nor 0", path, b, got[b]);
				}
				free(p);
			}
		}
		atomic_fetch_add(&me->steps, 1);
	}
	free(ext);
	free(buf);
	free(got);
}

/* ---------------------------------------------------------------------------------------- */
/* The parent                                                                               */

static uint64_t daemon_rss(void)
{
	return mtest_vmrss_kib(daemon_pid) * KIB;
}

static char *root_stats(void)
{
	char *s = xgetxattr(root_dir, "user.volatile.stats");

	ck_assert_msg(s != NULL, "getxattr(root, user.volatile.stats): %s", errname(errno));
	return s;
}

static void spawn(int n, enum role role, int index)
{
	struct slot *s = &sh->slots[n];
	pid_t pid, parent = getpid();

	s->role = role;
	s->index = index;
	pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", errname(errno));
	if (pid == 0) {
		/* Never outlive the test (a Check timeout kills it): no stray process on the mount. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		me = s;
		rng_state = (uint64_t)getpid() * 0x2545F4914F6CDD1Dull + (uint64_t)time(NULL);
		signal(SIGALRM, SIG_DFL);
		switch (role) {
		case R_WRITER: writer_main(index); break;
		case R_RENAMER: renamer_main(); break;
		case R_READER: reader_main(); break;
		case R_MMAP_WRITER: mmap_writer_main(); break;
		case R_MMAP_READER: mmap_reader_main(); break;
		case R_MARKER: marker_main(index); break;
		case R_PURGER: purger_main(); break;
		case R_FLOODER: flooder_main(index); break;
		}
		alarm(0);
		_exit(0);
	}
	s->pid = pid;
}

static void make_fixture_files(void)
{
	uint8_t *buf = malloc(SHARED_SIZE);
	char path[64];
	int fd;

	ck_assert_ptr_nonnull(buf);
	for (int w = 0; w < WRITERS; w++) {
		snprintf(path, sizeof(path), "w%d", w);
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
	ck_assert_int_eq(mkdir("ra", 0755), 0);
	ck_assert_int_eq(mkdir("rb", 0755), 0);
	ck_assert_int_eq(mkdir("vf", 0755), 0);
	for (int j = 0; j < RFILES; j++) {
		snprintf(path, sizeof(path), "ra/n%d", j);
		rfile_fill(buf, j);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s", path, errname(errno));
		ck_assert_int_eq(write_all(fd, buf, RSIZE, 0), 0);
		close(fd);
		sh->rdir[j] = 0;
		sh->rid[j] = j;
	}
	for (int v = 0; v < 2; v++) {
		snprintf(path, sizeof(path), "ra/vol%d", v);
		data_fill(buf, 64 * KIB, 0, 77 + (uint64_t)v);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s", path, errname(errno));
		ck_assert_int_eq(write_all(fd, buf, 64 * KIB, 0), 0);
		close(fd);
		ck_assert_int_eq(xsetxattr(path, "user.volatile.mark", "0:0 priority=2"), 0);
	}
	/* The shared file: all zeros to start (valid for the readers), marked in 64 KiB units. */
	fd = open("shared.vol", O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_msg(fd >= 0, "create shared.vol: %s", errname(errno));
	memset(buf, 0, SHARED_SIZE);
	ck_assert_int_eq(write_all(fd, buf, SHARED_SIZE, 0), 0);
	close(fd);
	for (long off = 0; off < SHARED_SIZE; off += 64 * KIB) {
		char value[64];

		snprintf(value, sizeof(value), "%ld:64K priority=%ld", off, (off / (64 * KIB)) % 8);
		ck_assert_int_eq(xsetxattr("shared.vol", "user.volatile.mark", value), 0);
	}
	free(buf);
}

/* Every non-volatile byte the processes left: the writers' files and the renamer's. */
static void verify_non_volatile(void)
{
	uint8_t *buf = malloc(WMAX + RSIZE + 8);
	char path[64];
	size_t files = 0;

	ck_assert_ptr_nonnull(buf);
	for (int w = 0; w < WRITERS; w++) {
		for (int i = 0; i < WFILES; i++) {
			struct wfile *f = &sh->wfiles[w][i];
			int fd;
			ssize_t n;
			long d;

			ck_assert_msg(atomic_load(&f->state) != 2, "w%d/f%02d left half-written", w, i);
			if (atomic_load(&f->state) == 0)
				continue;
			snprintf(path, sizeof(path), "w%d/f%02d", w, i);
			alarm(CALL_TIMEOUT);
			fd = open(path, O_RDONLY);
			ck_assert_msg(fd >= 0, "open(%s): %s", path, errname(errno));
			n = read_all(fd, buf, f->size + 1, 0);
			close(fd);
			ck_assert_msg(n == (ssize_t)f->size, "%s holds %zd bytes, expected %u", path, n,
				      f->size);
			d = data_diff(buf, f->size, 0, f->seed);
			ck_assert_msg(d < 0, "%s: non-volatile byte %ld is 0x%02x, expected 0x%02x",
				      path, d, d < 0 ? 0 : buf[d],
				      d < 0 ? 0 : data_byte(f->seed, (uint64_t)d));
			files++;
		}
	}
	for (int j = 0; j < RFILES; j++) {
		int fd, id = sh->rid[j];
		ssize_t n;
		uint64_t tag;

		snprintf(path, sizeof(path), "%s/n%d", rdirs[sh->rdir[j]], j);
		alarm(CALL_TIMEOUT);
		fd = open(path, O_RDONLY);
		ck_assert_msg(fd >= 0, "open(%s): %s", path, errname(errno));
		n = read_all(fd, buf, RSIZE + 1, 0);
		close(fd);
		ck_assert_msg(n == RSIZE, "%s holds %zd bytes, expected %ld", path, n, RSIZE);
		memcpy(&tag, buf, 8);
		ck_assert_msg(tag == 0xC0FFEE00u + (uint64_t)id, "%s: holds header 0x%" PRIx64
			      ", expected file %d", path, tag, id);
		ck_assert_msg(data_diff(buf + 8, RSIZE - 8, 8, 1000 + (uint64_t)id) < 0,
			      "%s: non-volatile data changed", path);
		files++;
	}
	alarm(0);
	fprintf(stderr, "concurrency: %zu non-volatile files intact\n", files);
	free(buf);
}

START_TEST(mixed_load_loses_no_data_and_never_hangs)
{
	const char *env = getenv("VFS_CONCURRENCY_SECONDS");
	int seconds = env && atoi(env) > 0 ? atoi(env) : DEFAULT_SECONDS;
	char dir[PATH_MAX], *stats;
	uint64_t limit, margin, max_rss = 0, rss, enospc0, purges0, samples = 0;
	double t0, deadline;
	int n = 0, alive, failed = 0;
	struct stat st;

	ck_assert((size_t)snprintf(dir, sizeof(dir), "%s/load.XXXXXX", run_dir) < sizeof(dir));
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", errname(errno));
	ck_assert_int_eq(chdir(dir), 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(sh, MAP_FAILED);
	memset(sh, 0, sizeof(*sh));

	stats = root_stats();
	limit = stats_key(stats, "memory_limit");
	enospc0 = stats_key(stats, "enospc_total");
	purges0 = stats_key(stats, "purges_total");
	free(stats);
	margin = limit / 100 > (uint64_t)(4 * MIB) ? limit / 100 : (uint64_t)(4 * MIB);
	make_fixture_files();

	for (int w = 0; w < WRITERS; w++)
		spawn(n++, R_WRITER, w);
	spawn(n++, R_RENAMER, 0);
	spawn(n++, R_READER, 0);
	spawn(n++, R_MMAP_WRITER, 0);
	spawn(n++, R_MMAP_READER, 0);
	for (int m = 0; m < MARKERS; m++)
		spawn(n++, R_MARKER, m);
	spawn(n++, R_PURGER, 0);
	for (int f = 0; f < FLOODERS; f++)
		spawn(n++, R_FLOODER, f);
	ck_assert_int_eq(n, NPROCS);

	/* Sample the daemon's RSS while they run. */
	t0 = now_s();
	while (now_s() - t0 < seconds) {
		bool early_exit = false;

		rss = daemon_rss();
		if (rss > max_rss)
			max_rss = rss;
		samples++;
		for (int i = 0; i < NPROCS; i++)
			if (sh->slots[i].msg[0])
				early_exit = true;
		if (early_exit)
			break;
		nap_ms(5);
	}
	atomic_store(&sh->stop, true);

	/* Wait for them all; a step takes at most CALL_TIMEOUT before its alarm fires. */
	deadline = now_s() + CALL_TIMEOUT + 15;
	alive = NPROCS;
	while (alive > 0) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid == 0) {
			if (now_s() > deadline) {
				for (int i = 0; i < NPROCS; i++)
					if (sh->slots[i].pid > 0) {
						fprintf(stderr, "concurrency: %s %d (pid %d) still in \"%s\" "
							"%d s after the end: SIGKILL\n",
							role_names[sh->slots[i].role], sh->slots[i].index,
							(int)sh->slots[i].pid, sh->slots[i].op,
							CALL_TIMEOUT + 15);
						kill(sh->slots[i].pid, SIGKILL);
						failed++;
					}
				deadline = now_s() + 3600;
			}
			nap_ms(20);
			continue;
		}
		ck_assert_msg(pid > 0, "waitpid: %s", errname(errno));
		for (int i = 0; i < NPROCS; i++) {
			struct slot *s = &sh->slots[i];

			if (s->pid != pid)
				continue;
			s->pid = 0;
			alive--;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				break;
			failed++;
			if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
				fprintf(stderr, "concurrency: FAIL: %s %d: a call hung for more than "
					"%d s (SIGALRM) in: %s\n", role_names[s->role], s->index,
					CALL_TIMEOUT, s->op);
			else if (WIFSIGNALED(status))
				fprintf(stderr, "concurrency: FAIL: %s %d: killed by signal %d (%s) "
					"in: %s\n", role_names[s->role], s->index, WTERMSIG(status),
					strsignal(WTERMSIG(status)), s->op);
			else
				fprintf(stderr, "concurrency: FAIL: %s %d: %s\n", role_names[s->role],
					s->index, s->msg[0] ? s->msg : "exited with a failure");
			break;
		}
	}
	fprintf(stderr, "concurrency: %d s, steps:", seconds);
	for (int i = 0; i < NPROCS; i++)
		fprintf(stderr, " %s%d=%ld", role_names[sh->slots[i].role], sh->slots[i].index,
			atomic_load(&sh->slots[i].steps));
	fprintf(stderr, "\nconcurrency: daemon VmRSS max %" PRIu64 " KiB over %" PRIu64
		" samples (limit %" PRIu64 " KiB)\n", max_rss / KIB, samples, limit / KIB);
	ck_assert_msg(failed == 0, "%d process(es) failed (see above)", failed);
	for (int i = 0; i < NPROCS; i++)
		ck_assert_msg(atomic_load(&sh->slots[i].steps) > 0, "%s %d made no progress in %d s",
			      role_names[sh->slots[i].role], sh->slots[i].index, seconds);

	/* The daemon is alive and answers (SIGALRM ends the test if it does not). */
	alarm(CALL_TIMEOUT);
	ck_assert_msg(stat(root_dir, &st) == 0, "stat of the mount root: %s", errname(errno));
	ck_assert_msg(daemon_rss() > 0, "the daemon (pid %d) is gone", (int)daemon_pid);
	stats = root_stats();
	fprintf(stderr, "concurrency: purges %" PRIu64 ", enospc %" PRIu64 ", stats rss %" PRIu64
		" KiB\n", stats_key(stats, "purges_total") - purges0,
		stats_key(stats, "enospc_total") - enospc0, stats_key(stats, "rss") / KIB);
	ck_assert_msg(stats_key(stats, "purges_total") > purges0, "no purge in %d s", seconds);
	ck_assert_msg(stats_key(stats, "enospc_total") == enospc0,
		      "%" PRIu64 " ENOSPC while volatile data could have made room",
		      stats_key(stats, "enospc_total") - enospc0);
	free(stats);

	verify_non_volatile();

	rss = daemon_rss();
	ck_assert_msg(rss <= limit + margin, "daemon VmRSS %" PRIu64 " KiB after the load, over "
		      "the limit %" PRIu64 " KiB + %" PRIu64 " KiB", rss / KIB, limit / KIB,
		      margin / KIB);
	ck_assert_msg(max_rss <= limit + margin, "daemon VmRSS reached %" PRIu64 " KiB during the "
		      "load, over the limit %" PRIu64 " KiB + %" PRIu64 " KiB", max_rss / KIB,
		      limit / KIB, margin / KIB);
	munmap(sh, sizeof(*sh));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* enospc: the same rule with many writers at once, one thing at a time                     */

#define PW_THREADS 8
#define PW_RING 40           /* files per thread: 8 x 40 MiB, five times the limit */
#define PW_WRITES 120

struct pw {
	pthread_t thread;
	int index, writes;
	bool trunc;           /* O_TRUNC before each write: pages freed and taken again */
	int fails, first_err, first_at;
	const char *dir;
	atomic_bool *stop;
};

/* Threads that finished their writes. */
static atomic_int flooders_done;

/* Rewrites 1 MiB volatile files (created and marked beforehand) in a ring. */
static void *pw_main(void *arg)
{
	struct pw *t = arg;
	uint8_t *buf = malloc(MIB);
	char path[PATH_MAX];

	if (!buf) {
		t->fails = -1;
		return NULL;
	}
	data_fill(buf, MIB, 0, 99 + (uint64_t)t->index);
	for (int i = 0; i < t->writes && !(t->stop && atomic_load(t->stop)); i++) {
		int fd, err;

		snprintf(path, sizeof(path), "%s/t%d-%02d", t->dir, t->index, i % PW_RING);
		fd = open(path, O_WRONLY | (t->trunc ? O_TRUNC : 0));
		if (fd < 0) {
			err = errno;
		} else {
			err = write_all(fd, buf, MIB, 0);
			close(fd);
		}
		if (err && t->fails++ == 0) {
			t->first_err = err;
			t->first_at = i;
		}
	}
	free(buf);
	atomic_fetch_add(&flooders_done, 1);
	return NULL;
}

static void pw_make_files(const char *dir, int threads)
{
	char path[PATH_MAX];

	for (int t = 0; t < threads; t++) {
		for (int i = 0; i < PW_RING; i++) {
			int fd;

			snprintf(path, sizeof(path), "%s/t%d-%02d", dir, t, i);
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
			ck_assert_msg(fd >= 0, "create %s: %s", path, errname(errno));
			close(fd);
			ck_assert_int_eq(xsetxattr(path, "user.volatile.mark", "0:0"), 0);
		}
	}
}

static char *make_test_dir(const char *name)
{
	static char dir[PATH_MAX];

	ck_assert((size_t)snprintf(dir, sizeof(dir), "%s/%s.XXXXXX", run_dir, name) <
		  sizeof(dir));
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", errname(errno));
	return dir;
}

START_TEST(parallel_volatile_writes_never_fail)
{
	const char *dir = make_test_dir("pw");
	struct pw t[PW_THREADS];
	char *stats = root_stats();
	uint64_t enospc0 = stats_key(stats, "enospc_total");
	int fails = 0;

	free(stats);
	pw_make_files(dir, PW_THREADS);
	for (int i = 0; i < PW_THREADS; i++) {
		t[i] = (struct pw){ .index = i, .writes = PW_WRITES, .trunc = true, .dir = dir };
		ck_assert_int_eq(pthread_create(&t[i].thread, NULL, pw_main, &t[i]), 0);
	}
	for (int i = 0; i < PW_THREADS; i++) {
		pthread_join(t[i].thread, NULL);
		if (t[i].fails)
			fprintf(stderr, "concurrency: writer thread %d: %d of %d writes failed, the "
				"first (write %d) with %s\n", i, t[i].fails, PW_WRITES, t[i].first_at,
				errname(t[i].first_err));
		fails += t[i].fails;
	}
	stats = root_stats();
	ck_assert_msg(fails == 0, "%d of %d writes of 1 MiB into volatile files failed while "
		      "%d threads wrote at once (enospc_total +%" PRIu64 ", volatile_bytes now %"
		      PRIu64 "): with volatile data to purge, no write may fail", fails,
		      PW_THREADS * PW_WRITES, PW_THREADS, stats_key(stats, "enospc_total") - enospc0,
		      stats_key(stats, "volatile_bytes"));
	free(stats);
	rm_tree_at(AT_FDCWD, dir);
}
END_TEST

START_TEST(creates_never_fail_while_volatile_data_exists)
{
	enum { FLOODERS_ = 4 };
	const char *dir = make_test_dir("cr");
	struct pw t[FLOODERS_];
	atomic_bool stop;
	char path[PATH_MAX];
	int fails = 0, first_err = 0, first_at = -1, wfails = 0, ncreates = 0;
	double t0 = now_s();

	atomic_init(&stop, false);
	atomic_store(&flooders_done, 0);
	pw_make_files(dir, FLOODERS_);
	for (int i = 0; i < FLOODERS_; i++) {
		t[i] = (struct pw){ .index = i, .writes = 400, .dir = dir, .stop = &stop };
		ck_assert_int_eq(pthread_create(&t[i].thread, NULL, pw_main, &t[i]), 0);
	}
	/* New empty files while the RSS sits at the limit. */
	for (int i = 0; atomic_load(&flooders_done) < FLOODERS_ && now_s() - t0 < 20; i++) {
		int fd, err = 0;

		snprintf(path, sizeof(path), "%s/new%03d", dir, i % 200);
		unlink(path);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			err = errno;
		else
			close(fd);
		if (err && fails++ == 0) {
			first_err = err;
			first_at = i;
		}
		ncreates++;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < FLOODERS_; i++) {
		pthread_join(t[i].thread, NULL);
		wfails += t[i].fails;
	}
	fprintf(stderr, "concurrency: %d of %d creates and %d volatile writes failed\n", fails,
		ncreates, wfails);
	ck_assert_msg(fails == 0, "%d of %d file creations failed while %d threads wrote volatile "
		      "data; the first (number %d) with %s: creating a file must purge volatile "
		      "data rather than fail", fails, ncreates, FLOODERS_, first_at,
		      errname(first_err));
	ck_assert_msg(wfails == 0, "%d writes into volatile files failed", wfails);
	rm_tree_at(AT_FDCWD, dir);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

int main(void)
{
	const char *base = getenv("VFS_TEST_DIR"), *pid = getenv("VFS_DAEMON_PID");
	const char *env = getenv("VFS_CONCURRENCY_SECONDS");
	int seconds = env && atoi(env) > 0 ? atoi(env) : DEFAULT_SECONDS;
	struct stat st;
	Suite *s;
	TCase *tc;

	if (base == NULL || *base == '\0' || pid == NULL || atoi(pid) <= 0) {
		fprintf(stderr, "concurrency: VFS_TEST_DIR and VFS_DAEMON_PID must be set; run me "
				"through with-mount.sh\n");
		return 1;
	}
	daemon_pid = (pid_t)atoi(pid);
	if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || realpath(base, root_dir) == NULL) {
		fprintf(stderr, "concurrency: VFS_TEST_DIR=%s is not a directory\n", base);
		return 1;
	}
	if (!mtest_make_run_dir("concurrency", root_dir))
		return 1;

	s = suite_create("concurrency");
	tc = mtest_tcase(s, "enospc", NULL, NULL, 60);
	tcase_add_test(tc, parallel_volatile_writes_never_fail);
	tcase_add_test(tc, creates_never_fail_while_volatile_data_exists);
	tc = mtest_tcase(s, "load", NULL, NULL, seconds + 2 * CALL_TIMEOUT + 60);
	tcase_add_test(tc, mixed_load_loses_no_data_and_never_hangs);
	return mtest_run(s);
}
