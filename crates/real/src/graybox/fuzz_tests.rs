//! The gates' parsers against arbitrary bytes (issue 44, item 8): PostgreSQL frontend messages as `pg_wire`
//! cuts them, backend messages as `pg_answers` reads them, RESP commands and replies as `resp` reads them. For
//! any input split at any points: no panic, no allocation much larger than the bytes that arrived (a claimed
//! length costs nothing until its bytes come), and the same outcomes as the input fed at once (reads split a
//! stream anywhere; what the gate makes of it must not depend on where). Valid streams are generated too, with
//! a byte or two corrupted, so the property reaches the real paths and not only the first error.

use super::pg_wire::{self, Answered, Answers, FrontStep, GroupEnd};
use super::resp;
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, noting the largest single allocation each thread asks for (tests run on many threads;
/// each property looks at its own).
struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the thread-local needs no allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The largest allocation `run` made, and what it returned.
fn largest_allocation<T>(run: impl FnOnce() -> T) -> (usize, T) {
    LARGEST.with(|largest| largest.set(0));
    let out = run();
    (LARGEST.with(Cell::get), out)
}

/// One parser behind a closure: the length of the next unit at the start of a buffer and what it is.
type Cutter<S> = Box<dyn FnMut(&[u8]) -> Result<Option<(usize, S)>, String>>;

/// What feeding a stream gave: each unit cut (with its length), the error that stopped it, the bytes left
/// (without an error).
#[derive(Debug, PartialEq)]
struct Fed<S> {
    units: Vec<(usize, S)>,
    error: Option<String>,
    left: usize,
}

/// Feed `bytes` split at `cuts` to `cut`, as a connection's reads would (a growing buffer, cut from its start).
fn feed<S>(
    bytes: &[u8],
    cuts: &[usize],
    mut cut: impl FnMut(&[u8]) -> Result<Option<(usize, S)>, String>,
) -> Fed<S> {
    let mut points: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    points.push(bytes.len());
    points.sort_unstable();
    let mut buf = Vec::new();
    let mut units = Vec::new();
    let mut from = 0;
    for to in points {
        buf.extend_from_slice(&bytes[from..to]);
        from = to;
        loop {
            match cut(&buf) {
                Ok(Some((len, unit))) => {
                    assert!(len > 0 && len <= buf.len(), "cut {len} of {}", buf.len());
                    buf.drain(..len);
                    units.push((len, unit));
                }
                Ok(None) => break,
                // The connection closes here: what else had arrived by then depends on the reads.
                Err(error) => {
                    return Fed {
                        units,
                        error: Some(error),
                        left: 0,
                    }
                }
            }
        }
    }
    Fed {
        units,
        error: None,
        left: buf.len(),
    }
}

/// Both ways, compared; and neither allocates far more than the input (a buffer grows by doubling, texts are
/// copied a few times: a small multiple, never a claimed length).
fn same_however_split<S: PartialEq + std::fmt::Debug>(
    bytes: &[u8],
    cuts: &[usize],
    make: impl Fn() -> Cutter<S>,
) -> Result<(), TestCaseError> {
    let limit = 8 * bytes.len() + (64 << 10);
    let (whole_largest, whole) = largest_allocation(|| feed(bytes, &[], make()));
    let (split_largest, split) = largest_allocation(|| feed(bytes, cuts, make()));
    prop_assert_eq!(&whole, &split);
    prop_assert!(whole_largest <= limit, "{} bytes allocated", whole_largest);
    prop_assert!(split_largest <= limit, "{} bytes allocated", split_largest);
    Ok(())
}

fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn cstrings(parts: &[&str]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.bytes().chain([0])).collect()
}

fn startup() -> Vec<u8> {
    let mut body = 196608u32.to_be_bytes().to_vec();
    body.extend(cstrings(&["user", "u", ""]));
    let mut out = (body.len() as u32 + 4).to_be_bytes().to_vec();
    out.extend(body);
    out
}

const NAMES: [&str; 3] = ["", "s1", "s2"];
const SQL: [&str; 5] = [
    "SELECT v FROM t WHERE id = $1",
    "INSERT INTO t VALUES (1, 'x')",
    "BEGIN",
    "COMMIT",
    "UPDATE t SET n = n + 1",
];

