//! Tensors: GPU buffers (and images, in `image.rs`) with a shape and a storage format, allocated
//! through gpu-allocator, converted to and from `f32` / `i8` on upload and download.
//!
//! A `Tensor` is an `Arc`: command lists keep clones of what they bind, so memory the GPU may
//! still read cannot be freed (the last clone frees it, after the list's work has finished).

use crate::convert::{decode_f32, encode_f32_into, float_size};
use crate::device::{
    allocate_memory_counted, copy_buffer, copy_buffer_submit, free_buffer, Shared,
};
use crate::Context;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use vkprism_core::TensorFormat;

/// Errors making tensors and images, and moving data in and out.
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum TensorError {
    /// A shape (or image extent) that is empty, too long, has a zero, or overflows.
    #[error("tensor shape {0:?}: give 1 to 4 dimensions, none zero")]
    BadShape(Vec<usize>),
    /// Larger than a device limit.
    #[error("tensor of {size} bytes exceeds the device's {limit_name} ({limit} bytes)")]
    TooLarge {
        /// The size asked for (bytes, or texels for an image dimension).
        size: u64,
        /// The Vulkan limit's name.
        limit_name: &'static str,
        /// The limit.
        limit: u64,
    },
    /// Data of another length than the tensor.
    #[error("data has {got} elements, the tensor holds {want}")]
    LengthMismatch {
        /// Elements (or bytes, for raw transfers) given.
        got: usize,
        /// What the tensor holds.
        want: usize,
    },
    /// An operation the tensor's format does not allow.
    #[error("tensor holds {have:?}, the operation needs {want}")]
    WrongFormat {
        /// The tensor's format.
        have: TensorFormat,
        /// What the operation needs.
        want: &'static str,
    },
    /// Memory could not be allocated.
    #[error("out of device memory or allocation failed: {0}")]
    Allocation(String),
    /// The allocation would not fit what is left of the memory heap it goes to: refused before
    /// asking the driver (which may accept more than it can back, as CPU drivers do).
    #[error("allocating {requested} bytes would exceed memory heap {heap}: {available} bytes are left of a budget of {budget} bytes (heap size {heap_size} bytes; {source_of_budget}); free tensors or images first")]
    OverBudget {
        /// Bytes asked for.
        requested: u64,
        /// Bytes left in the heap for this process.
        available: u64,
        /// The process's budget for the heap.
        budget: u64,
        /// The heap's index.
        heap: usize,
        /// The heap's size.
        heap_size: u64,
        /// Where the budget comes from.
        source_of_budget: &'static str,
    },
    /// A view ([`Tensor::view`]) or scratch allocation reaching past the end of its tensor.
    #[error("a view of {len} elements at element {offset} reaches past the end of a tensor of {parent_len} elements")]
    ViewOutOfBounds {
        /// The view's first element, in the parent's elements.
        offset: usize,
        /// The view's elements.
        len: usize,
        /// The parent's elements.
        parent_len: usize,
    },
    /// A host read or write of a tensor that a submitted, not yet finished command list binds
    /// (its buffer, through this tensor or any view of it).
    #[error("the tensor is in use by {pending} submitted command list(s) not yet waited for: wait for their Submission before reading or writing it from the host")]
    Pending {
        /// Pending submissions that bind the tensor's buffer.
        pending: usize,
    },
    /// A scratch arena ([`crate::ScratchArena`]) without room for an allocation.
    #[error("the scratch arena has {available} of its {capacity} bytes left, the allocation needs {requested} (aligned); make a larger arena or reset it")]
    ScratchFull {
        /// Bytes the allocation needs, with its alignment padding.
        requested: u64,
        /// Bytes left.
        available: u64,
        /// The arena's size.
        capacity: u64,
    },
    /// A device error.
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
}

