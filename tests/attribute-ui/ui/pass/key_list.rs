use limiter_runtime::{rate_limit, RateLimited};

struct User {
    id: u64,
    name: String,
}

#[rate_limit(key = (tenant, user.id), max = 1)]
async fn upload(tenant: &str, user: User) -> Result<String, RateLimited> {
    // The key borrowed `user`; the body still owns it.
    let User { id, name } = user;
    Ok(format!("{tenant}/{id}/{name}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let user = || User {
        id: 42,
        name: "ada".to_owned(),
    };
    assert_eq!(upload("acme", user()).await.unwrap(), "acme/42/ada");
    let rejected = upload("acme", user()).await.unwrap_err();
    assert!(rejected.key().ends_with("acme%3A42"), "{}", rejected.key());
    assert!(upload("other", user()).await.is_ok());
}
