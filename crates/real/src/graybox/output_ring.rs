//! The service's output (stdout and stderr through one pipe, so their order is kept) in memory, the last
//! [`RING_BYTES`] only: a chatty service running for hours must not fill the disk or the probe's memory, and
//! only the tail is ever shown (why it did not start).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of output kept (the oldest go first).
pub const RING_BYTES: usize = 64 << 10;

#[derive(Clone, Default)]
pub struct OutputRing {
    bytes: Arc<Mutex<VecDeque<u8>>>,
    capacity: usize,
}

impl OutputRing {
    pub fn new(capacity: usize) -> OutputRing {
        OutputRing {
            bytes: Arc::default(),
            capacity,
        }
    }

    pub fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        let chunk = &chunk[chunk.len().saturating_sub(self.capacity)..];
        let overflow = (bytes.len() + chunk.len()).saturating_sub(self.capacity);
        bytes.drain(..overflow);
        bytes.extend(chunk);
    }

    /// What is kept, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        let bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        let (front, back) = bytes.as_slices();
        String::from_utf8_lossy(&[front, back].concat()).into_owned()
    }

    /// Copy everything `reader` yields into the ring, on a thread of its own, until end-of-file (every process
    /// holding the pipe's other end is gone).
    pub fn feed(&self, mut reader: File) -> std::io::Result<Feeder> {
        let ring = self.clone();
        let thread = std::thread::Builder::new()
            .name("service-output".into())
            .spawn(move || {
                let mut buffer = [0u8; 8 << 10];
                while let Ok(read @ 1..) = reader.read(&mut buffer) {
                    ring.push(&buffer[..read]);
                }
            })?;
        Ok(Feeder(thread))
    }
}

/// A pipe, (reading end, writing end), both close-on-exec: only what a child gets as its stdio is inherited.
/// (`std::io::pipe` is newer than the workspace's minimum Rust.)
pub fn pipe() -> std::io::Result<(File, File)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2(2) writes two descriptors into the array it is given, which outlives the call.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and nothing else owns them.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((File::from(reader), File::from(writer)))
}

/// The thread copying one launch's output.
pub struct Feeder(JoinHandle<()>);

impl Feeder {
    /// Wait (at most `bound`) until the pipe is drained: a service that exited may have output still in it.
    pub fn drained(&self, bound: Duration) {
        let started = Instant::now();
        while !self.0.is_finished() && started.elapsed() < bound {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_ring_keeps_the_last_bytes_only() {
        let ring = OutputRing::new(8);
        ring.push(b"abcdef");
        ring.push(b"ghij");
        assert_eq!(ring.text(), "cdefghij");
        ring.push(b"0123456789XY");
        assert_eq!(ring.text(), "456789XY");
    }

    #[test]
    fn a_pipe_is_copied_until_its_end() {
        let ring = OutputRing::new(RING_BYTES);
        let (reader, mut writer) = pipe().unwrap();
        let feeder = ring.feed(reader).unwrap();
        for _ in 0..20_000 {
            writer.write_all(b"line of output\n").unwrap();
        }
        writer.write_all(b"the last line\n").unwrap();
        drop(writer);
        feeder.drained(Duration::from_secs(5));
        let text = ring.text();
        assert_eq!(text.len(), RING_BYTES);
        assert!(
            text.ends_with("the last line\n"),
            "{}",
            &text[text.len() - 40..]
        );
    }
}
