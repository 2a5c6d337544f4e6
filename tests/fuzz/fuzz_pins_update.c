/* libFuzzer target: bc_client_pins_update_open and bc_client_pins_apply on arbitrary
 * bytes with fixed pins, and bc_client_pins_set_from_json. The first byte chooses:
 *   bit 0 clear: the rest is a statement as it came in an answer (the envelope checks:
 *                nothing gets past the signature);
 *   bit 0 set:   the rest is a PinsUpdate body that the harness signs with the pinned
 *                key under pins-update, so the body checks are fuzzed too;
 *   bit 1:       the rest is also read as a pins file (JSON) over fresh pins.
 * Invariants: a refusal names a reason and leaves the update zeroed; an accepted one
 * applies, and the pins then have one active key of each use, the active signing key
 * being join_signing; the pins' JSON reads back to the same set. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bettercompute/join/v1/join.pb-c.h"

#define TD "fuzz.test"

static struct {
	bc_pki *pki;
	struct bc_signer signer;
	char *pins_json;
} F;

static void init(void)
{
	char *sig = NULL, *enc = NULL;
	json_t *j;

	if (bc_pki_generate(TD, &F.pki) != 0 || bc_pubkey_to_pem(F.pki->join_signing, &sig) != 0 ||
	    bc_pubkey_to_pem(F.pki->join_encryption, &enc) != 0 ||
	    bc_signer_init(&F.signer, F.pki->join_signing, NULL, NULL) != 0)
		abort();
	j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "server", "http://127.0.0.1:1",
	              "joinSigningKeyId", F.pki->join_signing_kid, "joinSigningKey", sig,
	              "joinEncryptionKey", enc, "trustDomain", TD);
	if (j == NULL || (F.pins_json = json_dumps(j, 0)) == NULL)
		abort();
	json_decref(j);
	free(sig);
	free(enc);
}

static void fresh_pins(struct bc_client_pins *p)
{
	char err[256];

	if (bc_client_pins_from_json(F.pins_json, strlen(F.pins_json), p, err, sizeof(err)) != 0)
		abort();
}

static uint8_t *signed_body(const uint8_t *p, size_t n, size_t *len)
{
	Bettercompute__Join__V1__SignedResponse sr = BETTERCOMPUTE__JOIN__V1__SIGNED_RESPONSE__INIT;
	uint8_t sig[BC_SIG_LEN], *out;

	if (bc_es256_sign(&F.signer, BC_PURPOSE_PINS_UPDATE, p, n, sig) != 0)
		abort();
	sr.body.data = (uint8_t *)p;
	sr.body.len = n;
	sr.signature.data = sig;
	sr.signature.len = sizeof(sig);
	sr.key_id = F.pki->join_signing_kid;
	*len = bettercompute__join__v1__signed_response__get_packed_size(&sr);
	if ((out = malloc(*len + 1)) == NULL)
		abort();
	bettercompute__join__v1__signed_response__pack(&sr, out);
	return out;
}

/* One active key of each use, and join_signing the active signing one. */
static void check_pins(const struct bc_client_pins *p)
{
	int sign = 0, enc = 0;

	for (size_t i = 0; i < p->n_keys; i++) {
		if (p->keys[i].state != BC_JOIN_KEY_ACTIVE)
			continue;
		if (p->keys[i].use == BC_JOIN_KEY_SIGNING) {
			sign++;
			if (strcmp(p->keys[i].kid, p->join_signing_kid) != 0)
				abort();
		} else {
			enc++;
		}
	}
	if (sign != 1 || enc != 1 || p->n_keys > BC_JOIN_KEYS_MAX)
		abort();
}

static void roundtrip(const struct bc_client_pins *p)
{
	struct bc_client_pins q;
	char *json = NULL, err[256];
	int stale;

	if (bc_client_pins_set_to_json(p, "base", &json) != 0)
		abort();
	fresh_pins(&q);
	if (bc_client_pins_set_from_json(&q, json, strlen(json), "base", &stale, err,
	                                 sizeof(err)) != 0 ||
	    stale || q.n_keys != p->n_keys || q.sequence != p->sequence ||
	    strcmp(q.join_signing_kid, p->join_signing_kid) != 0)
		abort();
	free(json);
	bc_client_pins_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct bc_pins_update zero;
	struct bc_client_pins p;
	struct bc_pins_update u;
	const char *reason = NULL;
	uint8_t *st = NULL;
	const uint8_t *in;
	size_t len;
	char err[512];
	int rc, changed, stale;

	if (F.pki == NULL)
		init();
	if (size == 0)
		return 0;
	fresh_pins(&p);
	if (data[0] & 2) {
		rc = bc_client_pins_set_from_json(&p, (const char *)data + 1, size - 1, "base",
		                                  &stale, err, sizeof(err));
		if (rc == 0)
			check_pins(&p);
		bc_client_pins_free(&p);
		fresh_pins(&p);
	}
	if (data[0] & 1) {
		st = signed_body(data + 1, size - 1, &len);
		in = st;
	} else {
		in = data + 1;
		len = size - 1;
	}
	rc = bc_client_pins_update_open(&p, in, len, &u, &reason, err, sizeof(err));
	if (rc != 0) {
		if (memcmp(&u, &zero, sizeof(u)) != 0 || (rc != BC_ERR_NOMEM && reason == NULL))
			abort();
	} else {
		if (bc_client_pins_apply(&p, &u, &changed) != 0)
			abort();
		check_pins(&p);
		roundtrip(&p);
		bc_pins_update_free(&u);
	}
	free(st);
	bc_client_pins_free(&p);
	return 0;
}
