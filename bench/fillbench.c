/*
 * fillbench - what it costs to put data into fresh memory pages, by each
 * way the arena could get it there (bench/, built by contrib/bench.sh).
 *
 *   fillbench [REPS]
 *
 * 512 MiB in 1 MiB steps from one 1 MiB source buffer, into a fresh
 * mapping each time (best of REPS, default 5), as MiB/s:
 *   anon_populate_memcpy: MADV_POPULATE_WRITE, then memcpy (the arena
 *       before UFFDIO_COPY: the kernel clears each page, then we copy);
 *   anon_fault_memcpy: memcpy alone (a page fault per page);
 *   anon_uffdio_copy: UFFDIO_COPY from the buffer into a range registered
 *       with a userfaultfd (the kernel allocates each page and copies into
 *       it: no clearing, no fault; what the arena does now);
 *   memfd_mapped_memcpy: memcpy into a shared mapping of a memfd;
 *   memfd_pwrite: pwrite into a memfd (shmem does not clear a page that
 *       is written whole), no mapping;
 *   memfd_pwrite_populate_read: the same, then MADV_POPULATE_READ to map
 *       the pages (what an arena of memfd pages counted in RSS would do).
 * Needs root or vm.unprivileged_userfaultfd=1 for the userfaultfd (it
 * asks for UFFD_USER_MODE_ONLY, which any user may have since Linux 5.11).
 */
#include "bench.h"
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
#define STEP (1u << 20)

static size_t total = 512u << 20;
static char *src;

static double run_anon(int how)
{
	char *a = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int uffd = -1;
	double t;

	if (a == MAP_FAILED) die("mmap:");
	madvise(a, total, MADV_NOHUGEPAGE);
	if (how == 2) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { .range = { (uintptr_t)a, total }, .mode = UFFDIO_REGISTER_MODE_MISSING };
		uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
		if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) die("uffd:");
	}
	t = now_s();
	for (size_t off = 0; off < total; off += STEP) {
		if (how == 0) {
			if (madvise(a + off, STEP, MADV_POPULATE_WRITE)) die("populate:");
			memcpy(a + off, src, STEP);
		} else if (how == 1) {
			memcpy(a + off, src, STEP);
		} else {
			struct uffdio_copy c = { .dst = (uintptr_t)(a + off), .src = (uintptr_t)src, .len = STEP };
			if (ioctl(uffd, UFFDIO_COPY, &c) || c.copy != STEP) die("UFFDIO_COPY:");
		}
	}
	t = now_s() - t;
	munmap(a, total);
	if (uffd >= 0) close(uffd);
	return t;
}

static double run_memfd(int how)
{
	int fd = memfd_create("fill", MFD_CLOEXEC);
	char *a;
	double t;

	if (fd < 0 || ftruncate(fd, (off_t)total)) die("memfd:");
	a = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED) die("mmap:");
	t = now_s();
	for (size_t off = 0; off < total; off += STEP) {
		if (how == 0) {
			memcpy(a + off, src, STEP);
		} else {
			if (pwrite(fd, src, STEP, (off_t)off) != STEP) die("pwrite:");
			if (how == 2 && madvise(a + off, STEP, MADV_POPULATE_READ)) die("populate:");
		}
	}
	t = now_s() - t;
	munmap(a, total);
	close(fd);
	return t;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	static const char *names[] = { "anon_populate_memcpy", "anon_fault_memcpy", "anon_uffdio_copy",
				       "memfd_mapped_memcpy", "memfd_pwrite", "memfd_pwrite_populate_read" };
	double best[6];

	src = aligned_alloc(4096, STEP);
	memset(src, 'x', STEP);
	for (int k = 0; k < 6; k++) best[k] = 1e9;
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < 6; k++) {
			double t = k < 3 ? run_anon(k) : run_memfd(k - 3);
			if (t < best[k]) best[k] = t;
		}
	for (int k = 0; k < 6; k++)
		printf("%s_mib_s %.0f\n", names[k], (double)total / (1 << 20) / best[k]);
	return 0;
}
