//! What one run measured: a spread run (or a `redis-benchmark` run), an abusive-key run.

use std::time::Duration;

use limiter_runtime::Algorithm;

use crate::contender::Contender;
use crate::run::Tally;
use crate::server::Counters;

/// One run of one contender in one cell (algorithm × concurrency).
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    /// Where it ran: an index into the report's layouts.
    pub(crate) layout: usize,
    pub(crate) contender: Contender,
    pub(crate) algorithm: Algorithm,
    pub(crate) concurrency: usize,
    pub(crate) round: usize,
    pub(crate) rps: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    pub(crate) admitted: f64,
    pub(crate) cpu_us_per_decision: f64,
    /// CPU time of this process (client: runtime, redis-rs, the library, its socket I/O) per decision, µs.
    pub(crate) client_cpu_us_per_decision: f64,
    pub(crate) script_us_per_call: f64,
    pub(crate) calls_per_decision: f64,
    pub(crate) decisions: u64,
    pub(crate) degraded: u64,
    pub(crate) failed: u64,
    pub(crate) eval_calls: u64,
    pub(crate) error: Option<String>,
}

/// Which run of a cell a measurement is: where, what, at which concurrency, in which round.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell {
    pub(crate) layout: usize,
    pub(crate) contender: Contender,
    pub(crate) algorithm: Algorithm,
    pub(crate) concurrency: usize,
    pub(crate) round: usize,
}

impl Measured {
    pub(crate) fn from_run(
        cell: Cell,
        duration: Duration,
        tally: &Tally,
        redis: &Counters,
        client_cpu_us: f64,
        degraded: u64,
    ) -> Measured {
        // Redis also ran the calls in flight at the deadline.
        let executed = (tally.decisions + tally.late).max(1) as f64;
        Measured {
            layout: cell.layout,
            contender: cell.contender,
            algorithm: cell.algorithm,
            concurrency: cell.concurrency,
            round: cell.round,
            rps: tally.decisions as f64 / duration.as_secs_f64(),
            p50_us: tally.percentile_us(0.50),
            p99_us: tally.percentile_us(0.99),
            p999_us: tally.percentile_us(0.999),
            admitted: tally.admitted as f64 / tally.decisions.max(1) as f64,
            cpu_us_per_decision: redis.cpu_us / executed,
            client_cpu_us_per_decision: client_cpu_us / executed,
            script_us_per_call: redis.script_us as f64 / redis.script_calls.max(1) as f64,
            calls_per_decision: redis.script_calls as f64 / executed,
            decisions: tally.decisions,
            degraded,
            failed: tally.failed,
            eval_calls: redis.eval_calls,
            error: None,
        }
    }

    /// A `redis-benchmark` run (`cell.contender`: which script) of `requests` calls at `rps`.
    pub(crate) fn from_ceiling(cell: Cell, rps: f64, requests: u64, redis: &Counters) -> Measured {
        let executed = requests.max(1) as f64;
        Measured {
            layout: cell.layout,
            contender: cell.contender,
            algorithm: cell.algorithm,
            concurrency: cell.concurrency,
            round: cell.round,
            rps,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            p999_us: f64::NAN,
            admitted: f64::NAN,
            cpu_us_per_decision: redis.cpu_us / executed,
            client_cpu_us_per_decision: f64::NAN,
            script_us_per_call: redis.script_us as f64 / redis.script_calls.max(1) as f64,
            calls_per_decision: redis.script_calls as f64 / executed,
            decisions: requests,
            degraded: 0,
            failed: 0,
            eval_calls: redis.eval_calls,
            error: None,
        }
    }

    pub(crate) fn failed(cell: Cell, error: String) -> Measured {
        Measured {
            layout: cell.layout,
            contender: cell.contender,
            algorithm: cell.algorithm,
            concurrency: cell.concurrency,
            round: cell.round,
            rps: f64::NAN,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            p999_us: f64::NAN,
            admitted: f64::NAN,
            cpu_us_per_decision: f64::NAN,
            client_cpu_us_per_decision: f64::NAN,
            script_us_per_call: f64::NAN,
            calls_per_decision: f64::NAN,
            decisions: 0,
            degraded: 0,
            failed: 0,
            eval_calls: 0,
            error: Some(error),
        }
    }
}

/// One run of the abusive-key scenario.
#[derive(Debug, Clone)]
pub(crate) struct Abused {
    pub(crate) contender: Contender,
    pub(crate) algorithm: Algorithm,
    pub(crate) round: usize,
    pub(crate) rps: f64,
    pub(crate) decisions: u64,
    pub(crate) admitted: u64,
    /// Script calls Redis ran during the run: all for the abusive key.
    pub(crate) redis_calls: u64,
    pub(crate) seconds: f64,
    pub(crate) degraded: u64,
    pub(crate) failed: u64,
    /// Script calls during the warm-up on the abusive key, first contact included.
    pub(crate) warmup_calls: u64,
}

impl Abused {
    pub(crate) fn from_run(
        contender: Contender,
        algorithm: Algorithm,
        round: usize,
        duration: Duration,
        tally: &Tally,
        redis: &Counters,
        degraded: u64,
    ) -> Abused {
        Abused {
            contender,
            algorithm,
            round,
            rps: tally.decisions as f64 / duration.as_secs_f64(),
            decisions: tally.decisions,
            admitted: tally.admitted,
            redis_calls: redis.script_calls,
            seconds: duration.as_secs_f64(),
            degraded,
            failed: tally.failed,
            warmup_calls: 0,
        }
    }
}
