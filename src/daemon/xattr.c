/*
 * xattr.c - plain extended attributes; see xattr.h.
 */
#include "xattr.h"
#include "meta.h"

#include <errno.h>
#include <linux/limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/xattr.h>

#define MIN_SLOTS 8u

struct xattrs {
	struct xattr *first, *last;        /* in the order first set */
	size_t list_len;                   /* the names with their NULs: listxattr's length */
	uint32_t count;
	uint32_t mask;                     /* slots - 1; slots is a power of two */
	uint32_t ns_count[XATTR_NS_COUNT]; /* names per namespace */
	struct xattr *slot[];              /* NULL: empty */
};

unsigned xattr_ns_of(const char *name)
{
	if (strncmp(name, "user.", 5) == 0)
		return XATTR_NS_USER;
	if (strncmp(name, "trusted.", 8) == 0)
		return XATTR_NS_TRUSTED;
	if (strncmp(name, "security.", 9) == 0)
		return XATTR_NS_SECURITY;
	return 0;
}

unsigned xattr_ns(const struct xattrs *t)
{
	unsigned ns = 0;

	for (int i = 0; t && i < XATTR_NS_COUNT; i++)
		if (t->ns_count[i])
			ns |= 1u << i;
	return ns;
}

size_t xattr_count(const struct xattrs *t)
{
	return t ? t->count : 0;
}

/* The names per namespace counter of a stored name. */
static uint32_t *ns_counter(struct xattrs *t, const char *name)
{
	return &t->ns_count[__builtin_ctz(xattr_ns_of(name))];
}

