"""PyTorch's side of ResNet-50's fidelity check (issue: real networks): torchvision's
`resnet50(weights=None)` with a fixed seed, its batch norms given non-trivial statistics (as
`HostWeights::random` does in Rust: scales in [0.5, 1.5], each block's last in [0.1, 0.4] so
the residual sums keep their scale, shifts and means in +-0.2, variances in [0.5, 2]), its state
dict as safetensors, a batch of random images and PyTorch's logits, for
`models/examples/resnet50.rs --weights OUT_DIR/model.safetensors --expect OUT_DIR/expect.safetensors`.

    python3 bench/resnet_ref.py OUT_DIR [--dtype fp16|fp32] [--batch 1] [--size 224]

Writes OUT_DIR/model.safetensors (F32) and OUT_DIR/expect.safetensors (input: F32
[batch, size, size, 3] channels-last, logits: F32 [batch, 1000]) and prints PyTorch's time per
run, eager and as a CUDA graph (channels-last, cuDNN).
"""
import argparse, os, time
import torch
import torchvision
from safetensors.torch import save_file


def randomize_batch_norms(model, g):
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            u = lambda lo, hi: torch.rand(n, generator=g) * (hi - lo) + lo
            last = name.endswith("bn3")
            m.weight.data = u(0.1, 0.4) if last else u(0.5, 1.5)
            m.bias.data = u(-0.2, 0.2)
            m.running_mean.data = u(-0.2, 0.2)
            m.running_var.data = u(0.5, 2.0)


def time_ms(fn, runs=50):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(runs):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / runs * 1e3


def cuda_graph(model, x):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(x)
    return graph


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.float32
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    model = torchvision.models.resnet50(weights=None)
    randomize_batch_norms(model, g)
    model = model.eval()
    x = torch.rand(args.batch, 3, args.size, args.size, generator=g) * 4 - 2
    os.makedirs(args.out, exist_ok=True)
    save_file({k: v.float().contiguous() for k, v in model.state_dict().items()},
              f"{args.out}/model.safetensors")
    model = model.to(dtype).cuda().to(memory_format=torch.channels_last)
    xd = x.to(dtype).cuda().to(memory_format=torch.channels_last)
    with torch.no_grad():
        logits = model(xd).float().cpu()
        eager = time_ms(lambda: model(xd))
        graph = cuda_graph(model, xd)
        replay = time_ms(graph.replay)
    save_file({"input": x.permute(0, 2, 3, 1).contiguous(), "logits": logits.contiguous()},
              f"{args.out}/expect.safetensors")
    print(f"torch {args.dtype} batch {args.batch} {args.size}x{args.size}: "
          f"eager {eager:.3f} ms, CUDA graph {replay:.3f} ms per run")
    for n in range(min(args.batch, 4)):
        print(f"torch image {n}: top 5 {logits[n].topk(5).indices.tolist()}")


if __name__ == "__main__":
    main()
