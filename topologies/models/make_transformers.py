#!/usr/bin/env python3
"""Writes bert_base.yaml, bert_large.yaml, gpt2.yaml, gpt2_xl.yaml, vit_b16.yaml, the MPT and the Llama files from each architecture's
hyper-parameters, in the reference implementation's parameter registration order (see README.md, "Transformers").
Run from this folder: python3 make_transformers.py"""

# name -> (display, reference implementation, hyper-parameters, reference parameter count or None, its source)
BERT = dict(vocab=30522, positions=512, types=2)
MODELS = {
    "bert_base": ("BERT-Base (pre-training heads)", "bert", dict(BERT, d=768, layers=12, ff=3072),
                  109482240, "BertModel bert-base-uncased, sum of model.parameters() (google-research/bert#1225)"),
    "bert_large": ("BERT-Large (pre-training heads)", "bert", dict(BERT, d=1024, layers=24, ff=4096), 335141888,
                   "BertModel bert-large-uncased: the same architecture at L=24, H=1024 (the README's '340M')"),
    "gpt2": ("GPT-2 (124M)", "gpt2", dict(vocab=50257, positions=1024, d=768, layers=12), 124439808,
             "GPT2LMHeadModel 'gpt2', OpenAI's 124M (openai/gpt-2#209); the LM head is tied to wte"),
    "gpt2_xl": ("GPT-2 XL (1.5B)", "gpt2", dict(vocab=50257, positions=1024, d=1600, layers=48), 1557611200,
                "GPT2LMHeadModel 'gpt2-xl', OpenAI's 1558M (openai/gpt-2#209)"),
    "vit_b16": ("ViT-B/16", "vit", dict(d=768, layers=12, ff=3072, patch=16, image=224, classes=1000), 86567656,
                "torchvision vit_b_16 weights meta num_params"),
}
# MPT: LLM Foundry's scripts/train/yamls/pretrain/mpt-1b.yaml and mpt-3b.yaml (d_model, n_heads, n_layers,
# expansion_ratio 4, vocab_size 50368, max_seq_len 2048) with MPTConfig's defaults of its benchmark tables
# (learned positions, biases, LayerNorm, GELU, no dropout); reference counts: NumParams of those tables
# (scripts/train/benchmarking/README.md) at sequence 2048.
MPT = dict(vocab=50368, positions=2048, max_tokens=65536)
MODELS.update({
    "mpt_1b": ("MPT-1B (LLM Foundry)", "mpt", dict(MPT, d=2048, layers=24, heads=16), 1315950592,
               "LLM Foundry mpt-1b.yaml, NumParams at 2048 tokens"),
    "mpt_3b": ("MPT-3B (LLM Foundry)", "mpt", dict(MPT, d=2560, layers=32, heads=20), 2651837440,
               "LLM Foundry mpt-3b.yaml, NumParams at 2048 tokens"),
})
# Llama: config.json of each Hugging Face meta-llama checkpoint (hidden_size, intermediate_size,
# num_hidden_layers, num_attention_heads, num_key_value_heads, vocab_size, max_position_embeddings);
# reference counts: the checkpoints' safetensors parameter totals as the Hub reports them.
LLAMA2 = dict(vocab=32000, positions=4096, data="llama2_pretraining")
LLAMA3 = dict(vocab=128256, positions=8192, data="llama3_pretraining")
MODELS.update({
    "llama2_7b": ("Llama 2 7B", "llama", dict(LLAMA2, d=4096, layers=32, ff=11008, heads=32, kv_heads=32),
                  6738415616, "meta-llama/Llama-2-7b-hf (Touvron et al., arXiv:2307.09288)"),
    "llama2_13b": ("Llama 2 13B", "llama", dict(LLAMA2, d=5120, layers=40, ff=13824, heads=40, kv_heads=40),
                   13015864320, "meta-llama/Llama-2-13b-hf"),
    "llama2_70b": ("Llama 2 70B", "llama", dict(LLAMA2, d=8192, layers=80, ff=28672, heads=64, kv_heads=8),
                   68976648192, "meta-llama/Llama-2-70b-hf (grouped-query attention, 8 KV heads)"),
    "llama3_8b": ("Llama 3 8B", "llama", dict(LLAMA3, d=4096, layers=32, ff=14336, heads=32, kv_heads=8),
                  8030261248, "meta-llama/Meta-Llama-3-8B (Llama Team, arXiv:2407.21783, Table 3)"),
    "llama3_70b": ("Llama 3 70B", "llama", dict(LLAMA3, d=8192, layers=80, ff=28672, heads=64, kv_heads=8),
                   70553706496, "meta-llama/Meta-Llama-3-70B"),
})


