//! `concurrent-same-key`: N requests with one key on N open connections, every byte but the last written
//! first, then all released by one barrier, so the server gets them within microseconds of each other.
//!
//! The judgement counts what the server did, not what the wire lost: a response is whole when its framing says
//! so, even if a reset followed it (`http::write_then_read`), and a request that got no response is "no answer",
//! which shows no execution and so is never taken for a duplicate. A round fails on a second execution (two
//! different success bodies, or the count endpoint's count rising by more than one), on an answer that is
//! neither a success nor a conflict, or when nothing at all shows that the operation ran.

use super::curl;
use super::evidence::{status_or_no_answer, tally};
use super::rules::expectation;
use super::{ok, ProbeConfig, ProbeError, ProbeVerdict};
use crate::stack::answer;
use crate::stack::http::{write_then_read, HttpError, HttpResponse};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Barrier;

/// The check's name, as `CHECK_NAMES` has it.
const CHECK: &str = "concurrent-same-key";

/// One round's responses, in request order.
async fn concurrent_round(config: &ProbeConfig, key: &str) -> Vec<Result<HttpResponse, HttpError>> {
    let request = config
        .post(Some(key), Some(&config.clients[0]), &config.body)
        .encode(&config.url.authority);
    let barrier = Arc::new(Barrier::new(config.concurrency));
    let mut tasks = Vec::new();
    for _ in 0..config.concurrency {
        let (request, barrier, address, timeout) = (
            request.clone(),
            barrier.clone(),
            config.url.address,
            config.timeout,
        );
        tasks.push(tokio::spawn(async move {
            let connected = TcpStream::connect(address).await;
            let sent = async {
                let mut stream = connected.map_err(|e| HttpError::Connect(address, e))?;
                stream.set_nodelay(true)?;
                let (head, last) = request.split_at(request.len() - 1);
                stream.write_all(head).await?;
                Ok::<_, HttpError>((stream, last.to_vec()))
            }
            .await;
            // Every task reaches the barrier, connected or not, so none waits forever.
            barrier.wait().await;
            let (mut stream, last) = sent?;
            tokio::time::timeout(timeout, write_then_read(&mut stream, &last))
                .await
                .map_err(|_| HttpError::Timeout(timeout))?
        }));
    }
    let mut responses = Vec::new();
    for task in tasks {
        responses.push(task.await.unwrap_or(Err(HttpError::Closed)));
    }
    responses
}

/// What one round showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    pub pass: bool,
    /// "20 concurrent requests with one key: 1 different success bodies (201 x1, 409 x19); count +1".
    pub evidence: String,
}

/// Judge one round from its responses and the count's change (None: no count endpoint).
pub fn judge_round(
    responses: &[Result<HttpResponse, HttpError>],
    count_change: Option<i64>,
) -> Round {
    let statuses: Vec<String> = responses.iter().map(status_or_no_answer).collect();
    // Distinct answers, a replay of the stored one in other bytes (a jsonb column's key order) being the same.
    let mut executed: Vec<&str> = Vec::new();
    for body in responses.iter().flatten().filter(|r| ok(r.status)) {
        let body = body.body.as_str();
        if !executed
            .iter()
            .any(|seen| answer::compare(seen, body).same())
        {
            executed.push(body);
        }
    }
    let unexpected: Vec<u16> = responses
        .iter()
        .flatten()
        .map(|r| r.status)
        .filter(|&status| !(ok(status) || status == 409 || status == 429))
        .collect();
    let mut problems = Vec::new();
    if executed.len() > 1 {
        problems.push(format!("{} executions of one request", executed.len()));
    }
    match count_change {
        Some(change) if change > 1 => problems.push(format!("{change} executions counted")),
        Some(change) if change < 1 => problems.push(format!("count {change:+}, expected +1")),
        None if executed.is_empty() => {
            problems.push("no execution seen (no success and no count endpoint)".to_string())
        }
        _ => {}
    }
    if let Some(status) = unexpected.first() {
        problems.push(format!(
            "an answer that is neither a success nor a conflict ({status})"
        ));
    }
    let count_text = count_change.map_or(String::new(), |change| format!("; count {change:+}"));
    let mut evidence = format!(
        "{} concurrent requests with one key: {} different success bodies ({}){count_text}",
        responses.len(),
        executed.len(),
        tally(&statuses)
    );
    if !problems.is_empty() {
        evidence.push_str(&format!(": {}", problems.join("; ")));
    }
    Round {
        pass: problems.is_empty(),
        evidence,
    }
}

