//! `--cases attention_probe`: what a grouped-query decode step's attention costs against caches
//! of several lengths on this device (TinyLlama's heads: 32 query heads over 4 key/value heads
//! of 64, fp16, in the variants the operation layer runs unless `VKPRISM_BENCH_ATTN_ROWS` and
//! `VKPRISM_BENCH_ATTN_VARIANT` name others): [`attention_grouped`] with the keys in 1 to 16
//! shares (and the combine pass where there are several), beside the row kernel [`attention4`]
//! at the operation layer's split (the combine pass, or the last share merging each row) and at
//! fewer, wider shares, each as 20 dependent calls in one list ([`time_calls`]). Printed, not
//! compared with PyTorch (the `ops` case does that for the operation layer's choice): it says
//! which split a cache length wants. Then a prompt's attention (TinyLlama's 512-token prompt,
//! and the `ops` case's 2048 tokens of 32 heads of 128, causal) on [`attention_cm`], as the
//! operation layer runs it (`Ops::attention`: [`attention_cm`] for a short prompt,
//! [`attention_cm2`] for a long one), and on [`attention_cm2`] in the tiles
//! `VKPRISM_BENCH_ATTN_CM2` lists (`rows,keys,threads;...`), or a default set; each alone, and
//! after a GEMM that writes its queries (as a network runs it: the kernel's code and the
//! driver's staging not left warm by the call before) or the steps `VKPRISM_BENCH_ATTN_BEFORE`
//! lists ([`Before`]), their own time taken out — or, with `VKPRISM_BENCH_ATTN_TIMED`, every
//! dispatch timed and the call's own dispatches read (each round's timeline printed).

use crate::harness::{
    env_rows, median, probe_record, sm_clock_mhz, time_calls, warm_up, Config, Record, Timing, REPS,
};
use crate::random;
use vkprism::{CommandList, Context, LoadOptions, Pipeline, Tensor, TensorFormat};
use vkprism_shaders::{
    attention, attention4, attention_cm, attention_cm2, attention_combine, attention_decode,
    attention_grouped, options_for, Activation, Attention, AttentionShape, Gemm, Ops, UnaryOp,
};

vkprism::compute_shader! {
    /// `N` dependent multiply-adds unrolled over nothing read: a kernel whose cost is its code
    /// (the `code` step).
    pub mod code_span,
    path: "../kernels/code_span.comp",
}

const CASE: &str = "attention_probe";

/// The row kernels' load options: the variant `VKPRISM_BENCH_ATTN_ROWS` names, else the
/// operation layer's choice for F16 tensors on this device (what a decoder runs).
fn rows_load() -> Result<LoadOptions, Box<dyn std::error::Error>> {
    Ok(match std::env::var("VKPRISM_BENCH_ATTN_ROWS") {
        Ok(name) => LoadOptions::variant_named(&name)?,
        Err(_) => LoadOptions::options(options_for(TensorFormat::F16)),
    })
}

