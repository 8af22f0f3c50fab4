//! Redis's RESP (2 and 3), as much as a gate needs: cutting commands from what the service sends (arrays of bulk
//! strings, or inline commands), cutting whole replies of every type from what the store sends (maps, sets,
//! attributes `|` that prefix a reply, push `>` frames that are not replies), and deciding which commands are
//! boundaries. One command is one boundary, answered by its one reply; `MULTI` and the commands it queues pass
//! straight through (they do nothing until `EXEC`), and `EXEC` (or `DISCARD`) is the boundary of the block.

use super::bounds::{ANSWERS_WAITING_MAX, FRAME_BYTES_MAX};
use super::kind::Kind;
use super::{normalise, resp_classify};
use std::collections::VecDeque;

/// The largest bulk string either side may send.
pub const BULK_BYTES_MAX: usize = 64 << 20;
/// The most elements one aggregate may have.
pub const ELEMENTS_MAX: usize = 1 << 20;
/// The longest simple line (an inline command, a status, an error, a number).
pub const LINE_BYTES_MAX: usize = 64 << 10;
/// The most commands one `MULTI` block may queue.
pub const QUEUED_MAX: usize = 10_000;

/// Commands after which replies no longer match commands one to one.
const UNSUPPORTED: [&str; 6] = [
    "SUBSCRIBE",
    "PSUBSCRIBE",
    "SSUBSCRIBE",
    "MONITOR",
    "SYNC",
    "PSYNC",
];

/// The line at `at` (without its CRLF) and where the next starts; None: incomplete.
fn line(buf: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, String> {
    let rest = &buf[at.min(buf.len())..];
    match rest.iter().position(|&b| b == b'\n') {
        // The same error whether the line's end already arrived or not: reads may split it anywhere.
        Some(end) if end > LINE_BYTES_MAX => Err(long_line()),
        Some(end) => Ok(Some((
            rest[..end].strip_suffix(b"\r").unwrap_or(&rest[..end]),
            at + end + 1,
        ))),
        None if rest.len() > LINE_BYTES_MAX => Err(long_line()),
        None => Ok(None),
    }
}

fn long_line() -> String {
    format!("a RESP line of more than {LINE_BYTES_MAX} bytes")
}

/// Err when a frame reaching `end` would be over `FRAME_BYTES_MAX` (checked on the lengths it claims, before
/// its bytes are waited for).
fn within_frame(end: usize) -> Result<(), String> {
    if end > FRAME_BYTES_MAX {
        return Err(format!(
            "a RESP frame of more than {} MiB",
            FRAME_BYTES_MAX >> 20
        ));
    }
    Ok(())
}

fn number(text: &[u8], what: &str) -> Result<i64, String> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("{what}: '{}' is not a number", text.escape_ascii()))
}

