/* Every secret the server hands out, minted and parsed in one place: join tokens
 * (role join or discovery, "bct_" + "tok_<26>" + "_" + secret, BC_WIRE_TOKEN_PREFIX)
 * and API keys ("bck_" + "key_<26>" + "_" + secret). The secret part is 32 random
 * bytes base64url; what is stored is the hex SHA-256 of that text, never the text.
 * Presented secrets are compared with bc_secret_matches(), in constant time.
 *
 * The parsers read untrusted bytes (an Authorization header, a JoinRequest's token):
 * they check the shape only and return 0 or BC_ERR_INVALID, with the id copied out
 * and *secret pointing into the caller's string. */
#ifndef BC_SECRET_H
#define BC_SECRET_H

#include <stddef.h>

#include "bc/err.h"

#define BC_SECRET_API_KEY_PREFIX "bck_"
#define BC_SECRET_ID_LEN         30 /* "tok_" or "key_" + a 26-character ULID */
#define BC_SECRET_LEN            43 /* base64url of 32 bytes, unpadded */
#define BC_SECRET_HASH_HEX       65 /* 64 hex digits and the NUL */

/* *whole = prefix + id + "_" + a new secret (malloc'd: wipe it with bc_freezero and
 * free it); hash_hex = the hex SHA-256 of the secret part, as stored. On an error
 * *whole is NULL and hash_hex "". */
BC_WUR int bc_secret_mint(const char *prefix, const char *id, char **whole,
                          char hash_hex[BC_SECRET_HASH_HEX]);

/* "bct_tok_<26 lower-case base32>_<secret of 16 to 128 bytes>": id receives "tok_<26>"
 * (id[BC_SECRET_ID_LEN + 1]). */
BC_WUR int bc_secret_parse_token(const char *token, char id[BC_SECRET_ID_LEN + 1],
                                 const char **secret);

/* "bck_key_<26 lower-case base32>_<43 base64url>": id receives "key_<26>". */
BC_WUR int bc_secret_parse_api_key(const char *key, char id[BC_SECRET_ID_LEN + 1],
                                   const char **secret);

/* 1 when the hex SHA-256 of secret is stored_hex (64 hex digits), compared in constant
 * time; 0 when not, or when stored_hex has another length; < 0 on an error. */
BC_WUR int bc_secret_matches(const char *secret, const char *stored_hex);

#endif
