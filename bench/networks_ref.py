"""PyTorch's side of vkprism-bench's network cases, on the same GPU in the same command: the
same configurations, random weights, each step timed as vkprism's (warm-up by GPU time, median
of CUDA-event-timed steps, the SM clock read during the series), twice:
- eager: the model called from Python (what `model(...)` costs, the host's launches included);
- CUDA graph: the same step captured once and replayed (no host launch inside the timed span).
Each step also gets a `wall` record (host time of the eager step, synchronized), as vkprism's
`wall` records. Cases:
- decoder: transformers' LlamaForCausalLM in TinyLlama-1.1B's configuration, fp16, SDPA: a
  512-token prompt with the output layer on its last position only, as `generate` runs a
  prompt and as vkprism's next-token step does (the graph: the model without a cache), and
  one greedy decode step at 512 and 2048 tokens of context (eager: the model with a DynamicCache cut back after each step;
  the graph: the same modules and weights over a static KV cache, position read on the GPU,
  checked against the eager step's logits); with `VKPRISM_BENCH_DECODER=llama3.2-1b` or
  `qwen2.5-0.5b` or `qwen3-0.6b` (as the harness reads it) the same in Llama 3.2 1B's,
  Qwen2.5 0.5B's or Qwen3 0.6B's configuration, case `decoder llama3.2-1b`, `decoder
  qwen2.5-0.5b` or `decoder qwen3-0.6b`;
- resnet50: torchvision's resnet50, channels-last, cuDNN, batch 1 and 8, fp16 and fp32.
Writes a JSON array of {case, shape, dtype, value, unit, sm_clock_mhz, reference, method}.

    python3 bench/networks_ref.py [--cases decoder,resnet50] --json FILE
"""
import argparse, json, os, time
import torch

from torch_ref import graph_timed, rec, timed

DECODE_CONTEXTS = [512, 2048]
PROMPT = 512
EAGER = "CUDA events around one eager call, median"
GRAPH = "CUDA events around one CUDA-graph replay of the step, median"
WALL = "host wall time of one eager call, synchronized, median"


def wall_ms(fn, runs=20):
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1e3


def both(case, shape, dtype, name, eager_fn, graph_fn):
    """Records of one step: eager, wall, and (where capture works) CUDA graph."""
    out = []
    t, mhz = timed(eager_fn)
    out.append(rec(case, shape, dtype, t * 1e3, "ms", mhz, f"{name} eager", EAGER))
    out.append(rec(case, f"{shape} wall", dtype, wall_ms(eager_fn), "ms", mhz, f"{name} eager", WALL))
    try:
        t, mhz = graph_timed(graph_fn, reps=1)
        out.append(rec(case, shape, dtype, t * 1e3, "ms", mhz, f"{name} CUDA graph", GRAPH))
    except Exception as e:  # a capture the model's code refuses: said, not hidden
        print(f"# {case} {shape}: no CUDA graph ({type(e).__name__}: {e})", flush=True)
    return out


def cache_layer(cache, i):
    """Layer i's keys and values of a DynamicCache, [1, kv_heads, positions, head_dim]."""
    if hasattr(cache, "layers"):
        return cache.layers[i].keys, cache.layers[i].values
    return cache.key_cache[i], cache.value_cache[i]


