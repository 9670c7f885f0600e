//! In-memory micro-benchmarks (criterion): ns per decision of the in-memory store against `governor`'s keyed
//! limiter, the attribute's own overhead, and what the parts of a decision cost.
//!
//! - `in_memory/<hot_key|100k_keys>/<n>t/<contender>`: one hot key, or 100 000 keys picked at random, from 1 or
//!   2 threads. Every limiter allows 1 000 per second per key (governor: `Quota::per_second(1000)`, whose burst
//!   is 1 000 too; ours: `max = 1000`, `window = 1 s`). So the hot key is almost always denied, and the spread
//!   keys almost always admitted. Every contender gets the same `&String` key from the same table; the library
//!   builds its store key (prefix + key) from it, as it does for every call. The library's contenders: a
//!   `Limit` per algorithm (`Limiter::resolve`: the rule resolved once, keys handed over as `&str`, as governor's
//!   keyed limiter has its quota fixed when built and is handed its keys), and the plain API (`check`: the rule
//!   resolved and the key formatted on every call) for the token bucket and the sliding log.
//! - `attribute/<n>t/*`: the same `async fn` with and without `#[rate_limit]`, the limiter switched off
//!   (`set_enabled_here(false)`): what the attribute costs when it does nothing. Then the annotated function and the
//!   plain API with the limiter on (in memory), to show what the attribute adds to a real decision.
//! - `parts/*`: a formatted `String`, a clock read, a SipHash, a mutex, an `Arc` clone: to read the rest.
//!
//! The library's calls are async, but in memory they complete on their first poll, so each decision's future is
//! polled once, where it is (as `.await` polls the future it awaits), with a waker that does nothing: no
//! runtime ([`PollOnce`]). Annotated functions are awaited inside one future, in the limiter's `scope`, polled
//! once the same way.
//!
//! Times are wall-clock, split over the threads: with 2 threads, ns per decision is the wall time divided by
//! every decision of both threads. After criterion's own report comes one table (markdown): the store against
//! governor again, interleaved (rotating rounds, medians of per-round ratios: less sensitive to drift than
//! benchmarks run one after another), which is what the targets are judged on.

use std::future::{Future, IntoFuture};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::pin::pin;
use std::sync::{Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::Criterion;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use limiter_runtime::{rate_limit, Algorithm, Limiter, Period, RateLimited, Rule, Zone};

/// Keys of the spread scenario.
const KEYS: usize = 100_000;
/// Admissions per second per key, for every contender.
const PER_SECOND: u32 = 1_000;
/// The plain API's contenders (the library's other contenders are `Limit`s).
const PLAIN_API: [(&str, Algorithm); 2] = [
    ("plain_api_token_bucket", Algorithm::TokenBucket),
    ("plain_api_sliding_log", Algorithm::SlidingLog),
];
const GOVERNOR: &str = "governor";

/// Drives a future (or a request, awaited as it is) that completes on its first poll: polls it once, in place
/// (as `.await` polls the future it awaits), with a waker that does nothing.
trait PollOnce: IntoFuture + Sized {
    #[inline]
    fn poll_once(self, pending: &str) -> Self::Output {
        match pin!(self.into_future()).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("{pending}"),
        }
    }
}

impl<F: IntoFuture> PollOnce for F {}

/// xorshift64*: cheap enough not to matter, the same for every contender.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// An index in `0..n`.
    #[inline]
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
        ((r * n as u64) >> 32) as usize
    }
}

/// Runs `work(thread, n)` on `threads` threads, `iters` iterations split between them, each thread starting once
/// all are ready; `work` times its own loop. Returns the longest of those times: the wall time of the whole.
fn on_threads<F>(iters: u64, threads: usize, work: &F) -> Duration
where
    F: Fn(usize, u64) -> Duration + Sync,
{
    if threads == 1 {
        return work(0, iters);
    }
    let barrier = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let n =
                    iters / threads as u64 + u64::from((thread as u64) < iters % threads as u64);
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    work(thread, n)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .max()
            .unwrap_or_default()
    })
}

