//! Reads of files kopgen did not write: only regular files (following symlinks), so that a
//! FIFO, a device or `/dev/zero` behind a symlink where a project file belongs is an error
//! instead of a read that never ends or never stops growing.

use std::{io, path::Path};

/// The most kopgen reads from one project file it does not parse as Rust source (PROJECT,
/// manifests, kustomizations, Cargo files): far beyond any real one.
pub const MAX_BYTES: u64 = 16 << 20;

/// Why [`read_at_most`] read nothing, for callers that word it their own way.
#[derive(Debug)]
pub enum ReadError {
    /// A directory, FIFO, socket or device.
    NotRegular,
    /// Over the limit (`size` as the file system gave it, or the limit if it grew while read).
    TooLarge {
        size: u64,
        limit: u64,
    },
    Io(io::Error),
}

impl From<ReadError> for io::Error {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotRegular => io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (a directory, FIFO, socket or device); replace it with a file",
            ),
            ReadError::TooLarge { size, limit } => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{size} bytes, over kopgen's limit of {limit} bytes for this file"),
            ),
            ReadError::Io(e) => e,
        }
    }
}

/// The bytes of the regular file at `path`, if it holds at most `limit` of them.
pub fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may have grown since: never read past the limit.
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    io::Read::read_to_end(&mut io::Read::take(file, limit + 1), &mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { size: limit, limit });
    }
    Ok(bytes)
}

/// The bytes of the regular file at `path` (at most [`MAX_BYTES`]).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    Ok(read_at_most(path, MAX_BYTES)?)
}

/// The text of the regular file at `path` (UTF-8).
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, "text").expect("write");
        assert_eq!(read_to_string(&file).expect("read"), "text");
        let err = read(dir.path()).expect_err("a directory");
        assert!(err.to_string().contains("not a regular file"));
        #[cfg(unix)]
        {
            let link = dir.path().join("zero");
            std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
            let err = read(&link).expect_err("a device");
            assert!(err.to_string().contains("not a regular file"));
        }
    }
}
