#!/usr/bin/env python3
"""Single-GPU training rates with PyTorch on synthetic data, for topologies/compute.yaml's `measured` rows.

Each configuration (model, precision, batch) trains for a few seconds after a warm-up: forward, backward and
the optimizer step on one GPU, inputs already on the GPU. It prints one JSON object per configuration with the
step time, samples/s and the forward share of the step (compute.yaml's roofline assumes backward = 2 x forward),
and the dense matrix-product ceiling per precision; `--layers` adds each parameterised module's forward and
backward time (the simulator splits a pass over layers by their FLOPs). The models are the catalog's (topologies/models/): torchvision's
resnet50 and vit_b_16, transformers' BertForPreTraining and GPT2LMHeadModel built from their configurations.
"""
import argparse
import json
import time

import torch

PRECISIONS = ("fp32", "tf32", "amp", "bf16")


def transformer(name, seq_len):
    import transformers as tr
    if name.startswith("bert"):
        large = name == "bert_large"
        cfg = tr.BertConfig(hidden_size=1024 if large else 768, num_hidden_layers=24 if large else 12,
                            num_attention_heads=16 if large else 12,
                            intermediate_size=4096 if large else 3072)
        return tr.BertForPreTraining(cfg), cfg.vocab_size
    xl = name == "gpt2_xl"
    cfg = tr.GPT2Config(n_embd=1600 if xl else 768, n_layer=48 if xl else 12, n_head=25 if xl else 12,
                        n_positions=1024)
    return tr.GPT2LMHeadModel(cfg), cfg.vocab_size


def build(name, batch, seq_len, device):
    """Model, optimizer, and a function that returns the loss of one synthetic batch."""
    if name in ("resnet50", "vit_b16"):
        import torchvision
        model = torchvision.models.resnet50() if name == "resnet50" else torchvision.models.vit_b_16()
        x = torch.randn(batch, 3, 224, 224, device=device)
        y = torch.randint(0, 1000, (batch,), device=device)
        loss_fn = torch.nn.CrossEntropyLoss()
        opt = lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        return model, opt, x, lambda m, x: loss_fn(m(x), y)
    model, vocab = transformer(name, seq_len)
    ids = torch.randint(0, vocab, (batch, seq_len), device=device)
    opt = lambda m: torch.optim.AdamW(m.parameters(), lr=1e-4)
    if name.startswith("bert"):
        nsp = torch.randint(0, 2, (batch,), device=device)
        return model, opt, ids, lambda m, x: m(input_ids=x, labels=x, next_sentence_label=nsp).loss
    return model, opt, ids, lambda m, x: m(input_ids=x, labels=x).loss


def set_precision(precision):
    tf32 = precision != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return {"amp": torch.float16, "bf16": torch.bfloat16}.get(precision)


def time_steps(step, seconds, max_steps):
    torch.cuda.synchronize()
    start, n = time.perf_counter(), 0
    while n < max_steps and (n < 3 or time.perf_counter() - start < seconds):
        step()
        n += 1
        if n % 2 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n, n


