//! A Hugging Face model directory: `config.json` read into a [`LlamaConfig`] (both forms of the
//! rotary parameters, defaults as `transformers` has them, every unsupported option refused by
//! name) and the weights from one `model.safetensors` or from shards an index lists, loaded a
//! tensor at a time — the sharded model computing the same greedy tokens as the CPU reference,
//! and every broken directory refused with the file named, the device still usable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use vkprism::{Context, TensorFormat};
use vkprism_models::{
    hf_end_tokens, Checkpoint, HostWeights, Llama, LlamaConfig, ModelError, ReferenceLlama,
    RopeScaling, WeightSource,
};
use vkprism_testkit::{assert_clean, ctx};

const PROMPT: [u32; 5] = [1, 17, 300, 42, 5];
const SEED: u64 = 33;

/// `config.json` as `save_pretrained` writes it for [`LlamaConfig::small`] (`transformers` 4's
/// fields), with `extra` fields added or replaced.
fn config_json(extra: &[(&str, serde_json::Value)]) -> String {
    let mut v = serde_json::json!({
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": false,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": 256,
        "initializer_range": 0.02,
        "intermediate_size": 688,
        "max_position_embeddings": 64,
        "mlp_bias": false,
        "model_type": "llama",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": null,
        "rope_theta": 10000.0,
        "tie_word_embeddings": false,
        "torch_dtype": "float16",
        "transformers_version": "4.46.0",
        "use_cache": true,
        "vocab_size": 512
    });
    for (k, value) in extra {
        v[*k] = value.clone();
    }
    v.to_string()
}

#[test]
fn config_json_reads_as_the_configuration() {
    let small = LlamaConfig::small();
    assert_eq!(LlamaConfig::from_hf_json(&config_json(&[])).unwrap(), small);
    // transformers 5 keeps the base inside `rope_parameters`.
    let v5 = config_json(&[
        ("rope_theta", serde_json::Value::Null),
        (
            "rope_parameters",
            serde_json::json!({"rope_theta": 500000.0, "rope_type": "default"}),
        ),
    ]);
    let cfg = LlamaConfig::from_hf_json(&v5).unwrap();
    assert_eq!(cfg.rope_theta, 500000.0);
    // Without the optional fields: `transformers`' defaults (multi-head attention, ε 1e-6).
    let v = serde_json::json!({
        "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
        "intermediate_size": 688, "vocab_size": 512
    });
    let cfg = LlamaConfig::from_hf_json(&v.to_string()).unwrap();
    assert_eq!(
        (cfg.kv_heads, cfg.rms_eps, cfg.rope_theta, cfg.max_seq),
        (4, 1e-6, 10000.0, 2048)
    );
    assert!(!cfg.tie_embeddings);
    let tied = config_json(&[("tie_word_embeddings", true.into())]);
    assert!(LlamaConfig::from_hf_json(&tied).unwrap().tie_embeddings);
    // A head of its own size (Mistral Nemo's manner): q_proj [heads · head_dim, hidden].
    let wide_heads = config_json(&[("head_dim", 96.into())]);
    let mut want = small;
    want.head_dim = 96;
    assert_eq!(LlamaConfig::from_hf_json(&wide_heads).unwrap(), want);
    assert_eq!(want.q_dim(), 384);
    // Qwen2: biases on the query, key and value projections; its window unused unless
    // `use_sliding_window`.
    let qwen2 = config_json(&[
        ("model_type", "qwen2".into()),
        ("sliding_window", 32.into()),
        ("use_sliding_window", false.into()),
    ]);
    assert_eq!(
        LlamaConfig::from_hf_json(&qwen2).unwrap(),
        small.with_qkv_bias(true)
    );
    // Qwen3: each query and key head normalized, no biases; its window as Qwen2's.
    let qwen3 = config_json(&[
        ("model_type", "qwen3".into()),
        ("sliding_window", serde_json::Value::Null),
        ("use_sliding_window", false.into()),
    ]);
    assert_eq!(
        LlamaConfig::from_hf_json(&qwen3).unwrap(),
        small.with_qk_norm(true)
    );
    // Mistral without a sliding window (v0.2 on), or with one no shorter than its positions.
    for window in [serde_json::Value::Null, 64.into()] {
        let mistral = config_json(&[("model_type", "mistral".into()), ("sliding_window", window)]);
        assert_eq!(LlamaConfig::from_hf_json(&mistral).unwrap(), small);
    }
}