def bert(p):
    d, ff = p["d"], p["ff"]
    e = "bert.embeddings."
    t = [[e + "word_embeddings.weight", [p["vocab"], d]],  # also the MLM decoder (tied): a matmul per token
         [e + "position_embeddings.weight", [p["positions"], d], "lookup"],
         [e + "token_type_embeddings.weight", [p["types"], d], "lookup"],
         [e + "LayerNorm.weight", [d]], [e + "LayerNorm.bias", [d]]]
    for i in range(p["layers"]):
        l = f"bert.encoder.layer.{i}."
        for m in ("query", "key", "value"):
            t += [[l + f"attention.self.{m}.weight", [d, d]], [l + f"attention.self.{m}.bias", [d]]]
        t += [[l + "attention.output.dense.weight", [d, d], "attention"], [l + "attention.output.dense.bias", [d]],
              [l + "attention.output.LayerNorm.weight", [d]], [l + "attention.output.LayerNorm.bias", [d]],
              [l + "intermediate.dense.weight", [ff, d]], [l + "intermediate.dense.bias", [ff]],
              [l + "output.dense.weight", [d, ff]], [l + "output.dense.bias", [d]],
              [l + "output.LayerNorm.weight", [d]], [l + "output.LayerNorm.bias", [d]]]
    t += [["bert.pooler.dense.weight", [d, d], "per_sample"], ["bert.pooler.dense.bias", [d]]]
    base = sum(numel(x) for x in t)
    t += [["cls.predictions.transform.dense.weight", [d, d]], ["cls.predictions.transform.dense.bias", [d]],
          ["cls.predictions.transform.LayerNorm.weight", [d]], ["cls.predictions.transform.LayerNorm.bias", [d]],
          ["cls.predictions.bias", [p["vocab"]]],
          ["cls.seq_relationship.weight", [2, d], "per_sample"], ["cls.seq_relationship.bias", [2]]]
    return t, base


def gpt2(p):
    d = p["d"]
    t = [["transformer.wte.weight", [p["vocab"], d]],  # also the LM head (tied): a matmul per token
         ["transformer.wpe.weight", [p["positions"], d], "lookup"]]
    for i in range(p["layers"]):
        l = f"transformer.h.{i}."  # GPT-2's Conv1D stores [in, out]
        t += [[l + "ln_1.weight", [d]], [l + "ln_1.bias", [d]],
              [l + "attn.c_attn.weight", [d, 3 * d]], [l + "attn.c_attn.bias", [3 * d]],
              [l + "attn.c_proj.weight", [d, d], "attention"], [l + "attn.c_proj.bias", [d]],
              [l + "ln_2.weight", [d]], [l + "ln_2.bias", [d]],
              [l + "mlp.c_fc.weight", [d, 4 * d]], [l + "mlp.c_fc.bias", [4 * d]],
              [l + "mlp.c_proj.weight", [4 * d, d]], [l + "mlp.c_proj.bias", [d]]]
    t += [["transformer.ln_f.weight", [d]], ["transformer.ln_f.bias", [d]]]
    return t, sum(numel(x) for x in t)


def mpt(p):
    d = p["d"]
    t = [["transformer.wte.weight", [p["vocab"], d]],  # also the output layer (tied): a matmul per token
         ["transformer.wpe.weight", [p["positions"], d], "lookup"]]
    for i in range(p["layers"]):
        l = f"transformer.blocks.{i}."  # MPTBlock: norm_1, attn, norm_2, ffn; nn.Linear weights [out, in]
        t += [[l + "norm_1.weight", [d]], [l + "norm_1.bias", [d]],
              [l + "attn.Wqkv.weight", [3 * d, d]], [l + "attn.Wqkv.bias", [3 * d]],
              [l + "attn.out_proj.weight", [d, d], "attention"], [l + "attn.out_proj.bias", [d]],
              [l + "norm_2.weight", [d]], [l + "norm_2.bias", [d]],
              [l + "ffn.up_proj.weight", [4 * d, d]], [l + "ffn.up_proj.bias", [4 * d]],
              [l + "ffn.down_proj.weight", [d, 4 * d]], [l + "ffn.down_proj.bias", [d]]]
    t += [["transformer.norm_f.weight", [d]], ["transformer.norm_f.bias", [d]]]
    return t, sum(numel(x) for x in t)


