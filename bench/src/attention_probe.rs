//! `--cases attention_probe`: what a grouped-query decode step's attention costs against caches
//! of several lengths on this device (TinyLlama's heads: 32 query heads over 4 key/value heads
//! of 64, fp16, in the variants the operation layer runs unless `VKPRISM_BENCH_ATTN_ROWS` and
//! `VKPRISM_BENCH_ATTN_VARIANT` name others; `VKPRISM_BENCH_ATTN_HEADS=hq,hkv,d` other heads,
//! `VKPRISM_BENCH_ATTN_CACHES=n;...` other cache lengths): [`attention_grouped`] with the keys
//! in 1 to 16 shares (and the combine pass where there are several), beside the row kernel
//! [`attention4`] at the operation layer's split (the combine pass, or the last share merging
//! each row) and at fewer, wider shares, each as 20 dependent calls in one list
//! ([`time_calls`]). Printed, not
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
use std::sync::Arc;
use vkprism::{CommandList, Context, LoadOptions, LoadedKernel, Pipeline, Tensor, TensorFormat};
use vkprism_shaders::{
    attention, attention4, attention_cm, attention_cm2, attention_combine, attention_decode,
    attention_grouped, options_for, Activation, Attention, AttentionShape, CmSplit, Gemm, Ops,
    UnaryOp,
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
    let listed = env_rows::<usize, 1>("VKPRISM_BENCH_ATTN_CACHES").map(|r| r.concat());
    let caches = listed.as_deref().unwrap_or(caches);
    let kernels = RowKernels::load(ctx)?;
    println!(
        "# attention_probe: row kernels in {}",
        kernels.grouped.variant().key
    );
    let mut out = Vec::new();
    for &cache in caches {
        let step = DecodeStep::new(ctx, cache)?;
        let series = Series {
            ctx,
            cfg,
            kernels: &kernels,
            step: &step,
            first: cache == caches[0],
        };
        series.grouped(&mut out)?;
        series.rows(&mut out)?;
        series.decode(&mut out)?;
    }
    prefill(ctx, cfg, &mut out)?;
    Ok(out)
}

/// The kernels a decode step's attention can run on, in [`rows_load`]'s variant, and the
/// combine pass's pipeline.
struct RowKernels {
    grouped: Arc<LoadedKernel<attention_grouped::Kernel>>,
    rows: Arc<LoadedKernel<attention4::Kernel>>,
    decode: Arc<LoadedKernel<attention_decode::Kernel>>,
    combine: Pipeline<attention_combine::Kernel>,
}

impl RowKernels {
    fn load(ctx: &Context) -> Result<RowKernels, Box<dyn std::error::Error>> {
        let load = rows_load()?;
        let combine = ctx.load_with::<attention_combine::Kernel>(&load)?;
        Ok(RowKernels {
            grouped: ctx.load_with(&load)?,
            rows: ctx.load_with(&load)?,
            decode: ctx.load_with(&load)?,
            combine: combine.pipeline(&Default::default(), Some([64, 1, 1]))?,
        })
    }
}

/// One query row of TinyLlama's heads (32 query heads over 4 key/value heads of 64, fp16; or
/// `VKPRISM_BENCH_ATTN_HEADS=hq,hkv,d`) against a cache of `shape.skv` keys and values.
struct DecodeStep {
    shape: AttentionShape,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    /// The position the kernels read (0: the pushed offset alone).
    pos: Tensor,
    /// The shares' arrival counts, for the kernels whose last share merges a row.
    counts: Tensor,
    scale: f32,
}

