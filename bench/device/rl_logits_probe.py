# Measures, on a real GPU, what PyTorch's caching allocator holds at the peak
# of the log-prob pass's logits steps and of a CUDA-graph capture, per element.
import json, os, torch

dev = torch.device("cuda")
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

def peak_of(fn):
    torch.cuda.synchronize(); torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    r = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del r
    return peak

T, V, H = 16384, 151936, 2048
hidden = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
w = torch.randn(V, H, device=dev, dtype=torch.bfloat16) * 0.02
labels = torch.randint(0, V, (T,), device=dev)
E = T * V

@torch.no_grad()
def gemm_only():
    return hidden @ w.t()

@torch.no_grad()
def gemm_then_float():           # Float16Module fp32_output: bf16 logits, then .float()
    return (hidden @ w.t()).float()

@torch.no_grad()
def megatron_ce_inplace():       # fp32 logits; max, subtract in place, exp in place, sum, log
    x = (hidden @ w.t()).float()
    m = x.max(dim=-1)[0]
    x -= m.unsqueeze(-1)
    pred = x.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    torch.exp(x, out=x)
    s = x.sum(-1)
    return torch.log(s) - pred

@torch.no_grad()
def clone_then_ce():             # a clone kept for the entropy, then the in-place CE on the other
    x = (hidden @ w.t()).float()
    keep = x.clone()
    m = x.max(dim=-1)[0]
    x -= m.unsqueeze(-1)
    torch.exp(x, out=x)
    s = x.sum(-1)
    return torch.log(s), keep

@torch.no_grad()
def log_softmax_gather():        # out-of-place log_softmax on fp32 logits, then gather
    x = (hidden @ w.t()).float()
    return torch.log_softmax(x, dim=-1).gather(-1, labels.unsqueeze(-1))

@torch.no_grad()
def entropy_out_of_place():      # p = softmax(x); H = logsumexp(x) - sum(p * x)
    x = (hidden @ w.t()).float()
    p = torch.softmax(x, dim=-1)
    return torch.logsumexp(x, dim=-1) - (p * x).sum(-1)

for name, fn in [("gemm_bf16", gemm_only), ("gemm_then_float", gemm_then_float),
                 ("megatron_ce_inplace", megatron_ce_inplace), ("clone_then_ce", clone_then_ce),
                 ("log_softmax_gather", log_softmax_gather),
                 ("entropy_out_of_place", entropy_out_of_place)]:
    p = peak_of(fn)
    out[name] = {"peak_bytes": p, "bytes_per_logit": round(p / E, 3)}
del hidden, w

# CUDA graph pool: a stack of L SwiGLU MLP layers (h, f) captured at B tokens;
# the pool's reserved bytes against one layer's live intermediates.
def graph_pool(L, B, h=2048, f=6144):
    torch.cuda.synchronize(); torch.cuda.empty_cache()
    ws = [(torch.randn(2 * f, h, device=dev, dtype=torch.bfloat16) * 0.02,
           torch.randn(h, f, device=dev, dtype=torch.bfloat16) * 0.02) for _ in range(L)]
    x = torch.randn(B, h, device=dev, dtype=torch.bfloat16)
    def fwd(x):
        for w1, w2 in ws:
            g, u = (x @ w1.t()).chunk(2, dim=-1)
            x = x + (torch.nn.functional.silu(g) * u) @ w2.t()
        return x
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2): fwd(x)
    torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize(); torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        y = fwd(x)
    torch.cuda.synchronize()
    pool = torch.cuda.memory_reserved() - before
    one_layer = B * 2 * f * 2 + B * f * 2 * 2 + B * h * 2 * 2   # fc1 out, silu & product, out & residual
    del g, y, ws, x
    return {"layers": L, "tokens": B, "pool_reserved_bytes": pool, "one_layer_live_bytes": one_layer,
            "ratio": round(pool / one_layer, 3)}

out["graph_pool"] = [graph_pool(L, B) for L, B in [(4, 512), (16, 512), (16, 2048), (48, 512)]]

# Several sizes captured into one shared pool, largest first (as vLLM does).
def shared_pool(sizes, L=16, h=2048, f=6144):
    torch.cuda.synchronize(); torch.cuda.empty_cache()
    ws = [(torch.randn(2 * f, h, device=dev, dtype=torch.bfloat16) * 0.02,
           torch.randn(h, f, device=dev, dtype=torch.bfloat16) * 0.02) for _ in range(L)]
    def fwd(x):
        for w1, w2 in ws:
            g, u = (x @ w1.t()).chunk(2, dim=-1)
            x = x + (torch.nn.functional.silu(g) * u) @ w2.t()
        return x
    xs = {b: torch.randn(b, h, device=dev, dtype=torch.bfloat16) for b in sizes}
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for b in sizes: fwd(xs[b])
    torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize(); torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    pool = None; graphs = []; ys = []
    for b in sorted(sizes, reverse=True):
        g = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(g, pool=pool):
            ys.append(fwd(xs[b]))
        pool = g.pool(); graphs.append(g)
    torch.cuda.synchronize()
    total = torch.cuda.memory_reserved() - before
    largest = max(sizes)
    one_layer = largest * 2 * f * 2 + largest * f * 2 * 2 + largest * h * 2 * 2
    return {"sizes": len(sizes), "largest": largest, "pool_reserved_bytes": total,
            "one_layer_live_bytes_at_largest": one_layer, "ratio": round(total / one_layer, 3)}

out["shared_pool"] = [shared_pool([1, 2, 4, 8] + list(range(16, 513, 16))),
                      shared_pool([1, 2, 4, 8] + list(range(16, 513, 16)), L=48)]
os.makedirs(os.environ.get("OUT", "."), exist_ok=True)
with open(os.path.join(os.environ.get("OUT", "."), "rl_probe.json"), "w") as f:
    json.dump(out, f, indent=1)
print(json.dumps(out, indent=1))
