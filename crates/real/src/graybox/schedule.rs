//! A failing schedule as data (`retrylab-schedule`, version 2): the check, the requests (key, body), the
//! steps in the order they were released (request, store, normalised text), the crash point, the verdict and
//! its evidence. Saved for every failure as `<check>-<n>.json`; `--replay FILE` runs it again strictly.
//!
//! Version 2's crash point is a request's step (`request`, `statement`: its index among that request's
//! released steps); version 1's was an index into `released` (`boundary`). A version 1 file is read by
//! converting its index, which names the same statement.

use super::run::{CrashAt, Released, When};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "retrylab-schedule";
pub const VERSION: u32 = 2;
/// The oldest version `load` reads.
const VERSION_OLDEST: u32 = 1;
/// Files per check in one folder at most (`<check>-1.json` ...).
const FILES_PER_CHECK_MAX: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledRequest {
    pub key: String,
    pub body: String,
}

/// Where the service was killed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashPoint {
    /// 0-based index into `requests`.
    pub request: u32,
    /// 0-based index among that request's entries of `released`.
    pub statement: usize,
    pub when: When,
    pub text: String,
}

impl CrashPoint {
    pub fn at(&self) -> CrashAt {
        CrashAt {
            request: self.request,
            statement: self.statement,
            when: self.when,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub format: String,
    pub version: u32,
    pub check: String,
    pub url: String,
    pub requests: Vec<ScheduledRequest>,
    /// For crash-at-every-statement: the learned request's boundaries (the crash point indexes them).
    pub released: Vec<Released>,
    pub crash: Option<CrashPoint>,
    pub verdict: String,
    pub evidence: String,
}

impl Schedule {
    /// Read and check a saved schedule (version 1 converted); one-line errors naming the file and the field.
    pub fn load(path: &Path) -> Result<Schedule, String> {
        let text =
            super::bounded_read::read_regular("--replay", path, super::bounded_read::REPLAY_MAX)?;
        let not_one = |e: serde_json::Error| {
            format!("--replay {}: not a retrylab schedule: {e}", path.display())
        };
        let mut value: Value = serde_json::from_str(&text).map_err(&not_one)?;
        let Some(format) = value.get("format").and_then(Value::as_str) else {
            return Err(format!(
                "--replay {}: not a retrylab schedule: no format",
                path.display()
            ));
        };
        if format != FORMAT {
            return Err(format!(
                "--replay {}: format '{format}', expected '{FORMAT}'",
                path.display()
            ));
        }
        let version = value.get("version").and_then(Value::as_u64).unwrap_or(0);
        if !(u64::from(VERSION_OLDEST)..=u64::from(VERSION)).contains(&version) {
            return Err(format!(
                "--replay {}: version {version}, this retrylab reads {VERSION_OLDEST} to {VERSION}",
                path.display()
            ));
        }
        if version == 1 {
            upgrade_v1(&mut value).map_err(|e| format!("--replay {}: {e}", path.display()))?;
        }
        let schedule: Schedule = serde_json::from_value(value).map_err(not_one)?;
        schedule
            .check()
            .map_err(|e| format!("--replay {}: {e}", path.display()))?;
        Ok(schedule)
    }

    /// The fields' agreement: requests, and a crash point that names a recorded step with its text.
    fn check(&self) -> Result<(), String> {
        if self.requests.is_empty() {
            return Err("requests: empty".into());
        }
        if let Some(at) = self
            .requests
            .iter()
            .position(|r| r.key.contains(['\r', '\n']))
        {
            // The key goes into a header: a line break would add headers, or a second request.
            return Err(format!("requests[{at}].key: contains CR or LF"));
        }
        let Some(crash) = &self.crash else {
            return Ok(());
        };
        let steps = self
            .released
            .iter()
            .filter(|r| r.request == crash.request)
            .count();
        if crash.statement >= steps {
            return Err(format!(
                "crash.statement {} is past request {}'s {steps} statements",
                crash.statement, crash.request
            ));
        }
        Ok(())
    }

    /// Save as `<dir>/<check>-<n>.json` with the first free n.
    pub fn save(&self, dir: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--schedule-dir {}: {e}", dir.display()))?;
        let text = serde_json::to_string_pretty(self).expect("a schedule serialises");
        for n in 1..=FILES_PER_CHECK_MAX {
            let path = dir.join(format!("{}-{n}.json", self.check));
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path);
            match created {
                Ok(mut file) => {
                    use std::io::Write;
                    file.write_all(text.as_bytes())
                        .and_then(|()| file.write_all(b"\n"))
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    return Ok(path);
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(format!("{}: {error}", path.display())),
            }
        }
        Err(format!(
            "--schedule-dir {}: {FILES_PER_CHECK_MAX} schedules of {} already",
            dir.display(),
            self.check
        ))
    }
}

/// A version 1 schedule as version 2: its crash point's index into `released` becomes the request and the
/// place among that request's steps.
fn upgrade_v1(value: &mut Value) -> Result<(), String> {
    let released: Vec<Released> = serde_json::from_value(value["released"].clone())
        .map_err(|e| format!("not a retrylab schedule: released: {e}"))?;
    if let Some(crash) = value.get_mut("crash").filter(|c| !c.is_null()) {
        let boundary = crash["boundary"]
            .as_u64()
            .ok_or("not a retrylab schedule: crash.boundary: not a number")?
            as usize;
        let Some(step) = released.get(boundary) else {
            return Err(format!(
                "crash.boundary {boundary} is past the {} boundaries",
                released.len()
            ));
        };
        let statement = released[..boundary]
            .iter()
            .filter(|r| r.request == step.request)
            .count();
        crash["request"] = step.request.into();
        crash["statement"] = statement.into();
    }
    value["version"] = VERSION.into();
    Ok(())
}

/// A word for a POSIX shell, quoted when it needs to be.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graybox::gate::Wire;

    fn sample() -> Schedule {
        Schedule {
            format: FORMAT.into(),
            version: VERSION,
            check: "crash-at-every-statement".into(),
            url: "http://127.0.0.1:8080/payments".into(),
            requests: vec![ScheduledRequest {
                key: "k1".into(),
                body: r#"{"amount":500}"#.into(),
            }],
            released: vec![
                Released {
                    request: 0,
                    wire: Wire::Postgres,
                    text: "BEGIN".into(),
                    in_transaction: false,
                },
                Released {
                    request: 0,
                    wire: Wire::Redis,
                    text: "SET ? ? NX".into(),
                    in_transaction: false,
                },
            ],
            crash: Some(CrashPoint {
                request: 0,
                statement: 1,
                when: When::After,
                text: "SET ? ? NX".into(),
            }),
            verdict: "fail".into(),
            evidence: "stuck".into(),
        }
    }

    #[test]
    fn a_schedule_round_trips_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let schedule = sample();
        let first = schedule.save(dir.path()).unwrap();
        let second = schedule.save(dir.path()).unwrap();
        assert!(first.ends_with("crash-at-every-statement-1.json"));
        assert!(second.ends_with("crash-at-every-statement-2.json"));
        assert_eq!(Schedule::load(&first).unwrap(), schedule);
        let text = std::fs::read_to_string(&first).unwrap();
        assert!(
            text.contains(r#""when": "after""#) && text.contains(r#""wire": "redis""#),
            "{text}"
        );
    }

    #[test]
    fn a_wrong_format_version_or_crash_point_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut broken = sample();
        broken.version = VERSION + 1;
        let path = broken.save(dir.path()).unwrap();
        let error = Schedule::load(&path).unwrap_err();
        assert!(
            error.contains(&format!(
                "version {}, this retrylab reads 1 to {VERSION}",
                VERSION + 1
            )),
            "{error}"
        );
        assert_eq!(error.lines().count(), 1);
        let mut past = sample();
        past.crash.as_mut().unwrap().statement = 2;
        let path = past.save(dir.path()).unwrap();
        assert!(Schedule::load(&path)
            .unwrap_err()
            .contains("crash.statement 2 is past request 0's 2 statements"));
        let mut injected = sample();
        injected.requests[0].key = "k1\r\nX-Injected: 1".into();
        let path = injected.save(dir.path()).unwrap();
        assert!(Schedule::load(&path)
            .unwrap_err()
            .contains("requests[0].key: contains CR or LF"));
        std::fs::write(dir.path().join("x.json"), "{}").unwrap();
        assert!(Schedule::load(&dir.path().join("x.json"))
            .unwrap_err()
            .contains("not a retrylab schedule"));
    }

