//! The graph session on the device (validation layer on) against CPU computations of the same
//! graphs on random non-zero data: a small CNN and a transformer-style stack of row operations,
//! each resized to other shapes with its weights kept; the memory plan's reuse and its one
//! invariant (values alive at once never share a buffer); bad inputs and bad graphs as errors
//! naming the input or the node, the session running as before after each.

use vkprism::TensorFormat;
use vkprism_models::session::{
    Conv, Dim, Graph, Linear, MemoryPlan, Op, Recorded, Session, SessionError, Timing, Value,
};
use vkprism_shaders::ops::{Activation, Pool2d, Softmax, UnaryOp};
use vkprism_shaders::{reference, Conv2dDwShape};
use vkprism_testkit::{assert_clean, ctx, random_in};

/// Random non-zero values for a tensor of `shape`.
fn random(shape: &[usize], seed: u64) -> Vec<f32> {
    random_in(shape.iter().product(), seed, 0.1, 1.0)
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

/// A small CNN's weights, host side, for both the graph and the CPU.
struct CnnWeights {
    /// `[3, 3, 4, 8]`.
    conv: Vec<f32>,
    /// `[8]`.
    conv_bias: Vec<f32>,
    /// `[1, 1, 8, 8]`, the residual branch.
    branch: Vec<f32>,
    /// `[4, 8]`.
    fc: Vec<f32>,
    /// `[4]`.
    fc_bias: Vec<f32>,
}

impl CnnWeights {
    fn random(seed: u64) -> CnnWeights {
        CnnWeights {
            conv: random(&[3, 3, 4, 8], seed),
            conv_bias: random(&[8], seed + 1),
            branch: random(&[1, 1, 8, 8], seed + 2),
            fc: random(&[4, 8], seed + 3),
            fc_bias: random(&[4], seed + 4),
        }
    }
}

/// conv 3×3 (bias) → relu → max pool 2×2 → conv 1×1 → + the pooled value, relu → global
/// average pool → linear: images `[batch, height, width, 4]` to `[batch, 4]`.
fn cnn(w: &CnnWeights) -> Graph {
    cnn_with_fc(w, &[4, 8], w.fc.clone())
}

/// [`cnn`] with a last layer of weight `fc` of `fc_shape`.
fn cnn_with_fc(w: &CnnWeights, fc_shape: &[usize], fc: Vec<f32>) -> Graph {
    let mut g = Graph::new();
    let (pooled, branch) = cnn_body(&mut g, w, false);
    let y = g.conv2d("branch", pooled, branch);
    let y = g.add("residual", y, pooled, true);
    cnn_head(&mut g, w, y, fc_shape, fc);
    g
}

/// The first layers of [`cnn`]: conv 3×3 (bias) → relu (fused where `fused_relu`, else a node
/// of its own) → max pool 2×2; returns the pooled value and the 1×1 branch's convolution.
fn cnn_body(g: &mut Graph, w: &CnnWeights, fused_relu: bool) -> (Value, Conv) {
    let dims = [
        Dim::Var("batch"),
        Dim::Var("height"),
        Dim::Var("width"),
        Dim::Fixed(4),
    ];
    let x = g.input("images", &dims);
    let conv = Conv {
        weight: g.constant("conv.weight", &[3, 3, 4, 8], w.conv.clone()),
        bias: Some(g.constant("conv.bias", &[8], w.conv_bias.clone())),
        stride: 1,
        pad: 1,
        activation: if fused_relu {
            Activation::Relu
        } else {
            Activation::None
        },
    };
    let mut x = g.conv2d("conv", x, conv);
    if !fused_relu {
        x = g.unary("relu", x, UnaryOp::Relu);
    }
    let pooled = g.max_pool("pool", x, Pool2d::new(2, 2));
    let branch = Conv {
        weight: g.constant("branch.weight", &[1, 1, 8, 8], w.branch.clone()),
        bias: None,
        stride: 1,
        pad: 0,
        activation: Activation::None,
    };
    (pooled, branch)
}

/// The last layers of [`cnn`] after `y`: global average pool → linear of weight `fc`; the
/// logits the graph's output.
fn cnn_head(g: &mut Graph, w: &CnnWeights, y: Value, fc_shape: &[usize], fc: Vec<f32>) {
    let features = g.global_avg_pool("avgpool", y);
    let fc = Linear {
        weight: g.constant("fc.weight", fc_shape, fc),
        bias: Some(g.constant("fc.bias", &[4], w.fc_bias.clone())),
        activation: Activation::None,
    };
    let logits = g.linear("fc", features, fc);
    g.output(logits);
}

/// Channels-last convolution on the CPU, weights `[k, k, c, outc]`, stride 1.
fn conv_cpu(x: &[f32], s: [usize; 4], w: &[f32], k: usize, pad: usize, outc: usize) -> Vec<f32> {
    let [b, h, wd, c] = s;
    let (oh, ow) = (h + 2 * pad - k + 1, wd + 2 * pad - k + 1);
    let mut out = vec![0f32; b * oh * ow * outc];
    for n in 0..b {
        for (oy, ox, o) in
            (0..oh).flat_map(|y| (0..ow).flat_map(move |x| (0..outc).map(move |o| (y, x, o))))
        {
            let mut sum = 0f64;
            for (ky, kx) in (0..k).flat_map(|a| (0..k).map(move |b| (a, b))) {
                let (iy, ix) = (
                    (oy + ky) as isize - pad as isize,
                    (ox + kx) as isize - pad as isize,
                );
                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                    continue;
                }
                let base = ((n * h + iy as usize) * wd + ix as usize) * c;
                for ci in 0..c {
                    sum += x[base + ci] as f64 * w[((ky * k + kx) * c + ci) * outc + o] as f64;
                }
            }
            out[((n * oh + oy) * ow + ox) * outc + o] = sum as f32;
        }
    }
    out
}

