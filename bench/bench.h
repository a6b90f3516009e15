/*
 * bench.h - small helpers shared by the benchmark programs in bench/
 * (built by contrib/bench.sh; not part of volatilefs itself).
 *
 * Every program prints its results as "key value" lines on stdout, one
 * figure per line, so contrib/bench.sh can pick them up with awk.
 * Diagnostics go to stderr.  Timing is CLOCK_MONOTONIC.
 */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 1, 2), noreturn)) static inline void die(const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (fmt[0] && fmt[strlen(fmt) - 1] == ':')
		fprintf(stderr, " %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

/* VmRSS of pid in bytes (from /proc/PID/status), 0 if unknown. */
static inline uint64_t vmrss_of(pid_t pid)
{
	char path[64], buf[4096];
	unsigned long long kib = 0;
	ssize_t n;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "VmRSS:");
	if (!p || sscanf(p + 6, "%llu", &kib) != 1)
		return 0;
	return (uint64_t)kib * 1024;
}

/* SIZE with an optional K/M/G suffix (binary). */
static inline uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		die("bad size: %s", s);
	return v;
}

/* xorshift64*: a small, seedable generator (reproducible runs). */
static inline uint64_t rnd_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Fill buf with a pattern that depends on tag (never all zeros). */
static inline void fill_pattern(void *buf, size_t len, uint64_t tag)
{
	uint64_t *w = buf, s = tag * 0x9E3779B97F4A7C15ULL + 1;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = rnd_next(&s) | 1;
}

/* write() all of it. */
static inline int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
