//! The probe's input files (`--reset-sql`, `--replay`) read whole, but only when they are regular files of a
//! bounded size: a FIFO would block the probe before anything ran (nothing writes it), a device such as
//! /dev/zero never ends, and a huge file would be held in memory. One-line errors name the flag and the file.
//! The reading itself is the project's one reader of input files, `retrylab_worlds::input`.

use retrylab_worlds::input::read_text_max;
use std::path::Path;

/// The largest `--reset-sql` file (statements wiping a test database: far smaller).
pub const RESET_SQL_MAX: u64 = 16 << 20;
/// The largest `--replay` file (a saved schedule: a few kilobytes).
pub const REPLAY_MAX: u64 = 64 << 20;

/// Read `path` (given with `flag`) as UTF-8 text when it is a regular file of at most `max` bytes: the reader
/// every command's input files go through (`retrylab_worlds::input`), its error behind the flag and the file.
pub fn read_regular(flag: &str, path: &Path, max: u64) -> Result<String, String> {
    read_text_max(path, max).map_err(|error| format!("{flag} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reset.sql");
        std::fs::write(&path, "TRUNCATE payments;").unwrap();
        assert_eq!(
            read_regular("--reset-sql", &path, RESET_SQL_MAX).unwrap(),
            "TRUNCATE payments;"
        );
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = read_regular("--replay", &path, REPLAY_MAX).unwrap_err();
        assert!(
            error.starts_with("--replay ") && error.contains("not a regular file"),
            "{error}"
        );
    }

    #[test]
    fn a_device_a_directory_and_a_large_file_are_refused() {
        let error = read_regular("--reset-sql", Path::new("/dev/zero"), RESET_SQL_MAX).unwrap_err();
        assert!(
            error.starts_with("--reset-sql /dev/zero: ") && error.contains("not a regular file"),
            "{error}"
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(read_regular("--replay", dir.path(), REPLAY_MAX).is_err());
        let path = dir.path().join("big.sql");
        std::fs::write(&path, vec![b'-'; 2048]).unwrap();
        let error = read_regular("--reset-sql", &path, 1024).unwrap_err();
        assert_eq!(error.lines().count(), 1);
        assert!(
            error.contains("big.sql: ") && error.contains("larger than 1024 bytes"),
            "{error}"
        );
        assert!(read_regular("--reset-sql", &path, 2048).is_ok());
    }
}
