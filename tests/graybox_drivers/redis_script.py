"""redis-py calling a Lua script the way its Script objects do, through the Redis gate: EVALSHA first; answered
NOSCRIPT (the server does not have it yet), SCRIPT LOAD, then EVALSHA again. A second run finds it loaded.
argv[1]: the redis:// URL, argv[2]: the key it claims."""
import sys

import redis

r = redis.Redis.from_url(sys.argv[1])
claim = r.register_script("return redis.call('SET', KEYS[1], ARGV[1], 'NX') and 1 or 0")
assert claim(keys=[sys.argv[2]], args=["1"]) in (0, 1)
r.close()