/// One well-formed frontend message of the extended or simple protocol.
fn pg_message() -> impl Strategy<Value = Vec<u8>> {
    let name = prop::sample::select(&NAMES[..]);
    let sql = prop::sample::select(&SQL[..]);
    let target = prop::sample::select(&[b'S', b'P'][..]);
    prop_oneof![
        sql.clone().prop_map(|q| message(b'Q', &cstrings(&[q]))),
        (name.clone(), sql).prop_map(|(n, q)| {
            let mut body = cstrings(&[n, q]);
            body.extend([0, 0]);
            message(b'P', &body)
        }),
        (name.clone(), name.clone()).prop_map(|(p, s)| {
            let mut body = cstrings(&[p, s]);
            body.extend([0, 0, 0, 0, 0, 0]);
            message(b'B', &body)
        }),
        name.clone().prop_map(|p| {
            let mut body = cstrings(&[p]);
            body.extend([0, 0, 0, 0]);
            message(b'E', &body)
        }),
        (target.clone(), name.clone())
            .prop_map(|(t, n)| message(b'D', &[&[t], &cstrings(&[n])[..]].concat())),
        (target, name).prop_map(|(t, n)| message(b'C', &[&[t], &cstrings(&[n])[..]].concat())),
        Just(message(b'S', b"")),
        Just(message(b'H', b"")),
    ]
}

/// Headers that claim far more than follows, and the frames the issue names.
const CLAIMS: [&[u8]; 8] = [
    b"*2147483647\r\n",
    b"$999999999\r\n",
    b"*2\r\n$-1\r\n+x$99999\r\n",
    b"*1048576\r\n*1048576\r\n",
    b"%1048576\r\n",
    b"Q\x80\0\0\0",
    b"P\x7f\xff\xff\xff",
    b"D\0\0\0\x05",
];

/// Arbitrary bytes, valid streams with a corruption, and lying headers followed by arbitrary bytes.
fn stream(valid: BoxedStrategy<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let corrupted = (
        valid.clone(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    )
        .prop_map(|(mut bytes, flips)| {
            for (at, byte) in flips {
                if !bytes.is_empty() {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                }
            }
            bytes
        });
    let claim = (
        prop::sample::select(&CLAIMS[..]),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(claim, tail)| [claim, &tail[..]].concat());
    prop_oneof![
        2 => valid,
        3 => corrupted,
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => claim,
    ]
}

fn pg_stream() -> BoxedStrategy<Vec<u8>> {
    prop::collection::vec(pg_message(), 0..24)
        .prop_map(|messages| messages.concat())
        .boxed()
}

/// One RESP command: an array of bulk strings, or an inline line.
fn resp_command() -> impl Strategy<Value = Vec<u8>> {
    let word = prop_oneof![
        prop::sample::select(&["SET", "GET", "MULTI", "EXEC", "INCR", "k", "v1", "NX"][..])
            .prop_map(|w| w.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
    ];
    let array = prop::collection::vec(word, 0..5).prop_map(|args| {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend(format!("${}\r\n", arg.len()).bytes());
            out.extend(arg);
            out.extend(b"\r\n");
        }
        out
    });
    prop_oneof![
        4 => array,
        1 => prop::sample::select(&["PING\r\n", "GET k\r\n", "\r\n"][..])
            .prop_map(|l| l.as_bytes().to_vec()),
    ]
}

/// One RESP2/RESP3 value, nested.
fn resp_value() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        prop::sample::select(
            &[
                "+OK\r\n",
                "-ERR no\r\n",
                ":7\r\n",
                "$-1\r\n",
                "_\r\n",
                "#t\r\n",
                ",1.5\r\n"
            ][..]
        )
        .prop_map(|l| l.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..10).prop_map(|bytes| {
            let mut out = format!("${}\r\n", bytes.len()).into_bytes();
            out.extend(bytes);
            out.extend(b"\r\n");
            out
        }),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        (
            prop::sample::select(&[b'*', b'~', b'>'][..]),
            prop::collection::vec(inner, 0..4),
        )
            .prop_map(|(kind, items)| {
                let mut out = format!("{}{}\r\n", kind as char, items.len()).into_bytes();
                out.extend(items.concat());
                out
            })
    })
}

fn resp_stream(unit: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    prop::collection::vec(unit, 0..12)
        .prop_map(|units| units.concat())
        .boxed()
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..1200, 0..12)
}

