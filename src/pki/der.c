/* DER, both ways (pki_internal.h states the contracts): the header of a TLV read
 * strictly, what csr.c and node_read.c read untrusted bytes with; and the writer that
 * node_der.c and csr.c build their fixed forms with, the one-CN name of both among
 * them. */
#include <stdlib.h>
#include <string.h>

#include "pki/node_form.h"
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

void pki_der_put(struct pki_der_w *d, const void *p, size_t n)
{
	if (d->err || n == 0)
		return;
	if (n > PKI_MAX_DER || d->len > PKI_MAX_DER - n) {
		d->err = BC_ERR_LIMIT;
		return;
	}
	if (d->len + n > d->cap) {
		size_t cap = d->cap ? d->cap : 256;
		uint8_t *np;
		while (cap < d->len + n)
			cap *= 2;
		if ((np = realloc(d->p, cap)) == NULL) {
			d->err = BC_ERR_NOMEM;
			return;
		}
		d->p = np;
		d->cap = cap;
	}
	memcpy(d->p + d->len, p, n);
	d->len += n;
}

/* A tag and a definite length (short form, or long form in one to three bytes). */
void pki_der_hdr(struct pki_der_w *d, uint8_t tag, size_t len)
{
	uint8_t h[5];
	size_t n = 0;

	h[n++] = tag;
	if (len < 0x80) {
		h[n++] = (uint8_t)len;
	} else if (len <= 0xff) {
		h[n++] = 0x81;
		h[n++] = (uint8_t)len;
	} else if (len <= 0xffff) {
		h[n++] = 0x82;
		h[n++] = (uint8_t)(len >> 8);
		h[n++] = (uint8_t)len;
	} else {
		d->err = BC_ERR_LIMIT;
		return;
	}
	pki_der_put(d, h, n);
}

void pki_der_tlv(struct pki_der_w *d, uint8_t tag, const void *p, size_t n)
{
	pki_der_hdr(d, tag, n);
	pki_der_put(d, p, n);
}

/* Wraps what inner holds in tag, onto d, and empties inner. */
void pki_der_wrap(struct pki_der_w *d, uint8_t tag, struct pki_der_w *inner)
{
	if (inner->err && !d->err)
		d->err = inner->err;
	pki_der_tlv(d, tag, inner->p, inner->len);
	free(inner->p);
	*inner = (struct pki_der_w){0};
}

void pki_der_wfree(struct pki_der_w *d)
{
	free(d->p);
	*d = (struct pki_der_w){0};
}

void pki_der_cn_name(struct pki_der_w *d, const char *cn, size_t n)
{
	struct pki_der_w atv = {0}, rdn = {0}, name = {0};

	pki_der_put(&atv, pki_oid_cn, sizeof(pki_oid_cn));
	pki_der_tlv(&atv, 0x0c, cn, n); /* UTF8String */
	pki_der_wrap(&rdn, 0x30, &atv);
	pki_der_wrap(&name, 0x31, &rdn);
	pki_der_wrap(d, 0x30, &name);
}
