//! The checked safe layer over the raw `device` layer: [`Context`] resolves options and
//! environment variables into plain parameters, opens the device, and is where every `Context`
//! method lives (loading kernels, the pipeline cache and one-off runs delegate to their modules).

mod identity;
mod report;

pub use crate::device::{DeviceError, DeviceSelector};
pub use identity::{DeviceIdentity, DeviceType};
pub use report::{AllocatorStats, DeviceReport};

use crate::command::{self, CommandList};
use crate::device::{
    self, lifecycle_lock, OpenRequest, Shared, DEFAULT_FENCE_TIMEOUT, DEFAULT_STAGING_CHUNK,
};
use crate::kernel::Kernel;
use crate::pipeline::{self, LoadOptions, LoadedKernel};
use crate::select::Options;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use vkprism_core::{DeviceFeatures, VariantInfo};

/// How to create a [`Context`]. Build with `ContextOptions::default()` and the `with_*` setters
/// (`ContextOptions::default().with_validation(true)`).
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// Which physical device.
    pub device: DeviceSelector,
    /// Khronos validation layer: `None` follows `VKPRISM_VALIDATION` (`1` = on, `0` or unset =
    /// off; any other value is an error).
    pub validation: Option<bool>,
    /// Stage every upload and download through a copy even where device memory is mappable
    /// (to test the staging path, or to compare).
    pub force_staging: bool,
    /// Bytes per staged copy; `None`: 64 MiB. Staged transfers (a discrete GPU's downloads,
    /// and uploads without resizable BAR) go through buffers of this size that the context
    /// makes on first use and keeps: one for uploads and two for downloads, which alternate so
    /// the GPU copies the next chunk while the host reads the last one out (3 × 64 MiB by
    /// default). Smaller chunks keep less and submit more often (to test the chunked path
    /// where buffers are small, as on lavapipe, or to compare).
    pub staging_chunk: Option<std::num::NonZeroU64>,
    /// Variant options for every kernel loaded through this context (per-kernel overrides go to
    /// [`Context::load_with`]).
    pub options: Options,
    /// How long a wait for GPU work blocks before giving up; `None`: 120 s. When a wait times
    /// out, the GPU may still be running work that uses the context's memory, so the context
    /// becomes unusable ([`DeviceError::Poisoned`]: mapped reads and writes, submissions and new
    /// objects are refused) and dropping it leaks its GPU objects instead of waiting.
    pub fence_timeout: Option<Duration>,
    /// Enable `robustBufferAccess` where the device has it ([`Context::robust_buffer_access`]
    /// says whether it is on): a kernel's out-of-bounds buffer reads return values from inside
    /// the buffer or zero, and its out-of-bounds writes are discarded or land inside the buffer
    /// they index, instead of being undefined behaviour that may corrupt other tensors. Off by
    /// default: drivers add bounds checks to every buffer access, which can cost a few percent
    /// to tens of percent in memory-bound kernels (and prevents some vectorized loads).
    pub robust_buffer_access: bool,
    /// Make every pipeline with the driver's statistics captured, where the device offers
    /// `VK_KHR_pipeline_executable_properties` ([`crate::Pipeline::statistics`] reads them:
    /// registers per invocation, shared memory, spills, as the driver names them). Off by
    /// default: capturing can slow pipeline creation. For tuning kernels.
    pub pipeline_statistics: bool,
}

impl ContextOptions {
    /// These options on device `device`.
    pub fn with_device(mut self, device: DeviceSelector) -> ContextOptions {
        self.device = device;
        self
    }

    /// These options with the validation layer on or off, overriding `VKPRISM_VALIDATION`.
    pub fn with_validation(mut self, on: bool) -> ContextOptions {
        self.validation = Some(on);
        self
    }

    /// These options with every transfer staged (or not).
    pub fn with_force_staging(mut self, on: bool) -> ContextOptions {
        self.force_staging = on;
        self
    }

    /// These options with staged copies of `bytes` each.
    pub fn with_staging_chunk(mut self, bytes: std::num::NonZeroU64) -> ContextOptions {
        self.staging_chunk = Some(bytes);
        self
    }

    /// These options with variant `options` for every kernel.
    pub fn with_options(mut self, options: Options) -> ContextOptions {
        self.options = options;
        self
    }

