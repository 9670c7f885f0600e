//! Store keys: `prefix` + key, escaped so that no key reaches past its prefix, bounded in length, distinct for
//! distinct prefixes and keys, and built without allocating.

mod digest;
mod escape;
mod list;

use std::fmt::{self, Write as _};
use std::ops::Deref;

pub(crate) use self::escape::{escaped, unescaped};
use self::escape::{is_plain, Escape};

/// What follows a prefix that does not end with `:`, so that the store key still shows where it ends.
const MARK: &str = "|";

/// Keys longer than this (in bytes, after the prefix) are stored as a truncated copy followed by a digest.
pub(crate) const MAX_VERBATIM: usize = 128;

/// Store keys up to this many bytes (prefix included) live inline, on the caller's stack, so that the common
/// case (a prefix and an id, an IP address or a UUID) costs a decision no allocation. Not more: a call's key
/// is moved a few times on its way to the store.
const STORE_INLINE: usize = 56;

/// The store key of one call: `prefix` and the formatted key, in one string, and where the prefix ends.
///
/// The key is written with `%`, `:` and `|` escaped (`%25`, `%3A`, `%7C`), after the prefix and, when the
/// prefix does not end with `:`, a `|`. So the store key's last `:` or `|` is where its prefix ends, whatever
/// the key holds: a key never reaches into another prefix's keys (`"rl:"` with `"daily:alice"` is
/// `rl:daily%3Aalice`, not `"rl:daily:"`'s `rl:daily:alice`), and distinct (prefix, key) pairs are distinct
/// store keys. A plain key under a prefix ending with `:` reads as it is: `rate_limit:emp:1001`.
///
/// What follows the prefix, if at most [`MAX_VERBATIM`] bytes, is kept verbatim (any other content: spaces,
/// braces, newlines); a longer one becomes its first (up to) `MAX_VERBATIM` bytes, `#`, and the SHA-1 of the
/// whole, so at most `MAX_VERBATIM + 41` bytes. The two forms never meet (a digested key is always longer
/// than `MAX_VERBATIM`), so distinct keys never share a bucket.
pub(crate) type StoreKey = InlineKey<STORE_INLINE>;

/// Key text, inline up to `N` bytes (at most 255) and on the heap past that, and where its prefix ends: a
/// call's store key, and a key kept in a slot of the in-process maps (with a smaller `N`).
#[derive(Clone)]
pub(crate) struct InlineKey<const N: usize>(Repr<N>);

#[derive(Clone)]
enum Repr<const N: usize> {
    /// `prefix` (at most `len`, so at most N: a u8) is where the prefix ends.
    Inline {
        len: u8,
        prefix: u8,
        bytes: [u8; N],
    },
    Heap {
        key: String,
        prefix: usize,
    },
}

impl<const N: usize> InlineKey<N> {
    const EMPTY: Self = {
        assert!(N <= u8::MAX as usize, "an inline length is a u8");
        InlineKey(Repr::Inline {
            len: 0,
            prefix: 0,
            bytes: [0; N],
        })
    };

    /// Returns `prefix` followed by `rest`, as they are.
    #[inline]
    pub(crate) fn joined(prefix: &str, rest: &str) -> Self {
        let len = prefix.len() + rest.len();
        if len > N {
            return InlineKey(Repr::Heap {
                key: [prefix, rest].concat(),
                prefix: prefix.len(),
            });
        }
        let mut bytes = [0; N];
        bytes[..prefix.len()].copy_from_slice(prefix.as_bytes());
        bytes[prefix.len()..len].copy_from_slice(rest.as_bytes());
        // `len` (and so the prefix's length) is at most N (at most 255): it fits a u8.
        InlineKey(Repr::Inline {
            len: len as u8,
            prefix: prefix.len() as u8,
            bytes,
        })
    }

    /// Marks what was written so far as the prefix.
    fn end_prefix(&mut self) {
        match &mut self.0 {
            Repr::Inline { len, prefix, .. } => *prefix = *len,
            Repr::Heap { key, prefix } => *prefix = key.len(),
        }
    }

    /// Returns how long the prefix is.
    fn prefix_len(&self) -> usize {
        match &self.0 {
            Repr::Inline { prefix, .. } => usize::from(*prefix),
            Repr::Heap { prefix, .. } => *prefix,
        }
    }

    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            // SAFETY: only whole `&str`s are ever copied in (`joined`, `write_str`), one after the other, so
            // the first `len` bytes are UTF-8.
            Repr::Inline { len, bytes, .. } => unsafe {
                std::str::from_utf8_unchecked(&bytes[..usize::from(*len)])
            },
            Repr::Heap { key, .. } => key,
        }
    }

    /// Returns this key as its prefix and the rest.
    pub(crate) fn parts(&self) -> KeyRef<'_> {
        // The prefix was written whole, first: its end is a char boundary within the key.
        let (prefix, rest) = self.as_str().split_at(self.prefix_len());
        KeyRef { prefix, rest }
    }

    /// Returns whether this is `key`, however `key` is split.
    #[inline]
    pub(crate) fn is(&self, key: KeyRef<'_>) -> bool {
        key.is(self.as_str().as_bytes())
    }

    /// Returns the key as an owned `String`.
    pub(crate) fn into_string(self) -> String {
        match self.0 {
            Repr::Heap { key, .. } => key,
            Repr::Inline { .. } => self.as_str().to_owned(),
        }
    }
}

