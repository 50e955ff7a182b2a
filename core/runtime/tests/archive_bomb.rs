//! Gzip bombs: 10 GiB of zeros, compressed to about 10 MB, produced lazily
//! (the compressed bytes are never all in memory either). Extraction must
//! stop at the limit, quickly, with bounded memory. Its own test binary, so
//! the process's peak memory (VmHWM) measures these tests alone.

use std::io::{self, Cursor, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flate2::Compression as Level;
use flate2::write::DeflateEncoder;
use pakket_runtime::kernel::archive::{self, ArchiveError, Limits};

const CHUNK: usize = 1 << 20;
const TEN_GIB_OF_CHUNKS: u64 = 10 * 1024;

/// One independently decodable, byte-aligned, non-final deflate segment.
fn segment(data: &[u8]) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Level::best());
    encoder.write_all(data).unwrap();
    // A sync flush ends on a byte boundary without the final-block bit, so
    // segments can be concatenated into one deflate stream.
    encoder.flush().unwrap();
    encoder.get_ref().clone()
}

/// Repeats `chunk` `times` times, counting what was read into `read`.
struct Repeat {
    chunk: Vec<u8>,
    times: u64,
    offset: usize,
}

impl Read for Repeat {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.times == 0 {
            return Ok(0);
        }
        let n = buf.len().min(self.chunk.len() - self.offset);
        buf[..n].copy_from_slice(&self.chunk[self.offset..self.offset + n]);
        self.offset += n;
        if self.offset == self.chunk.len() {
            self.offset = 0;
            self.times -= 1;
        }
        Ok(n)
    }
}

/// Counts the bytes the extractor pulled.
struct Counted<R>(R, Arc<AtomicU64>);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A valid gzip member: `prefix`, then `chunks` MiB of zeros. Returns the
/// reader and its compressed length.
fn bomb(prefix: &[u8], chunks: u64, pulled: Arc<AtomicU64>) -> (impl Read, u64) {
    let zeros = vec![0u8; CHUNK];
    let zero_segment = segment(&zeros);
    let mut crc = crc32fast::Hasher::new();
    crc.update(prefix);
    let mut zero_crc = crc32fast::Hasher::new();
    zero_crc.update(&zeros);
    for _ in 0..chunks {
        crc.combine(&zero_crc);
    }
    let size = prefix.len() as u64 + chunks * CHUNK as u64;
    // RFC 1952 header: magic, deflate, no flags, no mtime, no extra, unix.
    let head = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let mut first = head.to_vec();
    if !prefix.is_empty() {
        first.extend(segment(prefix));
    }
    // A final fixed-Huffman block holding only end-of-block, then the trailer.
    let mut tail = vec![0x03, 0x00];
    tail.extend(crc.finalize().to_le_bytes());
    tail.extend((size as u32).to_le_bytes());
    let length = first.len() as u64 + chunks * zero_segment.len() as u64 + tail.len() as u64;
    let reader = Cursor::new(first)
        .chain(Repeat {
            chunk: zero_segment,
            times: chunks,
            offset: 0,
        })
        .chain(Cursor::new(tail));
    (Counted(reader, pulled), length)
}

/// A tar header for one regular file of `size` bytes.
fn tar_header(name: &str, size: u64) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_path(name).unwrap();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    header.as_bytes().to_vec()
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn assert_stopped(name: &str, error: &ArchiveError, took: Duration, pulled: u64, length: u64) {
    let peak = peak_rss_kib();
    eprintln!(
        "{name}: stopped after {took:?}, pulled {pulled} of {length} compressed bytes, peak RSS {} MiB: {error}",
        peak / 1024
    );
    assert!(pulled < length / 10, "{name}: read {pulled} of {length}");
    assert!(took < Duration::from_secs(120), "{name}: took {took:?}");
    assert!(peak < 256 * 1024, "{name}: peak RSS {peak} KiB");
}

#[test]
fn the_generated_bomb_is_a_valid_gzip_stream() {
    // Small version of the same construction, decoded fully by flate2.
    let pulled = Arc::new(AtomicU64::new(0));
    let (reader, _) = bomb(b"hello", 3, pulled);
    let mut decoder = flate2::read::GzDecoder::new(reader);
    let mut out = Vec::new();
    decoder.read_to_end(&mut out).unwrap();
    assert_eq!(out.len(), 5 + 3 * CHUNK);
    assert!(out.starts_with(b"hello") && out[5..].iter().all(|&b| b == 0));
}

#[test]
fn ten_gib_of_zeros_stops_at_the_total_limit() {
    // Zeros read as an empty tar followed by padding; the padding is
    // drained (to check the gzip trailer) and counted.
    let pulled = Arc::new(AtomicU64::new(0));
    let (reader, length) = bomb(b"", TEN_GIB_OF_CHUNKS, pulled.clone());
    assert!(length < 16 << 20, "compressed to {length} bytes");
    let temp = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let error = archive::extract(reader, &temp.path().join("out"), &Limits::default()).unwrap_err();
    let took = start.elapsed();
    assert!(matches!(error, ArchiveError::TooLarge { .. }), "{error}");
    assert_stopped(
        "zeros",
        &error,
        took,
        pulled.load(Ordering::Relaxed),
        length,
    );
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

#[test]
fn a_ten_gib_file_stops_at_the_total_limit_when_files_are_unlimited() {
    // Per-file limit lifted: only counting the stream can stop it.
    let limits = Limits {
        max_file_size: u64::MAX - 1,
        ..Limits::default()
    };
    let pulled = Arc::new(AtomicU64::new(0));
    let prefix = tar_header("bomb.bin", TEN_GIB_OF_CHUNKS * CHUNK as u64);
    let (reader, length) = bomb(&prefix, TEN_GIB_OF_CHUNKS, pulled.clone());
    let temp = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let error = archive::extract(reader, &temp.path().join("out"), &limits).unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(&error, ArchiveError::TooLarge { path, .. } if path == "bomb.bin"),
        "{error}"
    );
    assert_stopped("file", &error, took, pulled.load(Ordering::Relaxed), length);
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

#[test]
fn a_ten_gib_file_is_refused_by_its_header_before_reading() {
    let pulled = Arc::new(AtomicU64::new(0));
    let prefix = tar_header("bomb.bin", TEN_GIB_OF_CHUNKS * CHUNK as u64);
    let (reader, length) = bomb(&prefix, TEN_GIB_OF_CHUNKS, pulled.clone());
    let temp = tempfile::tempdir().unwrap();
    let error = archive::extract(reader, &temp.path().join("out"), &Limits::default()).unwrap_err();
    assert!(
        matches!(error, ArchiveError::FileTooLarge { .. }),
        "{error}"
    );
    // Only the first buffers of the stream were read.
    let pulled = pulled.load(Ordering::Relaxed);
    assert!(pulled < 1 << 20, "read {pulled} of {length}");
}
