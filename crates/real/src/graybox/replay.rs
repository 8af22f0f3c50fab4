//! `--replay FILE`: a saved schedule run again, strictly: the same crash point or the same order of released
//! boundaries, compared statement by statement with the recorded texts. It says `reproduced` (the same kind of
//! failure again) or where the service went another way. Keys are fresh (`<recorded>-replay-<run>`), so a
//! database that was not reset does not answer from the first run's key; bodies are as recorded.

use super::checks::{crash_once, lost_response, order, CheckOptions, Crashed};
use super::kind::Passed;
use super::lab::{Lab, LabError};
use super::report::{GrayCheck, GrayVerdict};
use super::run::{run_schedule, Plan};
use super::schedule::Schedule;

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replayed {
    Reproduced(String),
    NotReproduced(String),
}

/// Run a saved schedule again, strictly: the same crash point or the same order, compared statement by
/// statement with the recorded texts. Keys are fresh (`<recorded>-replay-<run>`), bodies as recorded.
pub async fn replay(
    lab: &mut Lab,
    saved: &Schedule,
    options: &CheckOptions,
) -> Result<Replayed, LabError> {
    let check = GrayCheck::parse(&saved.check).map_err(LabError::Store)?;
    lab.config.body = saved.requests[0].body.clone();
    let key = format!("{}-replay-{}", saved.requests[0].key, options.run_id);
    let finding = match (check, &saved.crash) {
        (GrayCheck::CrashAtEveryStatement, Some(crash)) => {
            let mut passed = Passed::default();
            match crash_once(lab, options, &saved.released, crash.at(), &key, &mut passed).await? {
                Crashed::Diverged(why) => return Ok(Replayed::NotReproduced(why)),
                Crashed::Judged(finding) => finding.map(|f| *f),
            }
        }
        (GrayCheck::InterleavedSameKey, _) => return replay_order(lab, saved, &key).await,
        (GrayCheck::LostResponse, _) => {
            let mut once = options.clone();
            once.run_id = format!("{}-replay", options.run_id);
            Some(lost_response(lab, &once).await?).filter(|f| f.verdict == GrayVerdict::Fail)
        }
        (GrayCheck::CrashAtEveryStatement, None) => {
            return Err(LabError::Store(
                "--replay: a crash-at-every-statement schedule without its crash point".into(),
            ))
        }
    };
    Ok(match finding {
        Some(finding) => Replayed::Reproduced(finding.evidence),
        None => Replayed::NotReproduced("the service survived it this time".into()),
    })
}

async fn replay_order(lab: &mut Lab, saved: &Schedule, key: &str) -> Result<Replayed, LabError> {
    let requests = vec![lab.request(key); saved.requests.len()];
    let prefix: Vec<u32> = saved.released.iter().map(|r| r.request).collect();
    let before = lab.fresh_count().await?;
    let plan = Plan {
        prefix: &prefix,
        crash: None,
        expected: Some(&saved.released),
    };
    let outcome = run_schedule(lab, &requests, plan).await?;
    let effects = lab.count().await? - before;
    if outcome.released.len() != saved.released.len() && outcome.divergence.is_none() {
        let why = format!(
            "the service sent {} boundaries, the schedule has {}",
            outcome.released.len(),
            saved.released.len()
        );
        return Ok(Replayed::NotReproduced(why));
    }
    Ok(match (outcome.divergence, effects) {
        (Some(why), _) => Replayed::NotReproduced(why),
        (None, e) if e > 1 => Replayed::Reproduced(format!(
            "{e} effects, released in the recorded order: {}",
            order(&outcome.released)
        )),
        (None, e) => Replayed::NotReproduced(format!("the same order, count {e:+}")),
    })
}
