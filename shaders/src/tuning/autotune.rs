//! [`GemmTuner`]: on the first use of a problem, times the device class's candidate
//! configurations on it and keeps the fastest, in memory and in the cache file; later uses (in
//! this process or the next) return the recorded choice without timing anything.

use super::cache::{CacheDevice, CacheError, TuneKey, Tuned, TuningCache};
use super::table::{fits, DeviceClass, DeviceInfo, GemmProblem};
use crate::{conv2d_nhwc, gemm, gemm_int8, Conv2dShape, GemmConfig};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vkprism::{CommandList, Context, FloatMode, LoadedKernel, Tensor, TensorFormat, VariantInfo};

/// How much one tuning may cost: at most `max_candidates` configurations, each run once to
/// check its result, then (after a 300 ms warm-up) `repetitions` times timed in interleaved
/// rounds (the median counts).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TuneBudget {
    /// Configurations timed per problem (1 to [`TuneBudget::MAX_CANDIDATES`]; default 6).
    pub max_candidates: usize,
    /// Timed runs per configuration (1 to [`TuneBudget::MAX_REPETITIONS`]; default 3).
    pub repetitions: u32,
}

impl TuneBudget {
    /// The most candidates a budget allows.
    pub const MAX_CANDIDATES: usize = 16;
    /// The most repetitions a budget allows.
    pub const MAX_REPETITIONS: u32 = 10;

    fn clamped(self) -> TuneBudget {
        TuneBudget {
            max_candidates: self.max_candidates.clamp(1, Self::MAX_CANDIDATES),
            repetitions: self.repetitions.clamp(1, Self::MAX_REPETITIONS),
        }
    }
}

impl Default for TuneBudget {
    fn default() -> Self {
        TuneBudget {
            max_candidates: 6,
            repetitions: 3,
        }
    }
}

/// What became of the cache file a [`GemmTuner`] was given.
#[derive(Debug)]
pub enum CacheStatus {
    /// No file was given: choices last as long as the tuner.
    InMemory,
    /// There was no file: it is written at the first choice.
    New,
    /// The file was read, with this many entries.
    Loaded(usize),
    /// The file was not used, for this reason (damaged, cut short, another format version or
    /// another device or driver): the tuner starts empty and replaces the file at its first
    /// choice.
    Discarded(CacheError),
}

/// How a tuning timed its candidates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Clock {
    /// GPU timestamps around the dispatch (`CommandList::with_total_timing`).
    Gpu,
    /// The host's clock around submit and wait, on a device whose queue has no timestamps.
    Host,
}

/// What the last call of a [`GemmTuner`] did.
#[derive(Debug)]
pub struct TuneReport {
    /// The problem's cache key.
    pub key: TuneKey,
    /// The configuration returned.
    pub chosen: GemmConfig,
    /// Whether it came from the cache (then nothing was timed).
    pub from_cache: bool,
    /// Each timed candidate with its median time, in the order timed (the class's default
    /// first).
    pub timed: Vec<(GemmConfig, Duration)>,
    /// Candidates not timed, and why: the driver refused the pipeline, or the result of the
    /// warm-up run was wrong.
    pub rejected: Vec<(GemmConfig, CandidateRejection)>,
    /// The clock used (`None` when nothing was timed).
    pub clock: Option<Clock>,
    /// Writing the cache file failed (the choice is kept in memory and returned all the same;
    /// [`GemmTuner::save`] tries again).
    pub save_error: Option<CacheError>,
}

impl fmt::Display for TuneReport {
    /// One line: the choice, where it came from, and each timed candidate's median.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.from_cache {
            return write!(f, "cached {}", describe(&self.chosen));
        }
        write!(f, "tuned {} of", describe(&self.chosen))?;
        for (i, (cfg, t)) in self.timed.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep} {} {:.3} ms", describe(cfg), t.as_secs_f64() * 1e3)?;
        }
        for (cfg, why) in &self.rejected {
            write!(f, "; rejected {}: {why}", describe(cfg))?;
        }
        if let Some(e) = &self.save_error {
            write!(f, "; not saved: {e}")?;
        }
        Ok(())
    }
}

