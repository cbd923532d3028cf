"""PyTorch's side of the decoder's fidelity check (issue: real networks): a Hugging Face
`LlamaForCausalLM` in TinyLlama-1.1B's configuration with random weights (fixed seed), its
state dict as safetensors, a random prompt, the prompt's logits at every position and the
greedy continuation, for `models/examples/llama/main.rs --expect`.

    python3 bench/llama_ref.py OUT_DIR [--dtype fp16|fp32] [--prompt 16] [--tokens 32] [--layers 22]
        [--llama32 | --qwen25 | --qwen3 | --llama31-8b] [--head-dim N] [--int8-weights]
        [--fp32-reference] [--rounded-rope] [--save-pretrained DIR]

Writes OUT_DIR/model.safetensors and OUT_DIR/expect.safetensors (prompt: I64 [p], logits:
F32 [p, vocab], tokens: I64 [n]) and prints PyTorch's prefill and per-token decode time. With
`--int8-weights`, also OUT_DIR/expect_int8.safetensors: the same model with every projection
rounded as vkprism's `WeightStorage::Int8` quantizes the file's weights at load (the norm
before it folded into its columns, one scale per row, max |w| / 127, rounded to nearest, the
norm taken out again), for `llama.rs --int8-weights --expect`. With `--fp32-reference` (and fp16), also
OUT_DIR/expect_fp32.safetensors: the same fp16 weights computed in fp32 (TF32 off), and how far
PyTorch's own fp16 run is from it — the rounding noise an fp16 implementation is judged within.
The rotary frequencies stay fp32 whatever the dtype (`cast`); `--rounded-rope` leaves them
as the model's cast to fp16 rounds them. `--llama32`: Llama 3.2 1B's configuration instead (16
layers, tied embeddings, the rotary frequencies scaled as `llama3`); `--qwen25`: Qwen2.5 0.5B's
(`Qwen2ForCausalLM`: biases on the query, key and value projections, drawn at random);
`--qwen3`: Qwen3 0.6B's (`Qwen3ForCausalLM`: each query and key head normalized, the norms'
weights drawn at random);
`--llama31-8b`: Llama 3.1 8B's (with `--layers N`, N of its layers). `--head-dim N`: heads of N
values whatever the width (as Mistral Nemo's). With `--save-pretrained DIR`, the model also as
`save_pretrained` writes it, in shards of at most 500 MB (`config.json`,
`model.safetensors.index.json`), for `llama/main.rs --model DIR --expect`.
"""
import argparse, inspect, os, time
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM


# Llama 3.2's rotary embedding: a base of 500000, the frequencies scaled as `llama3` (Llama
# 3.1's divides by 8 instead of 32).
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}

# Each projection's norm folded into its columns before vkprism quantizes it (None: none).
FOLDED = {"q_proj": "input_layernorm", "k_proj": "input_layernorm", "v_proj": "input_layernorm",
          "gate_proj": "post_attention_layernorm", "up_proj": "post_attention_layernorm",
          "o_proj": None, "down_proj": None}


def norm_of(name, params):
    """The norm folded into projection `name` (a state-dict name), or None."""
    if name == "lm_head.weight":
        return params["model.norm.weight"]
    layer, proj = name.rsplit(".", 3)[0], name.split(".")[-2]
    norm = FOLDED[proj]
    return None if norm is None else params[f"{layer}.{norm}.weight"]


def round_to_int8(model):
    """Every projection replaced by its per-row int8 rounding, as vkprism's loader makes it. A
    tied output layer is untied first: vkprism rounds a copy of the embedding for it and keeps
    the embedding itself in the activations' format."""
    if model.lm_head.weight is model.model.embed_tokens.weight:
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    params = dict(model.state_dict())
    with torch.no_grad():
        for name, w in params.items():
            if not (name.endswith("_proj.weight") or name == "lm_head.weight"):
                continue
            g = norm_of(name, params)
            g = torch.ones(w.shape[1], device=w.device) if g is None else g.float()
            folded = w.float() * g[None, :]
            scale = folded.abs().amax(dim=1) / 127.0
            q = torch.where(scale[:, None] > 0, folded / scale[:, None], torch.zeros_like(folded))
            # Halves away from zero, as Rust's f32::round (torch.round takes them to even).
            tie = (q.abs() - q.abs().floor()) == 0.5
            q = torch.where(tie, q.abs().ceil().copysign(q), torch.round(q)).clamp(-127, 127)
            w.copy_((q * scale[:, None] / g[None, :]).to(w.dtype))


def rotary_modules(model):
    """The modules holding rotary frequencies (`inv_freq`)."""
    return [m for m in model.modules() if isinstance(getattr(m, "inv_freq", None), torch.Tensor)]