/* FNV-1a over the name, with a final mix so that the low bits (the slot) depend on every byte. */
static uint32_t hash_name(const char *name, size_t *len)
{
	uint32_t h = 2166136261u;
	const char *p;

	for (p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	*len = (size_t)(p - name);
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	return h;
}

/* The slot that holds the name, or the empty slot where it would go. */
static uint32_t probe(const struct xattrs *t, const char *name, size_t len, uint32_t hash)
{
	uint32_t i = hash & t->mask;
	const struct xattr *x;

	/* Never more than 3/4 full: an empty slot ends every search. */
	while ((x = t->slot[i]) != NULL) {
		if (x->hash == hash && x->name_len == len && memcmp(x->name, name, len) == 0)
			break;
		i = (i + 1) & t->mask;
	}
	return i;
}

/* Empty slot i and move back the entries of the run after it that may sit there. */
static void unslot(struct xattrs *t, uint32_t i)
{
	uint32_t j = i;

	t->slot[i] = NULL;
	for (;;) {
		struct xattr *x;

		j = (j + 1) & t->mask;
		x = t->slot[j];
		if (!x)
			return;
		/* x moves to the hole unless its home slot lies cyclically in (i, j]. */
		if (((j - x->hash) & t->mask) >= ((j - i) & t->mask)) {
			t->slot[i] = x;
			t->slot[j] = NULL;
			i = j;
		}
	}
}

/*
 * A table of the given number of slots holding t's entries (none when t
 * is NULL), or NULL when out of memory; t itself is left to the caller.
 */
static struct xattrs *table_rebuild(const struct xattrs *t, uint32_t slots)
{
	struct xattrs *nt = meta_calloc(sizeof(*nt) + (size_t)slots * sizeof(nt->slot[0]));

	if (!nt)
		return NULL;
	if (t)
		memcpy(nt, t, sizeof(*nt));
	nt->mask = slots - 1;
	for (struct xattr *x = nt->first; x; x = x->next)
		nt->slot[probe(nt, x->name, x->name_len, x->hash)] = x;
	return nt;
}

/* A new entry, on no list and in no table, or NULL. */
static struct xattr *entry_new(const char *name, size_t len, uint32_t hash, const void *value,
			       size_t size)
{
	struct xattr *x;

	if (size > SIZE_MAX / 2)
		return NULL;
	x = meta_alloc(sizeof(*x) + size + len + 1);
	if (!x)
		return NULL;
	if (size)
		memcpy(x->value, value, size);
	memcpy(x->value + size, name, len + 1);
	x->name = x->value + size;
	x->name_len = (uint32_t)len;
	x->hash = hash;
	x->size = size;
	x->prev = x->next = NULL;
	return x;
}

/* Put x in old's place, in slot i and in the order. */
static void entry_replace(struct xattrs *t, uint32_t i, struct xattr *old, struct xattr *x)
{
	x->prev = old->prev;
	x->next = old->next;
	*(x->prev ? &x->prev->next : &t->first) = x;
	*(x->next ? &x->next->prev : &t->last) = x;
	t->slot[i] = x;
	meta_free(old);
}

int xattr_set(struct xattrs **tp, const char *name, const void *value, size_t size,
	      int flags)
{
	struct xattrs *t = *tp;
	struct xattr *x, *old = NULL;
	uint32_t hash, i = 0;
	size_t len;

	if (!xattr_ns_of(name))
		return -EOPNOTSUPP;
	hash = hash_name(name, &len);
	if (len > XATTR_NAME_MAX)
		return -ERANGE;
	if (t) {
		i = probe(t, name, len, hash);
		old = t->slot[i];
	}
	if (old && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!old && (flags & XATTR_REPLACE))
		return -ENODATA;
	x = entry_new(name, len, hash, value, size);
	if (!x)
		return -ENOMEM;
	if (old) {
		entry_replace(t, i, old, x);
		return 0;
	}
	if (!t || ((uint64_t)t->count + 1) * 4 > ((uint64_t)t->mask + 1) * 3) {
		struct xattrs *nt = NULL;

		/* At most 2^31 slots, so that the mask fits (memory runs out long before). */
		if (!t || t->mask < (1u << 30))
			nt = table_rebuild(t, t ? (t->mask + 1) * 2 : MIN_SLOTS);
		if (!nt) {
			meta_free(x);
			return -ENOMEM;
		}
		meta_free(t);
		*tp = t = nt;
		i = probe(t, name, len, hash);
	}
	t->slot[i] = x;
	x->prev = t->last;
	*(t->last ? &t->last->next : &t->first) = x;
	t->last = x;
	t->count++;
	t->list_len += len + 1;
	(*ns_counter(t, name))++;
	return 0;
}

const struct xattr *xattr_find(const struct xattrs *t, const char *name)
{
	size_t len;
	uint32_t hash;

	if (!t)
		return NULL;
	hash = hash_name(name, &len);
	return t->slot[probe(t, name, len, hash)];
}

int xattr_remove(struct xattrs **tp, const char *name)
{
	struct xattrs *t = *tp;
	struct xattr *x;
	uint32_t hash, i;
	size_t len;

	if (!t)
		return -ENODATA;
	hash = hash_name(name, &len);
	i = probe(t, name, len, hash);
	x = t->slot[i];
	if (!x)
		return -ENODATA;
	unslot(t, i);
	*(x->prev ? &x->prev->next : &t->first) = x->next;
	*(x->next ? &x->next->prev : &t->last) = x->prev;
	t->count--;
	t->list_len -= x->name_len + 1;
	(*ns_counter(t, x->name))--;
	meta_free(x);
	if (t->count == 0) {
		meta_free(t);
		*tp = NULL;
	} else if (t->mask + 1 > MIN_SLOTS && t->count < (t->mask + 1) / 8) {
		/* Give memory back; if that cannot be done now, keep the larger table. */
		struct xattrs *nt = table_rebuild(t, (t->mask + 1) / 2);

		if (nt) {
			meta_free(t);
			*tp = nt;
		}
	}
	return 0;
}

long xattr_list(const struct xattrs *t, char *buf, size_t size)
{
	size_t total = t ? t->list_len : 0;

	if (size == 0)
		return (long)total;
	if (size < total)
		return -ERANGE;
	for (const struct xattr *x = t ? t->first : NULL; x; x = x->next) {
		memcpy(buf, x->name, x->name_len + 1);
		buf += x->name_len + 1;
	}
	return (long)total;
}

void xattr_free_all(struct xattrs **tp)
{
	struct xattrs *t = *tp;

	if (!t)
		return;
	while (t->first) {
		struct xattr *x = t->first;

		t->first = x->next;
		meta_free(x);
	}
	meta_free(t);
	*tp = NULL;
}
