//! PostgreSQL's backend side, as much as a gate needs: what the store sends, matched in order to the groups the
//! gate forwarded. A Query or Sync group is answered at its ReadyForQuery; a Flush group when each of its messages
//! got its response, or at an ErrorResponse, after which the store skips everything until the next Sync (the
//! Flush groups sent meanwhile get no answer at all). Notices, parameter statuses and notifications answer
//! nothing. COPY responses are refused by name: the gate would have to frame a second protocol.

use super::bounds::ANSWERS_WAITING_MAX;
use super::pg_wire::{cstring, GroupEnd};
use std::collections::VecDeque;

/// The error of a Flush group the store did not run: an earlier error makes it skip everything until a Sync.
pub const SKIPPED: &str = "not run: an earlier error makes the store skip everything until Sync";

/// The `M` (message) field of an ErrorResponse's body.
pub fn error_message(body: &[u8]) -> String {
    let mut at = 0;
    while let Some(&field) = body.get(at) {
        if field == 0 {
            break;
        }
        let Some((value, next)) = cstring(body, at + 1) else {
            break;
        };
        if field == b'M' {
            return value;
        }
        at = next;
    }
    "error without a message".to_string()
}

/// A group answered: its tag and the store's error, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered<T> {
    pub tag: T,
    pub error: Option<String>,
}

#[derive(Debug)]
struct Waiting<T> {
    tag: T,
    end: GroupEnd,
    responses: u32,
    error: Option<String>,
}

/// The backend side of one connection: forwarded groups in order, matched with what the store sends.
#[derive(Debug)]
pub struct Answers<T> {
    queue: VecDeque<Waiting<T>>,
    /// The store's first ReadyForQuery arrived: authentication is over, groups are gated from now on.
    ready: bool,
    /// An ErrorResponse ended a Flush group: the store ignores everything until the next Sync.
    skipping: bool,
    /// The process id of the store's backend serving this connection, from its BackendKeyData (sent once,
    /// during startup, before the first ReadyForQuery): the controller asks the store about it by that id.
    backend: Option<i32>,
}

impl<T> Default for Answers<T> {
    fn default() -> Self {
        Answers {
            queue: VecDeque::new(),
            ready: false,
            skipping: false,
            backend: None,
        }
    }
}

impl<T> Answers<T> {
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// The backend's process id, once its BackendKeyData arrived.
    pub fn backend(&self) -> Option<i32> {
        self.backend
    }

    /// The tag of the oldest group not answered yet.
    pub fn head(&self) -> Option<&T> {
        self.queue.front().map(|w| &w.tag)
    }

    /// A group was forwarded. A Flush group sent while the store skips until a Sync is answered at once. Err:
    /// too many groups wait already (the service sends on and never reads), by name.
    pub fn expect(&mut self, tag: T, end: GroupEnd) -> Result<Vec<Answered<T>>, String> {
        if self.queue.len() >= ANSWERS_WAITING_MAX {
            return Err(format!(
                "more than {ANSWERS_WAITING_MAX} PostgreSQL groups waiting for their answers on one connection"
            ));
        }
        self.queue.push_back(Waiting {
            tag,
            end,
            responses: 0,
            error: None,
        });
        let mut done = Vec::new();
        self.drain_settled(&mut done);
        Ok(done)
    }

    /// One message from the store (type and body): the groups it answered. Err: unsupported, by name.
    pub fn on_message(&mut self, tag: u8, body: &[u8]) -> Result<Vec<Answered<T>>, String> {
        let mut done = Vec::new();
        match tag {
            b'Z' => {
                self.ready = true;
                self.skipping = false;
                if self.queue.front().is_some_and(|w| w.end == GroupEnd::Ready) {
                    self.pop(&mut done);
                }
            }
            b'E' => self.on_error(error_message(body), &mut done),
            b'1' | b'2' | b'3' | b't' | b'T' | b'n' | b'C' | b'I' | b's' => {
                if let Some(head) = self.queue.front_mut() {
                    head.responses += 1;
                    if head.end == GroupEnd::Responses(head.responses) {
                        self.pop(&mut done);
                    }
                }
            }
            b'K' => {
                // Int32 process id, Int32 secret key; a short body is the store's fault, not a reason to stop.
                if let Some(pid) = body.get(..4) {
                    self.backend = Some(i32::from_be_bytes([pid[0], pid[1], pid[2], pid[3]]));
                }
            }
            b'D' | b'N' | b'S' | b'A' | b'R' | b'v' => {}
            b'G' => return Err("COPY FROM STDIN (CopyInResponse)".into()),
            b'H' => return Err("COPY TO STDOUT (CopyOutResponse)".into()),
            b'W' => return Err("COPY BOTH (CopyBothResponse)".into()),
            other => return Err(format!("backend message type '{}'", other.escape_ascii())),
        }
        self.drain_settled(&mut done);
        Ok(done)
    }

