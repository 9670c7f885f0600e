//! The shapes of function the attribute accepts: bodies, receivers, traits, generics, patterns, stacks.

use std::fmt::Display;

use limiter_runtime::{rate_limit, RateLimited};

use crate::AppError;

/// A body that is one expression.
#[rate_limit(key = id, max = 5)]
pub async fn one_expression(id: &str) -> Result<(), AppError> {
    Ok(())
}

/// A body that is one expression, of a function without arguments.
#[rate_limit(max = 5)]
pub async fn no_arguments() -> Result<u32, RateLimited> {
    Ok(1)
}

/// An empty-looking body: a block in the body.
#[rate_limit(max = 5)]
pub async fn inner_block() -> Result<u32, RateLimited> {
    {
        Ok(1)
    }
}

/// A body of statements, with an early `return` and `?`.
#[rate_limit(key = input, max = 5)]
pub async fn statements(input: &str) -> Result<u32, AppError> {
    if input.is_empty() {
        return Err(AppError::Failed);
    }
    let parsed: u32 = input.parse().map_err(|_| AppError::Failed)?;
    Ok(parsed * 2)
}

/// A body that ends in `return`.
#[rate_limit(key = input, max = 5)]
pub async fn ends_in_return(input: u32) -> Result<u32, AppError> {
    let doubled = input * 2;
    #[allow(clippy::needless_return)]
    return Ok(doubled);
}

/// A body with `?` on the rejection's own type.
#[rate_limit(max = 5)]
pub async fn question_mark() -> Result<u32, RateLimited> {
    let value = no_arguments().await?;
    Ok(value + 1)
}

/// A body that declares an item and a `let` before its value.
#[rate_limit(key = n, max = 5)]
pub async fn items_in_body(n: u32) -> Result<u32, RateLimited> {
    const STEP: u32 = 3;
    fn add(a: u32, b: u32) -> u32 {
        a + b
    }
    let sum = add(n, STEP);
    Ok(sum)
}

/// An argument the body does not use but the key does.
#[rate_limit(key = user, max = 5)]
pub async fn key_only_argument(user: String) -> Result<(), RateLimited> {
    Ok(())
}

/// A mutable argument.
#[rate_limit(key = n, max = 5)]
pub async fn mutable_argument(mut n: u32) -> Result<u32, RateLimited> {
    n += 1;
    Ok(n)
}

/// An account, whose methods are limited.
pub struct Account {
    /// Keys the limits.
    pub id: u64,
    /// Changed by `deposit`.
    pub balance: u64,
}

impl Account {
    /// `&self`.
    #[rate_limit(prefix = "balance:", key = self.id, max = 5)]
    pub async fn balance(&self) -> Result<u64, RateLimited> {
        Ok(self.balance)
    }

    /// `&mut self`, keyed on `self` and an argument.
    #[rate_limit(prefix = "deposit:", key = (self.id, amount), max = 5)]
    pub async fn deposit(&mut self, amount: u64) -> Result<u64, RateLimited> {
        self.balance += amount;
        Ok(self.balance)
    }

    /// `self`, by value.
    #[rate_limit(prefix = "close:", key = self.id, max = 5)]
    pub async fn close(self) -> Result<u64, RateLimited> {
        Ok(self.balance)
    }

    /// No receiver.
    #[rate_limit(prefix = "open:", key = id, max = 5)]
    pub async fn open(id: u64) -> Result<Account, RateLimited> {
        Ok(Account { id, balance: 0 })
    }
}

/// A trait with `async fn`, implemented below (private: a public one warns of `async_fn_in_trait`).
trait Repository {
    async fn find(&self, id: u32) -> Result<String, RateLimited>;
}

/// A repository, its trait method limited.
pub struct Employees;

impl Repository for Employees {
    #[rate_limit(key = id, max = 5)]
    async fn find(&self, id: u32) -> Result<String, RateLimited> {
        Ok(format!("employee {id}"))
    }
}

