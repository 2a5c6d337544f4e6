/* JoinService/Renew in-process over loopback HTTP: a good renewal, and each refusal
 * by name with the same bytes on the wire. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "server/connect.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bctest.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/join.h"
#include "store/migrations.h"

static struct bct_cp cp;
static char pool_id[64];

struct joined {
	EVP_PKEY *key;
	struct bc_join_answer ans;
};

static void join_one(struct joined *j, const char *uuid)
{
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, NULL);

	assert_int_equal(bc_key_generate(&j->key), 0);
	struct bct_join_opts jo = {.token = t, .key = j->key, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &jo, &j->ans), 0);
	free(t);
}

static void drop(struct joined *j)
{
	bc_join_answer_free(&j->ans);
	EVP_PKEY_free(j->key);
}

struct renew_opts {
	const uint8_t *leaf;
	size_t leaf_len;
	EVP_PKEY *signer;       /* signs the proof */
	const char *node_id;    /* in the proof */
	int64_t client_time_ms; /* 0: now */
	int corrupt_proof;
	int key_attestation;
	int check_only; /* the CSR is then for signer, the leaf's key, unless other_key */
	int other_key;
};

/* A packed RenewRequest (*wire, malloc'd) for a fresh next key (*next) and its CSR
 * (*csr, malloc'd). */
static void renew_request(const struct renew_opts *o, EVP_PKEY **next, uint8_t **csr_out,
                          size_t *csr_len_out, uint8_t **wire_out, size_t *wire_len_out)
{
	Bettercompute__Join__V1__RenewRequest rq = BETTERCOMPUTE__JOIN__V1__RENEW_REQUEST__INIT;
	Bettercompute__Join__V1__TpmKeyAttestation ka =
	    BETTERCOMPUTE__JOIN__V1__TPM_KEY_ATTESTATION__INIT;
	ProtobufCBinaryData chain[1];
	uint8_t *csr = NULL, d[32], sig[64];
	size_t csr_len = 0;
	bc_buf b;

	assert_int_equal(bc_key_generate(next), 0);
	assert_int_equal(bc_csr_make(o->check_only && !o->other_key ? o->signer : *next,
	                             BC_WIRE_CSR_CN, &csr, &csr_len),
	                 0);
	assert_int_equal(bc_sha256(csr, csr_len, d), 0);
	int64_t t = o->client_time_ms ? o->client_time_ms : bc_now_ms();
	bc_buf_init(&b, 0);
	assert_int_equal(bc_buf_put(&b, d, 32), 0);
	assert_int_equal(bc_buf_put_cstr(&b, o->node_id), 0);
	assert_int_equal(bc_buf_put_u64(&b, (uint64_t)t), 0);
	assert_int_equal(bct_sign(o->signer, BC_PURPOSE_RENEW, b.p, b.len, sig), 0);
	bc_buf_free(&b);
	if (o->corrupt_proof)
		sig[10] ^= 1;
	chain[0].data = (uint8_t *)o->leaf;
	chain[0].len = o->leaf_len;
	rq.chain = chain;
	rq.n_chain = 1;
	rq.csr.data = csr;
	rq.csr.len = csr_len;
	rq.client_time_ms = t;
	rq.proof.data = sig;
	rq.proof.len = 64;
	if (o->key_attestation)
		rq.key_attestation = &ka;
	rq.check_only = o->check_only != 0;
	*wire_len_out = bettercompute__join__v1__renew_request__get_packed_size(&rq);
	*wire_out = malloc(*wire_len_out);
	bettercompute__join__v1__renew_request__pack(&rq, *wire_out);
	*csr_out = csr;
	*csr_len_out = csr_len;
}

/* Sends a RenewRequest for a fresh next key; *next receives it. */
static int renew(const struct renew_opts *o, long *status, uint8_t **body, size_t *len,
                 EVP_PKEY **next, uint8_t **csr_out, size_t *csr_len_out)
{
	struct bc_client_reply r = {0};
	uint8_t *csr = NULL, *wire = NULL;
	size_t csr_len = 0, wire_len = 0;
	char err[256];
	int rc;

	renew_request(o, next, &csr, &csr_len, &wire, &wire_len);
	rc = bc_client_post(&cp.pins, BC_WIRE_PATH_RENEW, wire, wire_len, &r, err, sizeof(err));
	*status = r.status;
	*body = r.body;
	*len = r.len;
	free(wire);
	if (csr_out) {
		*csr_out = csr;
		*csr_len_out = csr_len;
	} else {
		free(csr);
	}
	return rc;
}

