#!/usr/bin/python3
"""One timed round of torch eager (Debian's torch 1.13) on a model of
models_peer.py, for cpu_peers.py. Run with /usr/bin/python3:
  torch_worker.py --model pt_bert|jax_resnet_50|searchless_chess_9m --threads N
Prints one JSON line: {"runtime": "torch", "variants": {NAME: {"execute_ms":
[...], "cpu_ms": [...]}}}, one entry per form of the model models_peer.py
times (BERT "manual" and nn.TransformerEncoder; ResNet-50 NCHW and
channels_last; the chess transformer); cpu_peers.py takes the faster.
Eval mode, torch.inference_mode(), torch.set_num_threads(N); matrix products
and convolutions in Debian's OpenBLAS (set OPENBLAS_NUM_THREADS and
OPENBLAS_CORETYPE in the environment: cpu_peers.py does).
"""
import argparse
import copy
import json
import time

import torch

import models_peer as mp


def time_calls(fn, repeats, warmup):
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return {"execute_ms": wall, "cpu_ms": cpu}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    variants = {}
    with torch.inference_mode():
        if args.model == "pt_bert":
            inputs = mp.bert_inputs()
            for fused in (False, True):
                model = mp.Bert(fused).eval()
                name = "nn.TransformerEncoder" if fused else "manual"
                variants[name] = time_calls(lambda: model(*inputs), args.repeats, args.warmup)
        elif args.model == "jax_resnet_50":
            model = mp.ResNet50().eval()
            mp.randomize_bn(model)
            x = torch.rand(1, 3, 224, 224) * 2 - 1
            variants["NCHW"] = time_calls(lambda: model(x), args.repeats, args.warmup)
            model_cl = mp.to_channels_last(copy.deepcopy(model))
            x_cl = x.to(memory_format=torch.channels_last)
            variants["channels_last"] = time_calls(lambda: model_cl(x_cl), args.repeats, args.warmup)
        elif args.model == "searchless_chess_9m":
            model, inputs = mp.Chess().eval(), mp.chess_inputs()
            variants["nn"] = time_calls(lambda: model(*inputs), args.repeats, args.warmup)
        else:
            raise SystemExit(f"torch_worker: no model {args.model!r}")
    print(json.dumps({"runtime": "torch", "variants": variants,
                      "version": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
