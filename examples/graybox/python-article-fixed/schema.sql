-- The article's tables, and the reset the probe runs before every schedule (--reset-sql): it empties them.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    client_id   text        NOT NULL,
    key         text        NOT NULL,
    fingerprint text        NOT NULL,
    status      text        NOT NULL,  -- in_progress | completed
    response    text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (client_id, key)
);
CREATE TABLE IF NOT EXISTS payments (
    id     serial  PRIMARY KEY,
    amount integer NOT NULL
);
TRUNCATE idempotency_keys, payments RESTART IDENTITY;