static void expect_refused(const struct renew_opts *o, const char *reason, const char *node_id)
{
	long status = 0;
	uint8_t *body = NULL;
	size_t len = 0;
	EVP_PKEY *next = NULL;
	bc_param p[] = {BC_TEXT(reason), BC_TEXT(node_id)};
	int64_t before = bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = "
	                           "'security.renew.refused' AND data LIKE '%\"' || $1 || '\"%' "
	                           "AND subject = $2",
	                           p, 2);
	int64_t certs = bct_count(&cp, "SELECT COUNT(*) FROM node_certs", NULL, 0);
	uint64_t hooked = bct_refusal_total(&cp);
	struct bct_refusal r;

	assert_int_equal(renew(o, &status, &body, &len, &next, NULL, NULL), 0);
	assert_int_equal(status, 403);
	assert_int_equal(len, strlen(bc_connect_renew_refused));
	assert_memory_equal(body, bc_connect_renew_refused, len);
	/* on_refusal saw it, as join.h promises for every refusal, by name and node */
	assert_int_equal(bct_refusal_total(&cp), hooked + 1);
	r = bct_last_refusal(&cp);
	assert_string_equal(r.attestor, "renew");
	assert_string_equal(r.reason, reason);
	assert_string_equal(r.node_id, node_id);
	assert_int_equal(r.count, 1);
	assert_false(r.summarized);
	/* the reason reached the node owner's event, and nothing was issued */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = "
	                           "'security.renew.refused' AND data LIKE '%\"' || $1 || '\"%' "
	                           "AND subject = $2",
	                           p, 2),
	                 before + 1);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM node_certs", NULL, 0), certs);
	free(body);
	EVP_PKEY_free(next);
}

/* A refusal no credential backs (no proof by the leaf's key, or a leaf that is not
 * ours): the same bytes on the wire and nothing issued; its event is a summary that
 * names no node. */
static void expect_refused_unattributed(const struct renew_opts *o, const char *reason)
{
	long status = 0;
	uint8_t *body = NULL;
	size_t len = 0;
	EVP_PKEY *next = NULL;
	int64_t certs = bct_count(&cp, "SELECT COUNT(*) FROM node_certs", NULL, 0);
	uint64_t hooked = bct_refusal_total(&cp);
	struct bct_refusal r;

	assert_int_equal(renew(o, &status, &body, &len, &next, NULL, NULL), 0);
	assert_int_equal(status, 403);
	assert_int_equal(len, strlen(bc_connect_renew_refused));
	assert_memory_equal(body, bc_connect_renew_refused, len);
	/* on_refusal saw it too, summarized and naming no node */
	assert_int_equal(bct_refusal_total(&cp), hooked + 1);
	r = bct_last_refusal(&cp);
	assert_string_equal(r.attestor, "renew");
	assert_string_equal(r.reason, reason);
	assert_string_equal(r.node_id, "");
	assert_true(r.summarized);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM node_certs", NULL, 0), certs);
	free(body);
	EVP_PKEY_free(next);
}

static int64_t proof_summaries(const char *count)
{
	char like[64];
	snprintf(like, sizeof(like), "%%\"count\":%s%%", count);
	bc_param p[] = {BC_TEXT(like)};
	return bct_count(&cp,
	                 "SELECT COUNT(*) FROM events WHERE type = 'security.renew.refused' AND "
	                 "subject IS NULL AND data LIKE '%\"renew-proof\"%' AND "
	                 "data LIKE '%\"summarized\":true%' AND data LIKE $1",
	                 p, 1);
}