impl DecodeStep {
    fn new(ctx: &Context, cache: usize) -> Result<DecodeStep, Box<dyn std::error::Error>> {
        let [hq, hkv, d] = env_rows::<usize, 3>("VKPRISM_BENCH_ATTN_HEADS")
            .and_then(|r| r.first().copied())
            .unwrap_or([32, 4, 64]);
        let shape = AttentionShape {
            batch: 1,
            sq: 1,
            skv: cache,
            hq,
            hkv,
            d,
        };
        let (f, s) = (TensorFormat::F16, shape);
        let n = cache * s.hkv * s.d;
        let heads = |seed| Tensor::from_f32(ctx, &[1, s.hq, s.d], f, &random(s.hq * s.d, seed));
        let cached = |seed| Tensor::from_f32(ctx, &[cache, s.hkv, s.d], f, &random(n, seed));
        Ok(DecodeStep {
            shape,
            q: heads(31)?,
            k: cached(32)?,
            v: cached(33)?,
            o: Tensor::new(ctx, &[1, s.hq, s.d], f)?,
            pos: Tensor::from_i32(ctx, &[1], &[0])?,
            counts: Tensor::from_i32(ctx, &[s.rows()], &vec![0; s.rows()])?,
            scale: 1.0 / (s.d as f32).sqrt(),
        })
    }

    /// The push constants for `splits` shares.
    fn push(&self, splits: usize) -> attention::PushConstants {
        let s = &self.shape;
        s.push(self.scale, s.causal_offset(), splits)
    }
}

/// One cache length's series: the kernels and the step they time.
#[derive(Copy, Clone)]
struct Series<'a> {
    ctx: &'a Context,
    cfg: Config,
    kernels: &'a RowKernels,
    step: &'a DecodeStep,
    /// The first cache length's (the pipelines' statistics printed).
    first: bool,
}

