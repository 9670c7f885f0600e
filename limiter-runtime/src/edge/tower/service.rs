//! [`RateLimitService`]: decides each request through the pipeline, then serves it (or answers the refusal),
//! and writes the quota fields of every decision made meanwhile.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::layer::Config;
use super::response::{Refusal, ResponseBody};
use crate::edge::http::write_quota_fields;
use crate::edge::quota;
use crate::Priority;

/// The service a [`RateLimitLayer`](super::RateLimitLayer) wraps around `S`.
pub struct RateLimitService<S> {
    inner: S,
    config: Arc<Config>,
}

/// The future of a [`RateLimitService`]'s response.
pub type ResponseFuture<B, E> =
    Pin<Box<dyn Future<Output = Result<http::Response<ResponseBody<B>>, E>> + Send>>;

impl<S> RateLimitService<S> {
    pub(super) fn new(inner: S, config: Arc<Config>) -> Self {
        RateLimitService { inner, config }
    }
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for RateLimitService<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = http::Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let (parts, body) = request.into_parts();
        let key = self.config.key_of(&parts);
        let priority = self.config.priority_of(&parts);
        let plan = self.config.plan_of(&parts);
        let refusal = Refusal::for_request(&parts);
        let request = http::Request::from_parts(parts, body);
        // The service polled ready serves this request; its clone, not known to be ready, stays for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(serve(
            Arc::clone(&self.config),
            key.map(|key| (key, priority, plan)),
            refusal,
            inner,
            request,
        ))
    }
}

/// Decides `request` (keyed `key`, of its priority and plan; none is not limited), serves it or answers its refusal, and writes the
/// quota fields of every decision made meanwhile (unless a layer outside this one records them: that one
/// writes them).
async fn serve<S, ReqBody, ResBody>(
    config: Arc<Config>,
    key: Option<(String, Priority, Option<String>)>,
    refusal: Refusal,
    mut inner: S,
    request: http::Request<ReqBody>,
) -> Result<http::Response<ResponseBody<ResBody>>, S::Error>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
{
    let deciding = quota::scope(async {
        let mut permit = None;
        if let Some((key, priority, plan)) = &key {
            match config.decide(key, *priority, plan.as_deref()).await {
                Ok(held) => permit = held,
                Err(rejection) => return Ok(refusal.response(&rejection)),
            }
        }
        let response = inner.call(request).await?;
        // The permits in flight are held until the body is done (a stream's last frame, or the body dropped); a
        // handler's refusal is answered as the layer's own.
        Ok(refusal.restate(response, permit))
    });
    // The handlers decide in the layer's limiter, unless the layer says otherwise.
    let (response, quotas) = match config.scoped {
        true => config.limiter().scope(deciding).await,
        false => deciding.await,
    };
    let mut response = response?;
    if let Some(quotas) = quotas {
        let quotas = quotas
            .iter()
            .map(|quota| (&*quota.policy, &quota.decision, &quota.applied));
        write_quota_fields(response.headers_mut(), quotas);
    }
    Ok(response)
}

impl<S: Clone> Clone for RateLimitService<S> {
    fn clone(&self) -> Self {
        RateLimitService {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService")
            .field("inner", &self.inner)
            .field("layer", &self.config)
            .finish()
    }
}
