//! A time-boxed stress run (issue 9) with the validation layer on: the library's kernels in every
//! variant the device runs, dispatched over and over on fresh tensors against the CPU
//! references, command lists replayed, and contexts made and dropped, while the resident memory
//! is watched. It prints one line of figures and fails on any wrong element, any validation
//! message, or resident memory that keeps growing.
//!
//! `VKPRISM_STRESS_SECS` (default 20, what CI runs) sets the time box; the long run is e.g.
//! `VKPRISM_STRESS_SECS=70 cargo test --release -p vkprism-shaders --test stress -- --nocapture`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use vkprism::{CommandList, Context, LoadOptions, Tensor, TensorFormat, VariantKey};
use vkprism_shaders::{activation, binary_op, gemm, reference, GemmConfig};
use vkprism_testkit::{ctx, device_lacks_matrices_for, quantize, random_in as random, tolerance};

/// How long each context lives before the next one replaces it (the work goes on meanwhile).
const CONTEXT_LIFETIME: Duration = Duration::from_secs(5);
/// Elements of the elementwise tensors (vec4s, with a partial last workgroup).
const N: usize = 4 * 333;
/// Resident memory, sampled at the same point of each context's life, may grow this much past
/// the first context's sample (which comes after every cache warmed).
const RSS_BOUND: u64 = 64 << 20;

/// The run's figures.
#[derive(Default)]
struct Figures {
    dispatches: u64,
    variants: BTreeSet<String>,
    tensors: u64,
    replays: u64,
    contexts: u64,
    checked: u64,
    wrong: u64,
    messages: Vec<String>,
    /// Resident memory at the end of each context's life, and after it was dropped.
    rss_alive: Vec<u64>,
    rss_dropped: Vec<u64>,
    /// The first wrong results, described.
    failures: Vec<String>,
}

impl Figures {
    /// Counts the elements of `got` outside the variant's tolerance of `want` (relative to
    /// `scale`, at least 1); NaN, the poison, is wrong.
    fn check(&mut self, what: &str, key: &VariantKey, got: &[f32], want: &[f32], scale: &[f32]) {
        let tol = tolerance(key);
        let wrong = (0..want.len())
            .filter(|&i| {
                let g = got.get(i).copied().unwrap_or(f32::NAN);
                !(g.is_finite() && (g - want[i]).abs() / scale[i].max(1.0) <= tol)
            })
            .count() as u64;
        self.checked += want.len() as u64;
        if wrong > 0 && self.failures.len() < 10 {
            self.failures
                .push(format!("{what}: {wrong} of {} elements wrong", want.len()));
        }
        self.wrong += wrong;
    }

    fn tensor(&mut self, ctx: &Context, shape: &[usize], f: TensorFormat, data: &[f32]) -> Tensor {
        self.tensors += 1;
        Tensor::from_f32(ctx, shape, f, data).unwrap()
    }

    fn poisoned(&mut self, ctx: &Context, shape: &[usize], f: TensorFormat) -> Tensor {
        let n = shape.iter().product();
        self.tensor(ctx, shape, f, &vec![f32::NAN; n])
    }
}

/// `(first, lowest, highest)` of samples, and how far the highest is past the first.
fn growth(samples: &[u64]) -> (u64, u64, u64, u64) {
    let first = samples.first().copied().unwrap_or(0);
    let lo = samples.iter().copied().min().unwrap_or(0);
    let hi = samples.iter().copied().max().unwrap_or(0);
    (first, lo, hi, hi.saturating_sub(first))
}

/// Resident set size in bytes, from /proc (Linux, where CI and the GPU machine run).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn budget() -> Duration {
    match std::env::var("VKPRISM_STRESS_SECS") {
        Err(_) => Duration::from_secs(20),
        Ok(v) => Duration::from_secs(v.trim().parse().unwrap_or_else(|_| {
            panic!("VKPRISM_STRESS_SECS={v:?}: expected a whole number of seconds")
        })),
    }
}

/// The kernels of one context, every variant the device runs.
struct Loaded {
    activation: Vec<(
        String,
        std::sync::Arc<vkprism::LoadedKernel<activation::Kernel>>,
    )>,
    binary_op: Vec<(
        String,
        std::sync::Arc<vkprism::LoadedKernel<binary_op::Kernel>>,
    )>,
    gemm: Vec<(String, std::sync::Arc<vkprism::LoadedKernel<gemm::Kernel>>)>,
}

/// Loads every variant of `K`, leaving out only cooperative-matrix variants on a device without
/// the matrices they multiply.
fn load_all<K: vkprism::Kernel>(
    ctx: &Context,
    names: &[&str],
) -> Vec<(String, std::sync::Arc<vkprism::LoadedKernel<K>>)> {
    names
        .iter()
        .filter(|n| !device_lacks_matrices_for(ctx, n))
        .map(|n| {
            let k = ctx
                .load_with::<K>(&LoadOptions::variant_named(n).unwrap())
                .unwrap_or_else(|e| panic!("{n}: {e}"));
            (n.to_string(), k)
        })
        .collect()
}

