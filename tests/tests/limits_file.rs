//! Limits from data: a limits file read at start and checked against every annotated function of the binary;
//! reloaded live, on every node within a second (three runtimes on one Redis); a bad file, a file cut off
//! mid-write, a 10 MB one, a swap file beside it, a file removed, Redis down during a push: each refused or
//! told, the last good limits kept, nothing unlimited; the same file again changes nothing. (A test binary of
//! its own: every `#[rate_limit]` of a binary is checked against its limiter's file, and the suite's functions
//! name policies this file does not define.)

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use limiter_runtime::{rate_limit, Error, Limiter, RateLimited, Rule};
use tests::RedisServer;

/// The file the tests start from: `search`, 3 a minute, 6 on `pro`; `reports`, 2 a minute.
const LIMITS: &str = r#"
[defaults]
window = "1m"

[policies.search]
max = 3

[policies.search.plans.pro]
max = 6

[policies.reports]
max = 2
"#;

struct Tenant {
    id: u64,
    plan: Option<String>,
}

#[rate_limit(policy = "search", key = tenant.id, plan = tenant.plan)]
async fn search(tenant: &Tenant) -> Result<u64, RateLimited> {
    Ok(tenant.id)
}

#[rate_limit(policy = "search", key = id, plan = "pro")]
async fn search_on_pro(id: u64) -> Result<u64, RateLimited> {
    Ok(id)
}

#[rate_limit(policy = "reports", key = id)]
async fn report(id: u64) -> Result<u64, RateLimited> {
    Ok(id)
}

/// A directory of the test's own, removed when it ends.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("limiter-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    /// Writes `text` as `limits.toml` (at once, as an editor that writes in place does) and returns its path.
    fn write(&self, text: &str) -> PathBuf {
        let path = self.0.join("limits.toml");
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Counts the calls of `tenant` admitted out of `calls`, on `limiter`.
async fn searches(limiter: &Limiter, tenant: &Tenant, calls: u32) -> u32 {
    let mut admitted = 0;
    for _ in 0..calls {
        admitted += u32::from(limiter.scope(search(tenant)).await.is_ok());
    }
    admitted
}

/// Waits until `limiter` runs the limits file `version`; returns how long that took.
async fn until_version(limiter: &Limiter, version: &str) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), async {
        while limiter.limits_version().0.as_deref() != Some(version) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "version {version} never applied: {:?}",
            limiter.limits_version()
        )
    });
    started.elapsed()
}

/// The version of a limits file's text, as the limiter computes it: the first 8 hex digits of its SHA-1.
fn version(limiter: &Limiter) -> String {
    limiter.limits_version().0.expect("a limits file in force")
}

/// The file's policies and plans apply to the functions that name them, counted under a prefix of each
/// policy's own; its defaults fill in what a policy leaves out.
#[tokio::test]
async fn a_file_sets_the_policies_the_attribute_names() {
    let server = RedisServer::start();
    let dir = Dir::new("sets");
    let limiter = server
        .builder()
        .limits_file(dir.write(LIMITS))
        .build()
        .unwrap();
    let free = Tenant { id: 1, plan: None };
    let pro = Tenant {
        id: 2,
        plan: Some("pro".into()),
    };
    assert_eq!(searches(&limiter, &free, 5).await, 3);
    assert_eq!(searches(&limiter, &pro, 8).await, 6);
    assert!(
        limiter.scope(search_on_pro(2)).await.is_err(),
        "the same tenant, key and plan"
    );
    let refused = limiter.scope(search(&pro)).await.unwrap_err();
    assert_eq!((refused.policy(), refused.plan()), ("search", Some("pro")));
    assert_eq!(refused.prefix(), "rate_limit:search:");
    assert_eq!(refused.decision().window, Duration::from_secs(60));
    // The plain API names the policy as the attribute does.
    let decision = limiter.check(&Rule::new().policy("reports"), 9).await;
    assert_eq!((decision.limit, decision.remaining), (2, 1));
    // Every policy is listed before its first call.
    let listed: Vec<String> = limiter
        .overview()
        .await
        .policies
        .into_iter()
        .map(|p| p.policy)
        .collect();
    assert!(listed.contains(&"reports".to_owned()), "{listed:?}");
}

