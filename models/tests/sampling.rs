//! Drawing the next token: `Sampler` on the host against the distributions its temperature,
//! top-k and top-p describe (frequencies over many draws), its seed making draws repeat, bad
//! settings refused; and `Llama::generate` / `generation` on the small configuration: the last
//! token's logits as the prompt's, the GPU's draws against the CPU reference's logits with the
//! same cuts and noise, queued steps against steps run one at a time, the greedy setting equal
//! to `greedy`.

use vkprism::TensorFormat;
use vkprism_models::{
    HostWeights, Llama, LlamaConfig, ModelError, ReferenceLlama, Sampler, Sampling,
};
use vkprism_shaders::reference::{draw_kept_from, gumbel_noise};
use vkprism_testkit::{assert_clean, ctx};

/// Logits whose softmax at temperature 1 is `probs`.
fn logits_of(probs: &[f64]) -> Vec<f32> {
    probs.iter().map(|p| p.ln() as f32).collect()
}

/// How often each token comes out of `draws` draws with `how` from `logits`.
fn frequencies(how: Sampling, logits: &[f32], draws: usize) -> Vec<f64> {
    let mut sampler = Sampler::new(how).unwrap();
    let mut counts = vec![0usize; logits.len()];
    for _ in 0..draws {
        counts[sampler.sample(logits) as usize] += 1;
    }
    counts.iter().map(|&c| c as f64 / draws as f64).collect()
}

/// Each frequency within 0.01 of `want` (20,000 draws: a standard error of 0.0035 at most).
fn assert_frequencies(how: Sampling, logits: &[f32], want: &[f64]) {
    let got = frequencies(how, logits, 20_000);
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.01, "{how:?}: {got:?} against {want:?}");
    }
}

#[test]
fn draws_follow_the_distribution_each_setting_describes() {
    // Token 2 the most likely, then 0, 3, 1.
    let logits = logits_of(&[0.25, 0.1, 0.5, 0.15]);
    let all = Sampling {
        seed: 1,
        ..Sampling::default()
    };
    assert_frequencies(all, &logits, &[0.25, 0.1, 0.5, 0.15]);
    // Temperature 1/2 squares the probabilities: 0.0625, 0.01, 0.25, 0.0225 of 0.345.
    let sharp = Sampling {
        temperature: 0.5,
        ..all
    };
    let squares = [0.0625, 0.01, 0.25, 0.0225].map(|p| p / 0.345);
    assert_frequencies(sharp, &logits, &squares);
    // The two most likely, renormalized.
    let top2 = Sampling { top_k: 2, ..all };
    assert_frequencies(top2, &logits, &[1.0 / 3.0, 0.0, 2.0 / 3.0, 0.0]);
    // 0.5 + 0.25 reaches 0.7: the same two.
    let nucleus = Sampling { top_p: 0.7, ..all };
    assert_frequencies(nucleus, &logits, &[1.0 / 3.0, 0.0, 2.0 / 3.0, 0.0]);
    // 0.5 alone reaches 0.5: only token 2; and the greedy settings.
    for how in [
        Sampling { top_p: 0.5, ..all },
        Sampling { top_k: 1, ..all },
        Sampling::greedy(),
    ] {
        assert_frequencies(how, &logits, &[0.0, 0.0, 1.0, 0.0]);
    }
}

#[test]
fn a_seed_repeats_its_draws_and_odd_logits_draw_the_largest() {
    let logits = logits_of(&[0.3, 0.3, 0.2, 0.2]);
    let how = |seed| Sampling {
        seed,
        ..Sampling::default()
    };
    let draws = |seed| {
        let mut s = Sampler::new(how(seed)).unwrap();
        (0..64).map(|_| s.sample(&logits)).collect::<Vec<u32>>()
    };
    assert_eq!(draws(7), draws(7));
    assert_ne!(draws(7), draws(8));
    let mut s = Sampler::new(how(3)).unwrap();
    let inf = f32::INFINITY;
    assert_eq!(s.sample(&[-inf, -inf, -inf]), 0);
    assert_eq!(s.sample(&[0.0, inf, 1.0]), 1);
    // NaN counts as the least likely.
    for _ in 0..32 {
        assert_ne!(s.sample(&[f32::NAN, 5.0, 5.0]), 0);
    }
}