/// Runs `iters` decisions over `threads` threads, each picking keys from `keys` with its own generator.
fn run<F>(iters: u64, threads: usize, keys: &[String], decide: &F) -> Duration
where
    F: Fn(&String) -> bool + Sync + ?Sized,
{
    on_threads(iters, threads, &|thread, n| {
        let mut rng = Rng::new(thread as u64 + 1);
        let mut admitted = 0u64;
        let start = Instant::now();
        for _ in 0..n {
            let key = &keys[rng.below(keys.len())];
            admitted += u64::from(decide(black_box(key)));
        }
        let elapsed = start.elapsed();
        black_box(admitted);
        elapsed
    })
}

/// One way to decide for a key: a contender of the in-memory comparison.
type Decide = Box<dyn Fn(&String) -> bool + Sync>;

/// Every contender of the in-memory comparison, fresh (no state carried over), by name: for each algorithm, a
/// [`Limit`](limiter_runtime::Limit) (the rule resolved once, keys handed over as `&str`: what governor's
/// keyed limiter is, a quota fixed when built), and a calendar quota; the plain API (`Limiter::check`, which resolves the rule and
/// formats a `Display` key on every call) for two of them; governor last. Each of ours has a limiter of its own.
fn contenders() -> Vec<(String, Decide)> {
    let rule = |algorithm| {
        Rule::new()
            .prefix("mem:")
            .max(u64::from(PER_SECOND))
            .window(Duration::from_secs(1))
            .algorithm(algorithm)
    };
    let mut contenders: Vec<(String, Decide)> = Vec::new();
    for algorithm in Algorithm::ALL {
        let name = algorithm.name();
        let limit = Limiter::in_memory().resolve(&rule(algorithm));
        let decide = move |key: &String| {
            limit
                .check(key)
                .poll_once("an in-memory decision completes on its first poll")
                .allowed
        };
        contenders.push((name.to_owned(), Box::new(decide)));
    }
    // A calendar quota, a day in Berlin: the periods around now are found in the zone at every call.
    let berlin = Zone::get("Europe/Berlin").expect("in the bundled zone data");
    let daily = Rule::new()
        .prefix("mem:")
        .period(Period::Day)
        .tz(berlin)
        .max(u64::from(PER_SECOND));
    let limit = Limiter::in_memory().resolve(&daily);
    let decide = move |key: &String| {
        limit
            .check(key)
            .poll_once("an in-memory decision completes on its first poll")
            .allowed
    };
    contenders.push(("calendar_day".to_owned(), Box::new(decide)));
    for (name, algorithm) in PLAIN_API {
        let (limiter, rule) = (Limiter::in_memory(), rule(algorithm));
        let decide = move |key: &String| {
            limiter
                .check(&rule, key)
                .poll_once("an in-memory decision completes on its first poll")
                .allowed
        };
        contenders.push((name.to_owned(), Box::new(decide)));
    }
    let governor: DefaultKeyedRateLimiter<String> = RateLimiter::keyed(Quota::per_second(
        NonZeroU32::new(PER_SECOND).expect("not zero"),
    ));
    let decide = move |key: &String| governor.check_key(key).is_ok();
    contenders.push((GOVERNOR.to_owned(), Box::new(decide)));
    contenders
}

fn in_memory(c: &mut Criterion) {
    let spread: Vec<String> = (0..KEYS).map(|i| format!("user:{i}")).collect();
    let hot = vec!["user:hot".to_owned()];
    for (scenario, keys) in [("hot_key", &hot), ("100k_keys", &spread)] {
        for threads in [1, 2] {
            let mut group = c.benchmark_group(format!("in_memory/{scenario}/{threads}t"));
            for (name, decide) in contenders() {
                group.bench_function(&name, |b| {
                    b.iter_custom(|iters| run(iters, threads, keys, &*decide))
                });
            }
            group.finish();
        }
    }
}

/// The function measured with and without the attribute: the same body.
async fn unannotated(id: &str) -> Result<usize, RateLimited> {
    Ok(black_box(id).len())
}

#[rate_limit(prefix = "mem:attr:", key = id, max = 1000, window = 1, algorithm = token_bucket)]
async fn annotated(id: &str) -> Result<usize, RateLimited> {
    Ok(black_box(id).len())
}

