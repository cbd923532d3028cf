//! The decoder on the small configuration with random weights, against the CPU reference in
//! every float format the device runs, under the validation layer: prefill logits at every
//! position, greedy tokens (F32) or per-step logits (F16, Bf16), the safetensors round trip,
//! and every bad input refused with the model still usable.

use safetensors::tensor::TensorView;
use safetensors::Dtype;
use vkprism::{Context, TensorFormat};
use vkprism_models::reference::argmax;
use vkprism_models::{
    HostWeights, Llama, LlamaConfig, ModelError, ReferenceLlama, RopeScaling, SafetensorsFile,
    WeightStorage, DECODE_SPAN,
};
use vkprism_shaders::OpError;
use vkprism_testkit::{assert_clean, ctx};

const PROMPT: [u32; 7] = [1, 17, 300, 42, 511, 5, 99];
const SEED: u64 = 21;

/// The largest error of `got` against `want`, relative to the logits' scale (their largest
/// magnitude, at least 1): fp16 rounds each value relative to its magnitude, and logits near 0
/// carry the error of sums of large terms.
fn max_error(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            if g.is_finite() {
                (g - w).abs() / scale
            } else {
                f32::INFINITY
            }
        })
        .fold(0.0, f32::max)
}

/// The tolerance for logits of a model in `format` against the f64 reference on the same
/// (rounded) weights: every intermediate is stored in `format` (a few times what lavapipe's
/// kernels are off by: 1e-6, 1.3e-3 and 1e-2).
fn tolerance(format: TensorFormat) -> f32 {
    match format {
        TensorFormat::F16 => 5e-3,
        TensorFormat::Bf16 => 3e-2,
        _ => 1e-5,
    }
}

/// `got` within `format`'s tolerance of the reference's `want` (the error printed as `what`).
fn assert_logits(format: TensorFormat, what: &str, got: &[f32], want: &[f32]) {
    let err = max_error(got, want);
    eprintln!("{format:?} {what}: error {err:.2e}");
    assert!(
        err <= tolerance(format),
        "{format:?} {what}: error {err:.2e}"
    );
}

/// The model in `format` on random weights, or `None` where the device runs no variant of
/// that format (said on stderr).
fn model(ctx: &Context, weights: &HostWeights, format: TensorFormat) -> Option<Llama> {
    model_stored(
        ctx,
        &LlamaConfig::small(),
        weights,
        format,
        WeightStorage::Float,
    )
}

/// [`model`] of `cfg` with the projections stored as `storage` says.
fn model_stored(
    ctx: &Context,
    cfg: &LlamaConfig,
    weights: &HostWeights,
    format: TensorFormat,
    storage: WeightStorage,
) -> Option<Llama> {
    let mut m = Llama::with_storage(ctx, cfg, weights, format, storage).unwrap();
    match m.prefill(&[0]) {
        Ok(_) => {
            m.reset();
            Some(m)
        }
        Err(ModelError::Op(e @ OpError::FormatUnsupported { .. })) => {
            eprintln!("{format:?}: left out, {e}");
            None
        }
        Err(e) => panic!("{format:?}: {e}"),
    }
}

/// Prefill of `prompt`: the logits at every position within `format`'s tolerance of the
/// reference's.
fn check_prefill(format: TensorFormat, prompt: &[u32]) {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let Some(mut m) = model(&ctx, &weights, format) else {
        return;
    };
    let rounded = weights.rounded(format);
    let want = ReferenceLlama::new(&cfg, &rounded).forward(prompt);
    let got = m.prefill(prompt).unwrap();
    assert_eq!(got.rows(), prompt.len());
    assert_eq!(m.position(), prompt.len());
    for (i, w) in want.iter().enumerate() {
        assert_logits(format, &format!("prefill position {i}"), got.row(i), w);
    }
    assert_clean(&ctx);
}

/// A prompt with rows enough for the matrix kernels (attention on cooperative matrices takes
/// 16 query rows or more, where the device has them): 40 tokens.
fn long_prompt() -> Vec<u32> {
    (0..40).map(|i| (i * 37 + 3) % 512).collect()
}

