//! Instructions, counted with callgrind (`load --instructions`): what a decision costs Redis and what it costs
//! the client, beside the baseline (a minimal hand-written script called with `redis::Script`), in one run. A
//! count holds still on a noisy machine where a few percent of decisions per second do not.
//!
//! - Redis: a `redis-server` under callgrind, counting while each contender makes its calls (one task, the
//!   spread scenario's keys and limit), and a sliding log's call of cost 1 against one of cost 9,000,000.
//! - The client: this binary again, under callgrind, counting one contender's decisions (see `worker`); and a
//!   hot key at 64 tasks, where most calls wait for another's round trip (coalescing): what such a waiter
//!   costs, beside a call that goes alone.

mod callgrind;
pub(crate) mod worker;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;

use limiter_runtime::{Algorithm, Limiter, Priority, Rule};
use test_support::RedisServer;

use self::callgrind::{client_launcher, server_launcher, tools, total, Counted};
use self::worker::Job;
use crate::contender::{Caller, Contender, Scenario};

/// The contenders counted side by side.
const CONTENDERS: [Contender; 3] = [Contender::Baseline, Contender::Plain, Contender::Annotated];

/// How much to count.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Calls per count (Redis's, and a client's).
    pub(crate) calls: u64,
    pub(crate) algorithms: Vec<Algorithm>,
}