/// A frontend after its startup, cutting with the store ready.
fn pg_front() -> Cutter<FrontStep> {
    let mut front = pg_wire::Front::default();
    let hello = startup();
    assert!(matches!(
        front.cut(&hello, false),
        Ok(Some((_, FrontStep::Raw(_))))
    ));
    Box::new(move |buf| front.cut(buf, true))
}

/// A backend side with groups of every ending waiting, reading what the store sends.
fn pg_back() -> Cutter<Vec<Answered<u32>>> {
    let mut answers: Answers<u32> = Answers::default();
    let ends = [
        GroupEnd::Ready,
        GroupEnd::Responses(2),
        GroupEnd::Responses(1),
    ];
    for (tag, end) in ends.iter().cycle().take(9).enumerate() {
        answers.expect(tag as u32, *end).unwrap();
    }
    Box::new(move |buf| {
        let Some((tag, len)) = pg_wire::cut_message(buf)? else {
            return Ok(None);
        };
        Ok(Some((len, answers.on_message(tag, &buf[5..len])?)))
    })
}

type RespCommand = (resp::Args, Result<resp::Command, String>);

fn resp_front() -> Cutter<RespCommand> {
    let mut front = resp::Front::default();
    Box::new(move |buf| {
        let Some((args, len)) = resp::cut_command(buf)? else {
            return Ok(None);
        };
        let command = front.command(&args);
        Ok(Some((len, (args, command))))
    })
}

type RespReply = Option<(u32, Option<String>)>;

fn resp_back() -> Cutter<RespReply> {
    let mut answers: resp::Answers<u32> = resp::Answers::default();
    for tag in 0..8 {
        answers.expect(tag).unwrap();
    }
    Box::new(move |buf| {
        let Some(len) = resp::cut_frame(buf)? else {
            return Ok(None);
        };
        Ok(Some((len, answers.on_frame(&buf[..len])?)))
    })
}

/// Backend messages: well-formed ones of the types the gate reads, and some it refuses.
fn pg_backend_stream() -> BoxedStrategy<Vec<u8>> {
    let one = prop_oneof![
        Just(message(b'Z', b"I")),
        Just(message(b'1', b"")),
        Just(message(b'2', b"")),
        Just(message(b'C', b"INSERT 0 1\0")),
        Just(message(b'E', b"SERROR\0Mboom\0\0")),
        Just(message(b'E', b"SERROR\0")),
        Just(message(b'K', &[0, 0, 0x30, 0x39, 1, 2, 3, 4])),
        Just(message(b'N', b"SNOTICE\0\0")),
        Just(message(b'D', b"\0\x01\0\0\0\x01x")),
        Just(message(b'G', b"")),
    ];
    prop::collection::vec(one, 0..16)
        .prop_map(|messages| messages.concat())
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn postgres_frontend_messages_are_cut_the_same_however_split(bytes in stream(pg_stream()), cuts in cuts()) {
        same_however_split(&bytes, &cuts, pg_front)?;
    }

    #[test]
    fn postgres_backend_messages_are_read_the_same_however_split(
        bytes in stream(pg_backend_stream()),
        cuts in cuts(),
    ) {
        same_however_split(&bytes, &cuts, pg_back)?;
    }

    #[test]
    fn resp_commands_are_cut_the_same_however_split(
        bytes in stream(resp_stream(resp_command().boxed())),
        cuts in cuts(),
    ) {
        same_however_split(&bytes, &cuts, resp_front)?;
    }

    #[test]
    fn resp_replies_are_read_the_same_however_split(
        bytes in stream(resp_stream(resp_value().boxed())),
        cuts in cuts(),
    ) {
        same_however_split(&bytes, &cuts, resp_back)?;
    }
}

/// The generators do reach the real paths: a valid stream is cut whole, with no error.
#[test]
fn valid_streams_are_cut_without_error() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    for _ in 0..200 {
        let bytes = pg_stream().new_tree(&mut runner).unwrap().current();
        let fed = feed(&bytes, &[], pg_front());
        assert_eq!((fed.error, fed.left), (None, 0), "{}", bytes.escape_ascii());
        let bytes = resp_stream(resp_value().boxed())
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let fed = feed(&bytes, &[], resp_back());
        assert_eq!((fed.error, fed.left), (None, 0), "{}", bytes.escape_ascii());
    }
}
