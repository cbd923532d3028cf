//! Device creation and report, device selection, tensors and images: round trips per format on
//! both the mapped and the staged path, and their error paths. Validation on throughout.

use std::num::NonZeroU64;
use vkprism_runtime::DeviceError;
use vkprism_runtime::TensorError;
use vkprism_runtime::{
    Context, ContextOptions, DeviceSelector, Error, Feature, Image, Tensor, TensorFormat,
};
use vkprism_testkit::{assert_clean, ctx, ctx_with, quantize, random};

#[test]
fn device_is_created_and_reported() {
    let ctx = ctx();
    let r = ctx.report();
    let text = r.to_string();
    for want in [
        "device:",
        "driver:",
        "ids:",
        "vulkan:",
        "heap 0:",
        "features:",
        "limits:",
        "options:",
    ] {
        assert!(text.contains(want), "report lacks `{want}`:\n{text}");
    }
    assert!(text.contains(&ctx.device_name()));
    assert!(
        text.contains(&format!("vendor {:#06x}", r.vendor_id)),
        "{text}"
    );
    let f = ctx.features();
    assert!(f.limits.max_compute_work_group_invocations >= 128);
    assert!(f.limits.max_storage_buffer_range >= 1 << 27);
    assert!(f.limits.max_memory_allocation_size >= 1 << 30);
    assert!(f.limits.subgroup_size >= 1);
    assert!(f.limits.timestamp_period_ns > 0.0);
    // What lavapipe (CI) offers; a real GPU offers these too.
    if ctx.device_name().contains("llvmpipe") {
        for feat in [
            Feature::StorageBuffer16BitAccess,
            Feature::ShaderFloat16,
            Feature::StorageBuffer8BitAccess,
            Feature::ShaderInt8,
            Feature::ImageFormatsFp32,
        ] {
            assert!(f.supports(feat), "lavapipe should offer {feat}:\n{text}");
        }
        assert!(!f.supports(Feature::CooperativeMatrix));
        assert_eq!(f.limits.subgroup_size, 8);
    }
    println!("{text}");
    assert!(ctx.validation_messages().is_empty());
    assert_clean(&ctx);
}

#[test]
fn devices_are_chosen_by_index_and_name() {
    let by_index = ctx_with(ContextOptions::default().with_device(DeviceSelector::Index(0)));
    let name = by_index.device_name();
    // A case-changed substring of the name finds the same device.
    let part: String = name.chars().take(4).collect::<String>().to_uppercase();
    let by_name = ctx_with(ContextOptions::default().with_device(DeviceSelector::Name(part)));
    assert_eq!(by_name.device_name(), name);

    let e = Context::with_options(
        ContextOptions::default().with_device(DeviceSelector::Name("no such gpu 9000".into())),
    )
    .unwrap_err();
    assert!(
        matches!(&e, DeviceError::DeviceNotFound { available, .. } if available.contains(&name)),
        "{e}"
    );
    let e =
        Context::with_options(ContextOptions::default().with_device(DeviceSelector::Index(1000)))
            .unwrap_err();
    assert!(matches!(e, DeviceError::DeviceNotFound { .. }), "{e}");
}

