//! What operators do to a key across the fleet: ban it, lift its block, list the blocks in force (see
//! [`Penalty`]).

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use super::Limiter;
use crate::key::KeyRef;
use crate::overrides::Change;
use crate::policy::PolicyName;
use crate::{Ban, Error, Penalty, Rule};

impl Limiter {
    /// Bans `key` of `rule` for `length` (at least a millisecond), on every node: each refuses it at its next
    /// call, as blocked ([`Verdict::Blocked`](crate::Verdict::Blocked), `retry_after` the ban's remaining
    /// time), until the ban ends or is [lifted](Limiter::unban). Any rule: one with a [`Penalty`] reads its
    /// keys' blocks on every call (and the ban keeps the offences the penalty counts); one without starts
    /// reading them, on every node, while a ban is in force under its policy, and pays nothing for them
    /// otherwise. The ban is noted with the overrides before the block is written: another node reads the
    /// policy's blocks from the announcement on (milliseconds; a node started later, from the overrides it
    /// loads). A ban replaces a shorter block the key had: every node forgets what it was told of the key.
    ///
    /// The attribute's rules have no `Rule` to hand: [`policy`](Limiter::policy) finds one by name.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule, Verdict};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// let search = Rule::new().prefix("search:").max(100);
    /// limiter.ban(&search, "10.0.0.7", Duration::from_secs(3600)).await?;
    /// assert_eq!(limiter.check(&search, "10.0.0.7").await.verdict, Verdict::Blocked);
    /// assert!(limiter.unban(&search, "10.0.0.7").await?);
    /// assert!(limiter.check(&search, "10.0.0.7").await.allowed);
    /// # Ok(()) }
    /// ```
    pub async fn ban(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        length: Duration,
    ) -> Result<(), Error> {
        let rule = self.pipeline.defaults.resolved(rule);
        // At least a millisecond, as a penalty's block.
        let length = Penalty::fixed(length).first_micros();
        let penalty = match rule.penalty {
            Some(penalty) => penalty,
            None => {
                // Every node reads the policy's blocks before the block is written.
                let until = self.pipeline.clock.now_micros().saturating_add(length);
                let prefix = rule.prefix_value().to_owned();
                self.change(Change::Banning { prefix, until }).await?;
                Penalty::READS_BLOCKS
            }
        };
        let call = self.named(&rule, &key);
        self.pipeline
            .backend
            .operations()
            .ban(&call.limits()[0], length, &penalty)
            .await
    }

    /// Lifts the block of `key` of `rule` (a ban, or a penalty's block; its offences are forgiven too): every
    /// node admits it again at its next call, within a second (each forgets what Redis told it of the key
    /// when it hears of the unban). Whether the key had a block.
    pub async fn unban(&self, rule: &Rule, key: impl fmt::Display) -> Result<bool, Error> {
        let rule = self.pipeline.defaults.resolved(rule);
        let call = self.named(&rule, &key);
        self.pipeline
            .backend
            .operations()
            .unban(&call.limits()[0])
            .await
    }

    /// Finds the rule of the policy named (or prefixed) `policy`, as a node that decided calls of it holds it: this
    /// one, or, with Redis, another one (from the reports every node keeps there). How an operator reaches an
    /// attribute's limit, to [`ban`](Limiter::ban) or [`inspect`](Limiter::inspect) a key of it.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// limiter.check(&Rule::new().prefix("search:").policy("search").max(100), "10.0.0.7").await;
    /// let search = limiter.policy("search").await?;
    /// assert_eq!(limiter.check(&search, "10.0.0.7").await.remaining, 98); // the same limit
    /// assert!(limiter.policy("nothing").await.is_err());
    /// # Ok(()) }
    /// ```
    pub async fn policy(&self, policy: &str) -> Result<Rule, Error> {
        if let Some(rule) = self.pipeline.observers.watch.rule_of(policy) {
            return Ok(rule);
        }
        let reports = self.pipeline.backend.operations().reports().await?;
        crate::watch::rule_in(&reports, policy).ok_or_else(|| Error::UnknownPolicy {
            policy: policy.to_owned(),
        })
    }

    /// Lists the blocks in force under `policy` (its name or its prefix; every policy's for `""`), bans and
    /// penalties', each with its remaining time, longest first. With Redis, read from every master (a
    /// `SCAN` for block keys, then each read); in memory, this process's.
    pub async fn bans(&self, policy: &str) -> Result<Vec<Ban>, Error> {
        let (blocks, now) = self.pipeline.backend.operations().blocks().await?;
        let watch = &self.pipeline.observers.watch;
        let wanted = match policy {
            "" => None,
            policy => Some(
                watch
                    .rule_of(policy)
                    .map_or_else(|| policy.to_owned(), |rule| rule.prefix_value().to_owned()),
            ),
        };
        let mut bans: Vec<Ban> = blocks
            .into_iter()
            .filter_map(|(store_key, block)| {
                let remaining = block.remaining(now)?;
                let KeyRef { prefix, rest: key } = crate::key::split(&store_key);
                if wanted.as_deref().is_some_and(|wanted| wanted != prefix) {
                    return None;
                }
                let policy = match watch.rule_of(prefix) {
                    Some(rule) => rule.policy_name().to_string(),
                    None => PolicyName::derived(Cow::Owned(prefix.to_owned())).to_string(),
                };
                Some(Ban {
                    policy,
                    prefix: prefix.to_owned(),
                    key: crate::key::unescaped(key),
                    remaining: Duration::from_micros(remaining),
                    banned: block.banned,
                    paused: block.upstream,
                    offences: block.offences,
                })
            })
            .collect();
        bans.sort_by(|a, b| {
            b.remaining
                .cmp(&a.remaining)
                .then_with(|| a.key.cmp(&b.key))
        });
        Ok(bans)
    }
}
