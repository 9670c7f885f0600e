use limiter_runtime::rate_limit;

#[rate_limit(max = 5)]
async fn ping(id: &str) {
    let _ = id;
}

fn main() {}
