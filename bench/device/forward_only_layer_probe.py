# Measures, on a real GPU, a decoder layer's live memory in a no-grad forward
# (the RL log-prob pass) against what the same layer's training forward saves
# for backward: the bound estimator/forward_only_memory.h takes.
import json, os, torch
import torch.nn.functional as F

dev = torch.device("cuda")
torch.manual_seed(0)

class Layer(torch.nn.Module):
    """A Llama-style decoder layer: RMSNorm, GQA attention (SDPA, causal), RMSNorm, SwiGLU MLP."""
    def __init__(s, h, heads, kv, ffn):
        super().__init__()
        s.h, s.heads, s.kv, s.d = h, heads, kv, h // heads
        s.n1 = torch.nn.RMSNorm(h); s.n2 = torch.nn.RMSNorm(h)
        s.qkv = torch.nn.Linear(h, (heads + 2 * kv) * s.d, bias=False)
        s.o = torch.nn.Linear(h, h, bias=False)
        s.fc1 = torch.nn.Linear(h, 2 * ffn, bias=False)
        s.fc2 = torch.nn.Linear(ffn, h, bias=False)
    def forward(s, x):  # x: [T, h]
        T = x.shape[0]
        q, k, v = s.qkv(s.n1(x)).split([s.heads * s.d, s.kv * s.d, s.kv * s.d], dim=-1)
        q = q.view(T, s.heads, s.d).transpose(0, 1).unsqueeze(0)
        k = k.view(T, s.kv, s.d).transpose(0, 1).unsqueeze(0)
        v = v.view(T, s.kv, s.d).transpose(0, 1).unsqueeze(0)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + s.o(a.squeeze(0).transpose(0, 1).reshape(T, s.h))
        g, u = s.fc1(s.n2(x)).chunk(2, dim=-1)
        return x + s.fc2(F.silu(g) * u)

out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cases": []}
for name, (h, heads, kv, ffn), T in [("llama-8b", (4096, 32, 8, 14336), 8192),
                                     ("llama-8b", (4096, 32, 8, 14336), 16384),
                                     ("qwen3-30b-a3b attn+dense-ffn-6144", (2048, 32, 4, 6144), 16384)]:
    layer = Layer(h, heads, kv, ffn).to(dev, torch.bfloat16)
    x = torch.randn(T, h, device=dev, dtype=torch.bfloat16)
    for _ in range(2):
        with torch.no_grad(): layer(x)
    torch.cuda.synchronize(); torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
    with torch.no_grad(): y = layer(x)
    torch.cuda.synchronize()
    live = torch.cuda.max_memory_allocated() - base
    del y; torch.cuda.empty_cache()
    xg = x.detach().requires_grad_(True)
    base = torch.cuda.memory_allocated()
    y = layer(xg); torch.cuda.synchronize()
    saved = torch.cuda.memory_allocated() - base - y.numel() * y.element_size()
    del y, xg; torch.cuda.empty_cache()
    out["cases"].append({"layer": name, "tokens": T, "no_grad_live_peak": live,
                         "training_saved": saved, "ratio": round(live / saved, 3)})
    del layer, x
print(json.dumps(out, indent=1))
with open(os.path.join(os.environ.get("OUT", "."), "forward_only_probe.json"), "w") as f:
    json.dump(out, f, indent=1)
