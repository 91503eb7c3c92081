"""The shared models (../shared/models) written in JAX/Flax, for XLA:CPU.

Same shapes and math as the StableHLO programs jitd runs (weights random,
inference only):
  pt_bert              BERT-base (the HuggingFace BertModel math): batch 1,
                       sequence 7, hidden 768, 12 layers, 12 heads, FFN 3072,
                       erf GELU, post-LayerNorm (eps 1e-12), additive
                       attention mask, tanh pooler; outputs [1,7,768], [1,768].
  jax_resnet_50        ResNet-50 v1.5 as HuggingFace's FlaxResNetModel (the
                       stride in the 3x3 convolution, batch norm eps 1e-5 with
                       running statistics, no classifier): input NCHW
                       [1,3,224,224] transposed to NHWC inside; outputs
                       [1,2048,7,7] and the average pool [1,2048,1,1].
  searchless_chess_9m  DeepMind's searchless-chess 9M transformer: 33 boards x
                       79 tokens (shifted right by one, token 0 first),
                       vocabulary 1968, embedding scaled by sqrt(256) plus a
                       learned position embedding, 8 pre-LayerNorm layers
                       (eps 1e-5), 8 heads of 32, no attention mask,
                       bias-free projections, SwiGLU feed-forward (1024), a
                       final LayerNorm, a 128-way output with bias,
                       log-softmax; output [33,79,128].

`build(name)` returns (apply, variables, inputs): `apply(variables, *inputs)`
is what gets jitted and timed.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

# ---------------------------------------------------------------- BERT-base

B_HIDDEN, B_LAYERS, B_HEADS, B_FFN, B_VOCAB, B_POS, B_TYPES, B_SEQ = 768, 12, 12, 3072, 30522, 512, 2, 7


class BertLayer(nn.Module):
    @nn.compact
    def __call__(self, x, add_mask):
        b, s, _ = x.shape
        d = B_HIDDEN // B_HEADS

        def heads(t):
            return t.reshape(b, s, B_HEADS, d).transpose(0, 2, 1, 3)

        q = heads(nn.Dense(B_HIDDEN, name="q")(x))
        k = heads(nn.Dense(B_HIDDEN, name="k")(x))
        v = heads(nn.Dense(B_HIDDEN, name="v")(x))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + add_mask
        ctx = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, s, B_HIDDEN)
        x = nn.LayerNorm(epsilon=1e-12, name="ln1")(x + nn.Dense(B_HIDDEN, name="o")(ctx))
        h = jax.nn.gelu(nn.Dense(B_FFN, name="ff1")(x), approximate=False)
        return nn.LayerNorm(epsilon=1e-12, name="ln2")(x + nn.Dense(B_HIDDEN, name="ff2")(h))


class Bert(nn.Module):
    @nn.compact
    def __call__(self, input_ids, token_type_ids, attention_mask):
        s = input_ids.shape[1]
        word = nn.Embed(B_VOCAB, B_HIDDEN, name="word")(input_ids)
        pos = nn.Embed(B_POS, B_HIDDEN, name="pos")(jnp.arange(s)[None, :])
        types = nn.Embed(B_TYPES, B_HIDDEN, name="types")(token_type_ids)
        x = nn.LayerNorm(epsilon=1e-12, name="ln")(word + pos + types)
        add_mask = (1.0 - attention_mask[:, None, None, :].astype(jnp.float32)) * jnp.finfo(jnp.float32).min
        for i in range(B_LAYERS):
            x = BertLayer(name=f"layer{i}")(x, add_mask)
        pooled = jnp.tanh(nn.Dense(B_HIDDEN, name="pooler")(x[:, 0]))
        return x, pooled


def bert_inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, B_VOCAB, (1, B_SEQ), dtype=np.int32)
    return ids, np.zeros((1, B_SEQ), np.int32), np.ones((1, B_SEQ), np.int32)


# ---------------------------------------------------------------- ResNet-50

class Bottleneck(nn.Module):
    mid: int
    out: int
    stride: int
    shortcut: bool

    @nn.compact
    def __call__(self, x):
        bn = lambda name: nn.BatchNorm(use_running_average=True, epsilon=1e-5, name=name)
        r = x
        if self.shortcut:
            r = nn.Conv(self.out, (1, 1), (self.stride, self.stride), use_bias=False, name="sc")(x)
            r = bn("sc_bn")(r)
        y = nn.relu(bn("bn1")(nn.Conv(self.mid, (1, 1), use_bias=False, name="c1")(x)))
        y = nn.Conv(self.mid, (3, 3), (self.stride, self.stride), padding=((1, 1), (1, 1)),
                    use_bias=False, name="c2")(y)
        y = nn.relu(bn("bn2")(y))
        y = bn("bn3")(nn.Conv(self.out, (1, 1), use_bias=False, name="c3")(y))
        return nn.relu(y + r)


class ResNet50(nn.Module):
    @nn.compact
    def __call__(self, x_nchw):
        x = jnp.transpose(x_nchw, (0, 2, 3, 1))
        x = nn.Conv(64, (7, 7), (2, 2), padding=((3, 3), (3, 3)), use_bias=False, name="stem")(x)
        x = nn.relu(nn.BatchNorm(use_running_average=True, epsilon=1e-5, name="stem_bn")(x))
        x = nn.max_pool(x, (3, 3), (2, 2), padding=((1, 1), (1, 1)))
        cin = 64
        for s, (mid, count, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))):
            for i in range(count):
                st = stride if i == 0 else 1
                x = Bottleneck(mid, mid * 4, st, st != 1 or cin != mid * 4, name=f"s{s}b{i}")(x)
                cin = mid * 4
        pooled = jnp.mean(x, axis=(1, 2), keepdims=True)
        return jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(pooled, (0, 3, 1, 2))


# ---------------------------------------------------------------- chess 9M

C_VOCAB, C_SEQ, C_BATCH, C_DIM, C_LAYERS, C_HEADS, C_FFN, C_OUT = 1968, 79, 33, 256, 8, 8, 1024, 128


class ChessLayer(nn.Module):
    @nn.compact
    def __call__(self, x):
        b, s, _ = x.shape
        d = C_DIM // C_HEADS
        h = nn.LayerNorm(epsilon=1e-5, name="ln1")(x)
        q = nn.Dense(C_DIM, use_bias=False, name="q")(h).reshape(b, s, C_HEADS, d)
        k = nn.Dense(C_DIM, use_bias=False, name="k")(h).reshape(b, s, C_HEADS, d)
        v = nn.Dense(C_DIM, use_bias=False, name="v")(h).reshape(b, s, C_HEADS, d)
        scores = jnp.einsum("bthd,bThd->bhtT", q, k) / math.sqrt(d)
        ctx = jnp.einsum("bhtT,bThd->bthd", jax.nn.softmax(scores, axis=-1), v).reshape(b, s, C_DIM)
        x = x + nn.Dense(C_DIM, use_bias=False, name="o")(ctx)
        h = nn.LayerNorm(epsilon=1e-5, name="ln2")(x)
        gate = nn.Dense(C_FFN, use_bias=False, name="gate")(h)
        up = nn.Dense(C_FFN, use_bias=False, name="up")(h)
        return x + nn.Dense(C_DIM, use_bias=False, name="down")(jax.nn.silu(gate) * up)


class Chess(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        b, s = tokens.shape
        shifted = jnp.concatenate([jnp.zeros((b, 1), tokens.dtype), tokens], axis=1)[:, :s]
        x = nn.Embed(C_VOCAB, C_DIM, name="embed")(shifted) * math.sqrt(C_DIM)
        x = x + nn.Embed(C_SEQ, C_DIM, name="pos")(jnp.arange(s))[None]
        for i in range(C_LAYERS):
            x = ChessLayer(name=f"layer{i}")(x)
        x = nn.LayerNorm(epsilon=1e-5, name="ln_f")(x)
        return jax.nn.log_softmax(nn.Dense(C_OUT, name="out")(x), axis=-1)


def chess_inputs():
    rng = np.random.default_rng(0)
    return (rng.integers(0, C_VOCAB, (C_BATCH, C_SEQ), dtype=np.int32),)


# ---------------------------------------------------------------- entry

def random_variables(model, inputs, seed=7):
    """The model's variables (shapes from jax.eval_shape of its init, no
    compile) distributed as jitd's weights fill (resource_fill.py's
    "weights": kernels and embeddings uniform in +-sqrt(3 / fan_in), vectors
    — biases, scales, batch-norm means and variances — in [0.5, 1.5)), drawn
    with numpy's generator (fast; the values need not be jitd's: this is
    another program)."""
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0), *inputs)
    leaves, tree = jax.tree_util.tree_flatten(shapes)
    rng = np.random.default_rng(seed)
    filled = []
    for leaf in leaves:
        unit = rng.random(leaf.shape, dtype=np.float32)
        if len(leaf.shape) >= 2:
            bound = np.float32(math.sqrt(3.0 / max(math.prod(leaf.shape[:-1]), 1)))
            filled.append(jnp.asarray((unit * 2 - 1) * bound))
        else:
            filled.append(jnp.asarray(unit + np.float32(0.5)))
    return jax.tree_util.tree_unflatten(tree, filled)


def build(name):
    """(apply, variables, inputs) of a model: jit(apply)(variables, *inputs)."""
    if name == "pt_bert":
        model, inputs = Bert(), bert_inputs()
    elif name == "jax_resnet_50":
        model = ResNet50()
        inputs = (np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32),)
    elif name == "searchless_chess_9m":
        model, inputs = Chess(), chess_inputs()
    else:
        raise ValueError(f"no Flax model {name!r}")
    return model.apply, random_variables(model, inputs), inputs
