#!/usr/bin/python3
"""Golden reference for the policy transformer, computed by PyTorch.

For each tiny configuration this writes, under OUT/<name>/:
  model/config.json, model/model.safetensors  -- an HF-style checkpoint (random weights)
  golden.safetensors                          -- inputs and PyTorch's results:
      golden_version (1,)   format version of this file (1)
      tokens (B, T), lengths (B,), weights (B, T)   the batch (float-encoded ids) and the loss
                            weight of each token position (a masked, signed GRPO-like weight)
      normaliser (1,)       loss = -sum(weights * logprobs) / normaliser
      logits (B, T, V)      real rows only (padding rows are zero)
      logprobs (B, T)       [b, t] = log p(tokens[b, t] | tokens[b, <t]); 0 at t = 0 and padding
      tempered.temperature (1,), tempered.logprobs (B, T), tempered.grad.<HF name>
                            the same at a sampling temperature: log softmax(logits / T), and the
                            gradients of the loss over those log-probs (fresh, not accumulated)
      loss (1,)
      grad.<HF name>        every parameter's gradient of the loss
      adamw_losses (5,)     the loss before each of 5 AdamW steps (clipping at 1.0)
      adamw.* (1,)          the optimizer settings used

The model is written here from HF's Llama/Qwen2/Qwen3 definitions (transformers is not needed):
RMSNorm in fp32, rotate-half RoPE with HF's inv_freq arithmetic, repeat_kv for GQA, eager
attention with a causal mask, SwiGLU MLP. Each sequence runs on its own (no padding), so the
C++ padded batch is checked against an independent computation.
Run: /usr/bin/python3 tests/model/make_golden.py OUT
"""
import json
import math
import os
import struct
import sys

import torch

GOLDEN_VERSION = 1
TEMPERATURE = 0.7

CONFIGS = {
    # Qwen2: GQA (4 query heads on 2 KV heads), biases on q/k/v, untied LM head.
    "qwen2_gqa_bias_untied": dict(
        model_type="qwen2", vocab_size=97, hidden_size=64, intermediate_size=88,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, rope_theta=10000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=False),
    # Llama: tied embeddings, explicit head_dim != hidden/heads, one KV head, attention_bias
    # (q/k/v/o biases), rope_theta inside rope_parameters (transformers v5).
    "llama_tied_bias": dict(
        model_type="llama", vocab_size=83, hidden_size=48, intermediate_size=72,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=10,
        max_position_embeddings=64, rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        rms_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=True),
    # Qwen3: an RMSNorm over each head's query and key (q_norm, k_norm) before RoPE, no biases,
    # tied embeddings, head_dim given and != hidden/heads (as in Qwen3-0.6B: 16 x 128 > 1024).
    "qwen3_qk_norm_tied": dict(
        model_type="qwen3", vocab_size=89, hidden_size=48, intermediate_size=80,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=64, rope_theta=1000000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=True, attention_bias=False, use_sliding_window=False),
}

LENGTHS = [13, 7, 10]
ADAMW = dict(lr=3e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0)


def write_safetensors(path, tensors, metadata=None):
    header = {"__metadata__": metadata or {"format": "pt"}}
    offset = 0
    blobs = []
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def cfg_value(cfg, key):
    if key == "head_dim":
        return cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    if key == "rope_theta":
        return cfg.get("rope_parameters", {}).get("rope_theta", cfg.get("rope_theta", 10000.0))
    raise KeyError(key)


