-- A certificate's DER stored as its bytes (BYTEA; on SQLite a BLOB, BYTEA being only a
-- type name there) rather than as hex text, twice its size (docs/server.md,
-- "Retention"). The table is built again, so that its rows are written once at their
-- new size and the column stays NOT NULL on both engines. decode(x, 'hex') is
-- PostgreSQL's; the SQLite engine provides the same function (src/store/sqlite.c).
CREATE TABLE node_certs_b (
  serial       TEXT PRIMARY KEY,            -- hex
  node_id      TEXT NOT NULL REFERENCES nodes(id),
  generation   BIGINT NOT NULL,
  der          BYTEA NOT NULL,
  der_sha256   TEXT NOT NULL UNIQUE,        -- hex, for byte-for-byte lookups
  not_before   BIGINT NOT NULL,
  not_after    BIGINT NOT NULL,
  revoked_at   BIGINT,
  statements   TEXT NOT NULL DEFAULT '[]',  -- JSON array of urn:bc: URIs
  created_at   BIGINT NOT NULL,
  csr_sha256   TEXT,                        -- hex sha256 of the CSR
  predecessor  TEXT,                        -- serial; NULL for a join's
  used_at      BIGINT,
  superseded_at BIGINT,
  key_point    TEXT,
  role         TEXT
);
INSERT INTO node_certs_b (serial, node_id, generation, der, der_sha256, not_before, not_after, revoked_at, statements, created_at, csr_sha256, predecessor, used_at, superseded_at, key_point, role) SELECT serial, node_id, generation, decode(der_hex, 'hex'), der_sha256, not_before, not_after, revoked_at, statements, created_at, csr_sha256, predecessor, used_at, superseded_at, key_point, role FROM node_certs;
DROP TABLE node_certs;
ALTER TABLE node_certs_b RENAME TO node_certs;
CREATE INDEX node_certs_node ON node_certs(node_id);
CREATE INDEX node_certs_predecessor ON node_certs(predecessor);
CREATE INDEX node_certs_not_after ON node_certs(not_after);
