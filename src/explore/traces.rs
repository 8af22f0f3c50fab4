//! Walks saved from the explorer as the project's trace files (`check::Trace`, found by `by-hand`), for any
//! model whose actions serialise: the built-in worlds' files are what `retrylab replay` takes.

use super::server::{Saved, Traces};
use crate::atomic::write_atomic;
use crate::check::{self, Kind, Model, Trace, Verdict};
use crate::spec;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;

/// Saved walks in `folder`, one file per model: `<stem>.by-hand.json` (a new save replaces it, atomically).
pub struct TraceFiles {
    /// The model's name in the trace (a model file's path, say).
    pub model: String,
    /// The model's text, opaque: opening a trace of another text is refused.
    pub model_source: String,
    pub folder: PathBuf,
    pub stem: String,
}

impl<M> Traces<M> for TraceFiles
where
    M: Model,
    M::Action: Serialize + DeserializeOwned,
{
    fn save(&self, model: &M, run: &check::Run<M>, property: &str) -> Result<Saved, String> {
        let property = match property {
            "" => first_violated(model, &check::judge_run(model, run, None)),
            name => name.to_string(),
        };
        let trace = Trace::new(
            &self.model,
            &self.model_source,
            &property,
            "by-hand",
            None,
            run.steps.clone(),
        );
        let file_name = format!("{}.by-hand.json", self.stem);
        let file = self.folder.join(&file_name);
        let text = trace.to_json();
        std::fs::create_dir_all(&self.folder)
            .and_then(|()| write_atomic(&file, text.as_bytes()))
            .map_err(|error| format!("cannot write {}: {error}", file.display()))?;
        Ok(Saved {
            path: file.display().to_string(),
            file_name,
            property,
            trace: text,
        })
    }

    fn open(&self, _model: &M, text: &str) -> Result<Vec<M::Action>, String> {
        let trace: Trace<M::Action> =
            spec::parse_trace_of("the trace", text).map_err(|error| error.to_string())?;
        if trace.model_source != self.model_source {
            return Err(format!(
                "this is a trace of another model text ({}): explore that model to continue it",
                trace.model
            ));
        }
        Ok(trace.steps.into_iter().map(|step| step.action).collect())
    }
}

/// The safety or liveness property a judged path violated earliest (ties: in the model's order), else the
/// model's first one.
pub fn first_violated<M: Model>(model: &M, judged: &check::Report<M>) -> String {
    let earliest = judged
        .properties
        .iter()
        .enumerate()
        .filter(|(_, found)| found.kind != Kind::Sometimes && found.verdict == Verdict::Violated)
        .filter_map(|(order, found)| Some((found.at_step?, order, &found.name)))
        .min();
    match earliest {
        Some((_, _, name)) => name.clone(),
        None => decidable_properties(model)
            .into_iter()
            .next()
            .unwrap_or_default(),
    }
}

/// The names of the properties a trace can decide: the safety and liveness ones, in the model's order.
pub fn decidable_properties<M: Model>(model: &M) -> Vec<String> {
    model
        .properties()
        .into_iter()
        .filter(|property| property.kind() != Kind::Sometimes)
        .map(|property| property.name().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::first_violated;
    use crate::check::{self, Model, Property};

    /// A counter that steps up to 3; "below 2" breaks at step 2, "below 3" at step 3, "below 9" never.
    struct Counter;

    impl Model for Counter {
        type State = u8;
        type Action = ();
        type Obs = u8;

        fn init_state(&self) -> u8 {
            0
        }

        fn actions(&self, state: &u8, out: &mut Vec<()>) {
            if *state < 3 {
                out.push(());
            }
        }

        fn apply(&self, state: &mut u8, _: &()) -> u8 {
            *state += 1;
            0
        }

        fn properties(&self) -> Vec<Property<Counter>> {
            vec![
                Property::sometimes("reaches 1", |_, s| *s == 1),
                Property::always("below 9", |_, s| *s < 9),
                Property::always("below 3", |_, s| *s < 3),
                Property::always("below 2", |_, s| *s < 2),
            ]
        }
    }

    fn first_after(steps: usize) -> String {
        let run = check::timeline(&Counter, &vec![(); steps]).unwrap();
        first_violated(&Counter, &check::judge_run(&Counter, &run, None))
    }

    #[test]
    fn a_saved_walk_decides_the_property_it_broke_first() {
        assert_eq!(
            first_after(3),
            "below 2",
            "broken at step 2, before 'below 3'"
        );
        assert_eq!(first_after(2), "below 2");
        // Nothing broken: the first property that can be (a `sometimes` one decides no trace).
        assert_eq!(first_after(1), "below 9");
    }
}