    /// These options with waits for the GPU giving up after `timeout`.
    pub fn with_fence_timeout(mut self, timeout: Duration) -> ContextOptions {
        self.fence_timeout = Some(timeout);
        self
    }

    /// These options with `robustBufferAccess` asked for (or not).
    pub fn with_robust_buffer_access(mut self, on: bool) -> ContextOptions {
        self.robust_buffer_access = on;
        self
    }

    /// These options with pipelines' statistics captured (or not).
    pub fn with_pipeline_statistics(mut self, on: bool) -> ContextOptions {
        self.pipeline_statistics = on;
        self
    }
}

/// A Vulkan device ready for compute, with the variant options in force. Cheap to clone.
#[derive(Clone)]
pub struct Context {
    pub(crate) shared: Arc<Shared>,
    /// The user's options, cleared where the device lacks the feature.
    options: Options,
}

impl Context {
    /// A context on the default device (see [`DeviceSelector::Auto`]).
    pub fn new() -> Result<Context, DeviceError> {
        Context::with_options(ContextOptions::default())
    }

    /// A context as `opts` say (environment variables fill what they leave open: see
    /// [`ContextOptions::validation`] and [`DeviceSelector::Auto`]; `VKPRISM_QUEUE_FAMILY`
    /// forces a queue family, to compare engines).
    ///
    /// Environment variables are checked: a value vkprism does not accept is
    /// [`DeviceError::BadEnvironment`], saying what is accepted (never silently ignored).
    pub fn with_options(opts: ContextOptions) -> Result<Context, DeviceError> {
        let validation = match opts.validation {
            Some(v) => v,
            None => validation_from_env()?,
        };
        let request = OpenRequest {
            validation,
            device: selector_with_env(&opts.device)?,
            queue_family: queue_family_from_env()?,
            force_staging: opts.force_staging,
            fence_timeout: opts.fence_timeout.unwrap_or(DEFAULT_FENCE_TIMEOUT),
            staging_chunk: opts
                .staging_chunk
                .map_or(DEFAULT_STAGING_CHUNK, |bytes| bytes.get()),
            robust_buffer_access: opts.robust_buffer_access,
            pipeline_statistics: opts.pipeline_statistics,
        };
        let _serial = lifecycle_lock();
        // SAFETY: the lifecycle lock is held.
        let shared = unsafe { device::open(&request)? };
        let options = opts.options.clamp_to(&shared.features);
        Ok(Context {
            shared: Arc::new(shared),
            options,
        })
    }

    /// What the device offers.
    pub fn features(&self) -> &DeviceFeatures {
        &self.shared.features
    }

    /// The variant options in force (the user's, cleared where the device lacks the feature).
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.shared
            .properties
            .device_name_as_c_str()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The device and driver as numbers (vendor, device, driver version, type, ...): what a
    /// per-device choice or a cache of measurements is keyed by.
    pub fn identity(&self) -> DeviceIdentity {
        DeviceIdentity::new(self.device_name(), &self.shared)
    }

    /// Whether `robustBufferAccess` is on (asked for with
    /// [`ContextOptions::robust_buffer_access`], and the device has it).
    pub fn robust_buffer_access(&self) -> bool {
        self.shared.robust_buffer_access
    }

    /// Whether pipelines capture the driver's statistics (asked for with
    /// [`ContextOptions::pipeline_statistics`], and the device has it).
    pub fn pipeline_statistics(&self) -> bool {
        self.shared.pipeline_statistics
    }

    /// The fence timeout in force ([`ContextOptions::fence_timeout`]).
    pub fn fence_timeout(&self) -> Duration {
        self.shared.fence_timeout
    }

    /// Whether a wait for GPU work timed out, making the context unusable: every later
    /// submission, mapped access and creation returns [`DeviceError::Poisoned`].
    pub fn is_poisoned(&self) -> bool {
        self.shared.is_poisoned()
    }

    /// Bytes of device memory vkprism holds now, over all heaps: tensors, images and staging
    /// buffers (what the budget checks count). Back to where it was once what was made is
    /// dropped, which a leak test can check.
    pub fn allocated_bytes(&self) -> u64 {
        self.shared.used_bytes()
    }

