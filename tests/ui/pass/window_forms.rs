use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(window = 10, max = 1)]
async fn seconds() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "500ms", max = 1)]
async fn millis() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "10s", max = 1)]
async fn seconds_text() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1m", max = 1)]
async fn minute() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1h", max = 1)]
async fn hour() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert!(seconds().await.is_ok());
    assert!(seconds().await.is_err());
    assert!(seconds_text().await.is_ok());
    assert!(seconds_text().await.is_err());
    assert!(minute().await.is_ok());
    assert!(minute().await.is_err());
    assert!(hour().await.is_ok());
    assert!(hour().await.is_err());

    assert!(millis().await.is_ok());
    assert!(millis().await.is_err());
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(
        millis().await.is_ok(),
        "a 500 ms window is over after 600 ms"
    );
}
