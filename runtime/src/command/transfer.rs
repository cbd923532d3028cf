//! Transfers recorded in a list: uploads from host data (through a staging buffer the list
//! owns, written when the upload is recorded, or between runs through an [`UploadSlot`]), copies between tensors (or views), fills with a
//! 32-bit pattern, and downloads into a staging buffer read after the run ([`Readback`]). They
//! take part in the list's barrier tracking like dispatches: a transfer reads its source and
//! writes its destination.

use super::submission::RunCell;
use super::{CommandError, CommandList, ResId};
use crate::convert::{decode_f32, encode_f32, encode_f32_into};
use crate::device::{free_buffer, record_transfer, Shared, TransferCommand};
use crate::tensor::{create_buffer, TensorError};
use crate::Tensor;
use ash::vk;
use gpu_allocator::vulkan::Allocation;
use gpu_allocator::MemoryLocation;
use std::sync::{Arc, Mutex};
use vkprism_core::TensorFormat;

/// A host-visible buffer a list owns for one upload or download (freed with the last of the
/// list and its [`Readback`]).
struct Staging {
    shared: Arc<Shared>,
    buffer: vk::Buffer,
    allocation: Mutex<Option<Allocation>>,
}

impl Staging {
    fn new(shared: &Arc<Shared>, size: u64, upload: bool) -> Result<Staging, TensorError> {
        let (usage, location, name) = if upload {
            let usage = vk::BufferUsageFlags::TRANSFER_SRC;
            (usage, MemoryLocation::CpuToGpu, "vkprism list upload")
        } else {
            let usage = vk::BufferUsageFlags::TRANSFER_DST;
            (usage, MemoryLocation::GpuToCpu, "vkprism list readback")
        };
        let (buffer, allocation) = create_buffer(shared, size.max(4), usage, location, name)?;
        Ok(Staging {
            shared: shared.clone(),
            buffer,
            allocation: Mutex::new(Some(allocation)),
        })
    }

    /// Runs `f` on the mapped memory (its first `len` bytes).
    fn with_mapped<R>(&self, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, TensorError> {
        let mut a = self.allocation.lock().unwrap_or_else(|e| e.into_inner());
        a.as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .map(|m| f(&mut m[..len]))
            .ok_or_else(|| TensorError::Allocation("staging memory is not mapped".into()))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let a = self
            .allocation
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // Dropped with the last of the list (which waited for its run) and its readbacks.
        free_buffer(&self.shared, self.buffer, a);
    }
}

/// The bytes a download copied, readable once its list's run finished: after
/// [`crate::Submission::wait`] (or [`CommandList::submit_and_wait`]) returned `Ok`. Each run of
/// the list copies the tensor again; a read gives the last finished run's bytes, and is
/// [`CommandError::NotComplete`] before the first run finished or while one is in flight.
pub struct Readback {
    staging: Arc<Staging>,
    run: Arc<RunCell>,
    format: TensorFormat,
    shape: Vec<usize>,
    size: u64,
}

impl Readback {
    /// The downloaded tensor's shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The downloaded tensor's format.
    pub fn format(&self) -> TensorFormat {
        self.format
    }

    /// The raw bytes.
    pub fn read_bytes(&self) -> Result<Vec<u8>, CommandError> {
        let mut out = vec![0u8; self.size as usize];
        // The run state stays locked while the host reads: the list can't be resubmitted
        // (and the GPU write the buffer) meanwhile.
        self.run.with_finished(|| {
            self.staging
                .with_mapped(out.len(), |m| crate::host_copy::copy(&mut out, m))
        })??;
        Ok(out)
    }

    /// An F32, F16 or BF16 tensor's values as `f32`.
    pub fn read_f32(&self) -> Result<Vec<f32>, CommandError> {
        let bytes = self.read_bytes()?;
        decode_f32(self.format, &bytes).ok_or_else(|| {
            TensorError::WrongFormat {
                have: self.format,
                want: "F32, F16 or Bf16 to read f32",
            }
            .into()
        })
    }

