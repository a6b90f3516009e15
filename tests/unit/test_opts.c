/* Unit tests for the option parser (src/daemon/opts.c). */
#include <check.h>
#include <errno.h>
#include <fuse_opt.h>
#include <string.h>

#include "opts.h"
#include "utest.h"

START_TEST(size_accepts_decimal_hex_and_suffixes)
{
	uint64_t v;

	ck_assert_int_eq(opts_parse_size("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(opts_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(opts_parse_size("0x1000", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(opts_parse_size("0XfF", &v), 0);
	ck_assert_uint_eq(v, 255);
	ck_assert_int_eq(opts_parse_size("64M", &v), 0);
	ck_assert_uint_eq(v, 64ull << 20);
	ck_assert_int_eq(opts_parse_size("64m", &v), 0);
	ck_assert_uint_eq(v, 64ull << 20);
	ck_assert_int_eq(opts_parse_size("1k", &v), 0);
	ck_assert_uint_eq(v, 1024);
	ck_assert_int_eq(opts_parse_size("3G", &v), 0);
	ck_assert_uint_eq(v, 3ull << 30);
	ck_assert_int_eq(opts_parse_size("2t", &v), 0);
	ck_assert_uint_eq(v, 2ull << 40);
	ck_assert_int_eq(opts_parse_size("0x10K", &v), 0);
	ck_assert_uint_eq(v, 16384);
	ck_assert_int_eq(opts_parse_size("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
}
END_TEST

START_TEST(size_rejects_malformed_values)
{
	const char *bad[] = { "", "K", "0x", "12Q", "1.5M", "-1", "+1", " 1", "1 ", "1MB",
			      "1KK", "0x1g0", "abc", "1e6" };
	uint64_t v = 7;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(opts_parse_size(bad[i], &v) == -EINVAL, "accepted '%s'", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
	ck_assert_int_eq(opts_parse_size(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(size_rejects_overflow)
{
	uint64_t v;

	ck_assert_int_eq(opts_parse_size("18446744073709551616", &v), -ERANGE);
	ck_assert_int_eq(opts_parse_size("0x10000000000000000", &v), -ERANGE);
	ck_assert_int_eq(opts_parse_size("16777216T", &v), -ERANGE);
}
END_TEST

START_TEST(mode_and_id_parsers)
{
	mode_t m;
	uint32_t id;

	ck_assert_int_eq(opts_parse_mode("1777", &m), 0);
	ck_assert_uint_eq(m, 01777);
	ck_assert_int_eq(opts_parse_mode("0755", &m), 0);
	ck_assert_uint_eq(m, 0755);
	ck_assert_int_eq(opts_parse_mode("999", &m), -EINVAL);
	ck_assert_int_eq(opts_parse_mode("17777", &m), -EINVAL);
	ck_assert_int_eq(opts_parse_mode("", &m), -EINVAL);
	ck_assert_int_eq(opts_parse_id("1000", &id), 0);
	ck_assert_uint_eq(id, 1000);
	ck_assert_int_eq(opts_parse_id("4294967295", &id), -EINVAL);
	ck_assert_int_eq(opts_parse_id("-1", &id), -EINVAL);
	ck_assert_int_eq(opts_parse_id("12a", &id), -EINVAL);
}
END_TEST

static int parse(const char *optstr, struct opts *o, char *err, struct fuse_args *args)
{
	char *argv[] = { "volatilefs", "-o", (char *)optstr, "/mnt", NULL };

	*args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(fuse_opt_add_arg(args, argv[i]), 0);
	return opts_parse(args, o, err, 256);
}

START_TEST(parse_takes_our_options_and_keeps_the_rest)
{
	struct fuse_args args;
	struct opts o;
	char err[256];
	bool kept = false;

	ck_assert_int_eq(parse("memory_limit=32M,allow_other,memory_low=0x1000000,mode=700,uid=5,gid=6",
			       &o, err, &args), 0);
	ck_assert_uint_eq(o.memory_limit, 32ull << 20);
	ck_assert_uint_eq(o.memory_low, 16ull << 20);
	ck_assert(o.mode_set && o.mode == 0700);
	ck_assert(o.uid_set && o.uid == 5);
	ck_assert(o.gid_set && o.gid == 6);
	/* DESIGN section 11: passthrough=auto unless asked otherwise. */
	ck_assert_int_eq(o.passthrough, OPTS_PT_AUTO);
	ck_assert(!o.passthrough_set);
	for (int i = 0; i < args.argc; i++) {
		ck_assert_ptr_null(strstr(args.argv[i], "memory_limit"));
		if (strstr(args.argv[i], "allow_other"))
			kept = true;
	}
	ck_assert(kept);
	fuse_opt_free_args(&args);
}
END_TEST

START_TEST(asked_finds_whole_items_of_o_lists)
{
	char *argv[] = { "volatilefs", "src", "/mnt", "-o", "rw,remountx,user_id=0",
			 "-oallow_other,remount", NULL };

	ck_assert(opts_asked(6, argv, "remount"));
	ck_assert(opts_asked(6, argv, "rw"));
	ck_assert(opts_asked(6, argv, "user_id=0"));
	ck_assert(!opts_asked(6, argv, "user_id"));
	ck_assert(!opts_asked(6, argv, "src"));
	ck_assert(!opts_asked(4, argv, "rw")); /* a trailing -o without its list */
	ck_assert(opts_list_has("a,bb,c", "bb", 2));
	ck_assert(!opts_list_has("a,bbb,c", "bb", 2));
	ck_assert(!opts_list_has("", "a", 1));
}
END_TEST

/* A remount can change memory_limit only: the first other option of ours is named. */
START_TEST(parse_names_the_first_option_only_a_new_mount_changes)
{
	struct fuse_args args;
	struct opts o;
	char err[256];

	ck_assert_int_eq(parse("remount,memory_limit=1G,allow_other", &o, err, &args), 0);
	ck_assert_ptr_null(o.fixed_given);
	fuse_opt_free_args(&args);
	ck_assert_int_eq(parse("remount,memory_limit=1G,pressure=off,memory_low=1M", &o, err, &args),
			 0);
	ck_assert_str_eq(o.fixed_given, "memory_low");
	fuse_opt_free_args(&args);
	ck_assert_int_eq(parse("passthrough=off", &o, err, &args), 0);
	ck_assert_str_eq(o.fixed_given, "passthrough");
	fuse_opt_free_args(&args);
}
END_TEST

/* auto_unmount=on|off is ours (main.c turns on libfuse's auto_unmount unless off). */
START_TEST(parse_auto_unmount)
{
	struct fuse_args args;
	struct opts o;
	char err[256];

	ck_assert_int_eq(parse("allow_other", &o, err, &args), 0);
	ck_assert(!o.auto_unmount_off);
	fuse_opt_free_args(&args);
	ck_assert_int_eq(parse("auto_unmount=off", &o, err, &args), 0);
	ck_assert(o.auto_unmount_off);
	for (int i = 0; i < args.argc; i++)
		ck_assert_ptr_null(strstr(args.argv[i], "auto_unmount"));
	fuse_opt_free_args(&args);
	ck_assert_int_eq(parse("auto_unmount=off,auto_unmount=on", &o, err, &args), 0);
	ck_assert(!o.auto_unmount_off);
	fuse_opt_free_args(&args);
	ck_assert_int_eq(parse("auto_unmount=maybe", &o, err, &args), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "auto_unmount"));
	fuse_opt_free_args(&args);
}
END_TEST

START_TEST(parse_repeated_option_last_wins)
{
	struct fuse_args args;
	struct opts o;
	char err[256];

	/* libfuse's "%s" templates leaked the first value here (fuzz_opts) */
	ck_assert_int_eq(parse("memory_limit=1M,mode=700,memory_limit=2M,mode=755", &o, err,
			       &args), 0);
	ck_assert_uint_eq(o.memory_limit, 2ull << 20);
	ck_assert_uint_eq(o.mode, 0755);
	fuse_opt_free_args(&args);
}
END_TEST

START_TEST(parse_drops_fstab_noise)
{
	struct fuse_args args;
	struct opts o;
	char err[256];

	ck_assert_int_eq(parse("_netdev,nofail,noauto,user,x-systemd.automount,"
			       "x-systemd.requires=foo,comment=x,allow_other", &o, err, &args), 0);
	for (int i = 0; i < args.argc; i++) {
		ck_assert_ptr_null(strstr(args.argv[i], "_netdev"));
		ck_assert_ptr_null(strstr(args.argv[i], "nofail"));
		ck_assert_ptr_null(strstr(args.argv[i], "x-systemd"));
		ck_assert_ptr_null(strstr(args.argv[i], "noauto"));
		ck_assert_ptr_null(strstr(args.argv[i], "comment"));
	}
	fuse_opt_free_args(&args);
}
END_TEST

START_TEST(parse_rejects_bad_values_with_a_message)
{
	const char *bad[] = { "memory_limit=12Q", "memory_limit=", "memory_limit=0",
			      "memory_low=1x", "mode=999", "uid=root", "gid=-3",
			      "memory_limit=1M,memory_low=2M" };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fuse_args args;
		struct opts o;
		char err[256];

		ck_assert_msg(parse(bad[i], &o, err, &args) == -EINVAL, "accepted %s", bad[i]);
		ck_assert_msg(strlen(err) > 0, "no message for %s", bad[i]);
		fuse_opt_free_args(&args);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("opts");
	TCase *tc = utest_tcase(s, "core", NULL, NULL, 0);

	tcase_add_test(tc, size_accepts_decimal_hex_and_suffixes);
	tcase_add_test(tc, size_rejects_malformed_values);
	tcase_add_test(tc, size_rejects_overflow);
	tcase_add_test(tc, mode_and_id_parsers);
	tcase_add_test(tc, parse_takes_our_options_and_keeps_the_rest);
	tcase_add_test(tc, parse_rejects_bad_values_with_a_message);
	tcase_add_test(tc, parse_drops_fstab_noise);
	tcase_add_test(tc, parse_repeated_option_last_wins);
	tcase_add_test(tc, parse_auto_unmount);
	tcase_add_test(tc, parse_names_the_first_option_only_a_new_mount_changes);
	tcase_add_test(tc, asked_finds_whole_items_of_o_lists);
	return utest_run(s);
}
