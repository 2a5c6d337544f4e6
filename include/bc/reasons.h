/* Every refusal reason JoinService, Renew and the built-in attestors can give, in one
 * place. A reason is what the operator sees in the security.join.refused (or
 * security.renew.refused) event, the log and on_refusal; the machine never sees it:
 * every refusal answers the same bytes. JoinService's own policy reasons carry the
 * prefix "join:" in the constant itself, so a reason is published as it is written
 * here. A plugin attestor may give reasons of its own (static strings). */
#ifndef BC_REASONS_H
#define BC_REASONS_H

/* the request itself */
/* no attestor with that id runs here */
#define BC_R_ATTESTOR_UNKNOWN "attestor-unknown"
/* the attestor does not admit that role */
#define BC_R_ROLE_NOT_ADMITTED "role-not-admitted"
/* not a DER CSR of a P-256 key signed by it with ECDSA-SHA256 (SHA-1 and others refused) */
#define BC_R_CSR_INVALID "csr-invalid"
/* hardware claims out of shape */
#define BC_R_CLAIMS_INVALID "claims-invalid"
/* the sealed token does not open (another key, another CSR) */
#define BC_R_TOKEN_UNREADABLE "token-unreadable"

/* join-token (and every token-based attestor) */
#define BC_R_TOKEN_MISSING   "token-missing"
#define BC_R_TOKEN_MALFORMED "token-malformed"
#define BC_R_TOKEN_UNKNOWN   "token-unknown"
#define BC_R_TOKEN_SECRET    "token-secret"
#define BC_R_TOKEN_REVOKED   "token-revoked"
#define BC_R_TOKEN_EXPIRED   "token-expired"
#define BC_R_TOKEN_USED_UP   "token-used-up"
#define BC_R_TOKEN_ROLE      "token-role"

/* JoinService policy */
/* the pool's joinAttestors does not list the attestor */
#define BC_R_POOL_ATTESTOR "join:pool-attestor"
/* the result names a pool that is not the tenant's */
#define BC_R_POOL_UNKNOWN "join:pool-unknown"
/* the token's expect binding does not match the claims */
#define BC_R_EXPECT_MISMATCH "join:expect-mismatch"
/* another node holds the trusted hardware key */
#define BC_R_RECLAIM "join:reclaim"
/* a ramdisk node would be re-keyed in another role before an operator enrolled it in a
 * pool (machines enroll), or in a role other than node */
#define BC_R_NOT_ENROLLED "join:not-enrolled"
/* the node to reclaim is retired */
#define BC_R_NODE_RETIRED "join:node-retired"
/* the result names a node that does not exist here */
#define BC_R_NODE_UNKNOWN "join:node-unknown"
/* the binding belongs to another node */
#define BC_R_BOUND_ELSEWHERE "join:bound-elsewhere"
/* a statement renewals could not prove again */
#define BC_R_NODE_KEY_STATEMENT "join:node-key-statement"
/* the attestor admitted the machine without naming a tenant or a node (a plugin bug) */
#define BC_R_ATTESTOR_NO_TENANT "join:attestor-no-tenant"
/* the attestor refused without giving a reason (a plugin bug) */
#define BC_R_ATTESTOR_REFUSED "attestor-refused"
/* the attestor returned without filling an outcome (a plugin bug) */
#define BC_R_ATTESTOR_NO_OUTCOME "attestor-no-outcome"

/* x509pop */
/* evidence not the documented JSON, or the leaf not a node certificate of ours for that node id
   (or of a node CA retired with --force) */
#define BC_R_X509POP_MALFORMED "x509pop-malformed"
/* the proof does not verify under the leaf's key */
#define BC_R_X509POP_SIGNATURE "x509pop-signature"
/* clientTime outside window_ms of database time */
#define BC_R_X509POP_CLIENT_TIME "x509pop-client-time"
/* the leaf is not byte for byte a node_certs row of that node */
#define BC_R_X509POP_NOT_CURRENT "x509pop-not-current"
/* the leaf is from an older identity generation (a reclaim, revoke-identity) */
#define BC_R_X509POP_GENERATION "x509pop-generation"
/* the leaf was revoked */
#define BC_R_X509POP_REVOKED "x509pop-revoked"
/* the node is retired */
#define BC_R_X509POP_RETIRED "x509pop-retired"
/* the certificate's role is not the requested one */
#define BC_R_X509POP_ROLE "x509pop-role"
/* expired more than grace_ms ago */
#define BC_R_X509POP_EXPIRED "x509pop-expired"
/* the proof was used before */
#define BC_R_X509POP_REPLAY "x509pop-replay"
/* the leaf names a TPM AK: only the tpm attestor re-joins it, so the statement is never dropped */
#define BC_R_X509POP_KEY_STATEMENT "x509pop-key-statement"
/* a newer certificate of the node was used (renewed with, or presented to x509pop): the
 * leaf's key was rotated away */