static void test_renew_issues_the_next_certificate(void **state)
{
	struct joined j;
	struct bc_join_answer ans;
	struct bc_node_identity id;
	long status;
	uint8_t *body = NULL, *csr = NULL;
	size_t len, csr_len;
	EVP_PKEY *next = NULL;
	char err[256];
	(void)state;

	join_one(&j, NULL);
	struct renew_opts o = {.leaf = j.ans.chain[0],
	                       .leaf_len = j.ans.chain_lens[0],
	                       .signer = j.key,
	                       .node_id = j.ans.node_id};
	bc_store *s = bc_server_store(cp.srv);
	uint64_t before = bc_store_statements(s);
	assert_int_equal(renew(&o, &status, &body, &len, &next, &csr, &csr_len), 0);
	assert_int_equal(status, 200);
	/* the leaf's row, the certificate issued for the CSR with the count of its
	 * successors, the leaf used and its node's other certificates superseded, the new
	 * certificate, the node's current one, the event and the audit row; PostgreSQL
	 * also locks the node's row (docs/performance.md) */
	assert_int_equal(bc_store_statements(s) - before,
	                 bc_store_engine(s) == BC_STORE_SQLITE ? 8 : 9);
	assert_int_equal(bc_client_open_join_response_csr(&cp.pins, body, len, csr, csr_len, &ans,
	                                                  err, sizeof(err)),
	                 0);
	assert_string_equal(ans.node_id, j.ans.node_id);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_string_equal(id.role, "node");
	bc_node_identity_clear(&id);
	bc_param p[] = {BC_TEXT(j.ans.node_id)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "generation = 1",
	                           p, 1),
	                 2);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.renewed' "
	                           "AND subject = $1",
	                           p, 1),
	                 1);
	/* the node row names the renewed certificate as its current one */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes n JOIN node_certs c ON "
	                           "c.serial = n.cert_serial AND c.not_after = n.cert_not_after "
	                           "WHERE n.id = $1 AND c.predecessor IS NOT NULL",
	                           p, 1),
	                 1);

	/* the renewed certificate renews in turn, with the next key */
	struct renew_opts o2 = {.leaf = ans.chain[0],
	                        .leaf_len = ans.chain_lens[0],
	                        .signer = next,
	                        .node_id = ans.node_id};
	EVP_PKEY *next2 = NULL;
	free(body);
	assert_int_equal(renew(&o2, &status, &body, &len, &next2, NULL, NULL), 0);
	assert_int_equal(status, 200);
	free(body);
	free(csr);
	EVP_PKEY_free(next);
	EVP_PKEY_free(next2);
	bc_join_answer_free(&ans);
	drop(&j);
}