/// The length of the first complete frame (any RESP2 or RESP3 type) at the start of `buf`; None: incomplete.
/// Iterative: `remaining` counts the values still to read, so nesting costs no stack.
pub fn cut_frame(buf: &[u8]) -> Result<Option<usize>, String> {
    let mut at = 0;
    let mut remaining: usize = 1;
    while remaining > 0 {
        let Some((head, next)) = line(buf, at)? else {
            return Ok(None);
        };
        let (&kind, rest) = head.split_first().ok_or("an empty RESP line")?;
        within_frame(next)?;
        at = next;
        match kind {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => remaining -= 1,
            b'$' | b'!' | b'=' => {
                remaining -= 1;
                if rest == b"?" {
                    return Err("a streamed RESP3 string".into());
                }
                let len = number(rest, "bulk length")?;
                if len >= 0 {
                    let len = len as usize;
                    if len > BULK_BYTES_MAX {
                        return Err(format!("a bulk string of {len} bytes"));
                    }
                    within_frame(at + len + 2)?;
                    if buf.len() < at + len + 2 {
                        return Ok(None);
                    }
                    if &buf[at + len..at + len + 2] != b"\r\n" {
                        return Err(format!("a bulk string of {len} bytes not ended by CRLF"));
                    }
                    at += len + 2;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                if rest == b"?" {
                    return Err("a streamed RESP3 aggregate".into());
                }
                let count = number(rest, "aggregate length")?.max(0) as usize;
                if count > ELEMENTS_MAX {
                    return Err(format!("an aggregate of {count} elements"));
                }
                let pairs = matches!(kind, b'%' | b'|');
                let elements = if pairs { 2 * count } else { count };
                // An attribute prefixes the value it annotates: that value is still to be read.
                remaining = remaining - usize::from(kind != b'|') + elements;
            }
            other => return Err(format!("RESP type byte '{}'", other.escape_ascii())),
        }
    }
    Ok(Some(at))
}

/// A reply frame from the store: a push (not a reply), or a reply with the error it carries (a top-level
/// error, or the first error among the elements of an array, as `EXEC` answers a failed queued command).
pub fn reply_error(frame: &[u8]) -> Result<Option<Option<String>>, String> {
    match frame.first() {
        Some(b'>') => Ok(None),
        Some(b'-') => Ok(Some(Some(first_line(&frame[1..])))),
        Some(b'!') => Ok(Some(Some(bulk_text(frame)))),
        Some(b'*') => {
            let (_, mut at) = line(frame, 0)?.ok_or("an incomplete array")?;
            while at < frame.len() {
                if frame[at] == b'-' {
                    return Ok(Some(Some(first_line(&frame[at + 1..]))));
                }
                at += cut_frame(&frame[at..])?.ok_or("an incomplete element")?;
            }
            Ok(Some(None))
        }
        _ => Ok(Some(None)),
    }
}

fn first_line(text: &[u8]) -> String {
    let end = text
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(text.len());
    String::from_utf8_lossy(&text[..end]).into_owned()
}

fn bulk_text(frame: &[u8]) -> String {
    let start = frame
        .iter()
        .position(|&b| b == b'\n')
        .map_or(frame.len(), |p| p + 1);
    first_line(&frame[start..])
}

/// A command's arguments, its name first.
pub type Args = Vec<Vec<u8>>;

/// The first complete command at the start of `buf`: its arguments and length (an empty inline line gives no
/// arguments). None: incomplete.
pub fn cut_command(buf: &[u8]) -> Result<Option<(Args, usize)>, String> {
    if buf.first() != Some(&b'*') {
        let Some((text, next)) = line(buf, 0)? else {
            return Ok(None);
        };
        let args = text
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(<[u8]>::to_vec);
        return Ok(Some((args.collect(), next)));
    }
    let Some(len) = cut_frame(buf)? else {
        return Ok(None);
    };
    Ok(Some((arguments(&buf[..len])?, len)))
}

/// The arguments of a whole array frame (`cut_frame` checked its lengths): each must be a bulk string, and the
/// walk never reads past the frame whatever it claims.
fn arguments(frame: &[u8]) -> Result<Args, String> {
    let (head, mut at) = line(frame, 0)?.ok_or("an incomplete command")?;
    let count = number(&head[1..], "command length")?.max(0) as usize;
    // Not `count`: a claimed length costs nothing until its bytes arrive.
    let mut args = Vec::with_capacity(count.min(64));
    for index in 0..count {
        let (arg_head, next) = line(frame, at)?.ok_or("an incomplete command argument")?;
        let refused = |what: &str| format!("command argument {} {what}", index + 1);
        if arg_head.first() != Some(&b'$') {
            return Err(refused(&format!(
                "is not a bulk string ('{}')",
                arg_head.escape_ascii()
            )));
        }
        let arg_len = number(&arg_head[1..], "argument length")?;
        let arg_len = usize::try_from(arg_len).map_err(|_| refused("is a null bulk string"))?;
        let arg = frame
            .get(next..next + arg_len)
            .ok_or_else(|| refused("is cut short"))?;
        args.push(arg.to_vec());
        at = next + arg_len + 2;
    }
    Ok(args)
}

/// What a command makes the gate do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Forward; its reply is matched but it is no boundary (`MULTI`, a queued command).
    Quiet,
    /// A boundary with this text.
    Boundary { text: String, kind: Kind },
}

/// The frontend side of one connection: whether a `MULTI` block is open, and the texts it queued.
#[derive(Debug, Default)]
pub struct Front {
    multi: Option<Vec<String>>,
}

