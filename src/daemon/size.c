/*
 * size.c - the SIZE syntax of DESIGN section 2; see size.h.
 */
#include "size.h"

#include <ctype.h>
#include <errno.h>

int opts_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	unsigned base = 10;
	const char *p = s;
	int digits = 0;

	if (!s)
		return -EINVAL;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	for (; *p; p++, digits++) {
		unsigned d;

		if (isdigit((unsigned char)*p))
			d = (unsigned)(*p - '0');
		else if (base == 16 && isxdigit((unsigned char)*p))
			d = (unsigned)(tolower((unsigned char)*p) - 'a' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	if (!digits)
		return -EINVAL;
	switch (tolower((unsigned char)*p)) {
	case '\0': break;
	case 'k': mul = 1ull << 10; p++; break;
	case 'm': mul = 1ull << 20; p++; break;
	case 'g': mul = 1ull << 30; p++; break;
	case 't': mul = 1ull << 40; p++; break;
	default: return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}
