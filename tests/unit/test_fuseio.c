/*
 * Unit tests for the INIT and OPEN patches of src/daemon/fuseio.c, on byte
 * images laid out as the kernel's structures of protocol 7.40 (written out
 * here from include/uapi/linux/fuse.h, independently of fuseio.h's offsets).
 */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuseio.h"
#include "utest.h"

struct k_init_in { /* 7.36+ */
	uint32_t major, minor, max_readahead, flags, flags2, unused[11];
};
struct k_init_out { /* 7.40 */
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2, max_stack_depth;
	uint16_t request_timeout, unused[11];
};
struct k_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};
struct k_entry_out { /* 128 bytes */
	uint64_t nodeid, generation, entry_valid, attr_valid;
	uint32_t entry_valid_nsec, attr_valid_nsec;
	char attr[88];
};

START_TEST(offsets_match_the_kernel_structures)
{
	ck_assert_uint_eq(offsetof(struct k_init_in, minor), FUSEIO_INIT_IN_MINOR);
	ck_assert_uint_eq(offsetof(struct k_init_in, flags), FUSEIO_INIT_IN_FLAGS);
	ck_assert_uint_eq(offsetof(struct k_init_in, flags2), FUSEIO_INIT_IN_FLAGS2);
	ck_assert_uint_eq(sizeof(struct k_init_in), FUSEIO_INIT_IN_SIZE);
	ck_assert_uint_eq(offsetof(struct k_init_out, flags), FUSEIO_INIT_OUT_FLAGS);
	ck_assert_uint_eq(offsetof(struct k_init_out, flags2), FUSEIO_INIT_OUT_FLAGS2);
	ck_assert_uint_eq(offsetof(struct k_init_out, max_stack_depth), FUSEIO_INIT_OUT_DEPTH);
	ck_assert_uint_eq(sizeof(struct k_open_out), FUSEIO_OPEN_OUT_SIZE);
	ck_assert_uint_eq(sizeof(struct k_init_out), 64);
}
END_TEST

START_TEST(init_offer_reads_flags2_only_with_init_ext)
{
	struct k_init_in in = { .major = 7, .minor = 41, .flags = (uint32_t)FUSEIO_INIT_EXT,
				.flags2 = 1u << 5 };

	ck_assert(fuseio_init_offered(&in, sizeof(in)) & FUSEIO_PASSTHROUGH);
	in.flags = 0;
	ck_assert(!(fuseio_init_offered(&in, sizeof(in)) & FUSEIO_PASSTHROUGH));
	in.flags = (uint32_t)FUSEIO_INIT_EXT;
	in.minor = 35; /* no flags2 before 7.36 */
	ck_assert(!(fuseio_init_offered(&in, sizeof(in)) & FUSEIO_PASSTHROUGH));
	ck_assert_uint_eq(fuseio_init_offered(&in, 8), 0);
}
END_TEST

START_TEST(init_patch_asks_for_passthrough_with_depth_one)
{
	struct k_init_out out = { .major = 7, .minor = 38, .flags = 1u << 3 };
	uint64_t offered = FUSEIO_INIT_EXT | FUSEIO_PASSTHROUGH | FUSEIO_PARALLEL_DIROPS;

	ck_assert_uint_eq(fuseio_init_patch(&out, sizeof(out), offered, FUSEIO_PASSTHROUGH),
			  FUSEIO_PASSTHROUGH);
	ck_assert_uint_eq(out.flags, (1u << 3) | (uint32_t)FUSEIO_INIT_EXT);
	ck_assert_uint_eq(out.flags2, 1u << 5);
	ck_assert_uint_eq(out.max_stack_depth, 1);
	ck_assert_uint_eq(out.major, 7);
	ck_assert_uint_eq(out.minor, 38);
}
END_TEST

