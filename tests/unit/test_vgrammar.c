/* Unit tests for the user.volatile.* value grammar (src/daemon/vgrammar.c). */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgrammar.h"
#include "utest.h"

#define K 1024ull
#define M (1024ull * 1024)

/* Parse a C string (without its NUL) as a range list. */
static int parse(const char *s, bool allow_flags, struct vrange_list *l)
{
	return vgrammar_parse_ranges(s, strlen(s), allow_flags, l);
}

static void assert_empty(const struct vrange_list *l)
{
	ck_assert_ptr_null(l->v);
	ck_assert_uint_eq(l->n, 0);
	ck_assert(!l->age);
	ck_assert(!l->has_priority);
}

/* s must be EINVAL, with nothing returned, in the given mode. */
static void assert_rejected(const char *s, bool allow_flags)
{
	struct vrange_list l;

	memset(&l, 0x5a, sizeof(l)); /* garbage in: the parser must empty it */
	ck_assert_msg(parse(s, allow_flags, &l) == -EINVAL, "accepted '%s' (flags %d)", s,
		      allow_flags);
	assert_empty(&l);
}

static void assert_one(const char *s, uint64_t off, uint64_t len)
{
	struct vrange_list l;

	ck_assert_msg(parse(s, false, &l) == 0, "refused '%s'", s);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_uint_eq(l.v[0].offset, off);
	ck_assert_uint_eq(l.v[0].length, len);
	vrange_list_free(&l);
}