    fn on_error(&mut self, message: String, done: &mut Vec<Answered<T>>) {
        let Some(head) = self.queue.front_mut() else {
            return;
        };
        head.error.get_or_insert(message);
        if matches!(head.end, GroupEnd::Responses(_)) {
            self.skipping = true;
            self.pop(done);
        }
    }

    fn pop(&mut self, done: &mut Vec<Answered<T>>) {
        if let Some(w) = self.queue.pop_front() {
            done.push(Answered {
                tag: w.tag,
                error: w.error,
            });
        }
    }

    /// Groups that will get no answer, answered now: a lone Flush (nothing to respond to), and, while the store
    /// skips until a Sync, the Flush groups before it.
    fn drain_settled(&mut self, done: &mut Vec<Answered<T>>) {
        while let Some(head) = self.queue.front_mut() {
            if self.skipping && head.end != GroupEnd::Ready {
                head.error.get_or_insert_with(|| SKIPPED.to_string());
            } else if head.end != GroupEnd::Responses(0) {
                return;
            }
            self.pop(done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graybox::pg_wire::tests::cstrings;

    fn error_body(message: &str) -> Vec<u8> {
        let mut body = b"SERROR\0".to_vec();
        body.push(b'M');
        body.extend(cstrings(&[message]));
        body.push(0);
        body
    }

    #[test]
    fn answers_match_in_order_and_an_error_skips_to_the_sync() {
        let mut answers: Answers<u32> = Answers::default();
        assert!(answers.on_message(b'R', b"\0\0\0\0").unwrap().is_empty());
        assert_eq!(answers.backend(), None);
        let key_data = [0, 0, 0x30, 0x39, 1, 2, 3, 4];
        assert!(answers.on_message(b'K', &key_data).unwrap().is_empty());
        assert_eq!(answers.backend(), Some(12345));
        assert!(!answers.ready());
        answers.on_message(b'Z', b"I").unwrap();
        assert!(answers.ready());
        // A Query: answered at its ReadyForQuery, with the error it got.
        answers.expect(1, GroupEnd::Ready).unwrap();
        assert!(answers
            .on_message(b'E', &error_body("boom"))
            .unwrap()
            .is_empty());
        let done = answers.on_message(b'Z', b"I").unwrap();
        assert_eq!(
            done,
            [Answered {
                tag: 1,
                error: Some("boom".into())
            }]
        );
        // Flush groups: answered by their responses; an error answers one and the next Flush at once.
        answers.expect(2, GroupEnd::Responses(2)).unwrap();
        answers.expect(3, GroupEnd::Responses(1)).unwrap();
        answers.expect(4, GroupEnd::Ready).unwrap();
        assert!(answers.on_message(b'1', b"").unwrap().is_empty());
        let done = answers.on_message(b'E', &error_body("bad")).unwrap();
        assert_eq!(
            done,
            [
                Answered {
                    tag: 2,
                    error: Some("bad".into())
                },
                Answered {
                    tag: 3,
                    error: Some(SKIPPED.into())
                }
            ]
        );
        assert_eq!(
            answers.on_message(b'Z', b"I").unwrap(),
            [Answered {
                tag: 4,
                error: None
            }]
        );
        // A lone Flush is answered when it is sent.
        assert_eq!(
            answers.expect(5, GroupEnd::Responses(0)).unwrap(),
            [Answered {
                tag: 5,
                error: None
            }]
        );
        assert_eq!(
            answers.on_message(b'G', b"").unwrap_err(),
            "COPY FROM STDIN (CopyInResponse)"
        );
    }

    #[test]
    fn groups_waiting_for_their_answers_are_bounded_per_connection() {
        let mut answers: Answers<usize> = Answers::default();
        for tag in 0..ANSWERS_WAITING_MAX {
            assert!(answers.expect(tag, GroupEnd::Ready).is_ok());
        }
        assert_eq!(
            answers.expect(0, GroupEnd::Ready).unwrap_err(),
            format!(
                "more than {ANSWERS_WAITING_MAX} PostgreSQL groups waiting for their answers on one connection"
            )
        );
        // One answered: room for one more.
        assert_eq!(answers.on_message(b'Z', b"I").unwrap().len(), 1);
        assert!(answers.expect(0, GroupEnd::Ready).is_ok());
    }
}