    /// A version 1 file as retrylab 0.1 wrote it: two requests, the crash at the 3rd released boundary.
    const VERSION_1: &str = r#"{"format": "retrylab-schedule", "version": 1, "check": "crash-at-every-statement",
        "url": "http://127.0.0.1:8080/payments", "requests": [{"key": "k1", "body": "{}"}, {"key": "k1", "body": "{}"}],
        "released": [{"request": 0, "wire": "postgres", "text": "BEGIN"},
                     {"request": 1, "wire": "postgres", "text": "BEGIN"},
                     {"request": 1, "wire": "postgres", "text": "COMMIT"}],
        "crash": {"boundary": 2, "when": "before", "text": "COMMIT"}, "verdict": "fail", "evidence": "stuck"}"#;

    #[test]
    fn a_version_1_crash_point_is_read_as_the_same_requests_step() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        std::fs::write(&path, VERSION_1).unwrap();
        let schedule = Schedule::load(&path).unwrap();
        assert_eq!(schedule.version, VERSION);
        let crash = schedule.crash.unwrap();
        // The 3rd boundary overall is request 2's 2nd statement (not its 3rd, not request 1's).
        assert_eq!(
            (crash.request, crash.statement, crash.when),
            (1, 1, When::Before)
        );
        assert_eq!(crash.text, "COMMIT");
        std::fs::write(
            &path,
            VERSION_1.replace(r#""boundary": 2"#, r#""boundary": 3"#),
        )
        .unwrap();
        let error = Schedule::load(&path).unwrap_err();
        assert!(
            error.ends_with("crash.boundary 3 is past the 3 boundaries"),
            "{error}"
        );
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(
            shell_quote("postgres://u@127.0.0.1:5432/d"),
            "postgres://u@127.0.0.1:5432/d"
        );
        assert_eq!(shell_quote("python3 app.py"), "'python3 app.py'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
