/* JoinService/Join, /Renew, /FetchSecret and SiteService on arbitrary request bodies: decoding,
 * every check before the transaction, and the transaction itself against a real SQLite store. Must
 * never crash, leak or answer anything but the documented statuses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc/log.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "attest/attest.h"
#include "join/join.h"

static struct bc_join_service *svc;

static void init(void)
{
	char dir[] = "/tmp/bc-fuzz-join.XXXXXX", path[256], err[256];
	bc_store *store = NULL;
	bc_pki *pki = NULL;

	bc_log_set_level(BC_LOG_ERROR + 1);
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(path, sizeof(path), "%s/bc.db", dir);
	if (bc_pki_generate("bc.fuzz", &pki) != 0 ||
	    bc_store_open(path, &store, err, sizeof(err)) != 0)
		abort();
	struct bc_join_config cfg = {.store = store, .pki = pki};
	if (bc_join_service_new(&cfg, &svc) != 0 || bc_attest_register_defaults(svc) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum bc_rpc_status status;
	uint8_t *resp;
	size_t len;

	if (svc == NULL)
		init();
	if (size == 0)
		return 0;
	/* the first byte picks the method, so one target covers every decoder: Join,
	 * Renew, FetchSecret and SiteService's */
	static enum bc_rpc_status (*const methods[])(struct bc_join_service *, const uint8_t *,
	                                             size_t, uint8_t **,
	                                             size_t *) = {bc_renew_handle,
	                                                          bc_join_handle,
	                                                          bc_secret_handle,
	                                                          bc_site_acquire_handle,
	                                                          bc_site_renew_handle,
	                                                          bc_site_release_handle,
	                                                          bc_site_boot_entries_handle};
	status = methods[data[0] % (sizeof(methods) / sizeof(*methods))](svc, data + 1, size - 1,
	                                                                 &resp, &len);
	/* an answer, a refusal or a body that does not decode: never a failure of ours,
	 * and a response body only with an answer */
	if ((status != BC_RPC_OK && status != BC_RPC_REFUSED && status != BC_RPC_INVALID &&
	     status != BC_RPC_UNAVAILABLE) ||
	    (status != BC_RPC_OK && resp != NULL))
		abort();
	free(resp);
	return 0;
}
