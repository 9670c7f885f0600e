use limiter_runtime::{rate_limit, RateLimited};

struct Account {
    id: u64,
    balance: u64,
}

impl Account {
    #[rate_limit(prefix = "balance:", key = self.id, max = 1)]
    async fn balance(&self) -> Result<u64, RateLimited> {
        Ok(self.balance)
    }

    #[rate_limit(prefix = "deposit:", key = (self.id, amount), max = 1)]
    async fn deposit(&mut self, amount: u64) -> Result<u64, RateLimited> {
        self.balance += amount;
        Ok(self.balance)
    }

    #[rate_limit(prefix = "open:", key = id, max = 1)]
    async fn open(id: u64) -> Result<Account, RateLimited> {
        Ok(Account { id, balance: 0 })
    }

    #[rate_limit(prefix = "close:", key = self.id, max = 1)]
    async fn close(self) -> Result<u64, RateLimited> {
        Ok(self.balance)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Each method has its own prefix: with one prefix, `open(7)` and `balance()` of account 7 would share
    // the bucket `rate_limit:7`.
    let mut account = Account::open(7).await.unwrap();
    assert!(Account::open(7).await.is_err());
    assert_eq!(account.balance().await.unwrap(), 0);
    assert!(account.balance().await.is_err());
    assert_eq!(account.deposit(5).await.unwrap(), 5);
    assert!(account.deposit(5).await.is_err());
    assert_eq!(account.deposit(6).await.unwrap(), 11);
    assert_eq!(account.close().await.unwrap(), 11);
}
