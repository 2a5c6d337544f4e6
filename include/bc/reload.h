/* SIGHUP: "read your trust files again". `better-compute serve` calls
 * bc_reload_request() when it receives SIGHUP; a module that reads a file once at
 * start and may read it again on SIGHUP (cloud-iid's JWKS files) remembers the
 * generation it read it under and, seeing a newer one, reads the file again at its
 * next use. Nothing else is re-read: the rest of the configuration needs a restart.
 * Both are safe from any thread (an atomic counter). */
#ifndef BC_RELOAD_H
#define BC_RELOAD_H

#include <stdint.h>

void bc_reload_request(void);
/* 0 until the first request, then one more for each. */
uint64_t bc_reload_generation(void);

#endif
