//! Throughput of the timed simulation: events per second on one run, and the wall time of the
//! whole default AWS sweep (the post's grid, 5 strategies x 19 client counts x 100 runs).
//!
//!     cargo bench --bench aws_sweep

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use retrylab::backoff::{Backoff, Strategy};
use retrylab::experiments::aws::{run_sweep, simulate_run, AwsParams, SweepConfig, RUNS_DEFAULT};
use retrylab::sim::run_rng;

fn one_run(c: &mut Criterion) {
    let mut group = c.benchmark_group("aws_run");
    for (strategy, clients) in [(Strategy::None, 190), (Strategy::FullJitter, 100)] {
        let backoff = Backoff::aws_post(strategy);
        let params = AwsParams::POST;
        // Events of this exact run, so the throughput is simulated events per second.
        let events = simulate_run(backoff, clients, &params, &mut run_rng(1, 0))
            .unwrap()
            .event_count;
        group.throughput(Throughput::Elements(events));
        group.bench_function(format!("{strategy}-{clients}-clients"), |b| {
            b.iter(|| simulate_run(backoff, clients, &params, &mut run_rng(1, 0)).unwrap())
        });
    }
    group.finish();
}

fn default_sweep(c: &mut Criterion) {
    let config = SweepConfig::post();
    let mut group = c.benchmark_group("aws_sweep");
    group.sample_size(10);
    group.bench_function("post-grid-all-cores", |b| {
        b.iter(|| run_sweep(&config, 2015, RUNS_DEFAULT, &|| {}).unwrap())
    });
    group.finish();
}

criterion_group!(benches, one_run, default_sweep);
criterion_main!(benches);
