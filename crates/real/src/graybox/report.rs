//! What the gray-box checks print: one result per check (the black-box probe's JSON shape, plus `incomplete`
//! and the saved schedule's path), as JSON lines or as the probe's table.

use serde::Serialize;

/// The gray-box checks, in the order they run and print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GrayCheck {
    CrashAtEveryStatement,
    InterleavedSameKey,
    LostResponse,
}

impl GrayCheck {
    pub const ALL: [GrayCheck; 3] = [
        GrayCheck::CrashAtEveryStatement,
        GrayCheck::InterleavedSameKey,
        GrayCheck::LostResponse,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GrayCheck::CrashAtEveryStatement => "crash-at-every-statement",
            GrayCheck::InterleavedSameKey => "interleaved-same-key",
            GrayCheck::LostResponse => "lost-response",
        }
    }

    /// `--check NAME`; the error lists the names.
    pub fn parse(name: &str) -> Result<GrayCheck, String> {
        GrayCheck::ALL
            .into_iter()
            .find(|check| check.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = GrayCheck::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "--check: unknown gray-box check '{name}'; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// What one gray-box check found on the running service (not the checker's `check::Verdict` of a property).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GrayVerdict {
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "fail")]
    Fail,
    /// A bound cut the search short: never a pass.
    #[serde(rename = "incomplete")]
    Incomplete,
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl GrayVerdict {
    pub fn name(self) -> &'static str {
        match self {
            GrayVerdict::Pass => "pass",
            GrayVerdict::Fail => "fail",
            GrayVerdict::Incomplete => "incomplete",
            GrayVerdict::NotApplicable => "n/a",
        }
    }
}

/// One check's line of `--json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GrayResult {
    pub check: String,
    pub result: GrayVerdict,
    pub evidence: String,
    /// The command that runs it again (with `--replay FILE` on failures).
    pub reproduce: String,
    /// The saved schedule (failures only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
}

/// The results as the probe's table; under each failure its schedule and replay command.
pub fn table(results: &[GrayResult]) -> String {
    let mut text = format!("{:<25} {:<10} evidence\n", "check", "result");
    for result in results {
        text.push_str(&format!(
            "{:<25} {:<10} {}\n",
            result.check,
            result.result.name(),
            result.evidence
        ));
        if let Some(schedule) = &result.schedule {
            text.push_str(&format!(
                "    schedule: {schedule}\n    replay:   {}\n",
                result.reproduce
            ));
        }
    }
    text
}

/// 0 every check passed (or was incomplete or n/a), 1 one failed; with `strict` (`--strict`, as `check
/// --strict` fails on vacuous greens) an `incomplete` or `n/a` is 1 too: it proved nothing.
pub fn exit_code(results: &[GrayResult], strict: bool) -> i32 {
    let failing = |r: &&GrayResult| match r.result {
        GrayVerdict::Fail => true,
        GrayVerdict::Incomplete | GrayVerdict::NotApplicable => strict,
        GrayVerdict::Pass => false,
    };
    i32::from(results.iter().any(|r| failing(&r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_list_the_known() {
        for check in GrayCheck::ALL {
            assert_eq!(GrayCheck::parse(check.name()), Ok(check));
            assert_eq!(
                serde_json::to_string(&check).unwrap(),
                format!("\"{}\"", check.name())
            );
        }
        let error = GrayCheck::parse("crash").unwrap_err();
        assert!(error.contains("lost-response"), "{error}");
    }

    #[test]
    fn a_failure_prints_its_schedule_and_fails_the_exit_code() {
        let pass = GrayResult {
            check: "lost-response".into(),
            result: GrayVerdict::Incomplete,
            evidence: "cut".into(),
            reproduce: "retrylab probe ...".into(),
            schedule: None,
        };
        assert_eq!(exit_code(std::slice::from_ref(&pass), false), 0);
        // --strict: an incomplete or n/a check proved nothing, and fails the run.
        assert_eq!(exit_code(std::slice::from_ref(&pass), true), 1);
        let na = GrayResult {
            result: GrayVerdict::NotApplicable,
            ..pass.clone()
        };
        assert_eq!(exit_code(std::slice::from_ref(&na), true), 1);
        let passed = GrayResult {
            result: GrayVerdict::Pass,
            ..pass.clone()
        };
        assert_eq!(exit_code(std::slice::from_ref(&passed), true), 0);
        let json = serde_json::to_string(&pass).unwrap();
        assert!(
            json.contains(r#""result":"incomplete""#) && !json.contains("schedule"),
            "{json}"
        );
        let fail = GrayResult {
            result: GrayVerdict::Fail,
            schedule: Some("retrylab-schedules/lost-response-1.json".into()),
            ..pass.clone()
        };
        assert_eq!(exit_code(&[pass, fail.clone()], false), 1);
        assert!(table(&[fail]).contains("schedule: retrylab-schedules/lost-response-1.json"));
    }
}