pub(crate) struct TensorInner {
    pub shared: Arc<Shared>,
    pub buffer: vk::Buffer,
    allocation: Mutex<Option<Allocation>>,
    /// Bytes of data of the whole buffer (without the padding to 4 bytes).
    pub size: u64,
    mapped: bool,
    /// Host writes go straight into the memory (`mapped`, or mapped VRAM on a resizable-BAR GPU).
    writes_in_place: bool,
    /// Submitted command lists ([`crate::command::Submission`]) binding this buffer that have
    /// not been seen to finish: host reads and writes are refused meanwhile. Raised and checked
    /// under `Shared::mapped_access` (shared to raise, exclusive to check and touch memory), so
    /// a host access and a submission never overlap.
    pub pending: AtomicUsize,
}

impl Drop for TensorInner {
    fn drop(&mut self) {
        let a = self
            .allocation
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        free_buffer(&self.shared, self.buffer, a);
    }
}

/// Refuses an allocation of `requirements` at `location` that fits no heap it could go to
/// (see `Shared::heap_room`).
pub(crate) fn check_budget(
    shared: &Shared,
    requirements: &vk::MemoryRequirements,
    location: MemoryLocation,
) -> Result<(), TensorError> {
    let flags = match location {
        MemoryLocation::GpuOnly => vk::MemoryPropertyFlags::DEVICE_LOCAL,
        MemoryLocation::CpuToGpu | MemoryLocation::GpuToCpu => {
            vk::MemoryPropertyFlags::HOST_VISIBLE
        }
        _ => vk::MemoryPropertyFlags::empty(),
    };
    let rooms = shared.heap_room(requirements.memory_type_bits, flags);
    match rooms.iter().max_by_key(|r| r.available) {
        Some(best) if best.available < requirements.size => Err(TensorError::OverBudget {
            requested: requirements.size,
            available: best.available,
            budget: best.budget,
            heap: best.heap,
            heap_size: best.size,
            source_of_budget: if shared.memory_budget {
                "budget and usage from VK_EXT_memory_budget"
            } else {
                "no VK_EXT_memory_budget: the budget is the heap's size, less what vkprism allocated"
            },
        }),
        _ => Ok(()),
    }
}

/// Allocates `desc` after checking the budget, counting its bytes in its heap.
pub(crate) fn allocate_checked(
    shared: &Shared,
    desc: &AllocationCreateDesc<'_>,
) -> Result<Allocation, TensorError> {
    check_budget(shared, &desc.requirements, desc.location)?;
    allocate_memory_counted(shared, desc).map_err(TensorError::Allocation)
}

/// A buffer and its memory, created and bound (used for tensors and staging).
pub(crate) fn create_buffer(
    shared: &Arc<Shared>,
    size: u64,
    usage: vk::BufferUsageFlags,
    location: MemoryLocation,
    name: &str,
) -> Result<(vk::Buffer, Allocation), TensorError> {
    let limits = &shared.features.limits;
    if size > limits.max_memory_allocation_size {
        return Err(TensorError::TooLarge {
            size,
            limit_name: "maxMemoryAllocationSize",
            limit: limits.max_memory_allocation_size,
        });
    }
    shared.check_usable()?;
    // SAFETY: the size is nonzero (tensors, staging chunks and images hold at least one
    // element) and was checked against maxMemoryAllocationSize above.
    unsafe {
        crate::device::create_buffer(shared, size, usage, |buffer, requirements| {
            allocate_memory(shared, buffer, requirements, size, location, name)
        })
    }
}

/// Which way a kept staging buffer carries data.
#[derive(Copy, Clone)]
enum Direction {
    /// Host → device: write-combined memory the GPU reads well (VRAM through a BAR if any).
    Upload,
    /// Device → host: cached host memory the CPU reads well.
    Readback,
}

/// The kept staging buffer in `slot`, made (`Shared::staging_chunk` bytes, mapped) on first use:
/// staged copies go in chunks of that size, so a large transfer needs no giant buffer.
fn staging_buffer<'a>(
    shared: &Arc<Shared>,
    slot: &'a mut Option<(vk::Buffer, Allocation)>,
    direction: Direction,
) -> Result<&'a mut (vk::Buffer, Allocation), TensorError> {
    let kept = match slot.take() {
        Some(kept) => kept,
        None => {
            let (usage, location, name) = match direction {
                Direction::Upload => (
                    vk::BufferUsageFlags::TRANSFER_SRC,
                    MemoryLocation::CpuToGpu,
                    "vkprism staging",
                ),
                Direction::Readback => (
                    vk::BufferUsageFlags::TRANSFER_DST,
                    MemoryLocation::GpuToCpu,
                    "vkprism readback",
                ),
            };
            create_buffer(shared, shared.staging_chunk, usage, location, name)?
        }
    };
    Ok(slot.insert(kept))
}

