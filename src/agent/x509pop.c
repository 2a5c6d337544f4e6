/* Re-joining with x509pop: a machine whose certificate expired (powered off, cut off)
 * proves it still holds the key of its last certificate and joins again as the same
 * node. Renewal refuses an expired certificate; this is the way back that needs no
 * new token. bcd node does it by itself, `bcd join --attestor x509pop` by hand.
 *
 * The evidence (bc_x509pop_evidence) is made fresh for every round, with the time of
 * that round: the server accepts it only within its window. The identity it replaces
 * is kept until the answer is verified, and replaced in the renewal's crash-safe order:
 * a refused or failed re-join leaves the old identity as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/producer.h"
#include "bc/clock.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bc/x509pop.h"

/* The producer's round 1: ctx is the identity being re-joined. */
static int pop_evidence(void *ctx, EVP_PKEY *node_key, const uint8_t csr_sha256[static 32],
                        uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
	const struct bcd_identity *id = ctx;
	struct bc_signer s;
	char *json = NULL;
	int rc;

	(void)node_key; /* the proof is by the old key; the CSR (of node_key) is bound by hash */
	*out = NULL;
	*outlen = 0;
	/* signed wherever the key is (a file or the TPM), checked under its public half */
	if ((rc = bcd_nodekey_signer(&id->nk, &s)) != 0 ||
	    (rc = bc_x509pop_evidence(id->chain, id->chain_lens, id->n_chain, &s, id->node_id,
	                              csr_sha256, bc_now_ms(), &json)) != 0) {
		snprintf(err, errlen, "cannot sign with the node key (%s)", bc_err_str(rc));
		return rc;
	}
	*out = (uint8_t *)json;
	*outlen = strlen(json);
	return 0;
}

/* The role to ask for: the certificate's, except that node-tenant asks for node (the
 * control plane puts the tenant restriction back). */
static const char *rejoin_role(const struct bcd_identity *id)
{
	return strcmp(id->role, BC_ROLE_NODE_TENANT) == 0 ? BC_ROLE_NODE : id->role;
}

/* The answer must be for this node: anything else replaces nothing. */
static int check_answer(const struct bcd_identity *id, const struct bc_join_answer *a,
                        struct bcd_msg *m)
{
	if (a->state != BC_JOIN_JOINED || a->n_chain == 0 || strcmp(a->node_id, id->node_id) != 0) {
		bcd_say(m,
		        "the control plane answered the " BC_WIRE_ATTESTOR_X509POP
		        " re-join of %s for node %.64s; "
		        "nothing was replaced: report this to the operator",
		        id->node_id, a->node_id);
		return BC_ERR_VERIFY;
	}
	return 0;
}

int bcd_x509pop_rejoin(const struct bcd_config *cfg, struct bc_client_pins *pins,
                       struct bcd_identity *id, int wait_pending, struct bcd_msg *m)
{
	struct bcd_producer pr = {
	    .attestor = BC_WIRE_ATTESTOR_X509POP, .ctx = id, .evidence = pop_evidence};
	struct bcd_join_req r = {.attestor = BC_WIRE_ATTESTOR_X509POP,
	                         .role = rejoin_role(id),
	                         .token = NULL,
	                         .producer = &pr,
	                         .wait_pending = wait_pending};
	struct bc_join_answer a;
	struct bcd_nodekey next;
	uint8_t *csr = NULL;
	int rc, committed = 0;

	memset(&a, 0, sizeof(a));
	if ((rc = bcd_next_key(cfg, id, &next, m)) != 0)
		return rc;
	r.key = next.key;
	if ((rc = bcd_nodekey_csr(&next, BC_WIRE_CSR_CN, &csr, &r.csr_len, m)) != 0)
		goto out;
	r.csr = csr;
	if ((rc = bcd_join_request(cfg, pins, &r, &a, m)) != 0) {
		if (rc == BC_ERR_DENIED)
			bcd_say(m, "%s", BCD_X509POP_REFUSED_HINT);
		goto out;
	}
	if ((rc = check_answer(id, &a, m)) != 0)
		goto out;
	/* from here the files move: node.key.next is the new certificate's key */
	committed = 1;
	/* the same node: when it first joined stays */
	rc = bcd_identity_replace(cfg, &a, id->joined_at, m);
out:
	if (!committed)
		bcd_next_key_drop(cfg);
	else
		rc = bcd_identity_reload(cfg, id, rc, m);
	/* the answer's pins-update, as a token join's and a renewal's: a node re-joined
	 * across a join key rotation pins the keys that sign from now on */
	if (rc == 0)
		bcd_pins_learn_answer(cfg, pins, &a);
	free(csr);
	bcd_nodekey_free(&next);
	bc_join_answer_free(&a);
	return rc;
}