/// A file with a mistake, or one that leaves out a policy a function of the binary names, is an error when the
/// limiter is built, naming the file, the line and the column.
#[tokio::test]
async fn a_bad_file_is_an_error_at_start() {
    let dir = Dir::new("bad");
    let typo = LIMITS.replace(
        "[policies.reports]\nmax = 2",
        "[policies.reports]\nmaxx = 2",
    );
    let path = dir.write(&typo);
    let error = Limiter::builder().limits_file(&path).build().unwrap_err();
    let Error::Limits(limits) = &error else {
        panic!("not a limits error: {error}")
    };
    assert_eq!(
        (limits.line(), limits.column()),
        (Some(12), Some(1)),
        "{error}"
    );
    assert!(error.to_string().contains("maxx"), "{error}");
    assert!(
        error.to_string().starts_with(&path.display().to_string()),
        "{error}"
    );
    let missing = LIMITS.replace("[policies.reports]\nmax = 2\n", "");
    let error = Limiter::builder()
        .limits_file(dir.write(&missing))
        .build()
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("report") && text.contains("\"reports\""),
        "{text}"
    );
    // A plan a function names in a literal must be the policy's.
    let no_pro = LIMITS.replace("[policies.search.plans.pro]\nmax = 6\n", "");
    let error = Limiter::builder()
        .limits_file(dir.write(&no_pro))
        .build()
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("search_on_pro") && text.contains("plans.pro"),
        "{text}"
    );
    let error = Limiter::builder()
        .limits_file(dir.0.join("absent.toml"))
        .build()
        .unwrap_err();
    assert!(matches!(error, Error::Limits(_)), "{error}");
}

/// A change of the file on one node applies on three, within a second; so does a push through another node;
/// what was counted carries over (raising `max` admits the difference, no more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_applies_on_three_nodes_within_a_second() {
    let server = RedisServer::start();
    let dir = Dir::new("three");
    let path = dir.write(LIMITS);
    let a = server.builder().limits_file(&path).build().unwrap();
    let (b, c) = (server.limiter(), server.limiter());
    let first = version(&a);
    for node in [&b, &c] {
        until_version(node, &first).await;
    }
    let tenant = Tenant { id: 3, plan: None };
    assert_eq!(searches(&b, &tenant, 4).await, 3);
    let raised = LIMITS.replace("[policies.search]\nmax = 3", "[policies.search]\nmax = 5");
    std::fs::write(&path, &raised).unwrap();
    let written = Instant::now();
    until_version(&a, &version_of(&raised).await).await;
    let new = version(&a);
    for node in [&b, &c] {
        until_version(node, &new).await;
    }
    let took = written.elapsed();
    eprintln!("a change of the file applied on three nodes after {took:?}");
    assert!(
        took < Duration::from_secs(1),
        "applied everywhere after {took:?}"
    );
    // 3 spent of 5: exactly 2 more, on any node.
    assert_eq!(searches(&c, &tenant, 4).await, 2);
    // A push through another node: the same, the file's node included.
    let lowered = LIMITS.replace("[policies.reports]\nmax = 2", "[policies.reports]\nmax = 1");
    let started = Instant::now();
    let pushed = b.push_limits(&lowered).await.unwrap();
    for node in [&a, &b, &c] {
        until_version(node, &pushed).await;
    }
    let took = started.elapsed();
    eprintln!("a push applied on three nodes after {took:?}");
    assert!(
        took < Duration::from_secs(1),
        "applied everywhere after {took:?}"
    );
    assert_eq!(a.scope(report(4)).await.unwrap(), 4);
    assert!(
        c.scope(report(4)).await.is_err(),
        "lowered to 1, on every node"
    );
    // Each node reports its version with its heartbeat (every second): the operators see all three on it.
    tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            let nodes = a.overview().await.nodes;
            let on_it = nodes
                .iter()
                .filter(|n| n.limits.as_deref() == Some(pushed.as_str()));
            if on_it.count() == 3 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("every node reports the version it runs");
}

/// Returns the version the limiter gives `text`.
async fn version_of(text: &str) -> String {
    Limiter::in_memory().push_limits(text).await.unwrap()
}

/// A file cut off mid-write, a 10 MB one, a file removed: each refused and reported, the last good limits kept
/// (the limit still enforced); a swap file beside it changes nothing; the same file written again changes
/// nothing (no count reset).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reloads_keep_the_last_good_limits() {
    let server = RedisServer::start();
    let dir = Dir::new("reloads");
    let path = dir.write(LIMITS);
    let limiter = server.builder().limits_file(&path).build().unwrap();
    let good = version(&limiter);
    let cut = &LIMITS[..LIMITS.find("[policies.search.plans").unwrap() + 12];
    let huge = format!("{LIMITS}\n#{}\n", "x".repeat(10 << 20));
    /// A way of writing the file badly.
    type Write<'a> = Box<dyn Fn(&Path) + 'a>;
    let writes: [(&str, Write<'_>); 3] = [
        (
            "cut off mid-write",
            Box::new(|p| std::fs::write(p, cut).unwrap()),
        ),
        ("10 MB", Box::new(|p| std::fs::write(p, &huge).unwrap())),
        ("removed", Box::new(|p| std::fs::remove_file(p).unwrap())),
    ];
    for (round, (what, write)) in writes.iter().enumerate() {
        let tenant = Tenant {
            id: 10 + round as u64,
            plan: None,
        };
        assert_eq!(searches(&limiter, &tenant, 2).await, 2);
        write(&path);
        let refused = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if let (_, Some(refused)) = limiter.limits_version() {
                    return refused;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what}: never refused"));
        assert!(refused.contains("limits.toml"), "{what}: {refused}");
        assert_eq!(version(&limiter), good, "{what}: the last good limits stay");
        // Still 3 a minute: one more, then refused.
        assert!(limiter.scope(search(&tenant)).await.is_ok(), "{what}");
        assert!(
            limiter.scope(search(&tenant)).await.is_err(),
            "{what}: still limited"
        );
        // The good file back: taken again, the refusal forgotten.
        std::fs::write(&path, LIMITS).unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            while limiter.limits_version().1.is_some() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what}: the good file back is not taken"));
        assert_eq!(version(&limiter), good);
    }
    // An editor's swap file beside it: nothing happens.
    std::fs::write(dir.0.join(".limits.toml.swp"), "garbage = [").unwrap();
    // The same file written again: no count reset.
    let fresh = Tenant { id: 6, plan: None };
    assert_eq!(searches(&limiter, &fresh, 2).await, 2);
    std::fs::write(&path, LIMITS).unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(limiter.limits_version(), (Some(good), None));
    assert_eq!(
        searches(&limiter, &fresh, 3).await,
        1,
        "one left of 3, as before"
    );
}

