/* What the unit suites share: see utest.h. */
#include <stdatomic.h>
#include <unistd.h>

#include "evict.h"
#include "fs.h"
#include "mem.h"
#include "meta.h"
#include "utest.h"

TCase *utest_tcase(Suite *s, const char *name, SFun setup, SFun teardown, double timeout)
{
	TCase *tc = tcase_create(name);

	if (setup || teardown)
		tcase_add_checked_fixture(tc, setup, teardown);
	if (timeout > 0)
		tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

int utest_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

void utest_fs_init(struct fs *fs, mode_t root_mode, bool purging)
{
	struct fs_config cfg = { .memory_limit = 1ull << 30, .root_mode = root_mode };

	ck_assert_int_eq(fs_init(fs, &cfg), 0);
	if (purging)
		evict_attach(fs);
}

void utest_fs_destroy(struct fs *fs)
{
	fs_destroy(fs);
	ck_assert_uint_eq(meta_bytes(), 0);
	ck_assert_uint_eq(atomic_load(&fs->mem.charged), 0);
	ck_assert_uint_eq(atomic_load(&fs->mem.meta), 0);
}

void utest_mem_freeze(struct mem *m, uint64_t base)
{
	if (m->statm_fd >= 0)
		close(m->statm_fd);
	m->statm_fd = -1;
	atomic_store(&m->base, (int64_t)base);
}
