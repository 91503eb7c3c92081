#!/usr/bin/python3
"""Exports the torch models of models_peer.py to ONNX, for ONNX Runtime.

Runs in Debian's python (torch 1.13; the project's venv has numpy 2 and
cannot import it):
  /usr/bin/python3 bench/peers/onnx_export.py --out DIR [--models ...]
writes DIR/MODEL.onnx (torch.onnx.export, opset 17, eval mode, random
weights as models_peer.py makes them) and DIR/MODEL.inputs.npz (the example
inputs, named as the graph's inputs). An existing file is kept.

The networks are models_peer.py's: the same shapes and math as the shared
StableHLO programs (BERT-base "manual" HuggingFace math, batch 1, sequence
7; ResNet-50 v1.5 without a classifier, batch 1, NCHW; the chess 9M
transformer, 33 x 79 tokens). torchvision's resnet50 would add a
classifier jitd's program does not have; transformers is not installed.
"""
import argparse
import os

import numpy as np
import torch

import models_peer as mp


def build(name):
    torch.manual_seed(0)
    if name == "pt_bert":
        model = mp.Bert(fused=False).eval()
        ids, types, mask = mp.bert_inputs()
        return model, (ids, types, mask), ["input_ids", "token_type_ids", "attention_mask"], \
            ["last_hidden_state", "pooler_output"]
    if name == "jax_resnet_50":
        model = mp.ResNet50().eval()
        mp.randomize_bn(model)
        g = torch.Generator().manual_seed(0)
        x = torch.rand(1, 3, 224, 224, generator=g) * 2 - 1
        return model, (x,), ["pixel_values"], ["last_hidden_state", "pooler_output"]
    if name == "searchless_chess_9m":
        model = mp.Chess().eval()
        return model, mp.chess_inputs(), ["tokens"], ["log_probs"]
    raise ValueError(f"no torch model {name!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="+",
                        default=["pt_bert", "jax_resnet_50", "searchless_chess_9m"])
    parser.add_argument("--force", action="store_true", help="export again over existing files")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        path = os.path.join(args.out, name + ".onnx")
        if os.path.exists(path) and not args.force:
            print(f"onnx_export: {path} exists", flush=True)
            continue
        model, inputs, input_names, output_names = build(name)
        with torch.no_grad():
            torch.onnx.export(model, inputs, path + ".tmp", input_names=input_names,
                              output_names=output_names, opset_version=17,
                              do_constant_folding=True)
            expected = model(*inputs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        np.savez(os.path.join(args.out, name + ".inputs.npz"),
                 **{n: t.numpy() for n, t in zip(input_names, inputs)})
        np.savez(os.path.join(args.out, name + ".torch_outputs.npz"),
                 **{n: t.numpy() for n, t in zip(output_names, expected)})
        os.replace(path + ".tmp", path)
        print(f"onnx_export: wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)", flush=True)


if __name__ == "__main__":
    main()