#define BC_R_X509POP_SUPERSEDED "x509pop-superseded"

/* provisioned */
/* the token is not of role provisioned with exactly one use left */
#define BC_R_NOT_SINGLE_USE "not-single-use"
/* the machine's claims carry no product UUID (or not a UUID) */
#define BC_R_NO_PRODUCT_UUID "no-product-uuid"
/* neither the token's expect.productUuid nor a target binds the token to one machine */
#define BC_R_UNBOUND "unbound"
/* the claimed product UUID is not the one the token is bound to */
#define BC_R_PRODUCT_UUID_MISMATCH "product-uuid-mismatch"
/* the deploy workflow that minted the token was cancelled (or is no longer running) */
#define BC_R_WORKFLOW_NOT_RUNNING "workflow-not-running"

/* discovery (a PXE-booted ramdisk vouched for by its site's boot server); the token
 * checks are join-token's, not-single-use and product-uuid-mismatch provisioned's */
/* the attestation is not a SignedDiscoveryAssertion, or a field is out of shape */
#define BC_R_DISCOVERY_MALFORMED "discovery-malformed"
/* the token is not for the assertion's site */
#define BC_R_DISCOVERY_SITE "discovery-site-mismatch"
/* the token's expect.mac is not the asserted MAC */
#define BC_R_DISCOVERY_TOKEN_MAC "discovery-token-mac"
/* the token was minted for another workflow than the asserted one */
#define BC_R_DISCOVERY_WORKFLOW "discovery-workflow-mismatch"
/* the signer is not a site node of the assertion's site */
#define BC_R_DISCOVERY_SIGNER "discovery-signer-unknown"
/* the signer's node is retired */
#define BC_R_DISCOVERY_SIGNER_RETIRED "discovery-signer-retired"
/* the signer does not hold site::boot at exactly the asserted epoch (fenced) */
#define BC_R_DISCOVERY_FENCED "discovery-fenced"
/* no current certificate of the signer (join/holder.h: a superseded one is not) with
 * that key id, or the signature does not verify */
#define BC_R_DISCOVERY_SIGNATURE "discovery-signature"
/* past not_after or 15 minutes after issued_at, or issued in the future */
#define BC_R_DISCOVERY_EXPIRED "discovery-expired"
/* the machine's claimed MACs do not include the asserted MAC */
#define BC_R_DISCOVERY_MAC "discovery-mac-not-claimed"
/* the signed assertion admitted a join before */
#define BC_R_ASSERTION_REUSED "assertion-reused"
/* an operator denied the machine's join request */
#define BC_R_DISCOVERY_DENIED "discovery-denied"
/* the boot entry names a product UUID (commission --product-uuid) and the assertion
 * names another, or none */
#define BC_R_DISCOVERY_ENTRY_UUID "discovery-entry-uuid"

/* SiteService and FetchSecret (published as security.site.refused) */
/* no chain, the leaf is not a node certificate of ours, or a field is out of shape */
#define BC_R_SITE_MALFORMED "site-malformed"
/* the caller's certificate is not a site certificate */
#define BC_R_SITE_ROLE "site-role"
/* the proof does not verify under the leaf's key */
#define BC_R_SITE_PROOF "site-proof"
/* the leaf is not a current (unrevoked, unexpired, not superseded) certificate of a
 * node not retired (join/holder.h) */
#define BC_R_SITE_NOT_CURRENT "site-not-current"
/* client_time_ms is more than 60 s from database time */
#define BC_R_SITE_CLIENT_TIME "site-client-time"
/* the caller is not a node of the site it names */
#define BC_R_SITE_WRONG_SITE "site-wrong-site"
/* the caller does not hold site::boot (at that epoch): a fenced boot server */
#define BC_R_SITE_NOT_HOLDER "site-not-holder"
/* FetchSecret: a kind other than discovery-token, or a MAC that is not one */
#define BC_R_SECRET_KIND "secret-kind"
/* FetchSecret: the workflow is not a running commission of this site for that MAC */
#define BC_R_SECRET_WORKFLOW "secret-workflow"
/* FetchSecret: the site has 64 live unknown-MAC tokens already, or the workflow 16 */
#define BC_R_SECRET_LIMIT "secret-limit"

/* Renew (published as security.renew.refused to the node's owner) */
/* no chain, or the leaf is not a node certificate of ours (or its node CA was retired with
   --force) */
