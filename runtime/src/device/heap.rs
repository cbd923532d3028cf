//! Memory heaps: how much room a heap has for one more allocation (the driver's budget with
//! `VK_EXT_memory_budget`, else the heap's size less what vkprism allocated there), and memory
//! allocated from and freed to the device's allocator, counted per heap.

use super::lock::api_lock;
use super::shared::Shared;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc};
use std::sync::atomic::Ordering;

/// How much of a heap is free for one more allocation, and the figures that say why.
#[derive(Copy, Clone, Debug)]
pub(crate) struct HeapRoom {
    /// The heap's index.
    pub heap: usize,
    /// Bytes still available to this process in the heap.
    pub available: u64,
    /// The budget (`VK_EXT_memory_budget`), or the heap's size without it.
    pub budget: u64,
    /// The heap's size.
    pub size: u64,
}

/// The room in heap `heap` of `size` bytes, of which vkprism allocated `ours`: with
/// `VK_EXT_memory_budget`'s `(heapBudget, heapUsage)`, the budget (at most the heap's size) less
/// the larger of the driver's usage and ours (a driver may not count what it has not touched);
/// without it (or with a budget of 0, which no driver that tracks it reports), the heap's size
/// less ours.
fn room(heap: usize, size: u64, ours: u64, budget: Option<(u64, u64)>) -> HeapRoom {
    let (budget, used) = match budget {
        Some((b, u)) if b > 0 => (b.min(size), u.max(ours)),
        _ => (size, ours),
    };
    HeapRoom {
        heap,
        available: budget.saturating_sub(used),
        budget,
        size,
    }
}

impl Shared {
    /// Room in each heap a memory type in `type_bits` with `flags` lives in: the driver's budget
    /// minus its usage with `VK_EXT_memory_budget`, else the heap's size minus what vkprism
    /// allocated there.
    pub fn heap_room(&self, type_bits: u32, flags: vk::MemoryPropertyFlags) -> Vec<HeapRoom> {
        let mut heaps: Vec<usize> = self
            .memory
            .memory_types_as_slice()
            .iter()
            .enumerate()
            .filter(|(i, t)| type_bits & (1 << i) != 0 && t.property_flags.contains(flags))
            .map(|(_, t)| t.heap_index as usize)
            .collect();
        heaps.sort_unstable();
        heaps.dedup();
        let budget = self.memory_budget.then(|| {
            let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
            let mut props = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
            let _api = api_lock();
            // SAFETY: a query on this instance's physical device, whose VK_EXT_memory_budget
            // is enabled; `props` chains only `budget`, which lives until the call returns.
            unsafe {
                self.instance
                    .get_physical_device_memory_properties2(self.physical, &mut props)
            };
            (budget.heap_budget, budget.heap_usage)
        });
        heaps
            .into_iter()
            .filter(|h| *h < self.memory.memory_heap_count as usize)
            .map(|heap| {
                let size = self.memory.memory_heaps[heap].size;
                let ours = self.heap_used[heap].load(Ordering::Relaxed);
                room(heap, size, ours, budget.map(|(b, u)| (b[heap], u[heap])))
            })
            .collect()
    }

    /// The heap an allocation of memory with `flags` (allowed by `type_bits`) came from.
    pub fn heap_of(&self, type_bits: u32, flags: vk::MemoryPropertyFlags) -> Option<usize> {
        self.memory
            .memory_types_as_slice()
            .iter()
            .enumerate()
            .find(|(i, t)| type_bits & (1 << i) != 0 && t.property_flags == flags)
            .map(|(_, t)| t.heap_index as usize)
    }

    /// Counts `bytes` more (or, with `add` false, fewer) allocated by vkprism in `heap`.
    pub fn count_heap(&self, heap: Option<usize>, bytes: u64, add: bool) {
        if let Some(counter) = heap.and_then(|h| self.heap_used.get(h)) {
            if add {
                counter.fetch_add(bytes, Ordering::Relaxed);
                self.peak_used
                    .fetch_max(self.used_bytes(), Ordering::Relaxed);
            } else {
                counter.fetch_sub(bytes, Ordering::Relaxed);
            }
        }
    }

    /// Bytes vkprism holds now, over all heaps.
    pub fn used_bytes(&self) -> u64 {
        self.heap_used
            .iter()
            .map(|h| h.load(Ordering::Relaxed))
            .sum()
    }
}

/// Allocates `desc` from the device's allocator, counting its bytes in its heap; the
/// allocator's error as text.
pub(crate) fn allocate_memory_counted(
    shared: &Shared,
    desc: &AllocationCreateDesc<'_>,
) -> Result<Allocation, String> {
    // The API lock before any other lock (see `api_lock`).
    let _api = api_lock();
    let mut guard = shared.allocator.lock().unwrap_or_else(|e| e.into_inner());
    let Some(allocator) = guard.as_mut() else {
        return Err("allocator is gone".into());
    };
    let a = allocator.allocate(desc).map_err(|e| e.to_string())?;
    shared.count_heap(
        shared.heap_of(u32::MAX, a.memory_properties()),
        a.size(),
        true,
    );
    Ok(a)
}

/// Returns an allocation's memory to the allocator, and its bytes to its heap's count.
pub(crate) fn free_memory(shared: &Shared, a: Allocation) {
    let heap = shared.heap_of(u32::MAX, a.memory_properties());
    let size = a.size();
    // The API lock before any other lock (see `api_lock`).
    let _api = api_lock();
    if let Some(alloc) = shared
        .allocator
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
    {
        if alloc.free(a).is_ok() {
            shared.count_heap(heap, size, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_room_uses_the_budget_where_there_is_one() {
        let gib = 1u64 << 30;
        // No VK_EXT_memory_budget: the heap's size less what vkprism allocated.
        let r = room(0, 2 * gib, gib / 2, None);
        assert_eq!(
            (r.available, r.budget, r.size),
            (gib + gib / 2, 2 * gib, 2 * gib)
        );
        // With it: the budget less the driver's usage...
        let r = room(1, 80 * gib, gib, Some((60 * gib, 10 * gib)));
        assert_eq!((r.available, r.budget, r.heap), (50 * gib, 60 * gib, 1));
        // ... or less ours where the driver counts less, never above the heap's size, never
        // negative; a zero budget means the driver does not track it.
        assert_eq!(
            room(0, 8 * gib, 3 * gib, Some((4 * gib, gib))).available,
            gib
        );
        assert_eq!(room(0, 8 * gib, 0, Some((16 * gib, 0))).budget, 8 * gib);
        assert_eq!(room(0, 8 * gib, 0, Some((gib, 2 * gib))).available, 0);
        assert_eq!(room(0, 8 * gib, gib, Some((0, 0))).available, 7 * gib);
    }
}