impl Series<'_> {
    /// The combine pass over `splits` shares' partial results in `part` (nothing for one).
    fn combine(
        &self,
        l: &mut CommandList,
        part: &Tensor,
        splits: usize,
    ) -> Result<(), Box<dyn std::error::Error>> {
        if splits > 1 {
            let b = attention_combine::BufferBindings {
                part_blob: part,
                o_blob: &self.step.o,
            };
            let s = &self.step.shape;
            l.dispatch(
                &self.kernels.combine,
                &b,
                &s.combine_push(splits),
                s.combine_grid(),
            )?;
        }
        Ok(())
    }

    /// [`attention_grouped`] with the keys in 1 to 16 shares, and the combine pass where there are
    /// several.
    fn grouped(&self, out: &mut Vec<Record>) -> Result<(), Box<dyn std::error::Error>> {
        let (ctx, cfg, kernels, step, first) =
            (self.ctx, self.cfg, self.kernels, self.step, self.first);
        let s = &step.shape;
        for splits in [1usize, 2, 4, 8, 16] {
            let part = Tensor::new(ctx, &s.part_shape(splits), TensorFormat::F32)?;
            let spec = attention_grouped::SpecConstants {
                causal: 1,
                split: (splits > 1) as i32,
                position_in_buffer: 0,
                D: s.d as i32,
            };
            let pipe = kernels.grouped.pipeline(&spec, Some([256, 1, 1]))?;
            if first && splits == 1 {
                crate::print_statistics("attention_grouped", &pipe);
            }
            let b = attention_grouped::BufferBindings {
                q_blob: &step.q,
                k_blob: &step.k,
                v_blob: &step.v,
                o_blob: &step.o,
                part_blob: &part,
                pos_blob: &step.pos,
            };
            let t = time_calls(ctx, cfg, |l| {
                l.dispatch(&pipe, &b, &step.push(splits), s.grouped_grid(splits))?;
                self.combine(l, &part, splits)
            })?;
            let (shape, variant) = (format!("kv{} grouped", s.skv), format!("{splits} shares"));
            out.push(probe_record(CASE, shape, variant, t));
        }
        Ok(())
    }

    /// The row kernel [`attention4`] at the operation layer's split (64 invocations), merged by
    /// the combine pass or by each row's last share, then at fewer, wider shares: a workgroup of
    /// 128 or 256 per query head and share.
    fn rows(&self, out: &mut Vec<Record>) -> Result<(), Box<dyn std::error::Error>> {
        let (ctx, cfg, kernels, step) = (self.ctx, self.cfg, self.kernels, self.step);
        let s = &step.shape;
        let ops_splits = s.splits_for(2048);
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
            let pipe = kernels.rows.pipeline(&spec, Some([local, 1, 1]))?;
            let grid = s.grid(splits);
            let b = attention4::BufferBindings {
                q_blob: &step.q,
                k_blob: &step.k,
                v_blob: &step.v,
                o_blob: &step.o,
                part_blob: &part,
                pos_blob: &step.pos,
                count_blob: &step.counts,
            };
            let t = time_calls(ctx, cfg, |l| {
                let grid = [local * splits as u32, grid[1], grid[2]];
                l.dispatch(&pipe, &b, &step.push(splits), grid)?;
                if last {
                    return Ok(());
                }
                self.combine(l, &part, splits)
            })?;
            let merged = if last { ", the last merging" } else { "" };
            let variant = format!("{splits} shares of {local}{merged}");
            out.push(probe_record(CASE, format!("kv{} rows", s.skv), variant, t));
        }
        Ok(())
    }

    /// [`attention_decode`] unsplit on several workgroup sizes and keys an invocation, then at
    /// 512 × 4 with the keys in shares of 1 to 4 chunks, the row's last share merging.
    fn decode(&self, out: &mut Vec<Record>) -> Result<(), Box<dyn std::error::Error>> {
        let s = &self.step.shape;
        for (local, kpi) in [(512u32, 4i32), (512, 2), (1024, 2), (1024, 4), (256, 4)] {
            let t = self.time_decode((local, kpi, 1), self.first)?;
            let variant = format!("{local} invocations, {kpi} keys each");
            out.push(probe_record(
                CASE,
                format!("kv{} decode", s.skv),
                variant,
                t,
            ));
        }
        for chunks in [1usize, 2, 3, 4] {
            let splits = s.skv.div_ceil(chunks * s.decode_chunk(512, 4));
            if splits > 1 {
                let t = self.time_decode((512, 4, splits), false)?;
                let variant = format!("{splits} shares of {chunks} chunks, the last merging");
                out.push(probe_record(
                    CASE,
                    format!("kv{} decode split", s.skv),
                    variant,
                    t,
                ));
            }
        }
        Ok(())
    }

    /// [`attention_decode`] in workgroups of `local`, `kpi` keys an invocation, the keys in
    /// `splits` shares (1: one workgroup per query head over all of them, no merge); the
    /// pipeline's statistics printed where `statistics`.
    fn time_decode(
        &self,
        (local, kpi, splits): (u32, i32, usize),
        statistics: bool,
    ) -> Result<Timing, Box<dyn std::error::Error>> {
        let (ctx, cfg, kernels, step) = (self.ctx, self.cfg, self.kernels, self.step);
        let s = &step.shape;
        let spec = attention_decode::SpecConstants {
            causal: 1,
            position_in_buffer: 0,
            D: s.d as i32,
            KPI: kpi,
            split: (splits > 1) as i32,
        };
        let pipe = kernels.decode.pipeline(&spec, Some([local, 1, 1]))?;
        if statistics {
            crate::print_statistics(&format!("attention_decode {local} x {kpi}"), &pipe);
        }
        // Read only with `split`.
        let part = Tensor::new(ctx, &s.part_shape(splits), TensorFormat::F32)?;
        let b = attention_decode::BufferBindings {
            q_blob: &step.q,
            k_blob: &step.k,
            v_blob: &step.v,
            o_blob: &step.o,
            pos_blob: &step.pos,
            part_blob: &part,
            count_blob: &step.counts,
        };
        time_calls(ctx, cfg, |l| {
            l.dispatch(&pipe, &b, &step.push(splits), s.decode_grid(local, splits))?;
            Ok(())
        })
    }
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
    let n = if cfg.quick { 64 } else { 512 };
    let shapes = prefill_shapes().unwrap_or(vec![(n, n, 32, 4, 64), (4 * n, 4 * n, 32, 32, 128)]);
    let kernels = MatrixKernels::load(ctx)?;
    let ops = Ops::new(ctx);
    let before = Before::from_env();
    for prompt in shapes {
        let p = PromptOperands::new(ctx, prompt, before.stream)?;
        let cm = kernels.cm_pipeline(ctx, p.shape.d)?;
        let work = BeforeWork::new(ctx, &p, before, (&kernels, cm.as_ref()))?;
        let record_before = |l: &mut CommandList| work.record(l, &ops, &p);
        let before_s = time_calls(ctx, cfg, record_before)?.median_s;
        let label = before.label();
        println!("# {label}: {:.3} us a call", before_s * 1e6);
        let before_work = (&record_before as &Recorder<'_>, label.as_str(), before_s);
        let (s, own) = (&p.shape, p.operands());
        let at = (p.scale, s.causal_offset());
        if let Some(cm) = &cm {
            let call = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
                Ok(s.record_cm(l, &cm.pipe, own, at, cm.tiles, &cm.whole(s))?)
            };
            let names = (p.label.as_str(), "attention_cm");
            time_alone_and_after((ctx, cfg), names, &call, before_work, out)?;
        }
        let causal = Attention::new().with_causal(true);
        let call = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
            Ok(ops.attention(l, &p.q, &p.k, &p.v, &p.o, &causal)?)
        };
        let names = (p.label.as_str(), "Ops::attention");
        time_alone_and_after((ctx, cfg), names, &call, before_work, out)?;
        if let Ok(cm2) = &kernels.cm2 {
            cm2_series((ctx, cfg), cm2, &p, before_work, out)?;
        }
    }
    Ok(())
}

