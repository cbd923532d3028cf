"""PyTorch's side of ResNet-50's fidelity check (issue: real networks): torchvision's
`resnet50(weights=None)` with a fixed seed and non-trivial batch-norm statistics, its state
dict as safetensors, a random input and PyTorch's logits, for `models/examples/resnet50.rs
--expect`.

    python3 bench/resnet_ref.py OUT_DIR [--batch 1] [--dtype fp16|fp32]

Writes OUT_DIR/model.safetensors (fp32) and OUT_DIR/expect.safetensors (input: F32
[batch, 224, 224, 3] channels-last, logits: F32 [batch, 1000], computed in --dtype) and prints
PyTorch's time per batch (eager and as a CUDA graph).
"""
import argparse, os
import torch
import torchvision
from safetensors.torch import save_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    args = ap.parse_args()
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 2.0)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    os.makedirs(args.out, exist_ok=True)
    save_file(state, f"{args.out}/model.safetensors")
    dtype = torch.float16 if args.dtype == "fp16" else torch.float32
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    net = model.to(dtype).cuda().to(memory_format=torch.channels_last)
    g = torch.Generator().manual_seed(1)
    x = torch.rand((args.batch, 3, 224, 224), generator=g) * 2 - 1
    xc = x.to(dtype).cuda().to(memory_format=torch.channels_last)
    with torch.no_grad():
        logits = net(xc).float().cpu()
        # Time: eager and a CUDA graph, GPU time per batch.
        for _ in range(3):
            net(xc)
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            net(xc)
        b.record(); torch.cuda.synchronize()
        eager = a.elapsed_time(b) / 20
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                net(xc)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            net(xc)
        a.record()
        for _ in range(20):
            graph.replay()
        b.record(); torch.cuda.synchronize()
        replay = a.elapsed_time(b) / 20
    save_file({"input": x.permute(0, 2, 3, 1).contiguous(), "logits": logits.contiguous()},
              f"{args.out}/expect.safetensors")
    print(f"torch {args.dtype} batch {args.batch}: eager {eager:.3f} ms, CUDA graph {replay:.3f} ms per batch")
    print(f"torch top-5 of image 0: {logits[0].topk(5).indices.tolist()}")


if __name__ == "__main__":
    main()