impl StoreKey {
    /// Formats `prefix` and `key` into one store key, the key escaped.
    pub(crate) fn new(prefix: &str, key: fmt::Arguments<'_>) -> StoreKey {
        let mut out = StoreKey::EMPTY;
        // Writing into a key cannot fail; a Display impl that reports an error leaves what it wrote.
        let _ = out.write_str(prefix);
        out.end_prefix();
        if !prefix.ends_with(':') {
            let _ = out.write_str(MARK);
        }
        let _ = Escape(&mut out).write_fmt(key);
        out.bounded()
    }

    /// Makes a store key of `prefix` and a key already written out: the same store key as [`new`](StoreKey::new) gives
    /// a key whose `Display` writes `key`, without the formatting machinery (two copies) when the key needs no escape.
    #[inline]
    pub(crate) fn of_str(prefix: &str, key: &str) -> StoreKey {
        if prefix.ends_with(':') && is_plain(key) {
            return StoreKey::joined(prefix, key).bounded();
        }
        StoreKey::new(prefix, format_args!("{key}"))
    }

    /// Returns what follows `prefix` in the store key of `key`: the key as an override of it names it.
    pub(crate) fn rest_of(prefix: &str, key: fmt::Arguments<'_>) -> String {
        let key = StoreKey::new(prefix, key);
        key.parts().rest.to_owned()
    }
}

impl<const N: usize> fmt::Write for InlineKey<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match &mut self.0 {
            Repr::Inline { len, prefix, bytes } => {
                let at = usize::from(*len);
                if let Some(to) = bytes.get_mut(at..at + s.len()) {
                    to.copy_from_slice(s.as_bytes());
                    *len = (at + s.len()) as u8;
                } else {
                    let mut spilled = String::with_capacity(2 * (at + s.len()));
                    // SAFETY: as in `as_str`.
                    spilled.push_str(unsafe { std::str::from_utf8_unchecked(&bytes[..at]) });
                    spilled.push_str(s);
                    self.0 = Repr::Heap {
                        key: spilled,
                        prefix: usize::from(*prefix),
                    };
                }
            }
            Repr::Heap { key, .. } => key.push_str(s),
        }
        Ok(())
    }
}

impl<const N: usize> Deref for InlineKey<N> {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> PartialEq for InlineKey<N> {
    fn eq(&self, other: &InlineKey<N>) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<const N: usize> Eq for InlineKey<N> {}

impl<const N: usize> fmt::Debug for InlineKey<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> fmt::Display for InlineKey<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A store key as its two parts, its prefix and the rest (the key proper, verbatim or digested): what the
/// in-process maps hash and compare, piece by piece, so that a key whose prefix is kept apart (a
/// [`Limit`](crate::Limit)'s) is never copied into one string to be decided in memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyRef<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) rest: &'a str,
}

impl<'a> KeyRef<'a> {
    pub(crate) fn len(&self) -> usize {
        self.prefix.len() + self.rest.len()
    }

    /// Returns whether this key is `bytes`.
    #[inline]
    pub(crate) fn is(&self, bytes: &[u8]) -> bool {
        bytes.len() == self.len() && {
            let (prefix, rest) = bytes.split_at(self.prefix.len());
            prefix == self.prefix.as_bytes() && rest == self.rest.as_bytes()
        }
    }
}

/// A key with no prefix.
impl<'a> From<&'a str> for KeyRef<'a> {
    fn from(key: &'a str) -> KeyRef<'a> {
        KeyRef {
            prefix: "",
            rest: key,
        }
    }
}

impl fmt::Display for KeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix)?;
        f.write_str(self.rest)
    }
}

