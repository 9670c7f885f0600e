//! Key writing and bounding on arbitrary lists of parts: distinct lists are distinct store keys, escaped and
//! bounded as the attribute writes them, and no key is longer than the bound.
#![no_main]

use std::fmt;

use libfuzzer_sys::fuzz_target;
use limiter_runtime::__private::{store_key, Part};

/// A list of parts as `key = (a, b, ...)` writes it.
struct List<'a>(&'a [String]);

impl fmt::Display for List<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{}", Part(part))?;
        }
        Ok(())
    }
}

fuzz_target!(|lists: (Vec<String>, Vec<String>)| {
    let (a, b) = lists;
    if a.len() < 2 || b.len() < 2 {
        return;
    }
    let prefix = "fuzz:";
    let (key_a, key_b) = (
        store_key(prefix, format_args!("{}", List(&a))),
        store_key(prefix, format_args!("{}", List(&b))),
    );
    for key in [&key_a, &key_b] {
        assert!(key.len() <= prefix.len() + 128 + 41, "unbounded: {} bytes", key.len());
    }
    if a != b {
        assert_ne!(key_a, key_b, "{a:?} and {b:?} share a key");
    }
});