/// A prompt in two chunks, the second after 300 positions: where the device has matrices, both
/// chunks' attention splits each block's keys between workgroups (few blocks over many keys).
#[test]
fn a_prompt_chunk_after_a_long_prefix_matches_reference() {
    let ctx = ctx();
    let cfg = LlamaConfig::small().with_max_seq(384);
    let weights = HostWeights::random(&cfg, SEED);
    let format = TensorFormat::F16;
    let Some(mut m) = model_stored(&ctx, &cfg, &weights, format, WeightStorage::Float) else {
        return;
    };
    let prompt: Vec<u32> = (0..340).map(|i| (i * 37 + 3) % 512).collect();
    let rounded = weights.rounded(format);
    let want = ReferenceLlama::new(&cfg, &rounded).forward(&prompt);
    let first = m.prefill(&prompt[..300]).unwrap();
    assert_logits(format, "prefix's last position", first.row(299), &want[299]);
    let chunk = m.prefill(&prompt[300..]).unwrap();
    assert_eq!(m.position(), prompt.len());
    for (i, w) in want[300..].iter().enumerate() {
        assert_logits(format, &format!("chunk position {i}"), chunk.row(i), w);
    }
    assert_clean(&ctx);
}

#[test]
fn prefill_f32() {
    check_prefill(TensorFormat::F32, &PROMPT);
}

#[test]
fn prefill_f16() {
    check_prefill(TensorFormat::F16, &PROMPT);
}

#[test]
fn prefill_bf16() {
    check_prefill(TensorFormat::Bf16, &PROMPT);
}

#[test]
fn prefill_f16_long_prompt() {
    check_prefill(TensorFormat::F16, &long_prompt());
}

/// Eight greedy tokens after the prompt: in F32 the reference's tokens exactly.
#[test]
fn greedy_f32_matches_reference() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let mut m = model(&ctx, &weights, TensorFormat::F32).unwrap();
    let want = ReferenceLlama::new(&cfg, &weights).greedy(&PROMPT, 8);
    let got = m.greedy(&PROMPT, 8).unwrap();
    eprintln!("greedy: {got:?}");
    assert_eq!(got, want);
    assert_eq!(m.position(), PROMPT.len() + 7);
    assert_clean(&ctx);
}

/// Llama 3's scaled rotary embedding (base 500000; bounds that put the small configuration's
/// heads of 64 in all three bands): a 40-token prompt's logits at every position and four
/// decode steps' against the reference's in every float format the device runs, with float and
/// int8 projections, the reference itself moved by the scaling.
#[test]
fn llama3_scaled_rotary_embedding_matches_reference() {
    let ctx = ctx();
    let scaling = RopeScaling::Llama3 {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_positions: 32,
    };
    let plain = LlamaConfig::small().with_rope(500000.0, RopeScaling::None);
    let cfg = plain.with_rope(500000.0, scaling);
    let weights = HostWeights::random(&cfg, SEED);
    let prompt = long_prompt();
    let unscaled = ReferenceLlama::new(&plain, &weights).forward(&prompt);
    let scaled = ReferenceLlama::new(&cfg, &weights).forward(&prompt);
    let moved = max_error(&scaled[prompt.len() - 1], &unscaled[prompt.len() - 1]);
    assert!(
        moved > 1e-2,
        "the scaling moves the logits by {moved:.2e} only"
    );
    check_every_storage(&ctx, &cfg, &weights, "llama3");
    assert_clean(&ctx);
}

/// A 40-token prompt's logits and four decode steps' of `cfg` on `weights` against the
/// reference's, in every float format the device runs, with float and int8 projections.
fn check_every_storage(ctx: &Context, cfg: &LlamaConfig, weights: &HostWeights, what: &str) {
    let prompt = long_prompt();
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        for storage in [WeightStorage::Float, WeightStorage::Int8] {
            let Some(mut m) = model_stored(ctx, cfg, weights, format, storage) else {
                continue;
            };
            let held = match storage {
                WeightStorage::Float => weights.rounded(format),
                _ => weights.int8_rounded(cfg, format).unwrap(),
            };
            let mut reference = ReferenceLlama::new(cfg, &held);
            let want = reference.forward(&prompt);
            let got = m.prefill(&prompt).unwrap();
            let what = format!("{what} {storage:?}");
            for (i, w) in want.iter().enumerate() {
                assert_logits(format, &format!("{what} prefill {i}"), got.row(i), w);
            }
            for (step, token) in [7u32, 300, 12, 499].iter().enumerate() {
                let want = reference.forward(&[*token]).pop().unwrap();
                let got = m.decode(*token).unwrap();
                assert_logits(format, &format!("{what} decode step {step}"), &got, &want);
            }
        }
    }
}

