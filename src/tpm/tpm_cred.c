/* MakeCredential in software (TPM 2.0 Part 1, 24 and Annex B/C), exactly as
 * shared/notes/TPM.md writes it: a seed for the EK (RSA-OAEP or ECDH + KDFe),
 * then the credential encrypted with KDFa("STORAGE") and authenticated with
 * KDFa("INTEGRITY"). tpm2_activatecredential is the test that it is right. */
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/crypto.h"
#include "tpm/tpm.h"

#define SEED_MAX       64
#define IDENTITY_LABEL "IDENTITY"
#define KDF_PART_MAX   128

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int bc_tpm_kdfa(uint16_t alg, const uint8_t *key, size_t key_len, const char *label,
                const uint8_t *u, size_t u_len, const uint8_t *v, size_t v_len, uint32_t bits,
                uint8_t *out)
{
	const EVP_MD *md = bc_tpm_md(alg);
	size_t want = bits / 8, done = 0, hs = bc_tpm_hash_size(alg), ll = strlen(label) + 1, n;
	uint8_t block[EVP_MAX_MD_SIZE], msg[4 + 32 + 2 * KDF_PART_MAX + 4];
	unsigned int bl = 0;
	int rc = 0;

	if (md == NULL || bits % 8 != 0 || ll > 32 || u_len > KDF_PART_MAX || v_len > KDF_PART_MAX)
		return BC_ERR_INVALID;
	/* BE32(i) || label || 0x00 || U || V || BE32(bits); only i changes */
	n = 4;
	memcpy(msg + n, label, ll);
	n += ll;
	if (u_len)
		memcpy(msg + n, u, u_len);
	n += u_len;
	if (v_len)
		memcpy(msg + n, v, v_len);
	n += v_len;
	be32(msg + n, bits);
	n += 4;
	for (uint32_t i = 1; done < want; i++) {
		be32(msg, i);
		if (HMAC(md, key, (int)key_len, msg, n, block, &bl) == NULL) {
			rc = bc_ossl_err();
			break;
		}
		memcpy(out + done, block, want - done < hs ? want - done : hs);
		done += want - done < hs ? want - done : hs;
	}
	OPENSSL_cleanse(block, sizeof(block));
	return rc;
}

int bc_tpm_kdfe(uint16_t alg, const uint8_t *z, size_t z_len, const char *label, const uint8_t *pu,
                size_t pu_len, const uint8_t *pv, size_t pv_len, uint32_t bits, uint8_t *out)
{
	const EVP_MD *md = bc_tpm_md(alg);
	size_t want = bits / 8, done = 0, hs = bc_tpm_hash_size(alg);
	uint8_t block[EVP_MAX_MD_SIZE], ctr[4];
	unsigned int bl = 0;
	EVP_MD_CTX *c = NULL;
	int rc = BC_ERR_CRYPTO;

	if (md == NULL || bits % 8 != 0)
		return BC_ERR_INVALID;
	if ((c = EVP_MD_CTX_new()) == NULL)
		return BC_ERR_NOMEM;
	for (uint32_t i = 1; done < want; i++) {
		be32(ctr, i);
		if (EVP_DigestInit_ex(c, md, NULL) != 1 || EVP_DigestUpdate(c, ctr, 4) != 1 ||
		    EVP_DigestUpdate(c, z, z_len) != 1 ||
		    EVP_DigestUpdate(c, label, strlen(label) + 1) != 1 ||
		    EVP_DigestUpdate(c, pu, pu_len) != 1 || EVP_DigestUpdate(c, pv, pv_len) != 1 ||
		    EVP_DigestFinal_ex(c, block, &bl) != 1)
			goto out;
		memcpy(out + done, block, want - done < hs ? want - done : hs);
		done += want - done < hs ? want - done : hs;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(c);
	OPENSSL_cleanse(block, sizeof(block));
	return rc;
}

/* RSA EK: seed random, encrypted with OAEP under the label "IDENTITY\0". */
static int rsa_seed(const TPMT_PUBLIC *ek, EVP_PKEY *key, uint8_t *seed, size_t seed_len,
                    bc_buf *enc)
{
	const EVP_MD *md = bc_tpm_md(ek->nameAlg);
	uint8_t out[512];
	size_t outlen = sizeof(out);
	EVP_PKEY_CTX *ctx = NULL;
	char *label = NULL;
	int rc;

	if ((rc = bc_random(seed, seed_len)) != 0)
		return rc;
	if ((label = OPENSSL_malloc(sizeof(IDENTITY_LABEL))) == NULL)
		return BC_ERR_NOMEM;
	memcpy(label, IDENTITY_LABEL, sizeof(IDENTITY_LABEL)); /* with its NUL: 9 bytes */
	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL)) == NULL ||
	    EVP_PKEY_encrypt_init(ctx) != 1 ||
	    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_oaep_md(ctx, md) != 1 ||
	    EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) != 1 ||
	    EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, label, sizeof(IDENTITY_LABEL)) != 1) {
		OPENSSL_free(label);
		rc = bc_ossl_err();
		goto out;
	}
	if (EVP_PKEY_encrypt(ctx, out, &outlen, seed, seed_len) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = bc_buf_put(enc, out, outlen);
out:
	EVP_PKEY_CTX_free(ctx);
	return rc;
}

