"""PyTorch / cuBLAS references for vkprism-bench, run in the same command on the same GPU.

Same cases, shapes and byte / FLOP counts as bench/src/*.rs, the same method: each kernel's call
captured 20 times back to back in a CUDA graph (vkprism: 20 calls in one command list), warm-up
by GPU time (>= 300 ms) right before each series, median of >= 20 CUDA-event-timed replays lasting
>= 200 ms in all, divided by 20, the SM clock read by nvidia-smi during the series; no host launch
inside the timed span on either side. `gemm_wall` is the labelled exception: the GEMM as an
eager caller waits for it (one call and a synchronize, host wall time), beside vkprism's
submit and wait. Writes a JSON array of
{case, shape, dtype, value, unit, sm_clock_mhz, reference, method} records.

    python3 bench/torch_ref.py [--cases gemm,elementwise,dispatch] --json FILE
"""
import argparse, json, os, statistics, subprocess, threading, time
import torch

GEMM_SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (4096, 512, 14336)]
ELEMENTWISE_MIB = [64, 256, 1024]
CONV_SHAPES = [(56, 64), (14, 64), (56, 256), (14, 256)]
# Depthwise 3x3, batch 8, pad 1: (spatial size, channels, stride), as bench/src/conv_dw.rs.
DW_SHAPES = [(112, 32, 1), (56, 64, 1), (56, 128, 2)]
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def sm_clock():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10).stdout
        return int(out.strip())
    except Exception:
        return None


def timed(fn, warmup_s=0.3, min_runs=20, min_series_s=0.2, sample=None, until_clock=False):
    """Median seconds of fn() as `sample` times one call (default: on the GPU, `event_time`)
    after warming up by GPU time; the SM clock during the series, which lasts until the clock
    has been read where `until_clock`."""
    sample = sample or event_time
    busy = 0.0
    while busy < warmup_s:
        busy += event_time(fn)
    clock = {}
    reader = threading.Thread(target=lambda: clock.setdefault("mhz", sm_clock()))
    reader.start()
    times = []
    while len(times) < min_runs or sum(times) < min_series_s or (until_clock and reader.is_alive()):
        times.append(sample(fn))
    reader.join()
    return statistics.median(times), clock.get("mhz")


def event_time(fn):
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3


REPS = 20

# Whole networks: bench/networks_ref.py times them.
NETWORK_CASES = ("decoder", "resnet50")


def graph_timed(fn, reps=REPS):
    """Seconds per call of fn() and the SM clock: a CUDA graph of `reps` calls back to back,
    replayed and timed as `timed` times a call (no host launch inside the timed span)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    t, mhz = timed(g.replay)
    return t / reps, mhz


def rand(shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    m = torch.rand(shape, device="cuda", generator=g) * 0.9 + 0.1
    s = torch.randint(0, 2, shape, device="cuda", generator=g) * 2 - 1
    return (m * s).to(dtype)


def gemm():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    out = []
    for m, n, k in GEMM_SHAPES:
        for dname, dtype in DTYPES.items():
            a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
            c = torch.empty((m, n), device="cuda", dtype=dtype)
            torch.matmul(a, b, out=c)
            want = a[:8].double() @ b.double()
            assert torch.allclose(c[:8].double(), want, rtol=2e-2, atol=2e-2 * k ** 0.5), f"gemm {dname}"
            t, mhz = graph_timed(lambda: torch.matmul(a, b, out=c))
            out.append(rec("gemm", f"{m}x{n}x{k}", dname, 2 * m * n * k / t / 1e12, "TFLOP/s", mhz,
                           f"torch.matmul {dname} (cuBLAS{', TF32 off' if dname == 'fp32' else ''})"))
        # int8 x int8 -> int32, as vkprism's gemm_int8.
        g = torch.Generator(device="cuda").manual_seed(3)
        a = torch.randint(-127, 128, (m, k), device="cuda", dtype=torch.int8, generator=g)
        b = torch.randint(-127, 128, (k, n), device="cuda", dtype=torch.int8, generator=g)
        c = torch._int_mm(a, b)
        assert torch.equal(c[:8].double(), a[:8].double() @ b.double()), "gemm int8"  # exact below 2^53
        t, mhz = graph_timed(lambda: torch._int_mm(a, b))
        out.append(rec("gemm", f"{m}x{n}x{k}", "int8", 2 * m * n * k / t / 1e12, "TOP/s", mhz,
                       "torch._int_mm (int8 -> int32)"))
    return out


def wall_time(fn):
    """Host seconds of fn() then torch.cuda.synchronize(): what an eager caller waits for,
    launch included."""
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t


def gemm_wall():
    """The GEMM as an eager caller sees it, beside vkprism's `gemm_wall` case (submit, wait)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    out = []
    for m, n, k in GEMM_SHAPES:
        for dname, dtype in DTYPES.items():
            a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
            c = torch.empty((m, n), device="cuda", dtype=dtype)
            t, mhz = timed(lambda: torch.matmul(a, b, out=c), sample=wall_time, until_clock=True)
            out.append(rec("gemm", f"{m}x{n}x{k} wall", dname, t * 1e6, "us", mhz,
                           f"torch.matmul {dname} eager", "host wall time of one eager call, synchronized, median"))
    return out


