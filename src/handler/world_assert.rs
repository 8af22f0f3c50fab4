//! A test's one line: check a handler world, and fail with the shortest counterexample step by step and the
//! command that runs the same search again (it is deterministic: the same steps every time, on any machine).

use super::api::{Handler, Worker};
use super::world::HandlerWorld;
use crate::check::{timeline, Model, Report, Verdict};

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Check breadth-first and panic unless `property` holds (an incomplete search fails too: it proves
    /// nothing), printing the shortest counterexample and the command that replays it. The report otherwise.
    pub fn assert_holds(&self, property: &str) -> Report<Self> {
        let report = self.checker().bfs();
        let verdict = report.verdict(property);
        if verdict == Verdict::Holds {
            return report;
        }
        let mut text = format!("{property} is {}", verdict.name());
        if let Some(path) = report.counterexample(property) {
            text.push_str(&format!(
                "; the shortest counterexample, {} steps:\n",
                path.len()
            ));
            let run = timeline(self, path).expect("a path the search found replays");
            for step in run.steps {
                text.push_str(&format!("    {:>2}. {}\n", step.step, step.text));
            }
        } else {
            text.push('\n');
        }
        text.push_str(&format!("replay: {}", replay_command()));
        panic!("{text}");
    }
}

/// `cargo test --test BINARY -- TEST --exact` for the integration test running now (the test harness names
/// the test's thread after it), or what to do when that cannot be told.
fn replay_command() -> String {
    let test = std::thread::current().name().map(str::to_string);
    let binary = std::env::current_exe().ok().and_then(|path| {
        let stem = path.file_stem()?.to_str()?.to_string();
        // Cargo names a test binary NAME-HASH.
        Some(
            stem.rsplit_once('-')
                .map_or(stem.clone(), |(name, _)| name.to_string()),
        )
    });
    match (binary, test) {
        (Some(binary), Some(test)) if test != "main" => {
            format!("cargo test --test {binary} -- {test} --exact")
        }
        _ => "run this check again: the search is deterministic".to_string(),
    }
}
