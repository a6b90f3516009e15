/*
 * rsswatch - sample a process's VmRSS at a fixed interval (bench/).
 *
 *   rsswatch PID INTERVAL_MS
 *
 * Prints "SECONDS RSS_MIB" lines (seconds since start) every INTERVAL_MS
 * milliseconds, on an absolute schedule, until PID is gone or rsswatch gets
 * SIGTERM/SIGINT.  Output is flushed line by line.
 */
#include <signal.h>

#include "bench.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec next;
	long interval_ns;
	double t0;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: rsswatch PID INTERVAL_MS\n");
		return 2;
	}
	pid = (pid_t)atoi(argv[1]);
	interval_ns = atol(argv[2]) * 1000000L;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &next);
	t0 = now_s();
	while (!stop) {
		uint64_t rss = vmrss_of(pid);

		if (!rss && kill(pid, 0) != 0)
			break;
		printf("%.3f %.2f\n", now_s() - t0, rss / 1048576.0);
		next.tv_nsec += interval_ns;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}
