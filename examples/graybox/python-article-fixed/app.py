"""POST /payments with an Idempotency-Key, the article's design fixed: the claim, the payment and the stored
response are ONE transaction on PostgreSQL.

No in_progress row is ever committed, so a crash at any point leaves either nothing (the retry executes) or the
completed key (the retry replays). A concurrent request with the same key waits on the unique primary key until
the first commits, then replays its response. The key reused with another body gets 422. Reads PORT and
DATABASE_URL. Run with Debian's python3 (python3-psycopg2).

RETRYLAB_SAMPLE_MUTANT=1 commits the claim on its own (one COMMIT moved up): the article's bug, which a
gray-box probe must catch.
"""

import hashlib
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2.pool

pool = psycopg2.pool.ThreadedConnectionPool(1, 8, os.environ["DATABASE_URL"])
MUTANT = os.environ.get("RETRYLAB_SAMPLE_MUTANT") == "1"


def fingerprint(body):
    # The normalised body: the same JSON with its keys in another order is the same request.
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def create_payment(conn, client_id, key, body):
    fp = fingerprint(body)
    with conn, conn.cursor() as cur:
        # Waits here while another transaction holds an uncommitted row with this key.
        cur.execute(
            "INSERT INTO idempotency_keys (client_id, key, fingerprint, status)"
            " VALUES (%s, %s, %s, 'in_progress') ON CONFLICT DO NOTHING",
            (client_id, key, fp),
        )
        if cur.rowcount == 0:
            cur.execute(
                "SELECT fingerprint, status, response FROM idempotency_keys"
                " WHERE client_id = %s AND key = %s",
                (client_id, key),
            )
            saved_fp, status, response = cur.fetchone()
            if saved_fp != fp:
                return 422, json.dumps({"error": "key already used with another body"})
            if status == "in_progress":  # only a mutant commits this state
                return 409, json.dumps({"error": "request still in progress"})
            return 200, response  # a replay: the stored response
        if MUTANT:
            conn.commit()
        cur.execute("INSERT INTO payments (amount) VALUES (%s) RETURNING id", (body["amount"],))
        payment_id = cur.fetchone()[0]
        response = json.dumps({"payment_id": payment_id, "amount": body["amount"]})
        cur.execute(
            "UPDATE idempotency_keys SET status = 'completed', response = %s"
            " WHERE client_id = %s AND key = %s",
            (response, client_id, key),
        )
    return 201, response


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/payments":
            return self.answer(404, json.dumps({"error": "not found"}))
        key = self.headers.get("Idempotency-Key")
        client_id = self.headers.get("X-Client-Id", "anonymous")
        length = int(self.headers.get("Content-Length", 0))
        try:
            body = json.loads(self.rfile.read(length))
            body["amount"] = int(body["amount"])
        except (ValueError, TypeError, KeyError):
            return self.answer(400, json.dumps({"error": "a JSON body with an integer amount is required"}))
        if not key:
            return self.answer(400, json.dumps({"error": "Idempotency-Key is required"}))
        conn = pool.getconn()
        try:
            status, response = create_payment(conn, client_id, key, body)
        finally:
            pool.putconn(conn)
        self.answer(status, response)

    def answer(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8080"))
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