#[test]
fn settings_with_no_distribution_are_refused() {
    for (how, needle) in [
        (-0.5, "temperature"),
        (f32::NAN, "temperature"),
        (f32::INFINITY, "temperature"),
    ]
    .map(|(t, n)| {
        (
            Sampling {
                temperature: t,
                ..Sampling::default()
            },
            n,
        )
    })
    .into_iter()
    .chain([0.0, 1.5, f32::NAN].map(|p| {
        (
            Sampling {
                top_p: p,
                ..Sampling::default()
            },
            "top_p",
        )
    })) {
        let err = Sampler::new(how).err().unwrap();
        assert!(matches!(err, ModelError::Sampling(_)), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }
}

/// `next_logits` is the prompt's last row; `generate` greedy is `greedy`; a stop token ends
/// it; past the cache it is refused and the model still runs.
#[test]
fn generate_ends_at_a_stop_token_and_past_the_cache_is_refused() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, 9);
    let mut model = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    let prompt = [1u32, 40, 7, 300];
    // The last token's logits are the prompt's last row (a GEMV's sums against a GEMM's).
    let last = model.next_logits(&prompt).unwrap();
    model.reset();
    let every = model.prefill(&prompt).unwrap();
    let err = last
        .iter()
        .zip(every.last())
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(err <= 1e-5, "largest difference {err:e}");
    let how = Sampling {
        temperature: 0.8,
        top_k: 40,
        top_p: 0.95,
        seed: 11,
    };
    let greedy = model.greedy(&prompt, 6).unwrap();
    let mut sampler = Sampler::greedy();
    assert_eq!(model.generate(&prompt, 6, &mut sampler).unwrap(), greedy);
    // Ending at a stop token: the greedy tokens up to its first one, then the same after it
    // was not asked for.
    let stop = greedy[2];
    let first = greedy.iter().position(|&t| t == stop).unwrap();
    let until = model
        .generate_until(&prompt, 6, &mut Sampler::greedy(), &[9999, stop])
        .unwrap();
    assert_eq!(until, greedy[..=first]);
    assert_eq!(model.greedy(&prompt, 6).unwrap(), greedy);
    // Past the cache: refused, and the model still runs.
    let err = model
        .generate(&prompt, cfg.max_seq, &mut Sampler::new(how).unwrap())
        .err()
        .unwrap();
    assert!(matches!(err, ModelError::SequenceTooLong { .. }), "{err}");
    assert_eq!(model.greedy(&prompt, 6).unwrap(), greedy);
    assert_clean(&ctx);
}

/// The nucleus of `logits` as a full sort finds it: the most likely tokens (lower index on
/// ties) until their probabilities reach `top_p`.
fn nucleus(logits: &[f32], top_p: f64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..logits.len() as u32).collect();
    order.sort_by(|&a, &b| {
        logits[b as usize]
            .total_cmp(&logits[a as usize])
            .then(a.cmp(&b))
    });
    let best = logits[order[0] as usize] as f64;
    let weights: Vec<f64> = order
        .iter()
        .map(|&i| (logits[i as usize] as f64 - best).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut reached = 0.0;
    let keep = weights
        .iter()
        .position(|w| {
            reached += w;
            reached >= top_p * total
        })
        .unwrap()
        + 1;
    order.truncate(keep);
    order
}

#[test]
fn cuts_over_a_whole_vocabulary_keep_what_a_full_sort_keeps() {
    let logits: Vec<f32> = (0..32000).map(|i| ((i as f32) * 0.7).sin() * 2.0).collect();
    for top_p in [0.3, 0.9] {
        // Hundreds to thousands of tokens: past the first sorted 64, several rounds.
        let want = nucleus(&logits, top_p);
        assert!(want.len() > 256, "{}", want.len());
        let how = Sampling {
            top_p: top_p as f32,
            seed: 5,
            ..Sampling::default()
        };
        let got = frequencies(how, &logits, 500);
        let drawn: Vec<usize> = (0..got.len()).filter(|&i| got[i] > 0.0).collect();
        let kept: std::collections::HashSet<usize> = want.iter().map(|&i| i as usize).collect();
        assert!(drawn.iter().all(|i| kept.contains(i)), "top_p {top_p}");
        assert!(
            drawn.len() > want.len().min(500) / 4,
            "{} drawn",
            drawn.len()
        );
    }
    let top = Sampling {
        top_k: 100,
        seed: 6,
        ..Sampling::default()
    };
    let got = frequencies(top, &logits, 500);
    let hundred: std::collections::HashSet<u32> =
        nucleus(&logits, 1.0)[..100].iter().copied().collect();
    assert!((0..got.len()).all(|i| got[i] == 0.0 || hundred.contains(&(i as u32))));
}

