-- Commissioning: workflows are listed per tenant and found by the token their
-- userdata.render step minted; a node's inventory is read newest first.
CREATE INDEX workflows_tenant ON workflows(tenant_id, created_at);
CREATE INDEX join_tokens_workflow ON join_tokens(workflow_id);
