use std::sync::Arc;

use limiter_runtime::{rate_limit, RateLimited};

struct State {
    name: String,
}

#[rate_limit(key = (state.name, id), max = 1)]
async fn handle(state: Arc<State>, id: &'static str) -> Result<String, RateLimited> {
    tokio::task::yield_now().await;
    Ok(format!("{}:{id}", state.name))
}

fn assert_send<F: std::future::Future + Send + 'static>(future: F) -> F {
    future
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let state = Arc::new(State {
        name: "svc".to_owned(),
    });
    let first = tokio::spawn(assert_send(handle(state.clone(), "a")));
    assert_eq!(first.await.unwrap().unwrap(), "svc:a");
    let second = tokio::spawn(handle(state, "a"));
    assert!(second.await.unwrap().is_err());
}
