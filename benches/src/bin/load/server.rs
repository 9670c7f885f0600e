//! What Redis says of itself: CPU time and script calls (`INFO cpu commandstats`), read around every run.

use redis::Connection;

/// One reading of the server's counters.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counters {
    /// `used_cpu_sys + used_cpu_user`: the whole server process, µs.
    pub(crate) cpu_us: f64,
    /// Calls of `EVALSHA` and `EVAL`.
    pub(crate) script_calls: u64,
    /// `EVAL` calls alone (the NOSCRIPT fallback; none expected once warm).
    pub(crate) eval_calls: u64,
    /// Time Redis spent executing those calls, µs (`usec` of commandstats).
    pub(crate) script_us: u64,
}

impl Counters {
    pub(crate) fn read(connection: &mut Connection) -> Counters {
        let text: String = redis::cmd("INFO")
            .arg("cpu")
            .arg("commandstats")
            .query(connection)
            .expect("INFO answers");
        let mut counters = Counters::default();
        for line in text.lines() {
            let Some((name, value)) = line.trim().split_once(':') else {
                continue;
            };
            match name {
                "used_cpu_sys" | "used_cpu_user" => {
                    counters.cpu_us += value.parse::<f64>().unwrap_or(0.0) * 1e6;
                }
                "cmdstat_evalsha" | "cmdstat_eval" => {
                    let calls = field(value, "calls");
                    counters.script_calls += calls;
                    counters.script_us += field(value, "usec");
                    if name == "cmdstat_eval" {
                        counters.eval_calls += calls;
                    }
                }
                _ => {}
            }
        }
        counters
    }

    /// What happened between `before` and this reading.
    pub(crate) fn since(&self, before: &Counters) -> Counters {
        Counters {
            cpu_us: self.cpu_us - before.cpu_us,
            script_calls: self.script_calls - before.script_calls,
            eval_calls: self.eval_calls - before.eval_calls,
            script_us: self.script_us - before.script_us,
        }
    }
}

/// `name=<n>` in a commandstats line (`calls=12,usec=34,usec_per_call=2.83,...`).
fn field(stats: &str, name: &str) -> u64 {
    stats
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// Empties the server (keys only: loaded scripts stay), so that every run starts from the same state.
pub(crate) fn flush(connection: &mut Connection) {
    redis::cmd("FLUSHALL")
        .arg("SYNC")
        .query::<()>(connection)
        .expect("FLUSHALL answers");
}

/// `redis_version` from `INFO server`.
pub(crate) fn version(connection: &mut Connection) -> String {
    let text: String = redis::cmd("INFO")
        .arg("server")
        .query(connection)
        .expect("INFO answers");
    text.lines()
        .find_map(|line| line.trim().strip_prefix("redis_version:"))
        .unwrap_or("unknown")
        .to_owned()
}
