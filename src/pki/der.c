/* The header of a DER TLV, strictly: what csr.c and node_read.c read untrusted bytes
 * with (pki_internal.h states the contract). */
#include "pki/pki_internal.h"

int pki_der_head(const struct pki_der *r, uint8_t *tag, size_t *hdr, size_t *len)
{
	size_t k, l = 0;

	if (r->n < 2)
		return BC_ERR_INVALID;
	*tag = r->p[0];
	if ((*tag & 0x1f) == 0x1f)
		return BC_ERR_INVALID;
	if (r->p[1] < 0x80) {
		*hdr = 2;
		l = r->p[1];
	} else {
		/* 0x80 is the indefinite form; four length bytes cannot fit in PKI_MAX_DER */
		k = r->p[1] & 0x7f;
		if (k == 0 || k > 3 || r->n < 2 + k || r->p[2] == 0)
			return BC_ERR_INVALID;
		for (size_t i = 0; i < k; i++)
			l = l << 8 | r->p[2 + i];
		if (l < 0x80)
			return BC_ERR_INVALID;
		*hdr = 2 + k;
	}
	if (l > r->n - *hdr)
		return BC_ERR_INVALID;
	*len = l;
	return 0;
}
