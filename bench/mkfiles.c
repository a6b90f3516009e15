/*
 * mkfiles - create many small files, for bench/smallfiles.sh (the memory
 * cost per file of volatilefs's arena against one backing file per file).
 *
 *   mkfiles named DIR N SIZE NDIRS
 *       Make NDIRS directories DIR/dNNN and N files spread over them
 *       round-robin (file i is DIR/d<i % NDIRS>/f<i>): open(O_CREAT|O_EXCL),
 *       one write(2) of SIZE bytes when SIZE > 0, close.  No descriptor is
 *       kept.  Prints "files N", "create_s SECONDS", "create_per_s RATE".
 *
 *   mkfiles tmpfile DIR N SIZE
 *       N files made with open(DIR, O_TMPFILE|O_RDWR), SIZE bytes written
 *       into each; every descriptor is kept open (an unnamed file lives only
 *       as long as a reference to it: here the descriptor, in the
 *       passthrough model the kernel's reference behind a backing id).
 *       N is bounded by RLIMIT_NOFILE.  Prints the same lines, then
 *       "ready", and holds the files until SIGTERM/SIGINT or until stdin
 *       reaches end of file.
 *
 * The data written is the same non-zero pattern in every file.  Plain C
 * (gnu11), no dependencies: cc -O2 -Wall -Wextra -Werror -o mkfiles mkfiles.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
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

static unsigned long parse_ul(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end)
		die("bad %s: %s", what, s);
	return v;
}

static char *data_of(size_t size)
{
	char *buf = malloc(size ? size : 1);

	if (!buf)
		die("out of memory");
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)('a' + i % 26);
	return buf;
}

static void write_all(int fd, const char *buf, size_t size, const char *what, unsigned long i)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd, buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write %s %lu:", what, i);
		done += (size_t)n;
	}
}

static void report(unsigned long n, double t)
{
	printf("files %lu\ncreate_s %.3f\ncreate_per_s %.0f\n", n, t, t > 0 ? n / t : 0.0);
	fflush(stdout);
}

static int named(const char *dir, unsigned long n, size_t size, unsigned long ndirs)
{
	char path[4096], name[32];
	char *buf = data_of(size);
	int *dfd;
	double t0;

	if (ndirs == 0)
		die("NDIRS must be at least 1");
	dfd = calloc(ndirs, sizeof(*dfd));
	if (!dfd)
		die("out of memory");
	for (unsigned long d = 0; d < ndirs; d++) {
		snprintf(path, sizeof(path), "%s/d%03lu", dir, d);
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			die("mkdir %s:", path);
		dfd[d] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd[d] < 0)
			die("open %s:", path);
	}
	t0 = now_s();
	for (unsigned long i = 0; i < n; i++) {
		int fd;

		snprintf(name, sizeof(name), "f%07lu", i);
		fd = openat(dfd[i % ndirs], name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			die("create d%03lu/%s:", i % ndirs, name);
		if (size)
			write_all(fd, buf, size, name, i);
		if (close(fd) != 0)
			die("close d%03lu/%s:", i % ndirs, name);
	}
	report(n, now_s() - t0);
	for (unsigned long d = 0; d < ndirs; d++)
		close(dfd[d]);
	free(dfd);
	free(buf);
	return 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int tmpfiles(const char *dir, unsigned long n, size_t size)
{
	char *buf = data_of(size);
	struct sigaction sa;
	struct rlimit rl;
	double t0;
	char c;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		die("getrlimit:");
	if (rl.rlim_cur < rl.rlim_max) { /* the soft limit up to the hard one */
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			die("setrlimit:");
	}
	if (rl.rlim_cur != RLIM_INFINITY && n + 16 > rl.rlim_cur)
		die("%lu files need %lu descriptors; RLIMIT_NOFILE is %llu", n, n + 16,
		    (unsigned long long)rl.rlim_cur);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	t0 = now_s();
	for (unsigned long i = 0; i < n; i++) {
		int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

		if (fd < 0)
			die("open(%s, O_TMPFILE) %lu:", dir, i);
		if (size)
			write_all(fd, buf, size, "tmpfile", i);
	}
	report(n, now_s() - t0);
	printf("ready\n");
	fflush(stdout);
	/* Hold the files (and their descriptors) until told to go. */
	while (!stop) {
		ssize_t r = read(STDIN_FILENO, &c, 1);

		if (r == 0 || (r < 0 && errno != EINTR))
			break;
	}
	free(buf);
	return 0; /* exit closes every descriptor and frees the files */
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "named") == 0)
		return named(argv[2], parse_ul(argv[3], "N"), parse_ul(argv[4], "SIZE"),
			     parse_ul(argv[5], "NDIRS"));
	if (argc == 5 && strcmp(argv[1], "tmpfile") == 0)
		return tmpfiles(argv[2], parse_ul(argv[3], "N"), parse_ul(argv[4], "SIZE"));
	fprintf(stderr, "usage: mkfiles named DIR N SIZE NDIRS\n"
			"       mkfiles tmpfile DIR N SIZE\n");
	return 2;
}