def elementwise():
    out = []
    for mib in ELEMENTWISE_MIB:
        n = mib << 18
        for dname in ("fp32", "fp16"):
            dtype = DTYPES[dname]
            x, x2 = rand((n,), dtype, 3), rand((n,), dtype, 4)
            y = torch.empty_like(x)
            one = torch.ones((), device="cuda", dtype=dtype)
            two = torch.full((), 2, device="cuda", dtype=dtype)
            ops = {
                "axpb": (lambda: torch.addcmul(one, x, two, out=y), 2, "torch.addcmul"),
                "copy": (lambda: y.copy_(x), 2, "Tensor.copy_"),
                "add": (lambda: torch.add(x, x2, out=y), 3, "torch.add"),
                "relu": (lambda: torch.clamp_min(x, 0, out=y), 2, "torch.clamp_min"),
            }
            for op, (fn, streams, what) in ops.items():
                t, mhz = graph_timed(fn)
                out.append(rec("elementwise", f"{op} {mib}MiB", dname,
                               streams * n * x.element_size() / t / 1e12, "TB/s", mhz, f"{what} {dname}"))
            del x, x2, y
    return out


def conv2d():
    torch.backends.cudnn.allow_tf32 = False
    out = []
    for hw, c in CONV_SHAPES:
        for dname in ("fp32", "fp16"):
            dtype = DTYPES[dname]
            x = rand((8, c, hw, hw), dtype, 5).to(memory_format=torch.channels_last)
            w = rand((c, c, 3, 3), dtype, 6).to(memory_format=torch.channels_last)
            fn = lambda: torch.nn.functional.conv2d(x, w, padding=1)
            t, mhz = graph_timed(fn)
            flops = 2 * (8 * hw * hw) * c * (9 * c)
            out.append(rec("conv2d", f"b8 {hw}x{hw} {c}->{c} 3x3", dname, flops / t / 1e12, "TFLOP/s", mhz,
                           f"F.conv2d {dname} channels_last (cuDNN{', TF32 off' if dname == 'fp32' else ''})"))
    out += conv2d_dw()
    return out


def conv2d_dw():
    out = []
    for hw, c, stride in DW_SHAPES:
        for dname in ("fp32", "fp16"):
            dtype = DTYPES[dname]
            x = rand((8, c, hw, hw), dtype, 7).to(memory_format=torch.channels_last)
            w = rand((c, 1, 3, 3), dtype, 8).to(memory_format=torch.channels_last)
            fn = lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=1, groups=c)
            t, mhz = graph_timed(fn)
            oh = (hw + 2 - 3) // stride + 1
            flops = 2 * (8 * oh * oh) * c * 9
            label = f"dw b8 {hw}x{hw} {c} 3x3" + (f" s{stride}" if stride != 1 else "")
            out.append(rec("conv2d", label, dname, flops / t / 1e12, "TFLOP/s", mhz,
                           f"F.conv2d groups=c {dname} channels_last (cuDNN{', TF32 off' if dname == 'fp32' else ''})"))
    return out


def transfer():
    n = 1 << 30
    host = torch.randint(1, 250, (n,), dtype=torch.uint8)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    out = []
    for name, fn in (("upload", lambda: dev.copy_(host)), ("download", lambda: host.copy_(dev))):
        fn(); torch.cuda.synchronize()
        times = []
        for _ in range(5):
            t = time.perf_counter(); fn(); torch.cuda.synchronize(); times.append(time.perf_counter() - t)
        out.append(rec("transfer", f"{name} 1024MiB", "fp32", n / statistics.median(times) / 1e9, "GB/s",
                       sm_clock(), f"Tensor.copy_ {'host to device' if name == 'upload' else 'device to host'}, pageable",
                       "wall time of the call, end to end"))
    return out


