use limiter_runtime::rate_limit;

#[rate_limit(max = 5)]
struct Handler;

fn main() {}