    /// The most bytes of device memory vkprism has held at once ([`Context::allocated_bytes`]'s
    /// high-water mark) since the context was made or [`Context::reset_peak_allocated_bytes`].
    pub fn peak_allocated_bytes(&self) -> u64 {
        self.shared
            .peak_used
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts the high-water mark again from what is held now.
    pub fn reset_peak_allocated_bytes(&self) {
        self.shared
            .peak_used
            .store(self.allocated_bytes(), std::sync::atomic::Ordering::Relaxed);
    }

    /// gpu-allocator's own account of what it holds: live allocations and their bytes, memory
    /// blocks and their capacity.
    pub fn allocator_stats(&self) -> AllocatorStats {
        AllocatorStats::new(&self.shared)
    }

    /// Whether tensors are mapped directly (device-local memory the host can see).
    pub fn unified_memory(&self) -> bool {
        self.shared.unified_memory
    }

    /// Validation-layer messages since the last call (empty when validation is off), removing
    /// them.
    pub fn take_validation_messages(&self) -> Vec<String> {
        self.shared.take_messages()
    }

    /// Validation-layer warnings and errors recorded so far (not removed; see
    /// [`Context::take_validation_messages`]).
    pub fn validation_messages(&self) -> Vec<String> {
        self.shared.messages()
    }

    /// `Err` listing every validation message recorded since the last check (and clears them):
    /// what tests call after GPU work.
    pub fn check_validation(&self) -> Result<(), DeviceError> {
        let m = self.take_validation_messages();
        if m.is_empty() {
            Ok(())
        } else {
            Err(DeviceError::ValidationMessages(m))
        }
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&self) -> bool {
        self.shared.instance.validation()
    }

    /// A report of the device for people.
    pub fn report(&self) -> DeviceReport {
        DeviceReport::new(self.device_name(), &self.shared, self.options)
    }

    /// The raw ash instance and device, for what vkprism does not wrap.
    ///
    /// # Safety
    /// The handles stay valid while this context (or anything made from it) lives. The caller
    /// must follow the Vulkan specification: not destroy them, externally synchronize the queue
    /// with vkprism (which locks it while submitting), and keep any object it creates from
    /// outliving the context. Calls made through these handles are outside vkprism's
    /// process-wide lifecycle lock: with the validation layer on, a call made while another
    /// thread creates or drops a context can crash inside the layer (its global handle map is
    /// unsynchronized), so don't make contexts concurrently with such calls.
    pub unsafe fn raw(&self) -> (&ash::Instance, &ash::Device) {
        (&self.shared.instance, &self.shared.device)
    }

    /// Waits until the device is idle.
    pub fn wait_idle(&self) -> Result<(), DeviceError> {
        self.shared.wait_idle()
    }

    /// Loads `K` with the context's options: the best variant the device can run.
    pub fn load<K: Kernel>(&self) -> Result<Arc<LoadedKernel<K>>, pipeline::PipelineError> {
        self.load_with::<K>(&LoadOptions::default())
    }

    /// The variants of `K` this device can run (its features and cooperative-matrix shapes;
    /// options aside), in the kernel's order: what a test of every variant iterates.
    pub fn runnable_variants<K: Kernel>(&self) -> Vec<&'static VariantInfo> {
        K::INFO
            .variants
            .iter()
            .filter(|v| crate::select::unrunnable_reason(v, &self.shared.features).is_none())
            .collect()
    }

    /// Loads `K` as `load` says: a forced variant, per-kernel options (clamped to the device),
    /// or the context's options. A forced variant's [`SelectError`](crate::SelectError) says
    /// whether the name is unknown or the device can't run it (`SelectFailure`).
    pub fn load_with<K: Kernel>(
        &self,
        load: &LoadOptions,
    ) -> Result<Arc<LoadedKernel<K>>, pipeline::PipelineError> {
        LoadedKernel::load(&self.shared, &self.options, load)
    }

