//! The environment variables (`VKPRISM_DEVICE`, `VKPRISM_VALIDATION`, `VKPRISM_QUEUE_FAMILY`),
//! in tests serialized by [`ENV`] because they are process-wide (and this binary's other test
//! reads none); and the committed test SPIR-V checked against its GLSL with the installed
//! glslangValidator.

use std::sync::Mutex;
use vkprism_runtime::context::Error as ContextError;
use vkprism_runtime::{Context, ContextOptions, DeviceSelector};

/// Held by every test that sets environment variables.
static ENV: Mutex<()> = Mutex::new(());

/// The `BadEnvironment` error `Context::new` returns with `name=value` set (and the other
/// variables unset), after checking it names the variable and the value.
fn refused(name: &str, value: &str) -> String {
    for v in [
        "VKPRISM_DEVICE",
        "VKPRISM_VALIDATION",
        "VKPRISM_QUEUE_FAMILY",
    ] {
        std::env::remove_var(v);
    }
    std::env::set_var(name, value);
    let e = Context::new().unwrap_err();
    std::env::remove_var(name);
    match &e {
        ContextError::BadEnvironment {
            name: n, value: v, ..
        } => assert_eq!((*n, v.as_str()), (name, value)),
        other => panic!("{name}={value:?}: {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains(name) && msg.contains("accepted"), "{msg}");
    msg
}

#[test]
fn environment_values_are_validated() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let msg = refused("VKPRISM_VALIDATION", "yes");
    assert!(msg.contains("1 (validation on) or 0"), "{msg}");
    refused("VKPRISM_VALIDATION", "true");
    refused("VKPRISM_VALIDATION", "2");
    let msg = refused("VKPRISM_QUEUE_FAMILY", "abc");
    assert!(msg.contains("queue family index"), "{msg}");
    refused("VKPRISM_QUEUE_FAMILY", "-1");
    let msg = refused("VKPRISM_DEVICE", "-1");
    assert!(
        msg.contains("device index") && msg.contains("substring"),
        "{msg}"
    );
    refused("VKPRISM_DEVICE", "1.5");
    refused("VKPRISM_DEVICE", "99999999999999999999999");
    refused("VKPRISM_DEVICE", "   ");
    // A queue family that is a number but not a compute family names those that are.
    std::env::set_var("VKPRISM_QUEUE_FAMILY", "99");
    let e = Context::new().unwrap_err();
    std::env::remove_var("VKPRISM_QUEUE_FAMILY");
    assert!(
        matches!(&e, ContextError::NoSuchQueueFamily { index: 99, compute, .. } if !compute.is_empty()),
        "{e}"
    );
    // Accepted values still work: an explicit option overrides a bad variable only where the
    // option decides (validation), and `1`/`0` with spaces are accepted.
    std::env::set_var("VKPRISM_VALIDATION", "yes");
    let ctx = Context::with_options(ContextOptions {
        validation: Some(true),
        ..Default::default()
    })
    .unwrap();
    assert!(ctx.validation_enabled());
    drop(ctx);
    std::env::set_var("VKPRISM_VALIDATION", " 1 ");
    assert!(Context::new().unwrap().validation_enabled());
    std::env::set_var("VKPRISM_QUEUE_FAMILY", "0");
    let ctx = Context::new().unwrap();
    assert!(ctx.validation_enabled());
    ctx.check_validation().unwrap();
    drop(ctx);
    for v in [
        "VKPRISM_DEVICE",
        "VKPRISM_VALIDATION",
        "VKPRISM_QUEUE_FAMILY",
    ] {
        std::env::remove_var(v);
    }
}

#[test]
fn environment_chooses_device_and_validation() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::remove_var("VKPRISM_DEVICE");
    std::env::set_var("VKPRISM_VALIDATION", "1");
    let ctx = Context::new().expect("a Vulkan device (lavapipe in CI) is required");
    assert!(
        ctx.validation_enabled(),
        "VKPRISM_VALIDATION=1 turns the layer on"
    );
    let name = ctx.device_name();
    drop(ctx);
    // The option overrides the variable.
    let ctx = Context::with_options(ContextOptions {
        validation: Some(false),
        ..Default::default()
    })
    .unwrap();
    assert!(!ctx.validation_enabled());
    drop(ctx);
    std::env::set_var("VKPRISM_VALIDATION", "0");
    assert!(!Context::new().unwrap().validation_enabled());

    std::env::set_var("VKPRISM_DEVICE", "0");
    assert_eq!(Context::new().unwrap().device_name(), name);
    std::env::set_var("VKPRISM_DEVICE", name.to_uppercase());
    assert_eq!(Context::new().unwrap().device_name(), name);
    std::env::set_var("VKPRISM_DEVICE", "no-such-device-anywhere");
    let e = Context::new().unwrap_err();
    assert!(
        matches!(&e, ContextError::DeviceNotFound { selector, available } if selector.contains("no-such-device-anywhere") && available.contains(&name)),
        "{e}"
    );
    std::env::set_var("VKPRISM_DEVICE", "99");
    assert!(matches!(
        Context::new(),
        Err(ContextError::DeviceNotFound { .. })
    ));
    // An explicit selector wins over the variable.
    let ctx = Context::with_options(ContextOptions {
        device: DeviceSelector::Index(0),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(ctx.device_name(), name);
    std::env::remove_var("VKPRISM_DEVICE");
    std::env::remove_var("VKPRISM_VALIDATION");
}

#[test]
fn committed_spirv_is_fresh() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders");
    let out = std::env::temp_dir().join(format!("vkprism-spv-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("comp") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let spv = out.join(format!("{stem}.spv"));
        let status = std::process::Command::new("glslangValidator")
            .args(["-V", "--target-env", "vulkan1.1", "-o"])
            .arg(&spv)
            .arg(&path)
            .output()
            .unwrap_or_else(|e| {
                panic!("glslangValidator (Debian: glslang-tools) is required: {e}")
            });
        assert!(
            status.status.success(),
            "{stem}: {}",
            String::from_utf8_lossy(&status.stdout)
        );
        let fresh = std::fs::read(&spv).unwrap();
        let committed = std::fs::read(dir.join(format!("{stem}.spv"))).unwrap();
        // Word 2 is the generator's version: a newer glslang may stamp another one.
        let words = |b: &[u8]| -> Vec<u32> {
            b.chunks_exact(4)
                .enumerate()
                .filter(|(i, _)| *i != 2)
                .map(|(_, c)| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        assert!(
            words(&fresh) == words(&committed),
            "{stem}.spv is stale: run runtime/tests/shaders/build.sh"
        );
        checked += 1;
    }
    assert!(
        checked >= 10,
        "only {checked} shaders found in {}",
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&out);
}
