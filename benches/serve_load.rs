//! `retrylab load` against `retrylab serve`'s service, in process: the correct designs (and select-then-insert
//! for contrast) on SQLite and on PostgreSQL (started here when installed), 8 closed-loop retrying clients for
//! 5 s each through the fault proxy (1/20 of responses dropped after the server processed them, 1/20 of requests
//! duplicated). A bench, not a test: it prints figures (docs/src/performance.md, "Serve under load"), asserts
//! only that the correct designs made no duplicate. `cargo bench --bench serve_load` (add `--profile dev` to
//! skip the fat-LTO build; the performance journal says which profile its figures came from).

use retrylab::backoff::{Backoff, RetryAfter, RetryPolicy, Strategy};
use retrylab::servers::postgres::TempPostgres;
use retrylab::stack::client::ClientConfig;
use retrylab::stack::connection::{Database, Keys};
use retrylab::stack::design::Design;
use retrylab::stack::http::Url;
use retrylab::stack::load::{run_load, LoadConfig, LoadReport};
use retrylab::stack::proxy::{Fault, FaultPlan, Ratio};
use retrylab::stack::service::{prepare, router, serve, ServiceConfig};
use std::time::Duration;

fn load_once(design: Design, database: Database) -> LoadReport {
    let config = ServiceConfig {
        design,
        database,
        keys: Keys::SameDatabase,
        key_header: "Idempotency-Key".into(),
        client_header: "X-Client-Id".into(),
        crash_at: None,
        lease_ms: 30_000,
    };
    prepare(&config).expect("the store opens");
    let routes = router(config).expect("the pool opens");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let report = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, routes, async {
            let _ = stopped.await;
        }));
        let one_in_20 = Fault {
            ratio: Ratio { num: 1, den: 20 },
            budget: None,
        };
        let load = LoadConfig {
            url: Url::parse(&format!("{base}/payments")).unwrap(),
            count_url: Some(Url::parse(&format!("{base}/payments/count")).unwrap()),
            clients: 8,
            rate_per_s: None,
            duration: Duration::from_secs(5),
            client: ClientConfig {
                policy: RetryPolicy {
                    backoff: Backoff::new(Strategy::FullJitter, 10.0, 1000.0).unwrap(),
                    attempts_max: Some(6),
                    deadline_ms: Some(10_000.0),
                    retry_after: RetryAfter::Honour {
                        wait_ms_max: 5_000.0,
                    },
                },
                attempt_timeout: Duration::from_secs(2),
                key_header: "Idempotency-Key".into(),
                client: None,
                seed: 16,
            },
            body: r#"{"amount":500,"currency":"RUB"}"#.into(),
            faults: Some(FaultPlan {
                drop_response: one_in_20,
                duplicate: one_in_20,
                ..FaultPlan::none(16)
            }),
            run_id: format!("bench-{}", design.name()),
        };
        let report = run_load(&load).await.expect("the load runs");
        let _ = stop.send(());
        let _ = server.await;
        report
    });
    drop(runtime);
    report
}

fn main() {
    let postgres = TempPostgres::start();
    let dir = tempfile::tempdir().unwrap();
    println!(
        "{:<20} {:<10} {:>6} {:>8} {:>9} {:>7} {:>10} {:>8} {:>8} {:>8}",
        "design",
        "store",
        "ops",
        "requests",
        "succeeded",
        "effects",
        "duplicates",
        "ops/s",
        "p50 ms",
        "p99 ms"
    );
    for design in [
        Design::Article,
        Design::LeaseFenced,
        Design::SelectThenInsert,
    ] {
        let mut stores = vec![(
            "sqlite",
            Database::Sqlite(dir.path().join(format!("{}.sqlite", design.name()))),
        )];
        if let Some(postgres) = &postgres {
            // One database per design: the effects of one run are not the next one's.
            let name = design.name().replace('-', "_");
            let admin = format!("postgres://postgres@127.0.0.1:{}/postgres", postgres.port);
            let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
            stores.push((
                "postgres",
                Database::Postgres(format!(
                    "postgres://postgres@127.0.0.1:{}/{name}",
                    postgres.port
                )),
            ));
        }
        for (store, database) in stores {
            let report = load_once(design, database);
            println!(
                "{:<20} {:<10} {:>6} {:>8} {:>9} {:>7} {:>10} {:>8.1} {:>8.1} {:>8.1}",
                design.name(),
                store,
                report.operations,
                report.requests,
                report.succeeded,
                report.effects.unwrap_or(0),
                report.duplicates.unwrap_or(0),
                report.operations_per_s,
                report.latency_ms_p50,
                report.latency_ms_p99
            );
            println!("  {}", serde_json::to_string(&report).unwrap());
            if design.is_correct() {
                assert_eq!(
                    report.duplicates,
                    Some(0),
                    "{} on {store}: no duplicate",
                    design.name()
                );
            }
        }
    }
}
