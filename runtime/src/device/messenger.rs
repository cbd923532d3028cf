//! The validation layer's messages: a callback that records them into a log owned by
//! `Shared`, never panicking across the FFI boundary.

use ash::vk;
use std::ffi::c_void;
use std::sync::Mutex;

/// Where the callback records validation messages.
pub(crate) type MessageLog = Mutex<Vec<String>>;

/// A debug-utils messenger and the loader that destroys it.
pub(crate) struct Messenger {
    loader: ash::ext::debug_utils::Instance,
    handle: vk::DebugUtilsMessengerEXT,
}

/// What the messenger reports (warnings and errors, from validation and the loader), into `log`.
///
/// The returned struct holds `log`'s address for the callback: whatever is created from it must
/// be destroyed before `log` moves or goes.
pub(crate) fn create_info(log: &MessageLog) -> vk::DebugUtilsMessengerCreateInfoEXT<'static> {
    vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        )
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL,
        )
        .pfn_user_callback(Some(on_message))
        .user_data(log as *const MessageLog as *mut c_void)
}

impl Messenger {
    /// A messenger on `instance` recording into `log`.
    ///
    /// # Safety
    /// `instance` was created from `entry` with `VK_EXT_debug_utils` enabled; `log` stays at its
    /// address until [`Messenger::destroy`] has run; `destroy` runs before the instance is
    /// destroyed.
    pub unsafe fn create(
        entry: &ash::Entry,
        instance: &ash::Instance,
        log: &MessageLog,
    ) -> Result<Messenger, vk::Result> {
        let loader = ash::ext::debug_utils::Instance::new(entry, instance);
        // SAFETY: the caller guarantees the extension is enabled and that `log` outlives the
        // messenger, which is all the callback's user pointer needs.
        let handle = unsafe { loader.create_debug_utils_messenger(&create_info(log), None)? };
        Ok(Messenger { loader, handle })
    }

    /// Destroys the messenger.
    ///
    /// # Safety
    /// Called once, before the instance it was made on is destroyed.
    pub unsafe fn destroy(&self) {
        // SAFETY: the caller guarantees the instance is alive and this runs once.
        unsafe { self.loader.destroy_debug_utils_messenger(self.handle, None) };
    }
}

/// The debug-utils callback: appends `severity: message` to the [`MessageLog`] in `user`.
unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // Never panic here: unwinding across the FFI boundary is undefined behaviour.
    if user.is_null()
        || data.is_null()
        || !kind.contains(vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION)
    {
        return vk::FALSE;
    }
    // SAFETY: `data` is non-null and the loader passes a callback-data struct valid for the
    // duration of this call; `message_as_c_str` reads its NUL-terminated message (or None).
    let text = unsafe { (*data).message_as_c_str() }
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    // SAFETY: `user` is the address `create_info` took of a `MessageLog` that, by `Messenger`'s
    // and `Instance::create`'s contracts, outlives every messenger and instance that can call
    // us; only a shared reference is made, and the Mutex serializes access.
    let log = unsafe { &*(user as *const MessageLog) };
    if let Ok(mut v) = log.lock() {
        v.push(format!("{severity:?}: {text}"));
    }
    vk::FALSE
}