impl Front {
    /// Classify one command. Err: unsupported, by name.
    pub fn command(&mut self, args: &[Vec<u8>]) -> Result<Command, String> {
        let text = normalise::redis(args);
        let name = text.split(' ').next().unwrap_or("").to_string();
        if UNSUPPORTED.contains(&name.as_str()) || text.starts_with("CLIENT REPLY") {
            return Err(text);
        }
        if let Some(queued) = &mut self.multi {
            if name == "EXEC" || name == "DISCARD" {
                queued.push(name);
                let text = queued.join("; ");
                self.multi = None;
                return Ok(Command::Boundary {
                    text,
                    kind: Kind::Request,
                });
            }
            if queued.len() >= QUEUED_MAX {
                return Err(format!("a MULTI block of more than {QUEUED_MAX} commands"));
            }
            queued.push(text);
            return Ok(Command::Quiet);
        }
        if name == "MULTI" {
            self.multi = Some(vec![name]);
            return Ok(Command::Quiet);
        }
        let kind = resp_classify::kind(&text);
        Ok(Command::Boundary { text, kind })
    }
}

/// The backend side of one connection: forwarded commands in order, each answered by the next reply.
#[derive(Debug)]
pub struct Answers<T> {
    queue: VecDeque<T>,
}

impl<T> Default for Answers<T> {
    fn default() -> Self {
        Answers {
            queue: VecDeque::new(),
        }
    }
}

impl<T> Answers<T> {
    /// A command was forwarded. Err: too many wait for their replies already (the service pipelines and never
    /// reads), by name.
    pub fn expect(&mut self, tag: T) -> Result<(), String> {
        if self.queue.len() >= ANSWERS_WAITING_MAX {
            return Err(format!(
                "more than {ANSWERS_WAITING_MAX} Redis commands waiting for their replies on one connection"
            ));
        }
        self.queue.push_back(tag);
        Ok(())
    }

    pub fn head(&self) -> Option<&T> {
        self.queue.front()
    }

