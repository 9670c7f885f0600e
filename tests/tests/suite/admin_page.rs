//! The operators' live page in a real browser: headless Chromium, driven over WebDriver (chromedriver, with
//! the `fantoccini` client), loads the example service's `/admin` page while traffic runs against the
//! service and a real Redis, and finds what a person would see: the policies with their rates, a top limited
//! key, the node's health; counts that move on screen without a reload; the token kept in the tab's session
//! storage alone, signing a reload in; then an override applied through the page's form takes effect on the
//! service, and a ban added in the page refuses the key (429, `Retry-After` the ban's length) until it is
//! lifted there.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`./scripts/test` installs them when missing): without
//! them the test fails, saying so. `LIMITER_ADMIN_SCREENSHOT=<path>` saves a screenshot of the page there
//! (the README's is made so).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use limiter_runtime::{admin, Limiter, Override};
use tests::http::{request, request_with_body};
use tests::RedisServer;

const TOKEN: &str = "a-page-test-token";
const VIEWER: &str = "a-viewers-page-token";

/// A chromedriver on a free loopback port, stopped when dropped.
struct Driver(Child, u16);

impl Driver {
    fn start() -> Driver {
        let binary = test_support::find("chromedriver").unwrap_or_else(|| {
            panic!(
                "chromedriver is not installed, and this test needs a real browser. Run the test command \
                 from the README (`./scripts/test`), which installs it, or `apt-get install chromium \
                 chromium-driver`."
            )
        });
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(binary)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        Driver(child, port)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A headless Chromium session through `driver`, retried while the driver comes up.
async fn browser(driver: &Driver) -> Client {
    let args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ];
    let mut options = serde_json::json!({ "args": args });
    if let Some(chromium) = test_support::find("chromium") {
        options["binary"] = serde_json::json!(chromium);
    }
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("goog:chromeOptions".into(), options);
    let url = format!("http://127.0.0.1:{}", driver.1);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(capabilities.clone())
            .connect(&url)
            .await
        {
            Ok(client) => return client,
            Err(error) if Instant::now() < deadline => {
                let _ = error;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(error) => panic!("no browser session through chromedriver: {error}"),
        }
    }
}

/// Waits (at most 10 s) until `find` finds something, and returns it.
async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut find: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = find().await {
            return found;
        }
        assert!(Instant::now() < deadline, "the page never showed {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Opens the page of `service` and signs in with `token`, typed into its form.
async fn sign_in(client: &Client, service: SocketAddr, token: &str) {
    client
        .goto(&format!("http://{service}/admin"))
        .await
        .unwrap();
    let field = client.find(Locator::Id("token")).await.unwrap();
    field.send_keys(token).await.unwrap();
    click(client, "login").await;
}

/// Clicks the element with id `id`.
async fn click(client: &Client, id: &str) {
    let element = client.find(Locator::Id(id)).await.unwrap();
    element.click().await.unwrap();
}

/// Clicks the first element `css` selects.
async fn click_css(client: &Client, css: &str) {
    let element = client.find(Locator::Css(css)).await.unwrap();
    element.click().await.unwrap();
}

/// The text of what `css` selects, if anything.
async fn text(client: &Client, css: &str) -> Option<String> {
    client.find(Locator::Css(css)).await.ok()?.text().await.ok()
}

/// Requests made against the service until it is dropped: a hot employee (refused past 5 per 10 s) and
/// calm ones.
fn traffic(service: SocketAddr) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for i in 0u64.. {
            let _ = request(service, "GET", "/employees/1001").await;
            if i % 4 == 0 {
                let _ = request(service, "GET", &format!("/employees/{}", 2000 + i % 40)).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// A limiter on `server` reporting every 300 ms, and the example service it serves on a free loopback port,
/// its door open to [`TOKEN`] (the operator's) and [`VIEWER`].
async fn serve(server: &RedisServer) -> (Limiter, SocketAddr) {
    let limiter: Limiter = server
        .builder()
        .heartbeat_every(Duration::from_millis(300))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let service = listener.local_addr().unwrap();
    let door = admin::builder(limiter.clone())
        .operator_token(TOKEN)
        .viewer_token(VIEWER)
        .build()
        .unwrap();
    let app = examples::service::app(limiter.clone(), door)
        .into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (limiter, service)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sees_the_service_and_overrides_a_limit_from_the_page() {
    let server = RedisServer::start();
    let (limiter, service) = serve(&server).await;
    // All the traffic comes from one address: its per-client limit raised, the routes' own limits refuse.
    let roomy = Override::policy("rate_limit:client:").max(1_000_000);
    limiter.set_override(roomy).await.unwrap();
    let load = traffic(service);

    let driver = Driver::start();
    let client = browser(&driver).await;
    // Signed in once: the token typed, never put in a URL.
    sign_in(&client, service, TOKEN).await;

    // The policies, with their rates.
    let employee = until("the employee policy", || {
        text(&client, "#policies tr[data-policy=\"employee\"]")
    })
    .await;
    assert!(employee.contains("rate_limit:emp:"), "{employee}");
    until("a rate of refusals above zero", || async {
        let row = text(&client, "#policies tr[data-policy=\"employee\"]").await?;
        let refused: f64 = row
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .nth(1)?;
        (refused > 0.0).then_some(())
    })
    .await;
    // The top limited key.
    let top = until("1001 among the top limited keys", || async {
        let row = text(&client, "#top tr.top-row").await?;
        row.contains("1001").then_some(row)
    })
    .await;
    assert!(top.contains("employee"), "{top}");
    // The node, healthy.
    let node = until("this node", || text(&client, "#nodes tr.node-row")).await;
    assert!(node.contains("up"), "{node}");
    assert!(!client.current_url().await.unwrap().as_str().contains(TOKEN));
    // A limits file pushed through Redis that the node cannot take (as another node's push would be): the
    // node keeps its limits, and the page shows the refusal, its line and column, beside its version.
    let mut redis = server.connection();
    let bad = "[policies.employee]\nmax = 0\n";
    let version: u64 = redis::cmd("HINCRBY")
        .arg("limiter:overrides")
        .arg("version")
        .arg(1)
        .query(&mut redis)
        .unwrap();
    redis::cmd("HSET")
        .arg("limiter:overrides")
        .arg("limits")
        .arg(bad)
        .query::<()>(&mut redis)
        .unwrap();
    redis::cmd("PUBLISH")
        .arg("limiter:overrides")
        .arg(format!("{version}\nset\n{bad}\nlimits"))
        .query::<()>(&mut redis)
        .unwrap();
    let refused = until("the node's refused limits file", || {
        text(&client, "#nodes tr.node-row .limits-refused")
    })
    .await;
    assert!(refused.contains(":2:7:"), "{refused}");

    // Live: the counts move on screen with no reload (a mark left on the page's window stays).
    client
        .execute(
            "window.limiterTestMark = 'still here'; return null;",
            vec![],
        )
        .await
        .unwrap();
    let refusals = |row: &str| {
        row.split_whitespace()
            .filter_map(|w| w.parse::<u64>().ok())
            .next_back()
    };
    let before = refusals(&top).expect("a count of refusals");
    until("the refusals of 1001 counted up on screen", || async {
        let row = text(&client, "#top tr.top-row").await?;
        (row.contains("1001") && refusals(&row)? > before).then_some(())
    })
    .await;
    let mark = client
        .execute("return window.limiterTestMark ?? null;", vec![])
        .await
        .unwrap();
    assert_eq!(mark, serde_json::json!("still here"), "the page reloaded");
    // The token: in this tab's session storage, in no cookie and no local storage.
    let stored = client
        .execute(
            "return sessionStorage.getItem('limiter-admin-token');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(stored, serde_json::json!(TOKEN));
    let elsewhere = client
        .execute("return [localStorage.length, document.cookie];", vec![])
        .await
        .unwrap();
    assert_eq!(elsewhere, serde_json::json!([0, ""]));
    // Reloaded, the page signs in from it, with nothing typed.
    client.refresh().await.unwrap();
    until("the policies after a reload", || {
        text(&client, "#policies tr[data-policy=\"employee\"]")
    })
    .await;

    // An override through the form: employee 42 may be looked up once per window.
    for (field, value) in [
        ("ov-prefix", "rate_limit:emp:"),
        ("ov-key", "42"),
        ("ov-max", "1"),
    ] {
        let input = client.find(Locator::Id(field)).await.unwrap();
        input.clear().await.unwrap();
        input.send_keys(value).await.unwrap();
    }
    click(&client, "ov-submit").await;
    until("the override applied", || async {
        text(&client, "#ov-result")
            .await
            .filter(|t| t.contains("applied"))
    })
    .await;
    let listed = until("the override listed", || async {
        text(&client, "#overrides")
            .await
            .filter(|t| t.contains("42"))
    })
    .await;
    assert!(listed.contains("rate_limit:emp:"), "{listed}");
    assert_eq!(request(service, "GET", "/employees/42").await.status, 200);
    assert_eq!(request(service, "GET", "/employees/42").await.status, 429);

    // A ban through the page: mallory may not even try the right password, on any instance, until lifted.
    let login = |user: &'static str| async move {
        request_with_body(
            service,
            "POST",
            &format!("/login/{user}"),
            &[],
            Some("hunter2"),
        )
        .await
    };
    assert_eq!(login("mallory").await.status, 200);
    until("the login policy to ban a key of", || async {
        let select = client.find(Locator::Id("ban-policy")).await.ok()?;
        select.select_by_value("login").await.ok()
    })
    .await;
    let key = client.find(Locator::Id("ban-key")).await.unwrap();
    key.send_keys("mallory").await.unwrap();
    click(&client, "ban-submit").await;
    until("the ban applied", || async {
        text(&client, "#ban-result")
            .await
            .filter(|t| t.contains("banned"))
    })
    .await;
    let listed = until("the ban listed", || async {
        text(&client, "#bans")
            .await
            .filter(|t| t.contains("mallory"))
    })
    .await;
    assert!(
        listed.contains("login") && listed.contains("ban"),
        "{listed}"
    );
    let banned = login("mallory").await;
    assert_eq!(banned.status, 429, "{banned:?}");
    let retry: u64 = banned.header("retry-after").unwrap().parse().unwrap();
    assert!((3590..=3600).contains(&retry), "Retry-After: {retry}");
    assert_eq!(login("alice").await.status, 200);
    // Lifted from the page: admitted again.
    click_css(&client, "#bans .ban-lift").await;
    until("the ban lifted", || async {
        text(&client, "#ban-result")
            .await
            .filter(|t| t.contains("lifted"))
    })
    .await;
    assert_eq!(login("mallory").await.status, 200);
    // Each change is on the record the page lists, newest first, made by the operator.
    let record = until("the changes listed", || async {
        text(&client, "#changes")
            .await
            .filter(|t| t.contains("lifted"))
    })
    .await;
    let (lifted, banned, set) = (
        record.find("lifted the block").unwrap(),
        record.find("banned key \"mallory\"").unwrap(),
        record.find("set the override of key \"42\"").unwrap(),
    );
    assert!(lifted < banned && banned < set, "{record}");
    assert!(record.contains("operator"), "{record}");

    if let Some(path) = std::env::var_os("LIMITER_ADMIN_SCREENSHOT") {
        client
            .goto(&format!("http://{service}/admin"))
            .await
            .unwrap();
        until("the page refreshed", || text(&client, "#top tr.top-row")).await;
        // Some seconds of the charts.
        tokio::time::sleep(Duration::from_secs(20)).await;
        std::fs::write(path, client.screenshot().await.unwrap()).unwrap();
    }
    load.abort();
    client.close().await.unwrap();
}

/// What a viewer's token shows: every list, the ban and the override among them, the record of changes, and
/// not one control that changes anything; what the page's token asks to change is refused (403).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_everything_and_no_button_that_changes_anything() {
    let server = RedisServer::start();
    let (limiter, service) = serve(&server).await;
    // An override and a ban, made by the operator: rows that would have Remove and Lift buttons.
    let login = request_with_body(service, "POST", "/login/mallory", &[], Some("hunter2"));
    assert_eq!(login.await.status, 200);
    assert_eq!(request(service, "GET", "/employees/42").await.status, 200);
    let operator = format!("Bearer {TOKEN}");
    let headers = [
        ("authorization", operator.as_str()),
        ("content-type", "application/json"),
    ];
    for (path, body) in [
        (
            "/admin/api/overrides",
            r#"{"prefix": "rate_limit:emp:", "key": "42", "max": 1}"#,
        ),
        (
            "/admin/api/bans",
            r#"{"policy": "login", "key": "mallory", "duration_ms": 600000}"#,
        ),
    ] {
        let made = request_with_body(service, "PUT", path, &headers, Some(body)).await;
        assert_eq!(made.status, 204, "{path}: {made:?}");
    }

    let driver = Driver::start();
    let client = browser(&driver).await;
    sign_in(&client, service, VIEWER).await;

    until("the viewer's role", || async {
        text(&client, "#role").await.filter(|t| t == "viewer")
    })
    .await;
    until("the ban listed", || async {
        text(&client, "#bans")
            .await
            .filter(|t| t.contains("mallory"))
    })
    .await;
    until("the override listed", || async {
        text(&client, "#overrides")
            .await
            .filter(|t| t.contains("42"))
    })
    .await;
    until("the changes listed", || async {
        text(&client, "#changes")
            .await
            .filter(|t| t.contains("banned key \"mallory\"") && t.contains("operator"))
    })
    .await;
    until("the switch's state", || async {
        text(&client, "#switch-state").await.filter(|t| t == "on")
    })
    .await;
    // Every button on show: signing out and inspecting, nothing else.
    let mut shown = Vec::new();
    for button in client.find_all(Locator::Css("button")).await.unwrap() {
        if button.is_displayed().await.unwrap() {
            shown.push(button.text().await.unwrap());
        }
    }
    shown.sort();
    assert_eq!(shown, ["Inspect", "Sign out"]);
    for hidden in ["#override-form", "#ban-form", "#switch"] {
        let element = client.find(Locator::Css(hidden)).await.unwrap();
        assert!(!element.is_displayed().await.unwrap(), "{hidden}");
    }
    for control in [".ban-lift", ".ov-remove"] {
        assert!(
            client
                .find_all(Locator::Css(control))
                .await
                .unwrap()
                .is_empty(),
            "{control}"
        );
    }
    // What the page's token asks to change, the API refuses, saying why.
    let refused = client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch('/admin/api/switch', {
               method: 'PUT',
               headers: { Authorization: 'Bearer ' + sessionStorage.getItem('limiter-admin-token'),
                          'Content-Type': 'application/json' },
               body: JSON.stringify({ enabled: false }),
             }).then(async (r) => done([r.status, (await r.json()).error]));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(refused[0], 403, "{refused}");
    assert!(
        refused[1].as_str().unwrap().contains("operator's token"),
        "{refused}"
    );
    assert!(limiter.is_enabled());
    client.close().await.unwrap();
}
