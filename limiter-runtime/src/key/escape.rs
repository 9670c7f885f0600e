//! The escape that keeps keys apart: `%`, `:` and `|` written as `%25`, `%3A` and `%7C`, every other character
//! as it is. Escaped text holds no `:` and no `|`, and tells the original back.
//!
//! Two uses, one escape: a store key's key (so that no key reaches past its prefix, see [`StoreKey`]), and each
//! part of a key list (so that the parts' own colons never read as the list's).
//!
//! [`StoreKey`]: super::StoreKey

use std::fmt::{self, Write as _};

/// The characters escaped, and what each is written as.
const ESCAPES: [(u8, &str); 3] = [(b'%', "%25"), (b':', "%3A"), (b'|', "%7C")];

/// Returns whether `text` is its own escape: it holds none of the escaped characters.
#[inline]
pub(crate) fn is_plain(text: &str) -> bool {
    !text.bytes().any(|b| matches!(b, b'%' | b':' | b'|'))
}

/// Returns `text`, escaped, told back: what was written through [`Escape`].
pub(crate) fn unescaped(text: &str) -> String {
    let mut out = text.to_owned();
    // `%` last, so that an escaped `%` followed by `3A` stays what it was.
    for (byte, escape) in ESCAPES.iter().rev() {
        out = out.replace(escape, &char::from(*byte).to_string());
    }
    out
}

/// Writes `text` into `out`, escaped.
pub(crate) fn escaped(out: &mut dyn fmt::Write, text: fmt::Arguments<'_>) -> fmt::Result {
    Escape(out).write_fmt(text)
}

/// A writer that escapes what is written through it.
pub(crate) struct Escape<'a>(pub(crate) &'a mut dyn fmt::Write);

impl fmt::Write for Escape<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut rest = text;
        while let Some(at) = rest.find(['%', ':', '|']) {
            self.0.write_str(&rest[..at])?;
            let byte = rest.as_bytes()[at];
            let (_, escape) = ESCAPES
                .iter()
                .find(|(b, _)| *b == byte)
                .expect("an escaped byte");
            self.0.write_str(escape)?;
            rest = &rest[at + 1..];
        }
        self.0.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escape(text: &str) -> String {
        let mut out = String::new();
        escaped(&mut out, format_args!("{text}")).unwrap();
        out
    }

    #[test]
    fn only_the_three_characters_change() {
        assert_eq!(escape("2001:db8::1"), "2001%3Adb8%3A%3A1");
        assert_eq!(escape("a|b%c"), "a%7Cb%25c");
        assert_eq!(escape("plain {tag} é/ü\n"), "plain {tag} é/ü\n");
        assert!(is_plain("1001") && !is_plain("a:b") && !is_plain("|") && !is_plain("%"));
    }

    #[test]
    fn an_escape_tells_its_text_back() {
        let unescape = unescaped;
        for text in ["", "%3A", "%%::||", "a:%7C|b", "%253A"] {
            let escaped = escape(text);
            assert!(is_plain(&escaped.replace('%', "")), "{escaped}");
            assert_eq!(unescape(&escaped), text);
        }
    }
}
