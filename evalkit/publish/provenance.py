"""Provenance: where every number evalkit publishes came from.

One record, built from stored rows only (experiments with their compatibility records and frozen gates,
generations, pairs, timing runs, ratings), shared by the HTML report, the dataset card and
`evalkit aggregate --json`. A figure whose source experiments are not stored in the database is withheld,
never printed bare.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from ..stats.speedup import ratio_text
from ..task.prompts import prompt_hash

WITHHELD = "not printed: no stored run behind it"
NOT_RECORDED = "not recorded"

# What each published figure rests on. Names not listed here come from the ratings (most tables,
# conditions and plots do), so a new ratings table is covered without touching this module.
# The timing tables and plots are of the data as it is now ("speed_now"); the verdict's conditions cite what the
# decision weighed ("speed", "memory": the frozen figures once a decision is frozen, else the same as now), and the
# look after the decision cites what it weighed (after=True).
TABLE_SOURCE = {"timing": "speed_now", "speedup": "speed_now", "batch": "batch", "counts": "database"}
CONDITION_SOURCE = {"speed-up": "speed", "memory": "memory", "gate": "gate"}
AFTER_SOURCE = {"speed-up": "speed_now", "memory": "memory_now", "gate": "gate"}
PLOT_SOURCE = {"speedup": "speed_now", "acceptance": "speed_now", "batch": "batch", "seconds_vs_tokens": "generations"}


@dataclass
class ModelSource:
    ref: str  # as configured: Hub id, folder or demo:target
    folder: str | None
    weights_digest: str | None  # sha256 over the weight files (compat record)
    vocab_size: int | None
    tokenizer_vocab_hash: str | None
    chat_template_hash: str | None


@dataclass
class ExperimentSource:
    id: int
    kind: str  # bench | pool | ...
    used_for: list[str]  # the figures it stands behind
    started: str  # experiments.created_at
    ended: str | None  # the last stored record's created_at; None when it stored none
    records: int  # generations stored under it
    config_hash: str
    compat_hash: str
    gate_hash: str
    versions: dict  # evalkit, transformers, torch, accelerate, python, platform (compat record)
    device: str  # the device the compat record names
    devices_used: list[str]  # distinct devices its generations ran on
    dtype: str
    quantization: str
    route: str  # same_tokenizer | different_tokenizer | not_approved
    target: ModelSource | None
    draft: ModelSource | None


@dataclass
class PromptSource:
    id: str
    hashes: list[str]  # distinct prompt hashes its generations stored (one, unless the prompt changed)
    material: str
    task: str
    max_new_tokens: int | None
    source: str  # where the text comes from


@dataclass
class Scope:
    prompts: list[str]
    pairs: int  # blind pairs in the pool
    samples_per_prompt: list[int] | None  # [fewest, most] pool samples per prompt
    timing_runs: int  # timed runs behind the speed-up
    repetitions: list[int] | None  # [fewest, most] timed runs per prompt, path and round (benchmark)
    rounds: int | None  # ABBA rounds (benchmark)
    matched_pairs: int | None  # ordinary/assisted runs paired by prompt, round and repetition
    comparable_pairs: int | None  # of those, same stop reason and similar length: the speed-up's sample
    current_ratings: int
    raters: int
    rated_pairs: int
    ratings_first: str | None
    ratings_last: str | None
    gold_pairs: int = 0  # check pairs (evalkit.study.gold): mixed into the queue, never in the comparison
    excluded_raters: int = 0  # left out by the gate's gold check (their ratings are not counted above)
    excluded_names: list[str] = field(default_factory=list)  # who they are (as stored: the export pseudonymises)
    study: str | None = None  # the study the scope is of


@dataclass
class Figure:
    name: str
    value: str | None  # what is printed; None when withheld or not measured
    experiments: list[int]
    note: str = ""


@dataclass
class Provenance:
    generated_at: str
    evalkit: str  # version that built this record (each experiment carries its own in versions)
    sources: dict[str, list[int]]  # source kind (speed, memory, ratings, gate, generations, database) -> ids
    experiments: list[ExperimentSource]
    gate: dict | None  # experiment_id, path, hash, hash_ok, text
    prompts: list[PromptSource]
    scope: Scope
    figures: list[Figure]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def experiment(self, exp_id: int) -> ExperimentSource | None:
        return next((e for e in self.experiments if e.id == exp_id), None)

    def source(self, kind: str) -> list[int]:
        return self.sources.get(kind, [])

    def for_table(self, name: str) -> list[int]:
        return self.source(TABLE_SOURCE.get(name, "ratings"))

    def for_condition(self, name: str, after: bool = False) -> list[int]:
        return self.source((AFTER_SOURCE if after else CONDITION_SOURCE).get(name, "ratings"))

    def for_plot(self, name: str) -> list[int]:
        return self.source(PLOT_SOURCE.get(name, "ratings"))

    def cite(self, ids: list[int]) -> str:
        """'experiment 3 (bench, 2025-01-01 10:00:00 to 10:20:41 UTC)', or WITHHELD when there is none."""
        if not ids:
            return WITHHELD
        parts = []
        for i in ids:
            e = self.experiment(i)
            parts.append(f"experiment {i} ({e.kind}, {period(e.started, e.ended)})" if e else f"experiment {i}")
        return "; ".join(parts)


def period(start: str, end: str | None) -> str:
    """Two stored UTC timestamps, compact: '2025-01-01 10:00:00 to 10:20:41 UTC' (the date once when shared)."""
    def fmt(ts):
        return datetime.fromisoformat(ts).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

    a = fmt(start)
    if end is None:
        return f"{a} UTC, no records"
    b = fmt(end)
    return f"{a} to {b[11:] if b[:10] == a[:10] else b} UTC"


def environment_line(e: ExperimentSource) -> str:
    if not e.versions and not e.device:
        return f"no compatibility record stored (versions, device, dtype unknown); config hash {e.config_hash}"
    v = e.versions
    names = ("evalkit", "transformers", "torch", "accelerate", "python")
    commit = f" (commit {v.get('evalkit_commit') or NOT_RECORDED})"  # the code that ran: reproducing starts from it
    vs = ", ".join(f"{n} {v.get(n) or NOT_RECORDED}" + (commit if n == "evalkit" else "") for n in names)
    used = f" (generations ran on {', '.join(e.devices_used)})" if e.devices_used else ""
    return (f"{vs}; device {e.device or NOT_RECORDED}{used}; dtype {e.dtype or NOT_RECORDED}; "
            f"quantization {e.quantization or NOT_RECORDED}; route {e.route or NOT_RECORDED}; config hash {e.config_hash}")


def model_line(m: ModelSource | None) -> str:
    if m is None:
        return NOT_RECORDED
    return (f"{m.ref or m.folder or NOT_RECORDED}: weights sha256 {m.weights_digest or NOT_RECORDED}, "
            f"tokenizer vocab {m.tokenizer_vocab_hash or NOT_RECORDED}, chat template {m.chat_template_hash or 'none'}, "
            f"vocab_size {m.vocab_size if m.vocab_size is not None else NOT_RECORDED}")


def scope_items(s: Scope, shown=None) -> list[tuple[str, str]]:
    """shown: how rater names are written (the export's and the report's pseudonyms), default as stored."""
    names = (shown or (lambda names: names))(list(s.excluded_names))
    left_out = (f"; not counted: the ratings of the {s.excluded_raters} rater(s) the gold check left out "
                f"({', '.join(names)}), which are in `ratings`" if s.excluded_raters else "")

    def span(v):
        return "none" if not v else (str(v[0]) if v[0] == v[1] else f"{v[0]} to {v[1]}")

    return [
        ("prompts", f"{len(s.prompts)} ({', '.join(s.prompts)})" if s.prompts else "0"),
        ("pairs in the pool", str(s.pairs)),
        ("gold (check) pairs, not in the comparison", str(s.gold_pairs)),
        ("pool samples per prompt", span(s.samples_per_prompt)),
        ("timed runs behind the speed-up", str(s.timing_runs)),
        ("repetitions per prompt, path and round", span(s.repetitions) + (f", {s.rounds} round(s)" if s.rounds else "")),
        ("comparable pairs (of matched)", "none" if s.matched_pairs is None else f"{s.comparable_pairs} of {s.matched_pairs}"),
        ("current ratings counted", f"{s.current_ratings} by {s.raters} rater(s) on {s.rated_pairs} pair(s)" + left_out),
        ("ratings collected", f"{s.ratings_first} to {s.ratings_last}" if s.ratings_first else "none"),
    ]


def _model(compat: dict, cfg: dict, role: str) -> ModelSource | None:
    m = compat.get(role)
    ref = (cfg.get("models") or {}).get(role, "")
    if not m:
        return None
    tok = m.get("tokenizer") or {}
    return ModelSource(ref=ref, folder=m.get("folder"), weights_digest=m.get("weights_digest"),
                       vocab_size=m.get("vocab_size"), tokenizer_vocab_hash=tok.get("vocab_hash"),
                       chat_template_hash=tok.get("chat_template_hash"))


def _sources(db, agg) -> tuple[dict[str, list[int]], dict[int, list[str]]]:
    """Which stored experiments stand behind each kind of figure, as the aggregate computed it."""
    from ..aggregate.data import deciding_experiment
    from ..aggregate.timing import POOL_SOURCE

    stored = {r["id"] for r in db.query("SELECT id FROM experiments")}
    sid = _study_id(agg)
    pool_ids = [r["experiment_id"] for r in db.query(
        "SELECT DISTINCT p.experiment_id FROM pairs p WHERE (:s IS NULL OR p.experiment_id IN "
        "(SELECT id FROM experiments WHERE study_id = :s)) ORDER BY p.experiment_id", {"s": sid})]
    def behind(speed) -> tuple[list[int], list[int]]:  # (speed-up, memory) experiments of one speed figure
        if speed.source == "benchmark":  # every benchmark whose rounds it pools (a frozen one of old: the one)
            ids = list(getattr(speed, "benchmark_ids", None) or [speed.experiment_id])
        elif speed.source == POOL_SOURCE:
            ids = pool_ids
        else:
            ids = []
        if speed.extra_memory_mb is None:
            return ids, []
        # the benchmarks whose figures the memory was the largest of (a decision frozen before they were kept: the
        # speed-up's), not only those whose rounds decide the speed-up
        return ids, (list(getattr(speed, "memory_benchmark_ids", None) or [])
                     or (ids if speed.source == "benchmark" else [speed.experiment_id]))

    speed = agg.speed  # the decision's, once frozen
    speed_ids, memory_ids = behind(speed)
    now_ids, memory_now_ids = behind(getattr(agg, "speed_now", None) or speed)
    if sid is not None:  # the study's gate: frozen with its first pool (aggregate.frozen_gate)
        first = next(db.query("SELECT id, gate_hash FROM experiments WHERE study_id = ? ORDER BY id LIMIT 1", [sid]), None)
        gate_ids = [first["id"]] if first is not None and first["gate_hash"] else []
    else:
        gate_exp = deciding_experiment(db)  # the rule aggregate.frozen_gate applies
        gate_ids = [gate_exp["id"]] if gate_exp is not None and gate_exp["gate_hash"] else []
    gen_ids = [r["experiment_id"] for r in db.query(
        "SELECT DISTINCT experiment_id FROM generations WHERE live = 0 AND status = 'ok' AND experiment_id IS NOT NULL "
        "AND generate_seconds IS NOT NULL ORDER BY experiment_id")]
    batch_ids = [speed.batch_experiment_id] if speed.batch_experiment_id is not None else []
    sources = {"speed": speed_ids, "memory": memory_ids, "speed_now": now_ids, "memory_now": memory_now_ids,
               "ratings": pool_ids, "gate": gate_ids, "generations": gen_ids, "batch": batch_ids}
    sources = {k: [i for i in dict.fromkeys(v) if i in stored] for k, v in sources.items()}
    sources["database"] = sorted({i for v in sources.values() for i in v})
    used: dict[int, list[str]] = {}
    labels = {"speed": "speed-up", "memory": "memory", "speed_now": "timing tables", "ratings": "ratings (pair pool)",
              "gate": "release gate", "batch": "batch comparison"}
    for kind, label in labels.items():
        for i in sources[kind]:
            used.setdefault(i, []).append(label)
    for i in sources["generations"]:
        used.setdefault(i, []).append("stored runs (plots)")
    return sources, used


def _experiments(db, used: dict[int, list[str]]) -> list[ExperimentSource]:
    from .scrub import published_config_row

    if not used:
        return []
    ids = sorted(used)
    marks = ",".join("?" * len(ids))
    ends: dict[int, tuple[str | None, int]] = {}
    for r in db.query(f"SELECT experiment_id AS e, MAX(created_at) AS last, COUNT(*) AS n FROM generations "
                      f"WHERE experiment_id IN ({marks}) GROUP BY experiment_id", ids):
        ends[r["e"]] = (r["last"], r["n"])
    for r in db.query(f"SELECT experiment_id AS e, MAX(created_at) AS last FROM pairs WHERE experiment_id IN ({marks}) "
                      f"GROUP BY experiment_id", ids):
        last, n = ends.get(r["e"], (None, 0))
        ends[r["e"]] = (max(x for x in (last, r["last"]) if x), n)
    devices: dict[int, list[str]] = {}
    for r in db.query(f"SELECT DISTINCT experiment_id AS e, device FROM generations WHERE experiment_id IN ({marks}) "
                      f"AND device != '' ORDER BY device", ids):
        devices.setdefault(r["e"], []).append(r["device"])
    out = []
    for row in db.query(f"SELECT * FROM experiments WHERE id IN ({marks}) ORDER BY id", ids):
        compat = json.loads(row["compat_json"] or "{}")
        cfg = json.loads(row["config_json"] or "{}")
        last, n = ends.get(row["id"], (None, 0))
        out.append(ExperimentSource(
            id=row["id"], kind=row["kind"], used_for=used[row["id"]], started=row["created_at"], ended=last, records=n,
            # the hash of the config as published (scrub.published_config): the stored one covers the passcodes
            config_hash=published_config_row(row["config_json"], row["config_hash"])[1],
            compat_hash=row["compat_hash"], gate_hash=row["gate_hash"],
            versions=dict(compat.get("versions") or {}), device=compat.get("device") or "",
            devices_used=devices.get(row["id"], []),
            dtype=compat.get("dtype") or (cfg.get("models") or {}).get("dtype", ""),
            quantization=compat.get("quantization") or "", route=compat.get("verdict") or "",
            target=_model(compat, cfg, "target"), draft=_model(compat, cfg, "draft"),
        ))
    return out


def _gate(db, ids: list[int]) -> dict | None:
    from ..study.gate import gate_text_hash

    if not ids:
        return None
    row = next(db.query("SELECT id, gate_json, gate_hash FROM experiments WHERE id = ?", [ids[0]]))
    frozen = json.loads(row["gate_json"] or "{}")
    text = frozen.get("text", "")
    return {"experiment_id": row["id"], "path": frozen.get("path", ""), "hash": row["gate_hash"],
            "hash_ok": gate_text_hash(text) == row["gate_hash"], "text": text}


def _prompts(db, exp_ids: list[int]) -> tuple[list[PromptSource], list[str]]:
    """Each prompt the used experiments ran: the text and hash stored with its generations, else (older
    databases) the prompt file on disk now, said so."""
    from ..errors import EvalkitError
    from ..task.prompts import load_prompts

    if not exp_ids:
        return [], []
    marks = ",".join("?" * len(exp_ids))
    stored: dict[str, dict] = {}
    for r in db.query(
            f"""SELECT prompt_id, json_extract(effective_config, '$.prompt.hash') AS hash,
                       json_extract(effective_config, '$.prompt.material') AS material,
                       json_extract(effective_config, '$.prompt.task') AS task,
                       json_extract(effective_config, '$.prompt.max_new_tokens') AS budget
                FROM generations WHERE experiment_id IN ({marks}) AND live = 0
                GROUP BY prompt_id, hash ORDER BY prompt_id, MIN(id)""", exp_ids):
        p = stored.setdefault(r["prompt_id"], {"hashes": [], "material": None, "task": None, "budget": None})
        if r["hash"]:
            p["hashes"].append(r["hash"])
            p.update(material=r["material"], task=r["task"], budget=r["budget"])  # the latest version
    notes = []
    try:
        on_disk = {p.id: p for p in load_prompts()}
    except EvalkitError:
        on_disk = {}
    out = []
    for pid, p in sorted(stored.items()):
        if p["hashes"]:
            if len(p["hashes"]) > 1:
                notes.append(f"prompt {pid} changed between runs: hashes {', '.join(p['hashes'])}")
            out.append(PromptSource(pid, p["hashes"], p["material"] or "", p["task"] or "", p["budget"],
                                    "stored with the runs"))
        elif pid in on_disk:
            f = on_disk[pid]
            out.append(PromptSource(pid, [], f.material, f.task, f.max_new_tokens,
                                    f"prompt file on disk now, hash {prompt_hash(f)} (the runs stored no prompt text)"))
        else:
            out.append(PromptSource(pid, [], "", "", None, "not stored with the runs and no prompt file has this id"))
    return out, notes


def _span(values: list[int]) -> list[int] | None:
    return [min(values), max(values)] if values else None


def _study_id(agg) -> int | None:
    study = getattr(agg, "study", None)
    return None if study is None else study.id


# pairs `p` of the study bound as :s (every pair when there is none)
_IN_STUDY = "(:s IS NULL OR p.experiment_id IN (SELECT id FROM experiments WHERE study_id = :s))"


def _scope(db, agg, sources: dict[str, list[int]], prompts: list[PromptSource]) -> Scope:
    speed = agg.speed
    sid = {"s": _study_id(agg)}
    samples = [r["n"] for r in db.query(
        f"SELECT prompt_id, COUNT(DISTINCT sample) AS n FROM pairs p WHERE kind = 'study' AND {_IN_STUDY} "
        "GROUP BY prompt_id", sid)]
    n_study, n_gold = db.execute(
        f"SELECT COALESCE(SUM(kind = 'study'), 0), COALESCE(SUM(kind = 'gold'), 0) FROM pairs p WHERE {_IN_STUDY}",
        sid).fetchone()
    gold = agg.tables.get("gold")
    excluded = list(gold.loc[gold["excluded"], "rater"]) if gold is not None and len(gold) else []
    reps, rounds, timing_runs = [], None, 0
    if speed.source == "benchmark" and sources["speed"]:
        marks = ",".join("?" * len(sources["speed"]))  # every benchmark pooled, each round its own
        rows = list(db.query("SELECT experiment_id, round, COUNT(*) AS n FROM timing_runs WHERE experiment_id IN "
                             f"({marks}) GROUP BY experiment_id, prompt_id, path, round", sources["speed"]))
        reps, timing_runs = [r["n"] for r in rows], sum(r["n"] for r in rows)
        rounds = len({(r["experiment_id"], r["round"]) for r in rows})
    elif sources["speed"]:  # the pool's single runs: one per path per pair
        timing_runs, reps = 2 * n_study, [1]
    # the ratings the quality figures rest on: of study pairs, without the raters the gold check left out
    marks = ",".join(f":x{i}" for i in range(len(excluded)))
    r = db.execute(f"""SELECT COUNT(*), COUNT(DISTINCT r.rater), COUNT(DISTINCT r.pair_id), MIN(r.created_at),
                              MAX(r.created_at) FROM current_ratings r JOIN pairs p ON p.id = r.pair_id
                       WHERE p.kind = 'study' AND {_IN_STUDY} AND r.rater NOT IN ({marks})""",
                   sid | {f"x{i}": x for i, x in enumerate(excluded)}).fetchone()
    return Scope(prompts=[p.id for p in prompts], pairs=n_study, samples_per_prompt=_span(samples),
                 timing_runs=timing_runs, repetitions=_span(reps), rounds=rounds,
                 matched_pairs=speed.matched_pairs if sources["speed"] else None,
                 comparable_pairs=speed.comparable_pairs if sources["speed"] else None,
                 current_ratings=r[0], raters=r[1], rated_pairs=r[2], ratings_first=r[3], ratings_last=r[4],
                 gold_pairs=n_gold, excluded_raters=len(excluded), excluded_names=sorted(map(str, excluded)),
                 study=getattr(getattr(agg, "study", None), "name", None))


def _figures(agg, sources: dict[str, list[int]], scope: Scope) -> list[Figure]:
    from ..aggregate.timing import bench_basis, left_out_words, memory_source, without_fallbacks

    def rest(sp) -> str:  # what the speed-up leaves out: not comparable, fallbacks
        return f"; {w}" if (w := left_out_words(sp)) else ""

    speed = agg.speed
    v = agg.verdict
    claim = f" — {v.claim}" if v.claim else ""
    # the decision as a decision: interim looks say so, a frozen one says when; and which study it is of
    state = (f" ({v.label})" if v.interim else
             f" (frozen {agg.frozen.completed_at})" if getattr(agg, "frozen", None) is not None else "")
    study = getattr(agg, "study", None)
    of = f"{study.label()}: " if study is not None else ""
    # the runs the decision weighed: the study's pools (ratings), its gate, and the speed and memory figures it used
    # (not the plots' runs, another study's pools, or a benchmark stored after the decision)
    weighed = sorted({i for kind in ("ratings", "gate", "speed", "memory") for i in sources[kind]})
    figs = [Figure("verdict", f"{of}{v.decision}{state}{claim}", weighed)]
    sp, ci = speed.speedup, speed.speedup_ci95
    if sp is None:
        figs.append(Figure("speed-up", None, [], "not measured over comparable outputs"))
    else:
        text = f"{ratio_text(sp)}x" + (f" (95% CI {ratio_text(ci[0])} to {ratio_text(ci[1])})" if ci else "") + \
            f" over {speed.comparable_pairs} comparable pairs, source: {bench_basis(speed)}{rest(speed)}"
        figs.append(Figure("speed-up", text, sources["speed"]))
    now = getattr(agg, "speed_now", None)
    if getattr(agg, "frozen", None) is not None and now is not None:
        # measured since the decision froze (a later benchmark): printed beside the decision's figure, never for it
        if now.speedup is not None and (now.speedup, now.source) != (sp, speed.source):
            nci = now.speedup_ci95
            figs.append(Figure("speed-up now (after the decision, not the decision)",
                               f"{ratio_text(now.speedup)}x"
                               + (f" (95% CI {ratio_text(nci[0])} to {ratio_text(nci[1])})" if nci else "")
                               + f" over {now.comparable_pairs} comparable pairs, source: {bench_basis(now)}"
                               + rest(now),
                               sources["speed_now"]))
        if now.extra_memory_mb is not None and now.extra_memory_mb != speed.extra_memory_mb:
            figs.append(Figure("extra memory of the draft now (after the decision, not the decision)",
                               f"{now.extra_memory_mb:.0f} MB", sources["memory_now"]))
    if speed.throughput_ratio is not None:  # beside it, what selects nothing (evalkit.generation.speed)
        tci = speed.throughput_ci95
        tps = (f"{ratio_text(speed.throughput_ratio)}x"
               + (f" (95% CI {ratio_text(tci[0])} to {ratio_text(tci[1])})" if tci else "")
               + f" over all {speed.throughput_pairs} matched pairs, no selection on length or stop reason"
               + without_fallbacks(speed)
               + ("; its interval and the speed-up's do not overlap" if speed.selection_gap else ""))
        figs.append(Figure("tokens per second, assisted over ordinary", tps, sources["speed"]))
    mem = speed.extra_memory_mb
    if mem is None:
        figs.append(Figure("extra memory of the draft", None, [],
                           getattr(speed, "memory_note", "") or "not measured (run `evalkit bench`)"))
    else:
        which = memory_source(speed)
        figs.append(Figure("extra memory of the draft", f"{mem:.0f} MB" + (f" ({which})" if which else ""),
                           sources["memory"]))
    if speed.batch_answer is not None:  # only when a benchmark measured batch sizes (`--batch-sizes`)
        figs.append(Figure("batch sizes (ordinary at each, assisted at 1)", speed.batch_answer, sources["batch"]))
    if scope.current_ratings:
        figs.append(Figure("quality (pass rates, paired differences, preferences, agreement)",
                           f"{scope.current_ratings} current ratings by {scope.raters} rater(s) on {scope.rated_pairs} pair(s)",
                           sources["ratings"]))
    else:
        figs.append(Figure("quality (pass rates, paired differences, preferences, agreement)", None, [], "no ratings yet"))
    for f in figs:  # the rule: a number with no stored run behind it is not printed
        if f.value is not None and not f.experiments:
            f.value, f.note = None, WITHHELD
    return figs


def _pushes_while_rating(db, study_id: int | None) -> list[str]:
    """One note per export of the study pushed to the Hub while its pairs were open to raters (--while-rating): its
    tables told their sides, so a rater who could read that repo could learn them before rating."""
    if study_id is None:
        return []
    return [f"an export was pushed to the Hub repo {r[1]} ({'private' if r[2] else 'public'}) at {r[0]} while "
            f"{r[3]} pair(s) of this study were still open to raters (`evalkit export --while-rating`): its tables "
            "tell each pair's sides, so ratings given after it are blind only if no rater could read that repo"
            for r in db.execute("SELECT pushed_at, repo_id, private, open_pairs FROM pushes_while_rating "
                                "WHERE study_id = ? ORDER BY id", [study_id])]


def build_provenance(db, agg=None) -> Provenance:
    """The provenance of what `aggregate` computed from this database (agg: that aggregate, else computed). Its config
    hashes are those of the configs as published (scrub.published_config: no passcode, no access list)."""
    from .. import __version__

    if agg is None:
        from ..aggregate import aggregate

        agg = aggregate(db)
    sources, used = _sources(db, agg)
    experiments = _experiments(db, used)
    prompts, notes = _prompts(db, [e.id for e in experiments])
    scope = _scope(db, agg, sources, prompts)
    gate = _gate(db, sources["gate"])
    if gate and not gate["hash_ok"]:
        notes.append(f"the gate text stored with experiment {gate['experiment_id']} does not match its stored hash")
    for e in experiments:
        if not e.versions:
            notes.append(f"experiment {e.id} stored no compatibility record (versions, device, digests)")
    notes += _pushes_while_rating(db, getattr(getattr(agg, "study", None), "id", None))
    return Provenance(
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), evalkit=__version__, sources=sources,
        experiments=experiments, gate=gate, prompts=prompts, scope=scope, figures=_figures(agg, sources, scope),
        notes=notes,
    )


def to_json_with_provenance(db, agg) -> dict:
    """`evalkit aggregate --json`: the aggregate's JSON and its provenance block."""
    return agg.to_json() | {"provenance": build_provenance(db, agg).to_json()}


def aggregate_said(db, study: str | None, as_json: bool) -> str:
    """`evalkit aggregate`: one study's look as text, or as JSON with its provenance block, with a bar on stderr over
    its steps (aggregate.STEPS, then the saying): on a study-sized pool it ran some 15 s without a word. The bar is on
    stderr only, so that standard output stays the text or the JSON alone."""
    from ..aggregate import STEPS, aggregate, format_text
    from ..progress import Steps

    shown = Steps("aggregate", len(STEPS) + 1)
    with shown.announcing():
        agg = aggregate(db, study=study)
    shown.step("the JSON and its provenance" if as_json else "the text")
    said = (json.dumps(to_json_with_provenance(db, agg), ensure_ascii=False, indent=2, default=str) if as_json
            else format_text(agg))
    shown.close()
    return said