START_TEST(ranges_spec_example)
{
	struct vrange_list l;

	ck_assert_int_eq(parse("0:64K 1M:1M priority=1", true, &l), 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_uint_eq(l.v[0].offset, 0);
	ck_assert_uint_eq(l.v[0].length, 64 * K);
	ck_assert_uint_eq(l.v[1].offset, M);
	ck_assert_uint_eq(l.v[1].length, M);
	ck_assert(l.has_priority);
	ck_assert_uint_eq(l.priority, 1);
	ck_assert(!l.age);
	vrange_list_free(&l);
	assert_empty(&l);
	vrange_list_free(&l); /* twice is harmless */
}
END_TEST

START_TEST(ranges_without_flags_get_default_priority)
{
	struct vrange_list l;

	ck_assert_int_eq(parse("0:4K", true, &l), 0);
	ck_assert(!l.has_priority);
	ck_assert_uint_eq(l.priority, VGRAMMAR_DEFAULT_PRIORITY);
	ck_assert(!l.age);
	vrange_list_free(&l);
}
END_TEST

START_TEST(ranges_all_is_whole_file)
{
	struct vrange_list l;

	assert_one("all", 0, 0);
	ck_assert_int_eq(parse("all age", true, &l), 0);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_uint_eq(l.v[0].offset, 0);
	ck_assert_uint_eq(l.v[0].length, 0);
	ck_assert(l.age);
	vrange_list_free(&l);
}
END_TEST

START_TEST(ranges_separators_any_run)
{
	struct vrange_list l;
	const char *s = ",, \t0:4K,\n8K:4K\t \n,all , ,12K:1\n";

	ck_assert_int_eq(parse(s, false, &l), 0);
	ck_assert_uint_eq(l.n, 4);
	ck_assert_uint_eq(l.v[0].offset, 0);
	ck_assert_uint_eq(l.v[1].offset, 8 * K);
	ck_assert_uint_eq(l.v[2].offset, 0);
	ck_assert_uint_eq(l.v[2].length, 0);
	ck_assert_uint_eq(l.v[3].offset, 12 * K);
	ck_assert_uint_eq(l.v[3].length, 4 * K);
	vrange_list_free(&l);
	/* Other whitespace is not a separator. */
	assert_rejected("0:4K\r\n8K:4K", false);
	assert_rejected("0:4K\v8K:4K", false);
	assert_rejected("0:4K;8K:4K", false);
}
END_TEST

START_TEST(ranges_trailing_nul_accepted)
{
	struct vrange_list l;
	const char s[] = "0:4K 8K:8K";

	ck_assert_int_eq(vgrammar_parse_ranges(s, sizeof(s), false, &l), 0); /* NUL included */
	ck_assert_uint_eq(l.n, 2);
	ck_assert_uint_eq(l.v[1].length, 8 * K);
	vrange_list_free(&l);
	/* The buffer need not be terminated at all: only len counts. */
	ck_assert_int_eq(vgrammar_parse_ranges("0:4K 8K:8Kjunk", 10, false, &l), 0);
	ck_assert_uint_eq(l.n, 2);
	vrange_list_free(&l);
}
END_TEST

START_TEST(ranges_embedded_nul_rejected)
{
	struct vrange_list l;
	const char a[] = "0:4K\0008K:4K";
	const char b[] = "0:4K\0"; /* two NULs with the literal's own */
	const char c[] = "\0";

	ck_assert_int_eq(vgrammar_parse_ranges(a, sizeof(a), false, &l), -EINVAL);
	assert_empty(&l);
	ck_assert_int_eq(vgrammar_parse_ranges(a, sizeof(a) - 1, false, &l), -EINVAL);
	assert_empty(&l);
	ck_assert_int_eq(vgrammar_parse_ranges(b, sizeof(b), false, &l), -EINVAL);
	assert_empty(&l);
	/* A lone NUL is an empty value. */
	ck_assert_int_eq(vgrammar_parse_ranges(c, 1, false, &l), -EINVAL);
	assert_empty(&l);
}
END_TEST

START_TEST(ranges_hex_and_suffixes)
{
	assert_one("0x1000:0x2000", 4096, 8192);
	assert_one("0X1000:0XA000", 4096, 0xa000);
	assert_one("4k:1m", 4096, M);
	assert_one("1G:2T", 1ull << 30, 2ull << 40);
	assert_one("0x10K:0x10M", 16 * K, 16 * M);
}
END_TEST

START_TEST(ranges_length_rounded_up_to_page)
{
	assert_one("0:1", 0, 4096);
	assert_one("4096:4097", 4096, 8192);
	assert_one("0:4095", 0, 4096);
	assert_one("0:4096", 0, 4096);
	assert_one("0:1K", 0, 4096);
}
END_TEST

START_TEST(ranges_length_zero_is_unbounded)
{
	assert_one("8K:0", 8192, 0);
	assert_one("0x2000:0x0", 8192, 0);
	assert_one("0:0", 0, 0);
}
END_TEST

START_TEST(ranges_keep_written_order)
{
	struct vrange_list l;

	ck_assert_int_eq(parse("8K:4K 0:4K 0:8K", false, &l), 0);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_uint_eq(l.v[0].offset, 8 * K);
	ck_assert_uint_eq(l.v[1].offset, 0);
	ck_assert_uint_eq(l.v[1].length, 4 * K);
	ck_assert_uint_eq(l.v[2].length, 8 * K);
	vrange_list_free(&l);
}
END_TEST

START_TEST(ranges_unaligned_offset_rejected)
{
	assert_rejected("1:4K", false);
	assert_rejected("4095:4K", true);
	assert_rejected("1K:0", false);
	assert_rejected("0:4K 6K:4K", false); /* one bad range spoils the call */
	assert_rejected("0x7fffffffffffffff:0", false);
}
END_TEST

START_TEST(ranges_flags_rejected_without_allow_flags)
{
	assert_rejected("0:4K age", false);
	assert_rejected("priority=1 0:4K", false);
	assert_rejected("all,priority=0", false);
}
END_TEST

START_TEST(ranges_flags_apply_wherever_they_stand)
{
	struct vrange_list l;

	ck_assert_int_eq(parse("age 0:4K priority=5 8K:4K age", true, &l), 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert(l.age);
	ck_assert(l.has_priority);
	ck_assert_uint_eq(l.priority, 5);
	vrange_list_free(&l);
	/* A repeated priority: the last one wins. */
	ck_assert_int_eq(parse("priority=1 0:4K priority=6", true, &l), 0);
	ck_assert_uint_eq(l.priority, 6);
	vrange_list_free(&l);
	ck_assert_int_eq(parse("priority=0,0:4K", true, &l), 0);
	ck_assert(l.has_priority);
	ck_assert_uint_eq(l.priority, 0);
	vrange_list_free(&l);
	ck_assert_int_eq(parse("priority=7\n0:4K", true, &l), 0);
	ck_assert_uint_eq(l.priority, 7);
	vrange_list_free(&l);
}
END_TEST

START_TEST(ranges_priority_out_of_range_rejected)
{
	const char *bad[] = { "priority=8", "priority=9", "priority=", "priority=-1",
			      "priority=+1", "priority=01", "priority=1x", "priority=a",
			      "priority", "priority=10", "priority =1", "Priority=1",
			      "priority=1=1" };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char s[64];

		snprintf(s, sizeof(s), "0:4K %s", bad[i]);
		assert_rejected(s, true);
	}
}
END_TEST

START_TEST(ranges_malformed_items_rejected)
{
	const char *bad[] = { "volatile", "ALL", "All", "ages", "0", "4K", "0:", ":4K", ":",
			      "0:4K:4K", "0::4K", "0 :4K", "0: 4K", "0:4KB", "0:-1", "-4K:4K",
			      "0:1.5K", "0x:4K", "0:0x", "all:0", "0:4K=1", "é" };
	/* An item longer than VGRAMMAR_TOKEN_MAX is refused even if it is a number. */
	char longtok[128];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char s[64];

		snprintf(s, sizeof(s), "0:4K %s 8K:4K", bad[i]);
		assert_rejected(s, true);
		assert_rejected(bad[i], false);
	}
	memset(longtok, '0', sizeof(longtok));
	memcpy(longtok + 60, ":4K", 4); /* 63 bytes: fine */
	assert_one(longtok, 0, 4096);
	memset(longtok, '0', sizeof(longtok));
	memcpy(longtok + 61, ":4K", 4); /* 64 bytes: still fine */
	assert_one(longtok, 0, 4096);
	memset(longtok, '0', sizeof(longtok));
	memcpy(longtok + 62, ":4K", 4); /* 65 bytes: too long */
	assert_rejected(longtok, false);
}
END_TEST

