/* Failed admin authentication per client address (admin_limit.h): an open-addressed
 * table probed over a few neighbouring slots; a full neighbourhood evicts its oldest
 * window, so the table stays the size it was made. */
#include "server/admin_limit.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_MAX 64 /* an IPv6 address in text, with room */
#define PROBES   8

struct slot {
	char addr[ADDR_MAX]; /* "" when free */
	int64_t window_start;
	unsigned failures;
};

struct bc_admin_limiter {
	pthread_mutex_t mu;
	struct slot *slots;
	size_t n;
	unsigned failures;
	int64_t window_ms;
};

struct bc_admin_limiter *bc_admin_limiter_new(size_t slots, unsigned failures, int64_t window_ms)
{
	struct bc_admin_limiter *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->n = slots ? slots : BC_ADMIN_LIMIT_SLOTS;
	l->failures = failures ? failures : BC_ADMIN_LIMIT_FAILURES;
	l->window_ms = window_ms > 0 ? window_ms : BC_ADMIN_LIMIT_WINDOW;
	if ((l->slots = calloc(l->n, sizeof(*l->slots))) == NULL) {
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->mu, NULL);
	return l;
}

void bc_admin_limiter_free(struct bc_admin_limiter *l)
{
	if (l == NULL)
		return;
	pthread_mutex_destroy(&l->mu);
	free(l->slots);
	free(l);
}

/* The key an address is counted under: an IPv6 address by its /64 (one client is
 * usually given a whole /64, and could otherwise spread its guesses over 2^64
 * addresses), anything else as it is. */
static void key_of(const char *addr, char out[ADDR_MAX])
{
	struct in6_addr a;

	if (strchr(addr, ':') != NULL && inet_pton(AF_INET6, addr, &a) == 1 &&
	    !IN6_IS_ADDR_V4MAPPED(&a)) {
		memset(a.s6_addr + 8, 0, 8);
		if (inet_ntop(AF_INET6, &a, out, ADDR_MAX) != NULL)
			return;
	}
	snprintf(out, ADDR_MAX, "%s", addr);
}

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static int live(const struct bc_admin_limiter *l, const struct slot *s, int64_t now_ms)
{
	return s->addr[0] && now_ms < s->window_start + l->window_ms;
}

/* The slot of addr, or NULL; *room the best slot to take for it (free, expired, or the
 * oldest window of the neighbourhood). */
static struct slot *find(struct bc_admin_limiter *l, const char *addr, int64_t now_ms,
                         struct slot **room)
{
	size_t h = hash(addr);

	*room = NULL;
	for (size_t i = 0; i < PROBES && i < l->n; i++) {
		struct slot *s = &l->slots[(h + i) % l->n];
		if (live(l, s, now_ms) && strcmp(s->addr, addr) == 0)
			return s;
		if (!live(l, s, now_ms)) {
			if (*room == NULL || live(l, *room, now_ms))
				*room = s;
		} else if (*room == NULL ||
		           (live(l, *room, now_ms) && s->window_start < (*room)->window_start)) {
			*room = s;
		}
	}
	return NULL;
}

int64_t bc_admin_limiter_blocked(struct bc_admin_limiter *l, const char *addr, int64_t now_ms)
{
	struct slot *s, *room;
	char key[ADDR_MAX];
	int64_t wait = 0;

	if (l == NULL || addr == NULL)
		return 0;
	key_of(addr, key);
	pthread_mutex_lock(&l->mu);
	if ((s = find(l, key, now_ms, &room)) != NULL && s->failures >= l->failures)
		wait = (s->window_start + l->window_ms - now_ms + 999) / 1000;
	pthread_mutex_unlock(&l->mu);
	return wait > 0 ? wait : 0;
}

int bc_admin_limiter_fail(struct bc_admin_limiter *l, const char *addr, int64_t now_ms)
{
	struct slot *s, *room;
	char key[ADDR_MAX];
	int reached = 0;

	if (l == NULL || addr == NULL)
		return 0;
	key_of(addr, key);
	pthread_mutex_lock(&l->mu);
	if ((s = find(l, key, now_ms, &room)) == NULL && (s = room) != NULL) {
		snprintf(s->addr, sizeof(s->addr), "%s", key);
		s->window_start = now_ms;
		s->failures = 0;
	}
	if (s != NULL && s->failures < l->failures) {
		s->failures++;
		reached = s->failures == l->failures ? BC_ADMIN_LIMIT_REACHED
		          : s->failures == 1         ? BC_ADMIN_LIMIT_FIRST
		                                     : 0;
	}
	pthread_mutex_unlock(&l->mu);
	return reached;
}

size_t bc_admin_limiter_used(struct bc_admin_limiter *l)
{
	size_t n = 0;

	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n; i++)
		n += l->slots[i].addr[0] != 0;
	pthread_mutex_unlock(&l->mu);
	return n;
}
