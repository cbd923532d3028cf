//! The reduced ResNet (ResNet-50's depth, width 8, 32×32 images) with random weights on the
//! device against the CPU reference, in every float format the device runs; safetensors
//! input and output; bad weights and bad inputs as typed errors, the model usable after.

use safetensors::Dtype;
use vkprism::{Context, TensorFormat};
use vkprism_models::resnet::{
    reference, HostTensor, HostWeights, Logits, ResNet, ResNetConfig, ResNetError, StemLayout,
    Timing,
};
use vkprism_shaders::ops::OpError;
use vkprism_testkit::{assert_clean, ctx, random_in};

const SEED: u64 = 21;

/// A batch of `batch` random images of the reduced configuration's size.
fn images(cfg: &ResNetConfig, batch: usize, seed: u64) -> (Vec<f32>, [usize; 4]) {
    let shape = [batch, cfg.input, cfg.input, 3];
    (random_in(shape.iter().product(), seed, -2.0, 2.0), shape)
}

/// The model of `weights` in `format`, or `None` where the device runs no variant of it.
fn model_in(
    ctx: &Context,
    cfg: ResNetConfig,
    weights: &HostWeights,
    format: TensorFormat,
) -> Option<ResNet> {
    let mut model = ResNet::new(ctx, cfg, weights, format).unwrap();
    let (x, shape) = images(&cfg, 1, 0);
    match model.forward(&x, shape) {
        Err(ResNetError::Op(OpError::FormatUnsupported { .. })) => {
            eprintln!("{format:?}: the device runs no variant; left out");
            None
        }
        r => {
            r.unwrap();
            Some(model)
        }
    }
}

/// The largest |got - want| over the largest |want|.
fn relative_error(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let err = got
        .iter()
        .zip(want)
        .fold(0f32, |m, (g, w)| m.max((g - w).abs()));
    err / scale.max(1e-6)
}

/// The cosine similarity of two vectors.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// Image `n`'s best class in `logits` (`[batch, classes]`), and its lead over the second.
fn top1(logits: &[f32], classes: usize, n: usize) -> (usize, f32) {
    let l = Logits {
        classes,
        values: logits.to_vec(),
    };
    let top = l.top_k(n, 2);
    (top[0].0, top[0].1 - top[1].1)
}

#[test]
fn f32_logits_match_the_reference_batch_1_and_2() {
    let ctx = ctx();
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    let mut model = ResNet::new(&ctx, cfg, &weights, TensorFormat::F32).unwrap();
    for (batch, seed) in [(1, 1), (2, 2), (2, 3), (1, 4)] {
        let (x, shape) = images(&cfg, batch, seed);
        let got = model.forward(&x, shape).unwrap();
        let want = reference::forward(&cfg, &weights, &x, shape).unwrap();
        assert_eq!(got.values.len(), batch * cfg.classes);
        let err = relative_error(&got.values, &want);
        println!("batch {batch}: relative error {err:e}");
        assert!(
            err < 1e-5,
            "batch {batch}: relative error {err}\n{:?}\n{want:?}",
            got.values
        );
    }
    let memory = model.memory().unwrap();
    println!("{memory}");
    let plan = model.plan_description().unwrap();
    assert!(
        plan.contains("layer4.2.conv3: [1, 1, 1, 256] in buffer"),
        "{plan}"
    );
    assert!(
        memory.planned_bytes < memory.unplanned_bytes / 3,
        "{memory}"
    );
    assert_clean(&ctx);
}

/// The stem over 2×2 blocks of pixels (a 4×4 stride-1 convolution of 16 channels) gives the
/// reference's logits, in F32 to 1e-5 and in F16 to the F16 cosine, over even and odd image
/// sizes (odd: the last block half outside the image); the layout the device gets by default
/// is the blocks where its F16 convolution has cooperative matrices.
#[test]
fn the_stem_over_blocks_matches_the_reference() {
    let ctx = ctx();
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    let blocks = |format| ResNet::with_stem(&ctx, cfg, &weights, format, StemLayout::Blocks);
    let mut model = blocks(TensorFormat::F32).unwrap();
    assert_eq!(model.stem_layout(), StemLayout::Blocks);
    // 32 then 31 rows and columns lay out into blocks of the same shape: the last block row and
    // column, the image's before, are zero padding after.
    let sizes = [
        (1, 32, 32, 31),
        (2, 33, 29, 32),
        (1, 32, 32, 34),
        (1, 31, 31, 35),
    ];
    for (batch, h, w, seed) in sizes {
        let shape = [batch, h, w, 3];
        let x = random_in(shape.iter().product(), seed, -2.0, 2.0);
        let got = model.forward(&x, shape).unwrap();
        let want = reference::forward(&cfg, &weights, &x, shape).unwrap();
        let err = relative_error(&got.values, &want);
        assert!(err < 1e-5, "{shape:?}: relative error {err}");
    }
    let mut f16 = blocks(TensorFormat::F16).unwrap();
    let (x, shape) = images(&cfg, 2, 33);
    match f16.forward(&x, shape) {
        Err(ResNetError::Op(OpError::FormatUnsupported { .. })) => {}
        got => {
            let want = reference::forward(&cfg, &weights, &x, shape).unwrap();
            let c = cosine(&got.unwrap().values, &want);
            assert!(c >= 0.999, "F16: cosine {c}");
        }
    }
    let by_default = ResNet::new(&ctx, cfg, &weights, TensorFormat::F16).unwrap();
    let f16_matrices = vkprism_shaders::Ops::new(&ctx)
        .conv2d_variant(TensorFormat::F16)
        .is_ok_and(|v| v.coopmat == Some(true));
    let want = if f16_matrices {
        StemLayout::Blocks
    } else {
        StemLayout::Pixels
    };
    assert_eq!(by_default.stem_layout(), want);
    assert_clean(&ctx);
}