/// Reads a store key's text back into its prefix and its key (escaped): the prefix ends after the text's last
/// `:` or `|`, a `|` marking the end of a prefix without a `:` (and belonging to neither part).
pub(crate) fn split(text: &str) -> KeyRef<'_> {
    let end = text.rfind([':', '|']).map_or(0, |at| at + 1);
    let (prefix, rest) = text.split_at(end);
    KeyRef {
        prefix: prefix.strip_suffix('|').unwrap_or(prefix),
        rest,
    }
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
        let prefix = format!("{}:", "p".repeat(100));
        let key = "k".repeat(MAX_VERBATIM);
        assert_eq!(store_key(&prefix, &key), format!("{prefix}{key}"));
        // A key written in several pieces that crosses the boundary part-way.
        let (a, b, c) = ("a".repeat(60), "b".repeat(60), "c".repeat(60));
        let key = store_key(":", &format_args!("{a}:{b}:{c}"));
        assert_eq!(key.len(), 1 + MAX_VERBATIM + 41);
        assert!(key.starts_with(&format!(":{a}%3A{b}%3Ac")));
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

    /// Checks that a store key split after its prefix is the whole key, in two pieces: verbatim, or, past
    /// `MAX_VERBATIM`, digested.
    #[test]
    fn a_key_in_two_parts_is_its_store_key() {
        let prefix = "rate_limit:emp:";
        for len in [0, 1, MAX_VERBATIM, MAX_VERBATIM + 1, 10_000] {
            let key = "k".repeat(len);
            let whole = StoreKey::of_str(prefix, &key);
            let parts = whole.parts();
            assert_eq!(parts.prefix, prefix);
            assert!(parts.is(whole.as_bytes()), "{len}");
            assert!(!parts.is(&whole.as_bytes()[1..]), "{len}");
            assert_eq!(parts.to_string(), *whole, "{len}");
            assert_eq!(parts.rest == key, len <= MAX_VERBATIM, "{len}");
        }
    }

    /// Checks that a store key splits where its prefix ends however it was built: inline, spilled to the heap while the
    /// prefix or the key was written, digested.
    #[test]
    fn a_key_knows_where_its_prefix_ends() {
        for prefix in ["", "p:", &"p".repeat(60)] {
            for key in ["", "1001", &"k".repeat(50), &"é".repeat(500)] {
                for built in [
                    StoreKey::new(prefix, format_args!("{key}")),
                    StoreKey::of_str(prefix, key),
                ] {
                    let parts = built.parts();
                    assert_eq!(parts.prefix, prefix);
                    assert_eq!(format!("{prefix}{}", parts.rest), *built);
                }
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
        let k = store_key(":", &"é".repeat(500));
        assert!(k.len() > 1 + MAX_VERBATIM && k.len() <= 1 + MAX_VERBATIM + 41);
        let k = store_key(":", &"é".repeat(64));
        assert_eq!(k, format!(":{}", "é".repeat(64)));
    }

    #[test]
    fn a_key_never_reaches_past_its_prefix() {
        // The collision a client could choose: a key that spells out another, nested, prefix.
        assert_eq!(store_key("rl:", &"daily:alice"), "rl:daily%3Aalice");
        assert_eq!(store_key("rl:daily:", &"alice"), "rl:daily:alice");
        // A prefix that does not end with `:` is marked where it ends.
        assert_eq!(store_key("rl", &"1001"), "rl|1001");
        assert_eq!(store_key("rl|", &"1001"), "rl||1001");
        assert_eq!(store_key("", &"a|b"), "|a%7Cb");
        assert_eq!(StoreKey::of_str("rl", "1001").into_string(), "rl|1001");
        assert_eq!(StoreKey::rest_of("rl", format_args!("a:b")), "|a%3Ab");
        assert_eq!(StoreKey::rest_of("rl:", format_args!("a:b")), "a%3Ab");
    }

    /// Returns where a store key's prefix ends, read back from its text.
    fn prefix_of(key: &str) -> &str {
        split(key).prefix
    }

    use proptest::prelude::*;

    fn text(long: usize) -> impl Strategy<Value = String> {
        prop_oneof![
            6 => "[a:|%]{0,5}",
            1 => "[%3A7C:|]{0,8}",
            1 => prop::collection::vec(prop::sample::select(vec!['a', ':', '|', '%']), long..long + 20)
                .prop_map(|chars| chars.into_iter().collect()),
        ]
    }

    proptest! {
        /// Checks that distinct (prefix, key) pairs are distinct store keys, whatever either holds, nested prefixes and
        /// bounded keys included; and every store key tells its prefix back.
        #[test]
        fn store_keys_are_injective_across_prefixes(
            pairs in prop::collection::vec((text(20), text(MAX_VERBATIM / 2)), 2..64),
        ) {
            let mut seen = std::collections::HashMap::new();
            for (prefix, key) in pairs {
                let whole = store_key(&prefix, &key);
                prop_assert_eq!(prefix_of(&whole), &prefix[..], "{:?}", whole);
                prop_assert_eq!(&StoreKey::of_str(&prefix, &key).into_string(), &whole);
                if let Some(other) = seen.insert(whole.clone(), (prefix.clone(), key.clone())) {
                    prop_assert_eq!(other, (prefix, key), "two pairs, one store key {:?}", whole);
                }
            }
        }
    }
}
