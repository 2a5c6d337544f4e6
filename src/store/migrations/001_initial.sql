-- The schema of both engines. Times are Unix milliseconds (database time);
-- booleans are 0/1; JSON is text. Kept in the common dialect of SQLite and
-- PostgreSQL (TEXT, BIGINT), so binary values are stored as lower-case hex.

CREATE TABLE tenants (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  created_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,             -- the public part of bck_<id>_<secret>
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  secret_hash TEXT NOT NULL,                -- hex sha256(secret)
  name        TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  revoked_at  BIGINT
);

CREATE TABLE pools (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  name        TEXT NOT NULL,
  policy      TEXT NOT NULL DEFAULT '{}',   -- JSON, with joinAttestors
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL,
  UNIQUE (tenant_id, name)
);

CREATE TABLE sites (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  name        TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  UNIQUE (tenant_id, name)
);

CREATE TABLE nodes (
  id              TEXT PRIMARY KEY,
  tenant_id       TEXT NOT NULL REFERENCES tenants(id),
  pool_id         TEXT REFERENCES pools(id),
  site_id         TEXT REFERENCES sites(id),
  role            TEXT NOT NULL,            -- node, site, ramdisk, node-tenant
  state           TEXT NOT NULL,            -- adopted, cordoned, retired
  generation      BIGINT NOT NULL DEFAULT 1,-- identity generation
  hardware_key    TEXT UNIQUE,              -- trusted hardware key, when one is known
  product_uuid    TEXT,
  serial          TEXT,
  macs            TEXT NOT NULL DEFAULT '[]', -- JSON array
  hostname        TEXT,
  arch            TEXT,
  agent_version   TEXT,
  attestor        TEXT NOT NULL,            -- the attestor of the last join
  node_key        TEXT NOT NULL DEFAULT 'unattested', -- tpm or unattested
  joined_at       BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL,
  identity_revoked_at BIGINT                -- nodes revoke-identity
);
CREATE INDEX nodes_tenant ON nodes(tenant_id);

CREATE TABLE node_certs (
  serial       TEXT PRIMARY KEY,            -- hex
  node_id      TEXT NOT NULL REFERENCES nodes(id),
  generation   BIGINT NOT NULL,
  der_hex      TEXT NOT NULL,
  der_sha256   TEXT NOT NULL UNIQUE,        -- hex, for byte-for-byte lookups
  not_before   BIGINT NOT NULL,
  not_after    BIGINT NOT NULL,
  revoked_at   BIGINT,
  statements   TEXT NOT NULL DEFAULT '[]',  -- JSON array of urn:bc: URIs
  created_at   BIGINT NOT NULL
);
CREATE INDEX node_certs_node ON node_certs(node_id);

CREATE TABLE join_tokens (
  id            TEXT PRIMARY KEY,           -- tok_...
  tenant_id     TEXT NOT NULL REFERENCES tenants(id),
  pool_id       TEXT REFERENCES pools(id),
  site_id       TEXT REFERENCES sites(id),
  role          TEXT NOT NULL,              -- node, site, provisioned, discovery
  secret_hash   TEXT NOT NULL,              -- hex sha256(secret)
  uses_left     BIGINT NOT NULL,
  uses_total    BIGINT NOT NULL,
  expires_at    BIGINT NOT NULL,
  revoked_at    BIGINT,
  expect        TEXT NOT NULL DEFAULT '{}', -- JSON: productUuid, mac, serial
  allow_reclaim BIGINT NOT NULL DEFAULT 0,
  workflow_id   TEXT,
  node_id       TEXT,                       -- a target node, for provisioned tokens
  description   TEXT,
  created_at    BIGINT NOT NULL,
  last_used_at  BIGINT
);
CREATE INDEX join_tokens_tenant ON join_tokens(tenant_id);

CREATE TABLE node_bindings (
  kind        TEXT NOT NULL,                -- e.g. tpm-ek
  key         TEXT NOT NULL,
  node_id     TEXT NOT NULL REFERENCES nodes(id),
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (kind, key)
);

CREATE TABLE attestation_uses (
  attestor    TEXT NOT NULL,
  subject     TEXT NOT NULL,                -- hex sha256
  expires_at  BIGINT,                       -- NULL: kept forever
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (attestor, subject)
);

CREATE TABLE join_requests (
  id           TEXT PRIMARY KEY,            -- jr_...
  tenant_id    TEXT NOT NULL REFERENCES tenants(id),
  pool_id      TEXT,
  site_id      TEXT,
  attestor     TEXT NOT NULL,
  request_key  TEXT NOT NULL,               -- what repeated requests are keyed on
  csr_sha256   TEXT NOT NULL,
  claims       TEXT NOT NULL DEFAULT '{}',
  detail       TEXT NOT NULL DEFAULT '{}',
  state        TEXT NOT NULL,               -- pending, approved, denied, used
  decided_by   TEXT,
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  decided_at   BIGINT,
  UNIQUE (attestor, request_key)
);

CREATE TABLE leases (
  name        TEXT PRIMARY KEY,
  holder      TEXT NOT NULL,
  epoch       BIGINT NOT NULL,
  expires_at  BIGINT NOT NULL
);

CREATE TABLE workflows (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  node_id     TEXT,
  kind        TEXT NOT NULL,
  state       TEXT NOT NULL,
  data        TEXT NOT NULL DEFAULT '{}',
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL
);

CREATE TABLE inventory (
  node_id     TEXT NOT NULL REFERENCES nodes(id),
  taken_at    BIGINT NOT NULL,
  data        TEXT NOT NULL,
  PRIMARY KEY (node_id, taken_at)
);

CREATE TABLE events (
  id          TEXT PRIMARY KEY,             -- evt_<ULID>: sorts by time
  tenant_id   TEXT NOT NULL,
  type        TEXT NOT NULL,
  subject     TEXT,
  data        TEXT NOT NULL DEFAULT '{}',
  created_at  BIGINT NOT NULL
);
CREATE INDEX events_tenant_type ON events(tenant_id, type);

CREATE TABLE audit (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL,
  actor       TEXT NOT NULL,
  action      TEXT NOT NULL,
  subject     TEXT,
  data        TEXT NOT NULL DEFAULT '{}',
  created_at  BIGINT NOT NULL
);
CREATE INDEX audit_tenant ON audit(tenant_id);
