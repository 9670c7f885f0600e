//! How the sliding log's members are named: after the call's nonce.

use redis::ToRedisArgs;

/// A nonce as the script names members with it: 16 hex digits (or none), on the stack.
pub(crate) struct NonceText {
    digits: [u8; 16],
    len: usize,
}

impl NonceText {
    pub(super) const EMPTY: NonceText = NonceText {
        digits: [0; 16],
        len: 0,
    };

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever written.
        std::str::from_utf8(&self.digits[..self.len]).unwrap_or_default()
    }

    /// Returns the digits alone: the script names the call's member after them.
    pub(super) fn digits(&self) -> MemberText {
        self.member_text(16)
    }

    fn member_text(&self, len: usize) -> MemberText {
        MemberText {
            text: self.digits,
            len,
        }
    }
}

/// A call's nonce as an argument, on the stack.
pub(super) struct MemberText {
    text: [u8; 16],
    len: usize,
}

impl ToRedisArgs for MemberText {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg(&self.text[..self.len]);
    }
}

/// Writes `nonce` as the script names members with it: 16 hex digits.
pub(crate) fn nonce_text(nonce: u64) -> NonceText {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = std::array::from_fn(|i| HEX[(nonce >> (60 - 4 * i)) as usize & 0xf]);
    NonceText { digits, len: 16 }
}

/// Returns a number no other call of this process (nor, but by a chance of 2^-64, of another) is given: it names the
/// call's sliding-log members, so that they can be given back.
pub(crate) fn nonce() -> u64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        static NEXT: Cell<u64> = Cell::new(RandomState::new().hash_one(std::thread::current().id()));
    }
    // A bijection of a counter (SplitMix64's finaliser): distinct counters, distinct nonces.
    let mut z = NEXT.with(|next| {
        let n = next.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        next.set(n);
        n
    });
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
