/* Canonical forms of the hardware identifiers machines report and operators bind
 * tokens to, so that one comparison (strcmp) decides whether two are the same.
 *
 * A UUID is canonical as 36 characters, lower-case hex digits in groups 8-4-4-4-12
 * joined by '-'; a MAC address as 17 characters, six lower-case two-digit hex octets
 * joined by ':'. Both functions accept those shapes with hex digits of either case
 * (firmware and BIOS screens print upper case), a MAC also with '-' between all its
 * octets, and nothing else: no braces, no "urn:uuid:", no '.' or mixed separators
 * between MAC octets, no other length. out is always a
 * NUL-terminated string, empty on failure. 0 or BC_ERR_INVALID. */
#ifndef BC_CANON_H
#define BC_CANON_H

#include "bc/err.h"

#define BC_UUID_LEN 36 /* without the NUL */
#define BC_MAC_LEN  17

BC_WUR int bc_uuid_canon(const char *in, char out[static BC_UUID_LEN + 1]);
BC_WUR int bc_mac_canon(const char *in, char out[static BC_MAC_LEN + 1]);

#endif
