//! A test's captured log holds its own events even where another test, on another thread with no subscriber,
//! met the callsite first: the tests of this binary capture side by side with tests that log into nothing.

use std::sync::mpsc;

use tests::logs::Captured;

/// A callsite met by this file's test alone, on two threads.
fn say(what: &str) {
    tracing::warn!("captured logs: {what}");
}

#[test]
fn a_capture_holds_an_event_whose_callsite_another_thread_met_first() {
    let logs = Captured::default();
    let _guard = tracing::subscriber::set_default(logs.subscriber());
    let (met, told) = mpsc::channel();
    std::thread::spawn(move || {
        say("from a thread with no subscriber");
        met.send(()).unwrap();
    });
    told.recv().unwrap();
    say("from the capturing thread");
    let text = logs.text();
    assert!(text.contains("from the capturing thread"), "{text:?}");
    assert!(!text.contains("no subscriber"), "{text:?}");
}