static void test_each_refusal(void **state)
{
	struct joined j, k;
	(void)state;

	join_one(&j, NULL);
	const char *node = j.ans.node_id;
	struct renew_opts o = {.leaf = j.ans.chain[0],
	                       .leaf_len = j.ans.chain_lens[0],
	                       .signer = j.key,
	                       .node_id = node};

	/* bad proof: another key, a corrupted signature, another node id in the proof.
	 * A node's certificate is no secret: these name no node and are summarized, the
	 * first at once, the rest of the minute counted into the next one */
	join_one(&k, NULL);
	int64_t before = proof_summaries("1");
	struct renew_opts bad = o;
	bad.signer = k.key;
	expect_refused_unattributed(&bad, "renew-proof");
	assert_int_equal(proof_summaries("1"), before + 1);
	bad = o;
	bad.corrupt_proof = 1;
	expect_refused_unattributed(&bad, "renew-proof");
	bad = o;
	bad.node_id = k.ans.node_id;
	expect_refused_unattributed(&bad, "renew-proof");
	assert_int_equal(proof_summaries("1"), before + 1);
	bc_clock_set_offset_ms(bc_clock_offset_ms() + 61000);
	bad = o;
	bad.signer = k.key;
	expect_refused_unattributed(&bad, "renew-proof");
	assert_int_equal(proof_summaries("3"), 1);
	bc_clock_set_offset_ms(bc_clock_offset_ms() - 61000);

	/* stale client time: properly signed, two minutes off database time */
	bad = o;
	bad.client_time_ms = bc_now_ms() - 120000;
	expect_refused(&bad, "renew-client-time", node);
	bad.client_time_ms = bc_now_ms() + 120000;
	expect_refused(&bad, "renew-client-time", node);

	/* not the current row: a certificate of ours for that node that was never issued */
	{
		const bc_pki *pki = bc_server_pki(cp.srv);
		struct bc_node_cert_req req = {
		    .node_id = node, .role = "node", .pub = j.key, .not_before_ms = bc_now_ms()};
		uint8_t *der = NULL;
		size_t der_len;
		char serial[33];
		int64_t na;
		assert_int_equal(bc_pki_issue_node_cert(pki, &req, &der, &der_len, serial, &na), 0);
		bad = o;
		bad.leaf = der;
		bad.leaf_len = der_len;
		expect_refused(&bad, "renew-not-current", node);

		/* the same form signed by another node CA, naming the node, with a proof by
		 * its own key: not ours (no row holds it, the CA did not sign it), so
		 * renew-malformed and summarized, also with a CSR out of shape */
		bc_pki *other = NULL;
		uint8_t *forged = NULL;
		size_t forged_len;
		assert_int_equal(bc_pki_generate(pki->trust_domain, &other), 0);
		assert_int_equal(
		    bc_pki_issue_node_cert(other, &req, &forged, &forged_len, serial, &na), 0);
		bad = o;
		bad.leaf = forged;
		bad.leaf_len = forged_len;
		expect_refused_unattributed(&bad, "renew-malformed");
		bad.check_only = 1;
		bad.other_key = 1;
		expect_refused_unattributed(&bad, "renew-malformed");
		bc_pki_free(other);
		free(forged);

		/* unknown and malformed statements, recorded as rows so only the statement is wrong
		 */
		const char *cases[][2] = {
		    {"urn:bc:unknown:thing", "key-statement-unknown"},
		    {BC_WIRE_TPM_AK_URN_SHA256 "zz", "tpm-ak-uri"},
		    {BC_WIRE_TPM_AK_URN_SHA256
		     "000b0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		     "key-attestation-missing"},
		};
		for (size_t i = 0; i < 3; i++) {
			const char *stmt[1] = {cases[i][0]};
			uint8_t *d2 = NULL, h[32];
			size_t l2;
			char s2[33], hexsha[65];
			req.statements = stmt;
			req.n_statements = 1;
			assert_int_equal(bc_pki_issue_node_cert(pki, &req, &d2, &l2, s2, &na), 0);
			assert_int_equal(bc_sha256(d2, l2, h), 0);
			bc_hex_encode_to(h, 32, hexsha);
			bc_param p[] = {BC_TEXT(s2),     BC_TEXT(node),       BC_BLOB(d2, l2),
			                BC_TEXT(hexsha), BC_INT(bc_now_ms()), BC_INT(na)};
			assert_int_equal(
			    bct_exec(&cp,
			             "INSERT INTO node_certs (serial, node_id, "
			             "generation, der, der_sha256, not_before, "
			             "not_after, created_at) VALUES ($1, $2, 1, $3, $4, "
			             "$5, $6, $5)",
			             p, 6),
			    0);
			bad = o;
			bad.leaf = d2;
			bad.leaf_len = l2;
			expect_refused(&bad, cases[i][1], node);
			free(d2);
		}
		free(der);
	}

	/* expired at database time */
	bc_param p[] = {BC_TEXT(node), BC_INT(bc_now_ms() - 1000)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET not_after = $2 WHERE node_id = $1", p, 2), 0);
	expect_refused(&o, "renew-expired", node);
	bc_param p2[] = {BC_TEXT(node), BC_INT(bc_now_ms() + 3600000)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET not_after = $2 WHERE node_id = $1", p2, 2), 0);

	/* revoked */
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET revoked_at = $2 WHERE node_id = $1", p, 2), 0);
	expect_refused(&o, "renew-revoked", node);
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET revoked_at = NULL WHERE node_id = $1", p, 1), 0);

	/* retired */
	assert_int_equal(bct_exec(&cp, "UPDATE nodes SET state = 'retired' WHERE id = $1", p, 1),
	                 0);
	expect_refused(&o, "renew-retired", node);
	assert_int_equal(bct_exec(&cp, "UPDATE nodes SET state = 'adopted' WHERE id = $1", p, 1),
	                 0);

	/* older generation: the node was reclaimed, its old leaf belongs to generation 1 */
	assert_int_equal(bct_exec(&cp, "UPDATE nodes SET generation = 2 WHERE id = $1", p, 1), 0);
	expect_refused(&o, "renew-generation", node);
	drop(&j);
	drop(&k);
}

static void test_reclaimed_node_old_leaf_refused(void **state)
{
	const char *uuid = "6b1d0c3e-3333-4000-8000-000000000003";
	struct joined j;
	struct bc_join_answer a2;
	(void)state;

	join_one(&j, uuid);
	struct bct_token_opts tr = {.pool = pool_id, .allow_reclaim = 1};
	char *t = bct_token(&cp, &tr, NULL);
	struct bct_join_opts jo = {.token = t, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &jo, &a2), 0);
	assert_string_equal(a2.node_id, j.ans.node_id);
	struct renew_opts o = {.leaf = j.ans.chain[0],
	                       .leaf_len = j.ans.chain_lens[0],
	                       .signer = j.key,
	                       .node_id = j.ans.node_id};
	expect_refused(&o, "renew-generation", j.ans.node_id);
	bc_join_answer_free(&a2);
	free(t);
	drop(&j);
}

/* ---- the lineage ---- */

/* A renewal of a's certificate, with a's key, for a fresh next key: the successor in
 * *next (its key and answer). */
static int renew_to(const struct joined *a, struct joined *next)
{
	memset(next, 0, sizeof(*next));
	assert_int_equal(bc_key_generate(&next->key), 0);
	return bct_renew(&cp, &a->ans, a->key, next->key, &next->ans);
}

static struct renew_opts opts_of(const struct joined *a)
{
	return (struct renew_opts){.leaf = a->ans.chain[0],
	                           .leaf_len = a->ans.chain_lens[0],
	                           .signer = a->key,
	                           .node_id = a->ans.node_id};
}

static int64_t node_certs(const char *node)
{
	bc_param p[] = {BC_TEXT(node)};
	return bct_count(&cp, "SELECT COUNT(*) FROM node_certs WHERE node_id = $1", p, 1);
}

/* line with every der_hex (the DER as hex, a column until migration 8) read as
 * encode(der, 'hex'), the same text from today's column; malloc'd. */
static char *der_hex_now(const char *line)
{
	const char *from = "der_hex", *to = "encode(der, 'hex')";
	size_t n = 0;
	char *out, *o;

	for (const char *p = line; (p = strstr(p, from)) != NULL; p += strlen(from))
		n++;
	assert_non_null(out = malloc(strlen(line) + n * strlen(to) + 1));
	o = out;
	for (const char *p = line, *q; *p; p = q + strlen(from)) {
		if ((q = strstr(p, from)) == NULL) {
			strcpy(o, p);
			return out;
		}
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		strcpy(o, to);
		o += strlen(to);
	}
	*o = 0;
	return out;
}

/* Runs the UPDATE statements of migration version (what fills the columns it adds for
 * the rows stored before it), on today's columns. */
static void run_migration_updates(int64_t version)
{
	const struct bc_migration *m = NULL;
	char *sql, *line, *now, *save = NULL;

	for (size_t i = 0; i < bc_migrations_count; i++)
		if (bc_migrations[i].version == version)
			m = &bc_migrations[i];
	assert_non_null(m);
	assert_non_null(sql = strdup(m->sql));
	for (line = strtok_r(sql, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "UPDATE ", 7) != 0)
			continue;
		line[strlen(line) - 1] = 0; /* its ';' */
		now = der_hex_now(line);
		assert_int_equal(bct_exec(&cp, now, NULL, 0), 0);
		free(now);
	}
	free(sql);
}

/* A certificate stored before its key and role were columns is read from its DER,
 * and migration 5 fills the columns with what its issuance now writes. */
static void test_a_certificate_stored_without_its_key_renews(void **state)
{
	struct joined j, s, t;
	uint8_t point[65];
	char hex[131];
	(void)state;

	join_one(&j, NULL);
	assert_int_equal(bc_key_to_point(j.key, point), 0);
	bc_hex_encode_to(point, sizeof(point), hex);
	bc_param p[] = {BC_TEXT(j.ans.node_id), BC_TEXT(hex)};
	/* issued with them */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "key_point = $2 AND role = 'node'",
	                           p, 2),
	                 1);
	assert_int_equal(bct_exec(&cp,
	                          "UPDATE node_certs SET key_point = NULL, role = NULL WHERE "
	                          "node_id = $1",
	                          p, 1),
	                 0);
	run_migration_updates(5);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "key_point = $2 AND role = 'node'",
	                           p, 2),
	                 1);
	/* without them, the DER is read as before */
	assert_int_equal(bct_exec(&cp,
	                          "UPDATE node_certs SET key_point = NULL, role = NULL WHERE "
	                          "node_id = $1",
	                          p, 1),
	                 0);
	assert_int_equal(renew_to(&j, &s), 0);
	/* and with them, the successor's */
	assert_int_equal(renew_to(&s, &t), 0);
	struct renew_opts o = opts_of(&j);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	drop(&j);
	drop(&s);
	drop(&t);
}

