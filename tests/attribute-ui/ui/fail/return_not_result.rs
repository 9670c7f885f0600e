use limiter_runtime::rate_limit;

#[rate_limit(max = 5)]
async fn get(id: u32) -> Option<u32> {
    Some(id)
}

fn main() {}
