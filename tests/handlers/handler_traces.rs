//! Traces that know their run, on the catalogue (`examples/handlers`): each broken design's counterexample
//! replays on its own design to the same violation, and replayed on its fixed twin it stops where the two
//! designs' calls part, saying which calls (before, a trace recorded only process numbers, and a broken design's
//! trace could run to its end on a fix whose calls differ).

use super::super as handlers;

use handlers::Visit;
use retrylab::check::{replay_path, timeline, Diverged, Model, Verdict};
use retrylab::handler::world::HandlerAction;
use retrylab::handler::{Handler, HandlerWorld, Worker};
use std::collections::BTreeMap;

/// A design's paths replayed: `Ok(the step at which the property is violated)`, or where it diverged.
type Replayer = Box<dyn Fn(&[HandlerAction], &str) -> Result<Option<usize>, Diverged>>;

#[derive(Default)]
struct Designs {
    replayers: BTreeMap<String, Replayer>,
    /// (design, property) -> its counterexample, and its timeline's texts.
    counterexamples: BTreeMap<(String, String), Vec<HandlerAction>>,
    texts: BTreeMap<(String, String), Vec<String>>,
}

impl Visit for Designs {
    fn design<H: Handler + Send + 'static, W: Worker + Send + 'static>(
        &mut self,
        name: &str,
        world: HandlerWorld<H, W>,
        _: &[(&str, Verdict)],
        _: &[&str],
    ) {
        let report = world.checker().bfs();
        for (property, path) in report.counterexamples() {
            let key = (name.to_string(), property.name.clone());
            let run = timeline(&world, path).expect("a found path runs");
            let texts = run.steps.into_iter().map(|step| step.text).collect();
            self.texts.insert(key.clone(), texts);
            self.counterexamples.insert(key, path.to_vec());
        }
        let replay = move |path: &[HandlerAction], property: &str| {
            replay_path(&world, path, None).map(|report| report.property(property).at_step)
        };
        self.replayers.insert(name.to_string(), Box::new(replay));
    }
}

#[test]
fn a_broken_designs_trace_stops_on_its_fix_where_their_calls_part() {
    let mut designs = Designs::default();
    handlers::catalogue(&mut designs);
    let pairs = [
        ("select-then-insert", "article", "no-duplicate-effect"),
        (
            "provider-not-idempotent",
            "provider-derived-key",
            "no-duplicate-effect",
        ),
        (
            "powertools-2944-delete-after-commit",
            "powertools-2944-delete-after-commit-fixed",
            "no-duplicate-effect",
        ),
        (
            "powertools-5714-orphan-recovery",
            "powertools-5714-orphan-recovery-fixed",
            "no-duplicate-effect",
        ),
        (
            "completer-without-derived-key",
            "completer-without-derived-key-fixed",
            "no-duplicate-effect",
        ),
        (
            "idempot-js-182-setex-claim",
            "idempot-js-182-setex-claim-fixed",
            "no-duplicate-effect",
        ),
    ];
    for (broken, fixed, property) in pairs {
        let key = (broken.to_string(), property.to_string());
        let path = &designs.counterexamples[&key];
        // The twin: on its own design the trace runs to its end and breaks the property at its last step.
        let own = designs.replayers[broken](path, property);
        assert_eq!(own, Ok(Some(path.len())), "{broken} {property}");
        let diverged = designs.replayers[fixed](path, property)
            .expect_err("a fix whose calls differ does not run the broken design's trace");
        println!("{broken} on {fixed}: {diverged}");
        assert!(
            diverged.step <= path.len(),
            "{broken} on {fixed}: {diverged}"
        );
        assert!(
            diverged.reason.starts_with("the calls differ: "),
            "{broken} on {fixed}: {diverged}"
        );
    }
}

/// idempot-js #182's counterexample reads as the report: the second claim replaces the first's in-flight record.
#[test]
fn the_overwritten_claim_is_printed() {
    let mut designs = Designs::default();
    handlers::catalogue(&mut designs);
    let key = (
        "idempot-js-182-setex-claim".to_string(),
        "no-duplicate-effect".to_string(),
    );
    let texts = &designs.texts[&key];
    println!("{texts:#?}");
    let overwrite = "kv-set c0/k0 = in_progress PX 30000 (replaces in_progress)";
    assert!(
        texts.iter().any(|text| text.ends_with(overwrite)),
        "{texts:#?}"
    );
}