def llama(p):
    d, ff, hd = p["d"], p["ff"], p["d"] // p["heads"]
    kv = p["kv_heads"] * hd
    t = [["model.embed_tokens.weight", [p["vocab"], d], "lookup"]]
    for i in range(p["layers"]):
        l = f"model.layers.{i}."  # LlamaDecoderLayer: RMSNorm weights only, no biases; SwiGLU feed-forward
        t += [[l + "self_attn.q_proj.weight", [d, d]], [l + "self_attn.k_proj.weight", [kv, d]],
              [l + "self_attn.v_proj.weight", [kv, d]], [l + "self_attn.o_proj.weight", [d, d], "attention"],
              [l + "mlp.gate_proj.weight", [ff, d]], [l + "mlp.up_proj.weight", [ff, d]],
              [l + "mlp.down_proj.weight", [d, ff]],
              [l + "input_layernorm.weight", [d]], [l + "post_attention_layernorm.weight", [d]]]
    t += [["model.norm.weight", [d]], ["lm_head.weight", [p["vocab"], d]]]  # lm_head untied: its own matmul
    return t, sum(numel(x) for x in t)


def vit(p):
    d, ff, side = p["d"], p["ff"], p["image"] // p["patch"]
    t = [["class_token", [1, 1, d]],
         ["conv_proj.weight", [d, 3, p["patch"], p["patch"]], [side, side]], ["conv_proj.bias", [d]],
         ["encoder.pos_embedding", [1, side * side + 1, d]]]
    for i in range(p["layers"]):
        l = f"encoder.layers.encoder_layer_{i}."
        t += [[l + "ln_1.weight", [d]], [l + "ln_1.bias", [d]],
              [l + "self_attention.in_proj_weight", [3 * d, d]], [l + "self_attention.in_proj_bias", [3 * d]],
              [l + "self_attention.out_proj.weight", [d, d], "attention"], [l + "self_attention.out_proj.bias", [d]],
              [l + "ln_2.weight", [d]], [l + "ln_2.bias", [d]],
              [l + "mlp.0.weight", [ff, d]], [l + "mlp.0.bias", [ff]],
              [l + "mlp.3.weight", [d, ff]], [l + "mlp.3.bias", [d]]]
    t += [["encoder.ln.weight", [d]], ["encoder.ln.bias", [d]],
          ["heads.head.weight", [p["classes"], d], "per_sample"], ["heads.head.bias", [p["classes"]]]]
    return t, sum(numel(x) for x in t)


def numel(tensor):
    n = 1
    for x in tensor[1]:
        n *= x
    return n


HEADERS = {
    "bert": ("# Source: the BERT architecture (Devlin et al., arXiv:1810.04805; google-research/bert bert_config.json:\n"
             "# vocab 30522, 512 positions, 2 token types, GELU feed-forward of 4 x width) in the parameter order of\n"
             "# Hugging Face transformers' BertForPreTraining (modeling_bert.py): embeddings, encoder layers, pooler, then\n"
             "# the pre-training heads (the masked-LM transform and bias, its decoder tied to the word embeddings, and the\n"
             "# next-sentence head). Data: English Wikipedia + BooksCorpus (datasets.yaml).\n"),
    "gpt2": ("# Source: the GPT-2 architecture (Radford et al. 2019; openai/gpt-2 hparams: vocab 50257, 1024 positions,\n"
             "# feed-forward 4 x width) in the parameter order of Hugging Face transformers' GPT2LMHeadModel\n"
             "# (modeling_gpt2.py; its Conv1D weights are [in, out]; lm_head is tied to wte and not a parameter of its\n"
             "# own). Data: OpenWebText (datasets.yaml).\n"),
    "vit": ("# Source: torchvision vit_b_16 (torchvision/models/vision_transformer.py; Dosovitskiy et al.,\n"
            "# arXiv:2010.11929): 16x16 patches of a 224x224 image -> 196 tokens + the class token; parameters in\n"
            "# model.parameters() order (class_token, conv_proj, encoder.pos_embedding, layers, ln, heads).\n"),
    "mpt": ("# Source: MosaicML's MPT (LLM Foundry, llmfoundry/models/mpt/modeling_mpt.py) as its benchmark tables ran it:\n"
            "# learned positions (max_seq_len rows: the tables' runs set it to their sequence, this file has the yamls'\n"
            "# 2,048), biases, LayerNorm, a GELU feed-forward of 4 x width, the output layer tied to wte, no dropout;\n"
            "# parameters in MPTForCausalLM's model.parameters() order. Data: C4 (datasets.yaml).\n"),
    "llama": ("# Source: the Llama architecture (Touvron et al., arXiv:2302.13971 and arXiv:2307.09288; Llama Team,\n"
              "# arXiv:2407.21783): RMSNorm, rotary positions (no position table), SwiGLU feed-forward, grouped-query\n"
              "# attention, untied output layer; sizes from the Hugging Face checkpoint's config.json, parameters in\n"
              "# LlamaForCausalLM's model.parameters() order (modeling_llama.py).\n"),
}


