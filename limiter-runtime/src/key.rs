//! Store keys: `prefix` + key, bounded in length, distinct for distinct keys, and built without allocating.

use std::fmt::{self, Write as _};
use std::ops::Deref;

/// Keys longer than this (in bytes, after the prefix) are stored as a truncated copy followed by a digest.
pub(crate) const MAX_VERBATIM: usize = 128;

/// Store keys up to this many bytes (prefix included) live inline, on the caller's stack, so that the common
/// case (a prefix and an id, an IP address or a UUID) costs a decision no allocation. Not more: a call's key
/// is moved a few times on its way to the store, and small values move in registers.
const INLINE: usize = 56;

/// The store key of one call: `prefix` and the formatted key, in one string.
///
/// A key of at most [`MAX_VERBATIM`] bytes is kept verbatim (any content: spaces, braces, newlines); a longer
/// one becomes its first (up to) `MAX_VERBATIM` bytes, `#`, and the SHA-1 of the whole key, so at most
/// `MAX_VERBATIM + 41` bytes. The two forms never meet (a digested key is always longer than
/// `MAX_VERBATIM`), so distinct keys never share a bucket.
#[derive(Clone)]
pub(crate) struct StoreKey(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(String),
}

impl StoreKey {
    const EMPTY: StoreKey = StoreKey(Repr::Inline {
        len: 0,
        bytes: [0; INLINE],
    });

    /// Formats `prefix` and `key` into one store key.
    pub(crate) fn new(prefix: &str, key: fmt::Arguments<'_>) -> StoreKey {
        let mut out = StoreKey::EMPTY;
        // Writing into a StoreKey cannot fail; a Display impl that reports an error leaves what it wrote.
        let _ = out.write_str(prefix);
        let _ = out.write_fmt(key);
        out.bounded(prefix.len())
    }

    /// `prefix` and a key already written out: the same store key as [`new`](StoreKey::new) gives a key whose
    /// `Display` writes `key`, without the formatting machinery (two copies).
    pub(crate) fn of_str(prefix: &str, key: &str) -> StoreKey {
        let len = prefix.len() + key.len();
        if len > INLINE {
            return StoreKey(Repr::Heap([prefix, key].concat())).bounded(prefix.len());
        }
        let mut bytes = [0; INLINE];
        bytes[..prefix.len()].copy_from_slice(prefix.as_bytes());
        bytes[prefix.len()..len].copy_from_slice(key.as_bytes());
        // `len` is at most INLINE (56): it fits a u8.
        StoreKey(Repr::Inline {
            len: len as u8,
            bytes,
        })
    }

    /// This key, with what follows its `prefix_len` bytes of prefix digested if it is too long.
    fn bounded(self, prefix_len: usize) -> StoreKey {
        if self.len() - prefix_len <= MAX_VERBATIM {
            return self;
        }
        let mut long = self.into_string();
        digest_tail(&mut long, prefix_len);
        StoreKey(Repr::Heap(long))
    }

    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            // SAFETY: only whole `&str`s are ever copied in (`write_str`), one after the other, so the first
            // `len` bytes are UTF-8.
            Repr::Inline { len, bytes } => unsafe {
                std::str::from_utf8_unchecked(&bytes[..usize::from(*len)])
            },
            Repr::Heap(s) => s,
        }
    }

    /// The key as an owned `String`.
    pub(crate) fn into_string(self) -> String {
        match self.0 {
            Repr::Heap(s) => s,
            Repr::Inline { .. } => self.as_str().to_owned(),
        }
    }
}

impl fmt::Write for StoreKey {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match &mut self.0 {
            Repr::Inline { len, bytes } => {
                let at = usize::from(*len);
                if let Some(to) = bytes.get_mut(at..at + s.len()) {
                    to.copy_from_slice(s.as_bytes());
                    *len = (at + s.len()) as u8;
                } else {
                    let mut spilled = String::with_capacity(2 * (at + s.len()));
                    // SAFETY: as in `as_str`.
                    spilled.push_str(unsafe { std::str::from_utf8_unchecked(&bytes[..at]) });
                    spilled.push_str(s);
                    self.0 = Repr::Heap(spilled);
                }
            }
            Repr::Heap(out) => out.push_str(s),
        }
        Ok(())
    }
}

impl Deref for StoreKey {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for StoreKey {
    fn eq(&self, other: &StoreKey) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for StoreKey {}

impl fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn digest_tail(out: &mut String, start: usize) {
    let digest = sha1_smol::Sha1::from(&out.as_bytes()[start..])
        .digest()
        .to_string();
    let mut cut = start + MAX_VERBATIM;
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out.push('#');
    out.push_str(&digest);
    debug_assert!(out.len() - start > MAX_VERBATIM);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_key(prefix: &str, key: &dyn fmt::Display) -> String {
        StoreKey::new(prefix, format_args!("{key}")).into_string()
    }

    #[test]
    fn short_keys_are_verbatim() {
        assert_eq!(store_key("p:", &"a b{c}\n"), "p:a b{c}\n");
    }

    #[test]
    fn keys_past_the_inline_buffer_are_whole() {
        // Prefix and key together longer than the inline buffer, the key itself verbatim.
        let prefix = "p".repeat(100);
        let key = "k".repeat(MAX_VERBATIM);
        assert_eq!(store_key(&prefix, &key), format!("{prefix}{key}"));
        // A key written in several pieces that crosses the boundary part-way.
        let (a, b, c) = ("a".repeat(60), "b".repeat(60), "c".repeat(60));
        let key = store_key("", &format_args!("{a}:{b}:{c}"));
        assert_eq!(key.len(), MAX_VERBATIM + 41);
        assert!(key.starts_with(&format!("{a}:{b}:c")));
    }

    #[test]
    fn a_key_written_out_is_the_key_formatted() {
        for key in [
            "",
            "1001",
            &"k".repeat(60),
            &"é".repeat(500),
            &"x".repeat(10_000),
        ] {
            for prefix in ["", "rate_limit:emp:"] {
                assert_eq!(
                    StoreKey::of_str(prefix, key).into_string(),
                    store_key(prefix, &key)
                );
            }
        }
    }

    #[test]
    fn long_keys_are_bounded_and_distinct() {
        let a = "x".repeat(10_000);
        let b = format!("{}y", "x".repeat(9_999));
        let (ka, kb) = (store_key("p:", &a), store_key("p:", &b));
        assert_ne!(ka, kb);
        assert!(ka.len() <= 2 + MAX_VERBATIM + 41);
        assert!(ka.contains('#'));
    }

    #[test]
    fn multibyte_keys_are_cut_on_a_char_boundary() {
        let k = store_key("", &"é".repeat(500));
        assert!(k.len() > MAX_VERBATIM && k.len() <= MAX_VERBATIM + 41);
        let k = store_key("", &"é".repeat(64));
        assert_eq!(k, "é".repeat(64));
    }
}