/// [`attention_cm2`] in each of [`cm2_tiles`] over `p`, alone and after `before_work`.
fn cm2_series(
    (ctx, cfg): (&Context, Config),
    cm2: &Arc<LoadedKernel<attention_cm2::Kernel>>,
    p: &PromptOperands,
    before_work: (&Recorder<'_>, &str, f64),
    out: &mut Vec<Record>,
) -> Result<(), Box<dyn std::error::Error>> {
    let (s, own) = (&p.shape, p.operands());
    let at = (p.scale, s.causal_offset());
    for [rows, keys, threads] in cm2_tiles() {
        let Ok(pipe) = cm2.pipeline(&cm2_spec(s.d, rows, keys), Some([threads, 1, 1])) else {
            println!("attention_cm2 {rows}x{keys} on {threads}: no pipeline");
            continue;
        };
        let d = s.d;
        crate::print_statistics(
            &format!("attention_cm2 {rows}x{keys}x{d} on {threads}"),
            &pipe,
        );
        let call = |l: &mut CommandList| -> Result<(), Box<dyn std::error::Error>> {
            Ok(s.record_cm2(l, &pipe, own, at, (threads, rows as usize))?)
        };
        let variant = format!("attention_cm2 {rows} rows x {keys} keys on {threads}");
        let names = (p.label.as_str(), variant.as_str());
        time_alone_and_after((ctx, cfg), names, &call, before_work, out)?;
    }
    Ok(())
}

/// [`attention_cm2`]'s constants: causal, head dimension `d`, `rows` × `keys` tiles.
fn cm2_spec(d: usize, rows: u32, keys: u32) -> attention_cm2::SpecConstants {
    attention_cm2::SpecConstants {
        causal: 1,
        D: d as i32,
        BR: rows as i32,
        BC: keys as i32,
    }
}

/// The matrix attention kernels in `VKPRISM_BENCH_ATTN_VARIANT`'s variant, else the operation
/// layer's for F16 tensors (either may be missing on a device without cooperative matrices).
struct MatrixKernels {
    cm: Result<Arc<LoadedKernel<attention_cm::Kernel>>, vkprism::PipelineError>,
    cm2: Result<Arc<LoadedKernel<attention_cm2::Kernel>>, vkprism::PipelineError>,
}

impl MatrixKernels {
    fn load(ctx: &Context) -> Result<MatrixKernels, Box<dyn std::error::Error>> {
        let load = match std::env::var("VKPRISM_BENCH_ATTN_VARIANT") {
            Ok(name) => LoadOptions::variant_named(&name)?,
            Err(_) => {
                LoadOptions::options(options_for(TensorFormat::F16).with_cooperative_matrix(true))
            }
        };
        let kernels = MatrixKernels {
            cm: ctx.load_with(&load),
            cm2: ctx.load_with(&load),
        };
        if let Ok(k) = &kernels.cm {
            println!("# attention_probe: matrix kernels in {}", k.variant().key);
        }
        Ok(kernels)
    }

    /// [`attention_cm`]'s pipeline for head dimension `d` and the tiles it records with (its
    /// statistics printed), where the kernel loaded.
    fn cm_pipeline(
        &self,
        ctx: &Context,
        d: usize,
    ) -> Result<Option<CmPipeline>, Box<dyn std::error::Error>> {
        let Ok(cm) = &self.cm else { return Ok(None) };
        let threads = if d <= 128 { 256 } else { 128 };
        let subgroup = ctx.features().limits.subgroup_size;
        let spec = attention_cm::SpecConstants {
            causal: 1,
            D: d as i32,
            subgroup_size: subgroup as i32,
        };
        let pipe = cm.pipeline(&spec, Some([threads, 1, 1]))?;
        crate::print_statistics(&format!("attention_cm x{d} on {threads}"), &pipe);
        let rows = 16 * (threads / subgroup) as usize;
        Ok(Some(CmPipeline {
            pipe,
            tiles: (threads, rows),
            unread: (
                Tensor::new(ctx, &[4], TensorFormat::F32)?,
                Tensor::new(ctx, &[1], TensorFormat::I32)?,
            ),
        }))
    }
}

/// [`attention_cm`]'s pipeline and its (invocations, query rows) a workgroup, with the
/// tensors its unsplit pass binds and does not read.
struct CmPipeline {
    pipe: Pipeline<attention_cm::Kernel>,
    tiles: (u32, usize),
    unread: (Tensor, Tensor),
}

impl CmPipeline {
    /// The kernel's pass over `s` with each block's keys whole.
    fn whole(&self, s: &AttentionShape) -> CmSplit<'_> {
        CmSplit {
            shares: s.cm_unsplit(),
            part: &self.unread.0,
            counts: &self.unread.1,
        }
    }
}

