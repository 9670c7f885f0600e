//! [`Outbound`]: waits for a request's turn, sends it, and tells the fleet what the upstream answered.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::{Config, OutboundError};
use crate::Priority;

/// The service an [`OutboundLayer`](super::OutboundLayer) wraps around a client `S`.
pub struct Outbound<S> {
    inner: S,
    config: Arc<Config>,
}

/// The future of an [`Outbound`] request's answer.
pub type OutboundFuture<B, E> =
    Pin<Box<dyn Future<Output = Result<http::Response<B>, OutboundError<E>>> + Send>>;

impl<S> Outbound<S> {
    pub(super) fn new(inner: S, config: Arc<Config>) -> Self {
        Outbound { inner, config }
    }
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Outbound<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = http::Response<ResBody>;
    type Error = OutboundError<S::Error>;
    type Future = OutboundFuture<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(OutboundError::Upstream)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let (parts, body) = request.into_parts();
        let config = &self.config;
        let key = (config.key)(&parts);
        let priority = config.priority.map_or(Priority::Normal, |of| of(&parts));
        let estimate = config
            .tokens
            .as_ref()
            .map(|tokens| (tokens.estimate)(&parts));
        let request = http::Request::from_parts(parts, body);
        // The service polled ready sends this request; its clone, not known to be ready, stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(async move {
            let limiter = &config.limiter;
            let turn = match (&config.tokens, estimate) {
                (Some(tokens), Some(estimate)) => {
                    let limits = [
                        (&config.rule, key.as_str(), 1),
                        (&tokens.rule, key.as_str(), estimate),
                    ];
                    limiter.all(limits).turn().priority(priority).await
                }
                _ => limiter.turn(&config.rule, &key).priority(priority).await,
            }
            .map_err(OutboundError::Limited)?;
            let response = match inner.call(request).await {
                Ok(response) => response,
                Err(error) => {
                    // Sent or not, the slot is spent: the upstream may have counted it.
                    return Err(OutboundError::Upstream(error));
                }
            };
            let (parts, body) = response.into_parts();
            if let Err(error) = turn.answered(parts.status.as_u16(), &parts.headers).await {
                tracing::warn!(%error, "rate limiter: could not tell the fleet what the upstream answered");
            }
            let used = config
                .tokens
                .as_ref()
                .and_then(|tokens| (tokens.used)(&parts));
            match used {
                Some(used) => turn.settle(&[1, used]).await,
                None => drop(turn),
            }
            Ok(http::Response::from_parts(parts, body))
        })
    }
}

impl<S: Clone> Clone for Outbound<S> {
    fn clone(&self) -> Self {
        Outbound {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for Outbound<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbound")
            .field("inner", &self.inner)
            .field("rule", &self.config.rule)
            .finish()
    }
}
