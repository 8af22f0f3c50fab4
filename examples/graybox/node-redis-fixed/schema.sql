-- The payments table, each row carrying its idempotency key under a UNIQUE constraint (the source of truth;
-- Redis is only the lock and the cache), and the reset the probe runs before every schedule (--reset-sql): it
-- empties it.
CREATE TABLE IF NOT EXISTS payments (
    id              text    PRIMARY KEY,
    client_id       text    NOT NULL,
    idempotency_key text    NOT NULL,
    fingerprint     text    NOT NULL,
    amount          integer NOT NULL,
    UNIQUE (client_id, idempotency_key)
);
TRUNCATE payments;
