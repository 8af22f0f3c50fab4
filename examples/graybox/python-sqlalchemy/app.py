"""POST /payments with an Idempotency-Key, written the way ORM services usually are: SQLAlchemy's ORM over a
connection pool (psycopg2), declarative models, a nested transaction (a SAVEPOINT) around the payment, the stored
response in a jsonb column. On its first connection after each start SQLAlchemy asks the server for its version,
schema, isolation level and type OIDs (introspection inside the first request, not later); the pool validates a
connection at each checkout (`SELECT 1`, pool_pre_ping) and rolls it back on return.

The design: the key row (claim) and the payment are one transaction; a concurrent request with the same key
waits on the key's primary key until the first commits, then replays the stored response. Reads PORT and
DATABASE_URL (which must be `postgresql://`: SQLAlchemy refuses `postgres://`). Debian's python3-sqlalchemy
and python3-psycopg2; run with /usr/bin/python3.

RETRYLAB_SAMPLE_MUTANT=1 pays first and records the key in a second transaction: a crash between the two, or
two requests that both find no key, pay twice. The gray-box probe must catch it.
"""

import hashlib
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sqlalchemy import Column, Integer, Text, create_engine, select
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.orm import Session, declarative_base

Base = declarative_base()
MUTANT = os.environ.get("RETRYLAB_SAMPLE_MUTANT") == "1"


class IdempotencyKey(Base):
    __tablename__ = "orm_idempotency_keys"
    key = Column(Text, primary_key=True)
    fingerprint = Column(Text, nullable=False)
    response = Column(JSONB)


class Payment(Base):
    __tablename__ = "orm_payments"
    id = Column(Integer, primary_key=True)
    key = Column(Text, nullable=False)
    amount = Column(Integer, nullable=False)


engine = create_engine(os.environ["DATABASE_URL"], pool_size=4, pool_pre_ping=True)


def fingerprint(body):
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def pay(session, key, body):
    # The savepoint an ORM puts around a unit of work that may fail on its own.
    with session.begin_nested():
        payment = Payment(key=key, amount=body["amount"])
        session.add(payment)
        session.flush()
    return {"payment_id": payment.id, "amount": payment.amount, "currency": body.get("currency")}


def replay(session, key, fp):
    row = session.get(IdempotencyKey, key)
    if row.fingerprint != fp:
        return 422, {"error": "key already used with another body"}
    return 200, row.response


def create_payment(key, body):
    fp = fingerprint(body)
    with Session(engine) as session, session.begin():
        # Waits here while another transaction holds an uncommitted row with this key.
        claimed = session.execute(
            insert(IdempotencyKey)
            .values(key=key, fingerprint=fp)
            .on_conflict_do_nothing()
            .returning(IdempotencyKey.key)
        ).first()
        if claimed is None:
            return replay(session, key, fp)
        response = pay(session, key, body)
        session.get(IdempotencyKey, key).response = response
    return 201, response


def create_payment_mutant(key, body):
    fp = fingerprint(body)
    with Session(engine) as session:
        with session.begin():
            found = session.execute(select(IdempotencyKey).where(IdempotencyKey.key == key)).scalar()
            if found is not None:
                return replay(session, key, fp)
            response = pay(session, key, body)
        with session.begin():
            session.add(IdempotencyKey(key=key, fingerprint=fp, response=response))
    return 201, response


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/payments":
            return self.answer(404, {"error": "not found"})
        key = self.headers.get("Idempotency-Key")
        length = int(self.headers.get("Content-Length", 0))
        try:
            body = json.loads(self.rfile.read(length))
            body["amount"] = int(body["amount"])
        except (ValueError, TypeError, KeyError):
            return self.answer(400, {"error": "a JSON body with an integer amount is required"})
        if not key:
            return self.answer(400, {"error": "Idempotency-Key is required"})
        try:
            status, response = (create_payment_mutant if MUTANT else create_payment)(key, body)
        except Exception as error:  # a conflict the design did not expect: the client may retry
            status, response = 503, {"error": type(error).__name__}
        self.answer(status, response)

    def do_GET(self):
        self.answer(404, {"error": "not found"})

    def answer(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
