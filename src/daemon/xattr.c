/*
 * xattr.c - plain extended attributes; see xattr.h.
 */
#include "xattr.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

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

/* The counter of a namespace bit. */
static uint32_t *ns_counter(struct xattrs *t, unsigned ns)
{
	return &t->ns_count[__builtin_ctz(ns)];
}

unsigned xattr_ns(const struct xattrs *t)
{
	unsigned ns = 0;

	for (int i = 0; t && i < XATTR_NS_COUNT; i++)
		if (t->ns_count[i])
			ns |= 1u << i;
	return ns;
}

static struct xattr **xattr_slot(struct xattrs *t, const char *name)
{
	struct xattr **slot = &t->first;

	while (*slot && strcmp((*slot)->name, name) != 0)
		slot = &(*slot)->next;
	return slot;
}

int xattr_set(struct xattrs **tp, const char *name, const void *value, size_t size,
	      int flags)
{
	unsigned ns = xattr_ns_of(name);
	struct xattrs *t = *tp;
	struct xattr **slot, *x;

	if (!ns)
		return -EOPNOTSUPP;
	slot = t ? xattr_slot(t, name) : NULL;
	if (slot && *slot && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!(slot && *slot) && (flags & XATTR_REPLACE))
		return -ENODATA;
	x = meta_alloc(sizeof(*x) + size);
	if (!x)
		return -ENOMEM;
	x->name = meta_strdup(name);
	if (!x->name)
		goto out_free;
	x->size = size;
	if (size)
		memcpy(x->value, value, size);
	if (!t) {
		t = meta_calloc(sizeof(*t));
		if (!t)
			goto out_free_name;
		*tp = t;
		slot = &t->first;
	}
	if (*slot) {
		/* Replace in place so a failed allocation above changed nothing. */
		struct xattr *old = *slot;

		x->next = old->next;
		*slot = x;
		meta_free(old->name);
		meta_free(old);
	} else {
		x->next = NULL;
		*slot = x;
		(*ns_counter(t, ns))++;
	}
	return 0;

out_free_name:
	meta_free(x->name);
out_free:
	meta_free(x);
	return -ENOMEM;
}

const struct xattr *xattr_find(const struct xattrs *t, const char *name)
{
	for (const struct xattr *x = t ? t->first : NULL; x; x = x->next)
		if (strcmp(x->name, name) == 0)
			return x;
	return NULL;
}

int xattr_remove(struct xattrs **tp, const char *name)
{
	struct xattrs *t = *tp;
	struct xattr **slot, *x;

	if (!t || !*(slot = xattr_slot(t, name)))
		return -ENODATA;
	x = *slot;
	*slot = x->next;
	(*ns_counter(t, xattr_ns_of(x->name)))--;
	meta_free(x->name);
	meta_free(x);
	if (!t->first) {
		meta_free(t);
		*tp = NULL;
	}
	return 0;
}

long xattr_list(const struct xattrs *t, char *buf, size_t size)
{
	size_t total = 0;

	for (const struct xattr *x = t ? t->first : NULL; x; x = x->next)
		total += strlen(x->name) + 1;
	if (size == 0)
		return (long)total;
	if (size < total)
		return -ERANGE;
	for (const struct xattr *x = t ? t->first : NULL; x; x = x->next) {
		size_t n = strlen(x->name) + 1;

		memcpy(buf, x->name, n);
		buf += n;
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
		meta_free(x->name);
		meta_free(x);
	}
	meta_free(t);
	*tp = NULL;
}
