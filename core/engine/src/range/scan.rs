//! Reading range text left to right, with errors that point into it.
//!
//! The cursor only ever steps over ASCII bytes, so every position it stops
//! at is a character boundary and can slice the text.

use super::RangeError;

pub(super) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Goes back to a position this cursor was at before.
    pub fn reset(&mut self, pos: usize) {
        self.pos = pos;
    }

    pub fn peek(&self) -> Option<u8> {
        self.peek_at(0)
    }

    pub fn peek_at(&self, offset: usize) -> Option<u8> {
        self.text.as_bytes().get(self.pos + offset).copied()
    }

    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// Steps over `expected` if the text continues with it.
    pub fn eat(&mut self, expected: &str) -> bool {
        let found = self.rest().starts_with(expected);
        if found {
            self.pos += expected.len();
        }
        found
    }

    /// Steps over the longest run of ASCII bytes matching `wanted`.
    pub fn take_while(&mut self, wanted: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|byte| byte.is_ascii() && wanted(byte))
        {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    /// The text from `start` to here.
    pub fn since(&self, start: usize) -> &'a str {
        &self.text[start..self.pos]
    }

    /// The character at `position`, empty at the end of the text.
    pub fn char_at(&self, position: usize) -> &'a str {
        let rest = &self.text[position..];
        let len = rest.chars().next().map_or(0, char::len_utf8);
        &rest[..len]
    }

    /// An error at `position` about `found`.
    pub fn error(&self, position: usize, found: &str, message: impl Into<String>) -> RangeError {
        RangeError {
            input: self.text.to_owned(),
            position,
            found: found.to_owned(),
            message: message.into(),
        }
    }

    /// An error about the character here: `unexpected "<c>", <expected>`, or
    /// `<expected> at the end` past the last character.
    pub fn unexpected(&self, expected: &str) -> RangeError {
        let found = self.char_at(self.pos);
        let message = if found.is_empty() {
            format!("{expected} at the end")
        } else {
            format!("unexpected {found:?}, {expected}")
        };
        self.error(self.pos, found, message)
    }
}

/// Bytes of a pre-release or build identifier.
pub(super) fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-'
}

/// Checks the numeric pre-release identifiers of `pre` the way blang/semver
/// does: no leading zeros and at most `u64::MAX`. Returns what is wrong.
pub(super) fn check_prerelease_numbers(pre: &str) -> Result<(), String> {
    for identifier in pre.split('.') {
        if identifier.is_empty() || !identifier.bytes().all(|byte| byte.is_ascii_digit()) {
            continue;
        }
        if identifier.len() > 1 && identifier.starts_with('0') {
            return Err(format!(
                "the numeric pre-release identifier {identifier:?} has a leading zero"
            ));
        }
        if identifier.parse::<u64>().is_err() {
            return Err(format!(
                "the numeric pre-release identifier {identifier:?} is larger than {}",
                u64::MAX
            ));
        }
    }
    Ok(())
}
