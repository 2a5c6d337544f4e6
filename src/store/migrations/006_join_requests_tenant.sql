-- A join request belongs to the tenant whose token (discovery) or enrollment (tpm)
-- made it: it is found by (tenant, attestor, key), so a machine of one tenant never
-- lands on, or is refused by, another tenant's request for the same key. SQLite
-- cannot drop a table's UNIQUE constraint: the table is made again with the new one
-- and its rows copied, on both engines alike (no other table refers to it).
CREATE TABLE join_requests_t (
  id           TEXT PRIMARY KEY,
  tenant_id    TEXT NOT NULL REFERENCES tenants(id),
  pool_id      TEXT,
  site_id      TEXT,
  attestor     TEXT NOT NULL,
  request_key  TEXT NOT NULL,
  csr_sha256   TEXT NOT NULL,
  claims       TEXT NOT NULL DEFAULT '{}',
  detail       TEXT NOT NULL DEFAULT '{}',
  state        TEXT NOT NULL,
  decided_by   TEXT,
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  decided_at   BIGINT,
  UNIQUE (tenant_id, attestor, request_key)
);
INSERT INTO join_requests_t (id, tenant_id, pool_id, site_id, attestor, request_key, csr_sha256, claims, detail, state, decided_by, created_at, expires_at, decided_at) SELECT id, tenant_id, pool_id, site_id, attestor, request_key, csr_sha256, claims, detail, state, decided_by, created_at, expires_at, decided_at FROM join_requests;
DROP TABLE join_requests;
ALTER TABLE join_requests_t RENAME TO join_requests;
