// POST /payments with an Idempotency-Key: the key is claimed in Redis (SET NX with a lease), the payment is
// INSERTed in PostgreSQL, then the Redis key is SET to the completed response. A replay gets the stored response,
// a key in progress 409, the key reused with another body 422. Reads PORT, DATABASE_URL, REDIS_URL and LEASE_MS
// (the claim's lease, default 1000: a claim left by a crashed process frees itself after it).
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
    return [200, saved.response]; // a replay: the stored response
  }
  const paymentId = `pay_${crypto.randomUUID()}`;
  await pool.query("INSERT INTO payments (id, amount) VALUES ($1, $2)", [paymentId, body.amount]);
  const response = { payment_id: paymentId, amount: body.amount };
  const completed = JSON.stringify({ state: "completed", fingerprint: fp, response });
  await redis.set(redisKey, completed, { EX: COMPLETED_TTL_S });
  return [201, response];
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
