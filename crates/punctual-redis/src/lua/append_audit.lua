-- append_audit: keeps one audit entry (audit.lua).
-- KEYS[1] the audit ZSet; ARGV[1] the entry's stored form, ARGV[2] its time in ms,
-- ARGV[3] the set's parity.
audit_add(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return 1
