/*
 * fuzz_grammar.c - libFuzzer harness for the value grammar (vgrammar.c)
 * and the SIZE syntax (size.c), DESIGN sections 2, 4 and 5.
 *
 * Every input goes through each parser: vgrammar_parse_ranges() in both
 * modes, vgrammar_parse_size(), vgrammar_parse_purge(),
 * vgrammar_parse_auto() and opts_parse_size() (on a NUL-terminated copy).
 * Each result is compared with a reference parser written here from the
 * contract (vgrammar.h and size.h), independently of the daemon's code,
 * and the contract's invariants are checked on top:
 *   - success: n >= 1, every offset a multiple of 4096, every length 0 or
 *     a multiple of 4096, offset + length <= INT64_MAX, priority 0..7
 *     (3 when none was given), no flags outside mark;
 *   - failure: the output list is empty, the scalar outputs untouched;
 *   - what mark's grammar accepts is a superset of unmark's;
 *   - a parsed list written back as text parses to the same list.
 * The input then drives strbuf_printf(), whose value must never pass
 * VGRAMMAR_VALUE_MAX bytes, must equal a shadow copy of what was
 * accepted, and must be left as it was by a refused append.
 *
 * A disagreement is reported on stderr and abort()s, which is how
 * libFuzzer records a crash:
 *
 *   $ contrib/fuzz.sh                      # builds and runs every harness
 *   $ build-fuzz/fuzz_grammar crash-XXXX   # replays one input
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"
#include "vgrammar.h"

#define PAGE 4096u
#define TOKEN_MAX 64u

static void fail(const uint8_t *data, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static void fail(const uint8_t *data, size_t size, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\nfuzz_grammar: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ninput (%zu bytes): \"", size);
	for (size_t i = 0; i < size && i < 512; i++) {
		if (data[i] >= 0x20 && data[i] < 0x7f && data[i] != '"' && data[i] != '\\')
			fputc(data[i], stderr);
		else
			fprintf(stderr, "\\x%02x", data[i]);
	}
	fprintf(stderr, "\"\n");
	abort();
}

/* ---- the reference: DESIGN section 2's SIZE, from size.h's words ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * s[0..n): decimal or 0x/0X hex digits, then at most one of kKmMgGtT.
 * A digit run too large for 64 bits is -ERANGE whatever follows it (the
 * daemon stops at the first digit that overflows); anything malformed
 * after a run that fits is -EINVAL; a suffix that overflows is -ERANGE.
 */