/// Heads of their own size (`head_dim` 96 over hidden 256 and 4 heads: the query projection
/// 384 wide, as Mistral Nemo's 128 over 5120 and 32): a 40-token prompt's logits and four
/// decode steps' against the reference's in every float format the device runs, with float and
/// int8 projections.
#[test]
fn heads_of_their_own_size_match_reference() {
    let ctx = ctx();
    let mut cfg = LlamaConfig::small();
    cfg.head_dim = 96;
    assert!(cfg.problem().is_none());
    let weights = HostWeights::random(&cfg, SEED);
    assert_eq!(
        weights
            .get("model.layers.0.self_attn.o_proj.weight")
            .unwrap()
            .len(),
        256 * 384
    );
    check_every_storage(&ctx, &cfg, &weights, "head_dim 96");
    assert_clean(&ctx);
}

/// Qwen2's biases on the query, key and value projections, and its groups of 7 query heads to a
/// key/value head: a 40-token prompt's logits and four decode steps' against the reference's in
/// every float format the device runs, with float and int8 projections (the biases in the
/// activations' format either way), the reference itself moved by the biases.
#[test]
fn qkv_biases_match_reference() {
    let ctx = ctx();
    let mut plain = LlamaConfig::small();
    (plain.hidden, plain.heads, plain.kv_heads) = (448, 7, 1);
    let cfg = plain.with_qkv_bias(true);
    let weights = HostWeights::random(&cfg, SEED);
    let prompt = long_prompt();
    let last = prompt.len() - 1;
    let unbiased = ReferenceLlama::new(&plain, &weights).forward(&prompt);
    let biased = ReferenceLlama::new(&cfg, &weights).forward(&prompt);
    let moved = max_error(&biased[last], &unbiased[last]);
    assert!(
        moved > 1e-2,
        "the biases move the logits by {moved:.2e} only"
    );
    check_every_storage(&ctx, &cfg, &weights, "biased");
    assert_clean(&ctx);
}

/// Qwen3's norms of each query and key head before it turns, on heads wider than the stream
/// (128 over hidden 256 and 4 heads, as Qwen3 0.6B's 128 over 1024 and 16): a 40-token prompt's
/// logits and four decode steps' against the reference's in every float format the device
/// runs, with float and int8 projections (the norms' weights in the activations' format either
/// way), the reference itself moved by the norms.
#[test]
fn heads_norms_match_reference() {
    let ctx = ctx();
    let mut plain = LlamaConfig::small();
    plain.head_dim = 128;
    let cfg = plain.with_qk_norm(true);
    let weights = HostWeights::random(&cfg, SEED);
    let prompt = long_prompt();
    let last = prompt.len() - 1;
    let unnormed = ReferenceLlama::new(&plain, &weights).forward(&prompt);
    let normed = ReferenceLlama::new(&cfg, &weights).forward(&prompt);
    let moved = max_error(&normed[last], &unnormed[last]);
    assert!(
        moved > 1e-2,
        "the norms move the logits by {moved:.2e} only"
    );
    check_every_storage(&ctx, &cfg, &weights, "heads normed");
    assert_clean(&ctx);
}

