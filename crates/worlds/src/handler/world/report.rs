//! A handler world's report as people read it, in text, JSON and HTML: the properties (`always`, `eventually`)
//! with `holds` / `violated` / `incomplete`, and apart from them the scenarios with `reached` / `not reached`.
//! The checker judges a scenario as a `sometimes` property, so one never met by a complete search comes out
//! `violated`; printed beside the safety verdicts that reads as a bug in a correct design. Here it reads `not
//! reached`, and it fails the report only when the design wants it (`HandlerWorld::wants`).

use super::HandlerWorld;
use crate::check::{timeline, Kind, Model, PropertyReport, Report, Verdict};
use crate::handler::api::{Handler, Worker};
use crate::report::html::{escape_html, plain_page};
use serde_json::{json, Value};

/// What a search met of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    Reached,
    NotReached,
    /// Not met before the search was cut short: it may be reachable.
    NotReachedSoFar,
}

impl Reach {
    pub fn name(self) -> &'static str {
        match self {
            Reach::Reached => "reached",
            Reach::NotReached => "not reached",
            Reach::NotReachedSoFar => "not reached so far (search cut short)",
        }
    }

    fn of(property: &PropertyReport<impl Clone>) -> Reach {
        match property.verdict {
            Verdict::Holds => Reach::Reached,
            Verdict::Violated => Reach::NotReached,
            Verdict::Incomplete => Reach::NotReachedSoFar,
        }
    }
}

/// One scenario's line: its name, what the search met, whether the design wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioLine {
    pub name: String,
    pub reach: Reach,
    pub wanted: bool,
}

/// A check of a handler world, with the world it checked (for the counterexamples' timelines).
pub struct HandlerReport<'w, H: Handler, W: Worker> {
    world: &'w HandlerWorld<H, W>,
    pub report: Report<HandlerWorld<H, W>>,
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Check breadth-first and report (see [`HandlerReport`]).
    pub fn report(&self) -> HandlerReport<'_, H, W> {
        self.report_of(self.checker().bfs())
    }

    /// A report of a search already run on this world (with bounds, threads or walks of your choosing).
    pub fn report_of(&self, report: Report<Self>) -> HandlerReport<'_, H, W> {
        HandlerReport {
            world: self,
            report,
        }
    }
}

