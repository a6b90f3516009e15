/*
 * utest: what the unit suites share, linked into each as a static library.
 *
 *   main()   utest_tcase(): a test case of a suite, with its fixture and timeout;
 *            utest_run(): runs the suite and gives main()'s exit status;
 *   fs       utest_fs_init() and utest_fs_destroy(): a struct fs without a mount, and its
 *            end, which asserts that everything it took was given back;
 *   mem      utest_mem_freeze(): a struct mem whose base no longer follows the kernel's
 *            figure, so that base + charged against the limit is exact to the byte.
 *
 * The assertions are Check's: utest_fs_init() and utest_fs_destroy() belong in a fixture or
 * a test, not in main().
 */
#ifndef UTEST_H
#define UTEST_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct fs;
struct mem;

/* A test case of s named name, with this checked fixture unless setup and teardown are both
 * NULL, and this timeout in seconds unless it is 0 (then Check's default, which
 * CK_DEFAULT_TIMEOUT sets). */
TCase *utest_tcase(Suite *s, const char *name, SFun setup, SFun teardown, double timeout);

/* Runs every test of s and frees it.  Check itself reads CK_FORK, CK_RUN_CASE,
 * CK_DEFAULT_TIMEOUT and CK_TIMEOUT_MULTIPLIER from the environment.  Returns the exit
 * status for main(): 0 when no test failed, else 1. */
int utest_run(Suite *s);

/* fs_init() with a 1 GiB memory limit and a root of this mode.  With purging, eviction is
 * attached, so that a write that needs room purges volatile data first. */
void utest_fs_init(struct fs *fs, mode_t root_mode, bool purging);

/* fs_destroy(), then asserts that no metadata byte and no reservation is left. */
void utest_fs_destroy(struct fs *fs);

/* Stops m's base from following the kernel's figure (statm_fd = -1, so mem_reconcile()
 * leaves it alone) and sets it to base. */
void utest_mem_freeze(struct mem *m, uint64_t base);

#endif
