/*
 * lookupbench.c - directory operations from several threads in one
 * directory: what FUSE_PARALLEL_DIROPS is for.  Without it the kernel
 * sends one LOOKUP or READDIR of a directory at a time (fuse_lock_inode);
 * with it, as many as threads ask.
 *
 *   lookupbench DIR MODE THREADS SECONDS [FILES]
 *
 * MODE
 *   miss     each thread stat()s names that do not exist (every one is a
 *            LOOKUP: a FUSE negative entry without a timeout is not kept);
 *   hit      FILES files are made in DIR; then, per round, dentries are
 *            dropped (/proc/sys/vm/drop_caches = 2, root) and the threads
 *            stat() all of them once between them: every stat a LOOKUP;
 *   readdir  FILES files are made in DIR; each thread lists DIR whole,
 *            again and again (READDIR/READDIRPLUS).
 * Prints "ops N", "seconds S" and "ops_per_s R".
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "bench.h"

static const char *dir, *mode;
static int nthreads, nfiles;
static double seconds;
static atomic_ulong ops;
static atomic_int next_file;
static pthread_barrier_t round_start, round_end;
static atomic_bool stop;

static void name_of(char *buf, size_t len, const char *prefix, long a, long b)
{
	snprintf(buf, len, "%s/%s-%ld-%ld", dir, prefix, a, b);
}

static void *worker(void *arg)
{
	long id = (long)arg, i = 0;
	char path[4096];
	struct stat st;

	if (!strcmp(mode, "miss")) {
		while (!atomic_load(&stop)) {
			name_of(path, sizeof(path), "miss", id, i++);
			if (stat(path, &st) == 0 || errno != ENOENT)
				die("stat %s: expected ENOENT", path);
			atomic_fetch_add(&ops, 1);
		}
	} else if (!strcmp(mode, "hit")) {
		for (;;) {
			int f;

			pthread_barrier_wait(&round_start);
			if (atomic_load(&stop))
				break;
			while ((f = atomic_fetch_add(&next_file, 1)) < nfiles) {
				name_of(path, sizeof(path), "f", f, 0);
				if (stat(path, &st) != 0)
					die("stat %s:", path);
				atomic_fetch_add(&ops, 1);
			}
			pthread_barrier_wait(&round_end);
		}
	} else {
		while (!atomic_load(&stop)) {
			DIR *d = opendir(dir);
			struct dirent *de;
			long n = 0;

			if (!d)
				die("opendir %s:", dir);
			while ((de = readdir(d)))
				n++;
			closedir(d);
			if (n < nfiles)
				die("readdir of %s saw %ld entries, expected %d", dir, n, nfiles);
			atomic_fetch_add(&ops, 1);
		}
	}
	return NULL;
}

static void drop_dentries(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd < 0 || write(fd, "2", 1) != 1)
		die("drop_caches:");
	close(fd);
}

int main(int argc, char **argv)
{
	pthread_t th[256];
	double t0, busy = 0;
	char path[4096];
	long i;

	if (argc < 5)
		die("usage: lookupbench DIR miss|hit|readdir THREADS SECONDS [FILES]");
	dir = argv[1];
	mode = argv[2];
	nthreads = atoi(argv[3]);
	seconds = atof(argv[4]);
	nfiles = argc > 5 ? atoi(argv[5]) : 2000;
	if (nthreads < 1 || nthreads > 256 || seconds <= 0 || nfiles < 1)
		die("lookupbench: bad THREADS, SECONDS or FILES");
	if (strcmp(mode, "miss") && strcmp(mode, "hit") && strcmp(mode, "readdir"))
		die("lookupbench: unknown mode %s", mode);
	if (strcmp(mode, "miss")) {
		for (i = 0; i < nfiles; i++) {
			int fd;

			name_of(path, sizeof(path), "f", i, 0);
			fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0)
				die("create %s:", path);
			close(fd);
		}
	}
	pthread_barrier_init(&round_start, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&round_end, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
			die("pthread_create failed");
	if (!strcmp(mode, "hit")) {
		/* Rounds until the time spent inside them reaches SECONDS. */
		while (busy < seconds) {
			drop_dentries();
			atomic_store(&next_file, 0);
			t0 = now_s();
			pthread_barrier_wait(&round_start);
			pthread_barrier_wait(&round_end);
			busy += now_s() - t0;
		}
		atomic_store(&stop, true);
		pthread_barrier_wait(&round_start);
	} else {
		t0 = now_s();
		usleep((useconds_t)(seconds * 1e6));
		atomic_store(&stop, true);
		busy = now_s() - t0;
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("ops %lu\nseconds %.3f\nops_per_s %.0f\n", atomic_load(&ops), busy,
	       (double)atomic_load(&ops) / busy);
	return 0;
}