/* A key stolen with its certificate renews no more once the node moved on: the
 * successor renewed, and the older certificate is refused. */
static void test_superseded_certificate_cannot_renew(void **state)
{
	struct joined j, s, t, u;
	(void)state;

	join_one(&j, NULL);
	assert_int_equal(renew_to(&j, &s), 0);
	/* the successor is used: renewed with */
	assert_int_equal(renew_to(&s, &t), 0);
	struct renew_opts o = opts_of(&j);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	/* and so on down the line; the current one goes on */
	assert_int_equal(renew_to(&t, &u), 0);
	o = opts_of(&s);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	o = opts_of(&j);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	drop(&j);
	drop(&s);
	drop(&t);
	drop(&u);
}

static int64_t renewed_events(const char *node)
{
	bc_param p[] = {BC_TEXT(node)};
	return bct_count(
	    &cp, "SELECT COUNT(*) FROM events WHERE type = 'node.renewed' AND subject = $1", p, 1);
}

/* check_only (bcd doctor): a current leaf is answered with itself, signed, and nothing
 * is issued, used or recorded (the leaf renews as before); a leaf no longer current is
 * refused with the renewal's reason and bytes, the event marked checkOnly; a check
 * whose CSR is not for the leaf's key, or whose proof fails, is refused the same. */
