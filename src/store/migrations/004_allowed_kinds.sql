-- The command kinds a node may run, as its attestor's result named them: a JSON
-- array of strings ('[]' for none, and for every node that joined before).
ALTER TABLE nodes ADD COLUMN allowed_kinds TEXT NOT NULL DEFAULT '[]';
