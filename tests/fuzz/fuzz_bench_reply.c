/* libFuzzer: arbitrary bytes as the head of an answer to bc-load's own client
 * (bench_reply_head). It is complete (1) with a status of 200 to 599, a head inside the
 * bytes given and a Content-Length within the client's bound, or waits (0) only while
 * fewer than BENCH_REPLY_HEAD_MAX bytes came, or is refused with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bench_reply_head h;
	const char *why = NULL;
	int r = bench_reply_head((const char *)data, size, &h, &why);

	if (r == 1 && (h.status < 200 || h.status > 599 || h.head_len > size ||
	               h.head_len > BENCH_REPLY_HEAD_MAX ||
	               h.content_length > BC_CLIENT_MAX_RESPONSE || h.retry_after_s > 86400))
		abort();
	if (r == 0 && size >= BENCH_REPLY_HEAD_MAX)
		abort();
	if (r < 0 && (why == NULL || why[0] == '\0'))
		abort();
	if (r != 1 && r != 0 && r != BC_ERR_INVALID && r != BC_ERR_LIMIT)
		abort();
	return 0;
}