/* ECC EK: an ephemeral key Q on the EK's curve; seed = KDFe(Z, "IDENTITY", Q.x,
 * EK.x); the encrypted secret is the point Q. */
static int ecc_seed(const TPMT_PUBLIC *ek, EVP_PKEY *key, uint8_t *seed, size_t seed_len,
                    bc_buf *enc)
{
	int p384 = ek->parameters.eccDetail.curveID == TPM2_ECC_NIST_P384;
	size_t fs = p384 ? 48 : 32, zlen = 0, qlen = 0;
	uint8_t z[48], q[1 + 2 * 48];
	EVP_PKEY *eph = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	int rc;

	if ((eph = EVP_PKEY_Q_keygen(NULL, NULL, "EC", p384 ? "secp384r1" : "prime256v1")) == NULL)
		return bc_ossl_err();
	zlen = sizeof(z);
	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, eph, NULL)) == NULL ||
	    EVP_PKEY_derive_init(ctx) != 1 || EVP_PKEY_derive_set_peer(ctx, key) != 1 ||
	    EVP_PKEY_derive(ctx, z, &zlen) != 1 ||
	    EVP_PKEY_get_octet_string_param(eph, OSSL_PKEY_PARAM_PUB_KEY, q, sizeof(q), &qlen) !=
	        1) {
		rc = bc_ossl_err();
		goto out;
	}
	if (zlen != fs || qlen != 1 + 2 * fs) {
		rc = BC_ERR_INTERNAL;
		goto out;
	}
	if ((rc = bc_tpm_kdfe(ek->nameAlg, z, zlen, IDENTITY_LABEL, q + 1, fs,
	                      ek->unique.ecc.x.buffer, ek->unique.ecc.x.size,
	                      (uint32_t)seed_len * 8, seed)) != 0)
		goto out;
	if ((rc = bc_buf_put_u16(enc, (uint16_t)fs)) != 0 ||
	    (rc = bc_buf_put(enc, q + 1, fs)) != 0 ||
	    (rc = bc_buf_put_u16(enc, (uint16_t)fs)) != 0 ||
	    (rc = bc_buf_put(enc, q + 1 + fs, fs)) != 0)
		goto out;
out:
	OPENSSL_cleanse(z, sizeof(z));
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(eph);
	return rc;
}

