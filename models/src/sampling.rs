//! [`Sampler`]: the next token drawn from a step's logits as `transformers`' `generate` draws
//! it with `do_sample`: the logits divided by the temperature, cut to the `top_k` largest,
//! then to the smallest set of the largest whose probabilities reach `top_p`, and one token
//! drawn from what is left in proportion to its probability. Its draws come from a generator
//! seeded by the caller, so a seed gives the same tokens every run.

use crate::weights::SplitMix;
use crate::ModelError;

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

    /// How it draws.
    pub fn sampling(&self) -> Sampling {
        self.how
    }

    /// The next token from one row of logits (a NaN counts as the least likely).
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        if self.how.is_greedy() {
            return crate::reference::argmax(logits);
        }
        let kept = self.candidates(logits);
        let total: f64 = kept.iter().map(|(_, p)| p).sum();
        let mut left = self.rng.unit() * total;
        for &(token, p) in &kept {
            left -= p;
            if left < 0.0 {
                return token;
            }
        }
        kept.last().map_or(0, |&(token, _)| token)
    }

    /// The tokens left after `top_k` and `top_p`, each with its unnormalized probability at
    /// the temperature, in the order a draw walks them: most likely first (the lower index on
    /// ties) where a top-k or top-p cut them, every token in index order where nothing did. A
    /// cut sorts only as many of the most likely as it needs (a vocabulary's sort would take
    /// longer than a decode step).
    fn candidates(&self, logits: &[f32]) -> Vec<(u32, f64)> {
        let mut order: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, if l.is_nan() { f32::NEG_INFINITY } else { l }))
            .collect();
        let Some(&first) = order.iter().min_by(|a, b| by_rank(a, b)) else {
            return Vec::new();
        };
        if !first.1.is_finite() {
            // No distribution to draw from (every logit -inf, or one +inf): the largest.
            return vec![(first.0, 1.0)];
        }
        if self.how.top_k > 0 && self.how.top_k < order.len() {
            order.select_nth_unstable_by(self.how.top_k - 1, by_rank);
            order.truncate(self.how.top_k);
            order.sort_unstable_by(by_rank);
        }
        // Exponentials in f32 (a vocabulary's worth each draw), sums in f64.
        let (best, inv_t) = (first.1, 1.0 / self.how.temperature);
        let weight = |l: f32| ((l - best) * inv_t).exp() as f64;
        if self.how.top_p >= 1.0 {
            return order.iter().map(|&(i, l)| (i, weight(l))).collect();
        }
        let total: f64 = order.iter().map(|&(_, l)| weight(l)).sum();
        let wanted = self.how.top_p as f64 * total;
        let mut sorted = order.len().min(64);
        loop {
            if sorted < order.len() {
                order.select_nth_unstable_by(sorted - 1, by_rank);
            }
            order[..sorted].sort_unstable_by(by_rank);
            let mut reached = 0.0;
            let kept = order[..sorted].iter().position(|&(_, l)| {
                reached += weight(l);
                reached >= wanted
            });
            if kept.is_some() || sorted == order.len() {
                let keep = kept.map_or(sorted, |i| i + 1);
                return order[..keep].iter().map(|&(i, l)| (i, weight(l))).collect();
            }
            sorted = (4 * sorted).min(order.len());
        }
    }
}

/// Larger logits first, then lower indices.
fn by_rank(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}