/// A tensor's buffer: mapped memory where the device is unified; on a resizable-BAR GPU,
/// host-visible VRAM (written in place) when there is room in VRAM, else plain VRAM; device-local
/// memory otherwise. Never host memory on a discrete GPU: gpu-allocator's host-visible location
/// falls back to it when VRAM is full, so such an allocation is returned and VRAM asked for
/// plainly, which refuses with the figures when it is full.
fn tensor_buffer(
    shared: &Arc<Shared>,
    size: u64,
    usage: vk::BufferUsageFlags,
) -> Result<(vk::Buffer, Allocation), TensorError> {
    const NAME: &str = "vkprism tensor";
    if shared.unified_memory {
        return create_buffer(shared, size, usage, MemoryLocation::CpuToGpu, NAME);
    }
    if shared.host_visible_vram {
        let (buffer, allocation) =
            create_buffer(shared, size, usage, MemoryLocation::CpuToGpu, NAME)?;
        let in_vram = allocation
            .memory_properties()
            .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL);
        if in_vram {
            return Ok((buffer, allocation));
        }
        free_buffer(shared, buffer, Some(allocation));
    }
    create_buffer(shared, size, usage, MemoryLocation::GpuOnly, NAME)
}

/// Memory for `buffer` (of `size` bytes, needing `requirements`) at `location`, not yet bound.
fn allocate_memory(
    shared: &Shared,
    buffer: vk::Buffer,
    requirements: vk::MemoryRequirements,
    size: u64,
    location: MemoryLocation,
    name: &str,
) -> Result<Allocation, TensorError> {
    allocate_checked(
        shared,
        &AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            // Large buffers get memory of their own (VK_KHR_dedicated_allocation, core in 1.1):
            // drivers can choose better page kinds for them, and they don't pin a shared block.
            allocation_scheme: if size >= DEDICATED_THRESHOLD {
                AllocationScheme::DedicatedBuffer(buffer)
            } else {
                AllocationScheme::GpuAllocatorManaged
            },
        },
    )
}

/// Buffers at least this large get a dedicated allocation.
const DEDICATED_THRESHOLD: u64 = 32 << 20;

/// A tensor in GPU memory: shape (1 to 4 dims) and storage format. Cheap to clone.
///
/// A tensor may be a view of part of another's buffer ([`Tensor::view`],
/// [`crate::ScratchArena::alloc`]): it shares the buffer (and keeps it alive), and everything a
/// tensor does (binding in a dispatch, transfers, host reads and writes) works on its range.
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Arc<TensorInner>,
    /// Where this tensor starts in the buffer, in bytes (0 unless a view).
    pub(crate) offset: u64,
    /// Bytes of data.
    pub(crate) size: u64,
    format: TensorFormat,
    shape: Arc<[usize]>,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape)
            .field("format", &self.format)
            .field("offset", &self.offset)
            .finish()
    }
}

