//! Outbound quotas: a fleet that calls an upstream with a limit of its own (an LLM provider's requests and
//! tokens a minute, a partner's 10 calls a second) waits its turn together, and learns from the answers.
//!
//! [`Limiter::turn`](crate::Limiter::turn) (in `limiter/turn.rs`) waits for the call's slot, fleet-wide
//! (Redis hands the slots out in the order calls reach it), up to the rule's `max_wait`; within a node, the
//! slots that come go to the most important call waiting first ([`mod@line`]). A caller that gives up (its
//! future dropped) gives its slot back. A key an upstream paused ([`upstream`]: what its answer asks) hands
//! its line's slots out after the pause in Redis, and, on every node that heard of the pause, no call whose
//! slot it covers goes; the answers also move the rate the fleet learned ([`rate`]), which spaces the
//! slots. A slot is Redis's time, read through each answer's lag ([`lag`]). See
//! [`guide::outbound`](crate::guide::outbound).

pub(crate) mod lag;
pub(crate) mod line;
pub(crate) mod rate;
pub(crate) mod upstream;

pub(crate) use self::line::Lines;
