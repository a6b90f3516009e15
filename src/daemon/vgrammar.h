/*
 * vgrammar.h - the grammar of the user.volatile.* attribute values
 * (DESIGN sections 4 and 5): parsing the values written, building the
 * values read back.
 *
 * Pure functions over a caller's buffer: no globals, no locks, no I/O,
 * so every one of them can be unit-tested and fuzzed on its own.  The
 * values come straight from setxattr(2): they are NOT NUL-terminated,
 * although setfattr and most programs send one trailing NUL, which is
 * allowed and ignored; any other NUL byte is EINVAL.
 *
 *   $ setfattr -n user.volatile.mark -v "0:64K 1M:1M priority=1" f
 *       -> { 0, 65536 }, { 1048576, 1048576 }, priority 1
 *   $ setfattr -n user.volatile.unmark -v "all" f
 *       -> { 0, 0 } (0 = unbounded: to the end of the file, as it grows)
 *
 * A range list is items separated by any run of spaces, tabs, newlines
 * and commas (leading and trailing separators are fine).  An item is
 *   OFFSET:LENGTH  each a SIZE (opts_parse_size(): decimal or 0x hex,
 *                  optional K/M/G/T binary suffix, case-insensitive);
 *   all            the same as 0:0;
 * and, for mark only (allow_flags), a flag that applies to every range
 * of the call wherever it stands:
 *   age            purge these units before others of their priority;
 *                  repeating it changes nothing;
 *   priority=N     N a single decimal digit 0..7; given twice, the last
 *                  one wins (like a repeated mount option).
 * Words are lowercase and matched exactly ("ALL" is EINVAL).  An item
 * longer than VGRAMMAR_TOKEN_MAX bytes is EINVAL: no valid one comes
 * near it.
 *
 * Range rules (DESIGN section 4): OFFSET must be a multiple of the page
 * size; LENGTH is rounded up to one; LENGTH 0 means unbounded and stays
 * 0; OFFSET + rounded LENGTH must not exceed INT64_MAX, the largest file
 * (so a bounded range ends at most at INT64_MAX + 1 - VGRAMMAR_PAGE).
 * A call names at least one range: a value of only separators or only
 * flags is EINVAL.
 *
 * All or nothing: a value malformed in any part is EINVAL and returns
 * nothing.  The whole value is checked before anything is allocated, so
 * a malformed value is always EINVAL, never ENOMEM.  Costs: two passes
 * over the value, one allocation of n ranges.
 */
#ifndef VOLATILEFS_VGRAMMAR_H
#define VOLATILEFS_VGRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VGRAMMAR_PAGE 4096u
/* Longest item (or single value, after trimming) accepted. */
#define VGRAMMAR_TOKEN_MAX 64u
/* The priority of a mark call that gives none (DESIGN section 4). */
#define VGRAMMAR_DEFAULT_PRIORITY 3u
#define VGRAMMAR_PRIORITY_MAX 7u

struct vrange {
	uint64_t offset; /* a multiple of VGRAMMAR_PAGE */
	uint64_t length; /* 0 = unbounded; else a multiple of VGRAMMAR_PAGE */
};

struct vrange_list {
	struct vrange *v; /* n ranges, in the order written (not sorted, */
	size_t n;         /* not merged: overlaps are the caller's business) */
	bool age;         /* the age flag was given */
	bool has_priority; /* priority=N was given ... */
	unsigned priority; /* ... and this is N; else VGRAMMAR_DEFAULT_PRIORITY */
};

/*
 * Parse the range list in buf[0..len).  allow_flags: the mark call,
 * where age and priority=N are items too; elsewhere they are EINVAL.
 * *out need not be initialised: it is overwritten, never freed.
 * Zero, -EINVAL (malformed in any part) or -ENOMEM.  On failure *out is
 * empty (v NULL, n 0, no flags); on success n >= 1 and the caller owns
 * out->v (vrange_list_free()).
 */
int vgrammar_parse_ranges(const char *buf, size_t len, bool allow_flags,
			  struct vrange_list *out);

/* Free l->v and empty *l.  Safe on an empty or already freed list. */
void vrange_list_free(struct vrange_list *l);

/*
 * One SIZE value (memory_limit, purge SIZE): surrounding spaces, tabs
 * and newlines and one trailing NUL are allowed.  0 is accepted; whether
 * it makes sense is the caller's call.  Zero, -EINVAL (malformed) or
 * -ERANGE (does not fit in 64 bits); *out is untouched on failure.
 */
int vgrammar_parse_size(const char *buf, size_t len, uint64_t *out);

/*
 * The value of user.volatile.purge: "all" (*all = true, *size = 0) or a
 * SIZE (*all = false, *size).  Whitespace and NUL as for
 * vgrammar_parse_size().  Zero or -EINVAL (a SIZE too large for 64 bits
 * included); the outputs are untouched on failure.
 */
int vgrammar_parse_purge(const char *buf, size_t len, bool *all, uint64_t *size);

/* The settings of user.volatile.auto (DESIGN section 8). */
enum {
	VGRAMMAR_AUTO_OFF = 0,
	VGRAMMAR_AUTO_MARK = 1,
	VGRAMMAR_AUTO_UNLINK = 2,
};

/*
 * The value of user.volatile.auto: "off", "mark" or "unlink" ->
 * VGRAMMAR_AUTO_*.  Whitespace and NUL as for vgrammar_parse_size().
 * Zero or -EINVAL; *mode is untouched on failure.
 */
int vgrammar_parse_auto(const char *buf, size_t len, int *mode);

/* The word for an auto setting (the value read back), NULL if none. */
const char *vgrammar_auto_name(int mode);

/*
 * Building the values read back: an append-only string buffer that
 * refuses to grow past VGRAMMAR_VALUE_MAX bytes, the kernel's xattr
 * value limit (XATTR_SIZE_MAX), so a getxattr can answer E2BIG as DESIGN
 * section 5 says.  buf is NUL-terminated once anything was appended (the
 * NUL is not counted in len and not part of the value); an empty buffer
 * may have buf NULL.
 */
#define VGRAMMAR_VALUE_MAX 65536u

struct strbuf {
	char *buf;
	size_t len; /* bytes of value, at most VGRAMMAR_VALUE_MAX */
	size_t cap; /* bytes allocated, room for the NUL included */
};

void strbuf_init(struct strbuf *b);
/* Free the buffer and empty *b.  Safe to call twice. */
void strbuf_free(struct strbuf *b);

/*
 * printf-style append.  Zero; -E2BIG when the value would pass
 * VGRAMMAR_VALUE_MAX bytes, -ENOMEM, or -EINVAL when vsnprintf() itself
 * fails (a bad wide-character conversion): in every failure the buffer
 * is left as it was before the call.
 */
int strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