def cast(model, dtype, rounded_rope):
    """`model` cast in place to `dtype`, its rotary frequencies kept in fp32 unless
    `rounded_rope`: `.to(float16)` rounds the `inv_freq` buffer too (it is not a weight, so not
    in the state dict), which moves every angle by up to 4.1e-4 of itself (0.08 rad at position
    512) where vkprism computes them in fp32. The frequencies are kept as the model made them,
    scaled as its `rope_scaling` says."""
    kept = [(m, m.inv_freq.float().clone()) for m in rotary_modules(model)]
    model.to(dtype)
    if not rounded_rope:
        for m, freqs in kept:
            m.inv_freq = freqs.to(m.inv_freq.device)
            m.original_inv_freq = m.inv_freq
    return model


def expect(model, prompt, tokens):
    """The prompt's logits at every position and the greedy continuation, with times."""
    with torch.no_grad():
        torch.cuda.synchronize(); t = time.perf_counter()
        logits = model(prompt).logits[0].float()
        torch.cuda.synchronize(); prefill = time.perf_counter() - t
        t = time.perf_counter()
        out = model.generate(prompt, max_new_tokens=tokens, do_sample=False, min_new_tokens=tokens)
        torch.cuda.synchronize(); gen = time.perf_counter() - t
    return logits, out[0, prompt.shape[1]:], prefill, gen


def save_expect(path, prompt, logits, tokens):
    save_file({"prompt": prompt[0].long().cpu(), "logits": logits.cpu().contiguous(),
               "tokens": tokens.long().cpu()}, path)


def compare(what, logits, tokens, ref_logits, ref_tokens):
    """Prints how far `logits` / `tokens` are from the reference's."""
    cos = torch.nn.functional.cosine_similarity(logits, ref_logits, dim=1).min().item()
    top1 = (logits.argmax(dim=1) == ref_logits.argmax(dim=1)).sum().item()
    same = (tokens == ref_tokens).long().cumprod(0).sum().item()
    print(f"{what}: worst logits cosine {cos:.6f}, the same top-1 at {top1} of {logits.shape[0]} "
          f"positions, {same} of {tokens.shape[0]} greedy tokens the same before the first difference")


def fp32_reference(model, cfg, prompt, n, logits, tokens, out, rounded_rope):
    """The fp16 model's weights computed in fp32 (the model cast in place, then back): saved,
    and PyTorch's fp16 run compared."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cast(model, torch.float32, rounded_rope)
    logits32, tokens32, _, _ = expect(model, prompt, n)
    save_expect(f"{out}/expect_fp32.safetensors", prompt, logits32, tokens32)
    compare("torch fp16 against the same weights in fp32", logits, tokens, logits32, tokens32)
    cast(model, torch.float16, rounded_rope)


def tinyllama_config(layers):
    """TinyLlama-1.1B's configuration (22 layers unless `layers`)."""
    return LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=layers or 22,
                       num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                       rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=2048,
                       tie_word_embeddings=False, attn_implementation="sdpa")


def llama32_config(layers):
    """Llama 3.2 1B's configuration: tied embeddings, a vocabulary of 128256, the rotary
    frequencies scaled."""
    return llama3_config(LLAMA3_ROPE, hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=layers or 16, num_attention_heads=32,
                         num_key_value_heads=8, tie_word_embeddings=True)


def llama31_8b_config(layers):
    """Llama 3.1 8B's configuration (32 layers unless `layers`): heads of 128, MLP 14336, the
    output projection a tensor of its own, the rotary frequencies divided by 8 at most."""
    return llama3_config({**LLAMA3_ROPE, "factor": 8.0}, hidden_size=4096,
                         intermediate_size=14336, num_hidden_layers=layers or 32,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False)


def llama3_config(rope, **sizes):
    """A Llama 3 configuration of `sizes` with the rotary embedding `rope` (base 500000;
    `transformers` 5 takes it as `rope_parameters`, 4 as `rope_scaling` beside `rope_theta`)."""
    sizes = dict(vocab_size=128256, rms_norm_eps=1e-5, max_position_embeddings=131072,
                 attn_implementation="sdpa", **sizes)
    if "rope_parameters" in inspect.signature(LlamaConfig.__init__).parameters:
        return LlamaConfig(rope_parameters={**rope, "rope_theta": 500000.0}, **sizes)
    return LlamaConfig(rope_scaling=rope, rope_theta=500000.0, **sizes)


