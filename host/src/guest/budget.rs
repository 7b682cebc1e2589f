//! The guests' linear memory, bounded in total.
//!
//! Each instance has its own cap (`--guest-memory-mib`), but calls run concurrently, across parents and
//! across reconcilers: 16 calls × 64 MiB is twice the memory limit the host is deployed with, so one
//! module that hoards memory on many parents could get the pod OOM-killed and stop every reconcile. So
//! every instance reserves its memory from one budget as it grows (its initial memory included) and
//! gives it back when it is dropped. A call that finds the budget spent waits for another to give some
//! back, at most until its deadline; the epoch cannot interrupt a guest blocked in the host, so the
//! wait is bounded here.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes of linear memory that all live instances may hold together. Shared (`Arc`) by every runtime
/// derived from one host's runtime, so that all reconcilers draw on the same memory.
pub struct MemoryBudget {
    total: usize,
    state: Mutex<Usage>,
    returned: Condvar,
}

/// What the budget's lock guards: the bytes reserved, and how many growths wait for some back (a
/// release wakes them only if there are any: a wake is a syscall, paid by every instance dropped).
#[derive(Default)]
struct Usage {
    used: usize,
    waiting: usize,
}

impl MemoryBudget {
    pub fn new(total: usize) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            total,
            state: Mutex::default(),
            returned: Condvar::new(),
        })
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes reserved now.
    pub fn used(&self) -> usize {
        self.lock().used
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.state.lock().expect("memory budget poisoned")
    }

    /// Reserves `bytes`, waiting until `until` for them to be free. False: the budget stayed spent.
    fn reserve(&self, bytes: usize, until: Instant) -> bool {
        let mut usage = self.lock();
        loop {
            if self.total - usage.used >= bytes {
                usage.used += bytes;
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            usage.waiting += 1;
            usage = self
                .returned
                .wait_timeout(usage, left)
                .expect("memory budget poisoned")
                .0;
            usage.waiting -= 1;
        }
    }

    fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut usage = self.lock();
        usage.used -= bytes;
        if usage.waiting > 0 {
            self.returned.notify_all();
        }
    }
}

/// One instance's share of the budget: what it reserved, given back when the store is dropped.
pub(crate) struct Reservation {
    budget: Arc<MemoryBudget>,
    held: usize,
    /// How long a growth may wait for memory: the call's deadline, from when the store was made.
    wait_until: Instant,
}

impl Reservation {
    pub(crate) fn new(budget: Arc<MemoryBudget>, deadline: Duration) -> Reservation {
        Reservation {
            budget,
            held: 0,
            wait_until: Instant::now() + deadline,
        }
    }

    /// A reused instance's next call may wait as long as a fresh one.
    pub(crate) fn rearm(&mut self, deadline: Duration) {
        self.wait_until = Instant::now() + deadline;
    }

    /// Grows the reservation by `bytes`; false if the budget stayed spent until the deadline.
    pub(crate) fn grow(&mut self, bytes: usize) -> bool {
        let granted = self.budget.reserve(bytes, self.wait_until);
        if granted {
            self.held += bytes;
        }
        granted
    }

    pub(crate) fn budget(&self) -> usize {
        self.budget.total
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOON: Duration = Duration::from_millis(20);

    #[test]
    fn reservations_share_the_budget_and_give_it_back_when_dropped() {
        let budget = MemoryBudget::new(100);
        let mut a = Reservation::new(budget.clone(), SOON);
        assert!(a.grow(60));
        let mut b = Reservation::new(budget.clone(), SOON);
        assert!(
            !b.grow(50),
            "only 40 left: waits until its deadline, then fails"
        );
        assert!(b.grow(40));
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        assert!(Reservation::new(budget.clone(), SOON).grow(60));
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_waiting_growth_gets_memory_given_back_meanwhile() {
        let budget = MemoryBudget::new(100);
        let mut hog = Reservation::new(budget.clone(), SOON);
        assert!(hog.grow(100));
        let waiter = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let mut r = Reservation::new(budget, Duration::from_secs(10));
                r.grow(30)
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(hog);
        assert!(waiter.join().unwrap(), "granted once the hog was dropped");
    }
}
