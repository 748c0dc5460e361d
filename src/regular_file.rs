//! Reads of files kopgen did not write: only regular files (following symlinks), so that a
//! FIFO, a device or `/dev/zero` behind a symlink where a project file belongs is an error
//! instead of a read that never ends or never stops growing.

use std::{io, path::Path};

/// The most kopgen reads from one project file it does not parse as Rust source (PROJECT,
/// manifests, kustomizations, Cargo files): far beyond any real one.
pub const MAX_BYTES: u64 = 16 << 20;

/// The bytes of the regular file at `path`.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a directory, FIFO, socket or device); replace it with a file",
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} bytes, over kopgen's limit of {MAX_BYTES} bytes for this file",
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may have grown since: never read past the limit.
    io::Read::read_to_end(
        &mut io::Read::take(std::fs::File::open(path)?, MAX_BYTES + 1),
        &mut bytes,
    )?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("over kopgen's limit of {MAX_BYTES} bytes for this file"),
        ));
    }
    Ok(bytes)
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