    /// An I32 or U32 tensor's values as unsigned integers.
    pub fn read_u32(&self) -> Result<Vec<u32>, CommandError> {
        if !matches!(self.format, TensorFormat::I32 | TensorFormat::U32) {
            return Err(TensorError::WrongFormat {
                have: self.format,
                want: "I32 or U32",
            }
            .into());
        }
        Ok(self
            .read_bytes()?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// The data of an upload recorded with [`CommandList::upload_slot`]: written by the host
/// between runs, uploaded by each run as it is at submission. Writing while a run of the list
/// is in flight is [`CommandError::StillPending`] (the GPU may be reading it).
pub struct UploadSlot {
    staging: Arc<Staging>,
    run: Arc<RunCell>,
    format: TensorFormat,
    len: usize,
    size: u64,
}

impl UploadSlot {
    /// Writes `data` (one `f32` per element of the tensor, converted to its F32, F16 or BF16
    /// format) for the next runs.
    pub fn write_f32(&self, data: &[f32]) -> Result<(), CommandError> {
        if data.len() != self.len {
            return Err(TensorError::LengthMismatch {
                got: data.len(),
                want: self.len,
            }
            .into());
        }
        if !matches!(
            self.format,
            TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
        ) {
            return Err(TensorError::WrongFormat {
                have: self.format,
                want: "F32, F16 or Bf16 for f32 data",
            }
            .into());
        }
        // Converted straight into the staging memory: an input of millions of values is no
        // whole-size buffer on the host each run.
        self.write_mapped(|m| {
            encode_f32_into(self.format, data, m).expect("a float format, checked above")
        })
    }

    /// Writes raw bytes (exactly the tensor's size) for the next runs.
    pub fn write_bytes(&self, bytes: &[u8]) -> Result<(), CommandError> {
        if bytes.len() as u64 != self.size {
            return Err(TensorError::LengthMismatch {
                got: bytes.len(),
                want: self.size as usize,
            }
            .into());
        }
        self.write_mapped(|m| crate::host_copy::copy(m, bytes))
    }

    /// `write` given the staging memory (the tensor's size), once no run is in flight.
    fn write_mapped(&self, write: impl FnOnce(&mut [u8])) -> Result<(), CommandError> {
        // The run state stays locked while the host writes: no run starts meanwhile.
        self.run.with_idle(|_| {
            self.staging
                .with_mapped(self.size as usize, write)
                .map_err(CommandError::from)
        })
    }
}

impl std::fmt::Debug for UploadSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadSlot")
            .field("len", &self.len)
            .field("format", &self.format)
            .finish()
    }
}

impl std::fmt::Debug for Readback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readback")
            .field("shape", &self.shape)
            .field("format", &self.format)
            .finish()
    }
}

impl CommandList {
    /// Records an upload of `data` (one `f32` per element, converted to the tensor's F32, F16
    /// or BF16 format) into `tensor` (or a view).
    ///
    /// The data is written now, into a staging buffer the list owns: every run of the list
    /// (re-submitting it) uploads these same values again. For new values per run, record
    /// [`CommandList::upload_slot`] instead and write its [`UploadSlot`] between runs.
    pub fn upload(&mut self, tensor: &Tensor, data: &[f32]) -> Result<(), CommandError> {
        if data.len() != tensor.len() {
            return Err(TensorError::LengthMismatch {
                got: data.len(),
                want: tensor.len(),
            }
            .into());
        }
        let bytes = encode_f32(tensor.format(), data).ok_or(TensorError::WrongFormat {
            have: tensor.format(),
            want: "F32, F16 or Bf16 for f32 data",
        })?;
        self.upload_bytes(tensor, &bytes)
    }