    /// Loads a pipeline cache saved by [`Context::save_pipeline_cache`]. A file from another
    /// device or driver, or a damaged one, is rejected with the reason and nothing changes.
    ///
    /// **The file must be as trusted as the program's binary.** Its data goes to the driver,
    /// which parses it; vkprism's checks (the device's header, a trailer with the driver version,
    /// length and a checksum) catch accidents, not attacks: the checksum is not a signature, and
    /// a forged file with a valid header and trailer is handed to the driver. Keep the file
    /// where only the program's owner can write it (not a shared or world-writable directory).
    pub fn load_pipeline_cache(&self, path: &Path) -> Result<(), pipeline::PipelineError> {
        crate::cache::load(&self.shared, path)
    }

    /// Writes the pipeline cache to `path` (atomically: a temporary file, then a rename).
    pub fn save_pipeline_cache(&self, path: &Path) -> Result<(), pipeline::PipelineError> {
        crate::cache::save(&self.shared, path)
    }

    /// Records with `f`, runs once, waits: for one-off work.
    pub fn run(
        &self,
        f: impl FnOnce(&mut CommandList) -> Result<(), command::CommandError>,
    ) -> Result<(), command::CommandError> {
        let mut list = CommandList::new(self)?;
        f(&mut list)?;
        list.submit_and_wait()
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.device_name())
            .finish()
    }
}

/// What `VKPRISM_VALIDATION` accepts.
const VALIDATION_ACCEPTS: &str = "1 (validation on) or 0 (off); unset or empty: off";
/// What `VKPRISM_DEVICE` accepts.
const DEVICE_ACCEPTS: &str = "a device index (0, 1, ...: the order vulkaninfo lists) or a \
     substring of a device's name (case-insensitive); unset or empty: the best device";
/// What `VKPRISM_QUEUE_FAMILY` accepts.
const QUEUE_FAMILY_ACCEPTS: &str = "a queue family index (0, 1, ...) of a family with compute; \
     unset or empty: a compute-only family if there is one";

/// An environment variable's value: `None` when unset or empty, an error when not Unicode.
fn env_value(name: &'static str, accepted: &'static str) -> Result<Option<String>, DeviceError> {
    match std::env::var(name) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(DeviceError::BadEnvironment {
            name,
            value: v.to_string_lossy().into_owned(),
            accepted,
        }),
    }
}

/// `VKPRISM_VALIDATION` when the options leave validation open: `1` on, `0` (or unset) off.
fn validation_from_env() -> Result<bool, DeviceError> {
    let name = "VKPRISM_VALIDATION";
    match env_value(name, VALIDATION_ACCEPTS)?
        .as_deref()
        .map(str::trim)
    {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(DeviceError::BadEnvironment {
            name,
            value: other.to_string(),
            accepted: VALIDATION_ACCEPTS,
        }),
    }
}

/// `Auto` refined by `VKPRISM_DEVICE` (an index, or a name substring) when that is set. A value
/// that looks like a number but is no index (`-1`, `1.5`, `+2`, a number that overflows), or
/// one of only spaces, is an error: it would otherwise be taken as a name.
fn selector_with_env(selector: &DeviceSelector) -> Result<DeviceSelector, DeviceError> {
    let name = "VKPRISM_DEVICE";
    Ok(match selector {
        DeviceSelector::Auto => match env_value(name, DEVICE_ACCEPTS)? {
            Some(v) => match v.trim().parse::<usize>() {
                Ok(i) => DeviceSelector::Index(i),
                Err(_) => {
                    let t = v.trim();
                    let numeric = !t.is_empty()
                        && t.chars()
                            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e'))
                        && t.chars().any(|c| c.is_ascii_digit());
                    if t.is_empty() || numeric {
                        return Err(DeviceError::BadEnvironment {
                            name,
                            value: v,
                            accepted: DEVICE_ACCEPTS,
                        });
                    }
                    DeviceSelector::Name(t.to_string())
                }
            },
            None => DeviceSelector::Auto,
        },
        s => s.clone(),
    })
}

/// `VKPRISM_QUEUE_FAMILY`: a queue family index, if set.
fn queue_family_from_env() -> Result<Option<usize>, DeviceError> {
    let name = "VKPRISM_QUEUE_FAMILY";
    match env_value(name, QUEUE_FAMILY_ACCEPTS)? {
        None => Ok(None),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(i) => Ok(Some(i)),
            Err(_) => Err(DeviceError::BadEnvironment {
                name,
                value: v,
                accepted: QUEUE_FAMILY_ACCEPTS,
            }),
        },
    }
}
