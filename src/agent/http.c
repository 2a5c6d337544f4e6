/* GET /healthz for bcd doctor: is the server reachable through the pinned TLS, and
 * what time does it say it is (its Date header). The body is not kept. */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/httpc.h"

#define MAX_BODY 65536
#define MAX_URL  2048

int bcd_healthz(const struct bc_client_pins *pins, long *status, int64_t *date_ms,
                struct bcd_msg *m)
{
	struct bc_httpc_req q;
	struct bc_httpc_resp r;
	char url[MAX_URL], why[512], date[64];
	time_t t;
	int n, rc;

	*status = 0;
	*date_ms = 0;
	n = snprintf(url, sizeof(url), "%s/healthz", pins->server_url);
	if (n < 0 || (size_t)n >= sizeof(url))
		return BC_ERR_LIMIT;
	/* the same trust as every JoinService call: the pinned CA, no redirects */
	bc_client_httpc_req(pins, url, &q);
	q.connect_timeout_ms = 5000;
	q.timeout_ms = 10000;
	q.max = MAX_BODY;
	if ((rc = bc_httpc_run(&q, &r, why, sizeof(why))) != 0) {
		bcd_say(m, "GET %s: %s", url, why);
		return BC_ERR_UNAVAILABLE;
	}
	*status = r.status;
	if (bc_httpc_header(&r, "Date", date, sizeof(date)) == 0 && bc_httpc_date(date, &t) == 0 &&
	    t > 0)
		*date_ms = (int64_t)t * 1000;
	bc_httpc_resp_free(&r);
	return 0;
}
