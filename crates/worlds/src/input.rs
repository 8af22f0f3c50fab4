//! Reading an input file (a model, a trace, a `simulate --json` file) the one way every command does: only a
//! regular file (a FIFO named `*.toml` would block the reader for ever, `/dev/zero` behind a symlink would fill
//! memory), at most `INPUT_BYTES_MAX` bytes, and UTF-8 with the position of the first bad byte when it is not.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The largest input file read: far above any model, trace or shard file this project writes (the largest
/// committed model is a few KiB; a trace of a 10,000-step walk is a few MiB).
pub const INPUT_BYTES_MAX: u64 = 64 << 20;

/// Why a file was not read. The message names no file: callers put the path in front.
#[derive(Debug)]
pub struct ReadError {
    pub message: String,
    /// 1-based line and column (in characters) of the first byte that is not UTF-8, when that was the fault.
    pub position: Option<(usize, usize)>,
    /// Whether the file does not exist (callers that treat a missing file as "gone" need to tell).
    pub not_found: bool,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, column)) => write!(f, "{} at line {line}, column {column}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for ReadError {}

fn refused(message: String) -> ReadError {
    ReadError {
        message,
        position: None,
        not_found: false,
    }
}

fn io_error(error: std::io::Error) -> ReadError {
    ReadError {
        not_found: error.kind() == std::io::ErrorKind::NotFound,
        message: format!("cannot read: {error}"),
        position: None,
    }
}

/// What a file that is not a regular file is, for the message.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// The bytes of the regular file at `path` (symlinks followed), at most `bytes_max` of them.
pub fn read_bytes(path: &Path, bytes_max: u64) -> Result<Vec<u8>, ReadError> {
    // Judged before opening: opening a FIFO for reading blocks until a writer comes.
    let metadata = std::fs::metadata(path).map_err(io_error)?;
    if !metadata.is_file() {
        let kind = kind_of(metadata.file_type());
        return Err(refused(format!("cannot read: {kind}, not a regular file")));
    }
    let file = std::fs::File::open(path).map_err(io_error)?;
    // And again on what was opened, in case the path was swapped in between.
    let opened = file.metadata().map_err(io_error)?;
    if !opened.is_file() {
        let kind = kind_of(opened.file_type());
        return Err(refused(format!("cannot read: {kind}, not a regular file")));
    }
    let too_large = || {
        refused(format!(
            "cannot read: larger than {bytes_max} bytes (the most an input file may hold)"
        ))
    };
    if opened.len() > bytes_max {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    // `take` bounds the read even when the file grows while it is read.
    file.take(bytes_max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > bytes_max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of the regular file at `path`, at most `INPUT_BYTES_MAX` bytes, UTF-8.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    read_text_max(path, INPUT_BYTES_MAX)
}

/// The text of the regular file at `path`, at most `bytes_max` bytes, UTF-8.
pub fn read_text_max(path: &Path, bytes_max: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, bytes_max)?;
    String::from_utf8(bytes).map_err(|error| {
        let good = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let good = std::str::from_utf8(good).expect("the valid prefix is UTF-8");
        let line_start = good.rfind('\n').map_or(0, |at| at + 1);
        ReadError {
            message: "not UTF-8: the first invalid byte is".to_string(),
            position: Some((
                good.matches('\n').count() + 1,
                good[line_start..].chars().count() + 1,
            )),
            not_found: false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_its_first_bad_byte_located() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.toml");
        std::fs::write(&good, "a = 1\n").unwrap();
        assert_eq!(read_text(&good).unwrap(), "a = 1\n");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, b"a = 1\nb = \"\xc3\xa9\xff\"\n").unwrap();
        let error = read_text(&bad).unwrap_err();
        assert_eq!(error.position, Some((2, 7)), "{error}");
        assert_eq!(
            error.to_string(),
            "not UTF-8: the first invalid byte is at line 2, column 7"
        );
        let missing = read_text(&dir.path().join("nope")).unwrap_err();
        assert!(missing.not_found && missing.message.starts_with("cannot read:"));
    }

    #[test]
    fn the_size_bound_holds_whatever_the_file_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'x'; 101]).unwrap();
        assert!(read_bytes(&path, 101).is_ok());
        let error = read_bytes(&path, 100).unwrap_err();
        assert!(error.message.contains("larger than 100 bytes"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn fifos_devices_and_folders_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("model.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            // Before the fix this call blocked for ever (no writer ever opens the FIFO).
            let error = read_text(&fifo).unwrap_err();
            assert!(error.message.contains("a FIFO"), "{error}");
        }
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let error = read_text(&zero).unwrap_err();
        assert!(error.message.contains("a device"), "{error}");
        let error = read_text(dir.path()).unwrap_err();
        assert!(error.message.contains("a folder"), "{error}");
    }
}
