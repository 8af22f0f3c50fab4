-- The payments table, and the reset the probe runs before every schedule (--reset-sql): it empties it. The
-- idempotency keys live in Redis.
CREATE TABLE IF NOT EXISTS payments (
    id     text    PRIMARY KEY,
    amount integer NOT NULL
);
TRUNCATE payments;
