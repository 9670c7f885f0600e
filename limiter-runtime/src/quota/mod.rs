//! The quotas a response advertises, and what each limit's policy is called there.

mod policy;

pub(crate) use self::policy::PolicyName;