START_TEST(init_patch_refuses_what_the_kernel_would_not_take)
{
	struct k_init_out out = { .flags = (uint32_t)FUSEIO_WRITEBACK_CACHE };
	uint64_t offered = FUSEIO_INIT_EXT | FUSEIO_PASSTHROUGH;

	/* Beside a writeback cache, not offered, or a reply too short. */
	ck_assert_uint_eq(fuseio_init_patch(&out, sizeof(out), offered, FUSEIO_PASSTHROUGH), 0);
	ck_assert_uint_eq(out.flags2, 0);
	out.flags = 0;
	ck_assert_uint_eq(fuseio_init_patch(&out, sizeof(out), FUSEIO_INIT_EXT,
					    FUSEIO_PASSTHROUGH), 0);
	ck_assert_uint_eq(fuseio_init_patch(&out, 24, offered, FUSEIO_PASSTHROUGH), 0);
	ck_assert_uint_eq(out.flags, 0);
	ck_assert_uint_eq(out.max_stack_depth, 0);
	/* Parallel dirops needs no INIT_EXT. */
	ck_assert_uint_eq(fuseio_init_patch(&out, 24, FUSEIO_PARALLEL_DIROPS,
					    FUSEIO_PARALLEL_DIROPS), FUSEIO_PARALLEL_DIROPS);
	ck_assert_uint_eq(out.flags, (uint32_t)FUSEIO_PARALLEL_DIROPS);
}
END_TEST

/* Taking set-id clearing over (ops.c) goes with passthrough only, in the 32-bit flags. */
START_TEST(init_patch_takes_killpriv_v2_only_with_passthrough)
{
	struct k_init_out out = { .major = 7, .minor = 38 };
	uint64_t want = FUSEIO_PASSTHROUGH | FUSEIO_HANDLE_KILLPRIV_V2;
	uint64_t offered = FUSEIO_INIT_EXT | want;

	ck_assert_uint_eq(FUSEIO_HANDLE_KILLPRIV_V2, 1u << 28);
	ck_assert_uint_eq(fuseio_init_patch(&out, sizeof(out), offered, want), want);
	ck_assert_uint_eq(out.flags, (uint32_t)(FUSEIO_INIT_EXT | FUSEIO_HANDLE_KILLPRIV_V2));
	ck_assert_uint_eq(out.flags2, 1u << 5);
	/* No passthrough (a reply too short for max_stack_depth): no killpriv either. */
	out = (struct k_init_out){ .major = 7, .minor = 38 };
	ck_assert_uint_eq(fuseio_init_patch(&out, 24, offered, want), 0);
	ck_assert_uint_eq(out.flags, 0);
	/* Not offered: not taken. */
	ck_assert_uint_eq(fuseio_init_patch(&out, sizeof(out), FUSEIO_INIT_EXT | FUSEIO_PASSTHROUGH,
					    want), FUSEIO_PASSTHROUGH);
	ck_assert_uint_eq(out.flags & (uint32_t)FUSEIO_HANDLE_KILLPRIV_V2, 0);
}
END_TEST

START_TEST(open_patch_sets_the_flag_and_id_of_open_and_create_replies)
{
	struct k_open_out o = { .fh = 42, .open_flags = FUSEIO_FOPEN_KEEP_CACHE | 1u };
	struct {
		struct k_entry_out e;
		struct k_open_out o;
	} c = { .o = { .fh = 7 } };

	ck_assert(fuseio_open_patch(&o, sizeof(o), 9));
	ck_assert_uint_eq(o.open_flags, FUSEIO_FOPEN_PASSTHROUGH | 1u);
	ck_assert_int_eq(o.backing_id, 9);
	ck_assert_uint_eq(o.fh, 42);
	ck_assert_uint_eq(sizeof(c.e), 128);
	memset(&c.e, 0xee, sizeof(c.e));
	ck_assert(fuseio_open_patch(&c, sizeof(c), 3));
	ck_assert_uint_eq(c.o.open_flags, FUSEIO_FOPEN_PASSTHROUGH);
	ck_assert_int_eq(c.o.backing_id, 3);
	ck_assert_uint_eq(c.e.nodeid, 0xeeeeeeeeeeeeeeeeull);
	ck_assert(!fuseio_open_patch(&o, 8, 1));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuseio");
	TCase *tc = utest_tcase(s, "patch", NULL, NULL, 0);

	tcase_add_test(tc, offsets_match_the_kernel_structures);
	tcase_add_test(tc, init_offer_reads_flags2_only_with_init_ext);
	tcase_add_test(tc, init_patch_asks_for_passthrough_with_depth_one);
	tcase_add_test(tc, init_patch_refuses_what_the_kernel_would_not_take);
	tcase_add_test(tc, init_patch_takes_killpriv_v2_only_with_passthrough);
	tcase_add_test(tc, open_patch_sets_the_flag_and_id_of_open_and_create_replies);
	return utest_run(s);
}