pub fn run(ctx: &Context, cfg: Config) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    // `VKPRISM_BENCH_ATTN_PREFILL_ONLY`: the prompts' series alone.
    let caches: &[usize] = if std::env::var_os("VKPRISM_BENCH_ATTN_PREFILL_ONLY").is_some() {
        &[]
    } else if cfg.quick {
        &[64]
    } else {
        &[512, 768, 2048, 4096]
    };
    let f = TensorFormat::F16;
    let load = rows_load()?;
    let grouped = ctx.load_with::<attention_grouped::Kernel>(&load)?;
    println!(
        "# attention_probe: row kernels in {}",
        grouped.variant().key
    );
    let rows = ctx.load_with::<attention4::Kernel>(&load)?;
    let combine = ctx.load_with::<attention_combine::Kernel>(&load)?;
    let combine = combine.pipeline(&Default::default(), Some([64, 1, 1]))?;
    let mut out = Vec::new();
    for &cache in caches {
        let s = AttentionShape {
            batch: 1,
            sq: 1,
            skv: cache,
            hq: 32,
            hkv: 4,
            d: 64,
        };
        let n = cache * s.hkv * s.d;
        let q = Tensor::from_f32(ctx, &[1, s.hq, s.d], f, &random(s.hq * s.d, 31))?;
        let k = Tensor::from_f32(ctx, &[cache, s.hkv, s.d], f, &random(n, 32))?;
        let v = Tensor::from_f32(ctx, &[cache, s.hkv, s.d], f, &random(n, 33))?;
        let o = Tensor::new(ctx, &[1, s.hq, s.d], f)?;
        let pos = Tensor::from_i32(ctx, &[1], &[0])?;
        let scale = 1.0 / (s.d as f32).sqrt();
        let combined = |l: &mut CommandList, part: &Tensor, splits: usize| {
            if splits > 1 {
                let b = attention_combine::BufferBindings {
                    part_blob: part,
                    o_blob: &o,
                };
                l.dispatch(&combine, &b, &s.combine_push(splits), s.combine_grid())?;
            }
            Ok::<_, Box<dyn std::error::Error>>(())
        };
        for splits in [1usize, 2, 4, 8, 16] {
            let part = Tensor::new(ctx, &s.part_shape(splits), TensorFormat::F32)?;
            let spec = attention_grouped::SpecConstants {
                causal: 1,
                split: (splits > 1) as i32,
                position_in_buffer: 0,
                D: s.d as i32,
            };
            let pipe = grouped.pipeline(&spec, Some([256, 1, 1]))?;
            if cache == caches[0] && splits == 1 {
                crate::print_statistics("attention_grouped", &pipe);
            }
            let b = attention_grouped::BufferBindings {
                q_blob: &q,
                k_blob: &k,
                v_blob: &v,
                o_blob: &o,
                part_blob: &part,
                pos_blob: &pos,
            };
            let t = time_calls(ctx, cfg, |l| {
                l.dispatch(
                    &pipe,
                    &b,
                    &s.push(scale, s.causal_offset(), splits),
                    s.grouped_grid(splits),
                )?;
                combined(l, &part, splits)
            })?;
            out.push(probe_record(
                CASE,
                format!("kv{cache} grouped"),
                format!("{splits} shares"),
                t,
            ));
        }
        // The row kernel at the operation layer's split (64 invocations), merged by the combine
        // pass or by each row's last share, then at fewer, wider shares: a workgroup of 128 or
        // 256 per query head and share.
        let ops_splits = s.splits_for(2048);
        let counts = Tensor::from_i32(ctx, &[s.rows()], &vec![0; s.rows()])?;
        let candidates = [
            (64, ops_splits, false),
            (64, ops_splits, true),
            (128, (ops_splits / 2).max(1), true),
            (256, (ops_splits / 4).max(1), true),
            (256, 1, false),
        ];
        for (local, splits, last) in candidates {
            let part = Tensor::new(ctx, &s.part_shape(splits), TensorFormat::F32)?;
            let spec = attention::SpecConstants {
                causal: 1,
                split: (splits > 1) as i32,
                position_in_buffer: 0,
                combine_last: last as i32,
            };
            let pipe = rows.pipeline(&spec, Some([local, 1, 1]))?;
            let grid = s.grid(splits);
            let b = attention4::BufferBindings {
                q_blob: &q,
                k_blob: &k,
                v_blob: &v,
                o_blob: &o,
                part_blob: &part,
                pos_blob: &pos,
                count_blob: &counts,
            };
            let t = time_calls(ctx, cfg, |l| {
                l.dispatch(
                    &pipe,
                    &b,
                    &s.push(scale, s.causal_offset(), splits),
                    [local * splits as u32, grid[1], grid[2]],
                )?;
                if last {
                    return Ok(());
                }
                combined(l, &part, splits)
            })?;
            let merged = if last { ", the last merging" } else { "" };
            out.push(probe_record(
                CASE,
                format!("kv{cache} rows"),
                format!("{splits} shares of {local}{merged}"),
                t,
            ));
        }
        // attention_decode in workgroups of `local`, `kpi` keys an invocation, the keys in
        // `splits` shares (1: one workgroup per query head over all of them, no merge).
        let decode = ctx.load_with::<attention_decode::Kernel>(&load)?;
        let decode_series = |local: u32, kpi: i32, splits: usize| {
            let spec = attention_decode::SpecConstants {
                causal: 1,
                position_in_buffer: 0,
                D: s.d as i32,
                KPI: kpi,
                split: (splits > 1) as i32,
            };
            let pipe = decode.pipeline(&spec, Some([local, 1, 1]))?;
            if cache == caches[0] && splits == 1 {
                crate::print_statistics(&format!("attention_decode {local} x {kpi}"), &pipe);
            }
            // Read only with `split`.
            let part = Tensor::new(ctx, &s.part_shape(splits), TensorFormat::F32)?;
            let b = attention_decode::BufferBindings {
                q_blob: &q,
                k_blob: &k,
                v_blob: &v,
                o_blob: &o,
                pos_blob: &pos,
                part_blob: &part,
                count_blob: &counts,
            };
            let push = s.push(scale, s.causal_offset(), splits);
            time_calls(ctx, cfg, |l| {
                l.dispatch(&pipe, &b, &push, s.decode_grid(local, splits))?;
                Ok(())
            })
        };
        for (local, kpi) in [(512u32, 4i32), (512, 2), (1024, 2), (1024, 4), (256, 4)] {
            out.push(probe_record(
                CASE,
                format!("kv{cache} decode"),
                format!("{local} invocations, {kpi} keys each"),
                decode_series(local, kpi, 1)?,
            ));
        }
        // The keys split into shares of `chunks` chunks of 512 × 4, the row's last share merging.
        for chunks in [1usize, 2, 3, 4] {
            let splits = cache.div_ceil(chunks * s.decode_chunk(512, 4));
            if splits > 1 {
                out.push(probe_record(
                    CASE,
                    format!("kv{cache} decode split"),
                    format!("{splits} shares of {chunks} chunks, the last merging"),
                    decode_series(512, 4, splits)?,
                ));
            }
        }
    }
    prefill(ctx, cfg, &mut out)?;
    Ok(out)
}

