/* node.key's record of a key held in the TPM: one PEM block "BCD TPM NODE KEY" whose
 * bytes are the 32-byte unique the key derives from. The file is untrusted input:
 * one block, nothing but white space around it, no headers, exactly 32 bytes. */
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "agent/tpm.h"
#include "bc/buf.h"
#include "bc/crypto.h"

#define RECORD_MAX 4096

int bcd_tpm_record_encode(const uint8_t unique[static BCD_TPM_UNIQUE_LEN], char **pem)
{
	BIO *bio = NULL;
	char *data = NULL;
	long n;
	int rc = 0;

	*pem = NULL;
	if ((bio = BIO_new(BIO_s_secmem())) == NULL)
		return bc_ossl_err();
	if (PEM_write_bio(bio, BCD_TPM_NODE_KEY_PEM, "", unique, BCD_TPM_UNIQUE_LEN) <= 0 ||
	    (n = BIO_get_mem_data(bio, &data)) <= 0 || data == NULL) {
		rc = bc_ossl_err();
		goto out;
	}
	if ((*pem = malloc((size_t)n + 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(*pem, data, (size_t)n);
	(*pem)[n] = '\0';
out:
	BIO_free(bio);
	return rc;
}

static int record_rest_blank(BIO *bio)
{
	char *rest = NULL;
	long n = BIO_get_mem_data(bio, &rest);

	return n <= 0 || bc_pem_blank(rest, (size_t)n) ? 0 : BC_ERR_TRAILING;
}

int bcd_tpm_record_decode(const char *pem, size_t len, uint8_t unique[static BCD_TPM_UNIQUE_LEN])
{
	char *name = NULL, *header = NULL;
	unsigned char *data = NULL;
	long n = 0;
	BIO *bio = NULL;
	size_t start = 0;
	int rc;

	memset(unique, 0, BCD_TPM_UNIQUE_LEN);
	if ((rc = bc_pem_prefix(pem, len, RECORD_MAX, &start)) != 0)
		return rc;
	if ((bio = BIO_new_mem_buf(pem + start, (int)(len - start))) == NULL)
		return bc_ossl_err();
	if (!PEM_read_bio_ex(bio, &name, &header, &data, &n, PEM_FLAG_ONLY_B64 | PEM_FLAG_SECURE)) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if (strcmp(name, BCD_TPM_NODE_KEY_PEM) != 0 || header[0] != '\0' ||
	    n != BCD_TPM_UNIQUE_LEN) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = record_rest_blank(bio)) != 0)
		goto out;
	memcpy(unique, data, BCD_TPM_UNIQUE_LEN);
out:
	OPENSSL_secure_free(name);
	OPENSSL_secure_free(header);
	OPENSSL_secure_clear_free(data, data != NULL ? (size_t)n : 0);
	BIO_free(bio);
	ERR_clear_error();
	return rc;
}
