"""psycopg 3's pipeline where a fetch forces a Flush (a group answered before any Sync), then a pipeline that a
duplicate key aborts (the store skips the rest up to the Sync). argv[1]: a libpq conninfo (sslmode=prefer)."""
import sys

import psycopg

INSERT = "INSERT INTO t (k, v) VALUES (%s, %s)"

with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    with conn.pipeline():
        row = conn.execute(INSERT + " RETURNING k", (200, "flush")).fetchone()
        assert row == (200,), row
    try:
        with conn.pipeline():
            conn.execute(INSERT, (201, "rolled back"))
            conn.execute(INSERT, (200, "duplicate"))
            conn.execute(INSERT, (202, "skipped"))
        sys.exit("the duplicate key was not reported")
    except psycopg.errors.UniqueViolation:
        pass
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