/// A prompt's attention operands (fp16): the queries (the start of the stream step's output
/// where that runs), keys, values and output, its shape and its series' label.
struct PromptOperands {
    shape: AttentionShape,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    scale: f32,
    label: String,
    /// The stream step's input and output.
    streamed: Option<(Tensor, Tensor)>,
}

impl PromptOperands {
    fn new(
        ctx: &Context,
        (tokens, keys, hq, hkv, d): Prompt,
        stream: bool,
    ) -> Result<PromptOperands, Box<dyn std::error::Error>> {
        let f = TensorFormat::F16;
        let qo = |seed| Tensor::from_f32(ctx, &[tokens, hq, d], f, &random(tokens * hq * d, seed));
        let kv = |seed| Tensor::from_f32(ctx, &[keys, hkv, d], f, &random(keys * hkv * d, seed));
        let streamed = stream_pair(ctx, stream, 47)?;
        let q = match &streamed {
            Some((_, y)) => y.view(0, &[tokens, hq, d])?,
            None => qo(41)?,
        };
        let label = if keys == tokens {
            format!("prefill {tokens} h{hq}/{hkv} d{d} causal")
        } else {
            format!("prefill {tokens} of {keys} h{hq}/{hkv} d{d} causal")
        };
        Ok(PromptOperands {
            // The queries are the last `tokens` of the `keys` positions.
            shape: AttentionShape {
                batch: 1,
                sq: tokens,
                skv: keys,
                hq,
                hkv,
                d,
            },
            q,
            k: kv(42)?,
            v: kv(43)?,
            o: qo(44)?,
            scale: 1.0 / (d as f32).sqrt(),
            label,
            streamed,
        })
    }

    fn operands(&self) -> [&Tensor; 4] {
        [&self.q, &self.k, &self.v, &self.o]
    }
}

/// A GEMM step's input, weights and output.
type GemmStep = (Tensor, Tensor, Tensor);

