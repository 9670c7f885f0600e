use limiter_runtime::{rate_limit, RateLimited};

struct Path<T>(T);

#[rate_limit(key = a, max = 1)]
async fn tuple((a, b): (String, u32)) -> Result<String, RateLimited> {
    Ok(format!("{a}{b}"))
}

#[rate_limit(key = id, max = 1)]
async fn extractor(Path(id): Path<String>) -> Result<String, RateLimited> {
    Ok(id)
}

#[rate_limit(key = (x, y), max = 1)]
async fn nested(Path((x, _)): Path<(u8, u8)>, mut y: u8) -> Result<u8, RateLimited> {
    y += x;
    Ok(y)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(tuple(("a".to_owned(), 1)).await.unwrap(), "a1");
    assert!(tuple(("a".to_owned(), 2)).await.is_err());
    assert_eq!(extractor(Path("e7".to_owned())).await.unwrap(), "e7");
    assert!(extractor(Path("e7".to_owned())).await.is_err());
    assert_eq!(nested(Path((1, 2)), 3).await.unwrap(), 4);
}