def qwen25_config(layers):
    """Qwen2.5 0.5B's configuration: biases on the query, key and value projections, 14 heads
    over 2, tied embeddings, a vocabulary of 151936, rotary base 1000000."""
    from transformers import Qwen2Config
    sizes = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=layers or 24,
                 num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                 rms_norm_eps=1e-6, max_position_embeddings=32768, tie_word_embeddings=True,
                 use_sliding_window=False, attn_implementation="sdpa")
    if "rope_parameters" in inspect.signature(Qwen2Config.__init__).parameters:
        return Qwen2Config(rope_parameters={"rope_type": "default", "rope_theta": 1e6}, **sizes)
    return Qwen2Config(rope_theta=1e6, **sizes)


def qwen2_model(cfg):
    from transformers import Qwen2ForCausalLM
    return Qwen2ForCausalLM(cfg)


def qwen3_config(layers):
    """Qwen3 0.6B's configuration: 16 heads of 128 over 8 (heads wider than the stream of
    1024), each query and key head normalized, tied embeddings, a vocabulary of 151936, rotary
    base 1000000."""
    from transformers import Qwen3Config
    sizes = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=layers or 28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                 rms_norm_eps=1e-6, max_position_embeddings=40960, tie_word_embeddings=True,
                 use_sliding_window=False, attention_bias=False, attn_implementation="sdpa")
    if "rope_parameters" in inspect.signature(Qwen3Config.__init__).parameters:
        return Qwen3Config(rope_parameters={"rope_type": "default", "rope_theta": 1e6}, **sizes)
    return Qwen3Config(rope_theta=1e6, **sizes)


def qwen3_model(cfg):
    from transformers import Qwen3ForCausalLM
    return Qwen3ForCausalLM(cfg)


def random_head_norms(model, seed):
    """The heads' norm weights drawn at random (uniform in [0.5, 1.5]): a model made from a
    configuration starts them at one, which would leave them untested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("q_norm.weight", "k_norm.weight")):
                p.copy_(0.5 + torch.rand(p.shape, generator=g))


def random_biases(model, seed):
    """The projections' biases drawn at random (normal, σ 0.1): a model made from a
    configuration starts them at zero, which would leave them untested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("_proj.bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--llama32", action="store_true")
    ap.add_argument("--qwen25", action="store_true")
    ap.add_argument("--qwen3", action="store_true")
    ap.add_argument("--llama31-8b", action="store_true")
    ap.add_argument("--head-dim", type=int)
    ap.add_argument("--int8-weights", action="store_true")
    ap.add_argument("--fp32-reference", action="store_true")
    ap.add_argument("--rounded-rope", action="store_true")
    ap.add_argument("--save-pretrained")
    args = ap.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.float32
    if args.qwen25:
        cfg = qwen25_config(args.layers)
    elif args.qwen3:
        cfg = qwen3_config(args.layers)
    elif args.llama32:
        cfg = llama32_config(args.layers)
    elif args.llama31_8b:
        cfg = llama31_8b_config(args.layers)
    else:
        cfg = tinyllama_config(args.layers)
    if args.head_dim:
        cfg.head_dim = args.head_dim
    torch.manual_seed(0)
    if args.qwen25:
        made = qwen2_model(cfg)
    elif args.qwen3:
        made = qwen3_model(cfg)
    else:
        made = LlamaForCausalLM(cfg)
    random_biases(made, 2)
    random_head_norms(made, 3)
    model = cast(made, dtype, args.rounded_rope).cuda().eval()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, cfg.vocab_size, (1, args.prompt), generator=g).cuda()
    logits, tokens, prefill, gen = expect(model, prompt, args.tokens)
    os.makedirs(args.out, exist_ok=True)
    # A tied output layer is the embedding: saved once, as `save_pretrained` saves it.
    tied = {"lm_head.weight"} if cfg.tie_word_embeddings else set()
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k not in tied}
    save_file(state, f"{args.out}/model.safetensors")
    save_expect(f"{args.out}/expect.safetensors", prompt, logits, tokens)
    if args.save_pretrained:
        model.save_pretrained(args.save_pretrained, max_shard_size="500MB")
    print(f"torch {args.dtype}: prefill of {args.prompt} tokens {prefill * 1e3:.2f} ms (eager), "
          f"{args.tokens} greedy tokens in {gen * 1e3:.1f} ms ({gen / args.tokens * 1e3:.2f} ms per token, generate())")
    print(f"torch greedy tokens: {tokens.tolist()}")
    if args.fp32_reference:
        fp32_reference(model, cfg, prompt, args.tokens, logits, tokens, args.out,
                       args.rounded_rope)
    if args.int8_weights:
        round_to_int8(model)
        logits8, tokens8, _, _ = expect(model, prompt, args.tokens)
        save_expect(f"{args.out}/expect_int8.safetensors", prompt, logits8, tokens8)
        compare("torch int8-rounded weights against the float weights", logits8, tokens8, logits,
                tokens)
        print(f"torch greedy tokens (int8-rounded weights): {tokens8.tolist()}")


if __name__ == "__main__":
    main()
