//! [`Sampler`]: the next token drawn from a step's logits as `transformers`' `generate` draws
//! it with `do_sample`: the logits divided by the temperature, cut to the `top_k` largest,
//! then to the smallest set of the largest whose probabilities reach `top_p`, and one token
//! drawn from what is left in proportion to its probability (walking the tokens left in index
//! order). Its draws come from a generator seeded by the caller, so a seed gives the same
//! tokens every run. The decoder draws on the GPU instead ([`Sampling::gpu_draw`]: the same
//! cuts, the same distribution, by the Gumbel-max trick), seeded by this generator
//! ([`Sampler::next_seed`]): other tokens than [`Sampler::sample`]'s for the same seed.

use crate::weights::SplitMix;
use crate::ModelError;
use vkprism_shaders::Draw;

/// How to draw tokens: [`Sampling::default`] draws from the whole distribution at temperature 1.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Sampling {
    /// What the logits are divided by: below 1 sharpens the distribution, above flattens it;
    /// 0 takes the largest logit (greedy decoding).
    pub temperature: f32,
    /// Only the `top_k` most likely tokens are drawn from (0: all of them).
    pub top_k: usize,
    /// Only the most likely tokens whose probabilities add up to `top_p` are drawn from (at
    /// least one; 1: all of them).
    pub top_p: f32,
    /// The generator's seed.
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
        }
    }
}

impl Sampling {
    /// Greedy decoding: the largest logit every step.
    pub fn greedy() -> Sampling {
        Sampling {
            temperature: 0.0,
            ..Sampling::default()
        }
    }

    /// Whether every draw is the largest logit (temperature 0 or a top-k of 1).
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0 || self.top_k == 1
    }

    /// The draw the GPU makes as this says ([`vkprism_shaders::Ops::sample`]), so that only
    /// the token is read back; `None` where it is greedy.
    pub fn gpu_draw(&self) -> Option<Draw> {
        (!self.is_greedy()).then(|| {
            Draw::new(self.temperature)
                .with_top_k(self.top_k)
                .with_top_p(self.top_p)
        })
    }
}

/// Draws tokens from logits as its [`Sampling`] says.
pub struct Sampler {
    how: Sampling,
    rng: SplitMix,
}

impl Sampler {
    /// A sampler drawing as `how` says, or [`ModelError::Sampling`] where `how` asks for no
    /// distribution (a temperature below 0 or not finite, `top_p` outside (0, 1]).
    pub fn new(how: Sampling) -> Result<Sampler, ModelError> {
        if !(how.temperature >= 0.0 && how.temperature.is_finite()) {
            return Err(ModelError::Sampling(format!(
                "temperature {} is not a finite value of at least 0",
                how.temperature
            )));
        }
        if !(how.top_p > 0.0 && how.top_p <= 1.0) {
            return Err(ModelError::Sampling(format!(
                "top_p {} is not in (0, 1]",
                how.top_p
            )));
        }
        Ok(Sampler {
            how,
            rng: SplitMix::new(how.seed),
        })
    }

    /// A sampler that takes the largest logit every step.
    pub fn greedy() -> Sampler {
        Sampler {
            how: Sampling::greedy(),
            rng: SplitMix::new(0),
        }
    }

    /// How it draws.
    pub fn sampling(&self) -> Sampling {
        self.how
    }

    /// The seed of the next draw made elsewhere (on the GPU), from this sampler's generator.
    pub fn next_seed(&mut self) -> u64 {
        self.rng.next()
    }

    /// The next token from one row of logits (a NaN counts as the least likely).
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        if self.how.is_greedy() {
            return crate::reference::argmax(logits);
        }
        let weights = self.weights(logits);
        let total: f64 = weights.iter().map(|&w| w as f64).sum();
        let mut left = self.rng.unit() * total;
        let mut last = 0;
        for (token, &w) in weights.iter().enumerate().filter(|(_, &w)| w > 0.0) {
            left -= w as f64;
            last = token as u32;
            if left < 0.0 {
                break;
            }
        }
        last
    }

    /// Each token's unnormalized probability at the temperature, 0 where `top_k` or `top_p`
    /// cut it or where it weighs under e⁻³⁰ (~10⁻¹³) of the most likely, left out without an
    /// exponential (most of a trained model's vocabulary). Cuts select without sorting: a flat
    /// distribution's nucleus sorted would take longer than a decode step.
    fn weights(&self, logits: &[f32]) -> Vec<f32> {
        let logit = |x: f32| if x.is_nan() { f32::NEG_INFINITY } else { x };
        let (top, best) = logits
            .iter()
            .enumerate()
            .map(|(i, &x)| (i as u32, logit(x)))
            .min_by(by_rank)
            .unwrap_or((0, 0.0));
        if !best.is_finite() {
            // No distribution to draw from (every logit -inf, or one +inf): the largest.
            let mut only = vec![0.0; logits.len()];
            if let Some(w) = only.get_mut(top as usize) {
                *w = 1.0;
            }
            return only;
        }
        let t = self.how.temperature;
        let floor = best - 30.0 * t;
        let weight = |x: f32| {
            if x < floor {
                0.0
            } else {
                ((x - best) / t).exp()
            }
        };
        if self.how.top_k == 0 && self.how.top_p >= 1.0 {
            return logits.iter().map(|&x| weight(logit(x))).collect();
        }
        // (token, logit) of every token that weighs anything; after the top-k cut, (token,
        // weight), which ranks as the logits do.
        let mut order: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &x)| (i as u32, logit(x)))
            .filter(|&(_, x)| x >= floor)
            .collect();
        if self.how.top_k > 0 && self.how.top_k < order.len() {
            order.select_nth_unstable_by(self.how.top_k - 1, by_rank);
            order.truncate(self.how.top_k);
        }
        for token in &mut order {
            token.1 = weight(token.1);
        }
        let kept = match self.how.top_p < 1.0 {
            true => nucleus(&mut order, self.how.top_p),
            false => order.len(),
        };
        let mut weights = vec![0.0; logits.len()];
        for &(i, w) in &order[..kept] {
            weights[i as usize] = w;
        }
        weights
    }
}

/// How many of the most likely of `items` (token, weight) it takes for their weights to reach
/// `top_p` of all of theirs (at least one); those moved to the front, in no order. A selection
/// that halves the range it looks in each round: linear time.
fn nucleus(items: &mut [(u32, f32)], top_p: f32) -> usize {
    let sum = |part: &[(u32, f32)]| part.iter().map(|&(_, w)| w as f64).sum::<f64>();
    let wanted = top_p as f64 * sum(items);
    // The answer lies in (lo, hi]; items[..lo] are the lo most likely, weighing `above` (less
    // than wanted), and every item from hi on is less likely than every one before it.
    let (mut lo, mut hi, mut above) = (0, items.len(), 0.0);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        items[lo..hi].select_nth_unstable_by(mid - lo - 1, by_rank);
        let upper = sum(&items[lo..mid]);
        if above + upper >= wanted {
            hi = mid;
        } else {
            above += upper;
            lo = mid;
        }
    }
    hi
}

/// Larger values (logits, or weights, which follow them) first, then lower indices.
fn by_rank(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}
