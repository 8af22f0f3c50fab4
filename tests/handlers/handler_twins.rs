//! Where a handler of `examples/handlers` also exists as a knob model in `models/`, both worlds, built with the
//! same clients, processes and faults, get the same verdict on every property they share.

use super::super as handlers;

use retrylab::check::Model;
use retrylab::handler::designs::{knob_twin, ArticleKnobs};
use retrylab::handler::{Handler, HandlerWorld};
use retrylab::protocol::ProtocolConfig;
use retrylab::spec::load_model;
use std::path::Path;

fn compare<H: Handler>(file: &str, handler: H) -> retrylab::check::Report<HandlerWorld<H>> {
    let model = load_model(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(file),
    )
    .unwrap();
    let knobs = model.world.checker().bfs();
    let world = knob_twin(handler, &model);
    let written = world.checker().bfs();
    for property in [
        "no-duplicate-effect",
        "no-lost-effect",
        "consistent-replay",
        "eventually-resolves",
    ] {
        assert_eq!(
            knobs.verdict(property),
            written.verdict(property),
            "{file} {property}: knob model and handler disagree"
        );
    }
    println!(
        "{file}: knob model {} states, handler {} states",
        knobs.states, written.states
    );
    written
}

#[test]
fn select_then_insert_agrees_with_its_knob_model() {
    compare(
        "select-then-insert.toml",
        handlers::select_then_insert::SelectThenInsert,
    );
}

/// 440,035 knob states against 1.6 M handler states (the handler world's states hold strings): about three
/// minutes in a release build, so it runs on request:
/// `cargo test --release --example handlers handler_twins:: -- --ignored`.
#[test]
#[ignore]
fn the_article_agrees_with_its_knob_model() {
    compare("article-sqlite.toml", handlers::article::Article);
}

/// The article's design with another fingerprint policy (the knob model's `fingerprint`).
fn article_fingerprinting(fingerprint: retrylab::protocol::FingerprintPolicy) -> ArticleKnobs {
    ArticleKnobs {
        protocol: ProtocolConfig {
            fingerprint,
            ..ProtocolConfig::ARTICLE
        },
        ..ArticleKnobs::ARTICLE
    }
}

/// Model files with two operations under one key (`same-key-as`), the second with another body: the twin
/// sends both operations with their own bodies under the first's key. With a normalised fingerprint the second
/// gets 422 and `no-lost-effect` holds; the broken twin (no fingerprint) replays the first payment for the
/// second operation, and both worlds find the lost effect.
#[test]
fn a_changed_body_under_a_reused_key_agrees_with_its_knob_models() {
    use retrylab::check::Verdict;
    use retrylab::protocol::FingerprintPolicy;
    let fixed = compare(
        "normalized-changed-body.toml",
        article_fingerprinting(FingerprintPolicy::Normalized),
    );
    assert_eq!(fixed.verdict("no-lost-effect"), Verdict::Holds);
    let broken = compare(
        "fingerprint-none-changed-body.toml",
        article_fingerprinting(FingerprintPolicy::None),
    );
    assert_eq!(broken.verdict("no-lost-effect"), Verdict::Violated);
}
