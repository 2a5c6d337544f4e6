/* The server's own TLS certificate read back: whether the server TLS CA issued it
 * (then the server renews it itself), its validity, and the names to renew it for. */
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "bc/pki.h"
#include "pki/pki_internal.h"

/* The SANs in order, as bc_pki_server_tls_cert takes them: IP literals and DNS names. */
static int read_hosts(X509 *x, struct bc_server_tls *info)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int rc = 0;

	for (int i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens) && rc == 0; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		char buf[INET6_ADDRSTRLEN];
		const char *h = NULL;
		int len;

		if (info->n_hosts == BC_SERVER_TLS_MAX_HOSTS)
			break;
		if (g->type == GEN_DNS) {
			len = ASN1_STRING_length(g->d.dNSName);
			if (len <= 0 || len > 253)
				continue;
			if ((info->hosts[info->n_hosts] =
			         strndup((const char *)ASN1_STRING_get0_data(g->d.dNSName),
			                 (size_t)len)) == NULL)
				rc = BC_ERR_NOMEM;
			else
				info->n_hosts++;
			continue;
		}
		if (g->type != GEN_IPADD)
			continue;
		len = ASN1_STRING_length(g->d.iPAddress);
		if ((len == 4 || len == 16) &&
		    inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress),
		              buf, sizeof(buf)) != NULL)
			h = buf;
		if (h != NULL && (info->hosts[info->n_hosts++] = strdup(h)) == NULL) {
			info->n_hosts--;
			rc = BC_ERR_NOMEM;
		}
	}
	GENERAL_NAMES_free(gens);
	return rc;
}

int bc_pki_server_tls_read(const bc_pki *pki, const char *cert_pem, struct bc_server_tls *info)
{
	EVP_PKEY *ca_pub;
	X509 *x = NULL;
	int rc;

	memset(info, 0, sizeof(*info));
	if (pki == NULL || pki->tls_ca == NULL || cert_pem == NULL)
		return BC_ERR_INVALID;
	/* the first certificate of the chain is the server's */
	{
		BIO *b = BIO_new_mem_buf(cert_pem, -1);
		x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
		BIO_free(b);
	}
	ERR_clear_error();
	if (x == NULL)
		return BC_ERR_INVALID;
	if ((rc = pki_read_time(X509_get0_notBefore(x), &info->not_before_ms)) != 0 ||
	    (rc = pki_read_time(X509_get0_notAfter(x), &info->not_after_ms)) != 0)
		goto out;
	info->ours = X509_check_issued(pki->tls_ca, x) == X509_V_OK &&
	             (ca_pub = X509_get0_pubkey(pki->tls_ca)) != NULL &&
	             X509_verify(x, ca_pub) == 1;
	ERR_clear_error();
	if (info->ours && (rc = read_hosts(x, info)) == 0 && info->n_hosts == 0)
		info->ours = 0; /* nothing to renew it for: the operator's to replace */
out:
	if (rc != 0)
		bc_server_tls_clear(info);
	X509_free(x);
	return rc;
}

int64_t bc_server_tls_renew_at(const struct bc_server_tls *info)
{
	return info->not_before_ms + (info->not_after_ms - info->not_before_ms) / 3 * 2;
}

void bc_server_tls_clear(struct bc_server_tls *info)
{
	for (size_t i = 0; i < info->n_hosts; i++)
		free(info->hosts[i]);
	memset(info, 0, sizeof(*info));
}
