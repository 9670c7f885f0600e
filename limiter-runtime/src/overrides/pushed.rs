//! The limits file as the fleet shares it: the text last pushed through Redis (the overrides' hash, field
//! [`LIMITS`](super::LIMITS)), handed to what applies it (the limiter reads and checks it, and keeps its last
//! good limits when it is refused).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// What applies a pushed text.
type Apply = Box<dyn Fn(&str) + Send + Sync>;

/// The text last pushed, and what applies each new one.
#[derive(Default)]
pub(crate) struct Pushed {
    apply: OnceLock<Apply>,
    last: Mutex<Option<Arc<str>>>,
}

impl Pushed {
    /// Sets what applies each pushed text (once: later calls are ignored).
    pub(crate) fn on_push(&self, apply: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.apply.set(Box::new(apply));
    }

    /// Takes `text` as the fleet's limits: applied if it differs from the last text heard.
    pub(crate) fn heard(&self, text: &str) {
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if last.as_deref() == Some(text) {
                return;
            }
            *last = Some(Arc::from(text));
        }
        if let Some(apply) = self.apply.get() {
            apply(text);
        }
    }
}

impl std::fmt::Debug for Pushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Pushed")
            .field("bytes", &last.as_ref().map(|text| text.len()))
            .finish()
    }
}