fn attribute(c: &mut Criterion) {
    let spread: Vec<String> = (0..KEYS).map(|i| format!("user:{i}")).collect();
    let spread = &spread;
    // Off: the attribute's own cost, with nothing to decide.
    let off = Limiter::in_memory();
    off.set_enabled_here(false);
    // On, in memory, 100 000 keys: the attribute against the plain API, same rule, same keys.
    let on = Limiter::in_memory();
    let plain = Limiter::in_memory();
    let rule = Rule::new()
        .prefix("mem:attr:")
        .max(1000)
        .window(Duration::from_secs(1))
        .algorithm(Algorithm::TokenBucket);

    for threads in [1, 2] {
        let mut group = c.benchmark_group(format!("attribute/{threads}t"));
        // Each thread awaits the function `n` times inside one future (in the limiter's scope, where annotated
        // functions find it), polled once: nothing in it ever waits.
        let unannotated_ = |_thread: usize, n: u64| {
            off.scope(async {
                let start = Instant::now();
                for i in 0..n {
                    let key = &spread[i as usize % KEYS];
                    black_box(unannotated(black_box(key)).await.is_ok());
                }
                start.elapsed()
            })
            .poll_once("nothing to wait for")
        };
        let disabled = |_thread: usize, n: u64| {
            off.scope(async {
                let start = Instant::now();
                for i in 0..n {
                    let key = &spread[i as usize % KEYS];
                    black_box(annotated(black_box(key)).await.is_ok());
                }
                start.elapsed()
            })
            .poll_once("nothing to wait for")
        };
        let annotated_on = |thread: usize, n: u64| {
            on.scope(async {
                let mut rng = Rng::new(thread as u64 + 7);
                let start = Instant::now();
                for _ in 0..n {
                    let key = &spread[rng.below(KEYS)];
                    black_box(annotated(black_box(key)).await.is_ok());
                }
                start.elapsed()
            })
            .poll_once("an in-memory decision completes on its first poll")
        };
        let plain_on = |thread: usize, n: u64| {
            async {
                let mut rng = Rng::new(thread as u64 + 7);
                let start = Instant::now();
                for _ in 0..n {
                    let key = &spread[rng.below(KEYS)];
                    black_box(plain.check(&rule, black_box(key)).await.allowed);
                }
                start.elapsed()
            }
            .poll_once("an in-memory decision completes on its first poll")
        };
        group.bench_function("unannotated", |bench| {
            bench.iter_custom(|iters| on_threads(iters, threads, &unannotated_))
        });
        group.bench_function("annotated_disabled", |bench| {
            bench.iter_custom(|iters| on_threads(iters, threads, &disabled))
        });
        group.bench_function("annotated_in_memory", |bench| {
            bench.iter_custom(|iters| on_threads(iters, threads, &annotated_on))
        });
        group.bench_function("plain_api_in_memory", |bench| {
            bench.iter_custom(|iters| on_threads(iters, threads, &plain_on))
        });
        group.finish();
    }
}

