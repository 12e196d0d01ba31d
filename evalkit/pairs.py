"""The pair pool for blind rating: K samples per prompt per path, each ordinary/assisted pair stored with
a side assignment drawn at random once, here, and read from the database ever after."""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass

from .config import Config
from .errors import EvalkitError


@dataclass
class PoolResult:
    experiment_id: int
    pairs: int
    fallbacks: int
    prompts: int


def build_pool(cfg: Config, db, *, samples: int | None = None, progress: bool = True, echo=print) -> PoolResult:
    from tqdm import tqdm

    from .compat import approved
    from .models import load_pair
    from .paths import run_assisted, run_ordinary
    from .prompts import load_prompts
    from .store import insert_experiment, insert_generations, insert_pairs

    samples = samples or cfg.pool.samples
    if samples < 1:
        raise EvalkitError(f"--samples {samples} must be at least 1", "pass a positive number")
    prompts = load_prompts(ids=cfg.pool.prompts or None)
    pair = load_pair(cfg, progress=progress)
    if not (cfg.assisted_enabled and approved(pair.compat)):
        raise EvalkitError(
            "the pair pool needs both paths, but the assisted path is "
            + ("switched off" if not cfg.assisted_enabled else "not approved: " + "; ".join(pair.compat["reasons"])),
            "switch generation_path = 'assisted' and load_draft = true, and fix what `evalkit check` reports",
        )
    exp_id = insert_experiment(db, "pool", cfg.to_dict(), pair.compat)
    made = fallbacks = 0
    bar = tqdm(total=len(prompts) * samples, desc="pair pool", unit="pair", disable=not progress, file=sys.stderr)
    for prompt in prompts:
        for k in range(samples):
            seed = cfg.decoding.seed + k
            ordinary = run_ordinary(pair, prompt, seed)
            assisted = run_assisted(pair, prompt, seed)
            if len(assisted) > 1:  # failed and fell back: keep the records, but it is not an assisted sample
                insert_generations(db, [ordinary, *assisted], exp_id)
                fallbacks += 1
            else:
                side = secrets.choice("AB")  # drawn once; the app reads it, never recomputes it
                insert_pairs(db, exp_id, [{"prompt_id": prompt.id, "sample": k, "ordinary": ordinary,
                                           "assisted": assisted[0], "ordinary_side": side}])
                made += 1
            bar.update(1)
    bar.close()
    if fallbacks:
        echo(f"{fallbacks} assisted sample(s) failed and fell back: stored, but not made into pairs")
    return PoolResult(exp_id, made, fallbacks, len(prompts))
