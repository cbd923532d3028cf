"""PyTorch/CUDA reference for vkprism's dispatch benchmark, run in the same command on the GPU.

Measures, like runtime/examples/bench_dispatch.rs:
  - round trip: launch one tiny kernel + synchronize (median of 1000), the analogue of an
    empty-ish submit + fence wait;
  - per-kernel time inside a replayed CUDA graph of 1000 tiny dependent kernels (each reads what
    the previous wrote), the analogue of a replayed command list with barriers;
  - the same with 1000 independent kernels (each on its own buffer).
Prints one line per figure: `torch <name> <microseconds>`.
"""
import time, statistics, torch

def main():
    dev = torch.device("cuda")
    x = torch.ones(64, device=dev)
    torch.cuda.synchronize()
    rt = []
    for _ in range(1100):
        t = time.perf_counter()
        x.add_(1.0)
        torch.cuda.synchronize()
        rt.append(time.perf_counter() - t)
    print(f"torch round_trip_us {statistics.median(rt[100:]) * 1e6:.2f}")

    n = 1000
    bufs = [torch.ones(64, device=dev) for _ in range(n)]
    for name, dependent in (("dependent", True), ("independent", False)):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3):
                for i in range(n):
                    (x if dependent else bufs[i]).add_(1.0)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(n):
                (x if dependent else bufs[i]).add_(1.0)
        g.replay(); torch.cuda.synchronize()
        times = []
        for _ in range(20):
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); g.replay(); b.record(); torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1e3 / n)
        print(f"torch graph_{name}_per_kernel_us {statistics.median(times):.3f}")

if __name__ == "__main__":
    main()
