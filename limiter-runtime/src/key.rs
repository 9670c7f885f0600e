//! Store keys: `prefix` + key, bounded in length, distinct for distinct keys.

use std::fmt::{self, Write as _};

/// Keys longer than this (in bytes, after the prefix) are stored as a truncated copy followed by a digest.
pub(crate) const MAX_VERBATIM: usize = 128;

/// Writes `prefix` and `key` into one string, the store key of a limit.
///
/// A key of at most [`MAX_VERBATIM`] bytes is kept verbatim (any content: spaces, braces, newlines); a longer
/// one becomes its first (up to) `MAX_VERBATIM` bytes, `#`, and the SHA-1 of the whole key, so at most
/// `MAX_VERBATIM + 41` bytes. The two forms never meet (a digested key is always longer than
/// `MAX_VERBATIM`), so distinct keys never share a bucket.
pub(crate) fn store_key(prefix: &str, key: &dyn fmt::Display) -> String {
    let mut out = String::with_capacity(prefix.len() + 32);
    out.push_str(prefix);
    // Writing into a String cannot fail; a Display impl that reports an error leaves what it wrote.
    let _ = write!(out, "{key}");
    if out.len() - prefix.len() > MAX_VERBATIM {
        digest_tail(&mut out, prefix.len());
    }
    out
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

    #[test]
    fn short_keys_are_verbatim() {
        assert_eq!(store_key("p:", &"a b{c}\n"), "p:a b{c}\n");
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
    }
}
