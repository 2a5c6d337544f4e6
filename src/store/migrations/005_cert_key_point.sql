-- A certificate's key (its uncompressed point, hex) and role as it was issued, so
-- that a presented certificate is found by the SHA-256 of its bytes and read from
-- its row, never parsed (join/holder.h). Columns only: valid on SQLite and
-- PostgreSQL alike.
ALTER TABLE node_certs ADD COLUMN key_point TEXT;
ALTER TABLE node_certs ADD COLUMN role TEXT;

-- Rows stored before are filled from their DER. The key is the 65 bytes after the
-- one P-256 SubjectPublicKeyInfo header a node certificate holds (30 59 30 13 06 07
-- 2a 86 48 ce 3d 02 01 06 08 2a 86 48 ce 3d 03 01 07 03 42 00): the header is
-- replaced by a mark that is no hex digit, every hex digit before the mark is
-- trimmed, and the 130 digits after it are the point. The role is the path segment
-- before the node id in the SPIFFE ID ("/<role>/node_", hex). A row left NULL is
-- read from its DER as before.
UPDATE node_certs SET key_point = substr(ltrim(replace(der_hex, '3059301306072a8648ce3d020106082a8648ce3d030107034200', '#'), '0123456789abcdef'), 2, 130) WHERE der_hex LIKE '%3059301306072a8648ce3d020106082a8648ce3d03010703420004%';
UPDATE node_certs SET role = CASE WHEN der_hex LIKE '%2f6e6f64652d74656e616e742f6e6f64655f%' THEN 'node-tenant' WHEN der_hex LIKE '%2f72616d6469736b2f6e6f64655f%' THEN 'ramdisk' WHEN der_hex LIKE '%2f736974652f6e6f64655f%' THEN 'site' WHEN der_hex LIKE '%2f6e6f64652f6e6f64655f%' THEN 'node' END;
