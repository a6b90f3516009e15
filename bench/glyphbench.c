/*
 * glyphbench - a glyph-cache-like workload (bench/, run by contrib/bench.sh).
 *
 *   glyphbench FILE FRAMES [plain|volatile] [SEED]
 *
 * One atlas file of 64 MiB holds entries of 4 to 64 KiB (whole pages,
 * sizes at random), written once and then read through a shared mmap, as
 * a compositor reads its glyph atlas.  Each frame uses 48 entries: 80% of
 * the picks come from a hot set (10% of the entries), the rest from all of
 * them.  Every use reads the whole entry through the mapping and checks its
 * first word.
 *
 * volatile (default; needs volatilefs): all entries start marked volatile,
 * one unit each (libvolatilefs).  Before an entry is used it is unmarked;
 * if the unmark says it was purged, it is regenerated (rewritten through
 * the mapping).  An entry that has not been used for 4 frames is marked
 * volatile again.
 *
 * plain: the same frames without marking or unmarking (any filesystem).
 *
 * Prints "frames_per_s", "entries_per_s", and in volatile mode "marks",
 * "unmarks", "regenerated", "vol_calls_per_s", "ns_per_call" (the mean
 * time of one mark or unmark call, timed around each); always "errors" (entries
 * whose data was wrong: must be 0).
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include "bench.h"
#include "volatilefs.h"

#define ATLAS (64u << 20)
#define PAGE 4096u
#define USES 48
#define IDLE 4
#define HOT_PERMILLE 800

struct entry {
	uint64_t off, len;
	uint64_t gen;
	long last_use;
	int vol;
};

static uint64_t expected_first(unsigned i, uint64_t gen)
{
	uint64_t w;

	fill_pattern(&w, sizeof(w), (uint64_t)i * 1000003u + gen);
	return w;
}

int main(int argc, char **argv)
{
	struct entry *e;
	unsigned n = 0, nhot, *hot, *ring[IDLE + 1], nring[IDLE + 1];
	uint64_t seed, off = 0, marks = 0, unmarks = 0, regen = 0, errors = 0, sink = 0;
	long frames;
	int vol = 1, fd;
	char *map;
	double t0, t, tcalls = 0;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: glyphbench FILE FRAMES [plain|volatile] [SEED]\n");
		return 2;
	}
	frames = strtol(argv[2], NULL, 0);
	if (argc >= 4)
		vol = strcmp(argv[3], "plain") != 0;
	seed = argc >= 5 ? strtoull(argv[4], NULL, 0) : 1;
	seed = seed * 0x9E3779B97F4A7C15ULL + 7;

	e = calloc(ATLAS / PAGE, sizeof(*e));
	if (!e)
		die("out of memory");
	while (off < ATLAS) {
		uint64_t len = (1 + rnd_next(&seed) % 16) * PAGE;

		if (off + len > ATLAS)
			len = ATLAS - off;
		e[n].off = off;
		e[n].len = len;
		e[n].last_use = -1000;
		off += len;
		n++;
	}
	nhot = n / 10;
	hot = malloc(sizeof(*hot) * n);
	for (unsigned i = 0; i < IDLE + 1; i++) {
		ring[i] = malloc(sizeof(unsigned) * USES);
		nring[i] = 0;
	}
	if (!hot || !ring[IDLE])
		die("out of memory");
	for (unsigned i = 0; i < n; i++)
		hot[i] = i;
	for (unsigned i = 0; i < nhot; i++) {
		unsigned j = i + (unsigned)(rnd_next(&seed) % (n - i)), tmp = hot[i];

		hot[i] = hot[j];
		hot[j] = tmp;
	}

	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("open %s:", argv[1]);
	{
		char *buf = malloc(64 * 1024);

		if (!buf)
			die("out of memory");
		for (unsigned i = 0; i < n; i++) {
			fill_pattern(buf, e[i].len, (uint64_t)i * 1000003u);
			if (write_all(fd, buf, e[i].len, (off_t)e[i].off) != 0)
				die("write %s:", argv[1]);
		}
		free(buf);
	}
	map = mmap(NULL, ATLAS, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap %s:", argv[1]);
	if (vol) {
		for (unsigned i = 0; i < n; i++) {
			if (volatilefs_mark(fd, e[i].off, e[i].len, 0) != 0)
				die("volatilefs_mark %s:", argv[1]);
			e[i].vol = 1;
		}
	}

	t0 = now_s();
	for (long f = 0; f < frames; f++) {
		unsigned *slot = ring[f % (IDLE + 1)];

		nring[f % (IDLE + 1)] = 0;
		for (int u = 0; u < USES; u++) {
			unsigned i = rnd_next(&seed) % 1000 < HOT_PERMILLE ?
					     hot[rnd_next(&seed) % nhot] :
					     (unsigned)(rnd_next(&seed) % n);
			const uint64_t *w = (const uint64_t *)(map + e[i].off);
			uint64_t s = 0;

			if (e[i].vol) {
				uint64_t bytes;
				int purged;

				double c0 = now_s();

				if (volatilefs_unmark(fd, e[i].off, e[i].len, &bytes, &purged) != 0)
					die("volatilefs_unmark %s:", argv[1]);
				tcalls += now_s() - c0;
				unmarks++;
				e[i].vol = 0;
				if (purged) {
					e[i].gen++;
					fill_pattern(map + e[i].off, e[i].len,
						     (uint64_t)i * 1000003u + e[i].gen);
					regen++;
				}
			}
			for (uint64_t k = 0; k < e[i].len / 8; k++)
				s += w[k];
			sink += s;
			if (w[0] != expected_first(i, e[i].gen))
				errors++;
			if (e[i].last_use != f) {
				e[i].last_use = f;
				slot[nring[f % (IDLE + 1)]++] = i;
			}
		}
		/* Entries last used IDLE frames ago go idle: mark them. */
		if (vol && f >= IDLE) {
			unsigned r = (unsigned)((f - IDLE) % (IDLE + 1));

			for (unsigned k = 0; k < nring[r]; k++) {
				unsigned i = ring[r][k];

				if (e[i].last_use == f - IDLE && !e[i].vol) {
					double c0 = now_s();

					if (volatilefs_mark(fd, e[i].off, e[i].len, 0) != 0)
						die("volatilefs_mark %s:", argv[1]);
					tcalls += now_s() - c0;
					e[i].vol = 1;
					marks++;
				}
			}
		}
	}
	t = now_s() - t0;
	printf("frames_per_s %.1f\n", frames / t);
	printf("entries_per_s %.1f\n", frames * USES / t);
	if (vol) {
		printf("marks %llu\nunmarks %llu\nregenerated %llu\n", (unsigned long long)marks,
		       (unsigned long long)unmarks, (unsigned long long)regen);
		printf("vol_calls_per_s %.1f\n", (marks + unmarks) / t);
		printf("ns_per_call %.1f\n", marks + unmarks ? tcalls * 1e9 / (marks + unmarks) : 0);
	}
	printf("errors %llu\n", (unsigned long long)errors);
	fprintf(stderr, "glyphbench: %u entries, checksum %llx\n", n, (unsigned long long)sink);
	munmap(map, ATLAS);
	close(fd);
	return errors ? 1 : 0;
}