impl Loaded {
    fn new(ctx: &Context) -> Loaded {
        Loaded {
            activation: load_all(ctx, activation::VARIANT_NAMES),
            binary_op: load_all(ctx, binary_op::VARIANT_NAMES),
            gemm: load_all(ctx, gemm::VARIANT_NAMES),
        }
    }
}

/// One activation dispatch per variant (the op turns with `round`), on fresh tensors.
fn activations(ctx: &Context, k: &Loaded, round: u64, f: &mut Figures) {
    let op = (round % 5) as i32;
    let x = random(N, round, 0.05, 5.0);
    for (name, kernel) in &k.activation {
        let key = kernel.variant().key;
        let fmt = kernel.format_of("x_blob").unwrap();
        let xt = f.tensor(ctx, &[N], fmt, &x);
        let yt = f.poisoned(ctx, &[N], fmt);
        let pipe = kernel
            .pipeline(&activation::SpecConstants { op, n: 0 }, None)
            .unwrap();
        let push = activation::PushConstants {
            n: (N / 4) as i32,
            alpha: 0.1,
        };
        let bindings = activation::BufferBindings {
            x_blob: &xt,
            y_blob: &yt,
        };
        ctx.run(|l| l.dispatch(&pipe, &bindings, &push, [(N / 4) as u32, 1, 1]))
            .unwrap();
        f.dispatches += 1;
        f.variants.insert(format!("activation/{name}"));
        let want = quantize(&reference::activation(op, 0.1, &quantize(&x, fmt)), fmt);
        let got = yt.download_f32().unwrap();
        f.check(
            &format!("activation {name} op {op}"),
            &key,
            &got,
            &want,
            &[1.0; N],
        );
    }
}

/// Per binary-op variant, a list of two dependent dispatches (`t = a op b`, `o = t op b`)
/// recorded once and replayed `replays` times, checked after the last.
fn binary_ops(ctx: &Context, k: &Loaded, round: u64, replays: u64, f: &mut Figures) {
    // add, sub, mul, max, min: no division by values near zero.
    let op = [0, 1, 2, 4, 5][(round % 5) as usize];
    let a = random(N, round + 1, 0.1, 4.0);
    let b = random(N, round + 2, 0.5, 4.0);
    for (name, kernel) in &k.binary_op {
        let key = kernel.variant().key;
        let fmt = kernel.format_of("a_blob").unwrap();
        let at = f.tensor(ctx, &[N], fmt, &a);
        let bt = f.tensor(ctx, &[N], fmt, &b);
        let tt = f.poisoned(ctx, &[N], fmt);
        let ot = f.poisoned(ctx, &[N], fmt);
        let pipe = kernel
            .pipeline(&binary_op::SpecConstants { op }, Some([64, 1, 1]))
            .unwrap();
        let push = binary_op::PushConstants { n: (N / 4) as i32 };
        let grid = [(N / 4) as u32, 1, 1];
        let mut list = CommandList::new(ctx).unwrap();
        let first = binary_op::BufferBindings {
            a_blob: &at,
            b_blob: &bt,
            out_blob: &tt,
        };
        list.dispatch(&pipe, &first, &push, grid).unwrap();
        let second = binary_op::BufferBindings {
            a_blob: &tt,
            b_blob: &bt,
            out_blob: &ot,
        };
        list.dispatch(&pipe, &second, &push, grid).unwrap();
        for _ in 0..replays {
            list.submit_and_wait().unwrap();
        }
        f.dispatches += 2 * replays;
        f.replays += replays;
        f.variants.insert(format!("binary_op/{name}"));
        let q = |x: &[f32]| quantize(x, fmt);
        let t = q(&reference::binary_op(op, &q(&a), &q(&b)));
        let want = reference::binary_op(op, &t, &q(&b));
        let scale: Vec<f32> = want.iter().map(|v| v.abs()).collect();
        let got = ot.download_f32().unwrap();
        f.check(
            &format!("binary_op {name} op {op}"),
            &key,
            &got,
            &want,
            &scale,
        );
    }
}

