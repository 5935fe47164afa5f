//! A sweep's runs on several threads, their results in the runs' order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every item on `jobs` threads, the results in the items' order; with one job, on the
/// calling thread (a testbed run keeps the thread it was started from).
pub fn map<I: Sync, R: Send>(items: &[I], jobs: usize, f: impl Fn(&I) -> R + Sync) -> Vec<R> {
    if jobs <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(items.len().max(1)) {
            // The main thread's stack size: a simulated run should not overflow on a worker
            // where it would not on the main thread.
            let builder = std::thread::Builder::new().stack_size(8 << 20);
            // Each thread takes the next run not yet taken, so a slow run holds up only itself.
            builder
                .spawn_scoped(scope, || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                })
                .expect("spawn a sweep thread");
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()).expect("every run ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order_on_any_number_of_threads() {
        let items: Vec<u32> = (0..20).collect();
        for jobs in [0, 1, 3, 50] {
            assert_eq!(super::map(&items, jobs, |i| i * 2), (0..40).step_by(2).collect::<Vec<_>>());
        }
    }
}