/// 2×2 stride-2 max pooling, channels-last, on the CPU.
fn max_pool_cpu(x: &[f32], [b, h, w, c]: [usize; 4]) -> Vec<f32> {
    let (oh, ow) = (h / 2, w / 2);
    let mut out = vec![f32::MIN; b * oh * ow * c];
    for n in 0..b {
        for (y, xx, ch) in (0..oh * 2)
            .flat_map(|y| (0..ow * 2).flat_map(move |x| (0..c).map(move |ch| (y, x, ch))))
        {
            let o = &mut out[((n * oh + y / 2) * ow + xx / 2) * c + ch];
            *o = o.max(x[((n * h + y) * w + xx) * c + ch]);
        }
    }
    out
}

/// `x` `[rows, k]` times `w` `[n, k]` transposed, plus `bias`.
fn linear_cpu(x: &[f32], w: &[f32], bias: &[f32], k: usize) -> Vec<f32> {
    let n = bias.len();
    x.chunks_exact(k)
        .flat_map(|row| {
            (0..n).map(move |o| {
                let dot: f64 = (0..k).map(|i| row[i] as f64 * w[o * k + i] as f64).sum();
                (dot + bias[o] as f64) as f32
            })
        })
        .collect()
}

/// [`cnn`] on the CPU.
fn cnn_cpu(w: &CnnWeights, x: &[f32], shape: [usize; 4]) -> Vec<f32> {
    let [b, h, wd, _] = shape;
    let mut y = conv_cpu(x, shape, &w.conv, 3, 1, 8);
    for (v, bias) in y.iter_mut().zip(w.conv_bias.iter().cycle()) {
        *v = (*v + bias).max(0.0);
    }
    let pooled_shape = [b, h / 2, wd / 2, 8];
    let pooled = max_pool_cpu(&y, [b, h, wd, 8]);
    let branch = conv_cpu(&pooled, pooled_shape, &w.branch, 1, 0, 8);
    let sum: Vec<f32> = branch
        .iter()
        .zip(&pooled)
        .map(|(a, p)| (a + p).max(0.0))
        .collect();
    let pixels = (h / 2) * (wd / 2);
    let features: Vec<f32> = (0..b)
        .flat_map(|n| {
            let image = &sum[n * pixels * 8..(n + 1) * pixels * 8];
            (0..8).map(move |c| image.iter().skip(c).step_by(8).sum::<f32>() / pixels as f32)
        })
        .collect();
    linear_cpu(&features, &w.fc, &w.fc_bias, 8)
}

/// Runs the session on random images of `shape` (resized to it first) and checks the output
/// against the CPU; returns the output.
fn check_cnn(s: &mut Session, w: &CnnWeights, shape: [usize; 4], seed: u64) -> Vec<f32> {
    s.resize(&shape).unwrap();
    let x = random(&shape, seed);
    let got = s.run(&x).unwrap();
    assert_eq!(got.shape, [shape[0], 4]);
    let want = cnn_cpu(w, &x, shape);
    let err = relative_error(&got.values, &want);
    assert!(
        err < 1e-5,
        "{shape:?}: relative error {err}\n{:?}\n{want:?}",
        got.values
    );
    got.values
}

#[test]
fn a_small_cnn_matches_the_cpu_and_resizes_keeping_its_weights() {
    let ctx = ctx();
    let w = CnnWeights::random(1);
    let mut s = Session::new(&ctx, cnn(&w), TensorFormat::F32).unwrap();
    assert!(matches!(s.run(&[0.0]), Err(SessionError::NotPrepared)));
    let weight_bytes = s.weight_bytes();
    let first = check_cnn(&mut s, &w, [1, 8, 8, 4], 10);
    // The session holds no host copy of the weights: right results after a resize are the
    // weights uploaded once.
    check_cnn(&mut s, &w, [3, 6, 10, 4], 11);
    check_cnn(&mut s, &w, [2, 16, 4, 4], 12);
    assert_eq!(check_cnn(&mut s, &w, [1, 8, 8, 4], 10), first);
    assert_eq!(s.weight_bytes(), weight_bytes);
    assert_eq!(
        weight_bytes,
        (4 * 72 * 4 + 8 * 4 + 64 * 4 + 32 * 4 + 4 * 4) as u64
    );
    assert_clean(&ctx);
}

