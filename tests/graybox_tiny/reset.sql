-- The tiny service's tables, emptied before every schedule (the probe runs this on the real database only).
CREATE TABLE IF NOT EXISTS idempotency_keys (key text PRIMARY KEY, state text NOT NULL, status int, body text);
CREATE TABLE IF NOT EXISTS payments (id serial PRIMARY KEY, key text NOT NULL, amount int NOT NULL);
-- The `+heartbeat` variant's background writes (never emptied: they are no effect).
CREATE TABLE IF NOT EXISTS heartbeats (id int PRIMARY KEY, at timestamptz NOT NULL);
TRUNCATE idempotency_keys, payments;