/// Rounds of the interleaved comparison.
const ROUNDS: usize = 7;
/// About how long one contender's batch lasts in a round.
const BATCH: Duration = Duration::from_millis(100);

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The in-memory store against governor again, interleaved: in each of `ROUNDS` rounds every contender runs one
/// batch of decisions, in an order that rotates; ns per decision is the median over rounds, and a ratio the
/// median of the per-round ratios (governor ns / ours ns, above 1.00× is faster than governor). Contenders keep
/// their state from round to round (the steady state), and are called through `dyn Fn` (all alike).
fn interleaved() {
    println!();
    println!("## In-memory store against governor, interleaved: ns per decision (lower is better)");
    println!();
    println!(
        "{ROUNDS} rounds; in each, every contender runs one batch (about {BATCH:?}), in rotating order. ns: median \
         over rounds. Ratios: median of the per-round throughput ratios to governor (governor ns / ours ns; \
         above 1.00× is faster than governor)."
    );
    println!();
    let names: Vec<String> = contenders()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name != GOVERNOR)
        .collect();
    println!(
        "| scenario | threads | {} | governor | {} |",
        names.join(" | "),
        names
            .iter()
            .map(|n| format!("{n} vs governor"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!(
        "|---|---|{}---|{}",
        "---|".repeat(names.len()),
        "---|".repeat(names.len())
    );
    let spread: Vec<String> = (0..KEYS).map(|i| format!("user:{i}")).collect();
    let hot = vec!["user:hot".to_owned()];
    for (scenario, keys) in [("hot_key", &hot), ("100k_keys", &spread)] {
        for threads in [1, 2] {
            let contenders: Vec<Decide> = contenders().into_iter().map(|(_, d)| d).collect();
            // A batch of about BATCH for the slowest kind of contender (ours), from a short calibration.
            let calibration = 20_000;
            let per =
                run(calibration, threads, keys, &*contenders[0]).as_secs_f64() / calibration as f64;
            let batch = ((BATCH.as_secs_f64() / per.max(1e-9)) as u64).clamp(10_000, 5_000_000);
            let mut ns = vec![Vec::with_capacity(ROUNDS); contenders.len()];
            for round in 0..ROUNDS {
                for i in 0..contenders.len() {
                    let who = (i + round) % contenders.len();
                    let elapsed = run(batch, threads, keys, &*contenders[who]);
                    ns[who].push(elapsed.as_nanos() as f64 / batch as f64);
                }
            }
            let governor_ns = &ns[contenders.len() - 1];
            let ratios: Vec<String> = ns[..names.len()]
                .iter()
                .map(|ours| {
                    let per_round = ours.iter().zip(governor_ns).map(|(o, g)| g / o).collect();
                    format!("{:.2}×", median(per_round))
                })
                .collect();
            println!(
                "| {scenario} | {threads} | {} | {} |",
                ns.iter()
                    .map(|n| format!("{:.1}", median(n.clone())))
                    .collect::<Vec<_>>()
                    .join(" | "),
                ratios.join(" | ")
            );
        }
    }
}

/// What the parts of an in-memory decision cost on this machine, for reading the numbers above: the store key
/// (a `String` built by formatting), a monotonic clock read, a SipHash of a key (std's `RandomState`, which both
/// the deny cache and the memory store use), an uncontended mutex, and an `Arc` clone and drop (what
/// `Limiter::current()` costs an annotated call), alone and from two threads on the same `Arc`.
fn parts(c: &mut Criterion) {
    use std::fmt::Write as _;
    use std::hash::BuildHasher;
    use std::sync::Arc;

    let spread: Vec<String> = (0..KEYS).map(|i| format!("user:{i}")).collect();
    let spread = &spread;
    let hasher = std::hash::RandomState::new();
    let mutex = Mutex::new(0u64);
    let shared = Arc::new(0u64);
    let mut group = c.benchmark_group("parts");
    let timed = |n: u64, f: &dyn Fn(&String)| {
        let start = Instant::now();
        for i in 0..n {
            f(&spread[i as usize % KEYS]);
        }
        start.elapsed()
    };
    type Part<'a> = &'a (dyn Fn(&String) + Sync);
    let cases: [(&str, usize, Part<'_>); 6] = [
        ("store_key_string", 1, &|key| {
            let mut out = String::with_capacity(4 + 32);
            out.push_str("mem:");
            let _ = write!(out, "{key}");
            black_box(out);
        }),
        ("instant_now", 1, &|_| {
            black_box(Instant::now());
        }),
        ("siphash_key", 1, &|key| {
            black_box(hasher.hash_one(black_box(key)));
        }),
        ("mutex_lock_unlock", 1, &|_| {
            *mutex.lock().unwrap() += 1;
        }),
        ("arc_clone_drop", 1, &|_| {
            black_box(Arc::clone(black_box(&shared)));
        }),
        ("arc_clone_drop", 2, &|_| {
            black_box(Arc::clone(black_box(&shared)));
        }),
    ];
    for (name, threads, f) in cases {
        group.bench_function(format!("{threads}t/{name}"), |b| {
            b.iter_custom(|iters| on_threads(iters, threads, &|_, n| timed(n, f)))
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args();
    in_memory(&mut criterion);
    attribute(&mut criterion);
    parts(&mut criterion);
    criterion.final_summary();
    // The ratios to governor, on a table less sensitive to drift than benchmarks run one after another (not
    // when criterion only lists or tests the benchmarks).
    if !std::env::args().any(|arg| arg == "--list" || arg == "--test") {
        interleaved();
    }
}