#[test]
fn f16_and_bf16_logits_follow_the_reference() {
    let ctx = ctx();
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    for (format, min_cosine) in [(TensorFormat::F16, 0.999), (TensorFormat::Bf16, 0.998)] {
        let Some(mut model) = model_in(&ctx, cfg, &weights, format) else {
            continue;
        };
        for batch in [1, 2] {
            let (x, shape) = images(&cfg, batch, 10 + batch as u64);
            let got = model.forward(&x, shape).unwrap().values;
            let want = reference::forward(&cfg, &weights, &x, shape).unwrap();
            for n in 0..batch {
                let row = n * cfg.classes..(n + 1) * cfg.classes;
                let (g, w) = (&got[row.clone()], &want[row]);
                let c = cosine(g, w);
                println!("{format:?} batch {batch} image {n}: cosine {c:.6}");
                assert!(
                    c >= min_cosine,
                    "{format:?} image {n}: cosine {c}\n{g:?}\n{w:?}"
                );
                let (best, lead) = top1(&want, cfg.classes, n);
                let spread = w.iter().fold(0f32, |m, v| m.max(v.abs()));
                if lead > 0.05 * spread {
                    assert_eq!(top1(&got, cfg.classes, n).0, best, "{format:?} image {n}");
                }
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn safetensors_round_trip_in_each_dtype() {
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    let bytes = weights.to_safetensors(Dtype::F32).unwrap();
    assert_eq!(
        HostWeights::from_safetensors(&cfg, &bytes).unwrap(),
        weights
    );
    for (dtype, tol) in [(Dtype::F16, 1e-3), (Dtype::BF16, 8e-3)] {
        let bytes = weights.to_safetensors(dtype).unwrap();
        let back = HostWeights::from_safetensors(&cfg, &bytes).unwrap();
        for name in weights.names() {
            let (a, b) = (weights.get(name).unwrap(), back.get(name).unwrap());
            assert_eq!(a.shape, b.shape, "{name}");
            for (x, y) in a.data.iter().zip(&b.data) {
                assert!(
                    (x - y).abs() <= tol * x.abs().max(1e-3),
                    "{dtype:?} {name}: {x} {y}"
                );
            }
        }
    }
    let path =
        std::env::temp_dir().join(format!("vkprism-resnet-{}.safetensors", std::process::id()));
    weights.save(&path, Dtype::F32).unwrap();
    let loaded = HostWeights::load(&cfg, &path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(loaded.unwrap(), weights);
}

#[test]
fn weights_are_read_from_a_file_with_extra_tensors() {
    // torchvision's state_dict also holds each batch norm's `num_batches_tracked`.
    let cfg = ResNetConfig::reduced();
    let mut weights = HostWeights::random(&cfg, SEED);
    let extra = HostTensor {
        shape: vec![],
        data: vec![7.0],
    };
    weights.insert("bn1.num_batches_tracked", extra);
    let bytes = weights.to_safetensors(Dtype::F32).unwrap();
    let back = HostWeights::from_safetensors(&cfg, &bytes).unwrap();
    assert!(back.get("bn1.num_batches_tracked").is_err());
    weights.remove("bn1.num_batches_tracked");
    assert_eq!(back, weights);
}

#[test]
fn bad_weights_are_named_errors() {
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    let mut missing = weights.clone();
    missing.remove("layer3.0.downsample.1.running_var");
    let bytes = missing.to_safetensors(Dtype::F32).unwrap();
    match HostWeights::from_safetensors(&cfg, &bytes) {
        Err(ResNetError::MissingTensor { name }) => {
            assert_eq!(name, "layer3.0.downsample.1.running_var")
        }
        other => panic!("{other:?}"),
    }

    let mut wrong = weights.clone();
    let conv = HostTensor {
        shape: vec![16, 8, 1, 1],
        data: vec![0.5; 128],
    };
    wrong.insert("layer2.1.conv2.weight", conv);
    let bytes = wrong.to_safetensors(Dtype::F16).unwrap();
    match HostWeights::from_safetensors(&cfg, &bytes) {
        Err(e @ ResNetError::WrongShape { .. }) => {
            let s = e.to_string();
            assert!(
                s.contains("layer2.1.conv2.weight") && s.contains("[16, 16, 3, 3]"),
                "{s}"
            );
        }
        other => panic!("{other:?}"),
    }

    let bytes = weights.to_safetensors(Dtype::F32).unwrap();
    for cut in [4, 100, bytes.len() - 1] {
        match HostWeights::from_safetensors(&cfg, &bytes[..cut]) {
            Err(ResNetError::Truncated(_)) => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    let e = HostWeights::load(&cfg, std::path::Path::new("/nonexistent/w.safetensors"));
    assert!(matches!(e, Err(ResNetError::Io { .. })), "{e:?}");
}

#[test]
fn bad_weights_given_to_the_model_are_errors() {
    let ctx = ctx();
    let cfg = ResNetConfig::reduced();
    let mut weights = HostWeights::random(&cfg, SEED);
    weights.remove("fc.bias");
    match ResNet::new(&ctx, cfg, &weights, TensorFormat::F32) {
        Err(ResNetError::MissingTensor { name }) => assert_eq!(name, "fc.bias"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a model without fc.bias"),
    }
    let weights = HostWeights::random(&cfg, SEED);
    let e = ResNet::new(&ctx, cfg, &weights, TensorFormat::I8).err();
    assert!(
        matches!(e, Some(ResNetError::Format(TensorFormat::I8))),
        "{e:?}"
    );
    assert_clean(&ctx);
}

#[test]
fn bad_inputs_are_errors_and_the_model_stays_usable() {
    let ctx = ctx();
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    let mut model = ResNet::new(&ctx, cfg, &weights, TensorFormat::F32).unwrap();
    let (x, shape) = images(&cfg, 1, 5);
    let want = model.forward(&x, shape).unwrap();
    let bad = [
        (x.clone(), [1, 32, 32, 4]),
        (x.clone(), [1, 32, 16, 3]),
        (x.clone(), [0, 32, 32, 3]),
        (x[..x.len() - 3].to_vec(), shape),
    ];
    for (data, shape) in bad {
        match model.forward(&data, shape) {
            Err(e @ ResNetError::InputShape { .. }) => println!("{shape:?}: {e}"),
            other => panic!("{shape:?}: {other:?}"),
        }
        assert_eq!(model.forward(&x, [1, 32, 32, 3]).unwrap(), want);
    }
    // Another size replans; the first comes back the same.
    let (y, yshape) = images(&cfg.with_input(24), 2, 6);
    let got = model.forward(&y, yshape).unwrap();
    let reference = reference::forward(&cfg, &weights, &y, yshape).unwrap();
    assert!(relative_error(&got.values, &reference) < 1e-4);
    assert_eq!(model.forward(&x, shape).unwrap(), want);
    assert_clean(&ctx);
}

#[test]
fn layer_times_name_every_layer() {
    let ctx = ctx();
    let cfg = ResNetConfig::reduced();
    let weights = HostWeights::random(&cfg, SEED);
    let model = ResNet::new(&ctx, cfg, &weights, TensorFormat::F32).unwrap();
    let mut model = model.with_timing(Timing::PerLayer);
    assert!(model.layer_times().is_none(), "no pass has run");
    let (x, shape) = images(&cfg, 1, 8);
    let got = model.forward(&x, shape).unwrap();
    let want = reference::forward(&cfg, &weights, &x, shape).unwrap();
    assert!(relative_error(&got.values, &want) < 1e-5);
    let layers = model.layer_times().unwrap();
    let names: Vec<&str> = layers.iter().map(|(n, _)| n.as_str()).collect();
    // The stem, the pool, 16 blocks of 3 convolutions (the last adding the shortcut), 4
    // shortcuts, avgpool, fc.
    assert_eq!(names.len(), 2 + 16 * 3 + 4 + 2, "{names:?}");
    for name in [
        "conv1",
        "maxpool",
        "layer1.0.downsample",
        "layer4.2.conv3",
        "fc",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let total: std::time::Duration = layers.iter().map(|(_, t)| *t).sum();
    assert!(total <= model.gpu_time().unwrap());
    assert_clean(&ctx);
}