/// Decoding token by token (the reference's greedy tokens fed to both): each step's logits
/// within `format`'s tolerance of the reference's, and the GPU's argmax of them the token the
/// logits name.
fn check_decode(format: TensorFormat) {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let Some(mut m) = model(&ctx, &weights, format) else {
        return;
    };
    let rounded = weights.rounded(format);
    let mut reference = ReferenceLlama::new(&cfg, &rounded);
    let tokens = ReferenceLlama::new(&cfg, &rounded).greedy(&PROMPT, 8);
    let first = m.prefill(&PROMPT).unwrap();
    let want = reference.forward(&PROMPT).pop().unwrap();
    assert!(max_error(first.last(), &want) <= tolerance(format));
    let mut steps = vec![(tokens[0], first.last().to_vec())];
    for (step, token) in tokens[..7].iter().enumerate() {
        let got = m.decode(*token).unwrap();
        steps.push((tokens[step + 1], got.clone()));
        let want = reference.forward(&[*token]).pop().unwrap();
        assert_logits(format, &format!("decode step {step}"), &got, &want);
    }
    assert_eq!(m.position(), PROMPT.len() + 7);
    check_gpu_argmax(&mut m, &mut steps);
    assert_clean(&ctx);
}

/// Greedy generation (the GPU's argmax) follows the model's own logits: each token the largest
/// of the logits the model gave for the token before, as long as the tokens agree with those
/// fed in `steps` (the reference's tokens and the model's logits after each).
fn check_gpu_argmax(m: &mut Llama, steps: &mut [(u32, Vec<f32>)]) {
    let greedy = m.greedy(&PROMPT, steps.len()).unwrap();
    for (i, (token, logits)) in steps.iter().enumerate() {
        assert_eq!(greedy[i], argmax(logits), "greedy token {i}");
        if greedy[i] != *token {
            eprintln!("greedy leaves the reference's tokens at {i}");
            break;
        }
    }
}

#[test]
fn decode_f32() {
    check_decode(TensorFormat::F32);
}

#[test]
fn decode_f16() {
    check_decode(TensorFormat::F16);
}

#[test]
fn decode_bf16() {
    check_decode(TensorFormat::Bf16);
}

/// Int8 projections (one scale per row) with activations in `format`, on a configuration whose
/// embedding is tied (the output projection quantized from it): the prompt's logits at every
/// position and seven decode steps' within `format`'s tolerance of the reference on the
/// weights as the quantization holds them, the weights' memory below a float model's.
fn check_int8(format: TensorFormat) {
    let ctx = ctx();
    let cfg = LlamaConfig::small().with_tied_embeddings(true);
    let weights = HostWeights::random(&cfg, SEED);
    let Some(mut m) = model_stored(&ctx, &cfg, &weights, format, WeightStorage::Int8) else {
        return;
    };
    assert_eq!(m.storage(), WeightStorage::Int8);
    let rounded = weights.int8_rounded(&cfg, format).unwrap();
    let mut reference = ReferenceLlama::new(&cfg, &rounded);
    let tokens = ReferenceLlama::new(&cfg, &rounded).greedy(&PROMPT, 8);
    // A prompt asked only for its next token (the output layer a GEMV over its last row), then
    // the steps after it; then the same prompt's every logit (activations made anew: the
    // output layer a GEMM, its weights dequantized into a larger scratch).
    assert_eq!(m.greedy(&PROMPT, 8).unwrap(), tokens, "int8 greedy tokens");
    m.reset();
    let got = m.prefill(&PROMPT).unwrap();
    // Activations made for every logit serve a prompt asked for its next token too.
    assert_eq!(
        m.greedy(&PROMPT, 2).unwrap(),
        tokens[..2],
        "int8 greedy after prefill"
    );
    m.reset();
    assert_eq!(m.prefill(&PROMPT).unwrap(), got, "int8 prefill again");
    for (i, want) in reference.forward(&PROMPT).iter().enumerate() {
        assert_logits(
            format,
            &format!("int8 prefill position {i}"),
            got.row(i),
            want,
        );
    }
    for (step, token) in tokens[..7].iter().enumerate() {
        let got = m.decode(*token).unwrap();
        let want = reference.forward(&[*token]).pop().unwrap();
        assert_logits(format, &format!("int8 decode step {step}"), &got, &want);
    }
    // Against the float weights the error is the quantization's: in F32 far past the
    // tolerance, so the check above tells int8 weights from float ones.
    let float = ReferenceLlama::new(&cfg, &weights.rounded(format)).forward(&PROMPT);
    let quantization = max_error(got.last(), float.last().unwrap());
    eprintln!("{format:?} int8 against float weights: error {quantization:.2e}");
    if format == TensorFormat::F32 {
        assert!(
            quantization > 10.0 * tolerance(format),
            "{quantization:.2e}"
        );
    }
    let float_model = Llama::new(&ctx, &cfg, &weights, format).unwrap();
    assert!(m.memory().weights < float_model.memory().weights);
    assert_clean(&ctx);
}

