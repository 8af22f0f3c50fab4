"""psycopg 3 through the PostgreSQL gate: a parameterised INSERT in a transaction, enough times that psycopg
prepares it (prepare_threshold 5) and then runs the named statement without its text; then a pipeline of three
INSERTs in one transaction. argv[1]: a libpq conninfo (sslmode=prefer)."""
import sys

import psycopg

INSERT = "INSERT INTO t (k, v) VALUES (%s, %s)"

with psycopg.connect(sys.argv[1], autocommit=True, prepare_threshold=5) as conn:
    for k in range(7):
        with conn.transaction():
            conn.execute(INSERT, (k, "psycopg3"))
    with conn.pipeline():
        with conn.transaction():
            for k in range(100, 103):
                conn.execute(INSERT, (k, "psycopg3 pipeline"))