/// [`attention_cm2`]'s tiles to time: `VKPRISM_BENCH_ATTN_CM2` (`rows,keys,threads;...`) or
/// a default set.
fn cm2_tiles() -> Vec<[u32; 3]> {
    env_rows("VKPRISM_BENCH_ATTN_CM2")
        .unwrap_or_else(|| vec![[128, 64, 256], [64, 64, 128], [128, 32, 256], [64, 32, 128]])
}

/// A prompt's attention: its tokens, keys, query heads, key/value heads and head dimension.
type Prompt = (usize, usize, usize, usize, usize);

/// `VKPRISM_BENCH_ATTN_PROMPTS` (`tokens,keys,hq,hkv,d;...`): the prompts' shapes instead of
/// the default two (the queries the last `tokens` of `keys` positions).
fn prefill_shapes() -> Option<Vec<Prompt>> {
    let rows = env_rows::<usize, 5>("VKPRISM_BENCH_ATTN_PROMPTS")?;
    let shapes = rows
        .into_iter()
        .filter(|&[tokens, keys, hq, hkv, _]| tokens <= keys && hkv > 0 && hq % hkv == 0)
        .map(|[tokens, keys, hq, hkv, d]| (tokens, keys, hq, hkv, d))
        .collect();
    Some(shapes)
}