def architecture(kind, p):
    """What the activation memory needs: layers, widths, the feed-forward's kind, whether dropout masks are kept
    (BERT's and GPT-2's hidden and attention dropout 0.1; torchvision's ViT and Llama train without)."""
    d, heads = p["d"], p.get("heads", p["d"] // 64)
    ff = p.get("ff", 4 * d)
    kv = p.get("kv_heads", heads) * (d // heads)
    mlp = {"llama": "swiglu", "gpt2": "gelu_tanh"}.get(kind, "gelu")  # GPT-2's config: activation gelu_new
    dropout = "true" if kind in ("bert", "gpt2") else "false"  # MPT's attn_pdrop and resid_pdrop default 0
    return (f"architecture: {{layers: {p['layers']}, hidden: {d}, heads: {heads}, kv_width: {kv}, ff: {ff}, "
            f"mlp: {mlp}, dropout: {dropout}}}   # activation memory (sim/schedule/memory.cpp)")


def write(name):
    display, kind, p, reference, ref_source = MODELS[name]
    tensors, reference_part = {"bert": bert, "gpt2": gpt2, "vit": vit, "llama": llama, "mpt": mpt}[kind](p)
    total = sum(numel(t) for t in tensors)
    assert reference_part == reference, (name, reference_part, reference)
    out = [HEADERS[kind].rstrip("\n"),
           "# Generated by make_transformers.py (the same folder); edit that, not this file.",
           f"# Third element of a 2-D weight: how it computes (README.md); of a 4-D one, the conv output size.",
           f"name: {name}", f"display_name: {display}"]
    if kind == "vit":
        out += ["dataset: imagenet", "input_shape: [3, 224, 224]", "dtype: float32",
                f"tokens: {(p['image'] // p['patch']) ** 2 + 1}   # 14 x 14 patches and the class token"]
    elif kind == "llama":
        out += [f"dataset: {p['data']}", "dtype: float32",
                f"tokens: {{default: {p['positions']}, max: {p['positions']}}}   # model.seq_len; the pre-training context",
                f"head_dim: {p['d'] // p['heads']}   # hidden_size / num_attention_heads"]
    elif kind == "mpt":
        out += ["dataset: c4", "dtype: float32",
                f"tokens: {{default: {p['positions']}, max: {p['max_tokens']}}}   # model.seq_len; max_seq_len of the tables' runs",
                f"head_dim: {p['d'] // p['heads']}   # d_model / n_heads"]
    else:
        data = "wikipedia_bookcorpus" if kind == "bert" else "openwebtext"
        out += [f"dataset: {data}", "dtype: float32",
                f"tokens: {{default: {128 if kind == 'bert' else 1024}, max: {p['positions']}}}   # model.seq_len"]
    out.append(architecture(kind, p))
    extra = total - reference
    note = f"   # {reference:,} = {ref_source}" + (f"; + {extra:,} of the pre-training heads" if extra else "")
    out.append(f"total_params: {total}{note}")
    out.append("tensors:")
    for t in tensors:
        third = ""
        if len(t) == 3:
            third = ", " + (t[2] if isinstance(t[2], str) else "[" + ", ".join(map(str, t[2])) + "]")
        out.append(f"  - [{t[0]}, [{', '.join(map(str, t[1]))}]{third}]")
    with open(f"{name}.yaml", "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"{name}: {len(tensors)} tensors, {total:,} parameters")


for n in MODELS:
    write(n)
