#!/usr/bin/python3
"""Peers for bench/models_bench.cc: BERT-base, ResNet-50 (and the chess 9M) in torch eager.

The networks are built from torch.nn with exactly the shapes of
../shared/models (no torchvision / transformers downloads here):
  pt_bert        BERT-base (HuggingFace BertModel math): batch 1, sequence 7,
                 hidden 768, 12 layers, 12 heads, FFN 3072, erf GELU,
                 post-LayerNorm (eps 1e-12), additive attention mask,
                 tanh pooler; outputs [1,7,768] and [1,768].
  jax_resnet_50  ResNet-50 v1.5 (HuggingFace FlaxResNetModel: stride in the
                 3x3 conv, batch norm eps 1e-5, no classifier head): input
                 [1,3,224,224], outputs [1,2048,7,7] and the average pool
                 [1,2048,1,1].
  searchless_chess_9m  the 9M searchless-chess transformer (class Chess).
Weights random, eval mode, torch.inference_mode(), torch.set_num_threads(N).
Each model runs in the layouts / module forms that are the same math and
reports each; the fastest is the figure to compare with:
  bert   "manual": the HuggingFace math written out (matmul, softmax);
         "nn.TransformerEncoder": torch's fused inference fast path
         (same post-LN layer, gelu, eps 1e-12).
  resnet NCHW (contiguous) and NHWC (torch.channels_last).

Run with Debian's python (torch 1.13):
  /usr/bin/python3 bench/peers/models_peer.py [--repeats 30] [--threads 1 2]
Prints one line per (model, variant, threads): median and min wall-clock
milliseconds per inference after warm-up, and the median process CPU time
(all threads). Set OPENBLAS_NUM_THREADS (and OPENBLAS_CORETYPE) as for
jitd_models_bench: torch's matmuls and convolutions here go through the
same Debian OpenBLAS.
"""
import argparse
import copy
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------- BERT-base

HIDDEN, LAYERS, HEADS, FFN, VOCAB, MAX_POS, TYPES, SEQ = 768, 12, 12, 3072, 30522, 512, 2, 7
LN_EPS = 1e-12


class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.o = nn.Linear(HIDDEN, HIDDEN)
        self.ln1 = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.ff1 = nn.Linear(HIDDEN, FFN)
        self.ff2 = nn.Linear(FFN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN, eps=LN_EPS)

    def forward(self, x, add_mask):
        b, s, _ = x.shape
        d = HIDDEN // HEADS

        def heads(t):
            return t.view(b, s, HEADS, d).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + add_mask
        ctx = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, HIDDEN)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Bert(nn.Module):
    def __init__(self, fused):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.pos = nn.Embedding(MAX_POS, HIDDEN)
        self.token_type = nn.Embedding(TYPES, HIDDEN)
        self.ln = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.fused = fused
        if fused:
            layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, dropout=0.0, activation="gelu",
                                               layer_norm_eps=LN_EPS, batch_first=True,
                                               norm_first=False)
            self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        else:
            self.layers = nn.ModuleList(BertLayer() for _ in range(LAYERS))
        self.pooler = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids, token_type_ids, attention_mask):
        s = input_ids.shape[1]
        positions = torch.arange(s).unsqueeze(0)
        x = self.ln(self.word(input_ids) + self.token_type(token_type_ids) + self.pos(positions))
        if self.fused:
            x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        else:
            add_mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
            for layer in self.layers:
                x = layer(x, add_mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


def bert_inputs():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=g, dtype=torch.int64)
    types = torch.zeros(1, SEQ, dtype=torch.int64)
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    return ids, types, mask


# ---------------------------------------------------------------- ResNet-50

class Bottleneck(nn.Module):
    def __init__(self, cin, mid, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        r = x if self.shortcut is None else self.shortcut(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + r)


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
                                  nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, stride=2, padding=1))
        blocks, cin = [], 64
        for mid, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(cin, mid, mid * 4, stride if i == 0 else 1))
                cin = mid * 4
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        y = self.blocks(self.stem(x))
        return y, F.adaptive_avg_pool2d(y, 1)


def randomize_bn(model):
    # Random running statistics (valid: variances positive), as in eval mode
    # after training; affine weights random too.
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1, generator=g)
            m.running_var.uniform_(0.5, 1.5, generator=g)
            m.weight.data.uniform_(0.5, 1.5, generator=g)
            m.bias.data.uniform_(-0.1, 0.1, generator=g)


def to_channels_last(model):
    # Module.to(memory_format=...) fails in Debian's torch 1.13 build; the
    # same thing done on the 4-d parameters directly.
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            m.weight.data = m.weight.data.contiguous(memory_format=torch.channels_last)
    return model


# ---------------------------------------------------------------- chess 9M

