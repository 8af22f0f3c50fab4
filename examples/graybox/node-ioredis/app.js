// POST /payments with an Idempotency-Key, written the way Node services on ioredis usually are: one shared
// ioredis connection for every request (auto-pipelining on, a connection name, a database selected), the key
// claimed atomically by a Lua script that ioredis sends by EVALSHA (NOSCRIPT on a fresh server, then EVAL), and
// node-pg's pool. The payment row carries the key under UNIQUE (INSERT ... ON CONFLICT DO NOTHING RETURNING, else
// the existing payment is read and replayed), so PostgreSQL decides whether the payment happens; Redis is the
// lock (a lease) and the cache of completed responses. Reads PORT, DATABASE_URL, REDIS_URL and LEASE_MS
// (default 1000).
//
// One shared connection sends every request's commands in the order the event loop issues them: two requests
// of one process never wait at Redis together. Run two instances (`retrylab probe --instances 2`), as services
// run, and they do.
//
// RETRYLAB_SAMPLE_MUTANT=1 claims by GET then SET (check-then-act across two commands) and leaves the key out of
// the payment row, trusting the lock: two requests that both GET before either SETs pay twice, and so does a
// retry after a crash between the INSERT and the completion, once the lease has run out.
const crypto = require("node:crypto");
const http = require("node:http");
const Redis = require("ioredis");
const { Pool } = require("pg");

const LEASE_MS = Number(process.env.LEASE_MS || 1000);
const COMPLETED_TTL_S = 24 * 60 * 60;
const MUTANT = process.env.RETRYLAB_SAMPLE_MUTANT === "1";

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
const redis = new Redis(process.env.REDIS_URL, {
  enableAutoPipelining: true,
  connectionName: "payments",
  maxRetriesPerRequest: 2,
});
redis.defineCommand("claim", {
  numberOfKeys: 1,
  lua: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0",
});

const fingerprint = (body) =>
  crypto.createHash("sha256").update(JSON.stringify(body, Object.keys(body).sort())).digest("hex");

async function claim(redisKey, value) {
  if (!MUTANT) return (await redis.claim(redisKey, value, LEASE_MS)) === 1;
  if ((await redis.get(redisKey)) !== null) return false;
  await redis.set(redisKey, value, "PX", LEASE_MS);
  return true;
}

async function insertOrFind(key, paymentId, amount) {
  const inserted = await pool.query(
    `INSERT INTO ioredis_payments (id, idempotency_key, amount) VALUES ($1, $2, $3)
     ON CONFLICT (idempotency_key) DO NOTHING RETURNING id, amount`,
    [paymentId, MUTANT ? null : key, amount],
  );
  if (inserted.rows.length === 1) return [201, inserted.rows[0]];
  const existing = await pool.query(
    "SELECT id, amount FROM ioredis_payments WHERE idempotency_key = $1",
    [key],
  );
  return [200, existing.rows[0]];
}

async function createPayment(key, body) {
  const redisKey = `idempotency:${key}`;
  const fp = fingerprint(body);
  if (!(await claim(redisKey, JSON.stringify({ state: "in_progress", fp })))) {
    const saved = JSON.parse((await redis.get(redisKey)) ?? "null");
    if (saved === null || saved.state === "in_progress") return [409, { error: "request still in progress" }];
    if (saved.fp !== fp) return [422, { error: "key already used with another body" }];
    return [200, saved.response];
  }
  const [status, row] = await insertOrFind(key, `pay_${crypto.randomUUID()}`, body.amount);
  const response = { payment_id: row.id, amount: row.amount };
  await redis.set(redisKey, JSON.stringify({ state: "completed", fp, response }), "EX", COMPLETED_TTL_S);
  return [status, response];
}

function answer(res, status, payload) {
  const data = JSON.stringify(payload);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) });
  res.end(data);
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/payments") return answer(res, 404, { error: "not found" });
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", async () => {
    const key = req.headers["idempotency-key"];
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return answer(res, 400, { error: "the body is not JSON" });
    }
    if (!key) return answer(res, 400, { error: "Idempotency-Key is required" });
    if (!Number.isInteger(body?.amount)) return answer(res, 400, { error: "an integer amount is required" });
    try {
      const [status, response] = await createPayment(key, body);
      answer(res, status, response);
    } catch (error) {
      // A failure after the claim leaves the key in progress until its lease runs out; the client may retry.
      console.error(error);
      answer(res, 500, { error: "internal error" });
    }
  });
});

server.listen(Number(process.env.PORT || 8080), "127.0.0.1");
