/* The AWS identity document on arbitrary bytes: as the document's JSON
 * (aws_parse_document), as an rsa2048 PKCS#7 and as a document with a signature
 * (aws_check) against one region certificate made at start. Nothing may be accepted:
 * the fuzzer never holds that certificate's key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/cloud_iid.h"
#include "bc/reasons.h"
/* the test support's key and certificate makers, compiled in: fuzz builds have no
 * test library */
#include "../support/bct_cloud.c"

static struct aws_cfg cfg;
static struct aws_region region;

static void init(void)
{
	EVP_PKEY *k = bct_rsa_key(2048);
	X509 *x = k ? bct_self_cert(k, "fuzz region") : NULL;

	if (x == NULL)
		abort();
	EVP_PKEY_free(k);

	region.name = "us-east-1";
	region.certs = sk_X509_new_null();
	cfg.all = sk_X509_new_null();
	if (!sk_X509_push(region.certs, x) || !X509_up_ref(x) || !sk_X509_push(cfg.all, x))
		abort();
	cfg.regions = &region;
	cfg.n_regions = 1;
	cfg.max_age_ms = 1800000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cloud_identity id;
	const char *why = NULL;
	char *doc;
	int64_t pending;

	if (cfg.all == NULL)
		init();
	if ((doc = malloc(size + 1)) == NULL)
		return 0;
	memcpy(doc, data, size);
	doc[size] = 0;
	if (aws_parse_document(doc, size, &id, &pending) == 0 &&
	    (id.account[0] == 0 || id.instance[0] == 0 || id.region[0] == 0))
		abort();
	if (aws_check(&cfg, doc, size, NULL, 0, data, size, 1790000000000LL, &id, &why) != 0 ||
	    why == NULL)
		abort();
	if (aws_check(&cfg, doc, size, data, size > 256 ? 256 : size, NULL, 0, 1790000000000LL, &id,
	              &why) != 0 ||
	    why == NULL)
		abort();
	free(doc);
	return 0;
}