impl Tensor {
    /// An uninitialized tensor. Contents are unspecified until written.
    ///
    /// The memory is checked against what is left of its heap first (the driver's budget with
    /// `VK_EXT_memory_budget`, else the heap's size less what vkprism allocated):
    /// [`TensorError::OverBudget`] with the figures rather than an allocation the driver can't
    /// back.
    pub fn new(
        ctx: &Context,
        shape: &[usize],
        format: TensorFormat,
    ) -> Result<Tensor, TensorError> {
        let (_, size) = shape_bytes(shape, format)?;
        let shared = &ctx.shared;
        let limit = shared.features.limits.max_storage_buffer_range;
        if size > limit {
            return Err(TensorError::TooLarge {
                size,
                limit_name: "maxStorageBufferRange",
                limit,
            });
        }
        // Buffers are padded to 4 bytes so an int8 or fp16 tensor of odd length can be bound.
        let alloc_size = size.div_ceil(4) * 4;
        let mut usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        // Only a tensor that fits maxUniformBufferRange can be bound as a uniform buffer; don't
        // ask the driver for uniform usage on the others.
        if size <= shared.features.limits.max_uniform_buffer_range {
            usage |= vk::BufferUsageFlags::UNIFORM_BUFFER;
        }
        let (buffer, allocation) = tensor_buffer(shared, alloc_size, usage)?;
        // Map only in unified mode: on a discrete GPU, host-visible VRAM is slow to read back.
        let mapped = shared.unified_memory && allocation.mapped_ptr().is_some();
        let writes_in_place =
            mapped || (shared.host_visible_vram && allocation.mapped_ptr().is_some());
        Ok(Tensor {
            inner: Arc::new(TensorInner {
                shared: shared.clone(),
                buffer,
                allocation: Mutex::new(Some(allocation)),
                size,
                mapped,
                writes_in_place,
                pending: AtomicUsize::new(0),
            }),
            offset: 0,
            size,
            format,
            shape: shape.into(),
        })
    }

    /// A view of `shape` starting `offset` elements into this tensor (a view of a view starts
    /// within it), in the same format, sharing the buffer: no copy, and the view keeps the
    /// buffer alive. Past the end is [`TensorError::ViewOutOfBounds`].
    ///
    /// Any whole-element offset makes a view usable in transfers and host reads and writes. To
    /// bind a view in a dispatch, its byte offset in the buffer must be a multiple of the
    /// device's `minStorageBufferOffsetAlignment` (`minUniformBufferOffsetAlignment` for a
    /// uniform binding; [`Tensor::binding_alignment`]): the dispatch refuses it otherwise
    /// ([`crate::CommandError::MisalignedView`]). Command lists track hazards per buffer, so
    /// views of one buffer are one resource to them (a barrier between a write to one view and
    /// any use of another: conservative, never wrong).
    pub fn view(&self, offset: usize, shape: &[usize]) -> Result<Tensor, TensorError> {
        let (elements, size) = shape_bytes(shape, self.format)?;
        let out = || TensorError::ViewOutOfBounds {
            offset,
            len: elements as usize,
            parent_len: self.len(),
        };
        let end = (offset as u64).checked_add(elements).ok_or_else(out)?;
        if end > self.len() as u64 {
            return Err(out());
        }
        Ok(Tensor {
            inner: self.inner.clone(),
            offset: self.offset + offset as u64 * self.format.size() as u64,
            size,
            format: self.format,
            shape: shape.into(),
        })
    }

    /// A view of `shape` in `format` at byte `offset` of this tensor's buffer (the scratch
    /// arena's allocations), or [`TensorError::ViewOutOfBounds`] (in bytes) past the end of
    /// the buffer's data.
    pub(crate) fn view_bytes(
        &self,
        offset: u64,
        shape: &[usize],
        format: TensorFormat,
    ) -> Result<Tensor, TensorError> {
        let (_, size) = shape_bytes(shape, format)?;
        if offset
            .checked_add(size)
            .is_none_or(|end| end > self.inner.size)
        {
            return Err(TensorError::ViewOutOfBounds {
                offset: offset as usize,
                len: size as usize,
                parent_len: self.inner.size as usize,
            });
        }
        Ok(Tensor {
            inner: self.inner.clone(),
            offset,
            size,
            format,
            shape: shape.into(),
        })
    }

    /// Where this tensor starts in its buffer, in bytes: 0, unless it is a view.
    pub fn offset_bytes(&self) -> u64 {
        self.offset
    }

    /// Whether this tensor is a view of part of a buffer (it starts past the buffer's start, or
    /// covers less of it).
    pub fn is_view(&self) -> bool {
        self.offset != 0 || self.size != self.inner.size
    }

    /// The byte alignment a view's offset needs to be bound as a storage buffer: the device's
    /// `minStorageBufferOffsetAlignment`.
    pub fn binding_alignment(&self) -> u64 {
        self.inner
            .shared
            .properties
            .limits
            .min_storage_buffer_offset_alignment
    }