#[test]
fn int8_weights_f32() {
    check_int8(TensorFormat::F32);
}

#[test]
fn int8_weights_f16() {
    check_int8(TensorFormat::F16);
}

#[test]
fn int8_weights_bf16() {
    check_int8(TensorFormat::Bf16);
}

/// An int8 prompt asked for its next token holds no room for the output layer's weights
/// dequantized (a GEMV reads them as stored); asked for every logit after that, with as many
/// tokens, it makes activations that do, and its logits are a fresh model's.
#[test]
fn int8_prompt_scratch_follows_the_output_layer() {
    let ctx = ctx();
    // A vocabulary whose output layer is the largest projection.
    let mut cfg = LlamaConfig::small();
    cfg.vocab = 2048;
    let weights = HostWeights::random(&cfg, SEED);
    let int8 = WeightStorage::Int8;
    let f = TensorFormat::F16;
    let Some(mut m) = model_stored(&ctx, &cfg, &weights, f, int8) else {
        return;
    };
    let tokens = m.greedy(&PROMPT, 2).unwrap();
    let last_only = m.memory().activations;
    m.reset();
    let every = m.prefill(&PROMPT).unwrap();
    assert!(m.memory().activations > last_only, "{last_only} bytes then");
    let mut fresh = model_stored(&ctx, &cfg, &weights, f, int8).unwrap();
    assert_eq!(every, fresh.prefill(&PROMPT).unwrap());
    assert_eq!(m.greedy(&PROMPT, 2).unwrap(), tokens);
    assert_clean(&ctx);
}

/// Weights written as safetensors in each float type read back as what that type holds, and a
/// model loaded from the F32 file computes exactly what one given the weights directly does.
#[test]
fn safetensors_round_trip() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let bytes = weights.to_safetensors(format).unwrap();
        let file = SafetensorsFile::parse(&bytes).unwrap();
        assert_eq!(file.names().len(), 3 + 9 * cfg.layers);
        let back = HostWeights::load(&cfg, &file).unwrap();
        assert!(back == weights.rounded(format), "{format:?} file");
    }
    let bytes = weights.to_safetensors(TensorFormat::F32).unwrap();
    let path =
        std::env::temp_dir().join(format!("vkprism-llama-{}.safetensors", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let from_file = Llama::from_file(&ctx, &cfg, &path, TensorFormat::F32);
    std::fs::remove_file(&path).unwrap();
    let mut from_file = from_file.unwrap();
    let mut direct = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    assert_eq!(
        from_file.prefill(&PROMPT).unwrap(),
        direct.prefill(&PROMPT).unwrap()
    );
    assert_clean(&ctx);
}

/// A good model on `ctx` still loads and runs (after a refused load or step).
fn still_usable(ctx: &Context, weights: &HostWeights) {
    let cfg = LlamaConfig::small();
    let mut m = Llama::new(ctx, &cfg, weights, TensorFormat::F32).unwrap();
    let want = ReferenceLlama::new(&cfg, weights).forward(&PROMPT[..3]);
    let got = m.prefill(&PROMPT[..3]).unwrap();
    assert!(max_error(got.last(), want.last().unwrap()) <= tolerance(TensorFormat::F32));
}

#[test]
fn missing_tensor_is_named() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let name = "model.layers.1.mlp.up_proj.weight";
    let bytes = weights
        .without(name)
        .to_safetensors(TensorFormat::F16)
        .unwrap();
    let err = Llama::from_safetensors(&ctx, &cfg, &bytes, TensorFormat::F32)
        .err()
        .unwrap();
    assert!(
        matches!(&err, ModelError::MissingTensor { name: n } if n == name),
        "{err}"
    );
    assert!(err.to_string().contains(name), "{err}");
    still_usable(&ctx, &weights);
    // A file without the biases its configuration asks for (a Qwen2 configuration over a
    // Llama's weights): the first one is named.
    let biased = cfg.with_qkv_bias(true);
    let bytes = weights.to_safetensors(TensorFormat::F16).unwrap();
    let err = Llama::from_safetensors(&ctx, &biased, &bytes, TensorFormat::F32)
        .err()
        .unwrap();
    let bias = "model.layers.0.self_attn.q_proj.bias";
    assert!(
        matches!(&err, ModelError::MissingTensor { name: n } if n == bias),
        "{err}"
    );
    still_usable(&ctx, &weights);
    // Nor the heads' norms a Qwen3 configuration asks for.
    let normed = cfg.with_qk_norm(true);
    let err = Llama::from_safetensors(&ctx, &normed, &bytes, TensorFormat::F32)
        .err()
        .unwrap();
    let norm = "model.layers.0.self_attn.q_norm.weight";
    assert!(
        matches!(&err, ModelError::MissingTensor { name: n } if n == norm),
        "{err}"
    );
    still_usable(&ctx, &weights);
    assert_clean(&ctx);
}

