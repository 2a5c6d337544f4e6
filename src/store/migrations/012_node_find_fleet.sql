-- nodes list --serial and --mac (docs/server.md, "Lists and cursors"): each filter a
-- range of an index, as the other filters of the nodes list. Valid on SQLite and
-- PostgreSQL alike.
CREATE INDEX nodes_tenant_serial ON nodes(tenant_id, serial, id);

-- A node's MACs, one row each (nodes.macs keeps their JSON array), written by
-- rows/nodes.c at every join and reclaim and deleted with the node, so that --mac is
-- a range of the primary key. mac is canonical: lower-case xx:xx:xx:xx:xx:xx.
CREATE TABLE node_macs (
  tenant_id   TEXT NOT NULL,
  mac         TEXT NOT NULL,
  node_id     TEXT NOT NULL REFERENCES nodes(id),
  PRIMARY KEY (tenant_id, mac, node_id)
);
CREATE INDEX node_macs_node ON node_macs(node_id);

-- The nodes stored before: nodes.macs is a compact JSON array of strings, each MAC
-- 17 characters between quotes (bcd sends xx:xx:xx:xx:xx:xx), so the k-th (from 0)
-- starts at 3 + 20k; both engines read that without a JSON function of their own.
-- An entry of another length is no MAC and ends what is read of its node's array
-- (the node's next join writes its MACs anew).
INSERT INTO node_macs (tenant_id, mac, node_id)
  WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 63)
  SELECT DISTINCT n.tenant_id, lower(replace(substr(n.macs, 3 + 20 * k.i, 17), '-', ':')), n.id
  FROM nodes n, k
  WHERE length(n.macs) >= 20 * k.i + 21
    AND substr(n.macs, 2 + 20 * k.i, 1) = '"'
    AND substr(n.macs, 20 + 20 * k.i, 1) = '"';

-- /metrics' fleet gauges (nodes by state, certificates expiring within 24 h and 7 d)
-- read this index alone, never the table (rows/nodes.c, bc_row_nodes_fleet).
CREATE INDEX nodes_state_expiry ON nodes(state, cert_not_after);
