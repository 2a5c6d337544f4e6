-- Certificate lineage, hardware keys scoped by who vouches for them, API key
-- lifecycle. Columns only: valid on SQLite and PostgreSQL alike.

-- A renewal's certificate names the certificate it renewed (predecessor) and the
-- CSR it answers (a replayed RenewRequest answers the same row). used_at: the first
-- renewal with, or x509pop by, the certificate; when a certificate is first used
-- every other certificate of its node is superseded (superseded_at).
ALTER TABLE node_certs ADD COLUMN csr_sha256 TEXT;       -- hex sha256 of the CSR
ALTER TABLE node_certs ADD COLUMN predecessor TEXT;      -- serial; NULL for a join's
ALTER TABLE node_certs ADD COLUMN used_at BIGINT;
ALTER TABLE node_certs ADD COLUMN superseded_at BIGINT;
CREATE INDEX node_certs_predecessor ON node_certs(predecessor);

-- A hardware key taken from unverified claims (the product UUID) is unique within its
-- tenant only; nodes.hardware_key keeps the keys an attestor proves, unique across the
-- fleet. Every key stored before this migration came from the claims.
ALTER TABLE nodes ADD COLUMN claimed_key TEXT;
UPDATE nodes SET claimed_key = hardware_key, hardware_key = NULL WHERE hardware_key LIKE 'uuid:%';
CREATE UNIQUE INDEX nodes_claimed_key ON nodes(tenant_id, claimed_key);

-- API keys: an optional expiry, and when each was last used (at most once a minute).
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;