/// One GEMM per variant (the shape turns with `round`: edges of every tile), bias and relu.
fn gemms(ctx: &Context, k: &Loaded, round: u64, f: &mut Figures) {
    // (A and B hold multiples of 8 elements, as cooperative-matrix variants need.)
    let (m, n, kk) = [(66, 36, 44), (40, 136, 48), (70, 72, 52)][(round % 3) as usize];
    let a = random(m * kk, round + 3, 0.1, 1.0);
    let b = random(kk * n, round + 4, 0.1, 1.0);
    let bias = random(n, round + 5, 0.1, 1.0);
    let o = reference::Gemm {
        alpha: 0.5,
        activation: 1,
        ..Default::default()
    };
    for (name, kernel) in &k.gemm {
        let key = kernel.variant().key;
        let fmt = kernel.format_of("a_blob").unwrap();
        let at = f.tensor(ctx, &[m, kk], fmt, &a);
        let bt = f.tensor(ctx, &[kk, n], fmt, &b);
        let biast = f.tensor(ctx, &[n], fmt, &bias);
        let ct = f.poisoned(ctx, &[m, n], fmt);
        let config = GemmConfig::for_gemm(&key, ctx.features().limits.subgroup_size, m, n, kk);
        let spec = config.spec(gemm::SpecConstants {
            bias_term: 1,
            activation: o.activation,
            ..Default::default()
        });
        let pipe = kernel.pipeline(&spec, Some(config.local_size())).unwrap();
        let bindings = gemm::BufferBindings {
            a_blob: &at,
            b_blob: &bt,
            bias_blob: &biast,
            c_blob: &ct,
        };
        let push = gemm::PushConstants {
            M: m as i32,
            N: n as i32,
            K: kk as i32,
            alpha: o.alpha,
            slope: o.slope,
            ..Default::default()
        };
        ctx.run(|l| l.dispatch(&pipe, &bindings, &push, config.grid(m, n)))
            .unwrap();
        f.dispatches += 1;
        f.variants.insert(format!("gemm/{name}"));
        let q = |x: &[f32]| quantize(x, fmt);
        let bias_q = q(&bias);
        let (want, scale) = reference::gemm_with(o, m, n, kk, &q(&a), &q(&b), Some(&bias_q[..]));
        let scale: Vec<f32> = scale
            .iter()
            .zip(&want)
            .map(|(s, w)| s.max(w.abs()))
            .collect();
        let got = ct.download_f32().unwrap();
        f.check(
            &format!("gemm {name} {m}x{n}x{kk}"),
            &key,
            &got,
            &q(&want),
            &scale,
        );
    }
}

/// A context made, used for one checked dispatch, and dropped: creation and destruction
/// churn beside the long-lived context.
fn short_lived_context(round: u64, f: &mut Figures) {
    let ctx = ctx();
    f.contexts += 1;
    let kernel = ctx.load::<activation::Kernel>().unwrap();
    let key = kernel.variant().key;
    let fmt = kernel.format_of("x_blob").unwrap();
    let x = random(N, round + 6, 0.05, 5.0);
    let xt = f.tensor(&ctx, &[N], fmt, &x);
    let yt = f.poisoned(&ctx, &[N], fmt);
    let pipe = kernel
        .pipeline(&activation::SpecConstants { op: 0, n: 0 }, None)
        .unwrap();
    let push = activation::PushConstants {
        n: (N / 4) as i32,
        alpha: 0.1,
    };
    let bindings = activation::BufferBindings {
        x_blob: &xt,
        y_blob: &yt,
    };
    ctx.run(|l| l.dispatch(&pipe, &bindings, &push, [(N / 4) as u32, 1, 1]))
        .unwrap();
    f.dispatches += 1;
    let want = quantize(&reference::activation(0, 0.1, &quantize(&x, fmt)), fmt);
    let got = yt.download_f32().unwrap();
    f.check("short-lived context", &key, &got, &want, &[1.0; N]);
    drop((xt, yt, pipe, kernel));
    f.messages.extend(ctx.take_validation_messages());
}

#[test]
fn stress() {
    let budget = budget();
    let start = Instant::now();
    let mut f = Figures::default();
    let mut round = 0u64;
    while start.elapsed() < budget || round == 0 {
        let ctx = ctx();
        f.contexts += 1;
        let loaded = Loaded::new(&ctx);
        let born = Instant::now();
        while born.elapsed() < CONTEXT_LIFETIME && (start.elapsed() < budget || round == 0) {
            activations(&ctx, &loaded, round, &mut f);
            binary_ops(&ctx, &loaded, round, 10, &mut f);
            gemms(&ctx, &loaded, round, &mut f);
            short_lived_context(round, &mut f);
            f.messages.extend(ctx.take_validation_messages());
            round += 1;
        }
        f.rss_alive.push(rss_bytes());
        drop(loaded);
        f.messages.extend(ctx.take_validation_messages());
        drop(ctx);
        f.rss_dropped.push(rss_bytes());
    }
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let alive = growth(&f.rss_alive);
    let dropped = growth(&f.rss_dropped);
    eprintln!(
        "stress: {:.1} s, {} rounds, {} dispatches over {} variants, {} tensors created and freed, {} replays, {} contexts, RSS {:.0}-{:.0} MiB with a context, {:.0}-{:.0} MiB between contexts, {} of {} elements wrong, {} validation messages",
        start.elapsed().as_secs_f64(),
        round,
        f.dispatches,
        f.variants.len(),
        f.tensors,
        f.replays,
        f.contexts,
        mib(alive.1),
        mib(alive.2),
        mib(dropped.1),
        mib(dropped.2),
        f.wrong,
        f.checked,
        f.messages.len()
    );
    assert!(
        f.failures.is_empty(),
        "wrong results:\n{}",
        f.failures.join("\n")
    );
    assert!(
        f.messages.is_empty(),
        "validation layer messages:\n{}",
        f.messages.join("\n")
    );
    for (when, (first, _, hi, grown)) in [("with a context", alive), ("between contexts", dropped)]
    {
        assert!(
            grown < RSS_BOUND,
            "resident memory {when} grew from {:.0} MiB to {:.0} MiB",
            mib(first),
            mib(hi)
        );
    }
}
