#!/usr/bin/env python3
"""A plain CPython model of the aws-jitter experiment, as a yardstick for the Rust one.

The same world as src/experiments/aws/world.rs (lazy reads: one event per write attempt, each
network leg |Normal(10 ms, 2 ms)|, base 5 ms, cap 2000 ms) and the same grid as

    aws-jitter --post-only --clients 150,190 --runs 100

written the way one would write it first: a heapq of (time, seq, client), random.gauss and
random.uniform from the standard library's Mersenne Twister. Its numbers are the same process,
not the same draws, so only its time is compared; it prints each cell's mean calls and time so
that a reader can see the two models agree in distribution.

    time python3 benches/python/aws_occ.py
    time target/release/aws-jitter --post-only --clients 150,190 --runs 100 --out /tmp/aws
"""

import heapq
import random
import sys

LEG_MS_MEAN, LEG_MS_SD = 10.0, 2.0
BASE_MS, CAP_MS = 5.0, 2000.0
STRATEGIES = ["none", "exponential", "equal-jitter", "full-jitter", "decorrelated-jitter"]


def delay_ms(strategy, attempt, sleep_ms, rng):
    """The backoff before retry `attempt` (1-based) and decorrelated jitter's new sleep."""
    expo = min(CAP_MS, BASE_MS * 2.0 ** min(attempt, 64))
    if strategy == "none":
        return 0.0, sleep_ms
    if strategy == "exponential":
        return expo, sleep_ms
    if strategy == "equal-jitter":
        return expo / 2 + rng.uniform(0, expo / 2), sleep_ms
    if strategy == "full-jitter":
        return rng.uniform(0, expo), sleep_ms
    sleep_ms = min(CAP_MS, rng.uniform(BASE_MS, sleep_ms * 3))
    return sleep_ms, sleep_ms


def run(strategy, clients, rng):
    """One run: returns (calls, time_ms)."""
    leg = lambda: abs(rng.gauss(LEG_MS_MEAN, LEG_MS_SD))
    queue, seq = [], 0
    retries = [0] * clients
    sleeps = [BASE_MS] * clients
    for client in range(clients):
        read_ms = leg()
        # A write arrives two legs after its read, carrying the read's time.
        heapq.heappush(queue, (read_ms + leg() + leg(), seq, client, read_ms))
        seq += 1
    success_last_ms = None
    calls, done_ms = 0, 0.0
    while queue:
        now_ms, _, client, read_ms = heapq.heappop(queue)
        calls += 1
        response_ms = now_ms + leg()
        if success_last_ms is None or success_last_ms <= read_ms:
            success_last_ms = now_ms
            done_ms = max(done_ms, response_ms)
            continue
        retries[client] += 1
        backoff_ms, sleeps[client] = delay_ms(strategy, retries[client], sleeps[client], rng)
        read_ms = response_ms + leg() + backoff_ms
        heapq.heappush(queue, (read_ms + leg() + leg(), seq, client, read_ms))
        seq += 1
    return calls, done_ms


def main():
    rng = random.Random(2015)
    for strategy in STRATEGIES:
        for clients in (150, 190):
            outcomes = [run(strategy, clients, rng) for _ in range(100)]
            calls = sum(c for c, _ in outcomes) / len(outcomes)
            time_ms = sum(t for _, t in outcomes) / len(outcomes)
            print(f"{strategy},{clients},{calls:.1f},{time_ms:.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
