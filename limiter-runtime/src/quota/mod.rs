//! The quotas a response advertises, and what each limit's policy is called there.
//!
//! A decision is advertised when its limit applies to the call and it was counted: not a shadow limit's (it
//! never refuses), not one the call skipped (`skip_if`), and not one the failure policy made without a count
//! (`on_error = open | closed` while Redis fails: the count is unknown). A decision over this node's share
//! (`on_error = local`) was counted, and is advertised.

mod policy;

pub(crate) use self::policy::PolicyName;
use crate::{Decision, OnError, Rule};

/// Whether a limit applies to a call: not a shadow limit (it never refuses), not one the call skips.
#[inline]
pub(crate) fn applies(rule: &Rule, skipped: bool) -> bool {
    !skipped && !rule.shadow_value()
}

/// Whether a decision of a limit that applies to the call is advertised: unless the failure policy made it
/// without a count (`on_error` other than `local` while Redis fails).
#[inline]
pub(crate) fn counted(on_error: OnError, decision: &Decision) -> bool {
    !decision.degraded || on_error == OnError::Local
}