def dispatch():
    x = torch.ones(64, device="cuda")
    torch.cuda.synchronize()
    clock = sm_clock()
    rt = []
    for _ in range(1100):
        t = time.perf_counter()
        x.add_(1.0)
        torch.cuda.synchronize()
        rt.append(time.perf_counter() - t)
    out = [rec("dispatch", "round_trip", "-", statistics.median(rt[100:]) * 1e6, "us", clock,
               "one tiny kernel + torch.cuda.synchronize", "wall time of launch and synchronize, end to end")]
    n = 1000
    bufs = [torch.ones(64, device="cuda") for _ in range(n)]
    for name, dependent in (("dependent", True), ("independent", False)):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for i in range(n):
                (x if dependent else bufs[i]).add_(1.0)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(n):
                (x if dependent else bufs[i]).add_(1.0)
        t, mhz = timed(g.replay)
        out.append(rec("dispatch", f"replay_{name}_per_dispatch", "fp32", t * 1e6 / n, "us", mhz,
                       f"1000 {name} kernels in a CUDA graph", "cuda-graph of 1000 kernels, per kernel"))
    return out


def group(name):
    """Whether the operators' group `name` runs (bench/src/ops.rs's `group`)."""
    listed = os.environ.get("VKPRISM_BENCH_OPS")
    return listed is None or name in listed.split(",")


