//! The crate-level error. Every module has its own enum; converting one into [`Error`] sorts it
//! by what the caller can do about it (as wgpu separates validation errors from device loss and
//! out-of-memory): fix the call ([`Error::Invalid`]), recreate the context
//! ([`Error::DeviceLost`]), free memory ([`Error::OutOfMemory`]), or look at the system
//! ([`Error::Device`], [`Error::Io`]).

use ash::vk;

/// Any vkprism runtime error.
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum Error {
    /// vkprism refused the call before the driver saw it (a wrong format, size, variant or
    /// option): the caller's to fix. Holds the module's error.
    #[error(transparent)]
    Invalid(Invalid),
    /// The device was lost (`VK_ERROR_DEVICE_LOST`): the context is unusable.
    #[error("the device was lost")]
    DeviceLost,
    /// Device or host memory ran out (the message says which call or allocation).
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// The system: no loader or device, the validation layer's messages, a failed Vulkan call,
    /// a GPU that did not finish.
    #[error(transparent)]
    Device(crate::device::DeviceError),
    /// Reading or writing a pipeline cache file.
    #[error("pipeline cache file: {0}")]
    Io(std::io::Error),
}

/// A call vkprism refused, by module.
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum Invalid {
    /// No variant fits the device and options.
    #[error(transparent)]
    Select(crate::select::SelectError),
    /// A tensor or image request or transfer.
    #[error(transparent)]
    Tensor(crate::tensor::TensorError),
    /// Loading a kernel, making a pipeline, or a rejected pipeline cache.
    #[error(transparent)]
    Pipeline(crate::pipeline::PipelineError),
    /// Recording a dispatch or transfer, submitting and waiting, or timings.
    #[error(transparent)]
    Command(crate::command::CommandError),
    /// A string that is not a variant name ([`crate::LoadOptions::variant_named`]).
    #[error(transparent)]
    VariantName(vkprism_core::ParseVariantError),
}

debug_as_display!(Error, Invalid);

/// The crate's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<crate::device::DeviceError> for Error {
    fn from(e: crate::device::DeviceError) -> Error {
        use crate::device::DeviceError as D;
        match e {
            D::DeviceLost => Error::DeviceLost,
            D::Vk {
                result:
                    vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY,
                ..
            } => Error::OutOfMemory(e.to_string()),
            e => Error::Device(e),
        }
    }
}

impl From<crate::select::SelectError> for Error {
    fn from(e: crate::select::SelectError) -> Error {
        Error::Invalid(Invalid::Select(e))
    }
}

impl From<vkprism_core::ParseVariantError> for Error {
    fn from(e: vkprism_core::ParseVariantError) -> Error {
        Error::Invalid(Invalid::VariantName(e))
    }
}

impl From<crate::tensor::TensorError> for Error {
    fn from(e: crate::tensor::TensorError) -> Error {
        use crate::tensor::TensorError as T;
        match e {
            T::Device(e) => e.into(),
            T::Allocation(why) => Error::OutOfMemory(why),
            e @ T::OverBudget { .. } => Error::OutOfMemory(e.to_string()),
            e => Error::Invalid(Invalid::Tensor(e)),
        }
    }
}

impl From<crate::pipeline::PipelineError> for Error {
    fn from(e: crate::pipeline::PipelineError) -> Error {
        use crate::pipeline::PipelineError as P;
        match e {
            P::Device(e) => e.into(),
            P::Select(e) => e.into(),
            P::CacheIo(e) => Error::Io(e),
            e => Error::Invalid(Invalid::Pipeline(e)),
        }
    }
}

impl From<crate::command::CommandError> for Error {
    fn from(e: crate::command::CommandError) -> Error {
        match e {
            crate::command::CommandError::Device(e) => e.into(),
            crate::command::CommandError::Tensor(e) => e.into(),
            e => Error::Invalid(Invalid::Command(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_sorted_by_what_the_caller_can_do() {
        let lost = crate::command::CommandError::Device(crate::device::DeviceError::DeviceLost);
        assert!(matches!(Error::from(lost), Error::DeviceLost));
        let oom = crate::device::DeviceError::Vk {
            call: "vkAllocateMemory",
            result: vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
        };
        assert!(matches!(
            Error::from(crate::tensor::TensorError::Device(oom)),
            Error::OutOfMemory(_)
        ));
        let alloc = crate::tensor::TensorError::Allocation("no memory type".into());
        assert!(matches!(Error::from(alloc), Error::OutOfMemory(_)));
        let zero = crate::command::CommandError::ZeroSize([0, 1, 1]);
        assert!(matches!(
            Error::from(zero),
            Error::Invalid(Invalid::Command(_))
        ));
        let io = std::io::Error::other("disk");
        assert!(matches!(
            Error::from(crate::pipeline::PipelineError::CacheIo(io)),
            Error::Io(_)
        ));
        let timeout = crate::device::DeviceError::Timeout(std::time::Duration::from_secs(1));
        assert!(matches!(Error::from(timeout), Error::Device(_)));
    }
}
