/* Every constant both sides of the wire share: RPC paths, the content type, the
 * signing domain, the sealed token's HPKE info, the token's shape, the CSR subject,
 * the urn:bc: statement prefixes and the limits both sides enforce. The server, bcd,
 * the client library, the tools and the tests include this and never redefine one;
 * a change here changes the bytes on the wire.
 *
 * The signature purposes are the BC_PURPOSE_* strings of bc/crypto.h and the SPIFFE
 * roles the BC_ROLE_* strings of bc/pki.h. */
#ifndef BC_WIRE_H
#define BC_WIRE_H

/* The JoinService's Connect path prefix; a method's path is this + its name. */
#define BC_WIRE_JOIN_SERVICE "/bettercompute.join.v1.JoinService/"
/* POST path of JoinService.Join (body: a JoinRequest, answer: a SignedResponse). */
#define BC_WIRE_PATH_JOIN BC_WIRE_JOIN_SERVICE "Join"
/* POST path of JoinService.Renew (body: a RenewRequest, answer: a SignedResponse). */
#define BC_WIRE_PATH_RENEW BC_WIRE_JOIN_SERVICE "Renew"
/* POST path of JoinService.FetchSecret (a SecretRequest; a SignedResponse of a
 * SecretResponseBody under secret-response). */
#define BC_WIRE_PATH_FETCH_SECRET BC_WIRE_JOIN_SERVICE "FetchSecret"
/* SiteService: a site's boot server (bcd site) and its site::boot lease. */
#define BC_WIRE_SITE_SERVICE       "/bettercompute.site.v1.SiteService/"
#define BC_WIRE_PATH_ACQUIRE_LEASE BC_WIRE_SITE_SERVICE "AcquireLease"
#define BC_WIRE_PATH_RENEW_LEASE   BC_WIRE_SITE_SERVICE "RenewLease"
#define BC_WIRE_PATH_RELEASE_LEASE BC_WIRE_SITE_SERVICE "ReleaseLease"
#define BC_WIRE_PATH_LIST_BOOT     BC_WIRE_SITE_SERVICE "ListBootEntries"
/* GET paths of the trust bundle (no key): the node CAs as PEM, and as a SPIFFE trust
 * bundle (JWK set) for a SPIFFE bundle endpoint client. */
#define BC_WIRE_PATH_BUNDLE        "/bundle"
#define BC_WIRE_PATH_BUNDLE_SPIFFE "/bundle/spiffe"
/* The boot lease's name, and the kind of secret FetchSecret mints for a MAC. */
#define BC_WIRE_LEASE_BOOT       "site::boot"
#define BC_WIRE_SECRET_DISCOVERY "discovery-token"
/* A discovery assertion (and its token) is valid at most this long after issued_at. */
#define BC_WIRE_DISCOVERY_MAX_AGE_MS (15LL * 60 * 1000)
/* The largest SignedDiscoveryAssertion either side reads, in bytes. */
#define BC_WIRE_ASSERTION_MAX 2048
/* On the ramdisk's kernel command line: the token as minted, the assertion base64url. */
#define BC_WIRE_CMDLINE_TOKEN     "bc.token"
#define BC_WIRE_CMDLINE_ASSERTION "bc.assertion"
#define BC_WIRE_CMDLINE_SERVER    "bc.server"

/* The built-in attestors' ids (JoinRequest.attestor; "" on the wire is join-token).
 * An attestor's id is one line here and one row in each table that names attestors:
 * the server's built-ins (src/attest/builtin.c), what a joining machine does with each
 * (src/client/attestors.c) and bcd's producers (src/agent/producer.c). */
#define BC_WIRE_ATTESTOR_JOIN_TOKEN  "join-token"
#define BC_WIRE_ATTESTOR_TPM         "tpm"
#define BC_WIRE_ATTESTOR_X509POP     "x509pop"
#define BC_WIRE_ATTESTOR_PROVISIONED "provisioned"
#define BC_WIRE_ATTESTOR_CLOUD_IID   "cloud-iid"
#define BC_WIRE_ATTESTOR_DISCOVERY   "discovery"

/* Content-Type of every Connect request and successful answer (a serialized message). */
#define BC_WIRE_CONTENT_TYPE "application/proto"

/* The domain of every ES256 signature: "bettercompute/v1" 0x00 purpose 0x00 payload. */
#define BC_WIRE_SIG_DOMAIN "bettercompute/v1"

/* HPKE info of a sealed join token (JoinRequest.sealed_token); aad = sha256(csr). */
#define BC_WIRE_TOKEN_INFO "bettercompute join token v1"
/* A join token as minted: "bct_" + token id + "_" + secret. */
#define BC_WIRE_TOKEN_PREFIX "bct_"
/* The longest token, in bytes, the agent sends and the server opens. */
#define BC_WIRE_TOKEN_MAX 512

/* The subject CN of every node CSR; the server reads only the key (the certificate's CN
 * is the node id). */
#define BC_WIRE_CSR_CN "bettercompute node"

/* The scheme of an AK statement, whatever name algorithm follows: what a reader matches
 * to tell an AK statement from another urn:bc: statement. */
#define BC_WIRE_TPM_AK_URN_SCHEME "urn:bc:tpm-ak:"
/* The one AK statement form issued: this + the 68 lower-case hex digits of the AK's TPM
 * name (000b || SHA-256 digest). */
#define BC_WIRE_TPM_AK_URN_SHA256 BC_WIRE_TPM_AK_URN_SCHEME "sha256:"

/* cloud-iid: how an identity token's audience binds the CSR: the server's audience,
 * this separator, the CSR's lower-case hex SHA-256. */
#define BC_WIRE_CLOUD_AUDIENCE_SEP "#"

/* The most MAC addresses a JoinRequest's hardware claims may carry. */
#define BC_WIRE_MACS_MAX 64
/* The largest challenge (JoinChallenge.payload) the agent accepts, in bytes. */
#define BC_WIRE_CHALLENGE_MAX (64u * 1024)

#endif
