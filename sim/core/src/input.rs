//! Reading input files (scenarios, graphs, machine files) with a size cap, so that a
//! wrong path (`/dev/zero`, a disk image) is refused at once instead of filling memory.

use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::path::Path;

/// The most mnsim reads from one input file: 64 MiB (the largest shipped input is a few
/// hundred KiB).
pub const INPUT_LIMIT: u64 = 64 << 20;

/// The text of the file at `path`, refused when it is larger than [`INPUT_LIMIT`] (a
/// regular file by its size, anything else — a device, a pipe — once it has given more),
/// a directory, or not UTF-8. Messages say what is wrong, not which file: callers name it.
pub fn read_text(path: &Path) -> io::Result<String> {
    read_text_capped(path, INPUT_LIMIT)
}

/// The bytes of the file at `path` (a binary input: an ONNX model), refused as
/// [`read_text`] refuses a file, but for the UTF-8 check.
pub fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    read_bytes_capped(path, INPUT_LIMIT)
}

/// [`read_text`] with another cap.
pub fn read_text_capped(path: &Path, cap: u64) -> io::Result<String> {
    let bytes = read_bytes_capped(path, cap)?;
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (byte {} is not valid)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// [`read_bytes`] with another cap.
pub fn read_bytes_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let mib = |n: u64| format!("{} MiB", n >> 20);
    if meta.is_dir() {
        return Err(io::Error::new(ErrorKind::IsADirectory, "it is a directory"));
    }
    if meta.is_file() && meta.len() > cap {
        return Err(io::Error::new(
            ErrorKind::FileTooLarge,
            format!(
                "it is {} bytes, more than the {} mnsim reads from an input file",
                meta.len(),
                mib(cap)
            ),
        ));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            ErrorKind::FileTooLarge,
            format!(
                "it is not a regular file and gives more than the {} mnsim reads from an \
                 input file",
                mib(cap)
            ),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_devices_and_files() {
        let e = read_text_capped(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let dir = tempfile::Builder::new()
            .prefix("mnsim-input-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        let f = d.join("big.ron");
        std::fs::write(&f, vec![b' '; (1 << 20) + 1]).unwrap();
        let e = read_text_capped(&f, 1 << 20).unwrap_err();
        assert!(
            e.to_string().contains("1048577 bytes, more than the 1 MiB"),
            "{e}"
        );
        std::fs::write(&f, b"ok").unwrap();
        assert_eq!(read_text_capped(&f, 1 << 20).unwrap(), "ok");
        assert_eq!(read_text(d).unwrap_err().kind(), ErrorKind::IsADirectory);
        dir.close().unwrap();
    }
}
