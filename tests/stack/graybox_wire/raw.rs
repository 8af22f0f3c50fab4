//! The extended protocol's Flush groups, which the `postgres` crate never sends: spoken by hand over a socket
//! through the gate to a real server. A Flush group is answered by its responses; after an error the store skips
//! the next Flush group (answered at once, as not run) until the Sync.

use super::Harness;
use retrylab::graybox::gate::Event;
use retrylab::graybox::pg_answers::SKIPPED;
use retrylab::servers::postgres::TempPostgres;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn cstrings(parts: &[&str]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.bytes().chain([0])).collect()
}

/// Parse (unnamed, no parameter types), Bind (no parameters), Execute, Flush.
fn parse_bind_execute_flush(sql: &str) -> Vec<u8> {
    let mut parse = cstrings(&["", sql]);
    parse.extend([0, 0]);
    let mut bytes = message(b'P', &parse);
    bytes.extend(message(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]));
    bytes.extend(message(b'E', &[0, 0, 0, 0, 0]));
    bytes.extend(message(b'H', b""));
    bytes
}

/// Read messages until one of type `until`; their types.
fn read_until(stream: &mut TcpStream, until: u8) -> Vec<u8> {
    let mut types = Vec::new();
    loop {
        let mut head = [0u8; 5];
        stream
            .read_exact(&mut head)
            .expect("a message from the gate");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        stream.read_exact(&mut body).unwrap();
        types.push(head[0]);
        if head[0] == until {
            return types;
        }
    }
}

fn answers(events: &[Event]) -> Vec<(String, Option<String>)> {
    let text_of = |id: u64| {
        events.iter().find_map(|e| match e {
            Event::Boundary { boundary, .. } if boundary.id == id => Some(boundary.text.clone()),
            _ => None,
        })
    };
    events
        .iter()
        .filter_map(|e| match e {
            Event::Answered { id, error } => {
                Some((text_of(*id).expect("announced"), error.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn flush_groups_are_answered_by_their_responses_and_skipped_after_an_error() {
    let Some(server) = TempPostgres::start() else {
        return;
    };
    let mut harness = Harness::start(Some(server.port), None);
    let address = harness.gates().postgres_address().unwrap();
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut startup = 196608u32.to_be_bytes().to_vec();
    startup.extend(cstrings(&["user", "postgres", "database", "postgres", ""]));
    let mut bytes = (startup.len() as u32 + 4).to_be_bytes().to_vec();
    bytes.extend(startup);
    stream.write_all(&bytes).unwrap();
    read_until(&mut stream, b'Z');
    // One Flush group: ParseComplete, BindComplete, a row, CommandComplete.
    stream
        .write_all(&parse_bind_execute_flush("SELECT 41 + 1"))
        .unwrap();
    assert_eq!(read_until(&mut stream, b'C'), b"12DC");
    // An error, then a group the store skips, then the Sync that ends the skipping.
    stream
        .write_all(&parse_bind_execute_flush("SELEC oops"))
        .unwrap();
    assert_eq!(read_until(&mut stream, b'E'), b"E");
    stream
        .write_all(&parse_bind_execute_flush("SELECT 2"))
        .unwrap();
    stream.write_all(&message(b'S', b"")).unwrap();
    assert_eq!(read_until(&mut stream, b'Z'), b"Z");
    let mut events = Vec::new();
    while answers(&events).len() < 4 {
        events.push(harness.event());
    }
    let syntax = "syntax error at or near \"SELEC\"".to_string();
    assert_eq!(
        answers(&events),
        [
            ("SELECT ? + ?".to_string(), None),
            ("SELEC oops".to_string(), Some(syntax)),
            ("SELECT ?".to_string(), Some(SKIPPED.to_string())),
            ("Sync".to_string(), None),
        ]
    );
}
