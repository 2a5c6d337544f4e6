/* Refusals no credential backs, summarized.
 *
 * A refusal that names no token, node or tenant (attestor-unknown, csr-invalid,
 * token-unreadable, token-unknown, token-malformed...) costs the requester one
 * request; recorded one by one, each would cost an event row and a log line. They
 * are counted per reason instead, and published at most once per reason per
 * BC_REFUSAL_SUMMARY_MS: the first refusal of a reason is published at once with
 * count 1; those of the next minute are counted, and the first after it is
 * published with the count of every refusal of that reason since the last one
 * published (itself included). Time is bc_now_ms() (the test clock). Thread-safe. */
#ifndef BC_JOIN_REFUSAL_SUMMARY_H
#define BC_JOIN_REFUSAL_SUMMARY_H

#include <pthread.h>
#include <stdint.h>

#define BC_REFUSAL_SUMMARY_MS    60000
#define BC_REFUSAL_SUMMARY_SLOTS 64

struct bc_refusal_slot {
	const char *reason; /* static (bc/reasons.h or a plugin's) */
	int64_t published_ms;
	uint64_t pending;
};

struct bc_refusal_summary {
	pthread_mutex_t lock;
	struct bc_refusal_slot slots[BC_REFUSAL_SUMMARY_SLOTS];
	unsigned n_slots;
	/* reasons past the table's size share one slot, published as "(other)" */
	struct bc_refusal_slot other;
};

void bc_refusal_summary_init(struct bc_refusal_summary *s);
void bc_refusal_summary_destroy(struct bc_refusal_summary *s);
/* Counts one refusal of *reason at now_ms. Returns how many refusals to publish now
 * (one event, one log line), or 0: counted into a later one. *reason may become
 * "(other)" when the table is full. */
uint64_t bc_refusal_summary_count(struct bc_refusal_summary *s, const char **reason,
                                  int64_t now_ms);

#endif