#[test]
fn two_contexts_coexist_and_drop_in_any_order() {
    let a = ctx();
    let b = ctx();
    let ta = Tensor::from_f32(&a, &[4], TensorFormat::F32, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    drop(a); // the tensor keeps its device alive
    let tb = Tensor::from_f32(&b, &[2], TensorFormat::F32, &[5.0, 6.0]).unwrap();
    assert_eq!(ta.download_f32().unwrap(), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(tb.download_f32().unwrap(), [5.0, 6.0]);
    assert_clean(&b);
}

/// Every format round-trips; fp16 and bf16 round to nearest even exactly as `half` does.
fn round_trips(ctx: &Context) {
    let mut x = random(7 * 11 * 13, 1);
    // Values whose rounding is a tie or overflows: the conversions must agree with `half`.
    x[..8].copy_from_slice(&[
        1.0 + 1.0 / 2048.0, // fp16 tie, rounds to even (down)
        1.0 + 3.0 / 2048.0, // fp16 tie, rounds to even (up)
        1.0 + 1.0 / 256.0,  // bf16 tie
        65520.0,            // fp16 overflow to inf
        -0.0,
        1e-8,                        // fp16 subnormal / zero
        f32::from_bits(0x3f80_8000), // bf16 exact tie
        f32::from_bits(0x3f81_8000), // bf16 tie to even (up)
    ]);
    for fmt in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let t = Tensor::from_f32(ctx, &[7, 11, 13], fmt, &x).unwrap();
        assert_eq!(t.shape(), [7, 11, 13]);
        assert_eq!(t.len(), x.len());
        assert_eq!(t.size_bytes(), (x.len() * fmt.size()) as u64);
        let got = t.download_f32().unwrap();
        let want = quantize(&x, fmt);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{fmt:?} element {i}: {g} vs {w}");
        }
    }
    // Bf16 is rounded, not truncated.
    let t = Tensor::from_f32(
        ctx,
        &[1],
        TensorFormat::Bf16,
        &[f32::from_bits(0x3f80_ffff)],
    )
    .unwrap();
    assert_eq!(t.read_bytes().unwrap(), 0x3f81u16.to_le_bytes());

    let q: Vec<i8> = (0..77).map(|i| (i * 37 % 256) as u8 as i8).collect();
    let t = Tensor::from_i8(ctx, &[77], &q).unwrap();
    assert_eq!(t.download_i8().unwrap(), q);
    assert_eq!(t.size_bytes(), 77);

    for fmt in [TensorFormat::I32, TensorFormat::U32] {
        let t = Tensor::new(ctx, &[5], fmt).unwrap();
        let v = [0, 1, u32::MAX, 0x8000_0000, 42];
        t.upload_u32(&v).unwrap();
        assert_eq!(t.download_u32().unwrap(), v);
    }
    let t = Tensor::new(ctx, &[3], TensorFormat::I32).unwrap();
    t.upload_i32(&[-1, 0, i32::MIN]).unwrap();
    assert_eq!(t.download_i32().unwrap(), [-1, 0, i32::MIN]);

    // A constructor per element type, each making its format.
    let t = Tensor::from_i16(ctx, &[3], &[-2, 7, i16::MIN]).unwrap();
    assert_eq!(t.format(), TensorFormat::I16);
    assert_eq!(t.download_i16().unwrap(), [-2, 7, i16::MIN]);
    let t = Tensor::from_i32(ctx, &[2], &[-5, i32::MAX]).unwrap();
    assert_eq!(t.format(), TensorFormat::I32);
    assert_eq!(t.download_i32().unwrap(), [-5, i32::MAX]);
    let t = Tensor::from_u32(ctx, &[2], &[9, u32::MAX]).unwrap();
    assert_eq!(t.format(), TensorFormat::U32);
    assert_eq!(t.download_u32().unwrap(), [9, u32::MAX]);
    let t = Tensor::from_bytes(ctx, &[3], TensorFormat::Raw, &[1, 2, 3]).unwrap();
    assert_eq!(t.read_bytes().unwrap(), [1, 2, 3]);
    assert!(Tensor::from_bytes(ctx, &[2], TensorFormat::F16, &[1, 2, 3]).is_err());
}

#[test]
fn tensors_round_trip_mapped() {
    let ctx = ctx();
    round_trips(&ctx);
    if ctx.unified_memory() {
        assert!(Tensor::new(&ctx, &[4], TensorFormat::F32)
            .unwrap()
            .is_mapped());
    }
    assert_clean(&ctx);
}

#[test]
fn tensors_round_trip_staged() {
    let ctx = ctx_with(ContextOptions::default().with_force_staging(true));
    assert!(!ctx.unified_memory());
    round_trips(&ctx);
    assert!(!Tensor::new(&ctx, &[4], TensorFormat::F32)
        .unwrap()
        .is_mapped());
    assert_clean(&ctx);
}

#[test]
fn large_staged_tensor_is_copied_in_chunks() {
    let ctx = ctx_with(ContextOptions::default().with_force_staging(true));
    // Over the 64 MiB staging chunk, not a multiple of it.
    let n = (64 << 20) + 4096 + 3;
    let q: Vec<i8> = (0..n).map(|i| (i % 251) as u8 as i8).collect();
    let t = Tensor::from_i8(&ctx, &[n], &q).unwrap();
    let back = t.download_i8().unwrap();
    assert!(back == q, "chunked round trip differs");
    // Into the caller's buffer, chunk by chunk too; a buffer of the wrong length is refused.
    let mut into = vec![0u8; n];
    t.read_bytes_into(&mut into).unwrap();
    assert!(
        into.iter().zip(&q).all(|(a, b)| *a == *b as u8),
        "read_bytes_into differs"
    );
    assert!(matches!(
        t.read_bytes_into(&mut into[1..]),
        Err(TensorError::LengthMismatch { .. })
    ));
    assert_clean(&ctx);
}