    /// One frame from the store: the command it answered (None for a push frame, or a reply nobody waits for).
    pub fn on_frame(&mut self, frame: &[u8]) -> Result<Option<(T, Option<String>)>, String> {
        match reply_error(frame)? {
            None => Ok(None),
            Some(error) => Ok(self.queue.pop_front().map(|tag| (tag, error))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Args {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn frames_of_every_type_are_cut_whole_even_when_split() {
        let frames: [&[u8]; 9] = [
            b"+OK\r\n",
            b"$5\r\nhe\r\no\r\n",
            b"$-1\r\n",
            b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n",
            b"%1\r\n+k\r\n~2\r\n#t\r\n,1.5\r\n",
            b"|1\r\n+ttl\r\n:3\r\n$2\r\nok\r\n",
            b"_\r\n",
            b"=8\r\ntxt:abcd\r\n",
            b"*-1\r\n",
        ];
        for frame in frames {
            assert_eq!(
                cut_frame(frame),
                Ok(Some(frame.len())),
                "{}",
                frame.escape_ascii()
            );
            for cut in 0..frame.len() {
                assert_eq!(
                    cut_frame(&frame[..cut]),
                    Ok(None),
                    "{} at {cut}",
                    frame.escape_ascii()
                );
            }
        }
        let mut two = b"+OK\r\n".to_vec();
        two.extend(b":7\r\n");
        assert_eq!(cut_frame(&two), Ok(Some(5)));
    }

    #[test]
    fn oversized_and_unknown_frames_are_refused() {
        assert!(cut_frame(format!("${}\r\n", BULK_BYTES_MAX + 1).as_bytes()).is_err());
        assert!(cut_frame(format!("*{}\r\n", ELEMENTS_MAX + 1).as_bytes()).is_err());
        assert!(cut_frame(b"?x\r\n").is_err());
        assert!(cut_frame(&vec![b'+'; LINE_BYTES_MAX + 2]).is_err());
    }

    #[test]
    fn a_command_argument_that_is_no_bulk_string_is_refused_by_name() {
        // Once cut whole, its arguments were read at the lengths they claim: a null one made the next start
        // inside a simple string, whose `$99999` was then sliced past the frame (a panic of the connection).
        assert_eq!(
            cut_command(b"*2\r\n$-1\r\n+x$99999\r\n"),
            Err("command argument 1 is a null bulk string".into())
        );
        assert_eq!(
            cut_command(b"*2\r\n$1\r\nx\r\n+x$99999\r\n"),
            Err("command argument 2 is not a bulk string ('+x$99999')".into())
        );
        assert_eq!(
            cut_frame(b"$3\r\nabcde\r\n"),
            Err("a bulk string of 3 bytes not ended by CRLF".into())
        );
    }

    #[test]
    fn a_frame_is_bounded_in_total_before_its_bytes_arrive() {
        // Two bulk strings, each under its own bound, the second claiming to end exactly at the frame's bound.
        let first = 32 << 20;
        let mut head = format!("*2\r\n${first}\r\n").into_bytes();
        head.resize(head.len() + first, b'x');
        head.extend(b"\r\n");
        let second = |len: usize| [&head[..], format!("${len}\r\n").as_bytes()].concat();
        // Where the second string's bytes start (its length has as many digits either way).
        let at = second(FRAME_BYTES_MAX - first).len();
        let fits = FRAME_BYTES_MAX - at - 2;
        assert_eq!(second(fits).len() + fits + 2, FRAME_BYTES_MAX);
        assert_eq!(cut_frame(&second(fits)), Ok(None));
        let over = second(fits + 1);
        assert_eq!(
            cut_frame(&over),
            Err("a RESP frame of more than 64 MiB".into())
        );
    }

    #[test]
    fn replies_waited_for_are_bounded_per_connection() {
        let mut answers: Answers<usize> = Answers::default();
        for tag in 0..ANSWERS_WAITING_MAX {
            assert!(answers.expect(tag).is_ok());
        }
        assert_eq!(
            answers.expect(0).unwrap_err(),
            format!(
                "more than {ANSWERS_WAITING_MAX} Redis commands waiting for their replies on one connection"
            )
        );
        assert_eq!(answers.on_frame(b"+OK\r\n"), Ok(Some((0, None))));
        assert!(answers.expect(0).is_ok());
    }

    #[test]
    fn replies_carry_their_errors_and_pushes_are_not_replies() {
        assert_eq!(reply_error(b"-ERR no\r\n"), Ok(Some(Some("ERR no".into()))));
        assert_eq!(reply_error(b"!3\r\nbad\r\n"), Ok(Some(Some("bad".into()))));
        assert_eq!(
            reply_error(b"*2\r\n+OK\r\n-WRONGTYPE x\r\n"),
            Ok(Some(Some("WRONGTYPE x".into())))
        );
        assert_eq!(reply_error(b"*1\r\n$2\r\n-x\r\n"), Ok(Some(None)));
        assert_eq!(reply_error(b">2\r\n+message\r\n+x\r\n"), Ok(None));
        let mut answers: Answers<u8> = Answers::default();
        answers.expect(1).unwrap();
        assert_eq!(answers.on_frame(b">1\r\n+p\r\n"), Ok(None));
        assert_eq!(answers.on_frame(b":1\r\n"), Ok(Some((1, None))));
    }

    #[test]
    fn commands_are_cut_from_arrays_and_inline_lines() {
        let bytes = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\nPING\r\n";
        let (first, len) = cut_command(bytes).unwrap().unwrap();
        assert_eq!(first, args(&["SET", "k", "v1"]));
        let (second, rest) = cut_command(&bytes[len..]).unwrap().unwrap();
        assert_eq!((second, len + rest), (args(&["PING"]), bytes.len()));
        assert_eq!(cut_command(&bytes[..len - 1]), Ok(None));
    }

    #[test]
    fn multi_blocks_are_one_boundary_at_exec_and_session_commands_pass() {
        let mut front = Front::default();
        assert_eq!(front.command(&args(&["MULTI"])), Ok(Command::Quiet));
        assert_eq!(
            front.command(&args(&["SET", "k", "1", "NX"])),
            Ok(Command::Quiet)
        );
        assert_eq!(
            front.command(&args(&["exec"])),
            Ok(Command::Boundary {
                text: "MULTI; SET ? ? NX; EXEC".into(),
                kind: Kind::Request
            })
        );
        assert_eq!(
            front.command(&args(&["GET", "k"])),
            Ok(Command::Boundary {
                text: "GET ?".into(),
                kind: Kind::Request
            })
        );
        assert_eq!(
            front.command(&args(&["HELLO", "3"])),
            Ok(Command::Boundary {
                text: "HELLO ?".into(),
                kind: Kind::Housekeeping(crate::graybox::kind::Chore::Connection)
            })
        );
        assert_eq!(
            front.command(&args(&["subscribe", "c"])),
            Err("SUBSCRIBE ?".into())
        );
        assert_eq!(
            front.command(&args(&["CLIENT", "REPLY", "OFF"])),
            Err("CLIENT REPLY ?".into())
        );
    }
}
