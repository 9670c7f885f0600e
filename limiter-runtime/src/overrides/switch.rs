//! The switch: limiting is on while neither this runtime's own switch nor the one of every runtime is off.

use std::sync::atomic::{AtomicU8, Ordering};

/// Set while this runtime's own switch is off (`Limiter::set_enabled_here`).
const OFF_HERE: u8 = 1;
/// Set while the switch of every runtime sharing the Redis is off (`Limiter::set_enabled`).
const OFF_EVERYWHERE: u8 = 2;

/// Both switches in one atomic: a decision reads one word to know whether it limits.
#[derive(Debug, Default)]
pub(crate) struct Switch(AtomicU8);

impl Switch {
    /// Returns whether limiting is on: both switches are.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed) == 0
    }

    /// Returns whether this runtime's own switch is on: while it is off, the runtime sends Redis nothing at all.
    pub(crate) fn is_on_here(&self) -> bool {
        self.0.load(Ordering::Relaxed) & OFF_HERE == 0
    }

    pub(crate) fn turn_here(&self, on: bool) {
        self.turn(OFF_HERE, on);
    }

    pub(crate) fn turn_everywhere(&self, on: bool) {
        self.turn(OFF_EVERYWHERE, on);
    }

    fn turn(&self, bit: u8, on: bool) {
        if on {
            self.0.fetch_and(!bit, Ordering::Relaxed);
        } else {
            self.0.fetch_or(bit, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_switch_turns_limiting_off_and_both_must_be_on() {
        let switch = Switch::default();
        assert!(switch.is_on());
        switch.turn_everywhere(false);
        assert!(!switch.is_on() && switch.is_on_here());
        switch.turn_here(false);
        switch.turn_everywhere(true);
        assert!(!switch.is_on() && !switch.is_on_here());
        switch.turn_here(true);
        assert!(switch.is_on());
    }
}