START_TEST(ranges_empty_value_rejected)
{
	struct vrange_list l;

	assert_rejected("", false);
	assert_rejected("", true);
	assert_rejected(" \t\n,,", false);
	ck_assert_int_eq(vgrammar_parse_ranges(NULL, 0, false, &l), -EINVAL);
	assert_empty(&l);
	ck_assert_int_eq(vgrammar_parse_ranges(NULL, 4, false, &l), -EINVAL);
	assert_empty(&l);
}
END_TEST

START_TEST(ranges_only_flags_rejected)
{
	assert_rejected("age", true);
	assert_rejected("priority=2", true);
	assert_rejected(" age, priority=2 ,age ", true);
}
END_TEST

START_TEST(ranges_overflow_near_int64_max)
{
	/* The last page below INT64_MAX: unbounded is fine, one page is not. */
	assert_one("0x7ffffffffffff000:0", 0x7ffffffffffff000ull, 0);
	assert_rejected("0x7ffffffffffff000:1", false);
	assert_one("0x7fffffffffffe000:4K", 0x7fffffffffffe000ull, 4096);
	assert_rejected("0x7fffffffffffe000:4097", false);
	assert_one("0:0x7ffffffffffff000", 0, 0x7ffffffffffff000ull);
	assert_rejected("0:0x7ffffffffffff001", false); /* rounds up to 2^63 */
	assert_rejected("0:0x8000000000000000", false);
	assert_rejected("0x8000000000000000:0", false);
	assert_rejected("8388608T:0", false); /* 2^63 */
	assert_one("8388607T:0", 8388607ull << 40, 0);
	assert_one("8388607T:1023G", 8388607ull << 40, 1023ull << 30);
	assert_rejected("8388607T:1T", false); /* ends at 2^63 */
}
END_TEST

