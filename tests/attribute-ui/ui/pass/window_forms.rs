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

#[rate_limit(window = "1d", max = 1)]
async fn day() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1h30m", max = 1)]
async fn hour_and_a_half() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1d12h", max = 1)]
async fn day_and_a_half() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1s500ms", max = 1)]
async fn second_and_a_half() -> Result<(), RateLimited> {
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

    assert!(day().await.is_ok());
    assert!(day().await.is_err());
    assert!(hour_and_a_half().await.is_ok());
    assert!(hour_and_a_half().await.is_err());
    assert!(day_and_a_half().await.is_ok());
    assert!(day_and_a_half().await.is_err());

    assert!(millis().await.is_ok());
    assert!(millis().await.is_err());
    assert!(second_and_a_half().await.is_ok());
    assert!(second_and_a_half().await.is_err());
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(
        millis().await.is_ok(),
        "a 500 ms window is over after 600 ms"
    );
    assert!(
        second_and_a_half().await.is_err(),
        "a window of 1s500ms is not over after 600 ms"
    );
}
