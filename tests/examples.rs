//! The examples run by `cargo test` (lavapipe in CI, validation layer on): each example's core
//! function, on small inputs, in every variant the device can run, against its CPU reference.

#[path = "../examples/image_filter.rs"]
mod image_filter;
#[path = "../examples/network.rs"]
mod network;

use vkprism::{ContextOptions, LoadOptions, Options, TensorFormat};
use vkprism_testkit::{assert_clean, ctx, ctx_with};

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
        if !ctx.features().features.contains_all(v.requires()) {
            continue;
        }
        let name = v.key.name();
        let outcome = image_filter::filter(
            &ctx,
            &LoadOptions::variant_named(&name).unwrap(),
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

#[test]
fn network_replays_and_matches_cpu() {
    let ctx = ctx();
    let net = network::cnn(3);
    // Eight values (input, seven intermediates) in three buffers: conv/relu ping-pong in two, the
    // residual needs a third while fc1's output is still to be read.
    let (slots, buffers) = network::plan_memory(&net);
    assert_eq!(buffers, 3);
    assert_eq!(slots[0], None, "the input has its own tensor");
    assert_eq!(
        slots[net.layers.len()],
        None,
        "the output has its own tensor"
    );
    for (i, (_, op)) in net.layers.iter().enumerate() {
        if let network::Op::Add { a, b, .. } = op {
            // A layer never writes a buffer it reads.
            assert_ne!(slots[i + 1], slots[*a]);
            assert_ne!(slots[i + 1], slots[*b]);
        }
    }

    // The fp32-only context: the same network in the other storage format.
    let fp32 = ctx_with(ContextOptions::default().with_options(Options::fp32_only()));
    let fp32_session = network::Session::new(&fp32, &net).unwrap();
    assert_eq!(fp32_session.format, TensorFormat::F32);
    for (ctx, mut session) in [
        (&ctx, network::Session::new(&ctx, &net).unwrap()),
        (&fp32, fp32_session),
    ] {
        network_session(ctx, &net, &mut session);
    }
}

fn network_session(ctx: &vkprism::Context, net: &network::Network, session: &mut network::Session) {
    let tolerance = session.tolerance();
    for i in 0..4 {
        let x = network::input(net, i);
        let got = session.run(&x).unwrap();
        let (want, scale) = network::reference(net, session.format, &x);
        let err = network::check(&got, &want, &scale);
        assert!(
            err <= tolerance,
            "input {i}: error {err:.2e} > {tolerance:.0e}"
        );
        let times = session.layer_times().unwrap();
        assert_eq!(times.len(), net.layers.len());
        assert_clean(ctx);
    }
    // Different inputs give different outputs (the replay really reads the new input).
    let a = session.run(&network::input(net, 0)).unwrap();
    let b = session.run(&network::input(net, 1)).unwrap();
    assert_ne!(a, b);
    assert_clean(ctx);
}
