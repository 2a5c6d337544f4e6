#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bct_discovery.h"

#define MIN_MS (60LL * 1000)

void bct_site_node(struct bct_cp *on, const char *tenant, const char *site, struct bct_site_node *s)
{
	struct bct_token_opts to = {.tenant = tenant, .site = site, .role = "site"};
	char *t = bct_token(on, &to, NULL);
	struct bct_join_opts jo = {.token = t, .role = "site"};

	memset(s, 0, sizeof(*s));
	assert_int_equal(bc_key_generate(&s->key), 0);
	jo.key = s->key;
	assert_int_equal(bct_join(on, &jo, &s->ans), 0);
	free(t);
	assert_int_equal(bc_signer_init(&s->signer, s->key, NULL, NULL), 0);
	s->c = (struct bc_site_caller){.chain = (const uint8_t *const *)s->ans.chain,
	                               .chain_lens = s->ans.chain_lens,
	                               .n_chain = s->ans.n_chain,
	                               .signer = &s->signer,
	                               .site_id = site};
}

void bct_site_node_free(struct bct_site_node *s)
{
	bc_join_answer_free(&s->ans);
	EVP_PKEY_free(s->key);
}

int bct_lease(struct bct_cp *on, struct bct_site_node *s, enum bc_lease_call k, uint32_t ttl,
              struct bc_lease_answer *a)
{
	char err[256];
	int rc = bc_client_lease(&on->pins, &s->c, k, s->epoch, ttl, a, err, sizeof(err));
	if (rc == 0 && a->held)
		s->epoch = a->epoch;
	return rc;
}

char *bct_fetch_token(struct bct_cp *on, struct bct_site_node *s, const char *wf, const char *mac,
                      int *rc)
{
	char err[256], *tok = NULL;
	int64_t not_after = 0;

	*rc = bc_client_fetch_secret(&on->pins, &s->c, wf, mac, &tok, &not_after, err, sizeof(err));
	if (*rc == 0) {
		int64_t now = bc_now_ms();
		assert_true(not_after > now && not_after <= now + 15 * MIN_MS + 2000);
	}
	return tok;
}

void bct_commission(struct bct_cp *on, const char *tenant, const char *site, const char *mac,
                    const char *uuid, const char *node, char wf[64])
{
	char data[512];

	assert_int_equal(bc_new_id("wf", wf, 64), 0);
	snprintf(data, sizeof(data),
	         "{\"bootEntry\":{\"siteId\":\"%s\",\"mac\":\"%s\"%s%s%s%s%s%s,\"notAfter\":%lld}}",
	         site, mac, uuid ? ",\"productUuid\":\"" : "", uuid ? uuid : "", uuid ? "\"" : "",
	         node ? ",\"nodeId\":\"" : "", node ? node : "", node ? "\"" : "",
	         (long long)(bc_now_ms() + 60 * MIN_MS));
	bc_param w[] = {BC_TEXT(wf), BC_TEXT(data), BC_TEXT(node), BC_TEXT(tenant)};
	assert_int_equal(
	    bct_exec(on,
	             "INSERT INTO workflows (id, tenant_id, node_id, kind, state, data, "
	             "created_at, updated_at) VALUES ($1, $4, $3, 'commission', "
	             "'running', $2, 1, 1)",
	             w, 4),
	    0);
}

struct bct_assertion bct_vouch(struct bct_site_node *s, const char *mac, const char *wf,
                               const char *uuid)
{
	int64_t now = bc_now_ms();
	return (struct bct_assertion){.site = s->c.site_id,
	                              .signer = s->ans.node_id,
	                              .epoch = s->epoch,
	                              .mac = mac,
	                              .uuid = uuid,
	                              .wf = wf,
	                              .issued_at = now,
	                              .not_after = now + 10 * MIN_MS,
	                              .key = s->key};
}

uint8_t *bct_assertion_sign(const struct bct_assertion *a, size_t *len)
{
	struct bc_discovery_fields f = {.site_id = a->site,
	                                .signer_node_id = a->signer,
	                                .lease_epoch = a->epoch,
	                                .mac = a->mac,
	                                .ip = "192.0.2.10",
	                                .product_uuid = a->uuid,
	                                .workflow_id = a->wf,
	                                .issued_at_ms = a->issued_at,
	                                .not_after_ms = a->not_after};
	struct bc_signer s;
	uint8_t *out = NULL;
	assert_int_equal(bc_signer_init(&s, a->key, NULL, NULL), 0);
	assert_int_equal(bc_client_sign_assertion(&f, &s, &out, len), 0);
	return out;
}

int bct_ramdisk_join(struct bct_cp *on, const struct bct_ramdisk *r, struct bc_join_answer *ans)
{
	struct bct_join_opts jo = {.attestor = "discovery",
	                           .role = "ramdisk",
	                           .token = r->token,
	                           .attestation = r->att,
	                           .attestation_len = r->att_len,
	                           .mac = r->mac,
	                           .product_uuid = r->uuid,
	                           .csr = r->csr,
	                           .csr_len = r->csr_len,
	                           .key = r->key,
	                           .serial = r->serial};
	int rc = bct_join(on, &jo, ans);
	if (rc == BC_ERR_DENIED && getenv("BCT_LOG"))
		fprintf(stderr, "refused: %s\n", bct_last_reason(on));
	return rc;
}

void bct_vouched(struct bct_cp *on, struct bct_site_node *s, const char *wf, const char *mac,
                 const char *uuid, struct bct_vouched *v)
{
	int rc;

	memset(v, 0, sizeof(*v));
	v->token = bct_fetch_token(on, s, wf ? wf : "", mac, &rc);
	assert_int_equal(rc, 0);
	struct bct_assertion a = bct_vouch(s, mac, wf != NULL && wf[0] ? wf : NULL, uuid);
	v->att = bct_assertion_sign(&a, &v->att_len);
	v->r = (struct bct_ramdisk){
	    .token = v->token, .att = v->att, .att_len = v->att_len, .mac = mac, .uuid = uuid};
}

void bct_vouched_free(struct bct_vouched *v)
{
	free(v->token);
	free(v->att);
	memset(v, 0, sizeof(*v));
}

void bct_key_csr(EVP_PKEY **key, uint8_t **csr, size_t *len)
{
	assert_int_equal(bc_key_generate(key), 0);
	assert_int_equal(bc_csr_make(*key, BC_WIRE_CSR_CN, csr, len), 0);
}