/// What runs before each call in the probe's second series: `VKPRISM_BENCH_ATTN_BEFORE`, a
/// comma-separated list of steps run in this order (`stream`, `writes`, `glu`, `wide`, `down`,
/// `late`, `gemm`, `code`, `cm`, `warm`, `warmcm`, `cm2`), or the GEMM alone. Each step but the
/// warming ones reads or writes what the one before wrote, so the list orders them.
#[derive(Copy, Clone, PartialEq, Eq, Default)]
struct Before {
    /// `stream`: a ReLU over 96 MiB whose output's start is the queries (L2 left holding none
    /// of the kernel's code or data).
    stream: bool,
    /// `writes`: ReLUs writing q, k and v (as the rotation into the cache does).
    writes: bool,
    /// `glu`: TinyLlama's gate/up projection of a prompt (`Ops::gemm_glu`, [tokens, 2048] to
    /// [tokens, 5632]).
    glu: bool,
    /// `wide`: the gate/up projection as a plain GEMM (`Ops::gemm`, [tokens, 2048] to
    /// [tokens, 11264], nothing gated), reading the gate/up step's input.
    wide: bool,
    /// `down`: its down projection (`Ops::gemm`, [tokens, 5632] to [tokens, 2048], split along
    /// K), reading the gate/up projection's output where that runs.
    down: bool,
    /// `late`: after the MLP's steps, a ReLU over 96 MiB whose input starts with their output
    /// and whose output's start the next step reads (some 70 µs of memory-bound work between
    /// the MLP and the attention).
    late: bool,
    /// `gemm`: the projection that writes the queries ([tokens, 2048] · [hq · d, 2048]ᵀ).
    gemm: bool,
    /// `code`: [`code_span`] kernels of the sizes `VKPRISM_BENCH_ATTN_CODE` lists (default one
    /// of 8192 instructions), each on two workgroups an SM, writing (never, in fact) the
    /// attention's output, which orders them: every SM's instruction caches left holding that
    /// much other code, and no data.
    code: bool,
    /// `cm`: [`attention_cm`] over the same tensors into the same output (another large
    /// kernel's code between two calls, as in a network; the shared output orders them).
    cm: bool,
    /// `cm2`: [`attention_cm2`] (128 rows × 64 keys on 256), likewise.
    cm2: bool,
    /// `warm`: [`attention_cm2`] (128 rows × 64 keys on 256) over small tensors of their own
    /// (one step of keys, two workgroups an SM), nothing ordering it after the step before: the
    /// kernel's code run once on every SM while the step before drains.
    warm: bool,
    /// `warmcm`: the same with [`attention_cm`].
    warm_cm: bool,
}

impl Before {
    fn from_env() -> Before {
        let list = std::env::var("VKPRISM_BENCH_ATTN_BEFORE").unwrap_or_default();
        let mut b = Before::default();
        for step in list.split(',') {
            match step.trim() {
                "stream" => b.stream = true,
                "writes" => b.writes = true,
                "glu" => b.glu = true,
                "wide" => b.wide = true,
                "down" => b.down = true,
                "late" => b.late = true,
                "gemm" => b.gemm = true,
                "code" => b.code = true,
                "cm" => b.cm = true,
                "cm2" => b.cm2 = true,
                "warm" => b.warm = true,
                "warmcm" => b.warm_cm = true,
                _ => {}
            }
        }
        if b == Before::default() {
            b.gemm = true;
        }
        b
    }

    fn label(self) -> String {
        let steps = [
            (self.stream, "a 96 MiB stream"),
            (self.writes, "writes of q, k and v"),
            (self.glu, "the gate/up GEMM"),
            (self.wide, "the gate/up projection unfused"),
            (self.down, "the down GEMM"),
            (self.late, "a late 96 MiB stream"),
            (self.gemm, "a GEMM"),
            (self.code, "a kernel of unrolled code"),
            (self.cm, "attention_cm"),
            (self.warm, "attention_cm2 warming"),
            (self.warm_cm, "attention_cm warming"),
            (self.cm2, "attention_cm2"),
        ];
        let names: Vec<&str> = steps.iter().filter(|s| s.0).map(|s| s.1).collect();
        names.join(", ")
    }
}

