#![deny(unused_variables, unused_mut)]

use limiter_runtime::{rate_limit, RateLimited};

/// Outer doc comments stay on the function.
#[allow(unused_variables)]
#[rate_limit(max = 5)]
#[allow(unused_mut)]
/// Even below the attribute.
#[inline]
#[must_use = "the result says whether the call was admitted"]
async fn documented(unused: u32) -> Result<(), RateLimited> {
    //! Inner doc comments too.
    let mut never_mutated = 0;
    let _ = never_mutated;
    Ok(())
}

pub struct Api;

impl Api {
    /// A public method keeps its visibility.
    #[rate_limit(max = 5)]
    #[cfg(not(any()))]
    pub async fn visible(&self) -> Result<(), RateLimited> {
        Ok(())
    }

    #[rate_limit(max = 5)]
    #[cfg(any())]
    pub async fn compiled_out(&self) -> Result<(), DoesNotExist> {
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    documented(1).await.unwrap();
    Api.visible().await.unwrap();
}
