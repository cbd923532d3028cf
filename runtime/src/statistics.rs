//! The driver's statistics of a pipeline (`VK_KHR_pipeline_executable_properties`): registers
//! per invocation, shared memory, spills, under the names the driver gives them. For tuning
//! kernels: what bounds a kernel's occupancy is in here, not in the SPIR-V.

use crate::device::DeviceError;
use crate::kernel::Kernel;
use crate::pipeline::Pipeline;
use ash::vk;

/// One statistic of one executable (a pipeline may compile to several; compute has one).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineStatistic {
    /// The executable's name, as the driver gives it.
    pub executable: String,
    /// The statistic's name (e.g. NVIDIA's "Register Count").
    pub name: String,
    /// What it measures, as the driver says.
    pub description: String,
    /// Its value.
    pub value: StatisticValue,
}

/// A statistic's value, in the type the driver reports it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatisticValue {
    /// A yes/no fact.
    Bool(bool),
    /// A signed count.
    I64(i64),
    /// An unsigned count.
    U64(u64),
    /// A measure.
    F64(f64),
}

impl std::fmt::Display for StatisticValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatisticValue::Bool(v) => write!(f, "{v}"),
            StatisticValue::I64(v) => write!(f, "{v}"),
            StatisticValue::U64(v) => write!(f, "{v}"),
            StatisticValue::F64(v) => write!(f, "{v}"),
        }
    }
}

impl<K: Kernel> Pipeline<K> {
    /// The driver's statistics of this pipeline, or an empty list where they were not captured
    /// (the context was made without [`crate::ContextOptions::pipeline_statistics`], or the
    /// device lacks `VK_KHR_pipeline_executable_properties`: [`crate::Context::pipeline_statistics`]
    /// tells).
    pub fn statistics(&self) -> Result<Vec<PipelineStatistic>, DeviceError> {
        let shared = &self.kernel.shared;
        if !shared.pipeline_statistics {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        // SAFETY: the extension and its feature are enabled (`shared.pipeline_statistics`), and
        // the pipeline is alive (this `Pipeline` holds its kernel, which outlives it).
        unsafe {
            crate::device::pipeline_statistics(shared, self.pipeline, |executable, stats| {
                let name = text(&executable.name);
                out.extend(stats.iter().map(|s| PipelineStatistic {
                    executable: name.clone(),
                    name: text(&s.name),
                    description: text(&s.description),
                    value: value(s),
                }));
            })
        }?;
        Ok(out)
    }
}

/// A fixed-size, NUL-terminated string from the driver.
fn text(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn value(s: &vk::PipelineExecutableStatisticKHR) -> StatisticValue {
    // SAFETY: `format` says which member of the union the driver wrote.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                StatisticValue::Bool(s.value.b32 == vk::TRUE)
            }
            vk::PipelineExecutableStatisticFormatKHR::INT64 => StatisticValue::I64(s.value.i64),
            vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => StatisticValue::F64(s.value.f64),
            _ => StatisticValue::U64(s.value.u64),
        }
    }
}
