//! The AWS post's claims on a reduced grid (3 client counts x 20 runs; a second or two), plus
//! replay of a run from its stream and checks that the claim evaluator can say "no".

use retrylab::backoff::{Backoff, Strategy};
use retrylab::experiments::aws::claims::evaluate;
use retrylab::experiments::aws::sweep::find_cell;
use retrylab::experiments::aws::{run_sweep, simulate_run, summarise, CellSummary, SweepConfig};
use retrylab::experiments::ClaimVerdict;
use retrylab::sim::run_rng;

const DECOR: Strategy = Strategy::Decorrelated { growth: 3 };

fn reduced_sweep() -> Vec<CellSummary> {
    let config = SweepConfig {
        clients: vec![50, 100, 150],
        ..SweepConfig::post()
    };
    summarise(&run_sweep(&config, 2015, 20, &|| {}).unwrap())
}

fn cell(cells: &[CellSummary], strategy: Strategy, clients: u32) -> &CellSummary {
    find_cell(cells, strategy, clients).unwrap()
}

#[test]
fn post_claims_hold_on_a_reduced_grid() {
    let cells = reduced_sweep();
    assert_eq!(cells.len(), 15);
    for clients in [50, 100, 150] {
        let calls = |s| cell(&cells, s, clients).calls.mean;
        let time = |s| cell(&cells, s, clients).time_ms.mean;
        // Work: none > exponential > decorrelated > equal and full (these two are within a few
        // percent of each other and swap places, so no order between them is asserted).
        assert!(
            calls(Strategy::None) > calls(Strategy::Exponential),
            "N={clients}"
        );
        assert!(calls(Strategy::Exponential) > calls(DECOR), "N={clients}");
        assert!(calls(DECOR) > calls(Strategy::FullJitter), "N={clients}");
        assert!(calls(DECOR) > calls(Strategy::EqualJitter), "N={clients}");
        let same = calls(Strategy::EqualJitter) / calls(Strategy::FullJitter);
        assert!(
            (0.85..1.15).contains(&same),
            "N={clients}: equal/full calls {same}"
        );
        // Time: exponential > equal > full and decorrelated > none (full and decorrelated swap
        // places around 140 clients).
        assert!(
            time(Strategy::Exponential) > 2.0 * time(Strategy::EqualJitter),
            "N={clients}"
        );
        assert!(
            time(Strategy::EqualJitter) > time(Strategy::FullJitter),
            "N={clients}"
        );
        assert!(time(Strategy::EqualJitter) > time(DECOR), "N={clients}");
        assert!(
            time(Strategy::FullJitter) > time(Strategy::None),
            "N={clients}"
        );
        assert!(time(DECOR) > time(Strategy::None), "N={clients}");
    }
    // At 100 clients full jitter needs less than half of plain exponential's calls, even
    // comparing the ends of the 95% intervals.
    let full = cell(&cells, Strategy::FullJitter, 100).calls;
    let expo = cell(&cells, Strategy::Exponential, 100).calls;
    assert!(
        full.high() < 0.5 * expo.low(),
        "full {full:?} vs exponential {expo:?}"
    );
}

#[test]
fn any_run_replays_from_its_seed_and_stream() {
    let config = SweepConfig {
        strategies: vec![Strategy::FullJitter, DECOR],
        clients: vec![20, 40],
        ..SweepConfig::post()
    };
    let records = run_sweep(&config, 77, 3, &|| {}).unwrap();
    assert_eq!(records.len(), 12);
    for record in [&records[0], &records[5], &records[11]] {
        let backoff = Backoff::aws_post(record.strategy);
        let mut rng = run_rng(77, record.stream);
        let replayed = simulate_run(backoff, record.clients, &config.params, &mut rng).unwrap();
        assert_eq!(replayed, record.outcome);
    }
    // Distinct streams: no two runs of a cell are the same run.
    assert_ne!(records[0].outcome, records[1].outcome);
}

#[test]
fn sweep_is_identical_on_one_thread_and_on_several() {
    let config = SweepConfig {
        clients: vec![10, 30],
        ..SweepConfig::post()
    };
    let pooled = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| run_sweep(&config, 5, 4, &|| {}).unwrap())
    };
    assert_eq!(pooled(1), pooled(3));
}

#[test]
fn claim_evaluator_says_no_when_the_data_disagree() {
    // A world where exponential is the best on everything and work grows linearly.
    let mut cells = Vec::new();
    // (strategy, calls and time in ms, each per client)
    let shape = [
        (Strategy::None, 9.0, 50.0),
        (Strategy::Exponential, 1.0, 10.0),
        (Strategy::EqualJitter, 2.0, 20.0),
        (Strategy::FullJitter, 4.0, 20.0),
        (DECOR, 3.0, 30.0),
    ];
    for clients in [50, 100, 150] {
        let n = f64::from(clients);
        for (strategy, calls, time_ms) in shape {
            cells.push(CellSummary::exact(
                strategy,
                clients,
                calls * n,
                time_ms * n,
            ));
        }
    }
    let claims = evaluate(&cells);
    assert_eq!(claims.len(), 7);
    for claim in &claims {
        assert_eq!(claim.verdict, ClaimVerdict::NotReproduced, "{claim:?}");
    }
    // And without the 100-client cells the 100-client claim is not tested, not passed.
    let without_100: Vec<CellSummary> = cells.into_iter().filter(|c| c.clients != 100).collect();
    let claims = evaluate(&without_100);
    assert!(claims
        .iter()
        .any(|c| c.statement.contains("100 clients") && c.verdict == ClaimVerdict::NotTested));
}
