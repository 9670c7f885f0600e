//! Where a limit's block lives in Redis: a key of its own, beside the limit's, in the same Cluster slot, so
//! that one script call reads and writes both (see `src/penalty.rs` for what it holds).

use std::sync::LazyLock;

/// What every block key holds: a `%` followed by no escape, which no store key holds after its prefix (a
/// key's `%` is written `%25`). What follows it says which of the three forms below the key has, so that no
/// two store keys share a block key, whatever their prefixes.
pub(crate) const BLOCK_SUFFIX: &str = "%block";

/// Returns the key of the block of the limit whose store key is `key`, in `key`'s Cluster slot:
/// - `key%block:t` when `key` has a hash tag (the same tag);
/// - `{key}%block` when it has none (its whole name as the tag: its slot);
/// - `{<n>}key%block:s` when it holds a `}` but no tag, which braces cannot enclose (or is empty): `n`, a
///   number whose slot is `key`'s.
pub(crate) fn block_key(key: &str) -> String {
    if hash_tag(key.as_bytes()).is_some() {
        format!("{key}{BLOCK_SUFFIX}:t")
    } else if !key.is_empty() && !key.contains('}') {
        format!("{{{key}}}{BLOCK_SUFFIX}")
    } else {
        let tag = &SLOT_TAGS[usize::from(slot(key.as_bytes()))];
        format!("{{{tag}}}{key}{BLOCK_SUFFIX}:s")
    }
}

/// Returns the store key whose block key `block` is, if it is one.
pub(crate) fn blocked_key(block: &str) -> Option<String> {
    let key = if let Some(key) = block
        .strip_suffix(":t")
        .and_then(|b| b.strip_suffix(BLOCK_SUFFIX))
    {
        key
    } else if let Some(tagged) = block
        .strip_suffix(":s")
        .and_then(|b| b.strip_suffix(BLOCK_SUFFIX))
    {
        tagged.strip_prefix('{')?.split_once('}')?.1
    } else {
        block
            .strip_suffix(BLOCK_SUFFIX)?
            .strip_prefix('{')?
            .strip_suffix('}')?
    };
    (block_key(key) == block).then(|| key.to_owned())
}

/// Returns the part of `key` Redis hashes to find its slot: its hash tag (between its first `{` and the first `}` after
/// it, if not empty), if it has one.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let len = key[open + 1..].iter().position(|&b| b == b'}')?;
    (len > 0).then(|| &key[open + 1..open + 1 + len])
}

/// Computes `key`'s Cluster slot: CRC16 (XMODEM) of its hash tag, or of itself, modulo 16384.
fn slot(key: &[u8]) -> u16 {
    let hashed = hash_tag(key).unwrap_or(key);
    let mut crc: u16 = 0;
    for &byte in hashed {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// For each slot, the shortest decimal number whose slot it is: a tag that puts a key in it.
static SLOT_TAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut tags = vec![String::new(); 16384];
    let mut left = tags.len();
    let mut n: u64 = 0;
    while left > 0 {
        let text = n.to_string();
        let at = usize::from(slot(text.as_bytes()));
        if tags[at].is_empty() {
            tags[at] = text;
            left -= 1;
        }
        n += 1;
    }
    tags
});

#[cfg(test)]
mod tests {
    use super::*;
    use redis::cluster_routing::Slot;

    /// Checks that a block key is in its limit's slot, whatever the key holds, and is never a store key.
    #[test]
    fn a_block_key_shares_its_limits_slot() {
        for key in [
            "rate_limit:emp:1001",
            "rl:{tenant}:alice",
            "rl:a}b",
            "rl:}{",
            "rl:{}x}",
            "rl:{",
            "",
            "login:%7Bx%7D",
        ] {
            let block = block_key(key);
            assert!(block.contains(BLOCK_SUFFIX), "{block}");
            assert_eq!(
                Slot::for_key(&block),
                Slot::for_key(key),
                "{key} -> {block}"
            );
            assert_eq!(slot(key.as_bytes()), slot(block.as_bytes()), "{key}");
            assert_eq!(blocked_key(&block).as_deref(), Some(key), "{block}");
        }
        assert_eq!(block_key("rl:x"), "{rl:x}%block");
        assert_eq!(block_key("rl:{t}x"), "rl:{t}x%block:t");
        // Store keys that one form could make another's block key of: each has its own.
        for (a, b) in [("{rl:x}", "rl:x"), ("{1}rl:k}", "rl:k}")] {
            assert_ne!(block_key(a), block_key(b));
        }
        // The CRC is Redis's: known slots (`CLUSTER KEYSLOT`).
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
    }
}
