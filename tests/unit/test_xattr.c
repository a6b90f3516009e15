/*
 * Unit tests for a node's plain extended attributes (src/daemon/xattr.c):
 * the flags, lookup, removal, listing, the namespace counts, many names
 * against a plain model, and allocation failure through the metadata
 * accounting (meta.h bound to a struct mem whose limit leaves no room).
 */
#include <check.h>
#include <errno.h>
#include <linux/limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "arena.h"
#include "mem.h"
#include "meta.h"
#include "xattr.h"
#include "utest.h"

#define MiB (1ull << 20)
#define BASE (10 * MiB)

static struct xattrs *t;
static uint64_t meta_start;

static void setup(void)
{
	t = NULL;
	meta_start = meta_bytes();
}

static void teardown(void)
{
	xattr_free_all(&t);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(meta_bytes(), meta_start);
}

static int set(const char *name, const char *value, int flags)
{
	return xattr_set(&t, name, value, strlen(value), flags);
}

/* The value of name as a string ("" when empty), or NULL when absent. */
static const char *get(const char *name)
{
	static char buf[256];
	const struct xattr *x = xattr_find(t, name);

	if (!x)
		return NULL;
	ck_assert_uint_lt(x->size, sizeof(buf));
	memcpy(buf, x->value, x->size);
	buf[x->size] = '\0';
	return buf;
}

/* Assert that the listing is exactly want (NUL-separated, len bytes), probe included. */
static void assert_list(const char *want, size_t len)
{
	char *buf = malloc(len + 1);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(xattr_list(t, NULL, 0), (long)len);
	ck_assert_int_eq(xattr_list(t, buf, len + 1), (long)len);
	ck_assert_int_eq(memcmp(buf, want, len), 0);
	free(buf);
}

#define ASSERT_LIST(s) assert_list((s), sizeof(s) - 1)

START_TEST(empty_node_has_no_table_and_lists_nothing)
{
	char buf[8];

	ck_assert_ptr_null(xattr_find(t, "user.a"));
	ck_assert_int_eq(xattr_list(t, NULL, 0), 0);
	ck_assert_int_eq(xattr_list(t, buf, sizeof(buf)), 0);
	ck_assert_int_eq(xattr_remove(&t, "user.a"), -ENODATA);
	ck_assert_uint_eq(xattr_ns(t), 0);
	ck_assert_uint_eq(xattr_count(t), 0);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(set_then_find_reads_back_value_and_size)
{
	static const char bin[] = { 'a', 0, (char)0xff, 'b' };
	const struct xattr *x;

	ck_assert_int_eq(set("user.text", "hello", 0), 0);
	ck_assert_int_eq(xattr_set(&t, "user.bin", bin, sizeof(bin), 0), 0);
	ck_assert_int_eq(xattr_set(&t, "user.empty", NULL, 0, 0), 0);
	ck_assert_str_eq(get("user.text"), "hello");
	x = xattr_find(t, "user.bin");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->size, sizeof(bin));
	ck_assert_int_eq(memcmp(x->value, bin, sizeof(bin)), 0);
	ck_assert_str_eq(get("user.empty"), "");
	ck_assert_uint_eq(xattr_find(t, "user.empty")->size, 0);
	ck_assert_ptr_null(xattr_find(t, "user.tex"));
	ck_assert_ptr_null(xattr_find(t, "user.texts"));
	ck_assert_uint_eq(xattr_count(t), 3);
}
END_TEST

START_TEST(create_flag_refuses_an_existing_name_and_keeps_its_value)
{
	ck_assert_int_eq(set("user.a", "one", XATTR_CREATE), 0);
	ck_assert_int_eq(set("user.a", "two", XATTR_CREATE), -EEXIST);
	ck_assert_str_eq(get("user.a"), "one");
	ck_assert_uint_eq(xattr_count(t), 1);
}
END_TEST

START_TEST(replace_flag_refuses_a_missing_name_and_creates_nothing)
{
	ck_assert_int_eq(set("user.a", "one", XATTR_REPLACE), -ENODATA);
	ck_assert_ptr_null(t);
	ck_assert_int_eq(set("user.b", "x", 0), 0);
	ck_assert_int_eq(set("user.a", "one", XATTR_REPLACE), -ENODATA);
	ck_assert_ptr_null(xattr_find(t, "user.a"));
	ck_assert_int_eq(set("user.b", "y", XATTR_REPLACE), 0);
	ck_assert_str_eq(get("user.b"), "y");
	ck_assert_uint_eq(xattr_count(t), 1);
}
END_TEST