    /// Records an upload of raw bytes (exactly [`Tensor::size_bytes`]) into `tensor`, as
    /// [`CommandList::upload`] does (the bytes are staged now, and replayed by every run).
    pub fn upload_bytes(&mut self, tensor: &Tensor, bytes: &[u8]) -> Result<(), CommandError> {
        self.check_recording()?;
        self.check_tensor(tensor)?;
        if bytes.len() as u64 != tensor.size_bytes() {
            return Err(TensorError::LengthMismatch {
                got: bytes.len(),
                want: tensor.size_bytes() as usize,
            }
            .into());
        }
        let staging = self.record_upload(tensor)?;
        staging.with_mapped(bytes.len(), |m| crate::host_copy::copy(m, bytes))?;
        Ok(())
    }

    /// Records an upload into `tensor` (or a view) from a staging buffer the caller writes
    /// between runs through the [`UploadSlot`] (zeros until then): each run uploads what the
    /// slot holds when it is submitted. For a list replayed per step with new inputs.
    pub fn upload_slot(&mut self, tensor: &Tensor) -> Result<UploadSlot, CommandError> {
        self.check_recording()?;
        self.check_tensor(tensor)?;
        let staging = self.record_upload(tensor)?;
        let size = tensor.size_bytes();
        staging.with_mapped(size as usize, |m| m.fill(0))?;
        Ok(UploadSlot {
            staging,
            run: self.run.clone(),
            format: tensor.format(),
            len: tensor.len(),
            size,
        })
    }

    /// Records a copy from a new staging buffer (kept with the list, returned) into `tensor`.
    fn record_upload(&mut self, tensor: &Tensor) -> Result<Arc<Staging>, CommandError> {
        let staging = Arc::new(Staging::new(&self.shared, tensor.size_bytes(), true)?);
        let command = TransferCommand::Copy {
            src: staging.buffer,
            dst: tensor.inner.buffer,
            region: vk::BufferCopy {
                src_offset: 0,
                dst_offset: tensor.offset,
                size: tensor.size_bytes(),
            },
        };
        // SAFETY: the staging buffer is TRANSFER_SRC and at least the tensor's size; the region
        // is the tensor's range of its (TRANSFER_DST) buffer; both are kept with the list (the
        // list is recording: checked by the callers).
        unsafe { self.record_transfer(&[], &[tensor], command) };
        self.keep.push(staging.clone());
        Ok(staging)
    }

    /// Records a copy of `src` into `dst` (tensors or views of the same size in bytes and the
    /// same format, or either [`TensorFormat::Raw`]; ranges of one buffer must not overlap).
    /// Copy ranges of tensors by copying views ([`Tensor::view`]).
    pub fn copy(&mut self, src: &Tensor, dst: &Tensor) -> Result<(), CommandError> {
        self.check_recording()?;
        self.check_tensor(src)?;
        self.check_tensor(dst)?;
        if src.size_bytes() != dst.size_bytes() {
            return Err(CommandError::CopySize {
                src: src.size_bytes(),
                dst: dst.size_bytes(),
            });
        }
        let raw = TensorFormat::Raw;
        if src.format() != dst.format() && src.format() != raw && dst.format() != raw {
            return Err(CommandError::CopyFormat {
                src: src.format(),
                dst: dst.format(),
            });
        }
        let size = src.size_bytes();
        if Arc::ptr_eq(&src.inner, &dst.inner)
            && src.offset < dst.offset + size
            && dst.offset < src.offset + size
        {
            return Err(CommandError::OverlappingCopy {
                src_offset: src.offset,
                dst_offset: dst.offset,
                size,
            });
        }
        let command = TransferCommand::Copy {
            src: src.inner.buffer,
            dst: dst.inner.buffer,
            region: vk::BufferCopy {
                src_offset: src.offset,
                dst_offset: dst.offset,
                size,
            },
        };
        // SAFETY: tensors' buffers are TRANSFER_SRC and TRANSFER_DST; the region is each
        // tensor's range of its buffer, not overlapping within one buffer (checked above).
        unsafe { self.record_transfer(&[src], &[dst], command) };
        Ok(())
    }

