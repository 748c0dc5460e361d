//! Keeps each thread of a run on a core of its own while the run parses (Linux only).
//!
//! Why: the guest kernels of some virtual machines keep runnable threads packed onto as few
//! vCPUs as they can, so that idle vCPUs stay halted; this project's 2-core build machines run
//! such a kernel. There, a helper thread that a busy thread starts, or wakes, is often queued
//! behind it on the same core while the other core idles, until a load balance moves it:
//! 0.6–4.5 ms later, in more than half of the runs, where parsing the fixture corpus on two
//! threads takes 1.8 ms. A thread that is pinned runs where it is pinned at once.
//!
//! Threads are pinned only until every file is parsed (a millisecond or two), and the pins are
//! undone then: a core that another process takes in the meantime costs the run a share of that
//! core for that long, and the scheduler places the threads as it likes afterwards.

/// The cores the calling thread may run on, from the one it runs on, in a circle: helpers of
/// runs started on different cores go to different cores.
pub(super) struct Cores {
    list: Vec<usize>,
}

impl Cores {
    #[cfg(target_os = "linux")]
    pub(super) fn of_this_thread() -> Self {
        use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu};
        let Ok(allowed) = sched_getaffinity(None) else {
            return Self { list: Vec::new() };
        };
        let allowed = (0..CpuSet::MAX_CPU).filter(|&cpu| allowed.is_set(cpu));
        Self {
            list: circle(allowed.collect(), sched_getcpu()),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn of_this_thread() -> Self {
        Self::none()
    }

    /// No cores to pin to: [`Cores::pin`] does nothing.
    pub(super) fn none() -> Self {
        Self { list: Vec::new() }
    }

    /// Pins the calling thread to the `nth` core of the list (counting round), until the
    /// returned guard is dropped. Does nothing where there is a single core to run on.
    pub(super) fn pin(&self, nth: usize) -> Option<Pinned> {
        if self.list.len() < 2 {
            return None;
        }
        Pinned::to(self.list[nth % self.list.len()])
    }
}

/// The `allowed` cores (ascending) from `current` on, wrapping round: the spawning thread keeps
/// its core, and its helpers take the ones after it.
#[cfg(target_os = "linux")]
fn circle(mut allowed: Vec<usize>, current: usize) -> Vec<usize> {
    if let Some(at) = allowed.iter().position(|&cpu| cpu == current) {
        allowed.rotate_left(at);
    }
    allowed
}

/// A thread pinned to one core; dropping it gives the thread back the cores it had.
pub(super) struct Pinned {
    #[cfg(target_os = "linux")]
    before: rustix::thread::CpuSet,
}

impl Pinned {
    #[cfg(target_os = "linux")]
    fn to(cpu: usize) -> Option<Self> {
        use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
        let before = sched_getaffinity(None).ok()?;
        let mut one = CpuSet::new();
        one.set(cpu);
        sched_setaffinity(None, &one).ok()?;
        Some(Self { before })
    }

    #[cfg(not(target_os = "linux"))]
    fn to(_cpu: usize) -> Option<Self> {
        None
    }
}

#[cfg(target_os = "linux")]
impl Drop for Pinned {
    fn drop(&mut self) {
        // Failing leaves the thread on one core, which is where it ran: nothing to report.
        let _ = rustix::thread::sched_setaffinity(None, &self.before);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn helpers_take_the_cores_after_the_spawning_threads() {
        let allowed = vec![0, 1, 2, 3, 5, 8];
        assert_eq!(circle(allowed.clone(), 3), [3, 5, 8, 0, 1, 2]);
        assert_eq!(circle(allowed.clone(), 0), allowed);
        // Runs started on different cores give their first helpers different cores.
        assert_ne!(circle(allowed.clone(), 5)[1], circle(allowed.clone(), 8)[1]);
        // A core outside the mask (the mask changed meanwhile): the mask as it is.
        assert_eq!(circle(allowed.clone(), 4), allowed);
    }

    #[test]
    fn a_pin_holds_until_dropped() {
        std::thread::spawn(|| {
            let cores = Cores::of_this_thread();
            let before = rustix::thread::sched_getaffinity(None).expect("affinity");
            // Every allowed core once.
            let mut sorted = cores.list.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), cores.list.len());
            assert_eq!(sorted.len() as u32, before.count());
            let Some(pinned) = cores.pin(1) else {
                // One core allowed: nothing to pin.
                assert!(cores.list.len() < 2);
                return;
            };
            assert_eq!(rustix::thread::sched_getcpu(), cores.list[1]);
            let now = rustix::thread::sched_getaffinity(None).expect("affinity");
            assert_eq!(now.count(), 1);
            assert!(now.is_set(cores.list[1]));
            drop(pinned);
            let after = rustix::thread::sched_getaffinity(None).expect("affinity");
            assert_eq!(after, before);
        })
        .join()
        .expect("test thread");
    }
}
