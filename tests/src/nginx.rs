//! A throw-away nginx on a free loopback port whose one location admits requests as `limit_req` does, with
//! no burst: a strict upstream as users meet it (tests/tests/suite/strict_upstream.rs).
//!
//! The test writes the whole configuration: one worker, every log and temporary path inside a directory of
//! its own, `limit_req_zone $binary_remote_addr zone=api:1m rate=<N>r/s` (every request from loopback counts
//! in one entry) and `location / { limit_req zone=api nodelay; limit_req_status 429; ... }` answering 200
//! `ok` from a file: not with `return 200`, which answers before `limit_req` runs and so admits everything.
//! nginx admits a request when at least `1000 / N` ms of its millisecond clock passed since the last it
//! admitted; it refuses one with 429, without `Retry-After`, and a refusal changes nothing. The machine's own
//! nginx service is never used.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// What the panic says when nginx cannot be found.
const NOT_INSTALLED: &str =
    "nginx is not installed, and the strict-upstream tests need a real one: install \
     Debian's nginx-light (`apt-get install nginx-light`), or run scripts/test, which installs it";

/// An nginx master process (with one worker) on a free loopback port, stopped when dropped.
#[derive(Debug)]
pub struct NginxServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

/// One request as nginx's access log holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessEntry {
    /// When nginx logged it (`$msec`, its own clock at the end of the request): ms since the Unix epoch, to
    /// the millisecond.
    pub at_ms: f64,
    /// The status it answered: 200, or 429 for a request `limit_req` refused.
    pub status: u16,
    /// The request's `x-node` header (the process or limiter that sent it), if it had one.
    pub node: Option<String>,
    /// The request's `x-caller` header (the caller within its node), if it had one.
    pub caller: Option<String>,
}

impl NginxServer {
    /// Starts nginx on a free loopback port admitting `rate_per_sec` requests a second, one every
    /// `1000 / rate_per_sec` ms with no burst, and waits until its worker answers.
    ///
    /// # Panics
    ///
    /// When nginx is not installed (saying how to install it) or does not start (quoting its error log):
    /// the tests that need it fail, loudly.
    pub fn start(rate_per_sec: u32) -> NginxServer {
        assert!(rate_per_sec > 0, "nginx's rate must be at least 1r/s");
        let binary = test_support::find("nginx").unwrap_or_else(|| panic!("{NOT_INSTALLED}"));
        let mut last_error = String::new();
        // A port found free may be taken before nginx binds it: another, then.
        for _ in 0..5 {
            let port = free_port();
            let dir =
                std::env::temp_dir().join(format!("limiter-nginx-{}-{port}", std::process::id()));
            let mut server = NginxServer {
                child: None,
                port,
                dir,
            };
            match server.spawn(&binary, rate_per_sec) {
                Ok(()) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("could not start nginx ({}): {last_error}", binary.display());
    }

    /// The URL of the server: `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address())
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// Every request nginx has logged, in the order it logged them (its readiness probes excepted).
    ///
    /// # Panics
    ///
    /// When the access log cannot be read or holds a line of another format.
    pub fn access_log(&self) -> Vec<AccessEntry> {
        let path = self.dir.join("access.log");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        text.lines()
            .map(|line| {
                parse_entry(line)
                    .unwrap_or_else(|| panic!("an access log line of another format: {line:?}"))
            })
            .collect()
    }

    /// What nginx wrote to its error log so far (empty if nothing).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    fn spawn(&mut self, binary: &Path, rate_per_sec: u32) -> Result<(), String> {
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
        // What `location /` answers, 200 "ok\n": a file (see `configuration`).
        std::fs::create_dir_all(self.dir.join("www")).map_err(|e| e.to_string())?;
        std::fs::write(self.dir.join("www/ok.txt"), "ok\n").map_err(|e| e.to_string())?;
        let config = self.dir.join("nginx.conf");
        std::fs::write(&config, configuration(&self.dir, self.port, rate_per_sec))
            .map_err(|e| e.to_string())?;
        // What it says before it reads its configuration goes to a file: a pipe no one reads could fill.
        let stderr =
            std::fs::File::create(self.dir.join("stderr.log")).map_err(|e| e.to_string())?;
        // `-e`: the error log before the configuration is read, in the directory too (not /var/log/nginx,
        // which a normal user cannot write).
        let mut child = Command::new(binary)
            .arg("-p")
            .arg(&self.dir)
            .arg("-c")
            .arg(&config)
            .arg("-e")
            .arg(self.dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let stderr =
                    std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default();
                return Err(format!(
                    "nginx on port {} exited ({status}): {stderr}{}",
                    self.port,
                    self.error_log()
                ));
            }
            if self.answers() {
                self.child = Some(child);
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child = Some(child);
                self.stop();
                return Err(format!(
                    "nginx on port {} did not answer within 10 s: {}",
                    self.port,
                    self.error_log()
                ));
            }
            sleep(Duration::from_millis(20));
        }
    }

