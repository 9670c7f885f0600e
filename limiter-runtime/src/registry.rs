//! The registry of every `#[rate_limit]` in the binary, filled before `main` runs (a distributed slice:
//! `inventory`), so that the policies the functions name are known at start: checked against the limits file,
//! and listed to the operators before their first call.

use crate::Rule;

/// One annotated function, as the registry of every `#[rate_limit]` in the binary lists it (filled before
/// `main` runs).
#[derive(Debug)]
pub struct Registered {
    /// The module the function is in.
    pub(crate) module: &'static str,
    /// The function's path.
    pub(crate) function: &'static str,
    /// Each of its limits: the policy it names and its prefix, as written, whether it is the limit of calls
    /// in flight beside a rate, and the plan every call names, if one literal does (`plan = "pro"`).
    pub(crate) limits: &'static [RegisteredLimit],
}

/// One limit of a [`Registered`] function: its policy, prefix, whether it is beside a rate, its literal plan.
pub type RegisteredLimit = (
    Option<&'static str>,
    Option<&'static str>,
    bool,
    Option<&'static str>,
);

impl Registered {
    /// Lists the function `function` of `module`, its limits as written: what each expansion submits.
    pub const fn new(
        module: &'static str,
        function: &'static str,
        limits: &'static [RegisteredLimit],
    ) -> Registered {
        Registered {
            module,
            function,
            limits,
        }
    }

    /// Returns its limits as rules that say what the attribute's do of their policy and prefix.
    pub(crate) fn rules(&self) -> impl Iterator<Item = Rule> + '_ {
        self.limits.iter().map(|&(policy, prefix, beside, _)| {
            let rule = Rule::from_attribute(prefix, None, policy);
            match beside {
                true => rule.beside_rate(),
                false => rule,
            }
        })
    }
}

inventory::collect!(Registered);

pub use inventory;

/// Returns every annotated function of the binary, each once.
pub(crate) fn registered() -> impl Iterator<Item = &'static Registered> {
    inventory::iter::<Registered>.into_iter()
}
