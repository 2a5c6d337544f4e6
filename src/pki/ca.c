/* The bundle's keys and CAs, and the server TLS certificate. */
#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define DAY_MS          (24LL * 3600 * 1000)
#define CA_VALIDITY_MS  (3653 * DAY_MS) /* ten years with their leap days */
#define TLS_VALIDITY_MS (365 * DAY_MS)
/* CA and TLS certificates start a day early: a peer whose clock is behind
 * ours (or a test that moved our clock ahead) must not see them as not yet
 * valid. Node certificates start exactly at database time instead. */
#define BACKDATE_MS   DAY_MS
#define MAX_TLS_HOSTS 32

int bc_trust_domain_valid(const char *td)
{
	size_t n;

	if (td == NULL || (n = strlen(td)) == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = td[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

static int make_ca(const char *td, const char *what, X509 **cert, EVP_PKEY **key)
{
	struct pki_cert_spec spec = {0};
	uint8_t serial[PKI_SERIAL_LEN];
	char *cn = NULL;
	int64_t now = bc_now_ms();
	int rc;

	*cert = NULL;
	*key = NULL;
	if (asprintf(&cn, "%s %s", td, what) < 0)
		return BC_ERR_NOMEM;
	if ((rc = bc_key_generate(key)) != 0)
		goto out;
	spec.pub = *key;
	spec.cn = cn;
	spec.issuer_key = *key;
	spec.not_before_ms = now > BACKDATE_MS ? now - BACKDATE_MS : 0;
	spec.not_after_ms = now + CA_VALIDITY_MS;
	spec.basic_constraints = "critical,CA:TRUE,pathlen:0";
	spec.key_usage = "critical,keyCertSign,cRLSign";
	rc = pki_cert_build(&spec, cert, serial);
out:
	if (rc != 0) {
		EVP_PKEY_free(*key);
		*key = NULL;
	}
	free(cn);
	return rc;
}

int bc_pki_generate(const char *trust_domain, bc_pki **out)
{
	bc_pki *pki = NULL;
	int rc;

	*out = NULL;
	if (!bc_trust_domain_valid(trust_domain))
		return BC_ERR_INVALID;
	if ((pki = calloc(1, sizeof(*pki))) == NULL)
		return BC_ERR_NOMEM;
	if ((pki->trust_domain = strdup(trust_domain)) == NULL ||
	    (pki->live = pki_live_new()) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = make_ca(trust_domain, "node CA", &pki->node_ca, &pki->node_ca_key)) != 0)
		goto out;
	if ((rc = bc_key_generate(&pki->join_signing)) != 0)
		goto out;
	if ((rc = bc_key_id(pki->join_signing, pki->join_signing_kid)) != 0)
		goto out;
	if ((rc = bc_key_generate(&pki->join_encryption)) != 0)
		goto out;
	if ((rc = bc_random(pki->challenge_key, sizeof(pki->challenge_key))) != 0)
		goto out;
	if ((rc = make_ca(trust_domain, "server CA", &pki->tls_ca, &pki->tls_ca_key)) != 0)
		goto out;
	*out = pki;
	pki = NULL;
out:
	bc_pki_free(pki);
	return rc;
}

void bc_pki_free(bc_pki *pki)
{
	if (pki == NULL)
		return;
	/* EVP_PKEY_free clears EC private scalars (BN_clear_free) */
	X509_free(pki->node_ca);
	EVP_PKEY_free(pki->node_ca_key);
	EVP_PKEY_free(pki->join_signing);
	EVP_PKEY_free(pki->join_encryption);
	X509_free(pki->tls_ca);
	EVP_PKEY_free(pki->tls_ca_key);
	free(pki->trust_domain);
	pki_live_free(pki->live);
	OPENSSL_cleanse(pki, sizeof(*pki));
	free(pki);
}

/* An IP address literal becomes an iPAddress SAN, anything else a dNSName
 * made of [A-Za-z0-9.-] only. */
static int add_host(GENERAL_NAMES *gens, const char *host)
{
	uint8_t ip[16];
	size_t n;

	if (host == NULL || (n = strlen(host)) == 0 || n > 253)
		return BC_ERR_INVALID;
	if (inet_pton(AF_INET, host, ip) == 1)
		return pki_gens_add(gens, GEN_IPADD, ip, 4);
	if (inet_pton(AF_INET6, host, ip) == 1)
		return pki_gens_add(gens, GEN_IPADD, ip, 16);
	for (size_t i = 0; i < n; i++) {
		char c = host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-'))
			return BC_ERR_INVALID;
	}
	return pki_gens_add(gens, GEN_DNS, host, n);
}

int bc_pki_server_tls_cert(const bc_pki *pki, const char *const *hosts, size_t n, char **cert_pem,
                           char **key_pem)
{
	struct pki_cert_spec spec = {0};
	uint8_t serial[PKI_SERIAL_LEN];
	GENERAL_NAMES *gens = NULL;
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	int64_t now = bc_now_ms();
	int rc;

	*cert_pem = NULL;
	*key_pem = NULL;
	if (pki == NULL || pki->tls_ca == NULL || hosts == NULL || n == 0 || n > MAX_TLS_HOSTS)
		return BC_ERR_INVALID;
	if ((gens = sk_GENERAL_NAME_new_null()) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if ((rc = add_host(gens, hosts[i])) != 0)
			goto out;
	}
	if ((rc = bc_key_generate(&key)) != 0)
		goto out;
	spec.pub = key;
	spec.cn = hosts[0];
	spec.issuer = pki->tls_ca;
	spec.issuer_key = pki->tls_ca_key;
	spec.not_before_ms = now > BACKDATE_MS ? now - BACKDATE_MS : 0;
	spec.not_after_ms = now + TLS_VALIDITY_MS;
	spec.basic_constraints = "critical,CA:FALSE";
	spec.key_usage = "critical,digitalSignature";
	spec.ext_key_usage = "serverAuth";
	spec.san = gens;
	if ((rc = pki_cert_build(&spec, &x, serial)) != 0)
		goto out;
	if ((rc = bc_x509_to_pem(x, cert_pem)) != 0)
		goto out;
	if ((rc = bc_key_to_pem(key, key_pem)) != 0) {
		free(*cert_pem);
		*cert_pem = NULL;
	}
out:
	GENERAL_NAMES_free(gens);
	EVP_PKEY_free(key);
	X509_free(x);
	return rc;
}

int bc_pki_node_ca_not_after(const bc_pki *pki, int64_t *ms)
{
	struct bc_node_cas *cas;
	int rc;

	*ms = 0;
	if (pki == NULL || pki->node_ca == NULL)
		return BC_ERR_INVALID;
	/* with a set installed from the store, the CA that issues now */
	if ((cas = bc_pki_node_cas_get(pki)) == NULL)
		return pki_read_time(X509_get0_notAfter(pki->node_ca), ms);
	rc = pki_read_time(X509_get0_notAfter(cas->ca[cas->issuing].cert), ms);
	bc_node_cas_put(cas);
	return rc;
}