    /// Records a fill of `tensor` (or a view) with the 32-bit pattern `value` repeated
    /// (`vkCmdFillBuffer`): `f32::to_bits` for an F32 tensor, 0 for zeros of any format. The
    /// range must start at a multiple of 4 bytes and end at one, or at the end of its buffer's
    /// data (then the padding to 4 bytes is filled too): else [`CommandError::FillAlignment`].
    pub fn fill(&mut self, tensor: &Tensor, value: u32) -> Result<(), CommandError> {
        self.check_recording()?;
        self.check_tensor(tensor)?;
        let (offset, mut size) = (tensor.offset, tensor.size_bytes());
        let to_end = offset + size == tensor.inner.size;
        if !offset.is_multiple_of(4) || !(size.is_multiple_of(4) || to_end) {
            return Err(CommandError::FillAlignment { offset, size });
        }
        // The buffer is padded to 4 bytes: a range ending at its data's end may fill the pad.
        size = size.div_ceil(4) * 4;
        let command = TransferCommand::Fill {
            dst: tensor.inner.buffer,
            offset,
            size,
            data: value,
        };
        // SAFETY: a tensor's buffer is TRANSFER_DST; offset and size are multiples of 4 inside
        // the (padded) buffer.
        unsafe { self.record_transfer(&[], &[tensor], command) };
        Ok(())
    }

    /// Records a download of `tensor` (or a view) into a staging buffer the list owns; the
    /// [`Readback`] reads it once the run finished (every run copies it again).
    pub fn download(&mut self, tensor: &Tensor) -> Result<Readback, CommandError> {
        self.check_recording()?;
        self.check_tensor(tensor)?;
        let staging = Arc::new(Staging::new(&self.shared, tensor.size_bytes(), false)?);
        let command = TransferCommand::Copy {
            src: tensor.inner.buffer,
            dst: staging.buffer,
            region: vk::BufferCopy {
                src_offset: tensor.offset,
                dst_offset: 0,
                size: tensor.size_bytes(),
            },
        };
        // SAFETY: the tensor's buffer is TRANSFER_SRC, the staging buffer TRANSFER_DST and at
        // least the tensor's size; the region is the tensor's range; both kept with the list.
        unsafe { self.record_transfer(&[tensor], &[], command) };
        self.keep.push(staging.clone());
        Ok(Readback {
            staging,
            run: self.run.clone(),
            format: tensor.format(),
            shape: tensor.shape().to_vec(),
            size: tensor.size_bytes(),
        })
    }

    /// A tensor of this list's context.
    fn check_tensor(&self, t: &Tensor) -> Result<(), CommandError> {
        if !Arc::ptr_eq(&t.inner.shared, &self.shared) {
            return Err(CommandError::ForeignResource);
        }
        Ok(())
    }

    /// Records `command`, which reads `reads` and writes `writes`, after the list's barrier if
    /// it depends on an earlier command; keeps the tensors with the list.
    ///
    /// # Safety
    /// `command` is valid as [`record_transfer`] requires, its buffers those of `reads` and
    /// `writes` (kept here) or staging buffers the caller keeps with the list; the list is
    /// recording.
    unsafe fn record_transfer(
        &mut self,
        reads: &[&Tensor],
        writes: &[&Tensor],
        command: TransferCommand,
    ) {
        let id = |t: &&Tensor| ResId::Buffer(t.inner.buffer);
        let written: Vec<ResId> = writes.iter().map(id).collect();
        let used: Vec<ResId> = reads
            .iter()
            .map(id)
            .chain(written.iter().copied())
            .collect();
        let barrier = self.needs_barrier(&used, &written);
        // SAFETY: the list is recording (checked by the callers) and only `&mut self` records
        // into it; the caller vouches for the command's buffers and ranges.
        unsafe { record_transfer(&self.shared, self.cmd, barrier, &command) };
        self.note_accesses(barrier, &used, &written);
        for t in reads.iter().chain(writes) {
            self.keep_tensor(t);
        }
        self.transfers += 1;
    }
}