def ops():
    """The operation layer's case (bench/src/ops.rs): rows, element-wise, attention and a
    token's draw, each a CUDA graph of 20 calls; the groups VKPRISM_BENCH_OPS lists, as there."""
    F = torch.nn.functional
    out = []
    for dname in ("fp32", "fp16"):
        dtype = DTYPES[dname]
        if group("rows"):
            n = 4096
            x, g = rand((n, n), dtype, 1), rand((n,), dtype, 2)
            rms = (lambda: F.rms_norm(x, (n,), g, 1e-5)) if hasattr(F, "rms_norm") else \
                (lambda: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(dtype) * g)
            for name, fn, what in (("softmax", lambda: torch.softmax(x, -1), "torch.softmax"),
                                   ("layer_norm", lambda: F.layer_norm(x, (n,), g, g, 1e-5), "F.layer_norm"),
                                   ("rms_norm", rms, "F.rms_norm" if hasattr(F, "rms_norm") else "rms norm, eager ops")):
                t, mhz = graph_timed(fn)
                out.append(rec(name, f"{n}x{n}", dname, 2 * n * n * x.element_size() / t / 1e12, "TB/s", mhz,
                               f"{what} {dname}"))
            del x
        if group("elementwise"):
            for mib in (64, 256):
                m = mib << 18
                x, row = rand((m // 4096, 4096), dtype, 3), rand((4096,), dtype, 4)
                y = torch.empty_like(x)
                for shape, fn, what, case in (
                        (f"gelu {mib}MiB", lambda: F.gelu(x), "F.gelu", "unary"),
                        (f"silu {mib}MiB", lambda: F.silu(x), "F.silu", "unary"),
                        (f"add row {mib}MiB", lambda: torch.add(x, row, out=y), "torch.add broadcast", "broadcast")):
                    t, mhz = graph_timed(fn)
                    out.append(rec(case, shape, dname, 2 * m * x.element_size() / t / 1e12, "TB/s", mhz,
                                   f"{what} {dname}"))
                del x, y
    if group("stem"):
        for dname in ("fp32", "fp16"):
            torch.backends.cudnn.allow_tf32 = False
            dtype = DTYPES[dname]
            for batch in (1, 8):
                x = rand((batch, 3, 224, 224), dtype, 18).to(memory_format=torch.channels_last)
                w = rand((64, 3, 7, 7), dtype, 19).to(memory_format=torch.channels_last)
                t, mhz = graph_timed(lambda: F.conv2d(x, w, stride=2, padding=3))
                out.append(rec("conv2d", f"stem b{batch} 224x224 3->64 7x7 s2", dname,
                               2 * batch * 112 * 112 * 64 * 49 * 3 / t / 1e12, "TFLOP/s", mhz,
                               f"F.conv2d {dname} channels_last (cuDNN{', TF32 off' if dname == 'fp32' else ''})"))
    if group("casts"):
        n = 256 << 18
        x32, x16 = rand((n,), torch.float32, 13), rand((n,), torch.float16, 14)
        y16, y32 = torch.empty_like(x16), torch.empty_like(x32)
        for shape, fn in ((f"f32 to f16 256MiB", lambda: y16.copy_(x32)), (f"f16 to f32 256MiB", lambda: y32.copy_(x16))):
            t, mhz = graph_timed(fn)
            out.append(rec("cast", shape, "fp32", 6 * n / t / 1e12, "TB/s", mhz, f"Tensor.copy_ across dtypes"))
        del x32, x16, y16, y32
    if group("gemv"):
        for nn, k in ((4096, 4096), (14336, 4096), (4096, 14336)):
            w, x = rand((nn, k), torch.float16, 15), rand((1, k), torch.float16, 16)
            t, mhz = graph_timed(lambda: F.linear(x, w))
            out.append(rec("gemv", f"{nn}x{k}", "fp16", nn * k * 2 / t / 1e12, "TB/s", mhz,
                           f"F.linear fp16, one token (cuBLAS GEMV)"))
            del w
    if group("attention"):
        heads, d, prompt, cache = 32, 128, 2048, 4096
        q, k, v = (rand((1, heads, prompt, d), torch.float16, s) for s in (5, 6, 7))
        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        t, mhz = graph_timed(fn)
        out.append(rec("attention", f"prefill {prompt} h{heads} d{d} causal", "fp16",
                       4 * prompt * prompt * heads * d / 2 / t / 1e12, "TFLOP/s", mhz,
                       f"F.scaled_dot_product_attention fp16 (flash)"))
        q1 = rand((1, heads, 1, d), torch.float16, 9)
        kc, vc = rand((1, heads, cache, d), torch.float16, 11), rand((1, heads, cache, d), torch.float16, 12)
        t, mhz = graph_timed(lambda: F.scaled_dot_product_attention(q1, kc, vc))
        out.append(rec("attention", f"decode kv{cache} h{heads} d{d}", "fp16",
                       2 * cache * heads * d * 2 / t / 1e12, "TB/s", mhz,
                       f"F.scaled_dot_product_attention fp16, one query"))
        # A grouped-query decoder's step (TinyLlama's heads): 32 query heads over 4 key/value heads.
        for cache in (512, 2048):
            qg = rand((1, 32, 1, 64), torch.float16, 13)
            kg, vg = rand((1, 4, cache, 64), torch.float16, 14), rand((1, 4, cache, 64), torch.float16, 15)
            t, mhz = graph_timed(lambda: F.scaled_dot_product_attention(qg, kg, vg, enable_gqa=True))
            out.append(rec("attention", f"decode kv{cache} h32/4 d64", "fp16",
                           2 * cache * 4 * 64 * 2 / t / 1e12, "TB/s", mhz,
                           f"F.scaled_dot_product_attention fp16, one query, enable_gqa"))
    if group("sample"):
        # A token drawn from one row of logits (bench/src/ops.rs `sample`), as `transformers`
        # samples: fp32 logits over the temperature, top-k's k-th value, top-p over the sorted
        # softmax's running sum; the draw from the softmax by an exponential race (vLLM's draw,
        # multinomial's distribution, capturable in a graph).
        for n in (32000, 151936):
            g = torch.Generator(device="cuda").manual_seed(21)
            x = (torch.rand((1, n), device="cuda", generator=g) * 16 - 8).half()
            for what, top_k, top_p in (("temperature 0.8", 0, 1.0), ("top_k 40", 40, 1.0),
                                       ("top_p 0.95", 0, 0.95), ("top_k 40 top_p 0.95", 40, 0.95)):
                t, mhz = graph_timed(lambda: draw(x, 0.8, top_k, top_p))
                out.append(rec("sample", f"1x{n} {what}", "fp16", t * 1e6, "us", mhz,
                               "transformers' warpers (topk, sort, cumsum), exponential race"))
    return out


def draw(x, temperature, top_k, top_p):
    s = x.float() / temperature
    if top_k:
        s = s.masked_fill(s < torch.topk(s, top_k)[0][..., -1, None], float("-inf"))
    if top_p < 1.0:
        sorted_s, order = torch.sort(s, descending=False)
        remove = sorted_s.softmax(-1).cumsum(-1) <= 1 - top_p
        remove[..., -1:] = False
        s = s.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    probs = s.softmax(-1)
    return (probs / torch.empty_like(probs).exponential_()).argmax(-1)


def rec(case, shape, dtype, value, unit, mhz, reference, method=f"cuda-graph x{REPS}"):
    r = dict(case=case, shape=shape, dtype=dtype, value=value, unit=unit, sm_clock_mhz=mhz, reference=reference,
             method=method)
    print(f"torch {case:<12} {shape:<30} {dtype:<6} {value:10.3f} {unit:<8} SM clock {mhz} MHz  ({reference}; {method})",
          flush=True)
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="dispatch,elementwise,gemm,conv2d,transfer")
    p.add_argument("--json", required=True)
    args = p.parse_args()
    records = []
    networks = [c for c in args.cases.split(",") if c in NETWORK_CASES]
    for case in args.cases.split(","):
        if case not in NETWORK_CASES:
            records += {"gemm": gemm, "gemm_wall": gemm_wall, "elementwise": elementwise, "dispatch": dispatch, "conv2d": conv2d,
                        "conv2d_dw": conv2d_dw, "transfer": transfer, "ops": ops}[case]()
    if networks:
        import networks_ref
        records += sum((getattr(networks_ref, c)() for c in networks), [])
    with open(args.json, "w") as f:
        json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
