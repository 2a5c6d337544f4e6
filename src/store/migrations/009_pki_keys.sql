-- The keys of the PKI that rotate (docs/server.md, "PKI lifecycle"): one row per key
-- generation, its private key sealed under the server secret as the PKI bundle is
-- (src/pki/bundle.c), read by every replica. kind 'node-ca' is used now; the join
-- keys ('join-signing', 'join-encryption') will live here too. state: 'prepared'
-- (published, signs nothing), 'active' (the newest activated signs; the others still
-- verify), 'retired' (verifies nothing). pki_state holds the trust bundle's
-- spiffe_sequence, raised at each change. Valid on SQLite and PostgreSQL alike.
CREATE TABLE pki_keys (
  id           BIGINT PRIMARY KEY,
  kind         TEXT NOT NULL,               -- node-ca, join-signing, join-encryption
  state        TEXT NOT NULL,               -- prepared, active, retired
  cert_pem     TEXT NOT NULL DEFAULT '',    -- the CA certificate (node-ca)
  public_sha256 TEXT NOT NULL,              -- hex, of the public key's SPKI DER
  key_sealed   TEXT NOT NULL,               -- the private key, sealed
  created_at   BIGINT NOT NULL,
  activated_at BIGINT,
  retired_at   BIGINT,
  forced       BIGINT NOT NULL DEFAULT 0,   -- 1: retired before its certificates expired
  UNIQUE (kind, public_sha256)
);
CREATE INDEX pki_keys_kind_state ON pki_keys(kind, state, id);

CREATE TABLE pki_state (
  name  TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);
