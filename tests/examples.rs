//! The examples run by `cargo test` (lavapipe in CI, validation layer on): each example's core
//! function, on small inputs, in every variant the device can run, against its CPU reference.

#[path = "../examples/image_filter.rs"]
mod image_filter;

use vkprism::LoadOptions;
use vkprism_testkit::{assert_clean, ctx};

#[test]
fn image_filter_every_image_variant() {
    let ctx = ctx();
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("image_filter");
    // Odd sizes: the last workgroups of the 8×8 grid are partly outside the picture.
    let (w, h) = (37, 21);

    // The best image variant, as the example picks it.
    let best = image_filter::filter(
        &ctx,
        &LoadOptions::options(image_filter::image_options()),
        w,
        h,
        &out.join("best"),
    )
    .unwrap();
    assert_eq!(best.variants[0].memory, vkprism::MemoryKind::Image);
    assert_clean(&ctx);

    // The PNGs are real PNGs of the right size.
    for p in &best.pngs {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
        let info = decoder.read_info().unwrap();
        assert_eq!(
            (info.info().width, info.info().height),
            (w as u32, h as u32),
            "{}",
            p.display()
        );
    }

    // Every image variant this device has the features for.
    let mut ran = 0;
    for v in image_filter::blur::VARIANTS {
        if !ctx.features().features.contains_all(v.requires) {
            continue;
        }
        let name = v.key.name();
        let outcome = image_filter::filter(
            &ctx,
            &LoadOptions::variant(&name),
            w,
            h,
            &out.join(&name),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(outcome.variants[0].name(), name);
        assert_clean(&ctx);
        ran += 1;
    }
    assert!(ran >= 1, "the device runs no image variant");
}
