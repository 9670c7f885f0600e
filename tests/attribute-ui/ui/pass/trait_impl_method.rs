use limiter_runtime::{rate_limit, RateLimited};

trait Repository {
    async fn find(&self, id: u32) -> Result<String, RateLimited>;
}

struct Employees {
    table: &'static str,
}

impl Repository for Employees {
    #[rate_limit(key = (self.table, id), max = 1)]
    async fn find(&self, id: u32) -> Result<String, RateLimited> {
        Ok(format!("{}#{id}", self.table))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let repo = Employees { table: "employees" };
    assert_eq!(repo.find(1).await.unwrap(), "employees#1");
    assert!(repo.find(1).await.is_err());
    assert!(repo.find(2).await.is_ok());
}
