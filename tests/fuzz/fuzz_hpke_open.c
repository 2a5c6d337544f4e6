/* bc_hpke_open on arbitrary bytes with a fixed key: it must refuse cleanly, hand
 * out nothing on refusal, and never crash.
 *
 * The first input byte picks how the rest is used: 0 as the sealed bytes; 1 after
 * a valid enc (the recipient's own point), so that the AEAD path is reached past
 * the point checks; 2 with its first byte as the length of an aad taken from it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/wire.h"

/* RFC 9180 A.3.1's skRm: a fixed key, so a finding reproduces. */
static const uint8_t fixed_sk[32] = {
    0xf3, 0xce, 0x7f, 0xda, 0xe5, 0x7e, 0x1a, 0x31, 0x0d, 0x87, 0xf1, 0xeb, 0xbd, 0xe6, 0xf3, 0x28,
    0xbe, 0x0a, 0x99, 0xcd, 0xbc, 0xad, 0xf4, 0xd6, 0x58, 0x9c, 0xf2, 0x9d, 0xe4, 0xb8, 0xff, 0xd2,
};
static const char info[] = BC_WIRE_TOKEN_INFO;

static EVP_PKEY *key;
static uint8_t valid_enc[BC_HPKE_ENC_LEN];

static int open_checked(const uint8_t *aad, size_t aadlen, const uint8_t *in, size_t inlen)
{
	uint8_t *pt = NULL;
	size_t ptlen = 0;
	int rc = bc_hpke_open(key, info, strlen(info), aad, aadlen, in, inlen, &pt, &ptlen);

	if (rc == 0) {
		if (pt == NULL || ptlen != inlen - BC_HPKE_ENC_LEN - 16)
			abort();
		bc_freezero(pt, ptlen);
		return 0;
	}
	if (pt != NULL || ptlen != 0)
		abort();
	if (rc != BC_ERR_INVALID && rc != BC_ERR_VERIFY && rc != BC_ERR_NOMEM)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf;
	size_t aadlen;

	if (key == NULL) {
		if (bc_key_from_raw(fixed_sk, &key) != 0 || bc_key_to_point(key, valid_enc) != 0)
			abort();
	}
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: return open_checked(NULL, 0, data + 1, size - 1);
	case 1:
		if ((buf = malloc(BC_HPKE_ENC_LEN + size - 1)) == NULL)
			return 0;
		memcpy(buf, valid_enc, BC_HPKE_ENC_LEN);
		if (size > 1)
			memcpy(buf + BC_HPKE_ENC_LEN, data + 1, size - 1);
		open_checked((const uint8_t *)"aad", 3, buf, BC_HPKE_ENC_LEN + size - 1);
		free(buf);
		return 0;
	case 2:
		if (size < 2)
			return 0;
		aadlen = data[1] < size - 2 ? data[1] : size - 2;
		return open_checked(data + 2, aadlen, data + 2 + aadlen, size - 2 - aadlen);
	default: abort();
	}
}