#[test]
fn wrong_shape_is_named_with_both_shapes() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let name = "model.layers.0.self_attn.k_proj.weight";
    // A checkpoint without grouped-query heads: K as wide as Q.
    let wide = weights.with_tensor(name, &[256, 256], vec![0.5; 256 * 256]);
    let bytes = wide.to_safetensors(TensorFormat::F32).unwrap();
    let err = Llama::from_safetensors(&ctx, &cfg, &bytes, TensorFormat::F32)
        .err()
        .unwrap();
    match &err {
        ModelError::WrongShape { name: n, got, want } => {
            assert_eq!(
                (n.as_str(), got.as_slice(), want.as_slice()),
                (name, &[256, 256][..], &[128, 256][..])
            );
        }
        e => panic!("{e}"),
    }
    still_usable(&ctx, &weights);
    assert_clean(&ctx);
}

#[test]
fn truncated_or_corrupt_file_is_refused() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let bytes = weights.to_safetensors(TensorFormat::F16).unwrap();
    let truncated = &bytes[..bytes.len() - 1000];
    let mut garbage = bytes.clone();
    garbage[8..16].copy_from_slice(b"not json");
    for (what, file) in [
        ("truncated", truncated),
        ("header", &garbage[..]),
        ("empty", &[][..]),
    ] {
        let err = Llama::from_safetensors(&ctx, &cfg, file, TensorFormat::F32)
            .err()
            .unwrap();
        assert!(matches!(err, ModelError::Corrupt(_)), "{what}: {err}");
    }
    let err = Llama::from_file(
        &ctx,
        &cfg,
        "/nonexistent/llama.safetensors".as_ref(),
        TensorFormat::F32,
    )
    .err()
    .unwrap();
    assert!(matches!(err, ModelError::Read { .. }), "{err}");
    assert!(
        err.to_string().contains("/nonexistent/llama.safetensors"),
        "{err}"
    );
    still_usable(&ctx, &weights);
    assert_clean(&ctx);
}

#[test]
fn integer_tensor_is_an_unsupported_dtype() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let file = weights.to_safetensors(TensorFormat::F32).unwrap();
    let parsed = safetensors::SafeTensors::deserialize(&file).unwrap();
    let name = "model.norm.weight";
    let ints = vec![0u8; cfg.hidden * 4];
    let int_view = TensorView::new(Dtype::I32, vec![cfg.hidden], &ints).unwrap();
    let tensors = parsed.tensors().into_iter().map(|(n, v)| {
        if n == name {
            (n, int_view.clone())
        } else {
            (n, v)
        }
    });
    let bytes = safetensors::serialize(tensors, None).unwrap();
    let err = Llama::from_safetensors(&ctx, &cfg, &bytes, TensorFormat::F32)
        .err()
        .unwrap();
    assert!(
        matches!(&err, ModelError::UnsupportedDtype { name: n, .. } if n == name),
        "{err}"
    );
    assert!(err.to_string().contains("I32"), "{err}");
    still_usable(&ctx, &weights);
    assert_clean(&ctx);
}