/// Llama 3.2's rotary parameters as its `config.json` has them (`transformers` 4's
/// `rope_scaling`) and as `transformers` 5 writes them (`rope_parameters`, the base inside);
/// `linear` scaling in the older spelling (`type`).
#[test]
fn scaled_rotary_embeddings_read_as_their_scaling() {
    let llama3 = RopeScaling::Llama3 {
        factor: 32.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_positions: 8192,
    };
    let v4 = config_json(&[
        ("rope_theta", 500000.0.into()),
        (
            "rope_scaling",
            serde_json::json!({"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
        ),
    ]);
    let cfg = LlamaConfig::from_hf_json(&v4).unwrap();
    assert_eq!((cfg.rope_theta, cfg.rope_scaling), (500000.0, llama3));
    let v5 = config_json(&[
        ("rope_theta", serde_json::Value::Null),
        ("rope_scaling", serde_json::Value::Null),
        (
            "rope_parameters",
            serde_json::json!({"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                "original_max_position_embeddings": 8192, "rope_theta": 500000.0,
                "rope_type": "llama3"}),
        ),
    ]);
    let cfg = LlamaConfig::from_hf_json(&v5).unwrap();
    assert_eq!((cfg.rope_theta, cfg.rope_scaling), (500000.0, llama3));
    let linear = serde_json::json!({"type": "linear", "factor": 2.0});
    let cfg = LlamaConfig::from_hf_json(&config_json(&[("rope_scaling", linear)])).unwrap();
    assert_eq!(cfg.rope_scaling, RopeScaling::Linear { factor: 2.0 });
}

/// The presets are the models' own `config.json`s (their fields as the published files have
/// them, `transformers` 4's forms), caches aside.
#[test]
fn presets_are_the_published_configurations() {
    let llama32 = serde_json::json!({
        "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
        "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
        "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0,
        "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
        "rope_type": "llama3"}, "rope_theta": 500000.0, "tie_word_embeddings": true,
        "vocab_size": 128256
    });
    let cfg = LlamaConfig::from_hf_json(&llama32.to_string()).unwrap();
    assert_eq!(cfg, LlamaConfig::llama32_1b().with_max_seq(131072));
    let qwen25 = serde_json::json!({
        "architectures": ["Qwen2ForCausalLM"], "bos_token_id": 151643, "eos_token_id": 151643,
        "hidden_act": "silu", "hidden_size": 896, "intermediate_size": 4864,
        "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
        "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": true, "use_sliding_window": false, "vocab_size": 151936
    });
    let cfg = LlamaConfig::from_hf_json(&qwen25.to_string()).unwrap();
    assert_eq!(cfg, LlamaConfig::qwen25_05b().with_max_seq(32768));
    let qwen3 = serde_json::json!({
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
        "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
        "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
        "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
        "use_cache": true, "use_sliding_window": false, "vocab_size": 151936
    });
    let cfg = LlamaConfig::from_hf_json(&qwen3.to_string()).unwrap();
    assert_eq!(cfg, LlamaConfig::qwen3_06b().with_max_seq(40960));
}

/// `from_hf_json` of `text` refused with `ModelError::ConfigFile` whose message holds `needle`.
fn assert_config_refused(text: &str, needle: &str) {
    match LlamaConfig::from_hf_json(text) {
        Err(e @ ModelError::ConfigFile { .. }) => {
            assert!(e.to_string().contains(needle), "`{needle}` not in: {e}")
        }
        other => panic!("`{needle}`: {other:?}"),
    }
}

#[test]
fn unsupported_or_broken_config_is_refused_by_name() {
    let partial = serde_json::json!({"rope_type": "llama3", "factor": 8.0});
    let reversed = serde_json::json!({"rope_type": "llama3", "factor": 8.0,
        "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192});
    let no_factor = serde_json::json!({"type": "linear"});
    let yarn = serde_json::json!({"rope_type": "yarn", "rope_theta": 1e6});
    let dynamic = serde_json::json!({"type": "dynamic", "factor": 2.0});
    let cases = [
        (config_json(&[("rope_scaling", partial)]), "low_freq_factor"),
        (config_json(&[("rope_scaling", reversed)]), "not above"),
        (config_json(&[("rope_scaling", no_factor)]), "no `factor`"),
        (config_json(&[("rope_parameters", yarn)]), "rope_parameters"),
        (config_json(&[("rope_scaling", dynamic)]), "`dynamic`"),
        (config_json(&[("hidden_act", "gelu".into())]), "hidden_act"),
        (
            config_json(&[("attention_bias", true.into())]),
            "attention_bias",
        ),
        (config_json(&[("mlp_bias", true.into())]), "mlp_bias"),
        (
            config_json(&[("num_attention_heads", 3.into())]),
            "doesn't divide",
        ),
        (config_json(&[("model_type", "gemma".into())]), "`gemma`"),
        (
            config_json(&[
                ("model_type", "qwen3".into()),
                ("attention_bias", true.into()),
            ]),
            "attention_bias",
        ),
        (
            config_json(&[
                ("model_type", "qwen2".into()),
                ("sliding_window", 32.into()),
                ("use_sliding_window", true.into()),
            ]),
            "sliding_window",
        ),
        (
            config_json(&[
                ("model_type", "mistral".into()),
                ("sliding_window", 4096.into()),
                ("max_position_embeddings", 32768.into()),
            ]),
            "sliding_window",
        ),
        (config_json(&[("hidden_size", "wide".into())]), "line 1"),
        ("{\"num_hidden_layers\": 2}".to_string(), "hidden_size"),
        ("not json".to_string(), "line 1 column 2"),
    ];
    for (text, needle) in &cases {
        assert_config_refused(text, needle);
    }
    let odd = config_json(&[("num_key_value_heads", 3.into())]);
    let err = LlamaConfig::from_hf_json(&odd).unwrap_err();
    assert!(matches!(err, ModelError::Config(_)), "{err}");
}

/// A fresh directory under the system's temporary one.
fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vkprism-hf-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tensors `names` of `weights` as one F16 safetensors file.
fn f16_file(weights: &HostWeights, cfg: &LlamaConfig, names: &[&String]) -> Vec<u8> {
    let shapes: HashMap<String, Vec<usize>> =
        vkprism_models::weight_shapes(cfg).into_iter().collect();
    let data: Vec<(&String, Vec<u8>)> = names
        .iter()
        .map(|n| {
            let values = weights.get(n).unwrap();
            let bytes = values
                .iter()
                .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
                .collect();
            (*n, bytes)
        })
        .collect();
    let views = data.iter().map(|(n, bytes)| {
        let (dtype, shape) = (safetensors::Dtype::F16, shapes[*n].clone());
        let view = safetensors::tensor::TensorView::new(dtype, shape, bytes).unwrap();
        ((*n).clone(), view)
    });
    safetensors::serialize(views, None).unwrap()
}

/// `weights` written as `shards` F16 safetensors files and their index into `dir`, the tensors
/// dealt out in turn, with `config.json` for the small configuration.
fn write_sharded(dir: &Path, weights: &HostWeights, cfg: &LlamaConfig, shards: usize) {
    let names: Vec<String> = vkprism_models::weight_shapes(cfg)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut map = serde_json::Map::new();
    for s in 0..shards {
        let file = format!("model-{:05}-of-{shards:05}.safetensors", s + 1);
        let mine: Vec<&String> = names.iter().skip(s).step_by(shards).collect();
        std::fs::write(dir.join(&file), f16_file(weights, cfg, &mine)).unwrap();
        for n in mine {
            map.insert(n.clone(), file.clone().into());
        }
    }
    let index = serde_json::json!({"metadata": {"total_size": 0}, "weight_map": map});
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    std::fs::write(dir.join("config.json"), config_json(&[])).unwrap();
}

#[test]
fn sharded_directory_loads_and_generates_as_the_reference() {
    let ctx = ctx();
    let cfg = LlamaConfig::small();
    let weights = HostWeights::random(&cfg, SEED);
    let dir = temp_dir("sharded");
    write_sharded(&dir, &weights, &cfg, 3);
    let checkpoint = Checkpoint::open(&dir).unwrap();
    assert_eq!(checkpoint.names().len(), 3 + 9 * cfg.layers);
    // Every tensor reads back as its F16 rounding.
    let held = weights.rounded(TensorFormat::F16);
    for (name, shape) in vkprism_models::weight_shapes(&cfg) {
        assert_eq!(
            checkpoint.tensor(&name, &shape).unwrap(),
            held.get(&name).unwrap(),
            "{name}"
        );
    }
    let mut model = Llama::from_hf_dir(&ctx, &dir, TensorFormat::F32).unwrap();
    assert_eq!(*model.config(), cfg);
    let want = ReferenceLlama::new(&cfg, &held).greedy(&PROMPT, 6);
    assert_eq!(model.greedy(&PROMPT, 6).unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_clean(&ctx);
}

#[test]
fn single_file_directory_loads_as_the_file() {
    let ctx = ctx();
    let cfg = LlamaConfig::small().with_tied_embeddings(true);
    let weights = HostWeights::random(&cfg, SEED);
    let dir = temp_dir("single");
    let bytes = weights.to_safetensors(TensorFormat::Bf16).unwrap();
    std::fs::write(dir.join("model.safetensors"), &bytes).unwrap();
    let tied = config_json(&[("tie_word_embeddings", true.into())]);
    std::fs::write(dir.join("config.json"), tied).unwrap();
    let mut from_dir = Llama::from_hf_dir(&ctx, &dir, TensorFormat::F32).unwrap();
    let file = dir.join("model.safetensors");
    let mut from_file = Llama::from_file(&ctx, &cfg, &file, TensorFormat::F32).unwrap();
    let mut from_bytes = Llama::from_safetensors(&ctx, &cfg, &bytes, TensorFormat::F32).unwrap();
    let want = from_bytes.prefill(&PROMPT).unwrap();
    assert_eq!(from_dir.prefill(&PROMPT).unwrap(), want);
    assert_eq!(from_file.prefill(&PROMPT).unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_clean(&ctx);
}

/// Loading the directory `dir` is refused with an error for which `check` holds, whose message
/// holds `needle`.
fn assert_dir_refused(ctx: &Context, dir: &Path, needle: &str, check: fn(&ModelError) -> bool) {
    let err = Llama::from_hf_dir(ctx, dir, TensorFormat::F32)
        .err()
        .unwrap();
    assert!(check(&err), "{needle}: {err:?}");
    assert!(err.to_string().contains(needle), "`{needle}` not in: {err}");
}

/// A sharded directory of the small configuration's weights, its index's text and path.
fn sharded_dir(what: &str) -> (PathBuf, String, PathBuf) {
    let cfg = LlamaConfig::small();
    let dir = temp_dir(what);
    write_sharded(&dir, &HostWeights::random(&cfg, SEED), &cfg, 2);
    let index = dir.join("model.safetensors.index.json");
    (dir, std::fs::read_to_string(&index).unwrap(), index)
}

/// Writes `index` with its weight map edited by `edit`.
fn edit_index(index: &Path, good: &str, edit: impl Fn(&mut HashMap<String, serde_json::Value>)) {
    let mut v: serde_json::Value = serde_json::from_str(good).unwrap();
    let mut map: HashMap<String, serde_json::Value> =
        serde_json::from_value(v["weight_map"].take()).unwrap();
    edit(&mut map);
    v["weight_map"] = serde_json::to_value(map).unwrap();
    std::fs::write(index, v.to_string()).unwrap();
}

/// The model of the repaired directory `dir` runs.
fn loads_again(ctx: &Context, dir: &Path) {
    let mut model = Llama::from_hf_dir(ctx, dir, TensorFormat::F32).unwrap();
    assert_eq!(model.prefill(&PROMPT).unwrap().rows(), PROMPT.len());
    std::fs::remove_dir_all(dir).unwrap();
    assert_clean(ctx);
}

#[test]
fn missing_files_and_broken_index_are_refused_with_the_file_named() {
    let ctx = ctx();
    let dir = temp_dir("empty");
    let is_read = |e: &ModelError| matches!(e, ModelError::Read { .. });
    let is_index = |e: &ModelError| matches!(e, ModelError::Index(_));
    assert_dir_refused(&ctx, &dir, "config.json", is_read);
    std::fs::write(dir.join("config.json"), config_json(&[])).unwrap();
    assert_dir_refused(&ctx, &dir, "neither", is_index);
    std::fs::remove_dir_all(&dir).unwrap();
    let (dir, good, index) = sharded_dir("index");
    let up = "model.layers.1.mlp.up_proj.weight";
    edit_index(&index, &good, |m| {
        m.remove(up);
    });
    assert_dir_refused(&ctx, &dir, up, |e| {
        matches!(e, ModelError::MissingTensor { .. })
    });
    for (shard, needle, check) in [
        (
            "../elsewhere.safetensors",
            "../elsewhere",
            is_index as fn(&ModelError) -> bool,
        ),
        (
            "model-00009-of-00002.safetensors",
            "model-00009-of-00002",
            is_read,
        ),
    ] {
        edit_index(&index, &good, |m| {
            m.insert(up.into(), shard.into());
        });
        assert_dir_refused(&ctx, &dir, needle, check);
    }
    std::fs::write(&index, "{\"weight_map\": 3}").unwrap();
    assert_dir_refused(&ctx, &dir, "index.json", is_index);
    std::fs::write(&index, &good).unwrap();
    loads_again(&ctx, &dir);
}

#[test]
fn corrupt_shard_is_refused_with_the_file_named() {
    let ctx = ctx();
    let (dir, _, _) = sharded_dir("corrupt");
    let shard = dir.join("model-00002-of-00002.safetensors");
    let bytes = std::fs::read(&shard).unwrap();
    let not_json = [&bytes[..8], b"not json", &bytes[16..]].concat();
    for (what, broken) in [
        ("truncated", bytes[..bytes.len() - 100].to_vec()),
        ("no header", bytes[..5].to_vec()),
        ("huge header", u64::MAX.to_le_bytes().to_vec()),
        ("header not JSON", not_json),
    ] {
        std::fs::write(&shard, broken).unwrap();
        let err = Llama::from_hf_dir(&ctx, &dir, TensorFormat::F32)
            .err()
            .unwrap();
        assert!(matches!(err, ModelError::Corrupt(_)), "{what}: {err}");
        let named = err.to_string().contains("model-00002-of-00002");
        assert!(named, "{what}: {err}");
    }
    std::fs::write(&shard, &bytes).unwrap();
    loads_again(&ctx, &dir);
}

#[test]
fn end_tokens_come_from_the_generation_config_first() {
    let dir = temp_dir("eos");
    assert_eq!(hf_end_tokens(&dir).unwrap(), Vec::<u32>::new());
    std::fs::write(dir.join("config.json"), config_json(&[])).unwrap();
    assert_eq!(hf_end_tokens(&dir).unwrap(), [2]);
    let generation = serde_json::json!({"bos_token_id": 1, "eos_token_id": [2, 7]});
    std::fs::write(dir.join("generation_config.json"), generation.to_string()).unwrap();
    assert_eq!(hf_end_tokens(&dir).unwrap(), [2, 7]);
    std::fs::write(
        dir.join("generation_config.json"),
        "{\"eos_token_id\": \"x\"}",
    )
    .unwrap();
    let err = hf_end_tokens(&dir).unwrap_err();
    assert!(err.to_string().contains("generation_config.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