/// With Redis down, a push is refused and changes nothing anywhere; a change of the file still applies on its
/// own node, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_during_a_push_changes_nothing() {
    let mut server = RedisServer::start();
    let dir = Dir::new("down");
    let path = dir.write(LIMITS);
    let a = server.builder().limits_file(&path).build().unwrap();
    let b = server.limiter();
    let good = version(&a);
    until_version(&b, &good).await;
    server.kill();
    let lowered = LIMITS.replace("[policies.search]\nmax = 3", "[policies.search]\nmax = 1");
    let error = b.push_limits(&lowered).await.unwrap_err();
    assert!(!matches!(error, Error::Limits(_)), "{error}");
    assert_eq!(version(&b), good, "nothing changed");
    // A bad file is refused before Redis is asked.
    let error = b
        .push_limits("[policies.search]\nmax = 0\n")
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Limits(_)), "{error}");
    // The file's own node applies its change, Redis down.
    std::fs::write(&path, &lowered).unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while a.limits_version().0.as_deref() == Some(good.as_str()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("applied on its own node");
    assert_eq!(version(&b), good);
}

/// The admin API: an operator pushes a limits file (on the record), a viewer may not, a bad one is a 400
/// naming its line and column with nothing changed, and the nodes list each one's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_push_a_limits_file_through_the_admin_api() {
    use tests::http::request_with_body;

    const TOKEN: &str = "a-limits-test-operator-token";
    const VIEWER: &str = "a-limits-test-viewer-token";
    let server = RedisServer::start();
    let limiter = server.limiter();
    let door = limiter_runtime::admin::builder(limiter.clone())
        .operator_token(TOKEN)
        .viewer_token(VIEWER)
        .build()
        .unwrap();
    let app = axum::Router::new().nest_service("/admin", door.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let push = |token: &'static str, text: String| async move {
        let bearer = format!("Bearer {token}");
        let headers = [
            ("authorization", bearer.as_str()),
            ("content-type", "application/toml"),
        ];
        request_with_body(at, "PUT", "/admin/api/limits", &headers, Some(&text)).await
    };
    let json = |body: &str| serde_json::from_str::<serde_json::Value>(body).unwrap();

    let refused = push(VIEWER, LIMITS.to_owned()).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let pushed = push(TOKEN, LIMITS.to_owned()).await;
    assert_eq!(pushed.status, 200, "{}", pushed.body);
    let version = json(&pushed.body)["version"].as_str().unwrap().to_owned();
    assert_eq!(limiter.limits_version(), (Some(version.clone()), None));
    let bad = push(TOKEN, LIMITS.replace("max = 6", "max = -6")).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let error = json(&bad.body)["error"].as_str().unwrap().to_owned();
    assert!(error.contains(":9:7:"), "{error}");
    assert_eq!(
        limiter.limits_version().0.as_deref(),
        Some(version.as_str()),
        "nothing changed"
    );

    let bearer = format!("Bearer {VIEWER}");
    let get = |path: &'static str| {
        let bearer = bearer.clone();
        async move {
            let headers = [("authorization", bearer.as_str())];
            json(
                &request_with_body(at, "GET", path, &headers, None)
                    .await
                    .body,
            )
        }
    };
    assert_eq!(get("/admin/api/limits").await["version"], version.as_str());
    let changes = get("/admin/api/changes").await;
    assert!(
        changes.to_string().contains(&format!("version {version}")),
        "{changes}"
    );
    tokio::time::timeout(Duration::from_secs(3), async {
        while get("/admin/api/nodes").await[0]["limits"] != version.as_str() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the node lists its version");
}