/// Staged downloads alternate two kept readback buffers (chunk i + 1's GPU copy runs while the
/// host reads chunk i out): every byte arrives for one to five chunks, whole or not, read twice
/// into the same poisoned buffer; the context keeps exactly the two readback buffers (1 MiB
/// chunks here, so lavapipe's 128 MiB buffer limit allows many).
#[test]
fn staged_downloads_alternate_two_readback_buffers() {
    const CHUNK: usize = 1 << 20;
    let ctx = ctx_with(
        ContextOptions::default()
            .with_force_staging(true)
            .with_staging_chunk(NonZeroU64::new(CHUNK as u64).unwrap()),
    );
    let mut kept = 0;
    for n in [CHUNK - 1, CHUNK, 2 * CHUNK, 3 * CHUNK + 5, 5 * CHUNK - 4096] {
        let q: Vec<i8> = (0..n).map(|i| (i % 253) as u8 as i8).collect();
        let t = Tensor::from_i8(&ctx, &[n], &q).unwrap();
        assert!(!t.is_mapped());
        let before = ctx.allocated_bytes();
        assert!(
            t.download_i8().unwrap() == q,
            "{n} bytes: round trip differs"
        );
        kept += ctx.allocated_bytes() - before;
        let mut into = vec![0xAAu8; n];
        for round in 0..2 {
            t.read_bytes_into(&mut into).unwrap();
            assert!(
                into.iter().zip(&q).all(|(a, b)| *a == *b as u8),
                "{n} bytes, read {round}: read_bytes_into differs"
            );
            into.fill(0x55);
        }
    }
    assert_eq!(kept, 2 * CHUNK as u64, "two readback buffers, made once");
    assert_clean(&ctx);
}

/// `f32` values converted as they are staged: every value arrives (rounded as its format
/// rounds) whether a staging buffer holds whole values, splits one, or holds less than one.
#[test]
fn staged_float_uploads_convert_whole_values() {
    for (chunk, n) in [(1 << 20, 700_001), ((1 << 20) + 2, 700_001), (3, 11)] {
        let ctx = ctx_with(
            ContextOptions::default()
                .with_force_staging(true)
                .with_staging_chunk(NonZeroU64::new(chunk).unwrap()),
        );
        let values: Vec<f32> = (0..n).map(|i| (i % 1999) as f32 * 0.37 - 300.0).collect();
        for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
            let t = Tensor::from_f32(&ctx, &[n], format, &values).unwrap();
            let round = |v: f32| match format {
                TensorFormat::F16 => half::f16::from_f32(v).to_f32(),
                TensorFormat::Bf16 => half::bf16::from_f32(v).to_f32(),
                _ => v,
            };
            let back = t.download_f32().unwrap();
            let wrong = (0..n).find(|i| back[*i] != round(values[*i]));
            assert_eq!(wrong, None, "{format:?}, staging chunk {chunk}");
        }
        assert_clean(&ctx);
    }
}

#[test]
fn tensor_errors_are_reported() {
    let ctx = ctx();
    for shape in [&[][..], &[1, 2, 3, 4, 5], &[4, 0]] {
        assert!(
            matches!(
                Tensor::new(&ctx, shape, TensorFormat::F32),
                Err(TensorError::BadShape(_))
            ),
            "{shape:?}"
        );
    }
    let t = Tensor::new(&ctx, &[8], TensorFormat::F32).unwrap();
    assert!(matches!(
        t.upload_f32(&[1.0; 7]),
        Err(TensorError::LengthMismatch { got: 7, want: 8 })
    ));
    assert!(matches!(
        t.upload_i8(&[1; 8]),
        Err(TensorError::WrongFormat { .. })
    ));
    assert!(matches!(
        t.download_i8(),
        Err(TensorError::WrongFormat { .. })
    ));
    assert!(matches!(
        t.upload_u32(&[1; 8]),
        Err(TensorError::WrongFormat { .. })
    ));
    let i = Tensor::new(&ctx, &[8], TensorFormat::I8).unwrap();
    assert!(matches!(
        i.upload_f32(&[1.0; 8]),
        Err(TensorError::WrongFormat { .. })
    ));
    assert!(matches!(
        i.download_f32(),
        Err(TensorError::WrongFormat { .. })
    ));
    assert!(matches!(
        i.write_bytes(&[0; 9]),
        Err(TensorError::LengthMismatch { .. })
    ));

    // Oversized: the error names the limit.
    let limit = ctx.features().limits.max_storage_buffer_range;
    let e = Tensor::new(&ctx, &[(limit / 4 + 1) as usize], TensorFormat::F32).unwrap_err();
    assert!(
        matches!(&e, TensorError::TooLarge { limit_name, .. } if *limit_name == "maxStorageBufferRange"),
        "{e}"
    );
    assert!(e.to_string().contains("maxStorageBufferRange"));
    // Overflowing shapes are errors, not wrap-arounds.
    assert!(Tensor::new(&ctx, &[usize::MAX, 4], TensorFormat::F32).is_err());

    // Every module error converts into the crate error.
    let e: Error = Tensor::new(&ctx, &[0], TensorFormat::F32)
        .unwrap_err()
        .into();
    assert!(e.to_string().contains("dimensions"), "{e}");
    assert_clean(&ctx);
}

