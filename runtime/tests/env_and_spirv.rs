//! The environment variables (`VKPRISM_DEVICE`, `VKPRISM_VALIDATION`, `VKPRISM_QUEUE_FAMILY`),
//! in tests serialized by [`ENV`] because they are process-wide (and this binary's other test
//! reads none); and the committed test SPIR-V checked against its GLSL, compiled again by the
//! glslang the macro links.

use std::sync::Mutex;
use vkprism_runtime::DeviceError;
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
        DeviceError::BadEnvironment {
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
        matches!(&e, DeviceError::NoSuchQueueFamily { index: 99, compute, .. } if !compute.is_empty()),
        "{e}"
    );
    // Accepted values still work: an explicit option overrides a bad variable only where the
    // option decides (validation), and `1`/`0` with spaces are accepted.
    std::env::set_var("VKPRISM_VALIDATION", "yes");
    let ctx = Context::with_options(ContextOptions::default().with_validation(true)).unwrap();
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
    let ctx = Context::with_options(ContextOptions::default().with_validation(false)).unwrap();
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
        matches!(&e, DeviceError::DeviceNotFound { selector, available } if selector.contains("no-such-device-anywhere") && available.contains(&name)),
        "{e}"
    );
    std::env::set_var("VKPRISM_DEVICE", "99");
    assert!(matches!(
        Context::new(),
        Err(DeviceError::DeviceNotFound { .. })
    ));
    // An explicit selector wins over the variable.
    let ctx =
        Context::with_options(ContextOptions::default().with_device(DeviceSelector::Index(0)))
            .unwrap();
    assert_eq!(ctx.device_name(), name);
    std::env::remove_var("VKPRISM_DEVICE");
    std::env::remove_var("VKPRISM_VALIDATION");
}

/// The committed test kernels (`tests/shaders/*.comp`), each with its SPIR-V as glslang makes
/// it now (Vulkan 1.1), in name order.
fn test_kernels() -> Vec<(std::path::PathBuf, Vec<u32>)> {
    use glslang::{CompilerOptions, ShaderInput, ShaderSource, ShaderStage, SpirvVersion, Target};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("comp"))
        .collect();
    paths.sort();
    let compiler = glslang::Compiler::acquire().expect("glslang initializes");
    let options = CompilerOptions {
        target: Target::Vulkan {
            version: glslang::VulkanVersion::Vulkan1_1,
            spirv_version: SpirvVersion::SPIRV1_3,
        },
        ..Default::default()
    };
    paths
        .into_iter()
        .map(|path| {
            let text = ShaderSource::from(std::fs::read_to_string(&path).unwrap());
            let input = ShaderInput::new(
                &text,
                ShaderStage::Compute,
                &options,
                None::<&[(&str, Option<&str>)]>,
                None,
            )
            .unwrap();
            let words = compiler
                .create_shader(input)
                .and_then(|s| s.compile())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, words)
        })
        .collect()
}

#[test]
fn committed_spirv_is_fresh() {
    let kernels = test_kernels();
    for (path, fresh) in &kernels {
        let committed = std::fs::read(path.with_extension("spv")).unwrap();
        let committed: Vec<u32> = committed
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // Word 2 is the generator's version: a newer glslang may stamp another one.
        let body = |w: &[u32]| -> Vec<u32> {
            w.iter()
                .enumerate()
                .filter(|(i, _)| *i != 2)
                .map(|(_, w)| *w)
                .collect()
        };
        assert!(
            body(fresh) == body(&committed),
            "{} is stale: run runtime/tests/shaders/build.sh",
            path.with_extension("spv").display()
        );
    }
    assert!(
        kernels.len() >= 10,
        "only {} test kernels found",
        kernels.len()
    );
}

/// Rewrites the committed SPIR-V from its GLSL (`runtime/tests/shaders/build.sh` runs this).
#[test]
#[ignore = "writes the committed SPIR-V: run by runtime/tests/shaders/build.sh"]
fn regenerate_committed_spirv() {
    for (path, words) in test_kernels() {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(path.with_extension("spv"), bytes).unwrap();
    }
}
