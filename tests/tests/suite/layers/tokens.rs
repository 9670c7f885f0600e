//! Tokens of Rust source: what the reader of the runtime needs of them, comments dropped, strings read whole.

/// A token of Rust source: what the reader needs of it. Comments are dropped; a literal keeps only a string's
/// text (a `#[path = ".."]` needs it).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    /// A word: an identifier or a keyword (`r#type` is `type`). A `$` is dropped: `$crate` is `crate`. A byte
    /// or C string's prefix is a word of its own (`b"x"` is `b` and `"x"`).
    Word(String),
    /// Punctuation: `::`, `->` and `=>` as one token, any other character alone.
    Punct(String),
    /// A string literal's text (escapes left as written).
    Str(String),
    /// Any other literal (a number, a character), or a lifetime.
    Other,
}

/// A token and the line it starts on (from 1).
#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: usize,
}

impl Token {
    /// Whether this is the word `word`.
    pub(super) fn is_word(&self, word: &str) -> bool {
        matches!(&self.tok, Tok::Word(w) if w == word)
    }

    /// Whether this is the punctuation `punct`.
    pub(super) fn is(&self, punct: &str) -> bool {
        matches!(&self.tok, Tok::Punct(p) if p == punct)
    }

    /// The word this is, if it is one.
    pub(super) fn word(&self) -> Option<&str> {
        match &self.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }
}

/// Splits `text` into tokens: comments (nested block comments too, doc comments alike) dropped, strings (raw,
/// byte and C strings too) and characters read whole, lifetimes told from characters.
pub(super) fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let (c, start_line) = (chars[i], line);
        let mut push = |tok| {
            out.push(Token {
                tok,
                line: start_line,
            })
        };
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                } else if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let (text, next, lines) = quoted(&chars, i + 1);
            push(Tok::Str(text));
            (i, line) = (next, line + lines);
        } else if c == '\'' {
            if at(i + 1) == '\\' || (at(i + 2) == '\'' && at(i + 1) != '\'') {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            } else {
                i += 1;
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
            }
            push(Tok::Other);
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (word_char(chars[i]) || (chars[i] == '.' && at(i + 1).is_ascii_digit()))
            {
                i += 1;
            }
            push(Tok::Other);
        } else if word_char(c) {
            let start = i;
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '#' | '"'))) {
                let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
                let open = i + hashes + 1;
                let mut end = open;
                while end < chars.len()
                    && !(chars[end] == '"' && (1..=hashes).all(|k| at(end + k) == '#'))
                {
                    end += 1;
                }
                let text: String = chars[open..end.min(chars.len())].iter().collect();
                line += text.matches('\n').count();
                push(Tok::Str(text));
                i = end + 1 + hashes;
            } else if word == "r" && at(i) == '#' && word_char(at(i + 1)) {
                let start = i + 1;
                i = start;
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
                push(Tok::Word(chars[start..i].iter().collect()));
            } else {
                push(Tok::Word(word));
            }
        } else if c == '$' {
            i += 1;
        } else {
            let pair: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if matches!(pair.as_str(), "::" | "->" | "=>") {
                push(Tok::Punct(pair));
                i += 2;
            } else {
                push(Tok::Punct(c.to_string()));
                i += 1;
            }
        }
    }
    out
}

/// A string's text from `start` (after its opening quote) to its closing one: the text, the index after the
/// closing quote, and how many lines it spans.
fn quoted(chars: &[char], start: usize) -> (String, usize, usize) {
    let mut i = start;
    while i < chars.len() && chars[i] != '"' {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    let text: String = chars[start..i.min(chars.len())].iter().collect();
    let lines = text.matches('\n').count();
    (text, i + 1, lines)
}