/* encId and integrity from the seed: the TPM2B_ID_OBJECT. */
static int seal_credential(const TPMT_PUBLIC *ek, const uint8_t *seed, size_t hs,
                           const uint8_t *name, size_t name_len, const uint8_t *secret,
                           size_t secret_len, bc_buf *idobj)
{
	uint32_t bits = ek->type == TPM2_ALG_RSA ? ek->parameters.rsaDetail.symmetric.keyBits.aes
	                                         : ek->parameters.eccDetail.symmetric.keyBits.aes;
	uint8_t sym[32], hmac_key[EVP_MAX_MD_SIZE], iv[16] = {0}, integrity[EVP_MAX_MD_SIZE];
	uint8_t plain[2 + 64], enc[2 + 64], mac_in[2 + 64 + BC_TPM_NAME_MAX];
	unsigned int ilen = 0;
	int outl = 0, fin = 0, rc;
	EVP_CIPHER_CTX *c = NULL;

	if (secret_len > 64 || name_len > BC_TPM_NAME_MAX)
		return BC_ERR_INVALID;
	plain[0] = (uint8_t)(secret_len >> 8);
	plain[1] = (uint8_t)secret_len;
	memcpy(plain + 2, secret, secret_len);
	if ((rc = bc_tpm_kdfa(ek->nameAlg, seed, hs, "STORAGE", name, name_len, NULL, 0, bits,
	                      sym)) != 0 ||
	    (rc = bc_tpm_kdfa(ek->nameAlg, seed, hs, "INTEGRITY", NULL, 0, NULL, 0,
	                      (uint32_t)hs * 8, hmac_key)) != 0)
		goto out;
	rc = BC_ERR_CRYPTO;
	if ((c = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_EncryptInit_ex(c, bits == 256 ? EVP_aes_256_cfb128() : EVP_aes_128_cfb128(), NULL,
	                       sym, iv) != 1 ||
	    EVP_EncryptUpdate(c, enc, &outl, plain, (int)(2 + secret_len)) != 1 ||
	    EVP_EncryptFinal_ex(c, enc + outl, &fin) != 1)
		goto out;
	/* integrity = HMAC(hmacKey, encId || Name) */
	memcpy(mac_in, enc, (size_t)(outl + fin));
	memcpy(mac_in + outl + fin, name, name_len);
	if (HMAC(bc_tpm_md(ek->nameAlg), hmac_key, (int)hs, mac_in, (size_t)(outl + fin) + name_len,
	         integrity, &ilen) == NULL)
		goto out;
	if ((rc = bc_buf_put_u16(idobj, (uint16_t)(2 + ilen + (unsigned)(outl + fin)))) != 0 ||
	    (rc = bc_buf_put_u16(idobj, (uint16_t)ilen)) != 0 ||
	    (rc = bc_buf_put(idobj, integrity, ilen)) != 0 ||
	    (rc = bc_buf_put(idobj, enc, (size_t)(outl + fin))) != 0)
		goto out;
out:
	OPENSSL_cleanse(sym, sizeof(sym));
	OPENSSL_cleanse(hmac_key, sizeof(hmac_key));
	OPENSSL_cleanse(plain, sizeof(plain));
	EVP_CIPHER_CTX_free(c);
	return rc;
}

int bc_tpm_make_credential(const TPMT_PUBLIC *ek, const uint8_t *name, size_t name_len,
                           const uint8_t *secret, size_t secret_len, uint8_t **id_object,
                           size_t *id_len, uint8_t **enc_secret, size_t *enc_len)
{
	size_t hs = bc_tpm_hash_size(ek->nameAlg);
	uint8_t seed[SEED_MAX];
	bc_buf enc, encsec, idobj;
	EVP_PKEY *key = NULL;
	int rc;

	*id_object = *enc_secret = NULL;
	*id_len = *enc_len = 0;
	bc_buf_init(&enc, 4096);
	bc_buf_init(&encsec, 4096);
	bc_buf_init(&idobj, 4096);
	if ((rc = bc_tpm_check_ek(ek)) != 0 || (rc = bc_tpm_public_key(ek, &key)) != 0)
		goto out;
	if (ek->type == TPM2_ALG_RSA)
		rc = rsa_seed(ek, key, seed, hs, &enc);
	else
		rc = ecc_seed(ek, key, seed, hs, &enc);
	if (rc != 0)
		goto out;
	if ((rc = seal_credential(ek, seed, hs, name, name_len, secret, secret_len, &idobj)) != 0)
		goto out;
	if ((rc = bc_buf_put_u16(&encsec, (uint16_t)enc.len)) != 0 ||
	    (rc = bc_buf_put(&encsec, enc.p, enc.len)) != 0)
		goto out;
	*id_object = bc_buf_steal(&idobj, id_len);
	*enc_secret = bc_buf_steal(&encsec, enc_len);
	if (*id_object == NULL || *enc_secret == NULL) {
		free(*id_object);
		free(*enc_secret);
		*id_object = *enc_secret = NULL;
		*id_len = *enc_len = 0;
		rc = BC_ERR_NOMEM;
	}
out:
	OPENSSL_cleanse(seed, sizeof(seed));
	bc_buf_free(&enc);
	bc_buf_free(&encsec);
	bc_buf_free(&idobj);
	EVP_PKEY_free(key);
	return rc;
}