/// `16x16 BK 16` (the plain path), `32x8 BK 32 cm 4,4,4` (cooperative matrices).
fn describe(cfg: &GemmConfig) -> String {
    let [x, y] = cfg.local;
    if cfg.coopmat {
        let [wfm, wfn, warps_n] = cfg.cm_tiles;
        format!("{x}x{y} BK {} cm {wfm},{wfn},{warps_n}", cfg.bk)
    } else {
        format!("{x}x{y} BK {}", cfg.bk)
    }
}

/// Why a candidate configuration was not timed. `Display` says it in words.
#[non_exhaustive]
#[derive(Debug)]
pub enum CandidateRejection {
    /// vkprism refused the candidate's pipeline or dispatch before the driver saw it.
    Refused(vkprism::Invalid),
    /// The warm-up run's result was wrong (which sampled element, what it held and should).
    WrongResult(String),
}

impl fmt::Display for CandidateRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CandidateRejection::Refused(e) => write!(f, "{e}"),
            CandidateRejection::WrongResult(why) => write!(f, "wrong result: {why}"),
        }
    }
}

/// Why a tuning failed.
#[non_exhaustive]
#[derive(Debug)]
pub enum TuneError {
    /// A runtime call failed (making the problem's tensors, a lost device, ...).
    Runtime(vkprism::Error),
    /// No candidate could be run: each one with its reason.
    NoCandidate(Vec<(GemmConfig, CandidateRejection)>),
}

impl fmt::Display for TuneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TuneError::Runtime(e) => write!(f, "tuning: {e}"),
            TuneError::NoCandidate(rejected) => {
                let why: Vec<String> = rejected
                    .iter()
                    .map(|(c, why)| format!("{c:?}: {why}"))
                    .collect();
                write!(
                    f,
                    "tuning: no candidate configuration ran: {}",
                    why.join("; ")
                )
            }
        }
    }
}

impl std::error::Error for TuneError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TuneError::Runtime(e) => Some(e),
            TuneError::NoCandidate(_) => None,
        }
    }
}

impl From<vkprism::Error> for TuneError {
    fn from(e: vkprism::Error) -> Self {
        TuneError::Runtime(e)
    }
}

impl From<vkprism::TensorError> for TuneError {
    fn from(e: vkprism::TensorError) -> Self {
        TuneError::Runtime(e.into())
    }
}

impl From<vkprism::PipelineError> for TuneError {
    fn from(e: vkprism::PipelineError) -> Self {
        TuneError::Runtime(e.into())
    }
}

impl From<vkprism::CommandError> for TuneError {
    fn from(e: vkprism::CommandError) -> Self {
        TuneError::Runtime(e.into())
    }
}

/// A candidate must beat the class's default by this much to replace it (timing noise is not a
/// reason to leave the table).
const MARGIN: f64 = 0.02;