START_TEST(ranges_overflow_near_uint64_max)
{
	assert_rejected("0:0xffffffffffffffff", false); /* rounding would wrap */
	assert_rejected("0:0xfffffffffffff001", false);
	assert_rejected("0:0xfffffffffffff000", false);
	assert_rejected("0xfffffffffffff000:4K", false);
	assert_rejected("0xfffffffffffff000:0", false);
	assert_rejected("0:18446744073709551615", false);
	assert_rejected("0:18446744073709551616", false); /* beyond 64 bits */
	assert_rejected("18446744073709551616:0", false);
	assert_rejected("0:0x10000000000000000", false);
	assert_rejected("0:16777216T", false);
	assert_rejected("16777215T:0", false);
}
END_TEST

START_TEST(ranges_huge_list)
{
	const size_t count = 5000;
	size_t cap = count * 32, len = 0;
	char *s = malloc(cap);
	struct vrange_list l;

	ck_assert_ptr_nonnull(s);
	for (size_t i = 0; i < count; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s0x%zx:%zu", i ? ",\n" : "",
					i * 8192, i % 4096 + 1);
	ck_assert_uint_lt(len, cap);
	ck_assert_int_eq(vgrammar_parse_ranges(s, len, true, &l), 0);
	ck_assert_uint_eq(l.n, count);
	for (size_t i = 0; i < count; i++) {
		ck_assert_uint_eq(l.v[i].offset, i * 8192);
		ck_assert_uint_eq(l.v[i].length, 4096);
	}
	vrange_list_free(&l);
	/* The same list with one bad item at the very end returns nothing. */
	memcpy(s + len, " bogus", 7);
	ck_assert_int_eq(vgrammar_parse_ranges(s, len + 6, true, &l), -EINVAL);
	assert_empty(&l);
	free(s);
}
END_TEST

/*
 * Random values over the grammar's own alphabet: every call either
 * succeeds with ranges that keep the invariants or fails with nothing.
 * A cheap stand-in for a fuzzer, deterministic.
 */
START_TEST(ranges_random_values_keep_invariants)
{
	static const char *const pieces[] = { "0", "1", "4", "9", "x", "0x", "f", "K", "m", "G",
					      "t", ":", ",", " ", "\t", "\n", "all", "age",
					      "priority=", "7", "8", "\0", "4096", "0:", "1M:",
					      "0x7ffffffffffff000", "\r", "=" };
	unsigned seed = 12345;
	unsigned accepted = 0;

	for (int iter = 0; iter < 50000; iter++) {
		char s[256];
		size_t len = 0;
		struct vrange_list l;
		int npieces, ret;

		seed = seed * 1103515245u + 12345u;
		npieces = (int)((seed >> 16) % 12);
		for (int p = 0; p < npieces; p++) {
			const char *piece;
			size_t n;

			seed = seed * 1103515245u + 12345u;
			piece = pieces[(seed >> 16) % (sizeof(pieces) / sizeof(pieces[0]))];
			n = piece[0] ? strlen(piece) : 1;
			if (len + n > sizeof(s))
				break;
			memcpy(s + len, piece, n);
			len += n;
		}
		ret = vgrammar_parse_ranges(s, len, iter & 1, &l);
		ck_assert(ret == 0 || ret == -EINVAL);
		if (ret) {
			assert_empty(&l);
			continue;
		}
		accepted++;
		ck_assert_uint_ge(l.n, 1);
		ck_assert(l.priority <= VGRAMMAR_PRIORITY_MAX);
		for (size_t i = 0; i < l.n; i++) {
			ck_assert_uint_eq(l.v[i].offset % VGRAMMAR_PAGE, 0);
			ck_assert_uint_eq(l.v[i].length % VGRAMMAR_PAGE, 0);
			ck_assert_uint_le(l.v[i].offset + l.v[i].length, (uint64_t)INT64_MAX);
		}
		vrange_list_free(&l);
	}
	ck_assert_uint_gt(accepted, 100); /* the generator does reach valid values */
}
END_TEST

