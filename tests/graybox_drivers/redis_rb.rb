# redis-rb through the Redis gate: plain commands, a pipeline, and a MULTI/EXEC block. ARGV[0]: the redis:// URL.
require "redis"

r = Redis.new(url: ARGV[0])
r.set("redis-rb:plain", "1", nx: true, px: 60_000)
r.incr("redis-rb:count")
r.pipelined do |pipe|
  pipe.set("redis-rb:a", "1")
  pipe.incr("redis-rb:count")
  pipe.get("redis-rb:a")
end
r.multi do |tx|
  tx.set("redis-rb:b", "2")
  tx.incr("redis-rb:count")
end
r.close
