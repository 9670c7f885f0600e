//! An in-process upstream as strict as nginx's `limit_req` with no burst, on this process's own clock: GCRA
//! with no tolerance, so a request is admitted only if at least `spacing` passed since the last one admitted
//! (measured with [`Instant`], to the microsecond), else refused with a bare 429 (no `Retry-After`, no quota
//! fields); a refusal changes nothing. It records every request it read: when, what it answered, and the
//! `x-node` and `x-caller` headers that say who sent it (tests/tests/suite/strict_upstream.rs).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the upstream saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// When it was decided (its head read), from the upstream's start.
    pub at: Duration,
    /// What it answered: 200, or 429.
    pub status: u16,
    /// Its `x-node` header, if it had one.
    pub node: Option<String>,
    /// Its `x-caller` header, if it had one.
    pub caller: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    /// When the last admitted request arrived.
    last_admitted: Option<Instant>,
    arrivals: Vec<Arrival>,
}

/// The strict upstream, serving on a loopback port from a thread of its own (its own single-threaded Tokio
/// runtime, so the tasks of the test that calls it never hold up its clock) until it is dropped.
#[derive(Debug)]
pub struct StrictUpstream {
    address: SocketAddr,
    server: Server,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the serving thread shares with the test: when it started, what it decided.
#[derive(Debug, Clone)]
struct Server {
    started: Instant,
    spacing: Duration,
    state: Arc<Mutex<State>>,
}

impl StrictUpstream {
    /// Starts serving on a free loopback port, admitting one request every `spacing` at most.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound or no thread started.
    pub fn start(spacing: Duration) -> StrictUpstream {
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .expect("a free loopback port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let address = listener.local_addr().expect("a bound address");
        let server = Server {
            started: Instant::now(),
            spacing,
            state: Arc::default(),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = server.clone();
        let thread = std::thread::Builder::new()
            .name("strict-upstream".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a Tokio runtime for the strict upstream");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a Tokio listener");
                    let accepting = async {
                        loop {
                            let Ok((stream, _)) = listener.accept().await else {
                                continue;
                            };
                            let serving = serving.clone();
                            tokio::spawn(async move { serving.serve(stream).await });
                        }
                    };
                    tokio::select! {
                        _ = stopped => {}
                        () = accepting => {}
                    }
                });
            })
            .expect("a thread for the strict upstream");
        StrictUpstream {
            address,
            server,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// When it started: what [`Arrival::at`] counts from.
    pub fn started(&self) -> Instant {
        self.server.started
    }

    /// Every request it has answered, in the order it decided them.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.server
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .arrivals
            .clone()
    }
}

impl Drop for StrictUpstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Server {
    /// Reads one request on `stream` (its head: a GET has no body), decides it and answers; the connection
    /// closes after. A connection that breaks before its head ends is dropped, undecided.
    async fn serve(&self, mut stream: TcpStream) {
        let mut head = Vec::new();
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => head.extend_from_slice(&buffer[..read]),
            }
            if head.len() > 64 * 1024 {
                return;
            }
        }
        let head = String::from_utf8_lossy(&head);
        let header = |name: &str| {
            head.lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(key, _)| key.trim().eq_ignore_ascii_case(name))
                .map(|(_, value)| value.trim().to_owned())
        };
        let status = {
            let mut state = self
                .state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // Read under the lock: the requests are decided in the order of their times.
            let now = Instant::now();
            let admitted = state
                .last_admitted
                .is_none_or(|last| now.saturating_duration_since(last) >= self.spacing);
            if admitted {
                state.last_admitted = Some(now);
            }
            let status = if admitted { 200 } else { 429 };
            state.arrivals.push(Arrival {
                at: now.saturating_duration_since(self.started),
                status,
                node: header("x-node"),
                caller: header("x-caller"),
            });
            status
        };
        let answer = if status == 200 {
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
        } else {
            "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        };
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    }
}
