/*
 * vgrammar.c - user.volatile.* value grammar; see vgrammar.h.
 *
 * vgrammar_parse_ranges() walks the value twice with the same code:
 * the first walk validates every item and counts the ranges, the second
 * (which cannot fail) fills an array of exactly that size.  So a value
 * is judged whole before memory is involved.
 */
#include "vgrammar.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"

static inline bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ',';
}

static inline bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/*
 * The length of the value proper: drop one trailing NUL, refuse any
 * other.  buf may be NULL only for an empty value.
 */
static int value_len(const char *buf, size_t len, size_t *out)
{
	if (!buf && len)
		return -EINVAL;
	if (len && buf[len - 1] == '\0')
		len--;
	if (len && memchr(buf, '\0', len))
		return -EINVAL;
	*out = len;
	return 0;
}

/* Copy tok[0..n) into s as a C string; -EINVAL if it cannot be an item. */
static int token_copy(char s[VGRAMMAR_TOKEN_MAX + 1], const char *tok, size_t n)
{
	if (n == 0 || n > VGRAMMAR_TOKEN_MAX)
		return -EINVAL;
	memcpy(s, tok, n);
	s[n] = '\0';
	return 0;
}

/* OFFSET:LENGTH in s (modified), checked and rounded per DESIGN section 4. */
static int parse_range(char *s, struct vrange *r)
{
	char *colon = strchr(s, ':');
	uint64_t off, len;

	if (!colon)
		return -EINVAL;
	*colon = '\0';
	/* opts_parse_size() refuses a second ':' in LENGTH, and empty parts. */
	if (opts_parse_size(s, &off) || opts_parse_size(colon + 1, &len))
		return -EINVAL;
	if (off % VGRAMMAR_PAGE)
		return -EINVAL;
	if (len) {
		if (len > UINT64_MAX - (VGRAMMAR_PAGE - 1))
			return -EINVAL;
		len = (len + VGRAMMAR_PAGE - 1) & ~(uint64_t)(VGRAMMAR_PAGE - 1);
	}
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return -EINVAL;
	r->offset = off;
	r->length = len;
	return 0;
}

/*
 * One item tok[0..n): a range into *r (returns 1), or a flag into l
 * (returns 0), or -EINVAL.
 */
static int parse_item(const char *tok, size_t n, bool allow_flags, struct vrange *r,
		      struct vrange_list *l)
{
	char s[VGRAMMAR_TOKEN_MAX + 1];

	if (token_copy(s, tok, n))
		return -EINVAL;
	if (strcmp(s, "all") == 0) {
		r->offset = 0;
		r->length = 0;
		return 1;
	}
	if (strchr(s, ':'))
		return parse_range(s, r) ? -EINVAL : 1;
	if (!allow_flags)
		return -EINVAL;
	if (strcmp(s, "age") == 0) {
		l->age = true;
		return 0;
	}
	if (strncmp(s, "priority=", 9) == 0 && s[9] >= '0' &&
	    s[9] <= '0' + (int)VGRAMMAR_PRIORITY_MAX && s[10] == '\0') {
		l->has_priority = true;
		l->priority = (unsigned)(s[9] - '0');
		return 0;
	}
	return -EINVAL;
}

/*
 * Walk the items of buf[0..len): flags into *l, the number of ranges
 * into *n, and the ranges themselves into v[] when v is not NULL.
 */
static int walk(const char *buf, size_t len, bool allow_flags, struct vrange *v,
		struct vrange_list *l, size_t *n)
{
	size_t i = 0, count = 0;

	while (i < len) {
		struct vrange r;
		size_t start;
		int ret;

		if (is_sep(buf[i])) {
			i++;
			continue;
		}
		start = i;
		while (i < len && !is_sep(buf[i]))
			i++;
		ret = parse_item(buf + start, i - start, allow_flags, &r, l);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			if (v)
				v[count] = r;
			count++;
		}
	}
	*n = count;
	return 0;
}

