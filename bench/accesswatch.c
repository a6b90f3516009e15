/*
 * accesswatch.c - what watching for reads would cost and see: the
 * candidates for passthrough recency (DESIGN section 11) that the daemon
 * did not take, measured from outside it.
 *
 *   accesswatch fanotify DIR   FAN_ACCESS on the whole filesystem of DIR
 *                              (FAN_MARK_FILESYSTEM; root)
 *   accesswatch inotify FILE   IN_ACCESS on one file
 *
 * DIR may be /proc/PID/fd/N: the root of the daemon's private tmpfs, which
 * is attached to no directory.  Reads events until SIGINT or SIGTERM,
 * then prints "events N" (fanotify merges nothing here: one event per
 * read that reaches the backing file; inotify merges a repeat of the
 * event still queued) and "reads N" (the event buffers read).
 */
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>

#include "bench.h"

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	unsigned long events = 0, reads = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	struct pollfd pfd;
	bool fan;
	int fd;

	if (argc != 3 || (strcmp(argv[1], "fanotify") && strcmp(argv[1], "inotify")))
		die("usage: accesswatch fanotify DIR | inotify FILE");
	fan = !strcmp(argv[1], "fanotify");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (fan) {
		int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd < 0)
			die("open %s:", argv[2]);
		fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY);
		if (fd < 0)
			die("fanotify_init:");
		if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_ACCESS, dfd, NULL) < 0)
			die("fanotify_mark %s:", argv[2]);
		close(dfd);
	} else {
		fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (fd < 0)
			die("inotify_init1:");
		if (inotify_add_watch(fd, argv[2], IN_ACCESS) < 0)
			die("inotify_add_watch %s:", argv[2]);
	}
	printf("ready\n");
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!done) {
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			continue;
		reads++;
		if (fan) {
			struct fanotify_event_metadata *m = (void *)buf;

			for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
				events++;
				if (m->fd >= 0)
					close(m->fd);
			}
		} else {
			for (char *p = buf; p < buf + n;) {
				struct inotify_event *e = (void *)p;

				events++;
				p += sizeof(*e) + e->len;
			}
		}
	}
	printf("events %lu\nreads %lu\n", events, reads);
	return 0;
}
