//! The tests run against the server asked for: Redis by default, Valkey with `LIMITER_TEST_SERVER=valkey`
//! (`./scripts/test` runs the Redis-facing tests both ways), and it is at least the oldest version the
//! scripts support (7.0).

use test_support::{server_kind, Server};
use tests::RedisServer;

#[test]
fn the_server_is_the_one_asked_for_and_recent_enough() {
    let server = RedisServer::start();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut server.connection())
        .unwrap();
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let valkey = field("server_name") == Some("valkey") || field("valkey_version").is_some();
    assert_eq!(valkey, server_kind() == Server::Valkey, "{info}");
    let version = field("redis_version").expect("every server reports redis_version");
    let major: u32 = version.split('.').next().unwrap().parse().unwrap();
    assert!(major >= 7, "the scripts need Redis 7.0 or later: {version}");
}
