// POST /payments with an Idempotency-Key, the Redis design fixed: the payment row carries the key under a UNIQUE
// constraint (INSERT ... ON CONFLICT DO NOTHING RETURNING, else the existing payment is read and replayed), so
// PostgreSQL decides whether the payment happens. Redis is only the lock (SET NX with a lease, so a second
// request meanwhile gets 409) and the cache of completed responses. A crash between the INSERT and the Redis
// completion leaves the lock until its lease runs out; the retry then finds the payment and replays it. Reads
// PORT, DATABASE_URL, REDIS_URL and LEASE_MS (default 1000).
//
// RETRYLAB_SAMPLE_MUTANT=1 caches the completion before the INSERT (one Redis command moved up): a crash between
// the two replays a payment that never happened, which a gray-box probe must catch.
const crypto = require("node:crypto");
const express = require("express");
const { Pool } = require("pg");
const { createClient } = require("redis");

const LEASE_MS = Number(process.env.LEASE_MS || 1000);
const COMPLETED_TTL_S = 24 * 60 * 60;

const pool = new Pool({ connectionString: process.env.DATABASE_URL });
const redis = createClient({ url: process.env.REDIS_URL });

// The normalised body: the same JSON with its keys in another order is the same request.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const fields = Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value);
}

const fingerprint = (body) => crypto.createHash("sha256").update(canonical(body)).digest("hex");
const MUTANT = process.env.RETRYLAB_SAMPLE_MUTANT === "1";

async function cacheCompletion(redisKey, fp, response) {
  const completed = JSON.stringify({ state: "completed", fingerprint: fp, response });
  await redis.set(redisKey, completed, { EX: COMPLETED_TTL_S });
}

async function insertOrFind(clientId, key, fp, paymentId, amount) {
  const inserted = await pool.query(
    `INSERT INTO payments (id, client_id, idempotency_key, fingerprint, amount) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING id, fingerprint, amount`,
    [paymentId, clientId, key, fp, amount],
  );
  if (inserted.rows.length === 1) return [201, inserted.rows[0]];
  const existing = await pool.query(
    "SELECT id, fingerprint, amount FROM payments WHERE client_id = $1 AND idempotency_key = $2",
    [clientId, key],
  );
  return [200, existing.rows[0]];
}

async function createPayment(clientId, key, body) {
  const redisKey = `idempotency:${clientId}:${key}`;
  const fp = fingerprint(body);
  const claim = JSON.stringify({ state: "in_progress", fingerprint: fp });
  const claimed = await redis.set(redisKey, claim, { NX: true, PX: LEASE_MS });
  if (claimed !== "OK") {
    const saved = JSON.parse((await redis.get(redisKey)) ?? "null");
    if (saved === null) return [409, { error: "request still in progress" }]; // the lease just ran out
    if (saved.fingerprint !== fp) return [422, { error: "key already used with another body" }];
    if (saved.state === "in_progress") return [409, { error: "request still in progress" }];
    return [200, saved.response]; // a replay from the cache
  }
  const paymentId = `pay_${crypto.randomUUID()}`;
  if (MUTANT) await cacheCompletion(redisKey, fp, { payment_id: paymentId, amount: body.amount });
  const [status, row] = await insertOrFind(clientId, key, fp, paymentId, body.amount);
  const response = { payment_id: row.id, amount: row.amount };
  await cacheCompletion(redisKey, row.fingerprint, response);
  if (row.fingerprint !== fp) return [422, { error: "key already used with another body" }];
  return [status, response];
}
const app = express();
app.use(express.json({ type: () => true }));

app.post("/payments", async (req, res, next) => {
  const key = req.get("Idempotency-Key");
  const clientId = req.get("X-Client-Id") ?? "anonymous";
  if (!key) return res.status(400).json({ error: "Idempotency-Key is required" });
  if (!Number.isInteger(req.body?.amount)) {
    return res.status(400).json({ error: "a JSON body with an integer amount is required" });
  }
  try {
    const [status, response] = await createPayment(clientId, key, req.body);
    res.status(status).json(response);
  } catch (error) {
    next(error);
  }
});

// A failure after the claim leaves the key in progress until its lease runs out; the client may retry then.
app.use((error, req, res, next) => {
  console.error(error);
  res.status(500).json({ error: "internal error" });
});

async function main() {
  await redis.connect();
  const port = Number(process.env.PORT || 8080);
  app.listen(port, "127.0.0.1", () => console.log(`listening on 127.0.0.1:${port}`));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
