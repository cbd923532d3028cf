//! The checked safe layer over the raw `device` layer: [`Context`] resolves options and
//! environment variables into plain parameters, opens the device, and is where every `Context`
//! method lives (loading kernels, the pipeline cache and one-off runs delegate to their modules).

mod report;

pub use crate::device::{DeviceSelector, Error};
pub use report::DeviceReport;

use crate::command::{self, CommandList};
use crate::device::{self, lifecycle_lock, OpenRequest, Shared};
use crate::kernel::Kernel;
use crate::pipeline::{self, LoadOptions, LoadedKernel};
use crate::select::Options;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use vkprism_core::DeviceFeatures;

/// How to create a [`Context`].
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// Which physical device.
    pub device: DeviceSelector,
    /// Khronos validation layer: `None` follows `VKPRISM_VALIDATION` (1 = on).
    pub validation: Option<bool>,
    /// Stage every upload and download through a copy even where device memory is mappable
    /// (to test the staging path, or to compare).
    pub force_staging: bool,
    /// Variant options for every kernel loaded through this context (per-kernel overrides go to
    /// [`Context::load_with`]).
    pub options: Options,
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
    pub fn new() -> Result<Context, Error> {
        Context::with_options(ContextOptions::default())
    }

    /// A context as `opts` say (environment variables fill what they leave open: see
    /// [`ContextOptions::validation`] and [`DeviceSelector::Auto`]; `VKPRISM_QUEUE_FAMILY`
    /// forces a queue family, to compare engines).
    pub fn with_options(opts: ContextOptions) -> Result<Context, Error> {
        let request = OpenRequest {
            validation: opts.validation.unwrap_or_else(validation_from_env),
            device: selector_with_env(&opts.device),
            queue_family: env_number("VKPRISM_QUEUE_FAMILY"),
            force_staging: opts.force_staging,
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
    pub fn check_validation(&self) -> Result<(), Error> {
        let m = self.take_validation_messages();
        if m.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(m))
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
    /// outliving the context.
    pub unsafe fn raw(&self) -> (&ash::Instance, &ash::Device) {
        (&self.shared.instance, &self.shared.device)
    }

    /// Waits until the device is idle.
    pub fn wait_idle(&self) -> Result<(), Error> {
        self.shared.wait_idle()
    }

    /// Loads `K` with the context's options: the best variant the device can run.
    pub fn load<K: Kernel>(&self) -> Result<Arc<LoadedKernel<K>>, pipeline::Error> {
        self.load_with::<K>(&LoadOptions::default())
    }

    /// Loads `K` as `load` says: a forced variant, per-kernel options (clamped to the device),
    /// or the context's options.
    pub fn load_with<K: Kernel>(
        &self,
        load: &LoadOptions,
    ) -> Result<Arc<LoadedKernel<K>>, pipeline::Error> {
        LoadedKernel::load(&self.shared, &self.options, load)
    }

    /// Loads a pipeline cache saved by [`Context::save_pipeline_cache`]. A file from another
    /// device or driver, or a damaged one, is rejected with the reason and nothing changes.
    pub fn load_pipeline_cache(&self, path: &Path) -> Result<(), pipeline::Error> {
        crate::cache::load(&self.shared, path)
    }

    /// Writes the pipeline cache to `path` (atomically: a temporary file, then a rename).
    pub fn save_pipeline_cache(&self, path: &Path) -> Result<(), pipeline::Error> {
        crate::cache::save(&self.shared, path)
    }

    /// Records with `f`, runs once, waits: for one-off work.
    pub fn run(
        &self,
        f: impl FnOnce(&mut CommandList) -> Result<(), command::Error>,
    ) -> Result<(), command::Error> {
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

/// `VKPRISM_VALIDATION=1` turns validation on when the options leave it open.
fn validation_from_env() -> bool {
    std::env::var("VKPRISM_VALIDATION").is_ok_and(|v| v == "1")
}

/// `Auto` refined by `VKPRISM_DEVICE` (an index, or a name substring) when that is set.
fn selector_with_env(selector: &DeviceSelector) -> DeviceSelector {
    match selector {
        DeviceSelector::Auto => match std::env::var("VKPRISM_DEVICE") {
            Ok(v) if !v.is_empty() => match v.parse::<usize>() {
                Ok(i) => DeviceSelector::Index(i),
                Err(_) => DeviceSelector::Name(v),
            },
            _ => DeviceSelector::Auto,
        },
        s => s.clone(),
    }
}

/// A number from the environment, if set and valid.
fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