/// Chooses [`GemmConfig`]s by measurement: on a problem it has no record of, it times the
/// candidates of the device's [`DeviceClass`] ([`DeviceClass::candidates`]) on the problem
/// itself, with buffers it allocates (inputs of eighths in [-1, 1], the output poisoned with
/// NaN or `i32::MIN` before each candidate) and frees before returning; each candidate runs once
/// to check 64 sampled outputs against a CPU dot product (a candidate with a wrong result is
/// rejected, never chosen); then, after 300 ms of warm-up runs (an idle GPU's clock ramps up),
/// all are timed in [`TuneBudget::repetitions`] interleaved rounds with GPU timestamps; the
/// lowest median wins, the default keeping its place unless another is 2%
/// faster. The choice is recorded under the device (vendor, device, driver version), the kernel,
/// the variant and the shape bucket (M, N, K rounded up to powers of two, transposes, 16-byte
/// loads) and, with a cache path, written to the file at once. A recorded problem is answered
/// from the record: nothing is timed ([`GemmTuner::last_timed`] is 0).
///
/// **Cost of a miss**, with the default budget: up to 6 pipelines created (the driver compiles
/// each; they stay cached in the loaded kernel), 300 ms of warm-up runs and 6 × 4 runs of the
/// problem, plus one upload
/// of the inputs and, per candidate, one upload of the poison and one download of the output.
/// On the H100 a 4096³ fp16 GEMM runs in about 0.6 ms, so the runs cost ~15 ms and the
/// pipelines dominate; on lavapipe a 96×80×64 GEMM tunes in well under a second.
///
/// The file ([`GemmTuner::cache_path_for`] puts it beside the pipeline cache) is a small text
/// file (`tuning::cache` documents it). A missing file is an empty cache; an unreadable,
/// damaged, truncated, other-version or other-device file is not used
/// ([`GemmTuner::cache_status`] says why) and is replaced at the first choice. Writes are atomic
/// (a temporary file, then a rename). **A cached choice never changes a result**, only speed:
/// every candidate is a configuration the kernel computes correctly, checked before it is
/// recorded, and a cached one is checked against the device's limits before it is used (one
/// that does not fit is tuned again).
pub struct GemmTuner {
    ctx: Context,
    info: DeviceInfo,
    class: DeviceClass,
    cache: TuningCache,
    path: Option<PathBuf>,
    status: CacheStatus,
    budget: TuneBudget,
    last: Option<TuneReport>,
}

impl fmt::Debug for GemmTuner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GemmTuner")
            .field("class", &self.class)
            .field("path", &self.path)
            .field("status", &self.status)
            .field("entries", &self.cache.len())
            .field("budget", &self.budget)
            .finish()
    }
}

impl GemmTuner {
    /// A tuner for `ctx`'s device, with the choices recorded at `cache_path` (`None`: in memory
    /// only). Never fails: a file that can't be used is reported by
    /// [`GemmTuner::cache_status`].
    pub fn new(ctx: &Context, cache_path: Option<&Path>) -> GemmTuner {
        let device = CacheDevice::of(ctx);
        let (cache, status) = match cache_path {
            None => (TuningCache::new(device), CacheStatus::InMemory),
            Some(path) => match TuningCache::load(path, device) {
                Ok(Some(cache)) => {
                    let n = cache.len();
                    (cache, CacheStatus::Loaded(n))
                }
                Ok(None) => (TuningCache::new(device), CacheStatus::New),
                Err(e) => (TuningCache::new(device), CacheStatus::Discarded(e)),
            },
        };
        let info = DeviceInfo::of(ctx);
        GemmTuner {
            ctx: ctx.clone(),
            class: DeviceClass::classify(&info),
            info,
            cache,
            path: cache_path.map(Path::to_path_buf),
            status,
            budget: TuneBudget::default(),
            last: None,
        }
    }

    /// The tuning file beside a pipeline cache saved at `pipeline_cache`
    /// ([`Context::save_pipeline_cache`]): the same path with `.tuning` appended to the file
    /// name (`pipeline.bin` → `pipeline.bin.tuning`), so the two never collide.
    pub fn cache_path_for(pipeline_cache: &Path) -> PathBuf {
        let mut name = pipeline_cache
            .file_name()
            .unwrap_or_default()
            .to_os_string();
        name.push(".tuning");
        pipeline_cache.with_file_name(name)
    }

    /// This tuner with another budget (clamped to 1 ..= [`TuneBudget::MAX_CANDIDATES`] and
    /// 1 ..= [`TuneBudget::MAX_REPETITIONS`]).
    pub fn with_budget(mut self, budget: TuneBudget) -> GemmTuner {
        self.budget = budget.clamped();
        self
    }

    /// The device's class.
    pub fn class(&self) -> DeviceClass {
        self.class
    }

    /// What became of the cache file.
    pub fn cache_status(&self) -> &CacheStatus {
        &self.status
    }

    /// The choices recorded so far.
    pub fn cache(&self) -> &TuningCache {
        &self.cache
    }

    /// What the last call did, if there was one.
    pub fn last_report(&self) -> Option<&TuneReport> {
        self.last.as_ref()
    }

