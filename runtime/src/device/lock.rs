//! The process-wide lifecycle lock: creating or destroying an instance or a device excludes
//! every other Vulkan call; every other call holds it shared ([`api_lock`], reentrant).

use std::cell::Cell;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The process-wide Vulkan lifecycle lock. The rule it enforces: **creating or destroying an
/// instance or a device excludes every other Vulkan call in the process**; other calls run
/// concurrently with each other (holding it shared).
///
/// Why: the Khronos validation layer (and some drivers) keep per-instance and per-device state
/// in process-wide tables keyed by dispatchable handle (the layer's `layer_data_map`). Creating
/// or destroying an instance or device inserts into or erases from those tables, and in
/// VVL 1.3.239 every other call looks its object up in them without a lock: a lookup on one
/// thread during an insertion on another read a table being rehashed (SIGSEGV inside the layer
/// under `vkGetFenceStatus`, 2 runs in 10 with 8 threads making contexts). This is the data
/// race in `GetLayerDataPtr` of KhronosGroup/Vulkan-ValidationLayers#4391, whose fix in the layer
/// is the same scheme: a shared lock for lookups, an exclusive one for insertions and erasures.
/// Serializing only creation and destruction against each other (what an earlier `Mutex` did)
/// is not enough.
/// Seen on NVIDIA 580 too: contexts created and dropped concurrently crashed in the driver.
///
/// Cost: an uncontended shared acquisition per checked operation (tens of nanoseconds; nested
/// acquisitions on one thread are counted, not re-locked), and calls pause while a context is
/// being created or dropped elsewhere in the process.
static LIFECYCLE: RwLock<()> = RwLock::new(());

thread_local! {
    /// How many [`ApiGuard`]s this thread holds (only the outermost one holds the lock, so a
    /// nested acquisition never waits behind a queued writer, which would deadlock).
    static API_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Holds the lifecycle lock exclusively: taken around every instance and device creation and
/// destruction.
pub(crate) fn lifecycle_lock() -> RwLockWriteGuard<'static, ()> {
    debug_assert_eq!(
        API_DEPTH.with(|d| d.get()),
        0,
        "a context created or destroyed while this thread makes Vulkan calls would deadlock"
    );
    LIFECYCLE.write().unwrap_or_else(|e| e.into_inner())
}

/// The lifecycle lock held shared (see [`LIFECYCLE`]): taken around every other Vulkan call.
pub(crate) struct ApiGuard {
    /// `None` for a nested guard (an outer one on this thread holds the lock).
    _lock: Option<RwLockReadGuard<'static, ()>>,
}

/// Takes the lifecycle lock shared for the calling thread (reentrant).
///
/// Lock order: take it before any other lock that is held while it is taken (the queue, the
/// transfer pool, the allocator, the pipeline cache lock), never after one: with a context
/// being created elsewhere (a queued writer), a thread waiting for it while holding such a lock
/// would deadlock with one holding it and waiting for that lock.
pub(crate) fn api_lock() -> ApiGuard {
    let depth = API_DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        n
    });
    ApiGuard {
        _lock: (depth == 0).then(|| LIFECYCLE.read().unwrap_or_else(|e| e.into_inner())),
    }
}

impl Drop for ApiGuard {
    fn drop(&mut self) {
        API_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn creation_waits_for_calls_and_nested_calls_never_relock() {
        let outer = api_lock();
        let nested = api_lock();
        let (tx, rx) = mpsc::channel();
        let creator = std::thread::spawn(move || {
            let _exclusive = lifecycle_lock();
            tx.send(()).unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "creation ran during a call");
        // With the creator queued, a nested acquisition must not wait for it (a deadlock).
        let again = api_lock();
        drop((again, nested));
        std::thread::sleep(Duration::from_millis(20));
        assert!(rx.try_recv().is_err(), "creation ran during the outer call");
        drop(outer);
        rx.recv_timeout(Duration::from_secs(5))
            .expect("creation proceeds once the calls are done");
        creator.join().unwrap();
        assert_eq!(API_DEPTH.with(|d| d.get()), 0);
    }
}
