/*
 * size.h - parsing SIZE values (DESIGN section 2), shared by the mount
 * options, the xattr grammar and volatilectl.  A pure function.
 */
#ifndef VOLATILEFS_SIZE_H
#define VOLATILEFS_SIZE_H

#include <stdint.h>

/*
 * SIZE: a decimal or 0x-prefixed hex number of bytes, optionally
 * followed by one of K, M, G, T (binary, case-insensitive).  Zero, or
 * -EINVAL (malformed) / -ERANGE (does not fit in 64 bits).
 */
int opts_parse_size(const char *s, uint64_t *out);

#endif
