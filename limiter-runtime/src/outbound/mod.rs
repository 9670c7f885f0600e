//! Outbound quotas: a fleet that calls an upstream with a limit of its own (an LLM provider's requests and
//! tokens a minute, a partner's 10 calls a second) waits its turn together, and learns from the answers.
//!
//! [`Limiter::turn`](crate::Limiter::turn) (in `limiter/turn.rs`) waits for the call's slot, fleet-wide
//! (Redis hands the slots out in the order calls reach it), up to the rule's `max_wait`; within a node, the
//! slots that come go to the most important call waiting first ([`mod@line`]). A caller that gives up (its
//! future dropped) gives its slot back. A key an upstream paused ([`upstream`]: what its answer asks) is
//! refused in Redis, and, on every node that heard of the pause, no call waiting for its turn goes before
//! the pause ends. See [`guide::outbound`](crate::guide::outbound).

pub(crate) mod lag;
pub(crate) mod line;
pub(crate) mod upstream;

pub(crate) use self::line::Lines;