    /// A tensor of `format` holding `data` (converted: fp16 and bf16 round to nearest even).
    pub fn from_f32(
        ctx: &Context,
        shape: &[usize],
        format: TensorFormat,
        data: &[f32],
    ) -> Result<Tensor, TensorError> {
        let t = Tensor::new(ctx, shape, format)?;
        t.upload_f32(data)?;
        Ok(t)
    }

    /// An I8 tensor holding `data`. (Constructors take a format only where the data converts to
    /// several: `f32` to F32, F16 or Bf16 in [`Tensor::from_f32`]; every integer type has one
    /// format, and [`Tensor::from_bytes`] takes any.)
    pub fn from_i8(ctx: &Context, shape: &[usize], data: &[i8]) -> Result<Tensor, TensorError> {
        let t = Tensor::new(ctx, shape, TensorFormat::I8)?;
        t.upload_i8(data)?;
        Ok(t)
    }

    /// An I16 tensor holding `data`.
    pub fn from_i16(ctx: &Context, shape: &[usize], data: &[i16]) -> Result<Tensor, TensorError> {
        let t = Tensor::new(ctx, shape, TensorFormat::I16)?;
        t.upload_i16(data)?;
        Ok(t)
    }

    /// An I32 tensor holding `data`.
    pub fn from_i32(ctx: &Context, shape: &[usize], data: &[i32]) -> Result<Tensor, TensorError> {
        let t = Tensor::new(ctx, shape, TensorFormat::I32)?;
        t.upload_i32(data)?;
        Ok(t)
    }

    /// A U32 tensor holding `data`.
    pub fn from_u32(ctx: &Context, shape: &[usize], data: &[u32]) -> Result<Tensor, TensorError> {
        let t = Tensor::new(ctx, shape, TensorFormat::U32)?;
        t.upload_u32(data)?;
        Ok(t)
    }

    /// A tensor of `format` holding `bytes` as they are (exactly `shape`'s elements of
    /// `format.size()` bytes; any format, [`TensorFormat::Raw`] included).
    pub fn from_bytes(
        ctx: &Context,
        shape: &[usize],
        format: TensorFormat,
        bytes: &[u8],
    ) -> Result<Tensor, TensorError> {
        let t = Tensor::new(ctx, shape, format)?;
        t.write_bytes(bytes)?;
        Ok(t)
    }