static int ref_size(const char *s, size_t n, uint64_t *out)
{
	unsigned __int128 v = 0;
	unsigned base = 10;
	size_t i = 0, digits = 0;
	uint64_t mul = 1;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	for (; i < n; i++, digits++) {
		int d = hexval(s[i]);

		if (d < 0 || (base == 10 && d > 9))
			break;
		v = v * base + (unsigned)d;
		if (v > UINT64_MAX)
			return -ERANGE;
	}
	if (!digits)
		return -EINVAL;
	if (i < n) {
		switch (s[i]) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		case 't': case 'T': mul = 1ull << 40; break;
		default: return -EINVAL;
		}
		i++;
	}
	if (i != n)
		return -EINVAL;
	v *= mul;
	if (v > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

/* One trailing NUL is dropped; any other NUL makes the value malformed. */
static bool ref_value_len(const uint8_t *buf, size_t *len)
{
	if (*len && buf[*len - 1] == '\0')
		(*len)--;
	return memchr(buf, '\0', *len) == NULL;
}

struct ref_list {
	struct vrange *v;
	size_t n;
	bool age, has_priority;
	unsigned priority;
};

static bool ref_is_sep(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ',';
}

static bool word_is(const uint8_t *t, size_t n, const char *w)
{
	return n == strlen(w) && memcmp(t, w, n) == 0;
}

/* One item of a range list.  0 or -EINVAL. */
static int ref_item(const uint8_t *t, size_t n, bool allow_flags, struct ref_list *l)
{
	const uint8_t *colon;
	uint64_t off, len;

	if (n > TOKEN_MAX)
		return -EINVAL;
	if (word_is(t, n, "all")) {
		l->v[l->n].offset = 0;
		l->v[l->n++].length = 0;
		return 0;
	}
	colon = memchr(t, ':', n);
	if (colon) {
		size_t k = (size_t)(colon - t);

		if (ref_size((const char *)t, k, &off) || ref_size((const char *)colon + 1,
								  n - k - 1, &len))
			return -EINVAL;
		if (off % PAGE)
			return -EINVAL;
		if (len) {
			unsigned __int128 r = ((unsigned __int128)len + PAGE - 1) / PAGE * PAGE;

			if (r > (unsigned __int128)INT64_MAX)
				return -EINVAL;
			len = (uint64_t)r;
		}
		if ((unsigned __int128)off + len > (unsigned __int128)INT64_MAX)
			return -EINVAL;
		l->v[l->n].offset = off;
		l->v[l->n++].length = len;
		return 0;
	}
	if (!allow_flags)
		return -EINVAL;
	if (word_is(t, n, "age")) {
		l->age = true;
		return 0;
	}
	if (n == 10 && memcmp(t, "priority=", 9) == 0 && t[9] >= '0' && t[9] <= '7') {
		l->has_priority = true;
		l->priority = (unsigned)(t[9] - '0');
		return 0;
	}
	return -EINVAL;
}

/* l->v must have room for len / 2 + 1 ranges (an item and a separator each). */
static int ref_ranges(const uint8_t *buf, size_t len, bool allow_flags, struct ref_list *l)
{
	size_t i = 0;

	l->n = 0;
	l->age = l->has_priority = false;
	l->priority = 3;
	if (!ref_value_len(buf, &len))
		return -EINVAL;
	while (i < len) {
		size_t start;

		if (ref_is_sep(buf[i])) {
			i++;
			continue;
		}
		start = i;
		while (i < len && !ref_is_sep(buf[i]))
			i++;
		if (ref_item(buf + start, i - start, allow_flags, l))
			return -EINVAL;
	}
	return l->n ? 0 : -EINVAL;
}

/* The single word of a one-word value: NUL rule, then trim space, tab, newline. */
static int ref_word(const uint8_t *buf, size_t len, const uint8_t **w, size_t *wn)
{
	size_t s = 0;

	if (!ref_value_len(buf, &len))
		return -EINVAL;
	while (s < len && (buf[s] == ' ' || buf[s] == '\t' || buf[s] == '\n'))
		s++;
	while (len > s && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\n'))
		len--;
	if (s == len || len - s > TOKEN_MAX)
		return -EINVAL;
	*w = buf + s;
	*wn = len - s;
	return 0;
}

/* ---- the checks ---- */

static void check_ranges(const uint8_t *data, size_t size, bool allow_flags,
			 struct vrange *refv)
{
	struct vrange_list l;
	struct ref_list r = { .v = refv };
	int ret, want;

	memset(&l, 0xa5, sizeof(l)); /* garbage in: the parser must overwrite it */
	ret = vgrammar_parse_ranges((const char *)data, size, allow_flags, &l);
	want = ref_ranges(data, size, allow_flags, &r);
	if (ret == -ENOMEM)
		return;
	if (ret != want)
		fail(data, size, "parse_ranges(allow_flags=%d) returned %d, the reference %d",
		     allow_flags, ret, want);
	if (ret) {
		if (l.v || l.n || l.age || l.has_priority)
			fail(data, size, "parse_ranges(allow_flags=%d) failed but left output "
			     "(v %p, n %zu, age %d, has_priority %d)", allow_flags, (void *)l.v,
			     l.n, l.age, l.has_priority);
		return;
	}
	if (l.n < 1 || !l.v)
		fail(data, size, "parse_ranges succeeded with no ranges");
	if (l.n != r.n)
		fail(data, size, "parse_ranges(allow_flags=%d): %zu ranges, the reference %zu",
		     allow_flags, l.n, r.n);
	for (size_t i = 0; i < l.n; i++) {
		const struct vrange *v = &l.v[i];

		if (v->offset % PAGE || v->length % PAGE || v->offset > (uint64_t)INT64_MAX ||
		    v->length > (uint64_t)INT64_MAX - v->offset)
			fail(data, size, "range %zu = %" PRIu64 ":%" PRIu64 " breaks the range rules",
			     i, v->offset, v->length);
		if (v->offset != r.v[i].offset || v->length != r.v[i].length)
			fail(data, size, "range %zu = %" PRIu64 ":%" PRIu64 ", the reference %"
			     PRIu64 ":%" PRIu64, i, v->offset, v->length, r.v[i].offset,
			     r.v[i].length);
	}
	if (l.priority > VGRAMMAR_PRIORITY_MAX || (!l.has_priority && l.priority != 3))
		fail(data, size, "priority %u (has_priority %d)", l.priority, l.has_priority);
	if (!allow_flags && (l.age || l.has_priority))
		fail(data, size, "flags outside mark");
	if (l.age != r.age || l.has_priority != r.has_priority ||
	    (l.has_priority && l.priority != r.priority))
		fail(data, size, "flags age=%d priority=%d/%u, the reference age=%d priority=%d/%u",
		     l.age, l.has_priority, l.priority, r.age, r.has_priority, r.priority);

	/* Written back as text (mixing the notations), it parses to the same list. */
	{
		size_t cap = l.n * 48 + 32, len = 0;
		char *txt = malloc(cap);
		struct vrange_list again;

		if (!txt)
			goto out;
		for (size_t i = 0; i < l.n; i++)
			len += (size_t)snprintf(txt + len, cap - len,
						i % 2 ? "0x%" PRIx64 ":%" PRIu64 "," : "%" PRIu64
						":0x%" PRIX64 "\n", l.v[i].offset, l.v[i].length);
		if (l.age)
			len += (size_t)snprintf(txt + len, cap - len, " age");
		if (l.has_priority)
			len += (size_t)snprintf(txt + len, cap - len, "\tpriority=%u", l.priority);
		ret = vgrammar_parse_ranges(txt, len + 1, allow_flags, &again); /* with its NUL */
		if (ret == 0) {
			if (again.n != l.n || memcmp(again.v, l.v, l.n * sizeof(*l.v)) ||
			    again.age != l.age || again.has_priority != l.has_priority ||
			    again.priority != l.priority)
				fail(data, size, "the list written back as \"%s\" parses differently",
				     txt);
			vrange_list_free(&again);
		} else if (ret != -ENOMEM) {
			fail(data, size, "the list written back as \"%s\" is refused (%d)", txt,
			     ret);
		}
		free(txt);
	}
out:
	vrange_list_free(&l);
	if (l.v || l.n)
		fail(data, size, "vrange_list_free left the list non-empty");
}

/* Mark's grammar is unmark's plus flags: whatever unmark takes, mark takes alike. */
static void check_superset(const uint8_t *data, size_t size)
{
	struct vrange_list a, b;

	if (vgrammar_parse_ranges((const char *)data, size, false, &a))
		return;
	if (vgrammar_parse_ranges((const char *)data, size, true, &b)) {
		vrange_list_free(&a);
		fail(data, size, "accepted for unmark, refused for mark");
	}
	if (a.n != b.n || memcmp(a.v, b.v, a.n * sizeof(*a.v)) || b.age || b.has_priority)
		fail(data, size, "mark and unmark read the same value differently");
	vrange_list_free(&a);
	vrange_list_free(&b);
}

static void check_words(const uint8_t *data, size_t size)
{
	const uint64_t sentinel = 0x5a5a5a5a5a5a5a5aull;
	const uint8_t *w;
	size_t wn;
	uint64_t got = sentinel, want = sentinel;
	int ret, wret, mode = -7;
	bool all = false;

	/* vgrammar_parse_size */
	ret = vgrammar_parse_size((const char *)data, size, &got);
	wret = ref_word(data, size, &w, &wn);
	if (wret == 0)
		wret = ref_size((const char *)w, wn, &want);
	if (ret != wret || got != want)
		fail(data, size, "parse_size: %d/%" PRIu64 ", the reference %d/%" PRIu64, ret, got,
		     wret, want);

	/* vgrammar_parse_purge: "all" or a SIZE; every failure is EINVAL */
	got = sentinel;
	ret = vgrammar_parse_purge((const char *)data, size, &all, &got);
	if (ref_word(data, size, &w, &wn)) {
		wret = -EINVAL;
	} else if (word_is(w, wn, "all")) {
		wret = 0;
		want = 0;
	} else {
		want = sentinel;
		wret = ref_size((const char *)w, wn, &want) ? -EINVAL : 0;
	}
	if (ret != wret)
		fail(data, size, "parse_purge returned %d, the reference %d", ret, wret);
	if (ret == 0 && (all != (wret == 0 && word_is(w, wn, "all")) || got != want))
		fail(data, size, "parse_purge: all=%d size=%" PRIu64 ", the reference size %" PRIu64,
		     all, got, want);
	if (ret && (got != sentinel || all))
		fail(data, size, "parse_purge failed but changed its outputs");

	/* vgrammar_parse_auto */
	ret = vgrammar_parse_auto((const char *)data, size, &mode);
	wret = -EINVAL;
	if (ref_word(data, size, &w, &wn) == 0) {
		static const char *const names[] = { "off", "mark", "unlink" };

		for (int i = 0; i < 3; i++)
			if (word_is(w, wn, names[i]))
				wret = i;
	}
	if (wret >= 0 ? ret != 0 || mode != wret : ret != -EINVAL || mode != -7)
		fail(data, size, "parse_auto: %d/%d, the reference %d", ret, mode, wret);
	if (ret == 0 && !word_is(w, wn, vgrammar_auto_name(mode)))
		fail(data, size, "vgrammar_auto_name(%d) does not give the word back", mode);

	/* opts_parse_size on a C string: what the mount options see */
	{
		char *s = malloc(size + 1);

		if (!s)
			return;
		memcpy(s, data, size);
		s[size] = '\0';
		got = want = sentinel;
		ret = opts_parse_size(s, &got);
		wret = ref_size(s, strlen(s), &want);
		if (ret != wret || got != want)
			fail(data, size, "opts_parse_size(\"%s\"): %d/%" PRIu64 ", the reference %d/%"
			     PRIu64, s, ret, got, wret, want);
		free(s);
	}
}

/*
 * strbuf_printf driven by the input: appends of input bytes ("%.*s"),
 * of padding ("%*s", wide enough to cross the limit) and of numbers, each
 * checked against a shadow copy.
 */
static void check_strbuf(const uint8_t *data, size_t size)
{
	static char shadow[VGRAMMAR_VALUE_MAX + 1];
	static char piece[2 * VGRAMMAR_VALUE_MAX];
	struct strbuf b;
	size_t slen = 0, i = 0;

	strbuf_init(&b);
	while (i < size) {
		uint8_t op = data[i++];
		size_t plen;
		int ret;

		switch (op % 3) {
		case 0: { /* bytes of the input, up to a NUL */
			int k = i < size ? data[i++] : 0;
			int avail = (int)(size - i < (size_t)k ? size - i : (size_t)k);

			ret = strbuf_printf(&b, "%.*s", avail, (const char *)data + i);
			plen = strnlen((const char *)data + i, (size_t)avail);
			memcpy(piece, data + i, plen);
			i += (size_t)avail;
			break;
		}
		case 1: { /* padding: up to 80 KiB of spaces, enough to cross the limit */
			int w = (int)(op / 3 % 40) * 2048;

			if (i < size)
				w += data[i++] * 8;
			ret = strbuf_printf(&b, "%*s", w, "");
			plen = (size_t)w;
			memset(piece, ' ', plen);
			break;
		}
		default: { /* a number */
			uint64_t v = 0;

			for (int k = 0; k < 8 && i < size; k++)
				v = v << 8 | data[i++];
			ret = strbuf_printf(&b, "%" PRIu64, v);
			plen = (size_t)snprintf(piece, sizeof(piece), "%" PRIu64, v);
			break;
		}
		}
		if (ret == -ENOMEM)
			break;
		if (ret == 0) {
			if (slen + plen > VGRAMMAR_VALUE_MAX)
				fail(data, size, "strbuf_printf grew the value to %zu bytes", slen + plen);
			memcpy(shadow + slen, piece, plen);
			slen += plen;
		} else if (ret != -E2BIG || slen + plen <= VGRAMMAR_VALUE_MAX) {
			fail(data, size, "strbuf_printf refused %zu bytes onto %zu with %d", plen,
			     slen, ret);
		}
		if (b.len != slen || b.len > VGRAMMAR_VALUE_MAX || (b.buf && b.cap <= b.len) ||
		    b.cap > VGRAMMAR_VALUE_MAX + 1)
			fail(data, size, "strbuf: len %zu cap %zu, shadow %zu", b.len, b.cap, slen);
		/* what was appended; everything after a refusal and at the end */
		if (slen && (!b.buf || b.buf[slen] != '\0' ||
			     (ret == 0 ? memcmp(b.buf + slen - plen, shadow + slen - plen, plen) :
			      memcmp(b.buf, shadow, slen))))
			fail(data, size, "strbuf: the value differs from what was appended");
	}
	if (slen && memcmp(b.buf, shadow, slen))
		fail(data, size, "strbuf: the value differs from what was appended");
	strbuf_free(&b);
	strbuf_free(&b); /* safe twice */
	if (b.buf || b.len || b.cap)
		fail(data, size, "strbuf_free left the buffer non-empty");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vrange *refv = malloc((size / 2 + 1) * sizeof(*refv));

	if (!refv)
		return 0;
	check_ranges(data, size, false, refv);
	check_ranges(data, size, true, refv);
	free(refv);
	check_superset(data, size);
	check_words(data, size);
	check_strbuf(data, size);
	return 0;
}