START_TEST(replace_keeps_the_place_in_the_listing)
{
	ck_assert_int_eq(set("user.a", "1", 0), 0);
	ck_assert_int_eq(set("trusted.b", "2", 0), 0);
	ck_assert_int_eq(set("security.c", "3", 0), 0);
	ASSERT_LIST("user.a\0trusted.b\0security.c\0");
	/* Longer, shorter, empty: the entry is new each time, its place is not. */
	ck_assert_int_eq(set("trusted.b", "a much longer value than before", 0), 0);
	ASSERT_LIST("user.a\0trusted.b\0security.c\0");
	ck_assert_int_eq(set("user.a", "", XATTR_REPLACE), 0);
	ck_assert_int_eq(set("security.c", "z", 0), 0);
	ASSERT_LIST("user.a\0trusted.b\0security.c\0");
	ck_assert_str_eq(get("trusted.b"), "a much longer value than before");
	ck_assert_str_eq(get("user.a"), "");
	ck_assert_str_eq(get("security.c"), "z");
}
END_TEST

START_TEST(remove_forgets_the_name_and_the_last_one_frees_the_table)
{
	ck_assert_int_eq(set("user.a", "1", 0), 0);
	ck_assert_int_eq(set("user.b", "2", 0), 0);
	ck_assert_int_eq(set("user.c", "3", 0), 0);
	ck_assert_int_eq(xattr_remove(&t, "user.b"), 0);
	ck_assert_int_eq(xattr_remove(&t, "user.b"), -ENODATA);
	ck_assert_ptr_null(xattr_find(t, "user.b"));
	ASSERT_LIST("user.a\0user.c\0");
	ck_assert_int_eq(xattr_remove(&t, "user.a"), 0);
	ASSERT_LIST("user.c\0");
	ck_assert_int_eq(set("user.a", "again", 0), 0);
	ASSERT_LIST("user.c\0user.a\0"); /* a new name goes last */
	ck_assert_int_eq(xattr_remove(&t, "user.c"), 0);
	ck_assert_int_eq(xattr_remove(&t, "user.a"), 0);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(meta_bytes(), meta_start);
	ck_assert_int_eq(xattr_remove(&t, "user.a"), -ENODATA);
}
END_TEST

START_TEST(list_probes_fills_and_refuses_a_short_buffer)
{
	char buf[64];

	ck_assert_int_eq(set("user.one", "1", 0), 0);
	ck_assert_int_eq(set("user.two", "2", 0), 0);
	ck_assert_int_eq(xattr_list(t, buf, 0), 18);
	ck_assert_int_eq(xattr_list(t, buf, 1), -ERANGE);
	ck_assert_int_eq(xattr_list(t, buf, 17), -ERANGE);
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(xattr_list(t, buf, 18), 18);
	ck_assert_int_eq(memcmp(buf, "user.one\0user.two\0", 18), 0);
	ck_assert_int_eq(buf[18], 'x'); /* nothing past the list */
	ck_assert_int_eq(xattr_list(t, buf, sizeof(buf)), 18);
}
END_TEST

