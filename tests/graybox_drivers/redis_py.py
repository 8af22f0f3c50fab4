"""redis-py through the Redis gate: plain commands, a pipeline without a transaction, and a MULTI/EXEC pipeline.
argv[1]: the redis:// URL."""
import sys

import redis

r = redis.Redis.from_url(sys.argv[1])
r.set("redis-py:plain", "1", nx=True, px=60000)
r.incr("redis-py:count")
pipe = r.pipeline(transaction=False)
pipe.set("redis-py:a", "1")
pipe.incr("redis-py:count")
pipe.get("redis-py:a")
pipe.execute()
tx = r.pipeline(transaction=True)
tx.set("redis-py:b", "2")
tx.incr("redis-py:count")
tx.execute()
r.close()
