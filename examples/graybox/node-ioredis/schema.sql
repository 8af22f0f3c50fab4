-- The ioredis sample's table: each payment carries its idempotency key under UNIQUE (the source of truth; Redis
-- is the lock and the cache). The column may be NULL: the mutant forgets to write it. The reset the probe runs
-- before every schedule (--reset-sql) empties the table.
CREATE TABLE IF NOT EXISTS ioredis_payments (
    id              text    PRIMARY KEY,
    idempotency_key text    UNIQUE,
    amount          integer NOT NULL
);
TRUNCATE ioredis_payments;