int vgrammar_parse_ranges(const char *buf, size_t len, bool allow_flags,
			  struct vrange_list *out)
{
	struct vrange_list l = { .priority = VGRAMMAR_DEFAULT_PRIORITY };
	struct vrange_list again = l;
	size_t n, n2;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = value_len(buf, len, &len);
	if (ret)
		return ret;
	ret = walk(buf, len, allow_flags, NULL, &l, &n);
	if (ret)
		return ret;
	if (n == 0) /* a call names one or more ranges */
		return -EINVAL;
	l.v = calloc(n, sizeof(*l.v));
	if (!l.v)
		return -ENOMEM;
	ret = walk(buf, len, allow_flags, l.v, &again, &n2);
	assert(ret == 0 && n2 == n);
	(void)ret;
	(void)n2;
	l.n = n;
	*out = l;
	return 0;
}

void vrange_list_free(struct vrange_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/*
 * The single word of a one-word value, as a C string in s: one trailing
 * NUL dropped, surrounding whitespace trimmed.  -EINVAL for an empty or
 * over-long word, or a stray NUL.
 */
static int single_word(const char *buf, size_t len, char s[VGRAMMAR_TOKEN_MAX + 1])
{
	size_t start = 0;
	int ret = value_len(buf, len, &len);

	if (ret)
		return ret;
	while (start < len && is_space(buf[start]))
		start++;
	while (len > start && is_space(buf[len - 1]))
		len--;
	if (start == len) /* also keeps a NULL buf out of the arithmetic */
		return -EINVAL;
	return token_copy(s, buf + start, len - start);
}

int vgrammar_parse_size(const char *buf, size_t len, uint64_t *out)
{
	char s[VGRAMMAR_TOKEN_MAX + 1];
	int ret = single_word(buf, len, s);

	if (ret)
		return ret;
	/* Inner whitespace ("1 M") is refused here: not a digit or suffix. */
	return opts_parse_size(s, out);
}

int vgrammar_parse_purge(const char *buf, size_t len, bool *all, uint64_t *size)
{
	char s[VGRAMMAR_TOKEN_MAX + 1];
	uint64_t v;

	if (single_word(buf, len, s))
		return -EINVAL;
	if (strcmp(s, "all") == 0) {
		*all = true;
		*size = 0;
		return 0;
	}
	if (opts_parse_size(s, &v))
		return -EINVAL;
	*all = false;
	*size = v;
	return 0;
}

static const char *const auto_names[] = {
	[VGRAMMAR_AUTO_OFF] = "off",
	[VGRAMMAR_AUTO_MARK] = "mark",
	[VGRAMMAR_AUTO_UNLINK] = "unlink",
};

int vgrammar_parse_auto(const char *buf, size_t len, int *mode)
{
	char s[VGRAMMAR_TOKEN_MAX + 1];

	if (single_word(buf, len, s))
		return -EINVAL;
	for (int i = 0; i < (int)(sizeof(auto_names) / sizeof(auto_names[0])); i++) {
		if (strcmp(s, auto_names[i]) == 0) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *vgrammar_auto_name(int mode)
{
	if (mode < 0 || mode >= (int)(sizeof(auto_names) / sizeof(auto_names[0])))
		return NULL;
	return auto_names[mode];
}

void strbuf_init(struct strbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void strbuf_free(struct strbuf *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

int strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	size_t need, cap;
	char *nb;
	int n;

	/*
	 * Format into the room we have; vsnprintf() says how much it
	 * needed.  It may have written a truncated tail past len, so a
	 * refusal puts the NUL back where it was.
	 */
	va_start(ap, fmt);
	n = vsnprintf(b->buf ? b->buf + b->len : NULL, b->buf ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > VGRAMMAR_VALUE_MAX - b->len) {
		if (b->buf)
			b->buf[b->len] = '\0';
		return n < 0 ? -EINVAL : -E2BIG;
	}
	need = b->len + (size_t)n + 1;
	if (need <= b->cap) {
		b->len += (size_t)n;
		return 0;
	}
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	if (cap > VGRAMMAR_VALUE_MAX + 1)
		cap = VGRAMMAR_VALUE_MAX + 1;
	nb = realloc(b->buf, cap);
	if (!nb) {
		if (b->buf)
			b->buf[b->len] = '\0';
		return -ENOMEM;
	}
	b->buf = nb;
	b->cap = cap;
	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	assert(n >= 0 && b->len + (size_t)n + 1 == need);
	b->len += (size_t)n;
	return 0;
}