START_TEST(size_value_accepts_whitespace_and_nul)
{
	uint64_t v;
	const char nul[] = "64M";
	const char both[] = " 0x1000\n";

	ck_assert_int_eq(vgrammar_parse_size("64M", 3, &v), 0);
	ck_assert_uint_eq(v, 64 * M);
	ck_assert_int_eq(vgrammar_parse_size(nul, sizeof(nul), &v), 0);
	ck_assert_uint_eq(v, 64 * M);
	ck_assert_int_eq(vgrammar_parse_size(both, sizeof(both), &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(vgrammar_parse_size("\t 1g \n\n", 7, &v), 0);
	ck_assert_uint_eq(v, 1ull << 30);
	ck_assert_int_eq(vgrammar_parse_size("0", 1, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(vgrammar_parse_size("18446744073709551615", 20, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(vgrammar_parse_size("12junk", 2, &v), 0); /* only len counts */
	ck_assert_uint_eq(v, 12);
}
END_TEST

START_TEST(size_value_rejects_malformed)
{
	const char *bad[] = { "", " ", "\n", "1 M", "1,", "1M,", "K", "0x", "12Q", "-1", "1MB",
			      "all", "1:0", "1\r" };
	const char nul2[] = "1M\0";
	const char nulmid[] = "1\0M";
	const char nulspace[] = "1M\0\n";
	uint64_t v = 7;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(vgrammar_parse_size(bad[i], strlen(bad[i]), &v) == -EINVAL,
			      "accepted '%s'", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
	ck_assert_int_eq(vgrammar_parse_size(nul2, sizeof(nul2), &v), -EINVAL);
	ck_assert_int_eq(vgrammar_parse_size(nulmid, sizeof(nulmid), &v), -EINVAL);
	ck_assert_int_eq(vgrammar_parse_size(nulspace, sizeof(nulspace), &v), -EINVAL);
	ck_assert_int_eq(vgrammar_parse_size(NULL, 0, &v), -EINVAL);
	ck_assert_int_eq(vgrammar_parse_size("18446744073709551616", 20, &v), -ERANGE);
	ck_assert_int_eq(vgrammar_parse_size("16777216T\n", 10, &v), -ERANGE);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(purge_value_all_or_size)
{
	bool all = false;
	uint64_t size = 7;
	const char allnul[] = "all";

	ck_assert_int_eq(vgrammar_parse_purge(allnul, sizeof(allnul), &all, &size), 0);
	ck_assert(all);
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(vgrammar_parse_purge(" 16M\n", 5, &all, &size), 0);
	ck_assert(!all);
	ck_assert_uint_eq(size, 16 * M);
	ck_assert_int_eq(vgrammar_parse_purge("0x1000", 6, &all, &size), 0);
	ck_assert(!all);
	ck_assert_uint_eq(size, 4096);
}
END_TEST

START_TEST(purge_value_rejects_malformed)
{
	const char *bad[] = { "", "ALL", "all 1M", "all,", "none", "1M 2M", "18446744073709551616",
			      "-1", "0:0", "age" };
	bool all = true;
	uint64_t size = 7;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(vgrammar_parse_purge(bad[i], strlen(bad[i]), &all, &size) == -EINVAL,
			      "accepted '%s'", bad[i]);
		ck_assert(all);
		ck_assert_uint_eq(size, 7);
	}
	ck_assert_int_eq(vgrammar_parse_purge("al\0l", 4, &all, &size), -EINVAL);
}
END_TEST

START_TEST(auto_value_words)
{
	int mode = -1;
	const char unl[] = "unlink\n";

	ck_assert_int_eq(vgrammar_parse_auto("off", 3, &mode), 0);
	ck_assert_int_eq(mode, VGRAMMAR_AUTO_OFF);
	ck_assert_int_eq(vgrammar_parse_auto("mark\n", 5, &mode), 0);
	ck_assert_int_eq(mode, VGRAMMAR_AUTO_MARK);
	ck_assert_int_eq(vgrammar_parse_auto(unl, sizeof(unl), &mode), 0);
	ck_assert_int_eq(mode, VGRAMMAR_AUTO_UNLINK);
	ck_assert_str_eq(vgrammar_auto_name(VGRAMMAR_AUTO_OFF), "off");
	ck_assert_str_eq(vgrammar_auto_name(VGRAMMAR_AUTO_MARK), "mark");
	ck_assert_str_eq(vgrammar_auto_name(VGRAMMAR_AUTO_UNLINK), "unlink");
	ck_assert_ptr_null(vgrammar_auto_name(3));
	ck_assert_ptr_null(vgrammar_auto_name(-1));
}
END_TEST

START_TEST(auto_value_rejects_malformed)
{
	const char *bad[] = { "", "on", "OFF", "Mark", "mark unlink", "0", "1", "unlinked", "of",
			      "mark," };
	int mode = 9;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(vgrammar_parse_auto(bad[i], strlen(bad[i]), &mode) == -EINVAL,
			      "accepted '%s'", bad[i]);
		ck_assert_int_eq(mode, 9);
	}
	ck_assert_int_eq(vgrammar_parse_auto("off\0\0", 5, &mode), -EINVAL);
	ck_assert_int_eq(mode, 9);
}
END_TEST

START_TEST(strbuf_appends_formatted_text)
{
	struct strbuf b;

	strbuf_init(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(strbuf_printf(&b, "%s", ""), 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.buf, "");
	ck_assert_int_eq(strbuf_printf(&b, "%" PRIu64 ":%" PRIu64 "\n", (uint64_t)0, (uint64_t)65536),
			 0);
	ck_assert_int_eq(strbuf_printf(&b, "%" PRIu64 ":%" PRIu64 " %s priority=%u\n",
				       (uint64_t)1 << 20, (uint64_t)0, "purged", 1u),
			 0);
	ck_assert_str_eq(b.buf, "0:65536\n1048576:0 purged priority=1\n");
	ck_assert_uint_eq(b.len, strlen(b.buf));
	/* Growth across many reallocations keeps what was written. */
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(strbuf_printf(&b, "%04d\n", i), 0);
	ck_assert_uint_eq(b.len, 36 + 5000);
	ck_assert(memcmp(b.buf + 36, "0000\n0001\n", 10) == 0);
	ck_assert(memcmp(b.buf + b.len - 5, "0999\n", 5) == 0);
	ck_assert_int_eq(b.buf[b.len], '\0');
	strbuf_free(&b);
	ck_assert_ptr_null(b.buf);
	ck_assert_uint_eq(b.len, 0);
	strbuf_free(&b); /* twice is harmless */
}
END_TEST

START_TEST(strbuf_refuses_past_value_max)
{
	struct strbuf b;
	char *copy;
	size_t cap;

	strbuf_init(&b);
	/* Exactly VGRAMMAR_VALUE_MAX bytes fit... */
	for (unsigned i = 0; i < VGRAMMAR_VALUE_MAX / 16; i++)
		ck_assert_int_eq(strbuf_printf(&b, "%015u\n", i), 0);
	ck_assert_uint_eq(b.len, VGRAMMAR_VALUE_MAX);
	copy = malloc(b.len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, b.buf, b.len);
	cap = b.cap;
	/* ...and not one more, whatever the size of the append. */
	ck_assert_int_eq(strbuf_printf(&b, "x"), -E2BIG);
	ck_assert_int_eq(strbuf_printf(&b, "%100000s", "y"), -E2BIG);
	ck_assert_uint_eq(b.len, VGRAMMAR_VALUE_MAX);
	ck_assert_uint_eq(b.cap, cap);
	ck_assert(memcmp(b.buf, copy, b.len) == 0);
	ck_assert_int_eq(b.buf[b.len], '\0');
	ck_assert_int_eq(strbuf_printf(&b, "%s", ""), 0); /* nothing still fits */
	strbuf_free(&b);
	free(copy);
}
END_TEST

START_TEST(strbuf_refusal_restores_partial_tail)
{
	struct strbuf b;

	strbuf_init(&b);
	/* Leave room in the allocation so vsnprintf() writes a truncated tail. */
	ck_assert_int_eq(strbuf_printf(&b, "%65000s", "a"), 0);
	ck_assert_uint_gt(b.cap, b.len + 100);
	ck_assert_int_eq(strbuf_printf(&b, "%1000s", "b"), -E2BIG);
	ck_assert_uint_eq(b.len, 65000);
	ck_assert_int_eq(b.buf[b.len], '\0');
	ck_assert_uint_eq(strlen(b.buf), 65000);
	ck_assert_int_eq(b.buf[b.len - 1], 'a');
	/* The remainder still fits, to the byte. */
	ck_assert_int_eq(strbuf_printf(&b, "%536s", "c"), 0);
	ck_assert_uint_eq(b.len, VGRAMMAR_VALUE_MAX);
	ck_assert_int_eq(strbuf_printf(&b, "%s", "d"), -E2BIG);
	strbuf_free(&b);

	/* A single append bigger than the limit into an empty buffer. */
	strbuf_init(&b);
	ck_assert_int_eq(strbuf_printf(&b, "%65537s", "e"), -E2BIG);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(strbuf_printf(&b, "%65536s", "e"), 0);
	ck_assert_uint_eq(b.len, VGRAMMAR_VALUE_MAX);
	strbuf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vgrammar");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 0);

	tcase_add_test(tc, ranges_spec_example);
	tcase_add_test(tc, ranges_without_flags_get_default_priority);
	tcase_add_test(tc, ranges_all_is_whole_file);
	tcase_add_test(tc, ranges_separators_any_run);
	tcase_add_test(tc, ranges_trailing_nul_accepted);
	tcase_add_test(tc, ranges_embedded_nul_rejected);
	tcase_add_test(tc, ranges_hex_and_suffixes);
	tcase_add_test(tc, ranges_length_rounded_up_to_page);
	tcase_add_test(tc, ranges_length_zero_is_unbounded);
	tcase_add_test(tc, ranges_keep_written_order);
	tcase_add_test(tc, ranges_unaligned_offset_rejected);
	tcase_add_test(tc, ranges_flags_rejected_without_allow_flags);
	tcase_add_test(tc, ranges_flags_apply_wherever_they_stand);
	tcase_add_test(tc, ranges_priority_out_of_range_rejected);
	tcase_add_test(tc, ranges_malformed_items_rejected);
	tcase_add_test(tc, ranges_empty_value_rejected);
	tcase_add_test(tc, ranges_only_flags_rejected);
	tcase_add_test(tc, ranges_overflow_near_int64_max);
	tcase_add_test(tc, ranges_overflow_near_uint64_max);
	tcase_add_test(tc, ranges_huge_list);
	tcase_add_test(tc, ranges_random_values_keep_invariants);
	tcase_add_test(tc, size_value_accepts_whitespace_and_nul);
	tcase_add_test(tc, size_value_rejects_malformed);
	tcase_add_test(tc, purge_value_all_or_size);
	tcase_add_test(tc, purge_value_rejects_malformed);
	tcase_add_test(tc, auto_value_words);
	tcase_add_test(tc, auto_value_rejects_malformed);
	tcase_add_test(tc, strbuf_appends_formatted_text);
	tcase_add_test(tc, strbuf_refuses_past_value_max);
	tcase_add_test(tc, strbuf_refusal_restores_partial_tail);
	return utest_run(s);
}