def make_params(cfg, gen):
    V, C, I = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
    L, H, Hkv, D = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg_value(cfg, "head_dim")
    qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    o_bias = cfg["model_type"] != "qwen2" and cfg.get("attention_bias", False)
    qk_norm = cfg["model_type"] == "qwen3"
    p = {}

    def rnd(*shape, std=0.08):
        return torch.randn(*shape, generator=gen) * std

    p["model.embed_tokens.weight"] = rnd(V, C, std=0.5)
    if not cfg["tie_word_embeddings"]:
        p["lm_head.weight"] = rnd(V, C, std=0.2)
    for l in range(L):
        pre = f"model.layers.{l}."
        p[pre + "self_attn.q_proj.weight"] = rnd(H * D, C, std=0.2)
        p[pre + "self_attn.k_proj.weight"] = rnd(Hkv * D, C, std=0.2)
        p[pre + "self_attn.v_proj.weight"] = rnd(Hkv * D, C, std=0.2)
        p[pre + "self_attn.o_proj.weight"] = rnd(C, H * D, std=0.2)
        if qkv_bias:
            p[pre + "self_attn.q_proj.bias"] = rnd(H * D, std=0.1)
            p[pre + "self_attn.k_proj.bias"] = rnd(Hkv * D, std=0.1)
            p[pre + "self_attn.v_proj.bias"] = rnd(Hkv * D, std=0.1)
        if o_bias:
            p[pre + "self_attn.o_proj.bias"] = rnd(C, std=0.1)
        p[pre + "mlp.gate_proj.weight"] = rnd(I, C, std=0.2)
        p[pre + "mlp.up_proj.weight"] = rnd(I, C, std=0.2)
        p[pre + "mlp.down_proj.weight"] = rnd(C, I, std=0.2)
        p[pre + "input_layernorm.weight"] = 1.0 + rnd(C, std=0.1)
        p[pre + "post_attention_layernorm.weight"] = 1.0 + rnd(C, std=0.1)
        if qk_norm:
            p[pre + "self_attn.q_norm.weight"] = 1.0 + rnd(D, std=0.3)
            p[pre + "self_attn.k_norm.weight"] = 1.0 + rnd(D, std=0.3)
    p["model.norm.weight"] = 1.0 + rnd(C, std=0.1)
    return {k: v.clone().requires_grad_(True) for k, v in p.items()}


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(T, D, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    pos = torch.arange(T).float()
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def forward_logits(cfg, p, ids):
    """Logits (T, V) of one unpadded sequence."""
    C, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    H, Hkv, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg_value(cfg, "head_dim")
    eps, T = cfg["rms_norm_eps"], len(ids)
    cos, sin = rope_cos_sin(T, D, cfg_value(cfg, "rope_theta"))

    def linear(x, name):
        return torch.nn.functional.linear(x, p[name + ".weight"], p.get(name + ".bias"))

    x = p["model.embed_tokens.weight"][ids]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(L):
        pre = f"model.layers.{l}."
        h = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        q = linear(h, pre + "self_attn.q_proj").view(T, H, D)
        k = linear(h, pre + "self_attn.k_proj").view(T, Hkv, D)
        if cfg["model_type"] == "qwen3":  # Qwen3Attention: q_norm/k_norm over head_dim, then RoPE
            q = rms_norm(q, p[pre + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, p[pre + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(0, 1), k.transpose(0, 1)
        v = linear(h, pre + "self_attn.v_proj").view(T, Hkv, D).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // Hkv, dim=0)  # repeat_kv: query head h uses KV head h // (H/Hkv)
        v = v.repeat_interleave(H // Hkv, dim=0)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + mask, dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, H * D)
        x = x + linear(y, pre + "self_attn.o_proj")
        h = rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        gate = linear(h, pre + "mlp.gate_proj")
        up = linear(h, pre + "mlp.up_proj")
        x = x + linear(torch.nn.functional.silu(gate) * up, pre + "mlp.down_proj")
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else p["lm_head.weight"]
    return x @ head.t()


def batch_loss(cfg, p, seqs, weights, normaliser, temperature=1.0):
    B, T = len(seqs), max(len(s) for s in seqs)
    logits_out = torch.zeros(B, T, cfg["vocab_size"])
    lp_out = torch.zeros(B, T)
    loss = 0.0
    for b, ids in enumerate(seqs):
        logits = forward_logits(cfg, p, torch.tensor(ids))
        lp = torch.log_softmax(logits[:-1] / temperature, dim=-1).gather(
            1, torch.tensor(ids[1:])[:, None])[:, 0]
        loss = loss - (weights[b, 1: len(ids)] * lp).sum() / normaliser
        logits_out[b, : len(ids)] = logits.detach()
        lp_out[b, 1: len(ids)] = lp.detach()
    return loss, logits_out, lp_out


def make_one(name, cfg, out_dir, seed):
    gen = torch.Generator().manual_seed(seed)
    p = make_params(cfg, gen)
    model_dir = os.path.join(out_dir, name, "model")
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(model_dir, "model.safetensors"), p)

    V = cfg["vocab_size"]
    seqs = [torch.randint(0, V, (n,), generator=gen).tolist() for n in LENGTHS]
    B, T = len(seqs), max(LENGTHS)
    tokens = torch.zeros(B, T)
    weights = torch.zeros(B, T)
    for b, ids in enumerate(seqs):
        tokens[b, : len(ids)] = torch.tensor(ids, dtype=torch.float32)
        prompt = 3 + b  # the first tokens are a prompt: no loss
        adv = [1.0, -0.5, 0.75][b]  # signed per-sequence weights, as GRPO advantages are
        weights[b, prompt: len(ids)] = adv
    normaliser = float(sum(len(s) - 3 - b for b, s in enumerate(seqs)))

    loss, logits, lp = batch_loss(cfg, p, seqs, weights, normaliser)
    loss.backward()
    golden = {
        "golden_version": torch.tensor([float(GOLDEN_VERSION)]),
        "tokens": tokens, "lengths": torch.tensor([float(n) for n in LENGTHS]), "weights": weights,
        "normaliser": torch.tensor([normaliser]), "logits": logits, "logprobs": lp,
        "loss": torch.tensor([loss.item()]),
    }
    for k, v in p.items():
        golden["grad." + k] = v.grad.detach().clone()
        v.grad = None
    # The RL trainer's log-probs at a sampling temperature (veRL divides the logits likewise).
    loss_t, _, lp_t = batch_loss(cfg, p, seqs, weights, normaliser, temperature=TEMPERATURE)
    loss_t.backward()
    golden["tempered.temperature"] = torch.tensor([TEMPERATURE])
    golden["tempered.logprobs"] = lp_t
    for k, v in p.items():
        golden["tempered.grad." + k] = v.grad.detach().clone()
        v.grad = None

    # Five AdamW steps: decay on matrices only, global-norm clipping, constant lr.
    decay = [v for k, v in p.items() if v.dim() >= 2]
    no_decay = [v for k, v in p.items() if v.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ADAMW["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=ADAMW["lr"], betas=(ADAMW["beta1"], ADAMW["beta2"]), eps=ADAMW["eps"])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss, _, _ = batch_loss(cfg, p, seqs, weights, normaliser)
        loss.backward()
        losses.append(loss.item())
        torch.nn.utils.clip_grad_norm_(list(p.values()), ADAMW["grad_clip"])
        opt.step()
    golden["adamw_losses"] = torch.tensor(losses)
    for k, v in ADAMW.items():
        golden["adamw." + k] = torch.tensor([v])
    write_safetensors(os.path.join(out_dir, name, "golden.safetensors"), golden,
                      {"format": "pt", "golden_version": str(GOLDEN_VERSION)})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_golden.py OUT_DIR")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for i, (name, cfg) in enumerate(CONFIGS.items()):
        make_one(name, cfg, sys.argv[1], seed=1234 + i)
    print("golden files written to", sys.argv[1])


if __name__ == "__main__":
    main()
