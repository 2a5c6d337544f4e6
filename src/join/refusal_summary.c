#include "join/refusal_summary.h"

#include <string.h>

void bc_refusal_summary_init(struct bc_refusal_summary *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->other.reason = "(other)";
	s->other.published_ms = INT64_MIN;
}

void bc_refusal_summary_destroy(struct bc_refusal_summary *s)
{
	pthread_mutex_destroy(&s->lock);
}

/* Under lock: the slot of reason, made when new; the shared one when full. */
static struct bc_refusal_slot *slot_of(struct bc_refusal_summary *s, const char *reason)
{
	struct bc_refusal_slot *sl;

	for (unsigned i = 0; i < s->n_slots; i++)
		if (strcmp(s->slots[i].reason, reason) == 0)
			return &s->slots[i];
	if (s->n_slots == BC_REFUSAL_SUMMARY_SLOTS)
		return &s->other;
	sl = &s->slots[s->n_slots++];
	sl->reason = reason;
	sl->published_ms = INT64_MIN;
	return sl;
}

uint64_t bc_refusal_summary_count(struct bc_refusal_summary *s, const char **reason, int64_t now_ms)
{
	struct bc_refusal_slot *sl;
	uint64_t n = 0;

	pthread_mutex_lock(&s->lock);
	sl = slot_of(s, *reason);
	sl->pending++;
	/* a clock set back publishes at once rather than never */
	if (sl->published_ms == INT64_MIN || now_ms < sl->published_ms ||
	    now_ms - sl->published_ms >= BC_REFUSAL_SUMMARY_MS) {
		n = sl->pending;
		sl->pending = 0;
		sl->published_ms = now_ms;
	}
	*reason = sl->reason;
	pthread_mutex_unlock(&s->lock);
	return n;
}
