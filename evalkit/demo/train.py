"""Training the demo pair: the Llama models, the target's growth by block expansion, and the training loop (corpus
cross-entropy, or distillation on the target's next-token distributions for the draft)."""

from __future__ import annotations

import math
import random

from .tokenizer import MAX_POSITIONS, SPECIAL_TOKENS


def progress_bar(progress: bool, **kw):
    """A stage's bar (evalkit.progress: the app's progress page reads it too)."""
    from ..progress import bar

    return bar(disable=not progress, **kw)


def make_model(size: dict, vocab_size: int, seed: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=size["hidden"],
        intermediate_size=size["intermediate"],
        num_hidden_layers=size["layers"],
        num_attention_heads=size["heads"],
        num_key_value_heads=size["heads"],
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        pad_token_id=SPECIAL_TOKENS.index("<pad>"),
        bos_token_id=SPECIAL_TOKENS.index("<s>"),
        eos_token_id=SPECIAL_TOKENS.index("</s>"),
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def expand_depth(small, size: dict, seed: int):
    """Grow a trained model to size["layers"] blocks (block expansion, as in LLaMA Pro).

    Block i of the small model is followed by copies of itself whose attention and MLP output
    projections are zero: a zero-output block adds nothing to the residual stream, so the grown model
    computes exactly what the small one did, and fine-tuning then trains every block.
    """
    import torch

    n_small = small.config.num_hidden_layers
    n_big = size["layers"]
    big = make_model(size, small.config.vocab_size, seed=seed)
    src = small.state_dict()
    dst = big.state_dict()
    per = n_big // n_small
    with torch.no_grad():
        for name, tensor in dst.items():
            if ".layers." not in name:
                tensor.copy_(src[name])
                continue
            prefix, rest = name.split(".layers.", 1)
            j, sub = rest.split(".", 1)
            j = int(j)
            i = min(j // per, n_small - 1)
            tensor.copy_(src[f"{prefix}.layers.{i}.{sub}"])
            if j != i * per and (sub.endswith("o_proj.weight") or sub.endswith("down_proj.weight")):
                tensor.zero_()
    return big


class DataOrder:
    """Endless length-grouped batches: shuffle, sort windows by length, cut to a padded-token budget; epoch after
    epoch from one generator. Its state (the generator's at the epoch's start, and the batches taken from the epoch)
    is what a checkpoint keeps: a resumed training then takes the batches an uninterrupted one would."""

    def __init__(self, examples, batch_tokens: int, seed: int):
        self.examples, self.batch_tokens, self.rng = examples, batch_tokens, random.Random(seed)
        self._begin(self.rng.getstate(), 0)

    def _begin(self, rng_state, taken: int) -> None:
        self.rng.setstate(rng_state)
        self.epoch_state, self.taken = rng_state, taken
        self.epoch = self._epoch()

    def _epoch(self) -> list[list[int]]:
        examples, rng = self.examples, self.rng
        order = list(range(len(examples)))
        rng.shuffle(order)
        window = 64
        batches = []
        for i in range(0, len(order), window):
            chunk = sorted(order[i : i + window], key=lambda j: len(examples[j][0]))
            cur: list[int] = []
            for j in chunk:
                longest = max([len(examples[k][0]) for k in cur] + [len(examples[j][0])])
                if cur and longest * (len(cur) + 1) > self.batch_tokens:
                    batches.append(cur)
                    cur = []
                cur.append(j)
            if cur:
                batches.append(cur)
        rng.shuffle(batches)
        return batches

    def next(self) -> list[int]:
        if self.taken == len(self.epoch):
            self._begin(self.rng.getstate(), 0)
        self.taken += 1
        return self.epoch[self.taken - 1]

    def state(self) -> dict:
        return {"rng": self.epoch_state, "taken": self.taken}

    def restore(self, state: dict) -> None:
        self._begin(_as_rng_state(state["rng"]), state["taken"])


def _as_rng_state(saved) -> tuple:
    """random.Random's state as setstate takes it (a saved one may come back with lists for tuples)."""
    version, internal, gauss = saved
    return version, tuple(internal), gauss


def _collate(examples, idx: list[int]):
    import torch

    T = max(len(examples[j][0]) for j in idx)
    ids = torch.zeros((len(idx), T), dtype=torch.long)
    att = torch.zeros((len(idx), T), dtype=torch.long)
    labels = torch.full((len(idx), T), -100, dtype=torch.long)
    for r, j in enumerate(idx):
        seq, plen = examples[j]
        ids[r, : len(seq)] = torch.tensor(seq)
        att[r, : len(seq)] = 1
        # loss on the output (and </s>) only: the prompt is given at run time
        labels[r, plen : len(seq)] = torch.tensor(seq[plen:])
    return ids, att, labels


def train_model(model, examples, *, steps: int, batch_tokens: int, lr: float, warmup: int, seed: int, desc: str,
                progress: bool, teacher=None, checkpoint=None):
    """AdamW, linear warm-up then cosine decay to 10%; deterministic data order from `seed`.

    With a `teacher`, the loss is the KL divergence from the teacher's next-token distribution to the
    model's (knowledge distillation) on the output positions, instead of cross-entropy on the corpus.
    Speculative sampling accepts a drafted token with probability sum(min(p_target, p_draft)), so
    matching the target's whole distribution is exactly what raises acceptance.

    With a `checkpoint` (checkpoint.Stage), the training resumes from its saved step, and saves itself at intervals,
    at its end and at a stop (Ctrl-C, SIGTERM), after the step under way.
    """
    import torch

    from . import checkpoint as ckpt

    torch.manual_seed(seed)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )
    order = DataOrder(examples, batch_tokens, seed)
    saved = checkpoint.resume() if checkpoint is not None else None
    if saved is ckpt.SKIP:  # a later stage's saved weights replace this stage's
        return None
    start, ema = _restore(saved, model, opt, order) if saved else (0, None)
    if start:
        ckpt.say(f"{desc}: resumed at step {start} of {steps} from {checkpoint.ck.path}")

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        frac = (step - warmup) / max(1, steps - warmup)
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    def save(step: int) -> None:
        if checkpoint is not None:
            checkpoint.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
                             "torch_rng": torch.get_rng_state(), "order": order.state(), "ema": ema})

    model.train()
    name = f"{desc}, resumed at step {start}" if start else desc
    with progress_bar(progress, total=steps, initial=start, desc=name, unit="step") as bar, ckpt.stops_held() as stops:
        for step in range(start, steps):
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            ema = _step(model, examples, order, opt, teacher, ema)
            bar.set_postfix(loss=f"{ema:.3f}")
            bar.update(1)
            if stops or (checkpoint is not None and checkpoint.due()):
                save(step + 1)
            if stops:
                if checkpoint is not None:
                    ckpt.say(f"{desc}: stopped after step {step + 1} of {steps}, saved to {checkpoint.ck.path}; the "
                             "next build (the next start) goes on from there")
                ckpt.stop(stops)
        if start < steps:
            save(steps)  # the stage's end: the next stage starts from it
    model.eval()
    return ema


def _step(model, examples, order: DataOrder, opt, teacher, ema):
    """One optimizer step; returns the loss's moving average."""
    import torch
    import torch.nn.functional as F

    ids, att, labels = _collate(examples, order.next())
    if teacher is None:
        loss = model(input_ids=ids, attention_mask=att, labels=labels).loss
    else:
        keep = labels[:, 1:] != -100  # position t predicts token t+1
        with torch.no_grad():
            t_logits = teacher(input_ids=ids, attention_mask=att).logits[:, :-1][keep]
        d_logits = model(input_ids=ids, attention_mask=att).logits[:, :-1][keep]
        loss = F.kl_div(F.log_softmax(d_logits, -1), F.log_softmax(t_logits, -1), log_target=True, reduction="batchmean")
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item() if ema is None else 0.9 * ema + 0.1 * loss.item()


def _restore(saved: dict, model, opt, order: DataOrder) -> tuple[int, float | None]:
    """A stage's saved state put back; returns the step to go on from and the loss's moving average."""
    import torch

    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    torch.set_rng_state(saved["torch_rng"])
    order.restore(saved["order"])
    return saved["step"], saved["ema"]
