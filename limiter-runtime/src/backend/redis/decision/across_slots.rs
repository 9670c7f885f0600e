//! A call whose limits a cluster's slots split (keys under different hash tags): decided one slot's limits at
//! a time, all or nothing, within the deadline, and reconciled as a late answer is when it runs past it.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use super::round_trip::{asked, decided_of, finish_for_dropped, Exchange, Failed, Late};
use crate::algorithm::Outcome;
use crate::backend::redis::wire::script::{self, nonce, BatchCall, GiveBack, Outcomes};
use crate::backend::redis::RedisBackend;
use crate::call::{Call, CallLimit, OneOrMany, Ruling};
use crate::error::BackendError;

impl RedisBackend {
    /// Decides `call`'s limits one slot's `groups` at a time, giving back what the admitting slots charged
    /// when another's limits deny the call. The whole exchange runs on past the deadline, and is reconciled
    /// as a late answer is.
    pub(in crate::backend::redis) async fn ask_across_slots(
        self: &Arc<Self>,
        call: &Call<'_>,
        groups: Vec<Vec<usize>>,
    ) -> Result<Ruling, Failed> {
        let (redis, owned) = (Arc::clone(self), call.detached());
        let exchange = async move {
            let asked = asked(&owned);
            let mut outcomes: Vec<Outcome> = Vec::with_capacity(asked.len());
            outcomes.resize(asked.len(), Outcome::admit(0));
            let (mut now, mut admitted, mut charged) = (0, true, Vec::new());
            let nonce = nonce();
            for group in &groups {
                let limits: Vec<&CallLimit<'_>> = group.iter().map(|&j| asked[j]).collect();
                let costs: Vec<u64> = limits.iter().map(|l| l.terms.cost).collect();
                let calls = [BatchCall {
                    nonce,
                    costs: &costs,
                }];
                let (script, command) = script::decide_command(&limits, &calls, redis.test_now());
                let reply = script::send(script, redis.connection()?, command).await?;
                let (each, at) = script::read_decided(&reply, &limits, &calls)?;
                now = now.max(at);
                for (&j, outcome) in group.iter().zip(each[0].outcomes.iter()) {
                    outcomes[j] = *outcome;
                }
                admitted &= each[0].admitted;
                if each[0].admitted {
                    charged.push(group.clone());
                }
            }
            if !admitted {
                // The slots that admitted the call give back what it charged them, before it returns.
                let mut connection = redis.connection()?;
                for group in charged {
                    let given: Vec<GiveBack<'_>> = group
                        .iter()
                        .filter(|&&j| outcomes[j].allowed)
                        .map(|&j| GiveBack::of(asked[j], &outcomes[j].receipt, asked[j].terms.cost))
                        .collect();
                    script::give_back(&mut connection, &given, redis.test_now()).await?;
                    for &j in &group {
                        if outcomes[j].allowed {
                            outcomes[j].remaining += asked[j].terms.cost;
                        }
                    }
                }
            }
            let outcome = Outcomes {
                admitted,
                outcomes: OneOrMany::Many(outcomes),
            };
            let costs: Vec<u64> = asked.iter().map(|limit| limit.terms.cost).collect();
            Ok::<_, BackendError>((decided_of(&owned, &costs, &outcome, now), owned))
        };
        let mut flight = Exchanging {
            exchange: Some(Box::pin(exchange)),
            redis: self,
        };
        let timer = tokio::time::sleep(self.deadline);
        tokio::pin!(timer);
        let answered = std::future::poll_fn(|cx| {
            let exchange = flight.exchange.as_mut().expect("until answered or late");
            if let Poll::Ready(done) = exchange.as_mut().poll(cx) {
                return Poll::Ready(Some(done));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        let exchange = flight.exchange.take().expect("until answered or late");
        match answered {
            Some(done) => Ok(done?.0),
            // Past the deadline: the exchange runs on, to be reconciled with the decision made meanwhile.
            None => Err(Failed {
                cause: BackendError::Timeout(self.deadline),
                late: Some(Late::Exchange(exchange)),
            }),
        }
    }
}

/// A call's exchange across slots on its way: a caller that goes away before it is done (a client gone, a
/// `timeout` around the call) hands it to a task that finishes it and gives back what the slots charged,
/// since no one will act on it.
struct Exchanging<'a> {
    exchange: Option<Exchange>,
    redis: &'a Arc<RedisBackend>,
}

impl Drop for Exchanging<'_> {
    fn drop(&mut self) {
        let Some(exchange) = self.exchange.take() else {
            return;
        };
        let redis = Arc::clone(self.redis);
        finish_for_dropped(async move { redis.reconcile_exchange(exchange, true).await });
    }
}
