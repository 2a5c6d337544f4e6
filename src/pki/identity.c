/* SPIFFE IDs, roles, node ids, urn:bc: statements, and reading a node
 * certificate's identity back from its (untrusted) DER. */
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define SPIFFE_PREFIX      "spiffe://"
#define STATEMENT_PREFIX   "urn:bc:"
#define NODE_ID_PREFIX     "node_"
#define NODE_ID_SUFFIX_LEN 26
#define SERIAL_MAX         20 /* RFC 5280, 4.1.2.2 */

int bc_role_valid(const char *role)
{
	static const char *const roles[] = {BC_ROLE_NODE, BC_ROLE_SITE, BC_ROLE_RAMDISK,
	                                    BC_ROLE_NODE_TENANT};

	if (role == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		if (strcmp(role, roles[i]) == 0)
			return 1;
	}
	return 0;
}

/* n bytes at s: "node_" then 26 of [0-9a-z]. */
static int node_id_valid_n(const char *s, size_t n)
{
	const size_t plen = strlen(NODE_ID_PREFIX);

	if (n != plen + NODE_ID_SUFFIX_LEN || memcmp(s, NODE_ID_PREFIX, plen) != 0)
		return 0;
	for (size_t i = plen; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z')))
			return 0;
	}
	return 1;
}

int bc_node_id_valid(const char *node_id)
{
	return node_id != NULL && node_id_valid_n(node_id, strlen(node_id));
}

/* Printable ASCII without spaces: no NUL can cut a name short when it is
 * later read as a C string. */
int pki_printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] < 0x21 || s[i] > 0x7e)
			return 0;
	}
	return 1;
}

int pki_statement_valid(const char *s, size_t n)
{
	const size_t plen = strlen(STATEMENT_PREFIX);

	if (s == NULL || n <= plen || n > PKI_STATEMENT_MAX ||
	    memcmp(s, STATEMENT_PREFIX, plen) != 0)
		return 0;
	return pki_printable(s, n);
}

char *bc_spiffe_id(const char *trust_domain, const char *role, const char *node_id)
{
	char *s = NULL;

	if (!bc_trust_domain_valid(trust_domain) || !bc_role_valid(role) ||
	    !bc_node_id_valid(node_id))
		return NULL;
	if (asprintf(&s, SPIFFE_PREFIX "%s/%s/%s", trust_domain, role, node_id) < 0)
		return NULL;
	return s;
}

/* spiffe://<td>/<role>/<node id>, exactly, into id. */
int pki_parse_spiffe(const char *s, size_t n, const char *td, struct bc_node_identity *id)
{
	const size_t plen = strlen(SPIFFE_PREFIX), tdlen = strlen(td);
	const char *role, *slash, *end = s + n;

	if (n <= plen + tdlen + 1 || memcmp(s, SPIFFE_PREFIX, plen) != 0)
		return BC_ERR_INVALID;
	s += plen;
	if (memcmp(s, td, tdlen) != 0 || s[tdlen] != '/')
		return BC_ERR_INVALID;
	role = s + tdlen + 1;
	if ((slash = memchr(role, '/', (size_t)(end - role))) == NULL)
		return BC_ERR_INVALID;
	if ((size_t)(slash - role) >= sizeof(id->role))
		return BC_ERR_INVALID;
	memcpy(id->role, role, (size_t)(slash - role));
	id->role[slash - role] = '\0';
	if (!bc_role_valid(id->role))
		return BC_ERR_INVALID;
	if (!node_id_valid_n(slash + 1, (size_t)(end - slash - 1)))
		return BC_ERR_INVALID;
	memcpy(id->node_id, slash + 1, (size_t)(end - slash - 1));
	id->node_id[end - slash - 1] = '\0';
	return 0;
}

/* A URI SAN's bytes; any other name type is refused. */
static int uri_bytes(const GENERAL_NAME *gen, const char **s, size_t *n)
{
	const ASN1_IA5STRING *ia5;
	int len;

	*s = NULL;
	*n = 0;
	if (gen->type != GEN_URI)
		return BC_ERR_INVALID;
	ia5 = gen->d.uniformResourceIdentifier;
	if ((len = ASN1_STRING_length(ia5)) <= 0 || len > PKI_STATEMENT_MAX)
		return BC_ERR_INVALID;
	if (!pki_printable((const char *)ASN1_STRING_get0_data(ia5), (size_t)len))
		return BC_ERR_INVALID;
	*s = (const char *)ASN1_STRING_get0_data(ia5);
	*n = (size_t)len;
	return 0;
}

