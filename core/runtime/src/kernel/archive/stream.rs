//! The readers under the tar parser: one hashes the raw input, one caps the
//! decompressed stream. They record what went wrong in [`Flags`] so an
//! `io::Error` coming back through the tar and gzip decoders can be told
//! apart: a limit, a failing source, or bad bytes.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

use sha2::{Digest as _, Sha256};

use crate::store::Digest;

/// The first bytes of every gzip member (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// What the readers saw, shared with the extraction loop.
#[derive(Debug, Default)]
pub(super) struct Flags {
    /// Bytes of the decompressed stream read so far.
    pub consumed: Cell<u64>,
    /// The decompressed stream went past the limit.
    pub exceeded: Cell<bool>,
    /// The caller's reader returned an error.
    pub source_failed: Cell<bool>,
}

/// Hashes every byte read from the caller's reader.
pub(super) struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    flags: Rc<Flags>,
}

impl<R: Read> Hashing<R> {
    pub fn new(inner: R, flags: Rc<Flags>) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            flags,
        }
    }

    /// Reads up to two bytes and says whether they are the gzip magic; the
    /// bytes read are returned so they can be put back in front.
    pub fn sniff_gzip(&mut self) -> io::Result<(bool, Vec<u8>)> {
        let mut prefix = vec![0; GZIP_MAGIC.len()];
        let mut filled = 0;
        while filled < prefix.len() {
            match self.read(&mut prefix[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        prefix.truncate(filled);
        Ok((prefix == GZIP_MAGIC, prefix))
    }

    /// The digest of everything read.
    pub fn finish(self) -> Digest {
        Digest::from_sha256(self.hasher.finalize().into())
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.hasher.update(&buf[..n]);
                Ok(n)
            }
            Err(error) => {
                if error.kind() != io::ErrorKind::Interrupted {
                    self.flags.source_failed.set(true);
                }
                Err(error)
            }
        }
    }
}

/// Passes at most `limit` bytes of the decompressed stream; asking for more
/// when more exists is an error, so a bomb stops at the limit however its
/// headers describe it.
pub(super) struct Bounded<R> {
    inner: R,
    limit: u64,
    flags: Rc<Flags>,
}

impl<R: Read> Bounded<R> {
    pub fn new(inner: R, limit: u64, flags: Rc<Flags>) -> Self {
        Self {
            inner,
            limit,
            flags,
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let consumed = self.flags.consumed.get();
        let left = self.limit.saturating_sub(consumed);
        if left == 0 {
            // At the limit: fine if the stream ends here, an error if not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.flags.exceeded.set(true);
                    Err(io::Error::other("archive exceeds the size limit"))
                }
            };
        }
        let max = usize::try_from(left).map_or(buf.len(), |left| left.min(buf.len()));
        let n = self.inner.read(&mut buf[..max])?;
        self.flags.consumed.set(consumed + n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_allows_exactly_the_limit() {
        let flags = Rc::new(Flags::default());
        let mut out = Vec::new();
        Bounded::new(&[7u8; 10][..], 10, flags.clone())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out.len(), 10);
        assert!(!flags.exceeded.get());

        let flags = Rc::new(Flags::default());
        let error = Bounded::new(&[7u8; 11][..], 10, flags.clone())
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(flags.exceeded.get(), "{error}");
    }

    #[test]
    fn sniffs_gzip_and_keeps_the_bytes() {
        let flags = Rc::new(Flags::default());
        let mut hashing = Hashing::new(&[0x1f, 0x8b, 8][..], flags.clone());
        assert_eq!(hashing.sniff_gzip().unwrap(), (true, vec![0x1f, 0x8b]));
        let mut short = Hashing::new(&[0x1f][..], flags);
        assert_eq!(short.sniff_gzip().unwrap(), (false, vec![0x1f]));
    }
}