    /// How many candidates the last call timed (0 when it answered from the cache).
    pub fn last_timed(&self) -> usize {
        self.last.as_ref().map_or(0, |r| r.timed.len())
    }

    /// The candidates a miss of `problem` in `variant` times, in order.
    pub fn candidates(
        &self,
        problem: &GemmProblem,
        variant: &vkprism::VariantKey,
    ) -> Vec<GemmConfig> {
        self.class.candidates(
            problem,
            variant,
            &self.ctx.features().limits,
            self.budget.max_candidates,
        )
    }

    /// Writes the cache file now (a tuner writes it after every choice; this retries after a
    /// failure). Nothing to do without a path.
    pub fn save(&mut self) -> Result<(), CacheError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let comment = format!(
            "{} (class {}): written by vkprism-shaders' GemmTuner",
            self.info.name,
            self.class.name()
        );
        self.cache.save(path, &comment)
    }

    /// The configuration of an M×N×K [`gemm`] in `kernel`'s variant (A stored K×M with
    /// `transpose_a`, B stored N×K with `transpose_b`): recorded, or tuned now.
    pub fn gemm(
        &mut self,
        kernel: &Arc<LoadedKernel<gemm::Kernel>>,
        m: usize,
        n: usize,
        k: usize,
        transpose_a: bool,
        transpose_b: bool,
    ) -> Result<GemmConfig, TuneError> {
        let problem = GemmProblem::gemm(m, n, k, transpose_a, transpose_b);
        let variant = kernel.variant();
        if let Some(cfg) = self.answer(&problem, variant) {
            return Ok(cfg);
        }
        let ctx = self.ctx.clone();
        let f = kernel.format_of("a_blob")?;
        let (a, b) = (eighths(m * k, 1), eighths(k * n, 2));
        let a_shape = if transpose_a { [k, m] } else { [m, k] };
        let b_shape = if transpose_b { [n, k] } else { [k, n] };
        let at = Tensor::from_f32(&ctx, &a_shape, f, &a)?;
        let bt = Tensor::from_f32(&ctx, &b_shape, f, &b)?;
        let bias = Tensor::new(&ctx, &[n], f)?;
        let ct = Tensor::new(&ctx, &[m, n], f)?;
        let poison = vec![f32::NAN; m * n];
        let bindings = gemm::BufferBindings {
            a_blob: &at,
            b_blob: &bt,
            bias_blob: &bias,
            c_blob: &ct,
        };
        let push = gemm::PushConstants {
            M: m as i32,
            N: n as i32,
            K: k as i32,
            alpha: 1.0,
            slope: 0.0,
            ..Default::default()
        };
        let a_at = |i: usize, l: usize| {
            if transpose_a {
                a[l * m + i]
            } else {
                a[i * k + l]
            }
        };
        let b_at = |l: usize, j: usize| {
            if transpose_b {
                b[j * k + l]
            } else {
                b[l * n + j]
            }
        };
        let tol = tolerance(variant);
        self.tune(
            &problem,
            variant,
            |cfg| {
                ct.upload_f32(&poison)?;
                let spec = cfg.spec(gemm::SpecConstants {
                    transpose_a: transpose_a as i32,
                    transpose_b: transpose_b as i32,
                    ..Default::default()
                });
                let pipe = kernel.pipeline(&spec, Some(cfg.local_size()))?;
                let (mut list, clock) = timing_list(&ctx)?;
                list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n))?;
                Ok((list, clock))
            },
            || {
                let c = ct.download_f32()?;
                Ok(check_float(&c, m, n, k, &a_at, &b_at, tol))
            },
        )
    }

    /// The configuration of an M×N×K [`gemm_int8`] in `kernel`'s variant: recorded, or tuned
    /// now.
    pub fn gemm_int8(
        &mut self,
        kernel: &Arc<LoadedKernel<gemm_int8::Kernel>>,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<GemmConfig, TuneError> {
        let problem = GemmProblem::gemm_int8(m, n, k);
        let variant = kernel.variant();
        if let Some(cfg) = self.answer(&problem, variant) {
            return Ok(cfg);
        }
        let ctx = self.ctx.clone();
        let to_i8 = |v: Vec<f32>| v.into_iter().map(|x| (x * 8.0) as i8).collect::<Vec<i8>>();
        let (a, b) = (to_i8(eighths(m * k, 3)), to_i8(eighths(k * n, 4)));
        let at = Tensor::from_i8(&ctx, &[m, k], &a)?;
        let bt = Tensor::from_i8(&ctx, &[k, n], &b)?;
        let ct = Tensor::new(&ctx, &[m, n], TensorFormat::I32)?;
        let poison = vec![i32::MIN; m * n];
        let bindings = gemm_int8::BufferBindings {
            a_blob: &at,
            b_blob: &bt,
            c_blob: &ct,
        };
        let push = gemm_int8::PushConstants {
            M: m as i32,
            N: n as i32,
            K: k as i32,
        };
        self.tune(
            &problem,
            variant,
            |cfg| {
                ct.upload_i32(&poison)?;
                let pipe =
                    kernel.pipeline(&cfg.spec(Default::default()), Some(cfg.local_size()))?;
                let (mut list, clock) = timing_list(&ctx)?;
                list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n))?;
                Ok((list, clock))
            },
            || {
                let c = ct.download_i32()?;
                for (i, j) in samples(m, n) {
                    let want: i32 = (0..k)
                        .map(|l| a[i * k + l] as i32 * b[l * n + j] as i32)
                        .sum();
                    if c[i * n + j] != want {
                        return Ok(Err(format!("C[{i}][{j}] = {}, want {want}", c[i * n + j])));
                    }
                }
                Ok(Ok(()))
            },
        )
    }

    /// The configuration of a [`conv2d_nhwc`] of `shape` in `kernel`'s variant: recorded, or
    /// tuned now (no bias, no activation: they don't change the speed).
    pub fn conv2d_nhwc(
        &mut self,
        kernel: &Arc<LoadedKernel<conv2d_nhwc::Kernel>>,
        shape: &Conv2dShape,
    ) -> Result<GemmConfig, TuneError> {
        let problem = GemmProblem::conv2d_nhwc(shape);
        let variant = kernel.variant();
        if let Some(cfg) = self.answer(&problem, variant) {
            return Ok(cfg);
        }
        let ctx = self.ctx.clone();
        let s = *shape;
        let (m, n, k) = s.gemm_mnk();
        let (oh, ow) = (s.outh(), s.outw());
        let f = kernel.format_of("in_blob")?;
        let input = eighths(s.batch * s.h * s.w * s.c, 5);
        let weight = eighths(s.kh * s.kw * s.c * s.outc, 6);
        let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], f, &input)?;
        let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight)?;
        let bias = Tensor::new(&ctx, &[s.outc], f)?;
        let ot = Tensor::new(&ctx, &[s.batch, oh, ow, s.outc], f)?;
        let poison = vec![f32::NAN; m * n];
        let bindings = conv2d_nhwc::BufferBindings {
            in_blob: &it,
            w_blob: &wt,
            bias_blob: &bias,
            out_blob: &ot,
        };
        let push = s.push(1.0, 0.0);
        // Row `i` of the implicit GEMM's A is output pixel i; column l is tap (ky, kx, c).
        let a_at = |i: usize, l: usize| {
            let (x, y, b) = (i % ow, (i / ow) % oh, i / (ow * oh));
            let (c, kx, ky) = (l % s.c, (l / s.c) % s.kw, l / (s.c * s.kw));
            let iy = (y * s.stride + ky) as isize - s.pad as isize;
            let ix = (x * s.stride + kx) as isize - s.pad as isize;
            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                return 0.0;
            }
            input[((b * s.h + iy as usize) * s.w + ix as usize) * s.c + c]
        };
        let b_at = |l: usize, j: usize| weight[l * s.outc + j];
        let tol = tolerance(variant);
        self.tune(
            &problem,
            variant,
            |cfg| {
                ot.upload_f32(&poison)?;
                let pipe =
                    kernel.pipeline(&cfg.spec(Default::default()), Some(cfg.local_size()))?;
                let (mut list, clock) = timing_list(&ctx)?;
                list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n))?;
                Ok((list, clock))
            },
            || {
                let out = ot.download_f32()?;
                Ok(check_float(&out, m, n, k, &a_at, &b_at, tol))
            },
        )
    }

    /// The answer without timing: the class's default for an empty problem (nothing to run),
    /// else the recorded configuration if there is one the device runs.
    fn answer(&mut self, problem: &GemmProblem, variant: &VariantInfo) -> Option<GemmConfig> {
        if problem.m == 0 || problem.n == 0 || problem.k == 0 {
            self.last = None;
            return Some(
                self.class
                    .config(problem, &variant.key, self.info.subgroup_size),
            );
        }
        self.cached(problem, variant)
    }

    /// The recorded configuration of `problem` in `variant`, if there is one the device runs.
    fn cached(&mut self, problem: &GemmProblem, variant: &VariantInfo) -> Option<GemmConfig> {
        let key = self.key(problem, variant);
        let tuned = self.cache.get(&key)?;
        let cfg = tuned.config(&variant.key, self.info.subgroup_size, problem.aligned);
        fits(&cfg, problem, &variant.key, &self.ctx.features().limits).ok()?;
        self.last = Some(TuneReport {
            key,
            chosen: cfg,
            from_cache: true,
            timed: Vec::new(),
            rejected: Vec::new(),
            clock: None,
            save_error: None,
        });
        Some(cfg)
    }

    fn key(&self, problem: &GemmProblem, variant: &VariantInfo) -> TuneKey {
        let wide = variant.key.coopmat == Some(true) && problem.aligned;
        TuneKey::new(problem, &variant.key.name(), wide)
    }

    /// Times every candidate: `record` poisons the output and records one dispatch of the
    /// candidate; `check` reads the output back after the warm-up run (`Ok(Err(why))`: wrong).
    fn tune(
        &mut self,
        problem: &GemmProblem,
        variant: &VariantInfo,
        mut record: impl FnMut(&GemmConfig) -> Result<(CommandList, Clock), vkprism::Error>,
        mut check: impl FnMut() -> Result<Result<(), String>, vkprism::Error>,
    ) -> Result<GemmConfig, TuneError> {
        let key = self.key(problem, variant);
        let candidates = self.candidates(problem, &variant.key);
        let mut rejected = Vec::new();
        // Every candidate recorded, run once and checked first: a wrong one is never timed.
        let mut runnable = Vec::new();
        for cfg in candidates {
            let (mut list, clock) = match record(&cfg) {
                Ok(l) => l,
                // The call was refused before the driver ran anything: this candidate only.
                Err(vkprism::Error::Invalid(e)) => {
                    rejected.push((cfg, CandidateRejection::Refused(e)));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            list.submit_and_wait()?;
            if let Err(why) = check()? {
                rejected.push((cfg, CandidateRejection::WrongResult(why)));
                continue;
            }
            runnable.push((cfg, list, clock));
        }
        let used_clock = runnable.first().map(|(_, _, clock)| *clock);
        let timed = time_interleaved(&mut runnable, self.budget.repetitions)?;
        let Some(&(first, first_time)) = timed.first() else {
            return Err(TuneError::NoCandidate(rejected));
        };
        let &(best, best_time) = timed.iter().min_by_key(|(_, t)| *t).expect("one was timed");
        let chosen = if best_time.as_secs_f64() * (1.0 + MARGIN) < first_time.as_secs_f64() {
            best
        } else {
            first
        };
        self.cache.insert(key.clone(), Tuned::of(&chosen));
        let save_error = self.save().err();
        self.last = Some(TuneReport {
            key,
            chosen,
            from_cache: false,
            timed,
            rejected,
            clock: used_clock,
            save_error,
        });
        Ok(chosen)
    }
}

/// GPU work run before timing: an idle H100 runs far below its boost clock and needs a few
/// hundred milliseconds of sustained work to reach it; timed cold, the first candidates ran
/// slower than the last and a slower configuration was chosen (BENCHMARKS.md, "Tile
/// configuration per device").
const WARM_UP: Duration = Duration::from_millis(300);
/// The most rounds of warm-up, whatever their duration (bounds the cost of tiny problems).
const MAX_WARM_UP_ROUNDS: usize = 2000;

/// The median time of each candidate's list, after [`WARM_UP`]: rounds of one run of every
/// candidate, so a clock that still changes changes every candidate's runs alike.
fn time_interleaved(
    runnable: &mut [(GemmConfig, CommandList, Clock)],
    repetitions: u32,
) -> Result<Vec<(GemmConfig, Duration)>, vkprism::CommandError> {
    let warm_up = Instant::now();
    for _ in 0..MAX_WARM_UP_ROUNDS {
        if warm_up.elapsed() >= WARM_UP {
            break;
        }
        for (_, list, _) in runnable.iter_mut() {
            list.submit_and_wait()?;
        }
    }
    let mut times = vec![Vec::with_capacity(repetitions as usize); runnable.len()];
    for _ in 0..repetitions {
        for ((_, list, clock), t) in runnable.iter_mut().zip(&mut times) {
            let start = Instant::now();
            list.submit_and_wait()?;
            t.push(match clock {
                Clock::Gpu => list.total_time()?,
                Clock::Host => start.elapsed(),
            });
        }
    }
    Ok(runnable
        .iter()
        .zip(times)
        .map(|((cfg, _, _), mut t)| {
            t.sort();
            (*cfg, t[t.len() / 2])
        })
        .collect())
}

/// A list timed by GPU timestamps, or an untimed one (and the host's clock) where the queue has
/// none.
fn timing_list(ctx: &Context) -> Result<(CommandList, Clock), vkprism::Error> {
    match CommandList::with_total_timing(ctx) {
        Ok(list) => Ok((list, Clock::Gpu)),
        Err(vkprism::CommandError::NoTimestamps) => Ok((CommandList::new(ctx)?, Clock::Host)),
        Err(e) => Err(e.into()),
    }
}

/// `len` non-zero eighths in [-1, 1] (exact in fp16 and bf16, so every variant multiplies the
/// same numbers), from `seed`.
fn eighths(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = (s >> 40) % 16; // 0 ..= 15
            let v = if v < 8 {
                v as f32 - 8.0
            } else {
                v as f32 - 7.0
            }; // -8..-1, 1..8
            v / 8.0
        })
        .collect()
}

