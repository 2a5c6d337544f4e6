-- Lists as keyset pages over indexes, and retention that finds its rows by index
-- (docs/server.md, "Lists and cursors", "Retention"). Valid on SQLite and PostgreSQL
-- alike.

-- A node's current certificate (the newest unrevoked one) kept on its row whenever a
-- certificate of the node is issued or revoked (rows/certs.c), so that a nodes page
-- reads no certificate subquery and expiringWithin is a range of an index. Rows
-- stored before are filled here.
ALTER TABLE nodes ADD COLUMN cert_serial TEXT;
ALTER TABLE nodes ADD COLUMN cert_not_after BIGINT;
UPDATE nodes SET cert_serial = (SELECT c.serial FROM node_certs c WHERE c.node_id = nodes.id AND c.revoked_at IS NULL ORDER BY c.created_at DESC, c.serial DESC LIMIT 1);
UPDATE nodes SET cert_not_after = (SELECT c.not_after FROM node_certs c WHERE c.serial = nodes.cert_serial);

-- Each list: its tenant then its order key, and one index per filter the API offers
-- with the order key after it, so a page is a range of one index, never a sort.
DROP INDEX nodes_tenant;
CREATE INDEX nodes_tenant_id ON nodes(tenant_id, id);
CREATE INDEX nodes_tenant_state ON nodes(tenant_id, state, id);
CREATE INDEX nodes_tenant_pool ON nodes(tenant_id, pool_id, id);
CREATE INDEX nodes_tenant_site ON nodes(tenant_id, site_id, id);
CREATE INDEX nodes_tenant_role ON nodes(tenant_id, role, id);
CREATE INDEX nodes_tenant_attestor ON nodes(tenant_id, attestor, id);
CREATE INDEX nodes_tenant_hostname ON nodes(tenant_id, hostname, id);
CREATE INDEX nodes_tenant_product ON nodes(tenant_id, product_uuid, id);
CREATE INDEX nodes_tenant_expiry ON nodes(tenant_id, cert_not_after, id);
DROP INDEX join_tokens_tenant;
CREATE INDEX join_tokens_tenant_id ON join_tokens(tenant_id, id);
CREATE INDEX join_requests_tenant_id ON join_requests(tenant_id, id);
CREATE INDEX join_requests_tenant_state ON join_requests(tenant_id, state, id);
CREATE INDEX workflows_tenant_id ON workflows(tenant_id, id);
DROP INDEX events_tenant_type;
CREATE INDEX events_tenant_time ON events(tenant_id, created_at, id);
CREATE INDEX events_tenant_type ON events(tenant_id, type, created_at, id);
CREATE INDEX events_tenant_subject ON events(tenant_id, subject, created_at, id);
DROP INDEX audit_tenant;
CREATE INDEX audit_tenant_time ON audit(tenant_id, created_at, id);
CREATE INDEX audit_tenant_action ON audit(tenant_id, action, created_at, id);
CREATE INDEX audit_tenant_subject ON audit(tenant_id, subject, created_at, id);

-- Retention (prune) finds what it deletes by these, and finds nothing without a scan.
CREATE INDEX events_time ON events(created_at);
CREATE INDEX audit_time ON audit(created_at);
CREATE INDEX node_certs_not_after ON node_certs(not_after);