def static_step(model, dyn, context, max_len, token):
    """A greedy decode step at position `context` through the model's own modules and weights,
    over a static KV cache filled from `dyn`: every shape fixed, the position a GPU tensor, so
    the step can be captured. Returns the step and its logits' function."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    m, cfg = model.model, model.config
    hq, hkv = cfg.num_attention_heads, cfg.num_key_value_heads
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // hq
    shape = (cfg.num_hidden_layers, 1, hkv, max_len, d)
    kc = torch.zeros(shape, device="cuda", dtype=torch.float16)
    vc = torch.zeros_like(kc)
    for i in range(cfg.num_hidden_layers):
        k, v = cache_layer(dyn, i)
        kc[i, :, :, :context] = k[:, :, :context]
        vc[i, :, :, :context] = v[:, :, :context]
    pos = torch.tensor([context], device="cuda")
    keys = torch.arange(max_len, device="cuda")

    def logits():
        x = m.embed_tokens(token)
        cos, sin = m.rotary_emb(x, pos.view(1, 1))
        allowed = (keys <= pos).view(1, 1, 1, max_len)
        for i, layer in enumerate(m.layers):
            a = layer.self_attn
            h = layer.input_layernorm(x)
            q = a.q_proj(h).view(1, 1, hq, d)
            k = a.k_proj(h).view(1, 1, hkv, d)
            if hasattr(a, "q_norm"):  # Qwen3's norm of each query and key head
                q, k = a.q_norm(q), a.k_norm(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = a.v_proj(h).view(1, 1, hkv, d).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            kc[i].index_copy_(2, pos, k)
            vc[i].index_copy_(2, pos, v)
            o = torch.nn.functional.scaled_dot_product_attention(q, kc[i], vc[i], attn_mask=allowed,
                                                                 enable_gqa=True)
            x = x + a.o_proj(o.transpose(1, 2).reshape(1, 1, hq * d))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return model.lm_head(m.norm(x))

    return (lambda: logits().argmax(-1)), logits


def last_logits_only(model):
    """The forward argument that keeps only the last position's logits (its name changed
    between transformers releases); fails where there is none, rather than time more work."""
    import inspect
    params = inspect.signature(model.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return {name: 1}
    raise RuntimeError("this transformers can't keep only the last position's logits")


def decoder_model():
    """The decoder to time, its case and its model, as the harness picks them
    (`VKPRISM_BENCH_DECODER`: `tinyllama` by default, `llama3.2-1b`, `qwen2.5-0.5b` or
    `qwen3-0.6b`)."""
    from transformers import LlamaForCausalLM
    from llama_ref import (llama32_config, qwen25_config, qwen2_model, qwen3_config, qwen3_model,
                           tinyllama_config)
    which = os.environ.get("VKPRISM_BENCH_DECODER", "tinyllama")
    if which == "llama3.2-1b":
        return "decoder llama3.2-1b", LlamaForCausalLM(llama32_config(None))
    if which == "qwen2.5-0.5b":
        return "decoder qwen2.5-0.5b", qwen2_model(qwen25_config(None))
    if which == "qwen3-0.6b":
        return "decoder qwen3-0.6b", qwen3_model(qwen3_config(None))
    if which != "tinyllama":
        raise SystemExit(f"VKPRISM_BENCH_DECODER={which}: tinyllama, llama3.2-1b, qwen2.5-0.5b "
                         "or qwen3-0.6b")
    cfg = tinyllama_config(None)
    # Room for the step after 2048 tokens of context.
    cfg.max_position_embeddings = 4096
    return "decoder", LlamaForCausalLM(cfg)


def decoder():
    from transformers import DynamicCache
    from llama_ref import cast
    torch.manual_seed(0)
    case, made = decoder_model()
    cfg = made.config
    # The rotary frequencies kept in fp32, as vkprism computes them (and `llama_ref.py`).
    model = cast(made, torch.float16, rounded_rope=False).cuda().eval()
    name = f"transformers {type(made).__name__} fp16 SDPA"
    out = []
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, max(DECODE_CONTEXTS)), generator=g).cuda()
    last = last_logits_only(model)
    with torch.no_grad():
        prompt = ids[:, :PROMPT]
        out += both(case, f"prefill {PROMPT}", "fp16", name,
                    lambda: model(prompt, past_key_values=DynamicCache(), use_cache=True, **last),
                    lambda: model(prompt, use_cache=False, **last))
        token = torch.tensor([[5]], device="cuda")
        for context in DECODE_CONTEXTS:
            dyn = DynamicCache()
            model(ids[:, :context], past_key_values=dyn, use_cache=True)

            def eager_step(dyn=dyn):
                r = model(token, past_key_values=dyn, use_cache=True).logits[0, -1].argmax()
                dyn.crop(-1)  # the step's one token off again
                return r

            graph_step, logits = static_step(model, dyn, context, context + 64, token)
            want = model(token, past_key_values=dyn, use_cache=True).logits[0, -1].float()
            dyn.crop(-1)  # the step's one token off again
            got = logits()[0, -1].float()
            cos = torch.nn.functional.cosine_similarity(got, want, dim=0).item()
            assert cos > 0.999, f"static decode step vs the model's: cosine {cos}"
            print(f"# decode {context}: static step vs the model's logits: cosine {cos:.6f}", flush=True)
            out += both(case, f"decode {context}", "fp16", name, eager_step, graph_step)
            del dyn
    return out


def resnet50():
    import torchvision
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    out = []
    for dname, dtype in (("fp16", torch.float16), ("fp32", torch.float32)):
        torch.manual_seed(0)
        model = torchvision.models.resnet50(weights=None).eval()
        model = model.to(dtype).cuda().to(memory_format=torch.channels_last)
        name = f"torchvision resnet50 {dname} channels-last cuDNN"
        for batch in (1, 8):
            x = torch.rand(batch, 3, 224, 224, device="cuda").to(dtype)
            x = x.to(memory_format=torch.channels_last)
            with torch.no_grad():
                out += both("resnet50", f"b{batch} 224x224", dname, name,
                            lambda: model(x), lambda: model(x))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="decoder,resnet50")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    records = []
    for case in args.cases.split(","):
        records += {"decoder": decoder, "resnet50": resnet50}[case]()
    with open(args.json, "w") as f:
        json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