START_TEST(namespaces_are_counted_and_others_refused)
{
	char name[XATTR_NAME_MAX + 2];

	ck_assert_int_eq(set("system.posix_acl_access", "x", 0), -EOPNOTSUPP);
	ck_assert_int_eq(set("other.x", "x", 0), -EOPNOTSUPP);
	ck_assert_int_eq(set("user", "x", 0), -EOPNOTSUPP);
	ck_assert_ptr_null(t);
	ck_assert_int_eq(set("user.a", "1", 0), 0);
	ck_assert_int_eq(set("user.b", "1", 0), 0);
	ck_assert_int_eq(set("security.s", "1", 0), 0);
	ck_assert_uint_eq(xattr_ns(t), XATTR_NS_USER | XATTR_NS_SECURITY);
	ck_assert_int_eq(set("trusted.t", "1", 0), 0);
	ck_assert_uint_eq(xattr_ns(t), XATTR_NS_USER | XATTR_NS_TRUSTED | XATTR_NS_SECURITY);
	ck_assert_int_eq(set("user.a", "2", 0), 0); /* a replacement counts once */
	ck_assert_int_eq(xattr_remove(&t, "user.a"), 0);
	ck_assert_uint_eq(xattr_ns(t), XATTR_NS_USER | XATTR_NS_TRUSTED | XATTR_NS_SECURITY);
	ck_assert_int_eq(xattr_remove(&t, "user.b"), 0);
	ck_assert_uint_eq(xattr_ns(t), XATTR_NS_TRUSTED | XATTR_NS_SECURITY);
	ck_assert_int_eq(xattr_remove(&t, "security.s"), 0);
	ck_assert_uint_eq(xattr_ns(t), XATTR_NS_TRUSTED);

	/* XATTR_NAME_MAX bytes are a name; one more is ERANGE, as the kernel says. */
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[XATTR_NAME_MAX] = '\0';
	ck_assert_int_eq(set(name, "v", 0), 0);
	ck_assert_str_eq(get(name), "v");
	name[XATTR_NAME_MAX] = 'n';
	name[XATTR_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(set(name, "v", 0), -ERANGE);
	ck_assert_ptr_null(xattr_find(t, name));
	ck_assert_uint_eq(xattr_count(t), 2);
}
END_TEST

/*
 * Many names against a plain model: an array in listing order, searched
 * linearly.  The loops check with plain ifs, as test_extset.c explains:
 * every passing ck_assert is a write to the parent process.
 */
#define POOL 5000 /* more than the 4096 of stress-ng's xattr stressor */

struct model {
	int order[POOL]; /* indexes into the pool, in listing order */
	int n;
	int value[POOL]; /* -1: absent */
};

static void pool_name(char *buf, size_t size, int i)
{
	/* Names that share long prefixes, and a few namespaces. */
	static const char *const ns[] = { "user.", "trusted.", "security." };

	snprintf(buf, size, "%svar_%d", ns[i % 7 == 0 ? 1 : i % 11 == 0 ? 2 : 0], i);
}

static void model_check(const struct model *m)
{
	static char list[POOL * 24];
	char name[32], want[32];
	size_t off = 0;
	long len;

	if (xattr_count(t) != (size_t)m->n)
		ck_abort_msg("count %zu, model %d", xattr_count(t), m->n);
	len = xattr_list(t, list, sizeof(list));
	for (int k = 0; k < m->n; k++) {
		pool_name(name, sizeof(name), m->order[k]);
		if (len < 0 || off + strlen(name) + 1 > (size_t)len ||
		    strcmp(list + off, name) != 0)
			ck_abort_msg("listing entry %d is not %s", k, name);
		off += strlen(name) + 1;
	}
	if ((size_t)len != off || xattr_list(t, NULL, 0) != len)
		ck_abort_msg("listing length %ld, model %zu", len, off);
	for (int i = 0; i < POOL; i++) {
		const struct xattr *x;

		pool_name(name, sizeof(name), i);
		x = xattr_find(t, name);
		if ((x != NULL) != (m->value[i] >= 0))
			ck_abort_msg("%s: found %d, model %d", name, x != NULL, m->value[i]);
		snprintf(want, sizeof(want), "value-%d", m->value[i]);
		if (x && (x->size != strlen(want) || memcmp(x->value, want, x->size) != 0))
			ck_abort_msg("%s: wrong value", name);
	}
}

static void model_set(struct model *m, int i, int v)
{
	char name[32], value[32];
	int ret;

	pool_name(name, sizeof(name), i);
	snprintf(value, sizeof(value), "value-%d", v);
	ret = set(name, value, 0);
	if (ret != 0)
		ck_abort_msg("set %s: %d", name, ret);
	if (m->value[i] < 0)
		m->order[m->n++] = i;
	m->value[i] = v;
}

static void model_remove(struct model *m, int i)
{
	char name[32];
	int ret, k;

	pool_name(name, sizeof(name), i);
	ret = xattr_remove(&t, name);
	if (ret != (m->value[i] >= 0 ? 0 : -ENODATA))
		ck_abort_msg("remove %s: %d, model %d", name, ret, m->value[i]);
	if (m->value[i] < 0)
		return;
	m->value[i] = -1;
	for (k = 0; m->order[k] != i; k++)
		;
	memmove(&m->order[k], &m->order[k + 1], (size_t)(m->n - k - 1) * sizeof(int));
	m->n--;
}

START_TEST(thousands_of_names_match_a_model)
{
	static struct model m;
	unsigned seed = 7;

	m.n = 0;
	for (int i = 0; i < POOL; i++)
		m.value[i] = -1;
	/* Fill in order, as stress-ng does, then replace each one. */
	for (int i = 0; i < POOL; i++)
		model_set(&m, i, i);
	model_check(&m);
	for (int i = 0; i < POOL; i++)
		model_set(&m, i, i + 1);
	model_check(&m);
	/* Every other one out, then all the rest: the table shrinks, names stay found. */
	for (int i = 0; i < POOL; i += 2)
		model_remove(&m, i);
	model_check(&m);
	for (int i = 1; i < POOL; i += 2) {
		model_remove(&m, i);
		if (i % 301 == 0)
			model_check(&m);
	}
	ck_assert_ptr_null(t);
	/* Random sets and removes over the pool (growing and shrinking through the sizes). */
	for (int round = 0; round < 20000; round++) {
		int i = rand_r(&seed) % POOL;

		if (rand_r(&seed) % 100 < (round < 10000 ? 70 : 30))
			model_set(&m, i, rand_r(&seed) % 1000);
		else
			model_remove(&m, i);
		if (round % 2500 == 0)
			model_check(&m);
	}
	model_check(&m);
}
END_TEST

/* ---- allocation failure: metadata charged to a struct mem with no room left ---- */

static struct arena arena;
static struct mem mem;

static void setup_limited(void)
{
	setup();
	ck_assert_int_eq(arena_init(&arena), 0);
	ck_assert_int_eq(mem_init(&mem, &arena, 1ull << 30, 0), 0);
	utest_mem_freeze(&mem, BASE); /* so the room is exact to the byte */
	meta_bind(&mem);
}

static void teardown_limited(void)
{
	mem_set_limit(&mem, 1ull << 30);
	xattr_free_all(&t);
	meta_bind(NULL);
	ck_assert_uint_eq(atomic_load(&mem.charged), 0);
	mem_destroy(&mem);
	arena_destroy(&arena);
	teardown();
}

/* Leave exactly bytes of room for metadata (which may pass the limit by MEM_META_SLACK). */
static void leave_room(uint64_t bytes)
{
	mem_set_limit(&mem, BASE + atomic_load(&mem.charged) + bytes - MEM_META_SLACK);
}

/* Everything that tells one state from another: count, listing, and the memory held. */
struct snapshot {
	size_t count;
	long len;
	char list[256];
	uint64_t meta, charged;
};

static void snap(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->count = xattr_count(t);
	s->len = xattr_list(t, s->list, sizeof(s->list));
	s->meta = meta_bytes();
	s->charged = atomic_load(&mem.charged);
}

static void assert_unchanged(const struct snapshot *before)
{
	struct snapshot now;

	snap(&now);
	ck_assert_uint_eq(now.count, before->count);
	ck_assert_int_eq(now.len, before->len);
	ck_assert_int_eq(memcmp(now.list, before->list, sizeof(now.list)), 0);
	ck_assert_uint_eq(now.meta, before->meta);
	ck_assert_uint_eq(now.charged, before->charged);
}

START_TEST(failed_first_set_leaves_no_table)
{
	struct snapshot s;

	snap(&s);
	leave_room(0);
	ck_assert_int_eq(set("user.a", "1", 0), -ENOMEM);
	ck_assert_ptr_null(t);
	assert_unchanged(&s);
	/* Room for the entry but not for the table: the entry goes back. */
	leave_room(meta_cost(sizeof(struct xattr) + 1 + strlen("user.a") + 1));
	ck_assert_int_eq(set("user.a", "1", 0), -ENOMEM);
	ck_assert_ptr_null(t);
	assert_unchanged(&s);
	mem_set_limit(&mem, 1ull << 30);
	ck_assert_int_eq(set("user.a", "1", 0), 0);
	ck_assert_str_eq(get("user.a"), "1");
}
END_TEST

START_TEST(failed_set_or_replace_changes_nothing)
{
	struct snapshot s;

	ck_assert_int_eq(set("user.a", "old", 0), 0);
	ck_assert_int_eq(set("user.b", "old", 0), 0);
	snap(&s);
	leave_room(0);
	ck_assert_int_eq(set("user.c", "new", 0), -ENOMEM);
	ck_assert_int_eq(set("user.a", "new", 0), -ENOMEM);
	ck_assert_int_eq(set("user.b", "new", XATTR_REPLACE), -ENOMEM);
	assert_unchanged(&s);
	ck_assert_ptr_null(xattr_find(t, "user.c"));
	ck_assert_str_eq(get("user.a"), "old");
	ck_assert_str_eq(get("user.b"), "old");
	/* The flags are checked before anything is allocated. */
	ck_assert_int_eq(set("user.a", "new", XATTR_CREATE), -EEXIST);
	ck_assert_int_eq(set("user.c", "new", XATTR_REPLACE), -ENODATA);
	/* Removing needs no memory. */
	ck_assert_int_eq(xattr_remove(&t, "user.a"), 0);
	ck_assert_ptr_null(xattr_find(t, "user.a"));
}
END_TEST

START_TEST(failed_growth_frees_the_new_entry_and_changes_nothing)
{
	struct snapshot s;
	char name[16];
	int i, ret = 0;

	/* Fill until a set needs a larger table, with room only for its entry. */
	ck_assert_int_eq(set("user.n0", "v", 0), 0);
	for (i = 1; i < 10000 && ret == 0; i++) {
		snprintf(name, sizeof(name), "user.n%d", i);
		snap(&s);
		leave_room(meta_cost(sizeof(struct xattr) + 1 + strlen(name) + 1));
		ret = set(name, "v", 0);
	}
	ck_assert_int_eq(ret, -ENOMEM);
	i--; /* the name that failed */
	ck_assert_uint_gt(i, 4); /* the first table had room for a few */
	ck_assert_ptr_null(xattr_find(t, name));
	assert_unchanged(&s);
	/* With room, the same set succeeds and every name is still there. */
	mem_set_limit(&mem, 1ull << 30);
	ck_assert_int_eq(set(name, "v", 0), 0);
	ck_assert_uint_eq(xattr_count(t), (size_t)i + 1);
	for (int k = 0; k <= i; k++) {
		snprintf(name, sizeof(name), "user.n%d", k);
		ck_assert_str_eq(get(name), "v");
	}
}
END_TEST

START_TEST(shrinking_without_memory_keeps_the_larger_table)
{
	char name[16];

	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "user.n%d", i);
		ck_assert_int_eq(set(name, "v", 0), 0);
	}
	for (int i = 0; i < 199; i++) {
		snprintf(name, sizeof(name), "user.n%d", i);
		leave_room(0); /* what the last removal freed is not room for this one */
		ck_assert_int_eq(xattr_remove(&t, name), 0);
	}
	ck_assert_uint_eq(xattr_count(t), 1);
	ck_assert_str_eq(get("user.n199"), "v");
	ASSERT_LIST("user.n199\0");
	/* With room again, the next removal frees everything. */
	mem_set_limit(&mem, 1ull << 30);
	ck_assert_int_eq(xattr_remove(&t, "user.n199"), 0);
	ck_assert_ptr_null(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xattr");
	TCase *tc = utest_tcase(s, "core", setup, teardown, 30);
	TCase *lim = utest_tcase(s, "no room", setup_limited, teardown_limited, 30);

	tcase_add_test(tc, empty_node_has_no_table_and_lists_nothing);
	tcase_add_test(tc, set_then_find_reads_back_value_and_size);
	tcase_add_test(tc, create_flag_refuses_an_existing_name_and_keeps_its_value);
	tcase_add_test(tc, replace_flag_refuses_a_missing_name_and_creates_nothing);
	tcase_add_test(tc, replace_keeps_the_place_in_the_listing);
	tcase_add_test(tc, remove_forgets_the_name_and_the_last_one_frees_the_table);
	tcase_add_test(tc, list_probes_fills_and_refuses_a_short_buffer);
	tcase_add_test(tc, namespaces_are_counted_and_others_refused);
	tcase_add_test(tc, thousands_of_names_match_a_model);

	tcase_add_test(lim, failed_first_set_leaves_no_table);
	tcase_add_test(lim, failed_set_or_replace_changes_nothing);
	tcase_add_test(lim, failed_growth_frees_the_new_entry_and_changes_nothing);
	tcase_add_test(lim, shrinking_without_memory_keeps_the_larger_table);
	return utest_run(s);
}