/// Draws are made on the GPU: each token among those the cuts keep of the CPU reference's
/// logits over the temperature and the largest of them plus the Gumbel noise of the seed the
/// sampler's generator gives (within the two sides' rounding: the cuts taken 1e-3 wider and
/// narrower in logit and share, the model's token fed to both); the same seed the same tokens,
/// another seed others; each setting's draws after another's in the same model.
#[test]
fn draws_are_made_on_the_gpu() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, 9);
    let mut model = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    let prompt = [1u32, 40, 7, 300];
    let mut reference = ReferenceLlama::new(&cfg, &weights);
    let settings = [
        (0.8f32, 0, 1.0f32),
        (1.7, 0, 1.0),
        (0.8, 40, 0.95),
        (1.2, 0, 0.6),
    ];
    for (temperature, top_k, top_p) in settings {
        let how = Sampling {
            temperature,
            top_k,
            top_p,
            seed: 11,
        };
        assert!(how.gpu_draw().is_some());
        let got = model
            .generate(&prompt, 12, &mut Sampler::new(how).unwrap())
            .unwrap();
        let mut seeds = Sampler::new(how).unwrap();
        reference.reset();
        let mut next = prompt.to_vec();
        for (i, &token) in got.iter().enumerate() {
            let logits = reference.forward(&next);
            let v: Vec<f32> = logits
                .last()
                .unwrap()
                .iter()
                .map(|x| x / temperature)
                .collect();
            let seed = seeds.next_seed();
            let top_p = top_p as f64;
            let wide = draw_kept_from(&v, top_k, (top_p + 1e-3).min(1.0)) - 1e-3;
            let narrow = draw_kept_from(&v, top_k, top_p - 1e-3) + 1e-3;
            let noised = |j: usize| v[j] as f64 + gumbel_noise(j as u32, seed);
            let best = (0..v.len())
                .filter(|&j| v[j] >= narrow)
                .map(noised)
                .fold(f64::NEG_INFINITY, f64::max);
            let what = format!("{how:?} token {i}: {token}");
            assert!(v[token as usize] >= wide, "{what} not kept");
            assert!(noised(token as usize) >= best - 1e-3, "{what} below {best}");
            next = vec![token];
        }
        let again = model
            .generate(&prompt, 12, &mut Sampler::new(how).unwrap())
            .unwrap();
        assert_eq!(again, got, "{how:?}: the same seed, the same tokens");
        let other = Sampling { seed: 12, ..how };
        let other = model
            .generate(&prompt, 12, &mut Sampler::new(other).unwrap())
            .unwrap();
        assert_ne!(other, got, "{how:?}: another seed, other tokens");
    }
    assert!(Sampling::greedy().gpu_draw().is_none());
    assert!(Sampling {
        top_k: 1,
        ..Sampling::default()
    }
    .gpu_draw()
    .is_none());
    assert_clean(&ctx);
}

/// `generation` queues the decode steps where the GPU chooses the token (greedy, a draw at a
/// temperature alone): the same tokens as steps run one at a time (`sample_next`), the same
/// draws for the same seed, ending at a stop token with the model's position at the last
/// token handed over and the model usable after it; and across a span of recorded lists.
#[test]
fn queued_generation_equals_steps_run_one_at_a_time() {
    let ctx = ctx();
    let cfg = LlamaConfig::small().with_max_seq(vkprism_models::DECODE_SPAN + 32);
    let weights = HostWeights::random(&cfg, 9);
    let mut model = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    // A prompt ending 8 positions before the first span of recorded decode lists ends.
    let prompt: Vec<u32> = (0..vkprism_models::DECODE_SPAN as u32 - 8)
        .map(|i| (i * 37 + 5) % cfg.vocab as u32)
        .collect();
    let one_at_a_time = |model: &mut Llama, how: Sampling, n: usize| {
        let mut sampler = Sampler::new(how).unwrap();
        model.reset();
        let mut next = prompt.to_vec();
        let mut out = Vec::new();
        for _ in 0..n {
            let token = model.sample_next(&next, &mut sampler).unwrap();
            out.push(token);
            next = vec![token];
        }
        out
    };
    let n = 20;
    for how in [
        Sampling::greedy(),
        Sampling {
            temperature: 0.9,
            seed: 3,
            ..Sampling::default()
        },
        Sampling {
            temperature: 0.9,
            top_k: 20,
            seed: 3,
            ..Sampling::default()
        },
    ] {
        let want = one_at_a_time(&mut model, how, n);
        let mut sampler = Sampler::new(how).unwrap();
        let got: Vec<u32> = model
            .generation(&prompt, n, &mut sampler, &[])
            .unwrap()
            .map(|g| g.unwrap().token)
            .collect();
        assert_eq!(got, want, "{how:?}");
        assert_eq!(model.position(), prompt.len() + n - 1, "{how:?}");
        // Ending at a stop token: the tokens up to it, the position at it.
        let stop = [want[5]];
        let first = want.iter().position(|t| *t == want[5]).unwrap();
        let mut sampler = Sampler::new(how).unwrap();
        let mut generation = model.generation(&prompt, n, &mut sampler, &stop).unwrap();
        let until: Vec<u32> = generation.by_ref().map(|g| g.unwrap().token).collect();
        assert!(generation.next().is_none());
        drop(generation);
        assert_eq!(until, want[..=first], "{how:?}");
        assert_eq!(model.position(), prompt.len() + first, "{how:?}");
        // The next step runs the stop token at that position, as one run one at a time would.
        let mut sampler = Sampler::new(how).unwrap();
        let mut generation = model.generation(&prompt, 3, &mut sampler, &[]).unwrap();
        let first_two: Vec<u32> = generation
            .by_ref()
            .take(2)
            .map(|g| g.unwrap().token)
            .collect();
        drop(generation);
        assert_eq!(first_two, want[..2], "{how:?}: dropped early");
        assert_eq!(
            model.greedy(&prompt, 4).unwrap(),
            one_at_a_time(&mut model, Sampling::greedy(), 4)
        );
    }
    assert_clean(&ctx);
}