C_VOCAB, C_SEQ, C_BATCH, C_DIM, C_LAYERS, C_HEADS, C_FFN, C_OUT = 1968, 79, 33, 256, 8, 8, 1024, 128


class ChessLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(C_DIM, eps=1e-5)
        self.q = nn.Linear(C_DIM, C_DIM, bias=False)
        self.k = nn.Linear(C_DIM, C_DIM, bias=False)
        self.v = nn.Linear(C_DIM, C_DIM, bias=False)
        self.o = nn.Linear(C_DIM, C_DIM, bias=False)
        self.ln2 = nn.LayerNorm(C_DIM, eps=1e-5)
        self.gate = nn.Linear(C_DIM, C_FFN, bias=False)
        self.up = nn.Linear(C_DIM, C_FFN, bias=False)
        self.down = nn.Linear(C_FFN, C_DIM, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        d = C_DIM // C_HEADS

        def heads(t):
            return t.view(b, s, C_HEADS, d).transpose(1, 2)

        h = self.ln1(x)
        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        ctx = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, C_DIM)
        x = x + self.o(ctx)
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Chess(nn.Module):
    """DeepMind's searchless-chess 9M transformer (searchless_chess_9m):
    33 boards x 79 tokens shifted right by one, embedding * sqrt(256) plus a
    learned position embedding, 8 pre-LayerNorm layers (8 heads, no mask,
    bias-free projections, SwiGLU 1024), final LayerNorm, 128-way output
    with bias, log-softmax; output [33, 79, 128]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(C_VOCAB, C_DIM)
        self.pos = nn.Embedding(C_SEQ, C_DIM)
        self.layers = nn.ModuleList(ChessLayer() for _ in range(C_LAYERS))
        self.ln = nn.LayerNorm(C_DIM, eps=1e-5)
        self.out = nn.Linear(C_DIM, C_OUT)

    def forward(self, tokens):
        b, s = tokens.shape
        shifted = torch.cat([torch.zeros(b, 1, dtype=tokens.dtype), tokens], dim=1)[:, :s]
        x = self.embed(shifted) * math.sqrt(C_DIM) + self.pos(torch.arange(s)).unsqueeze(0)
        for layer in self.layers:
            x = layer(x)
        return F.log_softmax(self.out(self.ln(x)), dim=-1)


def chess_inputs():
    g = torch.Generator().manual_seed(0)
    return (torch.randint(0, C_VOCAB, (C_BATCH, C_SEQ), generator=g, dtype=torch.int64),)


# ---------------------------------------------------------------- timing

def median_ms(fn, repeats, warmup):
    """Median and min wall-clock ms per call, and the median process CPU ms
    (all threads: on a loaded machine the 1-thread CPU time is the steadier
    figure)."""
    for _ in range(warmup):
        fn()
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.process_time() - start_cpu) * 1e3)
    return statistics.median(times), min(times), statistics.median(cpu)


def report(name, threads, med, low, cpu):
    print(f"torch {name:42s} threads:{threads}  median {med:9.2f} ms  min {low:9.2f} ms  "
          f"cpu median {cpu:9.2f} ms", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=["pt_bert", "jax_resnet_50"],
                        help="pt_bert, jax_resnet_50, searchless_chess_9m")
    args = parser.parse_args()
    torch.manual_seed(0)
    for threads in args.threads:
        torch.set_num_threads(threads)
        with torch.inference_mode():
            if "pt_bert" in args.models:
                inputs = bert_inputs()
                for fused in (False, True):
                    model = Bert(fused).eval()
                    out = model(*inputs)
                    assert out[0].shape == (1, SEQ, HIDDEN) and out[1].shape == (1, HIDDEN)
                    name = "pt_bert " + ("nn.TransformerEncoder" if fused else "manual")
                    report(name, threads, *median_ms(lambda: model(*inputs), args.repeats, args.warmup))
            if "jax_resnet_50" in args.models:
                model = ResNet50().eval()
                randomize_bn(model)
                x = torch.rand(1, 3, 224, 224)
                out = model(x)
                assert out[0].shape == (1, 2048, 7, 7) and out[1].shape == (1, 2048, 1, 1)
                report("jax_resnet_50 NCHW", threads,
                       *median_ms(lambda: model(x), args.repeats, args.warmup))
                model_cl = to_channels_last(copy.deepcopy(model))
                x_cl = x.to(memory_format=torch.channels_last)
                report("jax_resnet_50 NHWC (channels_last)", threads,
                       *median_ms(lambda: model_cl(x_cl), args.repeats, args.warmup))
            if "searchless_chess_9m" in args.models:
                model, inputs = Chess().eval(), chess_inputs()
                assert model(*inputs).shape == (C_BATCH, C_SEQ, C_OUT)
                report("searchless_chess_9m", threads,
                       *median_ms(lambda: model(*inputs), args.repeats, args.warmup))


if __name__ == "__main__":
    main()