static void test_check_only_answers_the_leaf_and_issues_nothing(void **state)
{
	struct joined j, s, t;
	struct bc_join_answer a;
	uint8_t *body = NULL, *csr = NULL;
	size_t len = 0, csr_len = 0;
	long status = 0;
	EVP_PKEY *next = NULL;
	char err[256];
	(void)state;

	join_one(&j, NULL);
	struct renew_opts o = opts_of(&j);
	o.check_only = 1;
	int64_t certs = node_certs(j.ans.node_id), renewed = renewed_events(j.ans.node_id);
	assert_int_equal(renew(&o, &status, &body, &len, &next, &csr, &csr_len), 0);
	assert_int_equal(status, 200);
	assert_int_equal(bc_client_open_join_response_csr(&cp.pins, body, len, csr, csr_len, &a,
	                                                  err, sizeof(err)),
	                 0);
	assert_int_equal(a.state, BC_JOIN_JOINED);
	assert_string_equal(a.node_id, j.ans.node_id);
	assert_int_equal(a.chain_lens[0], j.ans.chain_lens[0]);
	assert_memory_equal(a.chain[0], j.ans.chain[0], a.chain_lens[0]);
	assert_int_equal(node_certs(j.ans.node_id), certs);
	assert_int_equal(renewed_events(j.ans.node_id), renewed);
	bc_join_answer_free(&a);
	free(body);
	free(csr);
	EVP_PKEY_free(next);
	/* the check used nothing up: two renewals of the lineage as before */
	assert_int_equal(renew_to(&j, &s), 0);
	assert_int_equal(renew_to(&s, &t), 0);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	bc_param p[] = {BC_TEXT(j.ans.node_id)};
	assert_true(bct_count(&cp,
	                      "SELECT COUNT(*) FROM events WHERE type = 'security.renew.refused' "
	                      "AND subject = $1 AND data LIKE '%\"checkOnly\":true%'",
	                      p, 1) >= 1);
	/* the current one checks; with a CSR of another key, or a bad proof, it is refused */
	o = opts_of(&t);
	o.check_only = 1;
	o.other_key = 1;
	expect_refused_unattributed(&o, "renew-malformed");
	o.other_key = 0;
	o.corrupt_proof = 1;
	expect_refused_unattributed(&o, "renew-proof");
	o.corrupt_proof = 0;
	assert_int_equal(bct_exec(&cp, "UPDATE nodes SET state = 'retired' WHERE id = $1", p, 1),
	                 0);
	expect_refused(&o, "renew-retired", j.ans.node_id);
	drop(&j);
	drop(&s);
	drop(&t);
}

#define REPLAYERS     6
#define REPLAYS_EACH  50
#define REPLAYS_TOTAL (REPLAYERS * REPLAYS_EACH)

/* One request's bytes, posted again and again by a thread; each answer's leaf hashed
 * (cmocka's asserts belong to the main thread). */
struct replayer {
	const uint8_t *wire, *csr;
	size_t wire_len, csr_len;
	int ok[REPLAYS_EACH];
	uint8_t leaf_sha256[REPLAYS_EACH][32];
};