pub async fn concurrent_same_key(
    config: &ProbeConfig,
) -> Result<(ProbeVerdict, String, String), ProbeError> {
    let mut evidence = Vec::new();
    let mut pass = true;
    for round in 1..=config.rounds {
        let key = config.key(&format!("concurrent-{round}"));
        let before = config.count().await?;
        let responses = concurrent_round(config, &key).await;
        let after = config.count().await?;
        let change = before.zip(after).map(|(b, a)| a as i64 - b as i64);
        let judged = judge_round(&responses, change);
        pass &= judged.pass;
        evidence.push(judged.evidence);
        if !judged.pass {
            break;
        }
    }
    let text = evidence.join("; then ");
    let verdict = if pass {
        ProbeVerdict::Pass
    } else {
        ProbeVerdict::Fail
    };
    let evidence = if pass {
        text
    } else {
        format!("{text}; {}", expectation(CHECK))
    };
    Ok((verdict, evidence.clone(), reproduction(config, &evidence)))
}

/// curl cannot hold its last byte back: bursts of background curls overlap less than the probe's (against
/// select-then-insert on SQLite, 10 bursts gave 13 payments for 10 keys, 3 gave none extra), so the sequence
/// repeats the burst, each with a fresh key, at least ten times, and says what the probe saw and what to look
/// for: a failure is reproduced when a burst adds more than one to the count or prints two different success
/// bodies.
fn reproduction(config: &ProbeConfig, judged: &str) -> String {
    let bursts = config.rounds.max(10);
    let burst = format!(
        "for round in $(seq {bursts}); do {}; for i in $(seq {}); do {} & done; wait; done",
        curl::fresh_key(),
        config.concurrency,
        curl::post(config, Some("$KEY"), Some(&config.clients[0]), &config.body)
    );
    let mut steps = vec![format!("# the probe saw: {}", judged.replace('\n', " "))];
    steps.push(format!(
        "# a conforming API: one 2xx body per burst, the rest 409 (or that body again); the count rises by \
         {bursts} in all"
    ));
    steps.push(burst);
    curl::sequence(config, false, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Result<HttpResponse, HttpError> {
        Ok(HttpResponse {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        })
    }

    #[test]
    fn no_answers_are_never_duplicates() {
        // The false alarm of issue 31: one 201, one 409, eighteen lost to resets, one payment.
        let mut responses = vec![answer(201, "{\"payment\":1}"), answer(409, "{}")];
        responses.extend((0..18).map(|_| Err(HttpError::Closed)));
        let round = judge_round(&responses, Some(1));
        assert!(round.pass, "{round:?}");
        assert!(round.evidence.contains("no answer x18"), "{round:?}");
        // Without a count endpoint the one success body is the evidence.
        assert!(judge_round(&responses, None).pass);
    }

    #[test]
    fn a_second_execution_fails_however_it_shows() {
        let two_bodies = vec![
            answer(201, "{\"payment\":1}"),
            answer(201, "{\"payment\":2}"),
        ];
        let round = judge_round(&two_bodies, None);
        assert!(
            !round.pass && round.evidence.contains("2 executions of one"),
            "{round:?}"
        );
        // The stored answer replayed from a jsonb column, its keys in another order: one execution.
        let replayed = vec![
            answer(201, "{\"payment\":1,\"amount\":500}"),
            answer(200, "{\"amount\": 500, \"payment\": 1}"),
        ];
        let round = judge_round(&replayed, None);
        assert!(round.pass, "{round:?}");
        // One body seen, but the count says two payments (the other response was lost).
        let one_seen = vec![answer(201, "{\"payment\":1}"), Err(HttpError::Closed)];
        let counted = judge_round(&one_seen, Some(2));
        assert!(!counted.pass && counted.evidence.contains("2 executions counted"));
        // Nothing ran, or an answer that is neither success nor conflict.
        let none: Vec<_> = (0..3).map(|_| Err(HttpError::Closed)).collect();
        assert!(judge_round(&none, Some(0))
            .evidence
            .contains("count +0, expected +1"));
        assert!(judge_round(&none, None)
            .evidence
            .contains("no execution seen"));
        let error = vec![answer(201, "{\"payment\":1}"), answer(500, "{}")];
        assert!(!judge_round(&error, Some(1)).pass);
    }
}