type Recorder<'a> = dyn Fn(&mut CommandList) -> Result<(), Box<dyn std::error::Error>> + 'a;

/// Times `call` alone, then after `before` (less `before`'s own time `before_s`), and records
/// both under `shape` as `variant`.
fn time_alone_and_after(
    (ctx, cfg): (&Context, Config),
    (shape, variant): (&str, &str),
    call: &Recorder<'_>,
    (before, label, before_s): (&Recorder<'_>, &str, f64),
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = time_calls(ctx, cfg, call)?;
    out.push(probe_record(CASE, shape.into(), variant.into(), t));
    let t = if std::env::var_os("VKPRISM_BENCH_ATTN_TIMED").is_some() {
        time_call_dispatches(ctx, cfg, before, call)?
    } else {
        let mut t = time_calls(ctx, cfg, |l| {
            before(l)?;
            call(l)
        })?;
        t.median_s -= before_s;
        t
    };
    let variant = format!("{variant} after {label}");
    out.push(probe_record(CASE, shape.into(), variant, t));
    Ok(())
}

/// A step's input: the start of the step before's output as `shape`, or its own tensor.
fn step_input(
    last: Option<&Tensor>,
    own: &Tensor,
    shape: [usize; 2],
) -> Result<Tensor, vkprism::TensorError> {
    match last {
        Some(t) => t.view(0, &shape),
        None => Ok(own.clone()),
    }
}

/// The `code` step's workgroups of 256: two an SM of an H100 or H200.
const CODE_WORKGROUPS: u32 = 264;

/// The `code` step's pipelines, one for each size `VKPRISM_BENCH_ATTN_CODE` lists
/// (`n,n,...` multiply-adds; default one of 8192), run in turn: NVIDIA's driver unrolls 8192
/// into a 99 KB binary but not every count (8000 stays a loop), so more code takes more
/// kernels. Their statistics are printed (the
/// binary size is what the step is for).
fn code_span_pipelines(
    ctx: &Context,
) -> Result<Vec<Pipeline<code_span::Kernel>>, Box<dyn std::error::Error>> {
    let sizes = std::env::var("VKPRISM_BENCH_ATTN_CODE").unwrap_or("8192".into());
    let kernel = ctx.load_with::<code_span::Kernel>(&LoadOptions::variant_named("fp16s")?)?;
    let mut pipes = Vec::new();
    let sizes = sizes.split(',').filter_map(|n| n.trim().parse().ok());
    for (seed, n) in sizes.enumerate() {
        // Each kernel's constants start past the one before's: no two hold the same code.
        let spec = code_span::SpecConstants {
            N: n,
            SEED: (seed as i32) * (1 << 14),
        };
        let pipe = kernel.pipeline(&spec, Some([256, 1, 1]))?;
        crate::print_statistics(&format!("code_span of {n}"), &pipe);
        pipes.push(pipe);
    }
    Ok(pipes)
}

/// A stream step's 96 MiB fp16 input (random, of `seed`) and output, where `on`.
fn stream_pair(
    ctx: &Context,
    on: bool,
    seed: u64,
) -> Result<Option<(Tensor, Tensor)>, Box<dyn std::error::Error>> {
    if !on {
        return Ok(None);
    }
    let (n, f) = (48 << 20, TensorFormat::F16);
    Ok(Some((
        Tensor::from_f32(ctx, &[n], f, &random(n, seed))?,
        Tensor::new(ctx, &[n], f)?,
    )))
}

/// `call`'s own GPU time after `before` (`VKPRISM_BENCH_ATTN_TIMED`): every dispatch timed
/// (each with its barrier), the call's dispatches summed, the median over the calls of
/// [`REPS`] rounds in one list and of its replays after the warm-up — where subtracting
/// `before`'s time alone would also take in how the two change each other's time.
fn time_call_dispatches(
    ctx: &Context,
    cfg: Config,
    before: &Recorder<'_>,
    call: &Recorder<'_>,
) -> Result<Timing, Box<dyn std::error::Error>> {
    let mut list = CommandList::with_timestamps(ctx, 4096)?;
    let mut spans = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        before(&mut list)?;
        let first = list.len();
        call(&mut list)?;
        spans.push(first..list.len());
    }
    warm_up(&mut list, cfg)?;
    let mut times = Vec::new();
    // Each dispatch of a round, over the rounds and runs: printed, the whole round's timeline.
    let per_round = list.len() / REPS;
    let mut each_dispatch = vec![Vec::new(); per_round];
    for _ in 0..cfg.min_runs.max(5) {
        list.submit_and_wait()?;
        let each = list.timings()?;
        for span in &spans {
            times.push(each[span.clone()].iter().map(|d| d.as_secs_f64()).sum());
        }
        for (i, t) in each.iter().enumerate() {
            each_dispatch[i % per_round].push(t.as_secs_f64());
        }
    }
    let names = list.dispatch_names();
    let line: Vec<String> = each_dispatch
        .into_iter()
        .enumerate()
        .map(|(i, t)| format!("{} {:.1}", names[i], median(t) * 1e6))
        .collect();
    println!("# each dispatch of a round (µs): {}", line.join(", "));
    Ok(Timing {
        median_s: median(times),
        sm_clock_mhz: sm_clock_mhz(),
    })
}