/// Counts everything the plan says, and writes it as markdown.
pub(crate) fn run(plan: &Plan) -> Result<String, String> {
    let (valgrind, control) = tools().ok_or(
        "valgrind is not installed (Debian package valgrind; scripts/bench installs it)".to_owned(),
    )?;
    let dir = std::env::temp_dir().join(format!("limiter-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "## Instructions (callgrind)\n\nEach figure is a count of instructions (valgrind's callgrind), divided by \
         the calls counted ({} a count): it holds still where decisions per second do not. Ratios are against \
         the baseline, counted in the same run.\n",
        plan.calls
    );
    let redis = redis_side(plan, &valgrind, &control, &dir)?;
    text.push_str(&redis);
    let client = client_side(plan, &valgrind, &dir)?;
    text.push_str(&client);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(text)
}

/// Redis's instructions per call of each contender, and a call's cost against its weight.
fn redis_side(plan: &Plan, valgrind: &Path, control: &Path, dir: &Path) -> Result<String, String> {
    let out = dir.join("redis.callgrind");
    let launcher = server_launcher(valgrind, &out);
    let launcher: Vec<&str> = launcher.iter().map(String::as_str).collect();
    let server = RedisServer::start_launched(&launcher);
    let pid = server.pid().ok_or("redis-server has no process")?;
    let mut counted = Counted::new(control.to_owned(), pid, out);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let url = server.url();
    let mut text = String::from(
        "### Redis's instructions per call\n\nA call of cost 1, one task, the spread scenario's 10 000 keys and \
         limit (1 000 per 10 s): almost every call admitted.\n\n| algorithm | baseline (minimal script) | plain \
         API | annotated fn | plain / baseline |\n|---|---|---|---|---|\n",
    );
    let calls = plan.calls;
    runtime.block_on(async {
        for &algorithm in &plan.algorithms {
            let mut each = Vec::new();
            for contender in CONTENDERS {
                empty(&server)?;
                let caller = Caller::new(contender, algorithm, Scenario::Spread, &url).await;
                worker::calls(&caller, 1, 200, 10_000, 3).await;
                let count = counted
                    .count(worker::calls(&caller, 1, calls, 10_000, 5))
                    .await?;
                each.push(count as f64 / calls as f64);
            }
            let _ = writeln!(
                text,
                "| {} | {:.0} | {:.0} | {:.0} | {:.3}× |",
                algorithm.name(),
                each[0],
                each[1],
                each[2],
                each[1] / each[0]
            );
        }
        // A cost is a weight: a sliding log's call of 9,000,000 units against one of 1, on fresh keys.
        empty(&server)?;
        let limiter = Limiter::builder()
            .redis(url.as_str())
            .deadline(std::time::Duration::from_secs(5))
            .heartbeat_every(std::time::Duration::from_secs(3_600))
            .build()
            .map_err(|e| e.to_string())?;
        let rule = Rule::new()
            .prefix("weight:")
            .max(10_000_000)
            .window(std::time::Duration::from_secs(60));
        limiter.check(&rule, "warm").await;
        let mut per_call = Vec::new();
        for cost in [1, 9_000_000] {
            let count = counted
                .count(async {
                    for i in 0..calls {
                        let decision = limiter.check(&rule, format!("{cost}:{i}")).cost(cost).await;
                        assert!(decision.allowed && !decision.degraded, "{decision:?}");
                    }
                })
                .await?;
            per_call.push(count as f64 / calls as f64);
        }
        let _ = write!(
            text,
            "\n### A cost is a weight\n\nRedis's instructions per call of a sliding log (plain API, a limit of \
             10 000 000 a minute, a fresh key each call).\n\n| cost 1 | cost 9 000 000 | ratio |\n|---|---|---|\n\
             | {:.0} | {:.0} | {:.3}× |\n\n",
            per_call[0],
            per_call[1],
            per_call[1] / per_call[0]
        );
        // A priority: a limit that keeps a share for critical calls, called at `Normal` (each call must leave the
        // share free, and sends it beside `max`), against the same limit without a reserve.
        let _ = write!(
            text,
            "### A priority\n\nRedis's instructions per call (plain API, a limit of 1 000 per 10 s, a fresh \
             key each call, admitted; a leaky bucket waiting up to 10 s): without a reserve, and with `reserve(Critical, 20)`, \
             the calls `Normal`.\n\n\
             | algorithm | no reserve | a reserve, a normal call | ratio |\n|---|---|---|---|\n"
        );
        for &algorithm in &plan.algorithms {
            empty(&server)?;
            let mut plain = Rule::new()
                .prefix(format!("priority:{algorithm}:"))
                .algorithm(algorithm)
                .max(1_000)
                .window(std::time::Duration::from_secs(10));
            if algorithm == Algorithm::LeakyBucket {
                // A share of a leaky bucket is of its slots within its wait: one that does not wait has one.
                plain = plain.max_wait(std::time::Duration::from_secs(10));
            }
            let kept = plain
                .clone()
                .prefix(format!("priority:{algorithm}:kept:"))
                .reserve(Priority::Critical, 20);
            limiter.check(&plain, "warm").await;
            limiter.check(&kept, "warm").await;
            let mut per_call = Vec::new();
            for rule in [&plain, &kept] {
                let count = counted
                    .count(async {
                        for i in 0..calls {
                            let decision = limiter.check(rule, i).await;
                            assert!(decision.allowed && !decision.degraded, "{decision:?}");
                        }
                    })
                    .await?;
                per_call.push(count as f64 / calls as f64);
            }
            let _ = writeln!(
                text,
                "| {algorithm} | {:.0} | {:.0} | {:.3}× |",
                per_call[0],
                per_call[1],
                per_call[1] / per_call[0]
            );
        }
        text.push('\n');
        // A permit in flight: taking it, and giving it back, beside a sliding log's call, on the same keys.
        empty(&server)?;
        let log = Rule::new()
            .prefix("log:")
            .max(1_000_000)
            .window(std::time::Duration::from_secs(60));
        let in_flight = Rule::new().prefix("in_flight:").in_flight(1_000_000);
        limiter.check(&log, "warm").await;
        drop(limiter.acquire(&in_flight, "warm").await);
        let sliding_log = counted
            .count(async {
                for i in 0..calls {
                    assert!(limiter.check(&log, i % 10_000).await.allowed);
                }
            })
            .await?;
        let mut permits = Vec::new();
        let acquire = counted
            .count(async {
                for i in 0..calls {
                    permits.push(limiter.acquire(&in_flight, i % 10_000).await.expect("a permit"));
                }
            })
            .await?;
        let release = counted
            .count(async {
                for permit in permits.drain(..) {
                    permit.settle(limiter_runtime::AsCharged).await;
                }
            })
            .await?;
        let each = |count: u64| count as f64 / calls as f64;
        let _ = write!(
            text,
            "### A permit in flight\n\nRedis's instructions per call (plain API, one task, keys among 10 000): a \
             sliding log's `check`, an in-flight limit's `acquire`, and the permit's release (one at a time).\n\n\
             | sliding log check | acquire | acquire / sliding log | release |\n|---|---|---|---|\n\
             | {:.0} | {:.0} | {:.3}× | {:.0} |\n\n",
            each(sliding_log),
            each(acquire),
            each(acquire) / each(sliding_log),
            each(release)
        );
        Ok::<(), String>(())
    })?;
    drop(server);
    Ok(text)
}

/// The client's instructions per decision of each contender, and what a coalesced waiter costs.
fn client_side(plan: &Plan, valgrind: &Path, dir: &Path) -> Result<String, String> {
    let server = RedisServer::start();
    let url = server.url();
    let mut text = String::from(
        "### The client's instructions per decision\n\nOne task, random keys among 10 000, a call of cost 1, \
         coalescing on (the default), on a single-threaded runtime: everything the decision costs this process \
         (the runtime's and redis-rs's work included). The in_flight row is the plain API's check of an in-flight \
         rule: a permit taken and given back (its release sent by the limiter's task), beside the first \
         algorithm's baseline.\n\n| algorithm | baseline | plain API | annotated fn | \
         plain / baseline | annotated / baseline |\n|---|---|---|---|---|---|\n",
    );
    // The baseline of the first algorithm (the sliding log's, by default): what a permit is set beside.
    let mut baseline = f64::NAN;
    for &algorithm in &plan.algorithms {
        let mut each = Vec::new();
        for contender in CONTENDERS {
            // Every count starts from an empty Redis: the same work each time, and no key left in another
            // algorithm's shape.
            empty(&server)?;
            let job = Job {
                url: url.clone(),
                contender,
                algorithm,
                scenario: Scenario::Spread,
                calls: plan.calls,
                tasks: 1,
            };
            let (count, _) = count_client(valgrind, dir, &job)?;
            each.push(count as f64 / plan.calls as f64);
        }
        if baseline.is_nan() {
            baseline = each[0];
        }
        let _ = writeln!(
            text,
            "| {} | {:.0} | {:.0} | {:.0} | {:.3}× | {:.3}× |",
            algorithm.name(),
            each[0],
            each[1],
            each[2],
            each[1] / each[0],
            each[2] / each[0]
        );
    }
    // A permit in flight: the plain API's check of an in-flight rule takes a permit and gives it back (a
    // second command, sent by the limiter's releasing task), beside the baseline's sliding log above.
    empty(&server)?;
    let permit = Job {
        url: url.clone(),
        contender: Contender::Plain,
        algorithm: Algorithm::InFlight,
        scenario: Scenario::Spread,
        calls: plan.calls,
        tasks: 1,
    };
    let (count, _) = count_client(valgrind, dir, &permit)?;
    let per_permit = count as f64 / plan.calls as f64;
    let _ = writeln!(
        text,
        "| in_flight (a permit taken and given back) | {baseline:.0} | {per_permit:.0} | — | {:.3}× | — |",
        per_permit / baseline
    );
    // A call on a plan (`.plan("pro")` of a rule with three): beside the plain API's call, counted again here.
    let _ = write!(
        text,
        "\n| algorithm | plain API | plain API, on a plan | plan / plain |\n|---|---|---|---|\n"
    );
    for &algorithm in &plan.algorithms {
        let mut each = Vec::new();
        for contender in [Contender::Plain, Contender::PlainPlan] {
            empty(&server)?;
            let job = Job {
                url: url.clone(),
                contender,
                algorithm,
                scenario: Scenario::Spread,
                calls: plan.calls,
                tasks: 1,
            };
            let (count, _) = count_client(valgrind, dir, &job)?;
            each.push(count as f64 / plan.calls as f64);
        }
        let _ = writeln!(
            text,
            "| {} | {:.0} | {:.0} | {:.3}× |",
            algorithm.name(),
            each[0],
            each[1],
            each[1] / each[0]
        );
    }
    // Many keys at 64 tasks: the calls that find their line full go in batches, on any keys; the baseline's
    // each make a command of their own.
    let spread = |contender, tasks: u64, calls: u64| Job {
        url: url.clone(),
        contender,
        algorithm: Algorithm::SlidingLog,
        scenario: Scenario::Spread,
        calls,
        tasks,
    };
    let calls = plan.calls / 64 * 64;
    let many = [
        Contender::Baseline,
        Contender::Plain,
        Contender::PlainPerKey,
        Contender::Annotated,
    ];
    let mut per_decision = Vec::new();
    for contender in many {
        empty(&server)?;
        let (count, scripts) = count_client(valgrind, dir, &spread(contender, 64, calls))?;
        per_decision.push((count as f64 / calls as f64, scripts as f64 / calls as f64));
    }
    let _ = write!(
        text,
        "\n### Many keys at 64 tasks\n\nSliding log, random keys among 10 000, 64 tasks on a single-threaded \
         runtime, {calls} decisions: the client's instructions per decision, and script calls per decision.\n\n\
         | contender | instructions per decision | vs baseline | script calls per decision |\n|---|---|---|---|\n"
    );
    for (contender, (count, scripts)) in many.iter().zip(&per_decision) {
        let _ = writeln!(
            text,
            "| {} | {count:.0} | {:.3}× | {scripts:.3} |",
            contender.label(),
            count / per_decision[0].0
        );
    }
    // A hot key: alone (one task, every call its own round trip), then 64 tasks (most calls wait for another's
    // round trip and go in its batch).
    let hot = |tasks: u64, calls: u64| Job {
        url: url.clone(),
        contender: Contender::Plain,
        algorithm: Algorithm::SlidingLog,
        scenario: Scenario::Hot,
        calls,
        tasks,
    };
    empty(&server)?;
    let (alone, _) = count_client(valgrind, dir, &hot(1, plan.calls))?;
    let lone = alone as f64 / plan.calls as f64;
    let calls = plan.calls / 64 * 64;
    empty(&server)?;
    let (together, scripts) = count_client(valgrind, dir, &hot(64, calls))?;
    let waiters = calls.saturating_sub(scripts).max(1);
    let waiter = (together as f64 - scripts as f64 * lone) / waiters as f64;
    let _ = write!(
        text,
        "\n### A coalesced waiter\n\nOne hot key (sliding log, plain API), 64 tasks: {calls} decisions in {scripts} \
         script calls. A waiter is a call that went in another's batch; its cost is what the 64 tasks spent beyond \
         a lone call's per script call.\n\n| a lone call | per decision at 64 tasks | a waiter |\n|---|---|---|\n\
         | {lone:.0} | {:.0} | {waiter:.0} |\n",
        together as f64 / calls as f64
    );
    Ok(text)
}

/// Empties `server`: every count starts from the same state, no key left in another algorithm's shape.
fn empty(server: &RedisServer) -> Result<(), String> {
    redis::cmd("FLUSHALL")
        .query::<()>(&mut server.connection())
        .map_err(|e| format!("cannot empty the benchmark's Redis: {e}"))
}

/// Runs `job` under callgrind: the instructions it counted, and the script calls Redis ran meanwhile.
fn count_client(valgrind: &Path, dir: &Path, job: &Job) -> Result<(u64, u64), String> {
    let out = dir.join(format!(
        "client.{}.{}.{}",
        job.contender.name(),
        job.algorithm.name(),
        job.tasks
    ));
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let output = client_launcher(valgrind, &out)
        .arg(exe)
        .args(job.args())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "a counted client failed ({}): {stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let scripts = stdout
        .lines()
        .find_map(|line| line.strip_prefix("decisions "))
        .and_then(|rest| rest.split_whitespace().nth(2)?.parse().ok())
        .ok_or_else(|| format!("a counted client said {stdout:?}"))?;
    Ok((total(&out)?, scripts))
}