    /// The dimensions, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The storage format.
    pub fn format(&self) -> TensorFormat {
        self.format
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Whether it holds no elements (never: shapes have no zero dimension).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes of data (without the padding to 4 bytes).
    pub fn size_bytes(&self) -> u64 {
        self.size
    }
    /// Whether the memory is mapped directly (no staging copies).
    pub fn is_mapped(&self) -> bool {
        self.inner.mapped
    }
    /// Whether host writes go straight into the tensor's memory: mapped tensors, and on a
    /// resizable-BAR discrete GPU every tensor in VRAM (reads are staged there).
    pub fn writes_in_place(&self) -> bool {
        self.inner.writes_in_place
    }

    /// The raw buffer handle (a view's is its parent's: add [`Tensor::offset_bytes`]). Valid
    /// while this tensor (or a clone) lives.
    pub fn raw_buffer(&self) -> vk::Buffer {
        self.inner.buffer
    }

    /// Converts and writes `data` (one `f32` per element) into an F32, F16 or BF16 tensor
    /// (fp16 and bf16 round to nearest, ties to even; NaN stays NaN, overflow is infinity).
    pub fn upload_f32(&self, data: &[f32]) -> Result<(), TensorError> {
        self.check_len(data.len())?;
        let size = float_size(self.format).ok_or(TensorError::WrongFormat {
            have: self.format,
            want: "F32, F16 or Bf16 for f32 data",
        })?;
        // Converted straight into the mapped or staging memory, a part of whole values at a
        // time: no host copy of the whole tensor's bytes.
        let encode = |at: usize, dst: &mut [u8]| {
            let values = &data[at / size..][..dst.len() / size];
            encode_f32_into(self.format, values, dst).expect("a float format, checked above");
        };
        self.write_with(size as u64, encode)
    }

    /// Reads an F32, F16 or BF16 tensor as `f32`.
    pub fn download_f32(&self) -> Result<Vec<f32>, TensorError> {
        let bytes = self.read_bytes()?;
        decode_f32(self.format, &bytes).ok_or(TensorError::WrongFormat {
            have: self.format,
            want: "F32, F16 or Bf16 to read f32",
        })
    }

    /// Writes `data` into an I8 tensor.
    pub fn upload_i8(&self, data: &[i8]) -> Result<(), TensorError> {
        self.require(TensorFormat::I8, "I8")?;
        self.check_len(data.len())?;
        self.write_bytes(bytemuck::cast_slice(data))
    }

    /// Reads an I8 tensor.
    pub fn download_i8(&self) -> Result<Vec<i8>, TensorError> {
        self.require(TensorFormat::I8, "I8")?;
        Ok(self.read_bytes()?.into_iter().map(|b| b as i8).collect())
    }

    /// Writes `data` into an I16 tensor.
    pub fn upload_i16(&self, data: &[i16]) -> Result<(), TensorError> {
        self.require(TensorFormat::I16, "I16")?;
        self.check_len(data.len())?;
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write_bytes(&bytes)
    }

    /// Reads an I16 tensor.
    pub fn download_i16(&self) -> Result<Vec<i16>, TensorError> {
        self.require(TensorFormat::I16, "I16")?;
        Ok(self
            .read_bytes()?
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect())
    }

    /// Writes 32-bit integers into an I32 or U32 tensor.
    pub fn upload_u32(&self, data: &[u32]) -> Result<(), TensorError> {
        if !matches!(self.format, TensorFormat::I32 | TensorFormat::U32) {
            return Err(TensorError::WrongFormat {
                have: self.format,
                want: "I32 or U32",
            });
        }
        self.check_len(data.len())?;
        self.write_bytes(bytemuck::cast_slice(data))
    }

    /// Reads an I32 or U32 tensor as unsigned integers.
    pub fn download_u32(&self) -> Result<Vec<u32>, TensorError> {
        if !matches!(self.format, TensorFormat::I32 | TensorFormat::U32) {
            return Err(TensorError::WrongFormat {
                have: self.format,
                want: "I32 or U32",
            });
        }
        Ok(self
            .read_bytes()?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Writes 32-bit signed integers into an I32 or U32 tensor.
    pub fn upload_i32(&self, data: &[i32]) -> Result<(), TensorError> {
        self.upload_u32(bytemuck::cast_slice(data))
    }

    /// Reads an I32 or U32 tensor as signed integers.
    pub fn download_i32(&self) -> Result<Vec<i32>, TensorError> {
        Ok(self.download_u32()?.into_iter().map(|v| v as i32).collect())
    }

    /// Writes raw bytes (exactly `size_bytes()`).
    pub fn write_bytes(&self, bytes: &[u8]) -> Result<(), TensorError> {
        if bytes.len() as u64 != self.size {
            return Err(TensorError::LengthMismatch {
                got: bytes.len(),
                want: self.size as usize,
            });
        }
        self.write_with(1, |at, dst| {
            crate::host_copy::copy(dst, &bytes[at..][..dst.len()])
        })
    }

    /// Writes the tensor's bytes as `fill(at, dst)` makes them, `dst` the part from byte `at`
    /// on: the whole mapped range at once where the memory is written in place, otherwise one
    /// staging buffer at a time, each part a whole number of `unit`s (a value's bytes) where
    /// the staging buffer holds one.
    fn write_with(&self, unit: u64, fill: impl Fn(usize, &mut [u8])) -> Result<(), TensorError> {
        let inner = &self.inner;
        if let Some(()) = self.with_mapped(true, |m| fill(0, m))? {
            return Ok(());
        }
        let shared = &inner.shared;
        let chunk_size = match shared.staging_chunk - shared.staging_chunk % unit {
            // A staging buffer smaller than a value: the bytes made whole first.
            0 => {
                let mut bytes = vec![0; self.size as usize];
                fill(0, &mut bytes);
                return self.write_bytes(&bytes);
            }
            whole => whole,
        };
        let mut kept = shared.staging.lock().unwrap_or_else(|e| e.into_inner());
        let (staging, alloc) = staging_buffer(shared, &mut kept.upload, Direction::Upload)?;
        for at in (0..self.size).step_by(chunk_size as usize) {
            let len = chunk_size.min(self.size - at);
            let s = alloc
                .mapped_slice_mut()
                .ok_or_else(|| TensorError::Allocation("staging memory is not mapped".into()))?;
            fill(at as usize, &mut s[..len as usize]);
            let region = vk::BufferCopy {
                src_offset: 0,
                dst_offset: self.offset + at,
                size: len,
            };
            // SAFETY: both buffers are live until the copy was waited for (the staging buffer is
            // kept by `Shared`, locked meanwhile), the region lies inside both (a chunk of the
            // tensor, at most a staging buffer), and the host does not touch the tensor's memory
            // (it is not mapped, or this copy would not be staged).
            unsafe { copy_buffer(shared, *staging, inner.buffer, region) }?;
        }
        Ok(())
    }

    /// Reads the raw bytes (`size_bytes()` of them).
    pub fn read_bytes(&self) -> Result<Vec<u8>, TensorError> {
        let mut out = vec![0u8; self.size as usize];
        self.read_bytes_into(&mut out)?;
        Ok(out)
    }

    /// Reads the raw bytes into `out` (exactly `size_bytes()` long), reusing the caller's memory:
    /// for repeated reads of large tensors, where touching fresh pages can cost more than the
    /// copy. Where the tensor is not mapped for reading (a discrete GPU), the bytes come through
    /// the context's two readback buffers, chunk by chunk
    /// ([`ContextOptions::staging_chunk`](crate::ContextOptions::staging_chunk)), the GPU
    /// copying the next chunk while the host copies the last one out.
    pub fn read_bytes_into(&self, out: &mut [u8]) -> Result<(), TensorError> {
        let inner = &self.inner;
        let size = self.size as usize;
        if out.len() != size {
            return Err(TensorError::LengthMismatch {
                got: out.len(),
                want: size,
            });
        }
        if let Some(()) = self.with_mapped(false, |m| crate::host_copy::copy(out, m))? {
            return Ok(());
        }
        let shared = &inner.shared;
        let mut kept = shared.staging.lock().unwrap_or_else(|e| e.into_inner());
        let [first, second] = &mut kept.readback;
        let first = staging_buffer(shared, first, Direction::Readback)?;
        let second = staging_buffer(shared, second, Direction::Readback)?;
        self.read_staged(out, [first, second])
    }

    /// `read_bytes_into` through the two readback buffers: chunk i is copied into buffer
    /// i % 2, and chunk i + 1's copy is submitted before the host reads chunk i out, so the
    /// GPU's copy and the host's run at the same time. A copy in flight is always finished (or,
    /// on a poisoned context, abandoned with its buffer) before this returns.
    fn read_staged(
        &self,
        out: &mut [u8],
        buffers: [&(vk::Buffer, Allocation); 2],
    ) -> Result<(), TensorError> {
        let shared = &self.inner.shared;
        let chunk_size = shared.staging_chunk;
        let submit = |i: usize, size: usize| {
            let region = vk::BufferCopy {
                src_offset: self.offset + i as u64 * chunk_size,
                dst_offset: 0,
                size: size as u64,
            };
            // SAFETY: both buffers are live until the copy is finished (the readback buffers are
            // kept by `Shared`, locked by our caller meanwhile; `self` holds the tensor), and the
            // region lies inside both (a chunk of the tensor, at most a staging buffer). The host
            // reads buffer i % 2 only once this copy is finished, and the next copy into it is
            // submitted after.
            unsafe { copy_buffer_submit(shared, self.inner.buffer, buffers[i % 2].0, region) }
        };
        let mut chunks = out.chunks_mut(chunk_size as usize).enumerate().peekable();
        let Some((_, first)) = chunks.peek() else {
            return Ok(());
        };
        let mut pending = submit(0, first.len())?;
        while let Some((i, chunk)) = chunks.next() {
            let next = match chunks.peek().map(|(_, c)| submit(i + 1, c.len())) {
                None => None,
                Some(Ok(next)) => Some(next),
                Some(Err(e)) => {
                    // Nothing of the next chunk is pending; this one must finish before its
                    // buffer is unlocked.
                    let _ = shared.finish(pending);
                    return Err(e.into());
                }
            };
            let copied = shared
                .finish(pending)
                .map_err(TensorError::from)
                .and_then(|()| {
                    buffers[i % 2].1.mapped_slice().ok_or_else(|| {
                        TensorError::Allocation("readback memory is not mapped".into())
                    })
                });
            match copied {
                Ok(staged) => crate::host_copy::copy(chunk, &staged[..chunk.len()]),
                Err(e) => {
                    // After a timeout the context is poisoned and `finish` abandons the next
                    // copy (leaked with its buffer); otherwise it waits for it.
                    if let Some(next) = next {
                        let _ = shared.finish(next);
                    }
                    return Err(e);
                }
            }
            match next {
                Some(next) => pending = next,
                None => break,
            }
        }
        Ok(())
    }

    /// Runs `f` on the tensor's mapped memory (its range of the buffer), or answers `None` when
    /// it is not mapped (then the caller stages a copy). Holds `Shared::mapped_access`
    /// exclusively meanwhile, so no command list runs while the host touches memory a dispatch
    /// may use; refuses once the context is poisoned (checked under that lock: a list whose wait
    /// timed out poisons the context before releasing it), as the GPU may then still be using
    /// the memory; refuses ([`TensorError::Pending`]) while a submitted list binding the buffer
    /// has not been seen to finish, mapped or staged alike (checked under that lock too:
    /// submissions raise the count holding it shared).
    /// `write` says which way: VRAM mapped through a resizable BAR is written in place but read
    /// through a staging copy.
    fn with_mapped<R>(
        &self,
        write: bool,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<Option<R>, TensorError> {
        let inner = &self.inner;
        let idle = || match inner.pending.load(Ordering::Acquire) {
            0 => Ok(()),
            pending => Err(TensorError::Pending { pending }),
        };
        if !(inner.mapped || write && inner.writes_in_place) {
            // A staged copy is a submission on the queue, ordered after every earlier one (so
            // no lock is needed for it to be sound); a pending list is refused all the same.
            inner.shared.check_usable()?;
            idle()?;
            return Ok(None);
        }
        let _host = inner
            .shared
            .mapped_access
            .write()
            .unwrap_or_else(|e| e.into_inner());
        inner.shared.check_usable()?;
        idle()?;
        let mut allocation = inner.allocation.lock().unwrap_or_else(|e| e.into_inner());
        let range = self.offset as usize..(self.offset + self.size) as usize;
        Ok(allocation
            .as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .map(|m| f(&mut m[range])))
    }

    fn check_len(&self, got: usize) -> Result<(), TensorError> {
        if got != self.len() {
            return Err(TensorError::LengthMismatch {
                got,
                want: self.len(),
            });
        }
        Ok(())
    }

    fn require(&self, f: TensorFormat, name: &'static str) -> Result<(), TensorError> {
        if self.format != f {
            return Err(TensorError::WrongFormat {
                have: self.format,
                want: name,
            });
        }
        Ok(())
    }
}

/// A shape's elements and bytes in `format`, or [`TensorError::BadShape`] (empty, more than 4
/// dimensions, a zero, an overflow).
fn shape_bytes(shape: &[usize], format: TensorFormat) -> Result<(u64, u64), TensorError> {
    if shape.is_empty() || shape.len() > 4 || shape.contains(&0) {
        return Err(TensorError::BadShape(shape.to_vec()));
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
        .ok_or_else(|| TensorError::BadShape(shape.to_vec()))?;
    let size = elements
        .checked_mul(format.size() as u64)
        .ok_or_else(|| TensorError::BadShape(shape.to_vec()))?;
    Ok((elements, size))
}

debug_as_display!(TensorError);
