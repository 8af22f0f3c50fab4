//! A failing schedule as data (`retrylab-schedule`, version 1): the check, the requests (key, body), the
//! boundaries in the order they were released (request, store, normalised text), the crash point, the verdict
//! and its evidence. Saved for every failure as `<check>-<n>.json`; `--replay FILE` runs it again strictly.

use super::run::{Released, When};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "retrylab-schedule";
pub const VERSION: u32 = 1;
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
    /// 0-based index into `released`.
    pub boundary: usize,
    pub when: When,
    pub text: String,
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
    /// Read and check a saved schedule; one-line errors naming the file and the field.
    pub fn load(path: &Path) -> Result<Schedule, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--replay {}: {e}", path.display()))?;
        let schedule: Schedule = serde_json::from_str(&text)
            .map_err(|e| format!("--replay {}: not a retrylab schedule: {e}", path.display()))?;
        if schedule.format != FORMAT {
            return Err(format!(
                "--replay {}: format '{}', expected '{FORMAT}'",
                path.display(),
                schedule.format
            ));
        }
        if schedule.version != VERSION {
            return Err(format!(
                "--replay {}: version {}, this retrylab reads {VERSION}",
                path.display(),
                schedule.version
            ));
        }
        if schedule.requests.is_empty() {
            return Err(format!("--replay {}: requests: empty", path.display()));
        }
        if let Some(at) = schedule
            .requests
            .iter()
            .position(|r| r.key.contains(['\r', '\n']))
        {
            // The key goes into a header: a line break would add headers, or a second request.
            return Err(format!(
                "--replay {}: requests[{at}].key: contains CR or LF",
                path.display()
            ));
        }
        if let Some(crash) = &schedule.crash {
            if crash.boundary >= schedule.released.len() {
                return Err(format!(
                    "--replay {}: crash.boundary {} is past the {} boundaries",
                    path.display(),
                    crash.boundary,
                    schedule.released.len()
                ));
            }
        }
        Ok(schedule)
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
                },
                Released {
                    request: 0,
                    wire: Wire::Redis,
                    text: "SET ? ? NX".into(),
                },
            ],
            crash: Some(CrashPoint {
                boundary: 1,
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
        broken.version = 2;
        let path = broken.save(dir.path()).unwrap();
        assert!(Schedule::load(&path).unwrap_err().contains("version 2"));
        let mut past = sample();
        past.crash.as_mut().unwrap().boundary = 2;
        let path = past.save(dir.path()).unwrap();
        assert!(Schedule::load(&path)
            .unwrap_err()
            .contains("crash.boundary"));
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
