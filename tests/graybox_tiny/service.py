"""A tiny payment service for the gray-box probe's own tests (issue 32): POST /payments with Idempotency-Key.

`claim-first` is the article's design: the key is claimed in its own committed statement, the payment and
the key's completion in a later transaction, so a crash between them leaves the key claimed forever (retries
answer 409: stuck). `one-transaction` is its fixed twin: claim, payment and completion commit together.
`check-then-act` looks the key up first and pays when it is absent: two requests that both look before either
commits pay twice (what interleaved-same-key must find).
`<design>+orm` (issue 44) adds what an ORM sends besides the request's own statements: in the first request
after each start of the process only, a validation query, catalogue and server queries and a ROLLBACK with no
transaction open; in every request, savepoints named after the thread and a counter (a new name each time).
In `one-transaction`, a second request's claim waits on the first one's uncommitted claim (the key's unique
index): a row lock the probe must learn from PostgreSQL, not from a timer.
`lock-and-sleep` takes the key's row lock, then sleeps for the body's `sleep` seconds in the same transaction
(a long statement holding a lock); a request that cannot get the lock within 3 s answers 503.
Python stdlib and psycopg2 only; PORT and DATABASE_URL come from the probe.
"""
import itertools
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg2

DESIGN, _, EXTRA = sys.argv[1].partition("+")
ORM = EXTRA == "orm"
# `<design>+heartbeat`: a thread of its own writes a heartbeat row every 50 ms on its own connection, as a
# background job or a pool keep-alive does: statements that belong to no request.
HEARTBEAT = EXTRA == "heartbeat"
# The first request of this process introspects; the later ones do not (an ORM's dialect set-up).
FIRST = threading.Event()
SAVEPOINTS = itertools.count(1)


def introspect_once(conn):
    """What the ORM sends on its first connection: never data, and never again in this process."""
    if FIRST.is_set():
        return
    FIRST.set()
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        cur.execute("select pg_catalog.version()")
        cur.execute("select current_schema()")
        cur.execute("SHOW standard_conforming_strings")
        cur.execute("SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid "
                    "WHERE typname = 'hstore'")
        # Sent as is in autocommit: nothing is open (a pool returning its connection).
        cur.execute("ROLLBACK")
    conn.autocommit = False


def pay_step(cur, key, body):
    """The payment inside the request's transaction, in a savepoint named after the thread when the ORM is on."""
    name = f'"s{threading.get_ident()}_x{next(SAVEPOINTS)}"'
    if ORM:
        cur.execute(f"SAVEPOINT {name}")
    cur.execute("INSERT INTO payments (key, amount) VALUES (%s, %s) RETURNING id",
                (key, body.get("amount", 0)))
    answer = json.dumps({"payment": cur.fetchone()[0]})
    if ORM:
        cur.execute(f"RELEASE SAVEPOINT {name}")
    return answer


def check_then_act(conn, key, body):
    with conn.cursor() as cur:
        cur.execute("SELECT status, body FROM idempotency_keys WHERE key = %s", (key,))
        found = cur.fetchone()
        if found:
            conn.rollback()
            return found
        cur.execute("INSERT INTO payments (key, amount) VALUES (%s, %s) RETURNING id",
                    (key, body.get("amount", 0)))
        answer = json.dumps({"payment": cur.fetchone()[0]})
        cur.execute("INSERT INTO idempotency_keys (key, state, status, body) VALUES (%s, 'done', 201, %s) "
                    "ON CONFLICT DO NOTHING", (key, answer))
    conn.commit()
    return 201, answer


def lock_and_sleep(conn, key, body):
    try:
        with conn.cursor() as cur:
            cur.execute("SET LOCAL lock_timeout = '3s'")
            cur.execute("INSERT INTO idempotency_keys (key, state) VALUES (%s, 'started') "
                        "ON CONFLICT (key) DO UPDATE SET state = 'started'", (key,))
            cur.execute("SELECT pg_sleep(%s)", (float(body.get("sleep", 0)),))
            cur.execute("INSERT INTO payments (key, amount) VALUES (%s, %s) RETURNING id",
                        (key, body.get("amount", 0)))
            answer = json.dumps({"payment": cur.fetchone()[0]})
        conn.commit()
        return 201, answer
    except psycopg2.errors.LockNotAvailable:
        conn.rollback()
        return 503, '{"error":"the key is locked"}'


def pay(key, body):
    conn = psycopg2.connect(os.environ["DATABASE_URL"])
    try:
        if ORM:
            introspect_once(conn)
        if DESIGN == "check-then-act":
            return check_then_act(conn, key, body)
        if DESIGN == "lock-and-sleep":
            return lock_and_sleep(conn, key, body)
        if DESIGN == "claim-first":
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("INSERT INTO idempotency_keys (key, state) VALUES (%s, 'started') "
                            "ON CONFLICT DO NOTHING", (key,))
                claimed = cur.rowcount == 1
            conn.autocommit = False
        else:
            with conn.cursor() as cur:
                cur.execute("INSERT INTO idempotency_keys (key, state) VALUES (%s, 'started') "
                            "ON CONFLICT DO NOTHING", (key,))
                claimed = cur.rowcount == 1
        with conn.cursor() as cur:
            if not claimed:
                cur.execute("SELECT state, status, body FROM idempotency_keys WHERE key = %s", (key,))
                state, status, stored = cur.fetchone()
                conn.rollback()
                return (status, stored) if state == "done" else (409, '{"error":"in progress"}')
            answer = pay_step(cur, key, body)
            cur.execute("UPDATE idempotency_keys SET state = 'done', status = 201, body = %s WHERE key = %s",
                        (answer, key))
        conn.commit()
        return 201, answer
    finally:
        conn.close()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.answer(200, '{"ok":true}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.answer(*pay(self.headers["Idempotency-Key"], body))

    def answer(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def heartbeat():
    conn = psycopg2.connect(os.environ["DATABASE_URL"])
    conn.autocommit = True
    while True:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO heartbeats (id, at) VALUES (1, now()) "
                        "ON CONFLICT (id) DO UPDATE SET at = now()")
        time.sleep(0.05)


if __name__ == "__main__":
    if HEARTBEAT:
        threading.Thread(target=heartbeat, daemon=True).start()
    if "PID_FILE" in os.environ:
        with open(os.environ["PID_FILE"], "w") as f:
            f.write(str(os.getpid()))
    print("listening on", os.environ["PORT"], flush=True)
    ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
