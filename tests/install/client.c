/*
 * client.c - a program built against an *installed* libvolatilefs, the
 * way a user would build one: only <volatilefs.h> and
 * `pkg-config --cflags --libs volatilefs`.  tests/install/install.sh
 * compiles it against a DESTDIR install and runs it.
 *
 *   client FILE
 *
 * Opens FILE for reading and writing and calls, printing one line each:
 *   volatilefs_mark(fd, 0, 8192, VOLATILEFS_PRIORITY(1))  "mark 0:8192: ok"
 *   volatilefs_unmark(fd, 0, 4096, &bytes, &purged)       "unmark 0:4096: bytes=N purged=P"
 *   volatilefs_purged(fd, 0, 0, ...)                      "purged: count=N OFF:LEN..."
 * A call that fails prints "error ENAME (strerror)" instead; on a file
 * that is not on volatilefs every call fails with ENOTTY.
 *
 * Exit status: 0 when every call succeeded, 3 when one failed, 2 for bad
 * usage or when FILE cannot be opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <volatilefs.h>

static const char *errname(int e)
{
	switch (e) {
	case ENOTTY: return "ENOTTY";
	case EBADF: return "EBADF";
	case EINVAL: return "EINVAL";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case EIO: return "EIO";
	default: return "E?";
	}
}

static int report_error(const char *what)
{
	int e = errno;

	printf("%s: error %s (%s)\n", what, errname(e), strerror(e));
	return 3;
}

int main(int argc, char **argv)
{
	struct volatilefs_extent ext[8];
	uint64_t bytes = 0;
	size_t count = 0;
	int fd, purged = 0, status = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 2;
	}

	if (volatilefs_mark(fd, 0, 8192, VOLATILEFS_PRIORITY(1)) == 0)
		printf("mark 0:8192: ok\n");
	else
		status = report_error("mark 0:8192");

	if (volatilefs_unmark(fd, 0, 4096, &bytes, &purged) == 0)
		printf("unmark 0:4096: bytes=%" PRIu64 " purged=%d\n", bytes, purged);
	else
		status = report_error("unmark 0:4096");

	if (volatilefs_purged(fd, 0, 0, ext, sizeof(ext) / sizeof(ext[0]), &count) == 0) {
		printf("purged: count=%zu", count);
		for (size_t i = 0; i < count && i < sizeof(ext) / sizeof(ext[0]); i++)
			printf(" %" PRIu64 ":%" PRIu64, ext[i].offset, ext[i].length);
		printf("\n");
	} else {
		status = report_error("purged");
	}

	if (close(fd) != 0) {
		fprintf(stderr, "%s: close %s: %s\n", argv[0], argv[1], strerror(errno));
		return 2;
	}
	return status;
}
