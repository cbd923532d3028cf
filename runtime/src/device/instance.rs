//! The Vulkan loader and instance (with the validation layer and its messenger when asked).

use super::error::{vkerr, DeviceError};
use super::messenger::{self, MessageLog, Messenger};
use ash::vk;
use std::ffi::{CStr, CString};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// The loader and a Vulkan 1.1+ instance; destroys the instance (and messenger) when dropped.
pub(crate) struct Instance {
    /// The loader: kept loaded for as long as the instance is used, and used to load
    /// instance-level extension functions.
    entry: ash::Entry,
    raw: ash::Instance,
    messenger: Option<Messenger>,
    /// The API version the instance was created with (at most 1.3).
    pub api_version: u32,
}

impl Instance {
    /// Loads Vulkan and creates an instance; with `validation`, the Khronos layer is enabled
    /// and its messages go to `log`.
    ///
    /// # Safety
    /// `log` must stay at its address until the returned instance is dropped (the validation
    /// callback writes to it).
    pub unsafe fn create(validation: bool, log: &MessageLog) -> Result<Instance, DeviceError> {
        // SAFETY: loading the system's Vulkan loader runs its initialization; nothing else in
        // this process depends on its absence.
        let entry =
            unsafe { ash::Entry::load() }.map_err(|e| DeviceError::NoLoader(e.to_string()))?;
        let api_version = supported_version(&entry)?;
        // SAFETY: the caller keeps `log` alive for the instance's lifetime.
        let raw = unsafe { create_raw(&entry, api_version, validation, log)? };
        let messenger = if validation {
            // SAFETY: `raw` was created from `entry` with debug utils enabled (validation on);
            // `log` outlives it (the caller's contract); Drop destroys it before the instance.
            match unsafe { Messenger::create(&entry, &raw, log) } {
                Ok(m) => Some(m),
                Err(e) => {
                    // SAFETY: nothing was made from `raw` yet.
                    unsafe { raw.destroy_instance(None) };
                    return Err(vkerr("vkCreateDebugUtilsMessengerEXT")(e));
                }
            }
        } else {
            None
        };
        Ok(Instance {
            entry,
            raw,
            messenger,
            api_version,
        })
    }

    /// The loader the instance was created from.
    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }

    /// Whether the validation layer is on.
    pub fn validation(&self) -> bool {
        self.messenger.is_some()
    }
}

impl std::ops::Deref for Instance {
    type Target = ash::Instance;
    fn deref(&self) -> &ash::Instance {
        &self.raw
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: every object made from the instance (the device first) is destroyed by its
        // owner before this: `Shared` drops its device before its instance, and creation drops
        // a half-made device before the instance.
        unsafe {
            if let Some(m) = &self.messenger {
                m.destroy();
            }
            self.raw.destroy_instance(None);
        }
    }
}

/// The instance version to ask for: what the loader offers, capped at 1.3; 1.0 is refused.
fn supported_version(entry: &ash::Entry) -> Result<u32, DeviceError> {
    // SAFETY: a global command with no preconditions on a loaded entry.
    let version = unsafe { entry.try_enumerate_instance_version() }
        .map_err(vkerr("vkEnumerateInstanceVersion"))?
        .unwrap_or(vk::API_VERSION_1_0);
    if vk::api_version_major(version) == 1 && vk::api_version_minor(version) < 1 {
        return Err(DeviceError::InstanceTooOld(
            1,
            vk::api_version_minor(version),
        ));
    }
    Ok(version.min(vk::API_VERSION_1_3))
}

/// `vkCreateInstance` with the layers and extensions the options need.
///
/// # Safety
/// As [`Instance::create`].
unsafe fn create_raw(
    entry: &ash::Entry,
    api_version: u32,
    validation: bool,
    log: &MessageLog,
) -> Result<ash::Instance, DeviceError> {
    let mut layers = Vec::new();
    let mut exts = Vec::new();
    if validation {
        if !has_layer(entry, VALIDATION_LAYER)? {
            return Err(DeviceError::ValidationLayerMissing);
        }
        layers.push(VALIDATION_LAYER.as_ptr());
        exts.push(ash::ext::debug_utils::NAME.as_ptr());
    }
    let mut flags = vk::InstanceCreateFlags::empty();
    if has_extension(entry, ash::khr::portability_enumeration::NAME)? {
        exts.push(ash::khr::portability_enumeration::NAME.as_ptr());
        flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
    }
    let app_name = CString::new("vkprism").unwrap_or_default();
    let app = vk::ApplicationInfo::default()
        .application_name(&app_name)
        .engine_name(&app_name)
        .api_version(api_version);
    let mut debug_info = messenger::create_info(log);
    let mut info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_layer_names(&layers)
        .enabled_extension_names(&exts)
        .flags(flags);
    if validation {
        // Also catches messages from vkCreateInstance / vkDestroyInstance themselves.
        info = info.push_next(&mut debug_info);
    }
    // SAFETY: every pointer in `info` (names, app info, chained messenger info) lives until
    // this call returns; the messenger's user pointer (`log`) outlives the instance by the
    // caller's contract.
    unsafe { entry.create_instance(&info, None) }.map_err(vkerr("vkCreateInstance"))
}

fn has_layer(entry: &ash::Entry, name: &CStr) -> Result<bool, DeviceError> {
    // SAFETY: a global command with no preconditions on a loaded entry.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }
        .map_err(vkerr("vkEnumerateInstanceLayerProperties"))?;
    Ok(layers.iter().any(|l| l.layer_name_as_c_str() == Ok(name)))
}

fn has_extension(entry: &ash::Entry, name: &CStr) -> Result<bool, DeviceError> {
    // SAFETY: a global command with no preconditions on a loaded entry.
    let exts = unsafe { entry.enumerate_instance_extension_properties(None) }
        .map_err(vkerr("vkEnumerateInstanceExtensionProperties"))?;
    Ok(exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name)))
}
