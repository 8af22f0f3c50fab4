//! How much a gate adds to each statement (issue 32's target: under 1 ms). Starts a throwaway PostgreSQL and
//! Redis, runs N statements directly and N through a Pass-mode gate, alternating in rounds so both see the same
//! machine load, and prints the median time per statement of each and the difference.
//!
//! `cargo run --example gate_latency [N]` (default 2000; needs PostgreSQL and redis-server installed).

use retrylab::graybox::gate::Gates;
use retrylab::servers::postgres::TempPostgres;
use retrylab::servers::redis::TempRedis;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Statements per timed round; the rounds alternate direct and gated.
const ROUND: usize = 100;

fn main() {
    let count: usize = match std::env::args().nth(1).map(|n| n.parse()) {
        None => 2000,
        Some(Ok(n)) if n >= ROUND => n,
        Some(_) => {
            eprintln!("gate_latency: N must be a number of at least {ROUND}");
            std::process::exit(2);
        }
    };
    let (Some(postgres), Some(redis)) = (TempPostgres::start(), TempRedis::start()) else {
        eprintln!("gate_latency: needs PostgreSQL and redis-server");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let loopback = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let gates = runtime
        .block_on(Gates::start(
            Some(loopback(postgres.port)),
            Some(loopback(redis.port)),
        ))
        .expect("the gates start");
    let mut bench = Bench {
        count,
        runtime,
        gates,
    };
    let gate_pg = bench
        .gates
        .postgres_address()
        .expect("a PostgreSQL gate")
        .port();
    let gate_redis = bench.gates.redis_address().expect("a Redis gate").port();
    let connect_pg = |port: u16| {
        let params = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
        postgres::Client::connect(&params, postgres::NoTls).expect("connect")
    };
    let (mut direct, mut gated) = (connect_pg(postgres.port), connect_pg(gate_pg));
    bench.compare(
        "PostgreSQL simple query SELECT 1",
        &mut direct,
        &mut gated,
        |client| client.batch_execute("SELECT 1").expect("SELECT 1"),
    );
    bench.compare(
        "PostgreSQL extended query SELECT $1::int",
        &mut direct,
        &mut gated,
        |client| {
            client.query("SELECT $1::int", &[&1i32]).expect("SELECT $1");
        },
    );
    let connect_redis = |port: u16| {
        let url = format!("redis://127.0.0.1:{port}");
        redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("connect")
    };
    let (mut direct, mut gated) = (connect_redis(redis.port), connect_redis(gate_redis));
    bench.compare("Redis SET k v", &mut direct, &mut gated, |con| {
        redis::cmd("SET")
            .arg("k")
            .arg("v")
            .query::<()>(con)
            .expect("SET");
    });
}

/// The gates and how many statements to time on each side.
struct Bench {
    count: usize,
    runtime: tokio::runtime::Runtime,
    gates: Gates,
}

impl Bench {
    /// Per-statement times of `run` on each client, in alternating rounds (the gate's events drained between);
    /// their medians printed.
    fn compare<C>(&mut self, what: &str, direct: &mut C, gated: &mut C, run: impl Fn(&mut C)) {
        let mut times_direct = Vec::with_capacity(self.count);
        let mut times_gated = Vec::with_capacity(self.count);
        for _ in 0..self.count / ROUND {
            for (client, times) in [
                (&mut *direct, &mut times_direct),
                (&mut *gated, &mut times_gated),
            ] {
                for _ in 0..ROUND {
                    let start = Instant::now();
                    run(client);
                    times.push(start.elapsed());
                }
            }
            while self
                .runtime
                .block_on(self.gates.next_event(Duration::ZERO))
                .is_some()
            {}
        }
        report(what, times_direct, times_gated);
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn report(what: &str, direct: Vec<Duration>, gated: Vec<Duration>) {
    let count = direct.len();
    let (direct, gated) = (median(direct), median(gated));
    let added_us = gated.as_secs_f64() * 1e6 - direct.as_secs_f64() * 1e6;
    println!(
        "{what}: {count} each, median direct {:.0} us, through the gate {:.0} us, added {added_us:.0} us per statement",
        direct.as_secs_f64() * 1e6,
        gated.as_secs_f64() * 1e6,
    );
}
