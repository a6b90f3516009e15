/*
 * memhog - a plain program that needs memory: allocates MIB mebibytes in
 * 1 MiB pieces, touching every page, then exits 0.  It does nothing to
 * its own OOM score or its cgroup.  Prints the time it took, in ms.
 *
 *   memhog MIB
 *
 * Used by the memory-pressure tests and bench (pressure.sh, contrib/bench.sh).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char *argv[])
{
	struct timespec t0, t1;
	char *end;
	unsigned long mib;
	char **v;

	if (argc != 2 || (mib = strtoul(argv[1], &end, 10)) == 0 || *end) {
		fprintf(stderr, "usage: memhog MIB\n");
		return 2;
	}
	v = calloc(mib, sizeof(*v));
	if (!v) {
		perror("memhog: calloc");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i < mib; i++) {
		v[i] = malloc(1u << 20);
		if (!v[i]) {
			fprintf(stderr, "memhog: malloc failed after %lu MiB: %s\n", i,
				strerror(errno));
			return 1;
		}
		for (size_t off = 0; off < (1u << 20); off += 4096)
			v[i][off] = (char)(i + off);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.0f\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	/* Given back, so that LeakSanitizer's exit check passes in a sanitizer build. */
	for (unsigned long i = 0; i < mib; i++)
		free(v[i]);
	free(v);
	return 0;
}
