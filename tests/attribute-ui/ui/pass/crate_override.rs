use limiter_runtime::RateLimited;

mod rt {
    pub use limiter_runtime::*;
}

// A crate that re-exports the runtime under another path names it with `crate = "..."`.
#[rt::rate_limit(crate = "crate::rt", key = id, max = 1)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(get(1).await.unwrap(), 1);
    assert!(get(1).await.is_err());
}