static int read_sans(X509 *x, const char *td, struct bc_node_identity *id)
{
	GENERAL_NAMES *gens;
	const char *s;
	size_t n;
	int crit = 0, count, rc = BC_ERR_INVALID;

	/* NULL too when the extension appears twice (crit == -2) */
	if ((gens = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL)) == NULL)
		return BC_ERR_INVALID;
	count = sk_GENERAL_NAME_num(gens);
	if (count < 1 || count > BC_MAX_URIS)
		goto out;
	for (int i = 0; i < count; i++) {
		if ((rc = uri_bytes(sk_GENERAL_NAME_value(gens, i), &s, &n)) != 0)
			goto out;
		/* the SPIFFE ID comes first; a second one fails the urn:bc: test */
		if (i == 0) {
			if ((rc = pki_parse_spiffe(s, n, td, id)) != 0)
				goto out;
			continue;
		}
		rc = BC_ERR_INVALID;
		if (!pki_statement_valid(s, n))
			goto out;
		rc = BC_ERR_NOMEM;
		if ((id->statements[id->n_statements] = strndup(s, n)) == NULL)
			goto out;
		id->n_statements++;
	}
	rc = 0;
out:
	GENERAL_NAMES_free(gens);
	return rc;
}

int pki_read_time(const ASN1_TIME *t, int64_t *ms)
{
	struct tm tm;
	time_t secs;

	*ms = 0;
	memset(&tm, 0, sizeof(tm));
	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return BC_ERR_INVALID;
	if ((secs = timegm(&tm)) == (time_t)-1)
		return BC_ERR_INVALID;
	*ms = (int64_t)secs * 1000;
	return 0;
}

/* Lower-case hex of a positive serial of 1..20 bytes. */
static int read_serial(X509 *x, char hex[static 41])
{
	const ASN1_INTEGER *ai = X509_get0_serialNumber(x);
	int n;

	hex[0] = '\0';
	if (ai == NULL || ASN1_STRING_type(ai) != V_ASN1_INTEGER)
		return BC_ERR_INVALID;
	if ((n = ASN1_STRING_length(ai)) < 1 || n > SERIAL_MAX)
		return BC_ERR_INVALID;
	bc_hex_encode_to(ASN1_STRING_get0_data(ai), (size_t)n, hex);
	return 0;
}

int bc_pki_node_identity(const uint8_t *der, size_t len, const char *trust_domain,
                         struct bc_node_identity *id, uint8_t *point)
{
	uint8_t own[65];
	X509 *x = NULL;
	int rc;

	if (point == NULL)
		point = own;
	memset(id, 0, sizeof(*id));
	memset(point, 0, 65);
	if (!bc_trust_domain_valid(trust_domain))
		return BC_ERR_INVALID;
	/* our own form without the X509 decoder, which decodes the key through OpenSSL's
	 * decoder framework; anything else, and every refusal, is the X509 path's */
	if (bc_pki_node_cert_peek(der, len, trust_domain, id, point) == 0)
		return 0;
	if ((rc = bc_x509_from_der(der, len, &x)) == 0 &&
	    (rc = bc_pki_node_identity_x509(x, trust_domain, id)) == 0 &&
	    bc_p256_public_point(X509_get0_pubkey(x), point) != 0)
		memset(point, 0, 65);
	X509_free(x);
	return rc;
}

int bc_pki_node_identity_x509(X509 *x, const char *trust_domain, struct bc_node_identity *id)
{
	int rc;

	memset(id, 0, sizeof(*id));
	if (x == NULL || !bc_trust_domain_valid(trust_domain))
		return BC_ERR_INVALID;
	if ((rc = read_sans(x, trust_domain, id)) != 0)
		goto out;
	if ((rc = pki_read_time(X509_get0_notBefore(x), &id->not_before_ms)) != 0 ||
	    (rc = pki_read_time(X509_get0_notAfter(x), &id->not_after_ms)) != 0)
		goto out;
	rc = read_serial(x, id->serial_hex);
out:
	if (rc != 0)
		bc_node_identity_clear(id);
	ERR_clear_error();
	return rc;
}

void bc_node_identity_clear(struct bc_node_identity *id)
{
	if (id == NULL)
		return;
	for (size_t i = 0; i < BC_MAX_URIS; i++)
		free(id->statements[i]);
	memset(id, 0, sizeof(*id));
}