/// What [`Before`]'s steps read, write and run for one prompt.
struct BeforeWork<'a> {
    steps: Before,
    /// `writes`: the sources of q, k and v.
    sources: Vec<Tensor>,
    glu: Option<GemmStep>,
    wide: Option<GemmStep>,
    down: Option<GemmStep>,
    late: Option<(Tensor, Tensor)>,
    projection: Option<GemmStep>,
    code: Vec<Pipeline<code_span::Kernel>>,
    cm: Option<&'a CmPipeline>,
    /// `cm2` and `warm`: [`attention_cm2`] on 128 rows × 64 keys on 256.
    cm2: Option<Pipeline<attention_cm2::Kernel>>,
    /// The warming calls' q, k, v and o.
    warm: Option<[Tensor; 4]>,
}

/// The warming calls' problem: one step of keys, 264 heads of one block each.
fn warm_shape(d: usize) -> AttentionShape {
    AttentionShape {
        batch: 1,
        sq: 128,
        skv: 64,
        hq: 264,
        hkv: 264,
        d,
    }
}

impl<'a> BeforeWork<'a> {
    fn new(
        ctx: &Context,
        p: &PromptOperands,
        steps: Before,
        (kernels, cm): (&MatrixKernels, Option<&'a CmPipeline>),
    ) -> Result<BeforeWork<'a>, Box<dyn std::error::Error>> {
        let (tokens, f) = (p.shape.sq, TensorFormat::F16);
        let [q, k, v, _] = p.operands();
        let sources = match steps.writes {
            true => [q, k, v]
                .iter()
                .zip([48, 49, 50])
                .map(|(t, seed)| Tensor::from_f32(ctx, t.shape(), f, &random(t.len(), seed)))
                .collect::<Result<_, _>>()?,
            false => Vec::new(),
        };
        // TinyLlama's MLP and query projection: each step's input, weights and output.
        let (hidden, mlp, qd) = (2048, 5632, p.shape.hq * p.shape.d);
        let late = stream_pair(ctx, steps.late, 62)?;
        let down_out = match &late {
            Some((x, _)) => x.view(0, &[tokens, hidden])?,
            None => activations(ctx, [tokens, hidden], 57)?,
        };
        let glu_out = || activations(ctx, [tokens, mlp], 54);
        let glu = gemm_step(ctx, steps.glu, (tokens, hidden, 2 * mlp), 52, glu_out)?;
        let wide_out = || activations(ctx, [tokens, 2 * mlp], 65);
        let wide = gemm_step(ctx, steps.wide, (tokens, hidden, 2 * mlp), 63, wide_out)?;
        let down = gemm_step(ctx, steps.down, (tokens, mlp, hidden), 55, || Ok(down_out))?;
        let q_rows = || q.view(0, &[tokens, qd]);
        let projection = gemm_step(ctx, steps.gemm, (tokens, hidden, qd), 45, q_rows)?;
        let cm2 = match (&kernels.cm2, steps.cm2 || steps.warm) {
            (Ok(cm2), true) => {
                Some(cm2.pipeline(&cm2_spec(p.shape.d, 128, 64), Some([256, 1, 1]))?)
            }
            _ => None,
        };
        let warm = match steps.warm || steps.warm_cm {
            true => {
                let d = p.shape.d;
                let t = |rows: usize, seed| {
                    Tensor::from_f32(ctx, &[rows, 264, d], f, &random(rows * 264 * d, seed))
                };
                Some([t(128, 58)?, t(64, 59)?, t(64, 60)?, t(128, 61)?])
            }
            false => None,
        };
        let code = match steps.code {
            true => code_span_pipelines(ctx)?,
            false => Vec::new(),
        };
        Ok(BeforeWork {
            steps,
            sources,
            glu,
            wide,
            down,
            late,
            projection,
            code,
            cm,
            cm2,
            warm,
        })
    }

