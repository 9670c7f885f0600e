//! Decisions made at once take part in Tokio's cooperative budget.
//!
//! A decision this process makes by itself (in memory, or a denial the deny cache answers) is complete on its
//! first poll, so a task calling in a loop would never yield: the tasks beside it on its worker, the Redis
//! connection's among them, would not be polled, and calls waiting on Redis would miss their deadline. Handed
//! over through [`Now`], such a decision spends one unit of the task's budget, as a read from a socket does,
//! and once the budget is spent the task yields first. Outside a Tokio runtime, there is no budget to spend.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// A result decided at once, handed over once the task's budget allows.
#[derive(Debug)]
pub struct Now<T>(Option<T>);

/// Returns `result`, decided at once.
#[inline]
pub(crate) fn now<T>(result: T) -> Now<T> {
    Now(Some(result))
}

// Never pinned in place: the result is moved out whole.
impl<T> Unpin for Now<T> {}

impl<T> Future for Now<T> {
    type Output = T;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        ready!(tokio::task::coop::poll_proceed(cx)).made_progress();
        Poll::Ready(self.0.take().expect("a decision polled after it completed"))
    }
}