/// Calls the trait method, so that the private trait is used.
pub async fn find_employee(id: u32) -> Result<String, RateLimited> {
    Employees.find(id).await
}

/// A trait whose methods `#[async_trait]` boxes.
#[async_trait::async_trait]
pub trait Service {
    /// `&self`.
    async fn call(&self, request: u32) -> Result<u32, RateLimited>;
    /// `&mut self`.
    async fn bump(&mut self) -> Result<u32, RateLimited>;
    /// No receiver.
    async fn stateless(n: u32) -> Result<u32, RateLimited>
    where
        Self: Sized;
    /// One expression, unit.
    async fn ping(&self) -> Result<(), AppError>;
}

/// Implements [`Service`], each method limited.
pub struct Handler {
    /// Keys the limits.
    pub x: u32,
}

#[async_trait::async_trait]
impl Service for Handler {
    #[rate_limit(prefix = "call:", key = self.x, max = 5, skip_if = request == 0)]
    async fn call(&self, request: u32) -> Result<u32, RateLimited> {
        if request > 100 {
            return Ok(100);
        }
        Ok(self.x + request)
    }

    #[rate_limit(prefix = "bump:", key = self.x, max = 5, count = failures)]
    async fn bump(&mut self) -> Result<u32, RateLimited> {
        self.x += 1;
        Ok(self.x)
    }

    #[rate_limit(prefix = "stateless:", key = n, max = 5)]
    async fn stateless(n: u32) -> Result<u32, RateLimited>
    where
        Self: Sized,
    {
        Ok(n)
    }

    #[rate_limit(prefix = "ping:", max = 5)]
    async fn ping(&self) -> Result<(), AppError> {
        Ok(())
    }
}

/// A generic function, keyed on its generic argument.
#[rate_limit(key = t, max = 5)]
pub async fn generic<T: Display>(t: T) -> Result<String, RateLimited> {
    Ok(t.to_string())
}

/// A `where` clause.
#[rate_limit(key = item, max = 5)]
pub async fn with_where<K>(item: K) -> Result<K, RateLimited>
where
    K: Display + Send,
{
    Ok(item)
}

/// `impl Trait` in argument position.
#[rate_limit(key = item, max = 5)]
pub async fn impl_trait(item: impl Display) -> Result<String, RateLimited> {
    Ok(item.to_string())
}

/// A newtype, destructured in arguments.
pub struct Path<T>(pub T);

/// Pattern arguments: a tuple, a newtype, a nested pattern with `_`.
#[rate_limit(key = (a, id, x), max = 5)]
pub async fn patterns(
    (a, b): (String, u32),
    Path(id): Path<String>,
    Path((x, _)): Path<(u8, u8)>,
) -> Result<String, RateLimited> {
    Ok(format!("{a}{b}{id}{x}"))
}

/// Stacked limits, one counting failures, on a method.
pub struct Login;

impl Login {
    /// Three limits, one decision.
    #[rate_limit(prefix = "burst:", key = user, max = 5, window = 1)]
    #[rate_limit(prefix = "quota:", key = (tenant, user), max = 1000, window = "1h")]
    #[rate_limit(prefix = "failures:", key = ip, max = 10, window = "1m", count = failures)]
    pub async fn login(
        &self,
        tenant: &str,
        user: &str,
        ip: std::net::IpAddr,
        ok: bool,
    ) -> Result<u32, AppError> {
        if !ok {
            return Err(AppError::Failed);
        }
        Ok(7)
    }
}

/// A stack of two on a one-expression body.
#[rate_limit(prefix = "a:", max = 5)]
#[rate_limit(prefix = "b:", max = 50, skip_if = free)]
pub async fn stacked_one_expression(free: bool) -> Result<(), RateLimited> {
    Ok(())
}

/// Other attributes kept around the limit.
#[inline]
#[rate_limit(max = 5)]
#[must_use = "a rejection is an error"]
pub async fn other_attributes() -> Result<(), RateLimited> {
    Ok(())
}
