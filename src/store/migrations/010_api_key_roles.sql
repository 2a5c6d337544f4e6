-- Scoped API keys (docs/admin-api.md, "Roles"): what a key may call, from least to
-- most: metrics (GET /metrics only), viewer (read), operator (all but API keys and
-- tenants), admin (everything). Keys made before roles administered everything, so
-- they stay admin.
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'operator', 'viewer', 'metrics'));
