//! The errors of creating and using the device.

use ash::vk;

/// Errors creating or using the context (the device layer's; `vkprism::context` re-exports it).
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum DeviceError {
    /// No Vulkan loader library could be loaded.
    #[error(
        "no Vulkan loader found (install libvulkan1 and a driver, e.g. mesa-vulkan-drivers): {0}"
    )]
    NoLoader(String),
    /// The instance is Vulkan 1.0 (major, minor).
    #[error("the Vulkan instance supports only version {0}.{1}; vkprism needs 1.1")]
    InstanceTooOld(u32, u32),
    /// The instance lists no physical device.
    #[error("no Vulkan device found")]
    NoDevice,
    /// A [`crate::DeviceSelector`] (or `VKPRISM_DEVICE`) matched no device.
    #[error("device selector `{selector}` matches none of: {available}")]
    DeviceNotFound {
        /// The selector, as `Debug` prints it.
        selector: String,
        /// Every device, as `index: name`.
        available: String,
    },
    /// The chosen device is Vulkan 1.0 (name, major, minor).
    #[error("device `{0}` supports only Vulkan {1}.{2}; vkprism needs 1.1")]
    DeviceTooOld(String, u32, u32),
    /// The chosen device (named) has no queue family with compute.
    #[error("device `{0}` has no compute queue")]
    NoComputeQueue(String),
    /// `VKPRISM_QUEUE_FAMILY` names a family that does not exist or has no compute.
    #[error("VKPRISM_QUEUE_FAMILY={index}: device `{device}` has no queue family {index} with compute; families with compute: {compute}")]
    NoSuchQueueFamily {
        /// The family asked for.
        index: usize,
        /// The device's name.
        device: String,
        /// The families with compute, as a list of indices.
        compute: String,
    },
    /// Validation was asked for and the Khronos layer is not installed.
    #[error("validation was asked for but the layer VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)")]
    ValidationLayerMissing,
    /// Messages the Khronos validation layer recorded (from
    /// [`crate::Context::check_validation`]); not the caller's mistakes, which are
    /// [`crate::Error::Invalid`].
    #[error("the validation layer reported {} message(s):\n{}", .0.len(), .0.join("\n"))]
    ValidationMessages(Vec<String>),
    /// `VK_ERROR_DEVICE_LOST` from any call.
    #[error("the device was lost")]
    DeviceLost,
    /// A fence wait gave up after this long; the context is poisoned from then on (see
    /// [`DeviceError::Poisoned`]).
    #[error("the GPU did not finish within {0:?} (ContextOptions::fence_timeout); it may be hung, or the work is longer than the timeout: this context is now unusable (see the error its next calls return)")]
    Timeout(std::time::Duration),
    /// A fence wait timed out earlier: the GPU may still be running work that uses this
    /// context's memory, so the context refuses mapped access, submissions and new objects.
    #[error("an earlier submission did not finish within {0:?} (a hung GPU, or work longer than the fence timeout): the GPU may still be using this context's memory, so the context refuses mapped reads and writes, submissions and new tensors; drop it (its GPU objects are leaked, not waited for) and create a new context, with a longer ContextOptions::fence_timeout if the work is just long")]
    Poisoned(std::time::Duration),
    /// An environment variable holds a value vkprism does not accept.
    #[error("environment variable {name}={value:?} is not accepted: {accepted}")]
    BadEnvironment {
        /// The variable.
        name: &'static str,
        /// Its value (lossy when it is not Unicode).
        value: String,
        /// What it accepts.
        accepted: &'static str,
    },
    /// gpu-allocator could not be created.
    #[error("memory allocator: {0}")]
    Allocator(String),
    /// Any other failed Vulkan call.
    #[error("Vulkan call {call} failed: {result}")]
    Vk {
        /// The Vulkan function.
        call: &'static str,
        /// What it returned.
        result: vk::Result,
    },
}

/// Maps a failed `call`'s result to a [`DeviceError`], singling out device loss.
pub(crate) fn vkerr(call: &'static str) -> impl Fn(vk::Result) -> DeviceError {
    move |result| {
        if result == vk::Result::ERROR_DEVICE_LOST {
            DeviceError::DeviceLost
        } else {
            DeviceError::Vk { call, result }
        }
    }
}

debug_as_display!(DeviceError);
