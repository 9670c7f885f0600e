//! Long keys: what follows a prefix, past [`MAX_VERBATIM`] bytes, is stored as its first part, `#` and a
//! digest of the whole; and that form, as the views list it, names the same store key again.

use std::fmt::Write as _;

use super::{escaped, InlineKey, Repr, StoreKey, MARK, MAX_VERBATIM};

impl StoreKey {
    /// Returns the store key an operator names with `key` (a ban, an unban, an inspection): `key`'s own; or, when
    /// `key` is a long key as the views list it (what its store key keeps of it, `#` and the digest), that
    /// store key, so that a key listed can be acted on as listed.
    pub(crate) fn named(prefix: &str, key: &str) -> StoreKey {
        let mut written = String::new();
        let _ = escaped(&mut written, format_args!("{key}"));
        if !is_digested(&written) {
            return StoreKey::of_str(prefix, key);
        }
        let mut out = StoreKey::EMPTY;
        let _ = out.write_str(prefix);
        out.end_prefix();
        if !prefix.ends_with(':') {
            let _ = out.write_str(MARK);
        }
        let _ = out.write_str(&written);
        out
    }

    /// Returns this key, with what follows its prefix digested if it is too long.
    pub(super) fn bounded(self) -> StoreKey {
        let prefix = self.prefix_len();
        if self.len() - prefix <= MAX_VERBATIM {
            return self;
        }
        let mut key = self.into_string();
        digest_tail(&mut key, prefix);
        InlineKey(Repr::Heap { key, prefix })
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
    // Never inside an escape (`%` and two more bytes): what is kept reads back as the key's first part.
    if let Some(at) = out.as_bytes()[cut - 2..cut].iter().position(|&b| b == b'%') {
        cut = cut - 2 + at;
    }
    out.truncate(cut);
    out.push('#');
    out.push_str(&digest);
    debug_assert!(out.len() - start > MAX_VERBATIM);
}

/// Returns whether `rest` (what follows a prefix, escaped) is a long key's digested form: at most [`MAX_VERBATIM`]
/// bytes, `#`, and a SHA-1 in hex, longer than any verbatim key.
fn is_digested(rest: &str) -> bool {
    let Some((kept, digest)) = rest.rsplit_once('#') else {
        return false;
    };
    rest.len() > MAX_VERBATIM
        && kept.len() <= MAX_VERBATIM
        && digest.len() == 40
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{split, unescaped};

    /// Checks that a long key as listed (its store key's rest, told back) names that store key again, even when the cut
    /// fell beside an escape; a short key, or one that only looks digested, names its own.
    #[test]
    fn a_long_key_as_listed_names_its_store_key() {
        for prefix in ["p:", "p"] {
            for key in [
                "k".repeat(500),
                format!("{}:{}", "k".repeat(MAX_VERBATIM - 2), "x".repeat(50)),
                format!("{}:{}", "k".repeat(MAX_VERBATIM - 1), "x".repeat(50)),
                ":|%".repeat(100),
            ] {
                let stored = StoreKey::of_str(prefix, &key);
                let listed = unescaped(split(&stored).rest);
                assert_ne!(listed, key);
                assert_eq!(
                    StoreKey::named(prefix, &listed).as_str(),
                    stored.as_str(),
                    "{key}"
                );
            }
            for key in ["short", &format!("{}#{}", "k".repeat(10), "a".repeat(40))] {
                assert_eq!(
                    StoreKey::named(prefix, key).as_str(),
                    StoreKey::of_str(prefix, key).as_str()
                );
            }
        }
    }
}
