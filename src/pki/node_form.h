/* Internal to src/pki: the fixed parts of the one form every node certificate has, as
 * DER bytes. node_der.c writes them and node_read.c compares them byte for byte, so
 * the two cannot drift apart; csr.c takes the signature algorithm from here too. */
#ifndef BC_PKI_NODE_FORM_H
#define BC_PKI_NODE_FORM_H

#include <stdint.h>

/* [0] EXPLICIT INTEGER 2: X.509 v3 */
static const uint8_t pki_version3[] = {0xa0, 0x03, 0x02, 0x01, 0x02};
/* AlgorithmIdentifier { ecdsa-with-SHA256 }, parameters absent (RFC 5758) */
static const uint8_t pki_ecdsa_sha256[] = {0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86,
                                           0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const uint8_t pki_oid_cn[] = {0x06, 0x03, 0x55, 0x04, 0x03};
static const uint8_t pki_oid_basic[] = {0x06, 0x03, 0x55, 0x1d, 0x13};
static const uint8_t pki_oid_ku[] = {0x06, 0x03, 0x55, 0x1d, 0x0f};
static const uint8_t pki_oid_eku[] = {0x06, 0x03, 0x55, 0x1d, 0x25};
static const uint8_t pki_oid_ski[] = {0x06, 0x03, 0x55, 0x1d, 0x0e};
static const uint8_t pki_oid_aki[] = {0x06, 0x03, 0x55, 0x1d, 0x23};
static const uint8_t pki_oid_san[] = {0x06, 0x03, 0x55, 0x1d, 0x11};
/* BOOLEAN TRUE: an extension's critical flag, written only when set */
static const uint8_t pki_critical[] = {0x01, 0x01, 0xff};
/* basicConstraints: CA:FALSE is the default, left out */
static const uint8_t pki_basic_not_ca[] = {0x30, 0x00};
/* keyUsage digitalSignature: bit 0 of a one-byte BIT STRING, seven unused bits */
static const uint8_t pki_ku_digital_signature[] = {0x03, 0x02, 0x07, 0x80};
/* extKeyUsage: SEQUENCE { id-kp-clientAuth } */
static const uint8_t pki_eku_client_auth[] = {0x30, 0x0a, 0x06, 0x08, 0x2b, 0x06,
                                              0x01, 0x05, 0x05, 0x07, 0x03, 0x02};

#endif
