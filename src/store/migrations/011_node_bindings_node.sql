-- A node's page lists its bindings (the hardware keys bound to it): read by node, from
-- an index rather than the whole table.
CREATE INDEX node_bindings_node ON node_bindings(node_id, created_at);
