//! Throughput of the model checker: unique states per second of an exhaustive search, with and without symmetry
//! reduction, and of seeded random walks.
//!
//!     cargo bench --bench explore

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use retrylab::check::Model as _;
use retrylab::spec::load_model;
use std::path::Path;

fn bfs(c: &mut Criterion) {
    let model = load_model(Path::new("models/lease-fenced.toml")).expect("the model parses");
    let mut group = c.benchmark_group("bfs");
    group.sample_size(10);
    for symmetry in [false, true] {
        let states = model.world.checker().symmetry(symmetry).bfs().states;
        group.throughput(Throughput::Elements(states));
        let name = if symmetry {
            "lease-fenced-symmetry"
        } else {
            "lease-fenced"
        };
        group.bench_function(name, |b| {
            b.iter(|| model.world.checker().symmetry(symmetry).bfs())
        });
    }
    group.finish();
}

fn walks(c: &mut Criterion) {
    let model = load_model(Path::new("models/article-sqlite.toml")).expect("the model parses");
    let walks = || model.world.checker().depth_max(400).walks(0, 1000);
    let steps = walks().states;
    let mut group = c.benchmark_group("walks");
    group.sample_size(10);
    group.throughput(Throughput::Elements(steps));
    group.bench_function("article-1000-seeds", |b| b.iter(walks));
    group.finish();
}

criterion_group!(benches, bfs, walks);
criterion_main!(benches);
