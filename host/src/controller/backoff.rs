//! Per-object exponential backoff: a failing parent is retried from a few milliseconds, doubling up to
//! a cap, and forgiven on its first success, without slowing down any other parent.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff {
            base,
            cap,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `key` and returns how long to wait before the next try.
    pub fn next_delay(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().expect("backoff lock poisoned");
        let count = failures.entry(key.to_string()).or_insert(0);
        let delay = self
            .base
            .saturating_mul(1u32 << (*count).min(30))
            .min(self.cap);
        *count = count.saturating_add(1);
        delay
    }

    pub fn reset(&self, key: &str) {
        self.failures
            .lock()
            .expect("backoff lock poisoned")
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets_on_success() {
        let backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(100));
        let delays: Vec<_> = (0..7)
            .map(|_| backoff.next_delay("a").as_millis())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 100, 100]);
        assert_eq!(
            backoff.next_delay("b"),
            Duration::from_millis(5),
            "other objects are not slowed"
        );
        backoff.reset("a");
        assert_eq!(backoff.next_delay("a"), Duration::from_millis(5));
    }
}
