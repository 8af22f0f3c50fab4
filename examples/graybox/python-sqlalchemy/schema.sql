-- The ORM sample's tables, and the reset the probe runs before every schedule (--reset-sql): it empties them.
-- The stored response is jsonb: PostgreSQL gives its keys back in its own order (shorter keys first), so a
-- replay is the same object in other bytes.
CREATE TABLE IF NOT EXISTS orm_idempotency_keys (
    key         text  PRIMARY KEY,
    fingerprint text  NOT NULL,
    response    jsonb
);
CREATE TABLE IF NOT EXISTS orm_payments (
    id     serial  PRIMARY KEY,
    key    text    NOT NULL,
    amount integer NOT NULL
);
TRUNCATE orm_idempotency_keys, orm_payments RESTART IDENTITY;
