//! A test's one line: check a handler world, and fail with the shortest counterexample step by step and the
//! command that runs the same search again (it is deterministic: the same steps every time, on any machine).
//! A name that is no property (or no scenario) of the world is refused before the search, with the valid ones:
//! a misspelt property would otherwise be judged after minutes of search, or not at all.

use super::{HandlerAction, HandlerWorld};
use crate::check::{Kind, Model, Report, Verdict};
use crate::handler::api::{Handler, Worker};

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Check breadth-first and panic unless `property` holds (an incomplete search fails too: it proves
    /// nothing), printing the shortest counterexample and the command that replays it. The report otherwise.
    pub fn assert_holds(&self, property: &str) -> Report<Self> {
        self.refuse_unknown("assert_holds", property, Kind::Always);
        let report = self.checker().bfs();
        let verdict = report.verdict(property);
        if verdict == Verdict::Holds {
            return report;
        }
        let mut text = format!("{property} is {}", verdict.name());
        let steps = self.report_of(report).counterexample_steps(property);
        if steps.is_empty() {
            text.push('\n');
        } else {
            let count = steps.len();
            text.push_str(&format!("; the shortest counterexample, {count} steps:\n"));
            steps
                .iter()
                .for_each(|step| text.push_str(&format!("    {step}\n")));
        }
        text.push_str(&format!("replay: {}", replay_command()));
        panic!("{text}");
    }

    /// Check breadth-first and panic unless `property` is violated (the broken twin of a design is caught);
    /// its shortest counterexample otherwise.
    pub fn assert_violated(&self, property: &str) -> Vec<HandlerAction> {
        self.refuse_unknown("assert_violated", property, Kind::Always);
        let report = self.checker().bfs();
        match report.counterexample(property) {
            Some(path) => path.to_vec(),
            None => panic!(
                "{property} is {}, expected violated\nreplay: {}",
                report.verdict(property).name(),
                replay_command()
            ),
        }
    }

    /// Check breadth-first and panic unless the search reached `scenario` (a built-in one, or an own
    /// `sometimes`): the evidence that what holds was put to the test. The report otherwise.
    pub fn assert_reached(&self, scenario: &str) -> Report<Self> {
        self.refuse_unknown("assert_reached", scenario, Kind::Sometimes);
        let report = self.checker().bfs();
        if !report.reached(scenario) {
            let reach = self.report_of(report).scenarios();
            let line = reach.iter().find(|line| line.name == scenario);
            let said = line.map_or("not reached", |line| line.reach.name());
            panic!(
                "scenario {scenario} is {said}\nreplay: {}",
                replay_command()
            );
        }
        report
    }

    /// Check breadth-first and panic, with the whole text report, unless every property holds and every
    /// wanted scenario (`wants`) was reached; a scenario not wanted may go unreached.
    pub fn assert_passes(&self) -> Report<Self> {
        let checked = self.report();
        if !checked.passed() {
            panic!("{}replay: {}", checked.text(), replay_command());
        }
        checked.report
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
