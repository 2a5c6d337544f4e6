/* The SIGHUP generation (bc/reload.h). */
#include "bc/reload.h"

static uint64_t generation;

void bc_reload_request(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_SEQ_CST);
}

uint64_t bc_reload_generation(void)
{
	return __atomic_load_n(&generation, __ATOMIC_SEQ_CST);
}