/// A step past the cache's positions, an empty step and a token past the vocabulary are
/// refused, and the model goes on from where it was.
#[test]
fn bad_steps_are_refused_and_the_model_goes_on() {
    let ctx = ctx();
    let cfg = LlamaConfig::small().with_max_seq(16);
    let weights = HostWeights::random(&cfg, SEED);
    let mut m = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    let mut reference = ReferenceLlama::new(&cfg, &weights);
    m.prefill(&PROMPT).unwrap();
    reference.forward(&PROMPT);
    let err = m.prefill(&[3; 10]).err().unwrap();
    assert!(
        matches!(
            err,
            ModelError::SequenceTooLong {
                cached: 7,
                new: 10,
                max_seq: 16
            }
        ),
        "{err}"
    );
    assert!(matches!(m.prefill(&[]), Err(ModelError::NoTokens)));
    let err = m.decode(512).err().unwrap();
    assert!(
        matches!(
            err,
            ModelError::TokenOutOfRange {
                token: 512,
                vocab: 512
            }
        ),
        "{err}"
    );
    assert_eq!(m.position(), 7);
    // The model goes on at position 7, as the reference does.
    let got = m.decode(8).unwrap();
    let want = reference.forward(&[8]).pop().unwrap();
    assert!(max_error(&got, &want) <= tolerance(TensorFormat::F32));
    // Nine more positions fit (16 in all), a tenth does not.
    let got = m.prefill(&[4; 8]).unwrap();
    assert!(max_error(got.last(), &reference.forward(&[4; 8]).pop().unwrap()) <= 1e-5);
    assert!(matches!(
        m.decode(1),
        Err(ModelError::SequenceTooLong {
            cached: 16,
            new: 1,
            ..
        })
    ));
    // Greedy generation checks its whole length first, then starts over.
    let err = m.greedy(&PROMPT, 11).err().unwrap();
    assert!(
        matches!(
            err,
            ModelError::SequenceTooLong {
                cached: 0,
                new: 17,
                ..
            }
        ),
        "{err}"
    );
    let tokens = m.greedy(&PROMPT, 10).unwrap();
    assert_eq!(
        tokens,
        ReferenceLlama::new(&cfg, &weights).greedy(&PROMPT, 10)
    );
    assert_clean(&ctx);
}

#[test]
fn bad_configuration_or_format_is_refused() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let mut odd = cfg;
    odd.kv_heads = 3;
    let err = Llama::new(&ctx, &odd, &weights, TensorFormat::F32)
        .err()
        .unwrap();
    assert!(matches!(err, ModelError::Config(_)), "{err}");
    let err = Llama::new(&ctx, &cfg, &weights, TensorFormat::I8)
        .err()
        .unwrap();
    assert!(matches!(err, ModelError::Format(TensorFormat::I8)), "{err}");
    assert_clean(&ctx);
}

/// TinyLlama's configuration names its 201 tensors with 1,100,048,384 parameters, as the
/// published checkpoint has.
#[test]
fn tinyllama_shapes() {
    let cfg = LlamaConfig::tinyllama();
    let shapes = vkprism_models::weight_shapes(&cfg);
    assert_eq!(shapes.len(), 201);
    let params: usize = shapes
        .iter()
        .map(|(_, s)| s.iter().product::<usize>())
        .sum();
    assert_eq!(params, 1_100_048_384);
    assert_eq!((cfg.head_dim(), cfg.kv_dim()), (64, 256));
    assert!(cfg.problem().is_none());
    let named = |n: &str| shapes.iter().any(|(name, _)| name == n);
    assert!(named("model.layers.21.self_attn.k_proj.weight") && named("lm_head.weight"));
}