impl<H: Handler, W: Worker> HandlerReport<'_, H, W> {
    /// The `always` and `eventually` properties with their verdicts, in the world's order.
    pub fn verdicts(&self) -> Vec<(&str, Verdict)> {
        let properties = self.report.properties.iter();
        (properties.filter(|p| p.kind != Kind::Sometimes))
            .map(|p| (p.name.as_str(), p.verdict))
            .collect()
    }

    /// The scenarios (built-in and the design's own `sometimes`), in the world's order.
    pub fn scenarios(&self) -> Vec<ScenarioLine> {
        let properties = self.report.properties.iter();
        (properties.filter(|p| p.kind == Kind::Sometimes))
            .map(|p| ScenarioLine {
                name: p.name.clone(),
                reach: Reach::of(p),
                wanted: self.world.own.wanted.contains(&p.name),
            })
            .collect()
    }

    /// What fails the report: a property that does not hold, a wanted scenario not reached.
    pub fn failures(&self) -> Vec<String> {
        let properties = (self.verdicts().into_iter())
            .filter(|(_, verdict)| *verdict != Verdict::Holds)
            .map(|(name, verdict)| format!("{name} is {}", verdict.name()));
        let scenarios = (self.scenarios().into_iter())
            .filter(|line| line.wanted && line.reach != Reach::Reached)
            .map(|line| format!("wanted scenario {} is {}", line.name, line.reach.name()));
        properties.chain(scenarios).collect()
    }

    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// The numbered steps of a violated property's counterexample (empty when it has none).
    pub fn counterexample_steps(&self, property: &str) -> Vec<String> {
        let Some(path) = self.report.counterexample(property) else {
            return Vec::new();
        };
        let run = timeline(self.world, path).expect("a path the search found replays");
        (run.steps.into_iter())
            .map(|step| format!("{:>2}. {}", step.step, step.text))
            .collect()
    }

    fn search_line(&self) -> String {
        let report = &self.report;
        let mut line = format!(
            "{} states, {} transitions, depth {}",
            report.states, report.transitions, report.depth
        );
        if let Some(reason) = &report.stopped_by {
            line.push_str(&format!(", search cut short: {reason}"));
        }
        line
    }

    fn verdict_text(&self, name: &str, verdict: Verdict) -> String {
        match self.report.counterexample(name) {
            Some(path) => format!("{} ({} steps)", verdict.name(), path.len()),
            None => verdict.name().to_string(),
        }
    }

    /// The report as text: the search, the properties, the scenarios, the counterexamples, and the outcome.
    pub fn text(&self) -> String {
        let mut text = format!("{}\nproperties:\n", self.search_line());
        for (name, verdict) in self.verdicts() {
            text.push_str(&format!(
                "  {name:<28} {}\n",
                self.verdict_text(name, verdict)
            ));
        }
        text.push_str("scenarios:\n");
        for line in self.scenarios() {
            let wanted = match (line.wanted, line.reach) {
                (false, _) => "",
                (true, Reach::Reached) => " (wanted)",
                (true, _) => " (WANTED)",
            };
            text.push_str(&format!(
                "  {:<28} {}{wanted}\n",
                line.name,
                line.reach.name()
            ));
        }
        for (name, _) in self.verdicts() {
            let steps = self.counterexample_steps(name);
            if !steps.is_empty() {
                text.push_str(&format!("counterexample for {name}:\n"));
                steps
                    .iter()
                    .for_each(|s| text.push_str(&format!("  {s}\n")));
            }
        }
        let failures = self.failures();
        match failures.is_empty() {
            true => text.push_str("passed\n"),
            false => text.push_str(&format!("FAILED: {}\n", failures.join("; "))),
        }
        text
    }

    /// The report as JSON (keys in byte order): `properties` (name -> verdict), `reached`, `not_reached` (with
    /// `not_reached_so_far` when the search was cut short), `wanted`, `failures`, `passed`, the search's size.
    pub fn json(&self) -> Value {
        let named = |reach: Reach| -> Vec<String> {
            (self.scenarios().into_iter())
                .filter(|line| line.reach == reach)
                .map(|line| line.name)
                .collect()
        };
        let verdicts = self.verdicts().into_iter();
        let properties: serde_json::Map<String, Value> = verdicts
            .map(|(name, verdict)| (name.to_string(), json!(verdict.name())))
            .collect();
        let lens: serde_json::Map<String, Value> = (self.report.counterexamples())
            .map(|(p, path)| (p.name.clone(), json!(path.len())))
            .collect();
        json!({
            "complete": self.report.complete,
            "counterexample_lens": lens,
            "depth": self.report.depth,
            "failures": self.failures(),
            "not_reached": named(Reach::NotReached),
            "not_reached_so_far": named(Reach::NotReachedSoFar),
            "passed": self.passed(),
            "properties": properties,
            "reached": named(Reach::Reached),
            "states": self.report.states,
            "transitions": self.report.transitions,
            "wanted": self.world.own.wanted,
        })
    }

    /// The report as a self-contained HTML page: a table of properties, one of scenarios, the counterexamples.
    pub fn html(&self, title: &str) -> String {
        let row = |name: &str, value: &str, bad: bool| {
            let class = if bad { " class=\"error\"" } else { "" };
            let (name, value) = (escape_html(name), escape_html(value));
            format!("<tr><td><code>{name}</code></td><td{class}>{value}</td></tr>\n")
        };
        let mut body = String::from("<section>\n<h2>Properties</h2>\n<table>\n");
        for (name, verdict) in self.verdicts() {
            let text = self.verdict_text(name, verdict);
            body.push_str(&row(name, &text, verdict != Verdict::Holds));
        }
        body.push_str("</table>\n<h2>Scenarios</h2>\n<table>\n");
        for line in self.scenarios() {
            let missing = line.wanted && line.reach != Reach::Reached;
            let wanted = if line.wanted { ", wanted" } else { "" };
            body.push_str(&row(
                &line.name,
                &format!("{}{wanted}", line.reach.name()),
                missing,
            ));
        }
        body.push_str("</table>\n");
        for (name, _) in self.verdicts() {
            let steps = self.counterexample_steps(name);
            if !steps.is_empty() {
                let items: String = (steps.iter())
                    .map(|step| format!("<li>{}</li>\n", escape_html(step)))
                    .collect();
                let name = escape_html(name);
                body.push_str(&format!(
                    "<h2>Counterexample: {name}</h2>\n<ul>\n{items}</ul>\n"
                ));
            }
        }
        let failures = self.failures();
        let outcome = match failures.is_empty() {
            true => "passed".to_string(),
            false => format!("FAILED: {}", failures.join("; ")),
        };
        body.push_str(&format!("<p>{}</p>\n</section>\n", escape_html(&outcome)));
        plain_page(title, &self.search_line(), &body)
    }
}