/// [`cnn`] with the 1×1 branch, its residual sum and ReLU as one [`Graph::conv2d_residual`] node
/// (returned with the graph): its shortcut a value of its own where `own_shortcut` (a ReLU of
/// the pooled values, which are not negative: the same numbers), else the pooled values the
/// branch convolves.
fn cnn_residual(w: &CnnWeights, own_shortcut: bool) -> (Graph, Value) {
    let mut g = Graph::new();
    let (pooled, branch) = cnn_body(&mut g, w, true);
    let shortcut = match own_shortcut {
        true => g.unary("shortcut", pooled, UnaryOp::Relu),
        false => pooled,
    };
    let branch = Conv {
        activation: Activation::Relu,
        ..branch
    };
    let y = g.conv2d_residual("branch", pooled, shortcut, branch);
    cnn_head(&mut g, w, y, &[4, 8], w.fc.clone());
    (g, y)
}

/// A residual convolution matches the CPU at two shapes, written over its shortcut where that
/// is a value of its own, over a copy of it where the shortcut is also what it convolves; a
/// shortcut of another shape is an error naming the node.
#[test]
fn a_residual_convolution_writes_over_its_shortcut_or_a_copy() {
    let ctx = ctx();
    let w = CnnWeights::random(4);
    for own_shortcut in [true, false] {
        let (g, y) = cnn_residual(&w, own_shortcut);
        let mut s = Session::new(&ctx, g, TensorFormat::F32).unwrap();
        for (shape, seed) in [([1, 8, 8, 4], 20), ([2, 6, 10, 4], 21)] {
            check_cnn(&mut s, &w, shape, seed);
            let planned = &s.plan().unwrap().values[y.index()];
            assert_eq!(planned.in_place_of.is_some(), own_shortcut, "{planned:?}");
        }
    }
    let mut g = Graph::new();
    let x = g.input(
        "x",
        &[Dim::Fixed(1), Dim::Fixed(4), Dim::Fixed(4), Dim::Fixed(4)],
    );
    let pooled = g.max_pool("pool", x, Pool2d::new(2, 2));
    let conv = Conv {
        weight: g.constant("w", &[1, 1, 4, 4], random(&[1, 1, 4, 4], 5)),
        bias: None,
        stride: 1,
        pad: 0,
        activation: Activation::None,
    };
    let y = g.conv2d_residual("sum", x, pooled, conv);
    g.output(y);
    let mut s = Session::new(&ctx, g, TensorFormat::F32).unwrap();
    match s.resize(&[1, 4, 4, 4]) {
        Err(e @ SessionError::Shape { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with("node `sum`"), "{message}");
            assert!(message.contains("[1, 2, 2, 4]"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_clean(&ctx);
}

/// A depthwise convolution node `name` of 8 channels: 3×3, padding 1, `stride`, the weight
/// `[3, 3, 8]`, the bias where given, then `activation`.
fn depthwise(
    g: &mut Graph,
    name: &str,
    weight: &[f32],
    bias: Option<&[f32]>,
    stride: usize,
    activation: Activation,
) -> Conv {
    Conv {
        weight: g.constant(&format!("{name}.weight"), &[3, 3, 8], weight.to_vec()),
        bias: bias.map(|b| g.constant(&format!("{name}.bias"), &[8], b.to_vec())),
        stride,
        pad: 1,
        activation,
    }
}

/// The CPU's 3×3 depthwise convolution of `x` `[batch, h, w, 8]` (padding 1): the output and
/// its `[batch, outh, outw]`.
fn depthwise_cpu(
    x: &[f32],
    [batch, h, w]: [usize; 3],
    weight: &[f32],
    bias: &[f32],
    stride: usize,
) -> (Vec<f32>, [usize; 3]) {
    let s = Conv2dDwShape {
        batch,
        h,
        w,
        c: 8,
        kh: 3,
        kw: 3,
        stride,
        pad: 1,
    };
    let (out, _) = reference::conv2d_dw_nhwc(s, x, weight, bias);
    (out, [batch, s.outh(), s.outw()])
}

/// Two depthwise convolutions (3×3 with a bias and ReLU, then 3×3 of stride 2 without a bias)
/// against the CPU at two sizes of one graph; a weight in a dense convolution's layout is an
/// error naming the node.
#[test]
fn depthwise_convolutions_match_the_cpu_and_resize() {
    let ctx = ctx();
    let signed = |n: usize, seed| random_in(n, seed, -1.0, 1.0);
    let (w1, b1, w2) = (signed(72, 30), signed(8, 31), signed(72, 32));
    let mut g = Graph::new();
    let dims = [
        Dim::Var("batch"),
        Dim::Var("height"),
        Dim::Var("width"),
        Dim::Fixed(8),
    ];
    let x = g.input("x", &dims);
    let c1 = depthwise(&mut g, "dw1", &w1, Some(&b1), 1, Activation::Relu);
    let y = g.depthwise_conv2d("dw1", x, c1);
    let c2 = depthwise(&mut g, "dw2", &w2, None, 2, Activation::None);
    let y = g.depthwise_conv2d("dw2", y, c2);
    g.output(y);
    let mut s = Session::new(&ctx, g, TensorFormat::F32).unwrap();
    for (shape, seed) in [([1usize, 8, 8, 8], 33), ([2, 7, 9, 8], 34)] {
        s.resize(&shape).unwrap();
        let x = signed(shape.iter().product(), seed);
        let got = s.run(&x).unwrap();
        let (y1, at) = depthwise_cpu(&x, [shape[0], shape[1], shape[2]], &w1, &b1, 1);
        let y1: Vec<f32> = y1.iter().map(|v| v.max(0.0)).collect();
        let (want, [b, h, w]) = depthwise_cpu(&y1, at, &w2, &[0.0; 8], 2);
        assert_eq!(got.shape, [b, h, w, 8]);
        let err = relative_error(&got.values, &want);
        assert!(err < 1e-5, "{shape:?}: relative error {err}");
    }
    let mut g = Graph::new();
    let x = g.input("x", &dims);
    let dense = Conv {
        weight: g.constant("dw.weight", &[3, 3, 8, 8], signed(576, 35)),
        bias: None,
        stride: 1,
        pad: 1,
        activation: Activation::None,
    };
    let y = g.depthwise_conv2d("dw", x, dense);
    g.output(y);
    let mut s = Session::new(&ctx, g, TensorFormat::F32).unwrap();
    match s.resize(&[1, 8, 8, 8]) {
        Err(e @ SessionError::Shape { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with("node `dw`"), "{message}");
            assert!(message.contains("[kh, kw, c]"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_clean(&ctx);
}

/// A resize drops the pass before it records the next: its peak device memory is what the
/// larger of the two holds, never both (checked against the context's high-water mark, each
/// way), and the results stay right.
#[test]
fn a_resize_holds_one_pass_at_its_peak() {
    let ctx = ctx();
    let w = CnnWeights::random(4);
    let mut s = Session::new(&ctx, cnn(&w), TensorFormat::F32).unwrap();
    let (big, small) = ([8, 16, 16, 4], [1, 16, 16, 4]);
    check_cnn(&mut s, &w, big, 40);
    // Big to small: the peak is what the big pass held.
    ctx.reset_peak_allocated_bytes();
    let holding_big = ctx.allocated_bytes();
    check_cnn(&mut s, &w, small, 41);
    assert!(
        ctx.peak_allocated_bytes() <= holding_big,
        "{} > {holding_big}",
        ctx.peak_allocated_bytes()
    );
    // Small to big: the peak is what the big pass holds, not that plus the small one.
    let holding_small = ctx.allocated_bytes();
    assert!(holding_small < holding_big);
    ctx.reset_peak_allocated_bytes();
    check_cnn(&mut s, &w, big, 42);
    assert!(
        ctx.peak_allocated_bytes() <= holding_big,
        "{} > {holding_big}",
        ctx.peak_allocated_bytes()
    );
    assert_clean(&ctx);
}

/// A transformer-style stack over `[batch, seq, 8]`: layer norm → linear to 16 (SiLU) →
/// RMS norm → softmax (scaled) → plus the linear layer's output.
fn rows_graph(gamma: &[f32], beta: &[f32], fc: &[f32], fc_bias: &[f32], rms: &[f32]) -> Graph {
    let mut g = Graph::new();
    let x = g.input(
        "tokens",
        &[Dim::Var("batch"), Dim::Var("seq"), Dim::Fixed(8)],
    );
    let op = Op::LayerNorm {
        gamma: Some(g.constant("ln.gamma", &[8], gamma.to_vec())),
        beta: Some(g.constant("ln.beta", &[8], beta.to_vec())),
        eps: 1e-5,
    };
    let x = g.node("ln", op, &[x]);
    let fc = Linear {
        weight: g.constant("fc.weight", &[16, 8], fc.to_vec()),
        bias: Some(g.constant("fc.bias", &[16], fc_bias.to_vec())),
        activation: Activation::Silu,
    };
    let hidden = g.linear("fc", x, fc);
    let op = Op::RmsNorm {
        gamma: Some(g.constant("rms.gamma", &[16], rms.to_vec())),
        eps: 1e-5,
    };
    let x = g.node("rms", op, &[hidden]);
    let x = g.softmax("softmax", x, Softmax::new().with_scale(0.5));
    let x = g.add("residual", x, hidden, false);
    g.output(x);
    g
}

/// [`rows_graph`] on the CPU over rows of 8.
fn rows_cpu(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    fc: &[f32],
    fc_bias: &[f32],
    rms: &[f32],
) -> Vec<f32> {
    let normed: Vec<f32> = x
        .chunks_exact(8)
        .flat_map(|row| {
            let mean = row.iter().sum::<f32>() / 8.0;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / 8.0;
            let inv = 1.0 / (var + 1e-5).sqrt();
            (0..8).map(move |i| (row[i] - mean) * inv * gamma[i] + beta[i])
        })
        .collect();
    let hidden: Vec<f32> = linear_cpu(&normed, fc, fc_bias, 8)
        .into_iter()
        .map(|v| v / (1.0 + (-v).exp()))
        .collect();
    hidden
        .chunks_exact(16)
        .flat_map(|row| {
            let ms = row.iter().map(|v| v * v).sum::<f32>() / 16.0;
            let inv = 1.0 / (ms + 1e-5).sqrt();
            let scaled: Vec<f32> = (0..16).map(|i| 0.5 * row[i] * inv * rms[i]).collect();
            let max = scaled.iter().fold(f32::MIN, |m, &v| m.max(v));
            let total: f32 = scaled.iter().map(|v| (v - max).exp()).sum();
            let softmax = scaled.into_iter().map(move |v| (v - max).exp() / total);
            softmax.zip(row).map(|(p, h)| p + h).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn row_operations_match_the_cpu_at_each_sequence_length() {
    let ctx = ctx();
    let (gamma, beta, rms) = (random(&[8], 1), random(&[8], 2), random(&[16], 3));
    let (fc, fc_bias) = (random(&[16, 8], 4), random(&[16], 5));
    let graph = rows_graph(&gamma, &beta, &fc, &fc_bias, &rms);
    let mut s = Session::prepare(&ctx, graph, TensorFormat::F32, &[1, 3, 8]).unwrap();
    for (shape, seed) in [([1, 3, 8], 6), ([2, 7, 8], 7), ([4, 1, 8], 8)] {
        if s.input_shape() != Some(&shape[..]) {
            s.resize(&shape).unwrap();
        }
        let x = random_in(shape.iter().product(), seed, 0.1, 2.0);
        let got = s.run(&x).unwrap();
        assert_eq!(got.shape, [shape[0], shape[1], 16]);
        let want = rows_cpu(&x, &gamma, &beta, &fc, &fc_bias, &rms);
        let err = relative_error(&got.values, &want);
        assert!(err < 1e-5, "{shape:?}: relative error {err}");
        // The layer norm, the softmax and the sum write over their inputs, which die there;
        // the RMS norm's input lives on to the sum.
        let plan = s.plan().unwrap();
        let in_place: Vec<bool> = plan
            .values
            .iter()
            .map(|v| v.in_place_of.is_some())
            .collect();
        assert_eq!(in_place, [false, true, false, false, true, true], "{plan}");
        assert_never_shared_while_alive(s.graph(), plan);
    }
    assert_clean(&ctx);
}

/// Each value's life in node steps: from the node that makes it (the input: 0) to its last
/// reader (the output: past every node), from the graph's structure alone.
fn lifetimes(g: &Graph) -> Vec<(usize, usize)> {
    let mut life: Vec<(usize, usize)> = (0..g.value_count())
        .map(|v| (v.saturating_sub(1), v.saturating_sub(1)))
        .collect();
    for (i, node) in g.nodes().iter().enumerate() {
        for v in &node.inputs {
            life[v.index()].1 = i;
        }
    }
    life[g.output_value().unwrap().index()].1 = usize::MAX;
    life
}

/// Values sharing a buffer are never alive at once, except an input a node overwrites in
/// place at its last reading (the kernel reads each element before writing it); each buffer
/// holds each of its values.
fn assert_never_shared_while_alive(g: &Graph, plan: &MemoryPlan) {
    let life = lifetimes(g);
    for (a, va) in plan.values.iter().enumerate() {
        assert!(plan.buffers[va.buffer] >= va.len(), "{}: {plan}", va.name);
        for (b, vb) in plan.values.iter().enumerate().skip(a + 1) {
            let ((sa, ea), (sb, eb)) = (life[a], life[b]);
            let overlap = sa <= eb && sb <= ea;
            let handed_over = vb.in_place_of.map(Value::index) == Some(a) && ea == sb;
            if overlap && !handed_over {
                assert_ne!(va.buffer, vb.buffer, "{} and {}:\n{plan}", va.name, vb.name);
            }
        }
    }
}

/// A deeper residual CNN: a stem, then `blocks` blocks of conv → conv → + input, ReLU.
fn residual_graph(blocks: usize) -> Graph {
    let mut g = Graph::new();
    let dims = [
        Dim::Var("batch"),
        Dim::Var("size"),
        Dim::Var("size"),
        Dim::Fixed(4),
    ];
    let mut x = g.input("images", &dims);
    let conv = |g: &mut Graph, name: &str, x, c, seed| {
        let conv = Conv {
            weight: g.constant(name, &[3, 3, c, 8], random(&[3, 3, c, 8], seed)),
            bias: None,
            stride: 1,
            pad: 1,
            activation: Activation::Relu,
        };
        g.conv2d(name, x, conv)
    };
    x = conv(&mut g, "stem", x, 4, 0);
    for i in 0..blocks {
        let y = conv(&mut g, &format!("block{i}.conv1"), x, 8, 2 * i as u64 + 1);
        let y = conv(&mut g, &format!("block{i}.conv2"), y, 8, 2 * i as u64 + 2);
        x = g.add(&format!("block{i}.add"), y, x, true);
    }
    let x = g.global_avg_pool("avgpool", x);
    g.output(x);
    g
}

#[test]
fn the_plan_reuses_buffers_and_never_shares_one_between_live_values() {
    let ctx = ctx();
    let graph = residual_graph(4);
    let mut s = Session::prepare(&ctx, graph.clone(), TensorFormat::F16, &[2, 6, 6, 4]);
    if let Err(SessionError::Op { source, .. }) = &s {
        eprintln!("F16 left out: {source}");
        s = Session::prepare(&ctx, graph.clone(), TensorFormat::F32, &[2, 6, 6, 4]);
    }
    let mut s = s.unwrap();
    for shape in [[2, 6, 6, 4], [1, 12, 12, 4]] {
        s.resize(&shape).unwrap();
        let plan = s.plan().unwrap();
        assert_never_shared_while_alive(&graph, plan);
        // The chain needs the block's input, its first conv's output and its second's.
        assert_eq!(plan.buffers.len(), 3, "{plan}");
        assert!(plan.peak_bytes() < plan.unshared_bytes() / 3, "{plan}");
        let printed = plan.to_string();
        assert!(printed.contains("block3.add: "), "{printed}");
        assert!(printed.contains("(in place of block3.conv2)"), "{printed}");
        assert!(printed.contains(&format!("peak: {} bytes in 3 buffers", plan.peak_bytes())));
        for (i, &n) in plan.buffers.iter().enumerate() {
            let line = format!("buffer {i}: {} bytes", n * plan.element_bytes);
            assert!(printed.contains(&line), "{line} in\n{printed}");
        }
        let memory = s.memory().unwrap();
        assert_eq!(memory.planned_bytes, plan.peak_bytes());
        assert_eq!(memory.values, graph.value_count());
        s.run(&random(&shape, 3)).unwrap();
    }
    assert_clean(&ctx);
}

#[test]
fn bad_inputs_are_errors_naming_the_input_and_the_session_runs_on() {
    let ctx = ctx();
    let w = CnnWeights::random(2);
    let mut s = Session::new(&ctx, cnn(&w), TensorFormat::F32).unwrap();
    let want = check_cnn(&mut s, &w, [2, 8, 8, 4], 20);
    let x = random(&[2, 8, 8, 4], 20);
    for bad in [
        &[2, 8, 8, 3][..],
        &[2, 8, 8],
        &[0, 8, 8, 4],
        &[2, 8, 8, 4, 1],
    ] {
        match s.resize(bad) {
            Err(e @ SessionError::InputShape { .. }) => {
                let message = e.to_string();
                assert!(message.starts_with("input `images`"), "{message}");
            }
            other => panic!("{bad:?}: {other:?}"),
        }
        assert_eq!(s.input_shape(), Some(&[2, 8, 8, 4][..]));
        assert_eq!(s.run(&x).unwrap().values, want);
    }
    match s.run(&x[..x.len() - 1]) {
        Err(e @ SessionError::InputShape { .. }) => println!("{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.run(&x).unwrap().values, want);
    // Images smaller than the pooling window: the pool's error, at resize.
    match s.resize(&[1, 1, 1, 4]) {
        Err(SessionError::Shape { node, why }) => {
            assert_eq!(node, "pool", "{why}");
            assert!(why.contains("2x2 window"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.run(&x).unwrap().values, want);
    assert_clean(&ctx);
}

#[test]
fn a_variable_dim_given_two_sizes_is_an_error() {
    let ctx = ctx();
    let mut s = Session::new(&ctx, residual_graph(1), TensorFormat::F32).unwrap();
    match s.resize(&[1, 6, 8, 4]) {
        Err(SessionError::InputShape { input, why }) => {
            assert_eq!(input, "images");
            assert!(why.contains("`size`"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    s.resize(&[1, 8, 8, 4]).unwrap();
    assert_eq!(s.run(&random(&[1, 8, 8, 4], 1)).unwrap().shape, [1, 8]);
    assert_clean(&ctx);
}

#[test]
fn mismatched_node_shapes_are_errors_naming_the_node() {
    let ctx = ctx();
    let w = CnnWeights::random(3);
    // The last layer's weight of another width than the features it reads.
    let wide = cnn_with_fc(&w, &[4, 12], random(&[4, 12], 9));
    let mut s = Session::new(&ctx, wide, TensorFormat::F32).unwrap();
    match s.resize(&[1, 8, 8, 4]) {
        Err(e @ SessionError::Shape { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with("node `fc`"), "{message}");
            assert!(
                message.contains("8 features") && message.contains("[4, 12]"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.run(&[0.0]), Err(SessionError::NotPrepared)));

    // Shapes the operation layer refuses (3 channels; convolutions take multiples of 4): its
    // error, named by the node.
    let mut g = Graph::new();
    let x = g.input(
        "rgb",
        &[
            Dim::Var("batch"),
            Dim::Fixed(4),
            Dim::Fixed(4),
            Dim::Fixed(3),
        ],
    );
    let conv = Conv {
        weight: g.constant("odd.weight", &[1, 1, 3, 4], random(&[1, 1, 3, 4], 1)),
        bias: None,
        stride: 1,
        pad: 0,
        activation: Activation::None,
    };
    let y = g.conv2d("odd", x, conv);
    g.output(y);
    let mut s = Session::new(&ctx, g, TensorFormat::F32).unwrap();
    match s.resize(&[1, 4, 4, 3]) {
        Err(e @ SessionError::Op { .. }) => {
            assert!(e.to_string().starts_with("node `odd`: conv2d"), "{e}");
        }
        other => panic!("{other:?}"),
    }

    // A sum given one operand.
    let mut g = Graph::new();
    let x = g.input("x", &[Dim::Var("n"), Dim::Fixed(8)]);
    let op = Op::Binary {
        op: vkprism_shaders::ops::BinaryOp::Add,
        then: None,
    };
    let y = g.node("lonely_sum", op, &[x]);
    g.output(y);
    let e = Session::prepare(&ctx, g, TensorFormat::F32, &[2, 8]).err();
    match e {
        Some(SessionError::Shape { node, why }) => {
            assert_eq!(
                (node.as_str(), why.as_str()),
                ("lonely_sum", "takes 2 inputs, given 1")
            )
        }
        other => panic!("{other:?}"),
    }

    // The session of a good graph is unaffected by any of these.
    let mut s = Session::new(&ctx, cnn(&w), TensorFormat::F32).unwrap();
    check_cnn(&mut s, &w, [1, 8, 8, 4], 30);
    assert_clean(&ctx);
}

#[test]
fn malformed_graphs_are_refused_at_creation() {
    let ctx = ctx();
    let w = CnnWeights::random(4);
    let mut no_output = Graph::new();
    let x = no_output.input("x", &[Dim::Var("n"), Dim::Fixed(8)]);
    no_output.unary("f", x, UnaryOp::Relu);
    let mut short = Graph::new();
    let x = short.input("x", &[Dim::Var("n"), Dim::Fixed(8)]);
    let fc = Linear {
        weight: short.constant("short.weight", &[4, 8], vec![1.0; 31]),
        bias: None,
        activation: Activation::None,
    };
    let y = short.linear("fc", x, fc);
    short.output(y);
    let mut twice = Graph::new();
    let x = twice.input("x", &[Dim::Var("n"), Dim::Fixed(8)]);
    let y = twice.unary("f", x, UnaryOp::Relu);
    let y = twice.unary("f", y, UnaryOp::Relu);
    twice.output(y);
    for (graph, words) in [
        (no_output, "no output"),
        (short, "`short.weight` of shape [4, 8] has 31 values"),
        (twice, "two nodes are named `f`"),
    ] {
        match Session::new(&ctx, graph, TensorFormat::F32) {
            Err(SessionError::Graph(why)) => assert!(why.contains(words), "{why}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("{words}: accepted"),
        }
    }
    let e = Session::new(&ctx, cnn(&w), TensorFormat::I8).err();
    assert!(
        matches!(e, Some(SessionError::Format(TensorFormat::I8))),
        "{e:?}"
    );
    assert_clean(&ctx);
}

#[test]
fn node_times_name_every_node() {
    let ctx = ctx();
    let w = CnnWeights::random(5);
    let mut s = Session::prepare(&ctx, cnn(&w), TensorFormat::F32, &[1, 8, 8, 4]).unwrap();
    s.set_timing(Timing::PerLayer);
    assert!(s.node_times().is_none(), "recorded without timestamps");
    let want = cnn_cpu(&w, &random(&[1, 8, 8, 4], 1), [1, 8, 8, 4]);
    let got = s.run(&random(&[1, 8, 8, 4], 1)).unwrap();
    assert!(relative_error(&got.values, &want) < 1e-5);
    let times = s.node_times().unwrap();
    let names: Vec<&str> = times.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["conv", "relu", "pool", "branch", "residual", "avgpool", "fc"]
    );
    let total: std::time::Duration = times.iter().map(|(_, t)| *t).sum();
    assert!(total <= s.gpu_time().unwrap());
    assert_clean(&ctx);
}

/// Two branches of one input, max and average pooling, summed.
fn branches() -> Graph {
    let mut g = Graph::new();
    let x = g.input(
        "x",
        &[
            Dim::Var("batch"),
            Dim::Fixed(4),
            Dim::Fixed(4),
            Dim::Fixed(4),
        ],
    );
    let a = g.max_pool("max", x, Pool2d::new(2, 2));
    let b = g.avg_pool("avg", x, Pool2d::new(2, 2));
    let y = g.add("sum", a, b, false);
    g.output(y);
    g
}

#[test]
fn barriers_go_only_where_a_node_reads_what_an_earlier_one_wrote() {
    let ctx = ctx();
    let mut s = Session::prepare(&ctx, branches(), TensorFormat::F32, &[2, 4, 4, 4]).unwrap();
    // The upload, max (barrier: reads the upload), avg (none: reads the upload too, writes a
    // buffer of its own), sum (barrier: reads both), the download (barrier).
    let want = Recorded {
        dispatches: 3,
        barriers: 3,
    };
    assert_eq!(s.recorded(), Some(want));
    let x = random(&[2, 4, 4, 4], 1);
    let got = s.run(&x).unwrap().values;
    let at = |n: usize, y: usize, xx: usize, c: usize| x[((n * 4 + y) * 4 + xx) * 4 + c];
    for (n, oy, ox, c) in (0..2)
        .flat_map(|n| (0..4).map(move |i| (n, i / 2, i % 2)))
        .flat_map(|(n, oy, ox)| (0..4).map(move |c| (n, oy, ox, c)))
    {
        let window =
            [(0, 0), (0, 1), (1, 0), (1, 1)].map(|(dy, dx)| at(n, 2 * oy + dy, 2 * ox + dx, c));
        let max = window.iter().fold(f32::MIN, |m, &v| m.max(v));
        let want = max + window.iter().sum::<f32>() / 4.0;
        let g = got[((n * 2 + oy) * 2 + ox) * 4 + c];
        assert!((g - want).abs() < 1e-5, "{n} {oy} {ox} {c}: {g} {want}");
    }
    assert_clean(&ctx);
}

/// A linear layer of 3 outputs (a row the GEMM can't store): up to 8 rows go through the GEMV,
/// which takes any width, against a CPU computation; at 10 rows the GEMM refuses it, an error
/// naming the node, and the session runs on at its last size.
#[test]
fn a_narrow_linear_layer_runs_for_few_rows() {
    let ctx = ctx();
    let mut g = Graph::new();
    let x = g.input("x", &[Dim::Var("batch"), Dim::Fixed(5)]);
    let w: Vec<f32> = (0..15).map(|i| (i as f32 - 7.0) / 8.0).collect();
    let b = vec![0.5, -0.25, 0.125];
    let weight = g.constant("w", &[3, 5], w.clone());
    let bias = Some(g.constant("b", &[3], b.clone()));
    let fc = g.linear(
        "fc",
        x,
        Linear {
            weight,
            bias,
            activation: Activation::Relu,
        },
    );
    g.output(fc);
    let mut s = Session::prepare(&ctx, g, TensorFormat::F32, &[2, 5]).unwrap();
    let input: Vec<f32> = (0..10).map(|i| (i as f32 - 4.5) / 3.0).collect();
    let got = s.run(&input).unwrap();
    for r in 0..2 {
        for n in 0..3 {
            let dot: f32 = (0..5).map(|k| w[n * 5 + k] * input[r * 5 + k]).sum();
            let want = (dot + b[n]).max(0.0);
            assert!((got.values[r * 3 + n] - want).abs() < 1e-5, "{got:?}");
        }
    }
    let e = s.resize(&[10, 5]).unwrap_err();
    assert!(e.to_string().contains("fc"), "{e}");
    assert_eq!(s.run(&input).unwrap(), got);
    assert_clean(&ctx);
}

/// A session given other operations (a tuner's, measuring each convolution's tiles on first
/// use) drops its recorded pass, records again at the next resize, and computes the same CNN.
#[test]
fn with_ops_records_again_through_a_tuner() {
    let ctx = ctx();
    let w = CnnWeights::random(70);
    let shape = [2, 6, 6, 4];
    let x = random(&shape, 71);
    let mut s = Session::prepare(&ctx, cnn(&w), TensorFormat::F32, &shape).unwrap();
    let plain = s.run(&x).unwrap();
    let tuner = vkprism_shaders::GemmTuner::new(&ctx, None::<&std::path::Path>);
    let mut s = s.with_ops(vkprism_shaders::Ops::with_tuner(&ctx, tuner));
    assert!(
        s.input_shape().is_none() && s.run(&x).is_err(),
        "the pass was dropped"
    );
    s.resize(&shape).unwrap();
    let tuned = s.run(&x).unwrap();
    let want = cnn_cpu(&w, &x, shape);
    assert!(relative_error(&tuned.values, &want) < 1e-4);
    assert!(relative_error(&tuned.values, &plain.values) < 1e-4);
    assert_clean(&ctx);
}
