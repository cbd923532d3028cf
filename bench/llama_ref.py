"""PyTorch's side of the decoder's fidelity check (issue: real networks): a Hugging Face
`LlamaForCausalLM` in TinyLlama-1.1B's configuration with random weights (fixed seed), its
state dict as safetensors, a random prompt, the prompt's logits at every position and the
greedy continuation, for `models/examples/llama.rs --expect`.

    python3 bench/llama_ref.py OUT_DIR [--dtype fp16|fp32] [--prompt 16] [--tokens 32] [--layers 22]

Writes OUT_DIR/model.safetensors and OUT_DIR/expect.safetensors (prompt: I64 [p], logits:
F32 [p, vocab], tokens: I64 [n]) and prints PyTorch's prefill and per-token decode time.
"""
import argparse, os, time
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--layers", type=int, default=22)
    args = ap.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.float32
    cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=args.layers,
                      num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                      rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=2048,
                      tie_word_embeddings=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(dtype).cuda().eval()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, cfg.vocab_size, (1, args.prompt), generator=g).cuda()
    with torch.no_grad():
        torch.cuda.synchronize(); t = time.perf_counter()
        logits = model(prompt).logits[0].float()
        torch.cuda.synchronize(); prefill = time.perf_counter() - t
        t = time.perf_counter()
        out = model.generate(prompt, max_new_tokens=args.tokens, do_sample=False, min_new_tokens=args.tokens)
        torch.cuda.synchronize(); gen = time.perf_counter() - t
    tokens = out[0, args.prompt:]
    os.makedirs(args.out, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, f"{args.out}/model.safetensors")
    save_file({"prompt": prompt[0].long().cpu(), "logits": logits.cpu().contiguous(),
               "tokens": tokens.long().cpu()}, f"{args.out}/expect.safetensors")
    print(f"torch {args.dtype}: prefill of {args.prompt} tokens {prefill * 1e3:.2f} ms (eager), "
          f"{args.tokens} greedy tokens in {gen * 1e3:.1f} ms ({gen / args.tokens * 1e3:.2f} ms per token, generate())")
    print(f"torch greedy tokens: {tokens.tolist()}")


if __name__ == "__main__":
    main()