#define BC_R_RENEW_MALFORMED "renew-malformed"
/* the leaf is not byte for byte a node_certs row of that node */
#define BC_R_RENEW_NOT_CURRENT "renew-not-current"
/* the leaf is of an older identity generation */
#define BC_R_RENEW_GENERATION "renew-generation"
/* the leaf expired (database time): re-join with x509pop */
#define BC_R_RENEW_EXPIRED "renew-expired"
/* the leaf was revoked */
#define BC_R_RENEW_REVOKED "renew-revoked"
/* the node is retired */
#define BC_R_RENEW_RETIRED "renew-retired"
/* the proof does not verify under the leaf's key */
#define BC_R_RENEW_PROOF "renew-proof"
/* client time more than 60 s from database time */
#define BC_R_RENEW_CLIENT_TIME "renew-client-time"
/* the leaf's successor was used, or the leaf spent its one extra renewal: renew with the
 * newest certificate */
#define BC_R_RENEW_SUPERSEDED "renew-superseded"
/* a ramdisk certificate: a ramdisk identity ends with its first certificate (commission
 * the machine again) */
#define BC_R_RENEW_ROLE "renew-role"
/* a urn:bc: statement we do not know */
#define BC_R_KEY_STATEMENT_UNKNOWN "key-statement-unknown"
/* a statement this build cannot prove again */
#define BC_R_KEY_STATEMENT_UNSUPPORTED "key-statement-unsupported"
/* a malformed urn:bc:tpm-ak: statement */
#define BC_R_TPM_AK_URI "tpm-ak-uri"
/* the leaf names an AK, the request has no key_attestation */
#define BC_R_KEY_ATTESTATION_MISSING "key-attestation-missing"
/* ak_public is not the named AK (another TPM's), or not an attestation key */
#define BC_R_KEY_ATTESTATION_AK "key-attestation-ak"

/* tpm: round 1 (the TPM's identity) */
/* not a TpmEvidence or TpmAnswer, or over its bounds */
#define BC_R_TPM_EVIDENCE_MALFORMED "tpm-evidence-malformed"
/* the EK public area does not parse or is no EK we can challenge */
#define BC_R_EK_MALFORMED "ek-malformed"
/* the EK certificate chains to none of ek_roots */
#define BC_R_EK_CERTIFICATE_CHAIN "ek-certificate-chain"
/* the EK certificate is for another key than the EK */
#define BC_R_EK_CERTIFICATE_KEY "ek-certificate-key"
/* no EK certificate, and allow_uncertified_ek is off */
#define BC_R_EK_UNCERTIFIED "ek-uncertified"
/* the AK public area does not parse */
#define BC_R_AK_MALFORMED "ak-malformed"
/* the AK is not a restricted signing key made in the TPM */
#define BC_R_AK_ATTRIBUTES "ak-attributes"
/* tpm: round 2 (the answer) */
/* the state does not open under challengeKey (forged, altered) */
#define BC_R_CHALLENGE_STATE "challenge-state"
/* the challenge was made for another CSR */
#define BC_R_CHALLENGE_OTHER_CSR "challenge-for-another-csr"
/* answered after the challenge's not_after (database time) */
#define BC_R_CHALLENGE_EXPIRED "challenge-expired"
/* the answer's evidence is not round 1's */
#define BC_R_CHALLENGE_EVIDENCE "challenge-evidence"
/* the activated secret is not the one sealed to the EK */
#define BC_R_CREDENTIAL_SECRET "credential-secret"
/* the quote or its signature does not parse */
#define BC_R_QUOTE_MALFORMED "quote-malformed"
/* the quote is not signed by the AK */
#define BC_R_QUOTE_SIGNATURE "quote-signature"
/* not TPM_GENERATED_VALUE: not made by a TPM */
#define BC_R_QUOTE_MAGIC "quote-magic"
/* not a TPM_ST_ATTEST_QUOTE */
#define BC_R_QUOTE_TYPE "quote-type"
/* extraData is not sha256(secret || sha256(csr)) */
#define BC_R_QUOTE_NONCE "quote-nonce"
/* another bank, or a PCR of the selection left out */
#define BC_R_QUOTE_PCR_SELECTION "quote-pcr-selection"
/* the supplied PCR values are not the quoted ones */
#define BC_R_QUOTE_PCR_DIGEST "quote-pcr-digest"
/* pcr_policy or pcr_policy_command refused the PCR values */
#define BC_R_PCR_POLICY "pcr-policy"
/* the certification does not parse, or is no certify */
#define BC_R_NODE_KEY_MALFORMED "node-key-malformed"
/* the certification is not signed by the AK */
#define BC_R_NODE_KEY_SIGNATURE "node-key-signature"
/* its extraData is not sha256(csr) */
#define BC_R_NODE_KEY_NONCE "node-key-nonce"
/* the certified name is not key_public's */
#define BC_R_NODE_KEY_NAME "node-key-name"
/* the key can leave the TPM, was imported, or cannot sign */
#define BC_R_NODE_KEY_ATTRIBUTES "node-key-attributes"
/* the certified key is not the CSR's key */
#define BC_R_NODE_KEY_NOT_CSR "node-key-not-csr"
/* no certification, and node_key = "certified" */
#define BC_R_NODE_KEY_NOT_CERTIFIED "node-key-not-certified"
/* tpm: where it joins */
/* not bound, not in resolve, and no enrollment */
#define BC_R_UNKNOWN_EK "unknown-ek"
/* an operator denied this EK's join request */
#define BC_R_ENROLLMENT_DENIED "enrollment-denied"
/* the join request (tpm or discovery) was made for another CSR, or other claims */
#define BC_R_ENROLLMENT_CSR "enrollment-csr"