    /// Records the steps in [`Before`]'s order.
    fn record(
        &self,
        l: &mut CommandList,
        ops: &Ops,
        p: &PromptOperands,
    ) -> Result<(), Box<dyn std::error::Error>> {
        if let Some((sx, sy)) = &p.streamed {
            ops.unary(l, sx, sy, UnaryOp::Relu)?;
        }
        for (src, dst) in self.sources.iter().zip([&p.q, &p.k, &p.v]) {
            ops.unary(l, src, dst, UnaryOp::Relu)?;
        }
        self.record_mlp(l, ops, p.shape.sq)?;
        for pipe in &self.code {
            let b = code_span::BufferBindings { x_blob: &p.o };
            let push = code_span::PushConstants { a: 0.5 };
            l.dispatch(pipe, &b, &push, [CODE_WORKGROUPS * 256, 1, 1])?;
        }
        self.record_attention(l, p)
    }

    /// The MLP's steps, the late stream and the queries' projection, each reading what the
    /// one before wrote.
    fn record_mlp(
        &self,
        l: &mut CommandList,
        ops: &Ops,
        tokens: usize,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let transposed = Gemm::new().with_transpose_b(true);
        let mut last: Option<&Tensor> = None;
        if let Some((x, w, y)) = &self.glu {
            ops.gemm_glu(l, x, w, y, Activation::Silu)?;
            last = Some(y);
        }
        if let Some((x, w, y)) = &self.wide {
            ops.gemm(l, x, w, None, y, &transposed)?;
            last = Some(y);
        }
        if let Some((x, w, y)) = &self.down {
            let input = step_input(last, x, [tokens, 5632])?;
            ops.gemm(l, &input, w, None, y, &transposed)?;
            last = Some(y);
        }
        if let Some((x, y)) = &self.late {
            ops.unary(l, x, y, UnaryOp::Relu)?;
            last = Some(y);
        }
        if let Some((x, w, q_rows)) = &self.projection {
            let input = step_input(last, x, [tokens, 2048])?;
            ops.gemm(l, &input, w, None, q_rows, &transposed)?;
        }
        Ok(())
    }

    /// The matrix attention steps: over the prompt's own tensors (`cm`, `cm2`), or warming
    /// over [`warm_shape`]'s (`warm`, `warmcm`).
    fn record_attention(
        &self,
        l: &mut CommandList,
        p: &PromptOperands,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let (s, own, steps) = (&p.shape, p.operands(), self.steps);
        let at = (p.scale, s.causal_offset());
        let warm = warm_shape(s.d);
        if let (true, Some(cm)) = (steps.cm, self.cm) {
            s.record_cm(l, &cm.pipe, own, at, cm.tiles, &cm.whole(s))?;
        }
        if let (true, Some(pipe), Some(w)) = (steps.warm, &self.cm2, &self.warm) {
            warm.record_cm2(l, pipe, w.each_ref(), (p.scale, 0), (256, 128))?;
        }
        if let (true, Some(cm), Some(w)) = (steps.warm_cm, self.cm, &self.warm) {
            let whole = cm.whole(&warm);
            warm.record_cm(l, &cm.pipe, w.each_ref(), (p.scale, 0), cm.tiles, &whole)?;
        }
        if let (true, Some(pipe)) = (steps.cm2, &self.cm2) {
            s.record_cm2(l, pipe, own, at, (256, 128))?;
        }
        Ok(())
    }
}

/// What a tensor's making returns.
type TensorResult = Result<Tensor, vkprism::TensorError>;

/// A GEMM step of `tokens` rows where `on`: a random input `[tokens, k]` and weights `[n, k]`
/// (of `seed` and `seed + 1`), and the output `out` makes.
fn gemm_step(
    ctx: &Context,
    on: bool,
    (tokens, k, n): (usize, usize, usize),
    seed: u64,
    out: impl FnOnce() -> TensorResult,
) -> Result<Option<GemmStep>, vkprism::TensorError> {
    if !on {
        return Ok(None);
    }
    let x = activations(ctx, [tokens, k], seed)?;
    Ok(Some((x, activations(ctx, [n, k], seed + 1)?, out()?)))
}

/// A random fp16 tensor of `shape` from `seed`.
fn activations(ctx: &Context, shape: [usize; 2], seed: u64) -> TensorResult {
    Tensor::from_f32(
        ctx,
        &shape,
        TensorFormat::F16,
        &random(shape[0] * shape[1], seed),
    )
}
