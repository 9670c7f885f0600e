//! What a limit is called in quota headers and [`RateLimited::policy`](crate::RateLimited::policy): its
//! `name`, else a name derived from its prefix that does not show it.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

/// How many hex digits of the prefix's SHA-1 a default name keeps: 32 bits, so two limits on one response
/// (which have distinct prefixes) share a name about once in four billion.
const DIGITS: usize = 8;

/// What a default name starts with.
const LEAD: &[u8; 6] = b"limit-";

/// A limit's policy name: the rule's `name`, or by default `limit-` and the first 8 hex digits of the SHA-1 of
/// its prefix (`limit-d357682f` for `rate_limit:emp:`). The default is stable (the same prefix has the same name in every process
/// and version), distinct for the distinct prefixes of one call's limits, and it does not show the prefix:
/// the store's key namespace stays private. The digest is computed when the name is first read (a rejection
/// names its limit, but few are asked its name), and kept inline, so that naming a rejection allocates
/// nothing.
#[derive(Clone)]
pub(crate) enum PolicyName {
    Named(Cow<'static, str>),
    /// Derived from this prefix, when first read.
    Derived {
        prefix: Cow<'static, str>,
        name: OnceLock<[u8; LEAD.len() + DIGITS]>,
    },
}

impl PolicyName {
    /// Creates the name `name`, as set.
    pub(crate) fn named(name: Cow<'static, str>) -> PolicyName {
        PolicyName::Named(name)
    }

    /// Creates the default name of a limit under `prefix`, derived when first read.
    pub(crate) fn derived(prefix: Cow<'static, str>) -> PolicyName {
        PolicyName::Derived {
            prefix,
            name: OnceLock::new(),
        }
    }
}

/// Returns the default name of a limit under `prefix`.
fn digest_name(prefix: &str) -> [u8; LEAD.len() + DIGITS] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = sha1_smol::Sha1::from(prefix).digest().bytes();
    let mut name = [0; LEAD.len() + DIGITS];
    name[..LEAD.len()].copy_from_slice(LEAD);
    for (i, byte) in digest.iter().take(DIGITS / 2).enumerate() {
        name[LEAD.len() + 2 * i] = HEX[usize::from(byte >> 4)];
        name[LEAD.len() + 2 * i + 1] = HEX[usize::from(byte & 0xf)];
    }
    name
}

impl Deref for PolicyName {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            PolicyName::Named(name) => name,
            PolicyName::Derived { prefix, name } => {
                let name = name.get_or_init(|| digest_name(prefix));
                // ASCII, written above: always UTF-8.
                std::str::from_utf8(name).unwrap_or_default()
            }
        }
    }
}

impl PartialEq for PolicyName {
    fn eq(&self, other: &PolicyName) -> bool {
        match (self, other) {
            (PolicyName::Derived { prefix: a, .. }, PolicyName::Derived { prefix: b, .. }) => {
                a == b
            }
            _ => **self == **other,
        }
    }
}

impl Eq for PolicyName {}

impl fmt::Debug for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// What set a limit's values beyond its rule, for one call: the plan the call was on, and whether a run-time
/// override set any of them. What a refusal, the quota fields, the metrics and traces name beside the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The plan's name, if the call was on one of its rule's plans.
    pub(crate) plan: Option<std::sync::Arc<str>>,
    /// Whether an override (of the key, a pattern of keys or the policy) set any of its values.
    pub(crate) overridden: bool,
}

impl Applied {
    /// Returns the plan's name, `""` when none applied: the metrics' `plan` label.
    pub(crate) fn plan_label(&self) -> &str {
        self.plan.as_deref().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that the default is the digest of the prefix: fixed for a prefix (these values are the SHA-1 of the text,
    /// as any implementation computes it), distinct for distinct prefixes, and without the prefix in it.
    #[test]
    fn the_default_name_is_stable_distinct_and_hides_the_prefix() {
        let name = |prefix: &str| PolicyName::derived(Cow::Owned(prefix.to_owned()));
        assert_eq!(&*name("rate_limit:emp:"), "limit-d357682f");
        assert_eq!(&*name(""), "limit-da39a3ee");
        assert_ne!(name("burst:"), name("quota:"));
        assert!(!name("rate_limit:emp:").contains("emp"));
        assert_eq!(&*PolicyName::named(Cow::Borrowed("employees")), "employees");
    }
}
