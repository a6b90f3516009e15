/*
 * tbuf.c - one scratch buffer per thread; see tbuf.h.
 */
#include "tbuf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct tbuf {
	char *p;
	size_t cap;
};

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool key_ok;

static void tbuf_free(void *arg)
{
	struct tbuf *b = arg;

	free(b->p);
	free(b);
}

static void key_init(void)
{
	key_ok = pthread_key_create(&key, tbuf_free) == 0;
}

/* This thread's record, made when make is true; NULL when there is none. */
static struct tbuf *mine(bool make)
{
	struct tbuf *b;

	pthread_once(&once, key_init); /* key_ok is set there */
	if (!key_ok)
		return NULL;
	b = pthread_getspecific(key);
	if (!b && make) {
		b = calloc(1, sizeof(*b));
		if (b && pthread_setspecific(key, b) != 0) {
			free(b);
			b = NULL;
		}
	}
	return b;
}

char *tbuf_get(size_t size)
{
	struct tbuf *b = mine(true);

	if (!b)
		return NULL;
	if (b->cap < size) {
		size_t cap = size < 4096 ? 4096 : size;
		char *p = realloc(b->p, cap);

		if (!p)
			return NULL;
		b->p = p;
		b->cap = cap;
	}
	return b->p;
}

void tbuf_shrink(size_t keep)
{
	struct tbuf *b = mine(false);

	if (b && b->cap > keep) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
}

void tbuf_release(void)
{
	struct tbuf *b = mine(false);

	if (b) {
		pthread_setspecific(key, NULL);
		tbuf_free(b);
	}
}