/* cloud-iid (every provider) */
/* evidence not {"provider","document"[,"signature","rsa2048"]}, or over its bounds */
#define BC_R_CLOUD_MALFORMED "cloud-iid-malformed"
/* a provider (or an OIDC issuer) this server does not configure */
#define BC_R_CLOUD_PROVIDER "cloud-iid-provider"
/* no resolve rule matches the instance's provider, account and zone */
#define BC_R_UNKNOWN_INSTANCE "unknown-instance"
/* this (provider, account, instance) joined before: re-join with x509pop */
#define BC_R_INSTANCE_REUSED "instance-reused"
/* cloud-iid: identity tokens (gcp, oidc), checked by src/crypto/jws.c */
/* not a compact JWS of base64url JSON objects (padding, bad characters, trailing dots,
 * duplicate keys) */
#define BC_R_JWS_MALFORMED "jws-malformed"
/* alg not allowed for the provider (none, HS*), or not the key's type or its JWK alg */
#define BC_R_JWS_ALG "jws-alg"
/* no kid, or a kid the JWKS does not hold (after one fetch again) */
#define BC_R_JWS_KID "jws-kid"
/* the header has a crit parameter */
#define BC_R_JWS_CRIT "jws-crit"
/* the JWK is unusable: RSA under 2048 bits, or not meant for signatures */
#define BC_R_JWS_KEY "jws-key"
/* the signature does not verify under the kid's key */
#define BC_R_JWS_SIGNATURE "jws-signature"
/* iss is not exactly the provider's issuer */
#define BC_R_JWS_ISSUER "jws-issuer"
/* aud does not contain the expected audience (gcp, oidc: bound to the CSR) */
#define BC_R_JWS_AUDIENCE "jws-audience"
/* exp passed (beyond the leeway), or no exp */
#define BC_R_JWS_EXPIRED "jws-expired"
/* nbf or iat in the future (beyond the leeway) */
#define BC_R_JWS_NOT_YET_VALID "jws-not-yet-valid"
/* iat older than max_age_ms, or no iat */
#define BC_R_JWS_TOO_OLD "jws-too-old"
/* the JWKS could not be fetched or read */
#define BC_R_JWKS_UNAVAILABLE "jwks-unavailable"
/* cloud-iid: gcp */
/* no google.compute_engine project_id, zone and instance_id (format=full) */
#define BC_R_GCP_CLAIMS "gcp-claims"
/* the project is not in projects */
#define BC_R_GCP_PROJECT "gcp-project"
/* cloud-iid: aws */
/* the document is not the EC2 identity JSON, or a signature does not decode */
#define BC_R_AWS_MALFORMED "aws-malformed"
/* no certificate is configured for the document's region (and no "*") */
#define BC_R_AWS_REGION "aws-region"
/* neither rsa2048 nor signature verifies with the region's certificates */
#define BC_R_AWS_SIGNATURE "aws-signature"
/* rsa2048 verified, but the evidence's document is not the content it signed */
#define BC_R_AWS_DOCUMENT_MISMATCH "aws-document-mismatch"
/* pendingTime more than max_age_ms ago, or in the future */
#define BC_R_AWS_TOO_OLD "aws-too-old"
/* the account is not in accounts */
#define BC_R_AWS_ACCOUNT "aws-account"
/* cloud-iid: oidc */
/* the account or instance claim is missing or not a string */
#define BC_R_OIDC_CLAIMS "oidc-claims"
/* the account is not in accounts */
#define BC_R_OIDC_ACCOUNT "oidc-account"

#endif