#[test]
fn images_round_trip_and_check_their_shape() {
    let ctx = ctx();
    for (fmt, feature) in [
        (TensorFormat::F32, Feature::ImageFormatsFp32),
        (TensorFormat::F16, Feature::ImageFormatsFp16),
    ] {
        if !ctx.features().supports(feature) {
            assert!(Image::new(&ctx, 1, [4, 1, 1], 1, fmt).is_err());
            continue;
        }
        for (dims, extent) in [(1u8, [37u32, 1, 1]), (2, [9, 5, 1]), (3, [3, 4, 5])] {
            for channels in [1u32, 4] {
                let im = Image::new(&ctx, dims, extent, channels, fmt).unwrap();
                let x = random(im.len(), dims as u64 * 10 + channels as u64);
                im.upload_f32(&x).unwrap();
                assert_eq!(
                    im.download_f32().unwrap(),
                    quantize(&x, fmt),
                    "{fmt:?} {dims}D {channels}ch"
                );
                assert_eq!(
                    (im.dims(), im.extent(), im.channels()),
                    (dims, extent, channels)
                );
            }
        }
    }
    let bad = [
        Image::new(&ctx, 0, [4, 1, 1], 1, TensorFormat::F32),
        Image::new(&ctx, 1, [4, 2, 1], 1, TensorFormat::F32),
        Image::new(&ctx, 2, [4, 0, 1], 1, TensorFormat::F32),
        Image::new(&ctx, 1, [4, 1, 1], 3, TensorFormat::F32),
        Image::new(&ctx, 1, [4, 1, 1], 1, TensorFormat::I8),
        Image::new(&ctx, 1, [u32::MAX, 1, 1], 1, TensorFormat::F32),
    ];
    for (i, r) in bad.into_iter().enumerate() {
        assert!(r.is_err(), "bad image {i} was accepted");
    }
    let im = Image::new(&ctx, 1, [4, 1, 1], 1, TensorFormat::F32).unwrap();
    assert!(matches!(
        im.upload_f32(&[0.0; 5]),
        Err(TensorError::LengthMismatch { .. })
    ));
    assert_clean(&ctx);
}

#[test]
fn validation_messages_are_recorded_not_panicked() {
    // The suite's "no validation message" checks only mean something if messages arrive.
    let ctx = ctx();
    assert_clean(&ctx);
    // SAFETY: the device outlives the call; a buffer it makes is destroyed at once, on this
    // thread, and no other thread of this test makes a context meanwhile.
    unsafe {
        let (_, device) = ctx.raw();
        // size 0 is invalid usage (VUID-VkBufferCreateInfo-size-00912).
        let info = ash::vk::BufferCreateInfo::default()
            .size(0)
            .usage(ash::vk::BufferUsageFlags::STORAGE_BUFFER);
        if let Ok(b) = device.create_buffer(&info, None) {
            device.destroy_buffer(b, None);
        }
    }
    let seen = ctx.validation_messages();
    assert!(
        !seen.is_empty(),
        "the layer said nothing about a zero-sized buffer"
    );
    let e = ctx.check_validation().unwrap_err();
    assert!(
        matches!(&e, DeviceError::ValidationMessages(m) if m == &seen),
        "{e}"
    );
    assert!(
        ctx.validation_messages().is_empty(),
        "check_validation clears them"
    );
}

/// The high-water mark of device memory counts what was held at once, stays after it is
/// dropped, and starts again from what is held now when reset.
#[test]
fn peak_allocated_bytes_is_a_high_water_mark() {
    let ctx = ctx();
    ctx.reset_peak_allocated_bytes();
    let base = ctx.allocated_bytes();
    assert_eq!(ctx.peak_allocated_bytes(), base);
    let (a, b) = (
        Tensor::new(&ctx, &[1 << 18], TensorFormat::F32).unwrap(),
        Tensor::new(&ctx, &[1 << 18], TensorFormat::F32).unwrap(),
    );
    let held = ctx.allocated_bytes();
    assert!(
        held >= base + 2 * (1 << 20),
        "{held} after two MiB from {base}"
    );
    drop((a, b));
    assert_eq!(ctx.allocated_bytes(), base);
    assert_eq!(ctx.peak_allocated_bytes(), held);
    ctx.reset_peak_allocated_bytes();
    assert_eq!(ctx.peak_allocated_bytes(), base);
    assert_clean(&ctx);
}
