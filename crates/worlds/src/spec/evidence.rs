//! What a model's verdicts rest on: the scenarios its search reached and did not, and whether a safety property
//! that holds holds vacuously. A model with no fault enabled, or whose dangerous scenarios were never reached,
//! proves nothing about retries by holding: `check` says so in every output (text, JSON, reports) and fails on
//! it with `--strict`, so that no green stands for a search that never met the danger it is about.

use super::ModelFile;
use crate::builtin::{Event, Faults, PropertyKind, World, WorldProperty};
use crate::check::{Kind, Report, Verdict};
use serde::{Deserialize, Serialize};

/// Why a `holds` proves nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vacuity {
    /// Every fault budget is zero: no loss, crash, timeout... was ever injected.
    NoFault,
    /// Faults are enabled, but none of the model's dangerous scenarios was reached.
    NoScenarioReached,
}

/// The scenarios and the vacuity of one model's search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Every scenario witnessed, in the scenarios' fixed order.
    pub reached: Vec<String>,
    /// The scenarios of this kind of world (HTTP or queue) that were not witnessed, in the same order.
    pub not_reached: Vec<String>,
    /// The model's dangerous scenarios: those its file requires (`expect.reached`), or when it requires none,
    /// those its enabled faults can cause.
    pub dangerous: Vec<String>,
    /// Set when a safety property holds but the search met no danger.
    pub vacuous: Option<Vacuity>,
    /// The safety properties that hold (vacuously, when `vacuous` is set).
    pub holding: Vec<String>,
}

impl Evidence {
    /// The warning people read, or `None` when the verdicts are not vacuous.
    pub fn warning(&self) -> Option<String> {
        let reason = match self.vacuous? {
            Vacuity::NoFault => "no fault is enabled".to_string(),
            Vacuity::NoScenarioReached => format!(
                "none of its scenarios was reached ({})",
                self.dangerous.join(", ")
            ),
        };
        Some(format!(
            "{} {} but vacuously: {reason}",
            self.holding.join(", "),
            if self.holding.len() == 1 {
                "holds,"
            } else {
                "hold,"
            }
        ))
    }
}

/// Scenario names as one list people read: comma-separated, or "none".
pub fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The evidence of `report`, a search of `model`.
pub fn evidence(model: &ModelFile, report: &Report<World>) -> Evidence {
    let queue = matches!(model.world, World::Queue(_));
    let witnessed = |event: Event| report.reached(event.scenario_name());
    let of_world = Event::scenarios().filter(|event| event.in_world(queue));
    let (reached, not_reached): (Vec<Event>, Vec<Event>) = of_world.partition(|e| witnessed(*e));
    let dangerous: Vec<Event> = if model.reached.is_empty() {
        fault_scenarios(model.world.faults(), queue)
    } else {
        model.reached.clone()
    };
    let holding: Vec<String> = report
        .properties
        .iter()
        .filter(|found| found.kind != Kind::Sometimes && found.verdict == Verdict::Holds)
        .filter(|found| {
            WorldProperty::by_name(&found.name).is_some_and(|p| p.kind() == PropertyKind::Always)
        })
        .map(|found| found.name.clone())
        .collect();
    let vacuous = if holding.is_empty() {
        None
    } else if model
        .world
        .faults()
        .as_array()
        .iter()
        .all(|budget| *budget == 0)
    {
        Some(Vacuity::NoFault)
    } else if !dangerous.is_empty() && !dangerous.iter().any(|event| witnessed(*event)) {
        Some(Vacuity::NoScenarioReached)
    } else {
        None
    };
    let names = |events: &[Event]| {
        events
            .iter()
            .map(|e| e.scenario_name().to_string())
            .collect()
    };
    Evidence {
        reached: names(&reached),
        not_reached: names(&not_reached),
        dangerous: names(&dangerous),
        vacuous,
        holding,
    }
}

/// The scenarios the enabled faults can cause, in the scenarios' order: what a model that declares none must
/// reach at least one of.
fn fault_scenarios(faults: Faults, queue: bool) -> Vec<Event> {
    let caused_by = |event: Event| match event {
        Event::LostRequest => faults.drop_requests > 0,
        Event::LostResponse => faults.drop_responses > 0,
        Event::DuplicatedRequest => faults.duplicate_requests > 0,
        Event::CrashAfterClaim | Event::CrashBeforeAck => faults.crashes > 0,
        Event::SlowOwner => faults.pauses > 0,
        Event::RetryAfterTimeout => faults.early_timeouts > 0,
        Event::HandlerError => faults.handler_errors > 0,
        Event::KeyExpired => faults.key_expiries > 0,
        Event::Republished => {
            faults.republishes > 0 || faults.window_expiries > 0 || faults.producer_restarts > 0
        }
        _ => false,
    };
    Event::scenarios()
        .filter(|event| event.in_world(queue) && caused_by(*event))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Checker;

    const HEAD: &str = "description = \"d\"\n[protocol]\nclaim = \"unique-index\"\n\
        [clients]\ncount = 1\nmax-attempts = 2\n[[clients.operations]]\nbody = { amount = 1 }\n";

    fn evidence_of(text: &str) -> Evidence {
        let model = super::super::parse_model("m.toml", text).unwrap();
        let report = Checker::new(&model.world).bfs();
        evidence(&model, &report)
    }

    #[test]
    fn a_model_without_faults_holds_vacuously() {
        let found = evidence_of(&format!(
            "{HEAD}[expect]\nno-duplicate-effect = \"holds\"\n"
        ));
        assert_eq!(found.vacuous, Some(Vacuity::NoFault));
        assert!(found.holding.contains(&"no-duplicate-effect".to_string()));
        let warning = found.warning().unwrap();
        assert!(
            warning.contains("but vacuously: no fault is enabled"),
            "{warning}"
        );
        assert!(found.not_reached.contains(&"lost-response".to_string()));
        assert!(
            !found.not_reached.contains(&"republished".to_string()),
            "a queue scenario"
        );
    }

    #[test]
    fn a_model_whose_fault_scenario_is_reached_is_not_vacuous() {
        let text = format!(
            "{HEAD}[faults]\ndrop-responses = 1\n[expect]\nno-duplicate-effect = \"holds\"\n"
        );
        let found = evidence_of(&text);
        assert_eq!(found.vacuous, None, "{found:?}");
        assert_eq!(found.dangerous, ["lost-response"]);
        assert!(found.reached.contains(&"lost-response".to_string()));
        assert_eq!(found.warning(), None);
    }

    #[test]
    fn a_declared_scenario_never_reached_makes_the_holds_vacuous() {
        // A lease takeover cannot happen without a lease: the one scenario the file requires is never met.
        let text = format!(
            "{HEAD}[faults]\ndrop-responses = 1\n[expect]\nno-duplicate-effect = \"holds\"\n\
             reached = [\"lease-takeover\"]\n"
        );
        let found = evidence_of(&text);
        assert_eq!(found.vacuous, Some(Vacuity::NoScenarioReached));
        assert!(found
            .warning()
            .unwrap()
            .contains("none of its scenarios was reached (lease-takeover)"));
    }
}