/// Profiling times every dispatch of a step: per kernel, largest first, the decode step's
/// 5 dispatches a layer (the fused GEMVs, the first rotating into the cache, and attention),
/// the embedding, lm_head and argmax; the tokens are the unprofiled ones.
#[test]
fn profiled_decode_names_every_kernel() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, 5);
    let mut m = model(&ctx, &weights, TensorFormat::F32).unwrap();
    let plain = m.greedy(&[3, 1, 4], 3).unwrap();
    m.reset();
    m.set_profile(true);
    assert_eq!(m.greedy(&[3, 1, 4], 3).unwrap(), plain);
    let times = m.last_kernel_times().expect("lavapipe has timestamps");
    let count = |name: &str| {
        times
            .iter()
            .find(|k| k.kernel == name)
            .map_or(0, |k| k.dispatches)
    };
    let total: usize = times.iter().map(|k| k.dispatches).sum();
    // Per layer: 4 GEMVs (QKV normed and rotated into the cache, O into the stream, gate/up
    // normed and gated, down into the stream), attention (`attention_decode`: a workgroup a
    // head over the cache's 64 positions, no merge).
    assert_eq!(total, 5 * cfg.layers + 3, "{times:?}");
    assert_eq!(count("gemv"), 4 * cfg.layers + 1, "{times:?}");
    assert_eq!(count("attention_decode"), cfg.layers, "{times:?}");
    assert_eq!(count("rope_qkv"), 0, "{times:?}");
    assert!(
        times.windows(2).all(|w| w[0].time >= w[1].time),
        "{times:?}"
    );
    assert_clean(&ctx);
}

/// Decoding across a span of positions: the step recorded for the first span is replayed within
/// it, a second is recorded past it, and every token equals the CPU reference's (F32), the
/// memory report counting both lists; tied embeddings (no `lm_head.weight`) read the embedding.
#[test]
fn decode_replays_across_spans_with_tied_embeddings() {
    let ctx = ctx();
    let cfg = LlamaConfig::small()
        .with_max_seq(DECODE_SPAN + 40)
        .with_tied_embeddings(true);
    let weights = HostWeights::random(&cfg, 11);
    assert!(weights.get("lm_head.weight").is_none());
    let mut m = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    let prompt: Vec<u32> = (0..DECODE_SPAN as u32 - 4)
        .map(|i| (i * 7 + 1) % 512)
        .collect();
    let got = m.greedy(&prompt, 10).unwrap();
    let want = ReferenceLlama::new(&cfg, &weights).greedy(&prompt, 10);
    assert_eq!(got, want);
    let mem = m.memory();
    // Two a span: generation queues each step behind the one before, in turn on two lists.
    assert_eq!(mem.recorded_decode_lists, 4, "{mem}");
    assert!(
        mem.weights > 0 && mem.kv_cache > 0 && mem.activations > 0,
        "{mem}"
    );
    assert_clean(&ctx);
}

/// Going back to a prefix: the next step runs from there as a fresh sequence would (the same
/// logits as the reference's after that prefix); going past the end is refused and changes
/// nothing.
#[test]
fn truncate_goes_back_to_a_prefix() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let mut m = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    m.prefill(&PROMPT).unwrap();
    m.decode(9).unwrap();
    let err = m.truncate(9).err().unwrap();
    assert!(
        matches!(
            err,
            ModelError::TruncatePast {
                position: 9,
                held: 8
            }
        ),
        "{err}"
    );
    m.truncate(5).unwrap();
    assert_eq!(m.position(), 5);
    let got = m.decode(40).unwrap();
    let mut reference = ReferenceLlama::new(&cfg, &weights);
    reference.forward(&PROMPT[..5]);
    let want = reference.forward(&[40]).pop().unwrap();
    assert!(max_error(&got, &want) <= tolerance(TensorFormat::F32));
    assert_clean(&ctx);
}

/// A prompt of as many tokens at the same position replays the last prompt's recorded list
/// with the new tokens written in: its logits are the new prompt's, not the old one's.
#[test]
fn a_replayed_prompt_reads_its_new_tokens() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let mut m = Llama::new(&ctx, &cfg, &weights, TensorFormat::F32).unwrap();
    let other = [9, 8, 7, 6, 5, 4, 3];
    for prompt in [PROMPT, other, PROMPT] {
        m.reset();
        let got = m.prefill(&prompt).unwrap();
        let want = ReferenceLlama::new(&cfg, &weights).forward(&prompt);
        for (i, w) in want.iter().enumerate() {
            assert!(
                max_error(got.row(i), w) <= tolerance(TensorFormat::F32),
                "row {i}"
            );
        }
    }
    assert_clean(&ctx);
}