/// A prompt's causal attention on [`attention_cm`] and on [`attention_cm2`] in each of
/// [`cm2_tiles`], printed in µs a call, alone and after [`Before::from_env`]'s work.
fn prefill(
    ctx: &Context,
    cfg: Config,
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let f = TensorFormat::F16;
    let n = if cfg.quick { 64 } else { 512 };
    let shapes = prefill_shapes().unwrap_or(vec![(n, n, 32, 4, 64), (4 * n, 4 * n, 32, 32, 128)]);
    // The matrix kernels' variant: `VKPRISM_BENCH_ATTN_VARIANT`, else the operation layer's.
    let load = match std::env::var("VKPRISM_BENCH_ATTN_VARIANT") {
        Ok(name) => LoadOptions::variant_named(&name)?,
        Err(_) => LoadOptions::options(options_for(f).with_cooperative_matrix(true)),
    };
    let cm = ctx.load_with::<attention_cm::Kernel>(&load);
    let cm2 = ctx.load_with::<attention_cm2::Kernel>(&load);
    if let Ok(k) = &cm {
        println!("# attention_probe: matrix kernels in {}", k.variant().key);
    }
    let ops = Ops::new(ctx);
    let before = Before::from_env();
    for (tokens, keys, hq, hkv, d) in shapes {
        let s = AttentionShape {
            batch: 1,
            sq: tokens,
            skv: keys,
            hq,
            hkv,
            d,
        };
        let qo = |seed| Tensor::from_f32(ctx, &[tokens, hq, d], f, &random(tokens * hq * d, seed));
        let kv = |seed| Tensor::from_f32(ctx, &[keys, hkv, d], f, &random(keys * hkv * d, seed));
        // The streamed tensors: the queries are the start of the output.
        let streamed = stream_pair(ctx, before.stream, 47)?;
        let q = match &streamed {
            Some((_, y)) => y.view(0, &[tokens, hq, d])?,
            None => qo(41)?,
        };
        let (k, v, o) = (kv(42)?, kv(43)?, qo(44)?);
        let scale = 1.0 / (d as f32).sqrt();
        let shape = if keys == tokens {
            format!("prefill {tokens} h{hq}/{hkv} d{d} causal")
        } else {
            format!("prefill {tokens} of {keys} h{hq}/{hkv} d{d} causal")
        };
        // The queries are the last `tokens` of the `keys` positions.
        let offset = s.causal_offset();
        let sources = match before.writes {
            true => vec![qo(48)?, kv(49)?, kv(50)?],
            _ => Vec::new(),
        };
        // The MLP's tensors: its input, weights and output, as TinyLlama's.
        let mlp = |cols: usize, seed| {
            Tensor::from_f32(ctx, &[tokens, cols], f, &random(tokens * cols, seed))
        };
        let weights = |rows: usize, cols: usize, seed| {
            Tensor::from_f32(ctx, &[rows, cols], f, &random(rows * cols, seed))
        };
        let glu = match before.glu {
            true => Some((mlp(2048, 52)?, weights(11264, 2048, 53)?, mlp(5632, 54)?)),
            false => None,
        };
        let wide = match before.wide {
            true => Some((mlp(2048, 63)?, weights(11264, 2048, 64)?, mlp(11264, 65)?)),
            false => None,
        };
        let late = stream_pair(ctx, before.late, 62)?;
        // The down projection writes the start of the late stream's input where that runs.
        let down_out = match &late {
            Some((x, _)) => x.view(0, &[tokens, 2048])?,
            None => mlp(2048, 57)?,
        };
        let down = match before.down {
            true => Some((mlp(5632, 55)?, weights(2048, 5632, 56)?, down_out)),
            false => None,
        };
        let projection = match before.gemm {
            true => Some((
                mlp(2048, 45)?,
                weights(hq * d, 2048, 46)?,
                q.view(0, &[tokens, hq * d])?,
            )),
            _ => None,
        };
        let threads = if d <= 128 { 256 } else { 128 };
        let subgroup = ctx.features().limits.subgroup_size;
        let cm_pipe = match &cm {
            Ok(cm) => {
                let spec = attention_cm::SpecConstants {
                    causal: 1,
                    D: d as i32,
                    subgroup_size: subgroup as i32,
                };
                let pipe = cm.pipeline(&spec, Some([threads, 1, 1]))?;
                crate::print_statistics(&format!("attention_cm x{d} on {threads}"), &pipe);
                Some(pipe)
            }
            Err(_) => None,
        };
        let cm_rows = 16 * (threads / subgroup) as usize;
        let cm2_before = match (&cm2, before.cm2 || before.warm) {
            (Ok(cm2), true) => {
                let spec = attention_cm2::SpecConstants {
                    causal: 1,
                    D: d as i32,
                    BR: 128,
                    BC: 64,
                };
                Some(cm2.pipeline(&spec, Some([256, 1, 1]))?)
            }
            _ => None,
        };
        // The warming calls' problem: one step of keys, 264 heads of one block each.
        let warm_shape = AttentionShape {
            batch: 1,
            sq: 128,
            skv: 64,
            hq: 264,
            hkv: 264,
            d,
        };
        let warm_tensors = match before.warm || before.warm_cm {
            true => {
                let t = |rows: usize, seed| {
                    Tensor::from_f32(ctx, &[rows, 264, d], f, &random(rows * 264 * d, seed))
                };
                Some([t(128, 58)?, t(64, 59)?, t(64, 60)?, t(128, 61)?])
            }
            false => None,
        };
        let code = match before.code {
            true => code_span_pipelines(ctx)?,
            false => Vec::new(),
        };
        let record_before = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
            if let Some((sx, sy)) = &streamed {
                ops.unary(l, sx, sy, UnaryOp::Relu)?;
            }
            for (src, dst) in sources.iter().zip([&q, &k, &v]) {
                ops.unary(l, src, dst, UnaryOp::Relu)?;
            }
            let transposed = Gemm::new().with_transpose_b(true);
            // Each MLP step's output is the next step's input.
            let mut last: Option<&Tensor> = None;
            if let Some((x, w, y)) = &glu {
                ops.gemm_glu(l, x, w, y, Activation::Silu)?;
                last = Some(y);
            }
            if let Some((x, w, y)) = &wide {
                ops.gemm(l, x, w, None, y, &transposed)?;
                last = Some(y);
            }
            if let Some((x, w, y)) = &down {
                let input = step_input(last, x, [tokens, 5632])?;
                ops.gemm(l, &input, w, None, y, &transposed)?;
                last = Some(y);
            }
            if let Some((x, y)) = &late {
                ops.unary(l, x, y, UnaryOp::Relu)?;
                last = Some(y);
            }
            if let Some((x, w, q_rows)) = &projection {
                let input = step_input(last, x, [tokens, 2048])?;
                ops.gemm(l, &input, w, None, q_rows, &transposed)?;
            }
            for pipe in &code {
                let b = code_span::BufferBindings { x_blob: &o };
                let push = code_span::PushConstants { a: 0.5 };
                l.dispatch(pipe, &b, &push, [CODE_WORKGROUPS * 256, 1, 1])?;
            }
            let own = [&q, &k, &v, &o];
            if let (true, Some(pipe)) = (before.cm, &cm_pipe) {
                s.record_cm(l, pipe, own, (scale, offset), (threads, cm_rows))?;
            }
            if let (true, Some(pipe), Some(w)) = (before.warm, &cm2_before, &warm_tensors) {
                warm_shape.record_cm2(l, pipe, w.each_ref(), (scale, 0), (256, 128))?;
            }
            if let (true, Some(pipe), Some(w)) = (before.warm_cm, &cm_pipe, &warm_tensors) {
                let tiles = (threads, cm_rows);
                warm_shape.record_cm(l, pipe, w.each_ref(), (scale, 0), tiles)?;
            }
            if let (true, Some(pipe)) = (before.cm2, &cm2_before) {
                s.record_cm2(l, pipe, own, (scale, offset), (256, 128))?;
            }
            Ok(())
        };
        let before_s = time_calls(ctx, cfg, record_before)?.median_s;
        let label = before.label();
        println!("# {label}: {:.3} us a call", before_s * 1e6);
        let before_work = (&record_before as &Recorder<'_>, label.as_str(), before_s);
        let own = [&q, &k, &v, &o];
        if let Some(pipe) = &cm_pipe {
            let call = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
                let tiles = (threads, cm_rows);
                Ok(s.record_cm(l, pipe, own, (scale, offset), tiles)?)
            };
            let names = (shape.as_str(), "attention_cm");
            time_alone_and_after((ctx, cfg), names, &call, before_work, out)?;
        }
        let causal = Attention::new().with_causal(true);
        let call = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
            Ok(ops.attention(l, &q, &k, &v, &o, &causal)?)
        };
        let names = (shape.as_str(), "Ops::attention");
        time_alone_and_after((ctx, cfg), names, &call, before_work, out)?;
        let Ok(cm2) = &cm2 else { continue };
        for [rows, keys, threads] in cm2_tiles() {
            let spec = attention_cm2::SpecConstants {
                causal: 1,
                D: d as i32,
                BR: rows as i32,
                BC: keys as i32,
            };
            let Ok(pipe) = cm2.pipeline(&spec, Some([threads, 1, 1])) else {
                println!("attention_cm2 {rows}x{keys} on {threads}: no pipeline");
                continue;
            };
            crate::print_statistics(
                &format!("attention_cm2 {rows}x{keys}x{d} on {threads}"),
                &pipe,
            );
            let call = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
                let tiles = (threads, rows as usize);
                Ok(s.record_cm2(l, &pipe, own, (scale, offset), tiles)?)
            };
            let variant = format!("attention_cm2 {rows} rows x {keys} keys on {threads}");
            let names = (shape.as_str(), variant.as_str());
            time_alone_and_after((ctx, cfg), names, &call, before_work, out)?;
        }
    }
    Ok(())
}