static void *replay(void *arg)
{
	struct replayer *r = arg;
	char err[256];

	for (int i = 0; i < REPLAYS_EACH; i++) {
		struct bc_join_answer ans;
		struct bc_client_reply a = {0};
		r->ok[i] =
		    bc_client_post(&cp.pins, BC_WIRE_PATH_RENEW, r->wire, r->wire_len, &a, err,
		                   sizeof(err)) == 0 &&
		    a.status == 200 &&
		    bc_client_open_join_response_csr(&cp.pins, a.body, a.len, r->csr, r->csr_len,
		                                     &ans, err, sizeof(err)) == 0;
		if (r->ok[i]) {
			r->ok[i] =
			    bc_sha256(ans.chain[0], ans.chain_lens[0], r->leaf_sha256[i]) == 0;
			bc_join_answer_free(&ans);
		}
		free(a.body);
	}
	return NULL;
}

/* One RenewRequest sent 300 times, from 6 clients at once: 300 answers of the same
 * certificate, one minted. */
static void test_replayed_renew_request_answers_the_same_certificate(void **state)
{
	static struct replayer r[REPLAYERS];
	pthread_t th[REPLAYERS];
	struct joined j;
	EVP_PKEY *next = NULL;
	uint8_t *csr = NULL, *wire;
	size_t csr_len = 0, wire_len;
	(void)state;

	join_one(&j, NULL);
	struct renew_opts o = opts_of(&j);
	renew_request(&o, &next, &csr, &csr_len, &wire, &wire_len);
	for (int t = 0; t < REPLAYERS; t++) {
		r[t] = (struct replayer){
		    .wire = wire, .wire_len = wire_len, .csr = csr, .csr_len = csr_len};
		assert_int_equal(pthread_create(&th[t], NULL, replay, &r[t]), 0);
	}
	for (int t = 0; t < REPLAYERS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	for (int t = 0; t < REPLAYERS; t++)
		for (int i = 0; i < REPLAYS_EACH; i++) {
			assert_true(r[t].ok[i]);
			assert_memory_equal(r[t].leaf_sha256[i], r[0].leaf_sha256[0], 32);
		}
	/* the join's certificate and one successor; one node.renewed event */
	assert_int_equal(node_certs(j.ans.node_id), 2);
	bc_param p[] = {BC_TEXT(j.ans.node_id)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.renewed' "
	                           "AND subject = $1",
	                           p, 1),
	                 1);
	free(wire);
	free(csr);
	EVP_PKEY_free(next);
	drop(&j);
}

/* The agent renewed, crashed before saving the successor and renews again with a new
 * key: once. That re-issue retires the lost successor; a third key is refused. */
static void test_predecessor_renews_once_after_a_crash(void **state)
{
	struct joined j, lost, s2, t;
	(void)state;

	join_one(&j, NULL);
	assert_int_equal(renew_to(&j, &lost), 0);
	/* the crash: the successor never saved, the old certificate renews once more */
	assert_int_equal(renew_to(&j, &s2), 0);
	assert_true(s2.ans.chain_lens[0] != lost.ans.chain_lens[0] ||
	            memcmp(s2.ans.chain[0], lost.ans.chain[0], lost.ans.chain_lens[0]) != 0);
	assert_int_equal(node_certs(j.ans.node_id), 3);
	/* not twice, and a check (bcd doctor) of it says so too */
	struct renew_opts o = opts_of(&j);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	o.check_only = 1;
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	o.check_only = 0;
	/* the successor it replaced is retired; the re-issued one is the node's */
	o = opts_of(&lost);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	assert_int_equal(renew_to(&s2, &t), 0);
	o = opts_of(&j);
	expect_refused(&o, "renew-superseded", j.ans.node_id);
	drop(&j);
	drop(&lost);
	drop(&s2);
	drop(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_renew_issues_the_next_certificate),
	    cmocka_unit_test(test_each_refusal),
	    cmocka_unit_test(test_reclaimed_node_old_leaf_refused),
	    cmocka_unit_test(test_superseded_certificate_cannot_renew),
	    cmocka_unit_test(test_a_certificate_stored_without_its_key_renews),
	    cmocka_unit_test(test_replayed_renew_request_answers_the_same_certificate),
	    cmocka_unit_test(test_predecessor_renews_once_after_a_crash),
	    cmocka_unit_test(test_check_only_answers_the_leaf_and_issues_nothing),
	};
	if (bct_engine_skip())
		return BCT_SKIP;
	bct_pooled(&cp, NULL, pool_id);
	return cmocka_run_group_tests(tests, bct_pooled_setup, bct_pooled_teardown);
}
