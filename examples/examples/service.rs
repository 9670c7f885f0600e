//! The employee service over HTTP, every limit one global count in Redis (see `examples/src/service.rs`).
//!
//! ```sh
//! export ADMIN_TOKEN=$(openssl rand -hex 16)          # the operators' token, at least 16 characters
//! LIMITER_REDIS_URL=redis://127.0.0.1:6379/ cargo run -p examples --example service   # listens on 127.0.0.1:3000
//! curl -i http://127.0.0.1:3000/employees/1001      # 5 per 10 s, then 429 with Retry-After and RateLimit headers
//! ```
//!
//! The limits are read from `examples/limits.toml` (or the file `LIMITER_LIMITS` names), and follow its
//! changes while the service runs.
//!
//! The operators' page is at <http://127.0.0.1:3000/admin> (it asks for the token once). The operators'
//! routes (`/limit/*`, `/admin/api/*`) require `Authorization: Bearer $ADMIN_TOKEN` (or, to read alone, the
//! token in `ADMIN_VIEWER_TOKEN`, if set); the service refuses to start without `ADMIN_TOKEN`.

use std::net::SocketAddr;

use limiter_runtime::Limiter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_target(false).init();
    // Connected and checked now: a Redis that cannot be used stops the service here, with the cause, not at
    // its first request. Installed, so that annotated functions anywhere count where the layer does.
    let limits = concat!(env!("CARGO_MANIFEST_DIR"), "/limits.toml");
    let limiter = Limiter::builder()
        .limits_file(limits)
        .env()? // LIMITER_LIMITS, if set, names another file
        .connect()
        .await?;
    limiter.clone().install()?;
    let door = examples::service::door_from_env(&limiter).map_err(|e| {
        format!("set ADMIN_TOKEN to the operators' token (`openssl rand -hex 16`): {e}")
    })?;
    let address = std::env::var("SERVICE_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("employee service on http://{address}");
    let app =
        examples::service::app(limiter, door).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).await?;
    Ok(())
}
