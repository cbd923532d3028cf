"""PyTorch reference for bench_elementwise: y = x*2 + 1 on the same sizes, CUDA-event timed,
median of 20 after warm-up, bytes read + written per second. Prints `torch axpb_<dtype>_tbps X`."""
import statistics, sys, torch

def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    n = mib << 18
    for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
        x = (torch.arange(n, device="cuda", dtype=torch.float32) % 2001 - 1000).div(256).add(0.001).to(dtype)
        y = torch.empty_like(x)
        one = torch.ones((), device="cuda", dtype=dtype)
        two = torch.full((), 2, device="cuda", dtype=dtype)
        # One fused kernel, y = 1 + 2*x, as the Vulkan side does.
        for _ in range(20):
            torch.addcmul(one, x, two, out=y)
        assert torch.allclose(y[:1000].float(), (x[:1000].float() * 2 + 1), rtol=1e-2)
        times = []
        for _ in range(30):
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); torch.addcmul(one, x, two, out=y); b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        print(f"torch axpb_{name}_tbps {2 * n * x.element_size() / statistics.median(times) / 1e12:.3f}")

if __name__ == "__main__":
    main()