def measure(name, precision, batch, seq_len, seconds, device):
    dtype = set_precision(precision)
    with torch.device(device):  # parameters initialised on the GPU: GPT-2 XL's 1.5 B take seconds on a CPU
        model, make_opt, x, loss_of = build(name, batch, seq_len, device)
    if name == "resnet50" and dtype is not None:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    opt = make_opt(model)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "amp")
    autocast = lambda: torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None)

    def train_step():
        with autocast():
            loss = loss_of(model, x)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    def forward_only():  # as in training: autograd records the graph, which is then dropped
        with autocast():
            loss_of(model, x)

    for _ in range(3):
        train_step()
    step_s, steps = time_steps(train_step, seconds, 200)
    fwd_s, _ = time_steps(forward_only, seconds / 3, 200)
    row = {"model": name, "precision": precision, "batch_per_gpu": batch, "steps": steps,
           "step_ms": round(step_s * 1e3, 3), "samples_per_sec": round(batch / step_s, 1),
           "forward_ms": round(fwd_s * 1e3, 3),
           "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
    if seq_len and name not in ("resnet50", "vit_b16"):
        row["seq_len"] = seq_len
    del model, opt
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return row


def bottleneck_out_of_place(m, x):
    out = m.relu(m.bn1(m.conv1(x)))
    out = m.relu(m.bn2(m.conv2(out)))
    out = m.bn3(m.conv3(out))
    return m.relu(out + (m.downsample(x) if m.downsample is not None else x))


def layer_profile(name, precision, batch, seq_len, device, reps=6):
    """Forward and backward time of every module that holds parameters, from CUDA events in module hooks.

    Backward runs from the module's output gradient to its input gradient. In-place ReLUs are made out of place:
    the hooks wrap module outputs, which an in-place op may not modify. The first repetition is dropped."""
    dtype = set_precision(precision)
    with torch.device(device):
        model, _, x, loss_of = build(name, batch, seq_len, device)
    for m in model.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
        if type(m).__name__ == "Bottleneck":  # torchvision's `out += identity`, out of place
            m.forward = lambda x, m=m: bottleneck_out_of_place(m, x)
    if name == "resnet50" and dtype is not None:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    leaves = [(n, m) for n, m in model.named_modules()
              if not any(True for _ in m.children()) and any(True for _ in m.parameters(recurse=False))]
    events = {}

    def mark(n, k):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        events.setdefault(n, {})[k] = e

    for n, m in leaves:
        m.register_forward_pre_hook(lambda mod, i, n=n: mark(n, "fs"))
        m.register_forward_hook(lambda mod, i, o, n=n: mark(n, "fe"))
        m.register_full_backward_pre_hook(lambda mod, g, n=n: mark(n, "bs"))
        m.register_full_backward_hook(lambda mod, gi, go, n=n: mark(n, "be"))
    totals = {n: [0.0, 0.0] for n, _ in leaves}
    for r in range(reps):
        events.clear()
        mark("step", "fs")
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = loss_of(model, x)
        mark("step", "fe")
        loss.backward()
        mark("step", "be")
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if r == 0:
            continue
        for n, _ in leaves:
            e = events.get(n, {})
            if "fe" in e:
                totals[n][0] += e["fs"].elapsed_time(e["fe"]) / (reps - 1)
            if "bs" in e and "be" in e:
                totals[n][1] += e["bs"].elapsed_time(e["be"]) / (reps - 1)
        totals.setdefault("(step)", [0.0, 0.0])
        step = events["step"]
        totals["(step)"][0] += step["fs"].elapsed_time(step["fe"]) / (reps - 1)
        totals["(step)"][1] += step["fe"].elapsed_time(step["be"]) / (reps - 1)
    del model
    torch.cuda.empty_cache()
    return {"model": name, "precision": precision, "batch_per_gpu": batch, "layers":
            [{"module": n, "forward_ms": round(f, 4), "backward_ms": round(b, 4)} for n, (f, b) in totals.items()]}


def matmul_ceiling(precision, n=8192, reps=10):
    dtype = {"amp": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)
    set_precision(precision)
    a, b = torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize()
    return {"matmul": n, "precision": precision,
            "tflops": round(2 * n**3 * reps / (time.perf_counter() - start) / 1e12, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", required=True,
                    help="MODEL:PRECISION:BATCH[:SEQ_LEN], e.g. resnet50:bf16:256 (repeatable)")
    ap.add_argument("--layers", action="append", default=[],
                    help="MODEL:PRECISION:BATCH[:SEQ_LEN]: also time every module with parameters (repeatable)")
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per configuration")
    ap.add_argument("--json", help="write all rows to this file")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    rows = [{"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
             "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}]
    print(json.dumps(rows[0]), flush=True)
    for p in PRECISIONS:
        rows.append(matmul_ceiling(p))
        print(json.dumps(rows[-1]), flush=True)
    for c in args.config + [("layers", c) for c in args.layers]:
        profile = isinstance(c, tuple)
        name, precision, batch, *seq = (c[1] if profile else c).split(":")
        seq_len = int(seq[0]) if seq else {"gpt2": 1024, "gpt2_xl": 1024}.get(name, 128)
        try:
            if profile:
                rows.append(layer_profile(name, precision, int(batch), seq_len, "cuda"))
            else:
                rows.append(measure(name, precision, int(batch), seq_len, args.seconds, "cuda"))
        except Exception as e:  # noqa: BLE001 - one failed configuration must not lose the others
            rows.append({"model": name, "precision": precision, "batch_per_gpu": int(batch), "error": str(e)[:200]})
            torch.cuda.empty_cache()
        print(json.dumps(rows[-1])[:400], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