    /// Whether the worker answers `GET /ready` (a location outside the limit, logged nowhere).
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(self.address()) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let request = "GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 204")
    }

    /// Stops nginx: SIGTERM (its fast shutdown, which stops the worker too), then SIGKILL to the master if it
    /// has not exited within 5 s.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for NginxServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The configuration of an nginx in `dir` listening on loopback `port`, admitting `rate` requests a second.
fn configuration(dir: &Path, port: u16, rate: u32) -> String {
    let dir = dir.display();
    format!(
        r#"# Written by tests/src/nginx.rs: a throw-away nginx, stopped when its test ends.
daemon off;
master_process on;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;

events {{
    worker_connections 1024;
}}

http {{
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    log_format strict '$msec $status node=$http_x_node caller=$http_x_caller';
    access_log {dir}/access.log strict;
    limit_req_zone $binary_remote_addr zone=api:1m rate={rate}r/s;

    server {{
        listen 127.0.0.1:{port};
        location = /ready {{
            access_log off;
            return 204;
        }}
        # Not `return 200`: `return` answers in the rewrite phase, before `limit_req` (the preaccess phase)
        # ever runs, and would admit everything. A file is served in the content phase, after it.
        location / {{
            limit_req zone=api nodelay;
            limit_req_status 429;
            limit_req_log_level notice;
            root {dir}/www;
            default_type text/plain;
            try_files /ok.txt =500;
        }}
    }}
}}
"#
    )
}

/// One line of the `strict` log format: `<$msec> <$status> node=<x-node> caller=<x-caller>`, `-` for a
/// header the request did not have.
fn parse_entry(line: &str) -> Option<AccessEntry> {
    let mut words = line.split(' ');
    let (seconds, millis) = words.next()?.split_once('.')?;
    let millis = seconds.parse::<u64>().ok()? * 1_000 + millis.parse::<u64>().ok()?;
    let status = words.next()?.parse().ok()?;
    let header = |word: Option<&str>, name: &str| {
        let value = word?.strip_prefix(name)?;
        Some((value != "-").then(|| value.to_owned()))
    };
    let node = header(words.next(), "node=")?;
    let caller = header(words.next(), "caller=")?;
    Some(AccessEntry {
        at_ms: millis as f64,
        status,
        node,
        caller,
    })
}

/// A loopback port free now.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free loopback port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_log_line_is_read_back() {
        assert_eq!(
            parse_entry("1700000000.123 429 node=b caller=7"),
            Some(AccessEntry {
                at_ms: 1_700_000_000_123.0,
                status: 429,
                node: Some("b".to_owned()),
                caller: Some("7".to_owned()),
            })
        );
        assert_eq!(
            parse_entry("1700000000.000 200 node=- caller=-").map(|e| (e.node, e.caller)),
            Some((None, None))
        );
        assert_eq!(parse_entry("garbage"), None);
    }
}