/// The corners of an M×N result and 60 points spread over it.
fn samples(m: usize, n: usize) -> Vec<(usize, usize)> {
    let mut points = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    points.extend((0..60usize).map(|s| ((s * 7919 + 13) % m, (s * 104_729 + 7) % n)));
    points
}

/// The sampled-output check's bound, relative to the sum of |products|: the variant's rounding
/// of the stored result, with room (the point is to catch a wrong configuration, not to grade
/// precision).
fn tolerance(variant: &VariantInfo) -> f64 {
    if variant.key.float == FloatMode::Fp32 {
        1e-4
    } else {
        1e-2
    }
}

/// Checks sampled elements of C (M×N) against an f64 dot product over `a_at(i, l) · b_at(l, j)`.
fn check_float(
    c: &[f32],
    m: usize,
    n: usize,
    k: usize,
    a_at: &dyn Fn(usize, usize) -> f32,
    b_at: &dyn Fn(usize, usize) -> f32,
    tol: f64,
) -> Result<(), String> {
    for (i, j) in samples(m, n) {
        let (mut want, mut scale) = (0f64, 0f64);
        for l in 0..k {
            let p = a_at(i, l) as f64 * b_at(l, j) as f64;
            want += p;
            scale += p.abs();
        }
        let got = c[i * n + j] as f64;
        // NaN (the poison) fails too.
        let within = (got - want).abs() <= tol * scale.max(1.0);
        if !within {
            return Err(format!("C[{i}][{j}] = {got}, want {want}"));
        }
    }
    Ok(())
}
