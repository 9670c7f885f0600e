use limiter_runtime::rate_limit;

#[derive(Debug)]
struct MyError;

#[rate_limit(max = 5)]
async fn get(id: u32) -> Result<u32, MyError> {
    Ok(id)
}

fn main() {}
