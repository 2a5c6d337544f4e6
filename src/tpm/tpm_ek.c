/* EK certificates: a chain to one of the manufacturer roots the operator trusts, and
 * the certificate's key the EK's own. */
#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <string.h>

#include "bc/crypto.h"
#include "tpm/tpm.h"

#define CERT_MAX  (16 * 1024)
#define INTER_MAX 8

static int parse_der(const uint8_t *der, size_t len, X509 **out)
{
	const uint8_t *p = der;

	*out = NULL;
	if (len == 0 || len > CERT_MAX)
		return BC_ERR_INVALID;
	if ((*out = d2i_X509(NULL, &p, (long)len)) == NULL) {
		ERR_clear_error();
		return BC_ERR_INVALID;
	}
	if (p != der + len) {
		X509_free(*out);
		*out = NULL;
		return BC_ERR_INVALID;
	}
	return 0;
}

/* TCG EK certificates mark their SubjectAltName (a directoryName of TPM
 * manufacturer, model and version) critical; OpenSSL knows it, so nothing
 * critical is left unhandled and no flag relaxes that check.
 * X509_V_FLAG_PARTIAL_CHAIN: a chain may end at any certificate of ek_roots, not
 * only a self-signed one: manufacturers publish intermediates (Intel's per-platform
 * CAs) and cross-signed roots (STMicro's, under GlobalSign), and an operator who
 * names one trusts what it signed. Only ek_roots are anchors: the evidence's
 * intermediates stay untrusted. */
static int verify_chain(X509_STORE *store, X509 *leaf, STACK_OF(X509) * untrusted, int64_t now_ms)
{
	X509_STORE_CTX *ctx = NULL;
	X509_VERIFY_PARAM *param;
	int rc = BC_ERR_VERIFY;

	if ((ctx = X509_STORE_CTX_new()) == NULL)
		return BC_ERR_NOMEM;
	if (X509_STORE_CTX_init(ctx, store, leaf, untrusted) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	param = X509_STORE_CTX_get0_param(ctx);
	/* the caller's clock (check() passes the process clock, before the transaction) */
	X509_VERIFY_PARAM_set_time(param, (time_t)(now_ms / 1000));
	X509_VERIFY_PARAM_set_depth(param, INTER_MAX + 1);
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
	if (X509_verify_cert(ctx) == 1)
		rc = 0;
	else
		ERR_clear_error();
out:
	X509_STORE_CTX_free(ctx);
	return rc;
}

int bc_tpm_ek_cert_verify(X509 *const *roots, size_t n_roots, const uint8_t *der, size_t len,
                          const uint8_t *const *inter, const size_t *inter_lens, size_t n_inter,
                          EVP_PKEY *ek_key, int64_t now_ms, X509 **cert)
{
	X509_STORE *store = NULL;
	STACK_OF(X509) *untrusted = NULL;
	X509 *leaf = NULL, *x = NULL;
	int rc;

	*cert = NULL;
	if (n_inter > INTER_MAX)
		return BC_ERR_LIMIT;
	if ((rc = parse_der(der, len, &leaf)) != 0)
		return rc;
	rc = BC_ERR_NOMEM;
	if ((store = X509_STORE_new()) == NULL || (untrusted = sk_X509_new_null()) == NULL)
		goto out;
	for (size_t i = 0; i < n_roots; i++)
		if (X509_STORE_add_cert(store, roots[i]) != 1) {
			rc = bc_ossl_err();
			goto out;
		}
	for (size_t i = 0; i < n_inter; i++) {
		if ((rc = parse_der(inter[i], inter_lens[i], &x)) != 0)
			goto out;
		if (sk_X509_push(untrusted, x) <= 0) {
			X509_free(x);
			rc = BC_ERR_NOMEM;
			goto out;
		}
	}
	if ((rc = verify_chain(store, leaf, untrusted, now_ms)) != 0)
		goto out;
	if (EVP_PKEY_eq(X509_get0_pubkey(leaf), ek_key) != 1) {
		ERR_clear_error();
		rc = BC_ERR_CONFLICT;
		goto out;
	}
	*cert = leaf;
	leaf = NULL;
out:
	X509_free(leaf);
	sk_X509_pop_free(untrusted, X509_free);
	X509_STORE_free(store);
	return rc;
}
